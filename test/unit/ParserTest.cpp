//===- ParserTest.cpp - Syntax, recovery and nesting limits ---------------===//

#include "hector/Frontend/Parser.h"
#include "FrontendTestUtil.h"

#include <catch2/catch.hpp>

using namespace hector::frontend;
using namespace hector::frontend::test;

namespace {

Module parseText(const std::string &text, DiagnosticEngine &diags) {
  return parse("t.hector", lex("t.hector", text, diags), diags);
}

} // namespace

TEST_CASE("parser: the statements of a layer", "[parser]") {
  DiagnosticEngine diags;
  Module m = parseText(R"(
layer l(a = 2, heads H = 4) {
  input x: node[a];
  input e: edge[];
  weight W: relation[a, H, a] init zeros;
  weight V = matmul(W, W);
  layer s = other(p = a + 1, q = 2);
  edge z = linear(src.x, W) * -e;
  node h = sum(z);
  output h, z;
}
)",
                       diags);
  REQUIRE_FALSE(diags.hasErrors());
  REQUIRE(m.layers.size() == 1);
  const Layer &l = m.layers[0];
  CHECK(l.name == "l");
  REQUIRE(l.params.size() == 2);
  CHECK_FALSE(l.params[0].isHeads);
  CHECK(l.params[1].isHeads);
  REQUIRE(l.body.size() == 8);
  CHECK(l.body[0].kind == Stmt::Kind::Input);
  CHECK_FALSE(l.body[0].isEdge);
  CHECK(l.body[1].isEdge);
  CHECK(l.body[1].dims.empty());
  CHECK(l.body[2].kind == Stmt::Kind::Weight);
  CHECK(l.body[2].slicing == Slicing::Relation);
  CHECK(l.body[2].dims.size() == 3);
  CHECK(l.body[2].init == "zeros");
  CHECK(l.body[3].kind == Stmt::Kind::DerivedWeight);
  CHECK(l.body[4].kind == Stmt::Kind::Instance);
  CHECK(l.body[4].layerName == "other");
  CHECK(l.body[4].bindings.size() == 2);
  CHECK(l.body[5].kind == Stmt::Kind::Value);
  const Expr &e = *l.body[5].expr;
  CHECK(e.kind == Expr::Kind::Binary);
  CHECK(e.op == '*');
  CHECK(e.args[0]->kind == Expr::Kind::Call);
  CHECK(e.args[0]->args[0]->kind == Expr::Kind::Member);
  CHECK_FALSE(e.args[0]->args[0]->memberDst);
  CHECK(e.args[1]->kind == Expr::Kind::Neg);
  CHECK(l.body[7].outputs.size() == 2);
}

TEST_CASE("parser: precedence and associativity", "[parser]") {
  DiagnosticEngine diags;
  Module m = parseText("layer l() { edge a = 1 - 2 - 3 * 4 / 5; }", diags);
  REQUIRE_FALSE(diags.hasErrors());
  const Expr &e = *m.layers[0].body[0].expr;
  // (1 - 2) - ((3 * 4) / 5)
  CHECK(e.op == '-');
  CHECK(e.args[0]->op == '-');
  CHECK(e.args[1]->op == '/');
  CHECK(e.args[1]->args[0]->op == '*');
  CHECK(e.height == 4);
}

TEST_CASE("parser: syntax errors are reported and parsing recovers", "[parser]") {
  auto r = check(R"(layer l(a = 1) {
  input x node[a];
  edge = 3;
  node y = relu(x;
  node z = x
  output z;
}
)");
  CHECK(r.messages() == std::vector<std::string>{
                            "2:11: error: expected ':' after input 'x', got 'node'",
                            "3:8: error: expected a value name, got '='",
                            "4:18: error: expected ')', got ';'",
                            "4:16: note: to match this '('",
                            "6:3: error: expected ';' at the end of the statement, got 'output'",
                        });
}

TEST_CASE("parser: unterminated layer body and header", "[parser]") {
  auto r = check("layer l(a = 1) {\n  input x: node[a];\n");
  CHECK(r.messages() == std::vector<std::string>{
                            "3:1: error: expected '}' at the end of layer 'l', got end of file",
                            "1:16: note: to match this '{'"});
  auto h = check("layer l(a = 1 {\n}\nlayer m() { output q; }\n");
  CHECK(h.errors() == std::vector<std::string>{"1:15: error: expected ')', got '{'",
                                               "3:20: error: unknown name 'q'"});
  auto top = check("input x: node[1];\nlayer m() { output q; }");
  CHECK(top.errors() == std::vector<std::string>{"1:1: error: expected 'layer', got 'input'",
                                                 "2:20: error: unknown name 'q'"});
}

TEST_CASE("parser: keywords are not names", "[parser]") {
  auto r = check("layer l() { input node: node[1]; }");
  CHECK(r.errors() ==
        std::vector<std::string>{"1:19: error: expected an input name, got keyword 'node'"});
}

TEST_CASE("parser: nesting is bounded", "[parser]") {
  std::string deep = "layer l() { node y = " + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + "; output y; }";
  auto r = check(deep);
  REQUIRE(r.errors().size() == 1);
  CHECK(r.errors()[0].find("expression nested too deeply (more than 128 levels)") !=
        std::string::npos);

  std::string chain = "layer l() { node y = 1";
  for (int i = 0; i < 20000; ++i)
    chain += " + 1";
  chain += "; output y; }";
  auto c = check(chain);
  REQUIRE(c.errors().size() == 1);
  CHECK(c.errors()[0].find("nested too deeply") != std::string::npos);

  std::string negs = "layer l() { node y = " + std::string(100000, '-') + "1; output y; }";
  CHECK(check(negs).errors().size() == 1);

  std::string calls = "layer l() { node y = ";
  for (int i = 0; i < 3000; ++i)
    calls += "relu(";
  calls += "1" + std::string(3000, ')') + "; output y; }";
  CHECK(check(calls).errors().size() == 1);
}

TEST_CASE("parser: a failed statement poisons its name", "[parser]") {
  // `y` failed to parse: its uses are not reported again.
  auto r = check(R"(layer l() {
  input x: node[4];
  node y = relu(x,;
  node z = y + y;
  output z;
}
)");
  CHECK(r.errors() == std::vector<std::string>{"3:19: error: expected an expression, got ';'"});
}
