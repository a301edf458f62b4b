//===- SemaTest.cpp - Checked form of the examples, typing rules, errors --===//

#include "hector/Frontend/Sema.h"
#include "FrontendTestUtil.h"

#include <catch2/catch.hpp>

using namespace hector::frontend;
using namespace hector::frontend::test;
using Lines = std::vector<std::string>;

namespace {

/// A layer with the usual declarations, then `body` (line 9 is the body's first line).
std::string withPreamble(const std::string &body) {
  return "layer l(in = 4, heads H = 2, d = 3, slope = 0.2) {\n"
         "  input x: node[in];\n"
         "  input e: edge[];\n"
         "  input hx: node[H, d];\n"
         "  weight W: relation[in, in];\n"
         "  weight T: ntype[in, in];\n"
         "  weight U: [in, in];\n"
         "  weight WH: relation[in, H, d];\n" +
         body + "\n}\n";
}

Lines errs(const std::string &source, const FrontendOptions &options = {}) {
  return check(source, options).errors();
}

Lines bodyErrs(const std::string &body) { return errs(withPreamble(body)); }

CheckedModule checkOk(const std::string &source, const FrontendOptions &options = {}) {
  CheckResult r = check(source, options);
  INFO(r.printed());
  REQUIRE(r.module.has_value());
  return *r.module;
}

} // namespace

//===----------------------------------------------------------------------===//
// The examples: the space and shape of every instr.
//===----------------------------------------------------------------------===//

TEST_CASE("examples: rgcn", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/rgcn.hector"));
  REQUIRE(m.layers.size() == 1);
  CHECK(m.layers[0].params == std::map<std::string, double>{{"in", 16}, {"out", 16}});
  CHECK(instrTypes(m.layers[0]) == Lines{
                                       "input node [16]",
                                       "input edge []",
                                       "weight weight relation [16, 16]",
                                       "weight weight none [16, 16]",
                                       "weight weight none [16]",
                                       "src src [16]",
                                       "linear edge [16]",
                                       "mul edge [16]",
                                       "aggregate node [16]",
                                       "linear node [16]",
                                       "add node [16]",
                                       "slice none [16]",
                                       "add node [16]",
                                       "output h",
                                   });
  const CheckedLayer &l = m.layers[0];
  CHECK(l.instrs[4].init == "zeros");
  CHECK(l.instrs[2].init == "glorot");
  CHECK(l.instrs[6].operands == std::vector<int>{5, 2});
  CHECK(l.instrs[8].aggregate == AggregateKind::Sum);
  CHECK(l.instrs[7].valueName == "m");
  CHECK(l.instrs[7].loc.line == 17);
  CHECK(l.instrs[7].loc.col == 17);
}

TEST_CASE("examples: rgcn_bases", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/rgcn_bases.hector"));
  CHECK(instrTypes(m.layers[0]) == Lines{
                                       "input node [16]",
                                       "input edge []",
                                       "weight weight none [4, 16, 16]",
                                       "weight weight relation [4]",
                                       "weight_matmul weight relation [16, 16]",
                                       "weight weight none [16, 16]",
                                       "weight weight none [16]",
                                       "src src [16]",
                                       "linear edge [16]",
                                       "mul edge [16]",
                                       "aggregate node [16]",
                                       "linear node [16]",
                                       "add node [16]",
                                       "slice none [16]",
                                       "add node [16]",
                                       "output h",
                                   });
  CHECK(m.layers[0].instrs[4].operands == std::vector<int>{3, 2});
  CHECK(m.layers[0].instrs[8].operands == std::vector<int>{7, 4});
}

TEST_CASE("examples: rgat", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/rgat.hector"));
  CHECK(instrTypes(m.layers[0]) == Lines{
                                       "input node [64]",
                                       "weight weight relation [64, 4h, 16]",
                                       "weight weight relation [4h, 16]",
                                       "weight weight relation [4h, 16]",
                                       "src src [64]",
                                       "linear edge [4h, 16]",
                                       "slice relation [4h, 16]",
                                       "dot edge [4h]",
                                       "slice relation [4h, 16]",
                                       "dst dst [64]",
                                       "linear edge [4h, 16]",
                                       "dot edge [4h]",
                                       "add edge [4h]",
                                       "leaky_relu edge [4h]",
                                       "softmax edge [4h]",
                                       "mul edge [4h, 16]",
                                       "aggregate node [4h, 16]",
                                       "merge_heads node [64]",
                                       "output h",
                                   });
  CHECK(m.layers[0].instrs[13].number == 0.2);
}

TEST_CASE("examples: rgat_pyg", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/rgat_pyg.hector"));
  CHECK(instrTypes(m.layers[0]) == Lines{
                                       "input node [64]",
                                       "weight weight relation [64, 64]",
                                       "weight weight none [64, 4h]",
                                       "weight weight none [64, 4h]",
                                       "weight weight none [64]",
                                       "src src [64]",
                                       "linear edge [64]",
                                       "dst dst [64]",
                                       "linear edge [64]",
                                       "linear edge [4h]",
                                       "linear edge [4h]",
                                       "add edge [4h]",
                                       "leaky_relu edge [4h]",
                                       "softmax edge [4h]",
                                       "split_heads edge [4h, 16]",
                                       "mul edge [4h, 16]",
                                       "aggregate node [4h, 16]",
                                       "merge_heads node [64]",
                                       "slice none [64]",
                                       "add node [64]",
                                       "output h",
                                   });
  CHECK(m.layers[0].instrs[14].heads == 4);
}

TEST_CASE("examples: hgt", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/hgt.hector"));
  const CheckedLayer &l = m.layers[0];
  CHECK(l.params.at("d") == 16);
  CHECK(instrTypes(l) == Lines{
                             "input node [64]",
                             "weight weight ntype [64, 4h, 16]",
                             "weight weight ntype [4h, 16]",
                             "weight weight ntype [64, 4h, 16]",
                             "weight weight ntype [4h, 16]",
                             "weight weight ntype [64, 4h, 16]",
                             "weight weight ntype [4h, 16]",
                             "weight weight relation [4h, 16, 16]",
                             "weight weight relation [4h, 16, 16]",
                             "weight weight relation [4h]",
                             "weight weight ntype [64, 64]",
                             "weight weight ntype [64]",
                             "weight weight ntype []",
                             "linear node [4h, 16]",
                             "slice ntype [4h, 16]",
                             "add node [4h, 16]",
                             "linear node [4h, 16]",
                             "slice ntype [4h, 16]",
                             "add node [4h, 16]",
                             "linear node [4h, 16]",
                             "slice ntype [4h, 16]",
                             "add node [4h, 16]",
                             "src src [4h, 16]",
                             "linear edge [4h, 16]",
                             "dst dst [4h, 16]",
                             "dot edge [4h]",
                             "slice relation [4h]",
                             "mul edge [4h]",
                             "constant none []",
                             "div edge [4h]",
                             "softmax edge [4h]",
                             "src src [4h, 16]",
                             "linear edge [4h, 16]",
                             "mul edge [4h, 16]",
                             "aggregate node [4h, 16]",
                             "merge_heads node [64]",
                             "gelu node [64]",
                             "linear node [64]",
                             "slice ntype [64]",
                             "add node [64]",
                             "slice ntype []",
                             "sigmoid ntype []",
                             "mul node [64]",
                             "sigmoid ntype []",
                             "constant none []",
                             "sub ntype []",
                             "mul node [64]",
                             "add node [64]",
                             "output h",
                         });
  // 1/sqrt(d) folds: the constant is sqrt(16).
  CHECK(l.instrs[28].number == 4);
}

TEST_CASE("examples: hgt with in != out is a shape error at the skip", "[sema][examples]") {
  FrontendOptions options;
  options.paramOverrides["in"] = 32;
  CheckResult r = check(readSourceFile("examples/hgt.hector"), options);
  CHECK_FALSE(r.module);
  REQUIRE(r.errors().size() == 1);
  CHECK(r.errors()[0].find("shape mismatch in '+': [64] and [32]") != std::string::npos);
}

TEST_CASE("examples: hgt_simplified", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/hgt_simplified.hector"));
  Lines types = instrTypes(m.layers[0]);
  REQUIRE(types.size() == 36);
  CHECK(types[33] == "merge_heads node [64]");
  CHECK(types[34] == "linear node [64]");
  CHECK(types[35] == "output h");
}

TEST_CASE("examples: rgcn_aifb inlines two instances of rgcn", "[sema][examples]") {
  CheckedModule m = checkOk(readSourceFile("examples/rgcn_aifb.hector"));
  REQUIRE(m.layers.size() == 2);
  const CheckedLayer &net = m.layers[1];
  CHECK(net.name == "rgcn_aifb");
  CHECK(net.params == std::map<std::string, double>{{"classes", 4}, {"hidden", 16}, {"in", 16}});
  std::vector<std::string> weights;
  for (const Instr &in : net.instrs)
    if (in.kind == OpKind::Weight)
      weights.push_back(in.name + " " + slicingName(in.slicing) + " " + shapeString(in.shape));
  CHECK(weights == Lines{"conv1.W relation [16, 16]", "conv1.root none [16, 16]",
                         "conv1.bias none [16]", "conv2.W relation [16, 4]",
                         "conv2.root none [16, 4]", "conv2.bias none [4]"});
  // Each call inlines the sub-layer's statements; inputs are bound to the caller's values.
  size_t inputs = 0, aggregates = 0, outputs = 0;
  for (const Instr &in : net.instrs) {
    inputs += in.kind == OpKind::Input;
    aggregates += in.kind == OpKind::Aggregate;
    outputs += in.kind == OpKind::Output;
  }
  CHECK(inputs == 2);
  CHECK(aggregates == 2);
  CHECK(outputs == 1);
  CHECK(net.instrs.back().name == "y");
  CHECK(instrTypes(net).back() == "output y");
  const Instr &y = net.instrs[net.instrs.back().operands[0]];
  CHECK(y.space == Space::Node);
  CHECK(shapeString(y.shape) == "[4]");
  CHECK(y.valueName == "conv2.h");
}

TEST_CASE("examples: every operand precedes its user", "[sema][examples]") {
  for (const char *f :
       {"rgcn", "rgcn_bases", "rgat", "rgat_pyg", "hgt", "hgt_simplified", "rgcn_aifb"}) {
    CheckedModule m = checkOk(readSourceFile(std::string("examples/") + f + ".hector"));
    for (const CheckedLayer &l : m.layers)
      for (size_t i = 0; i < l.instrs.size(); ++i)
        for (int op : l.instrs[i].operands) {
          CHECK(op >= 0);
          CHECK(static_cast<size_t>(op) < i);
        }
  }
}

//===----------------------------------------------------------------------===//
// Typing rules
//===----------------------------------------------------------------------===//

TEST_CASE("index spaces join as in the architecture", "[sema][spaces]") {
  using S = Space;
  CHECK(joinSpaces(S::Src, S::Src) == S::Src);
  CHECK(joinSpaces(S::Src, S::Dst) == S::Edge);
  CHECK(joinSpaces(S::Src, S::Relation) == S::Edge);
  CHECK(joinSpaces(S::Relation, S::Relation) == S::Relation);
  CHECK(joinSpaces(S::Relation, S::UniqueSrc) == S::UniqueSrc);
  CHECK(joinSpaces(S::UniqueDst, S::Relation) == S::UniqueDst);
  CHECK(joinSpaces(S::UniqueSrc, S::Edge) == S::Edge);
  CHECK(joinSpaces(S::None, S::Dst) == S::Dst);
  CHECK(joinSpaces(S::NType, S::None) == S::NType);
  CHECK(joinSpaces(S::Node, S::NType) == S::Node);
  CHECK(joinSpaces(S::NType, S::NType) == S::NType);
  CHECK_FALSE(joinSpaces(S::Node, S::Edge));
  CHECK_FALSE(joinSpaces(S::NType, S::Relation));
  CHECK_FALSE(joinSpaces(S::Node, S::Src));
}

TEST_CASE("spaces of edge expressions", "[sema][spaces]") {
  CheckedModule m = checkOk(withPreamble(R"(  edge a = src.x + dst.x;
  edge b = src.x * 2;
  edge c = linear(dst.x, U);
  edge f = e + 1;
  node g = sum(a) + linear(x, T);
  output a, b, c, f, g;)"));
  auto types = instrTypes(m.layers[0]);
  const CheckedLayer &l = m.layers[0];
  std::vector<std::string> outs;
  for (const Instr &in : l.instrs)
    if (in.kind == OpKind::Output)
      outs.push_back(in.name + " " + spaceName(l.instrs[in.operands[0]].space));
  CHECK(outs == Lines{"a edge", "b src", "c dst", "f edge", "g node"});
}

TEST_CASE("broadcasting: equal, scalar and prefix shapes", "[sema][shapes]") {
  CheckedModule m = checkOk(withPreamble(R"(  weight s: relation[] init ones;
  weight hv: relation[H];
  weight v: [H];
  edge a = dst.hx * s;
  edge b = src.hx * hv;
  edge c = hv * src.hx;
  node g = hx + v;
  output a, b, c, g;)"));
  const CheckedLayer &l = m.layers[0];
  std::vector<std::string> outs;
  for (const Instr &in : l.instrs)
    if (in.kind == OpKind::Output)
      outs.push_back(in.name + " " + shapeString(l.instrs[in.operands[0]].shape));
  CHECK(outs == Lines{"a [2h, 3]", "b [2h, 3]", "c [2h, 3]", "g [2h, 3]"});
}

TEST_CASE("broadcasting: mismatches", "[sema][shapes]") {
  CHECK(bodyErrs("  weight v: [5];\n  node g = x + v;\n  output g;") ==
        Lines{"10:14: error: shape mismatch in '+': [4] and [5] (shapes must be equal, [] or a "
              "prefix of the other)"});
  // [2] (plain) against [2h, 3]: the prefix must agree on heads too.
  CHECK(bodyErrs("  weight v: [2];\n  node g = hx * v;\n  output g;") ==
        Lines{"10:15: error: '*' mixes a head dimension and a plain one: [2h, 3] and [2]"});
  CHECK(bodyErrs("  input hy: node[H, 4];\n  node g = hx - hy;\n  output g;") ==
        Lines{"10:15: error: shape mismatch in '-': [2h, 3] and [2h, 4] (shapes must be equal, "
              "[] or a prefix of the other)"});
  CHECK(errs("layer l(heads H = 2, heads K = 3) {\n  input a: node[H, 4];\n  input b: node[K, "
             "4];\n  node c = a / b;\n  output c;\n}") ==
        Lines{"4:14: error: '/' mixes 2 heads and 3 heads: [2h, 4] and [3h, 4]"});
}

TEST_CASE("linear, dot, concat, heads", "[sema][shapes]") {
  CheckedModule m = checkOk(withPreamble(R"(  weight P: relation[H, d, 5];
  edge a = linear(src.x, WH);
  edge b = linear(a, P);
  edge c = dot(a, dst.hx);
  edge f = concat(src.x, dst.x, e * src.x);
  node g = merge_heads(hx);
  node k = split_heads(concat(x, x), H);
  output a, b, c, f, g, k;)"));
  const CheckedLayer &l = m.layers[0];
  std::vector<std::string> outs;
  for (const Instr &in : l.instrs)
    if (in.kind == OpKind::Output)
      outs.push_back(in.name + " " + spaceName(l.instrs[in.operands[0]].space) + " " +
                     shapeString(l.instrs[in.operands[0]].shape));
  CHECK(outs == Lines{"a edge [2h, 3]", "b edge [2h, 5]", "c edge [2h]", "f edge [12]",
                      "g node [6]", "k node [2h, 4]"});
}

TEST_CASE("constants fold; sqrt only in constants", "[sema][constants]") {
  CheckedModule m = checkOk(withPreamble("  node g = x * (1 / sqrt(in) + 2 * -slope);\n"
                                         "  output g;"));
  const CheckedLayer &l = m.layers[0];
  int constants = 0;
  for (const Instr &in : l.instrs)
    if (in.kind == OpKind::Constant) {
      ++constants;
      CHECK(in.number == Approx(0.5 - 0.4));
    }
  CHECK(constants == 1);
  CHECK(bodyErrs("  node g = sqrt(x);\n  output g;") ==
        Lines{"9:12: error: sqrt is only allowed in constant expressions (parameters and "
              "numbers)"});
}

TEST_CASE("parameters: defaults use earlier parameters; overrides", "[sema][params]") {
  const char *src = "layer a(n = 4, m = n * 2) {\n  input x: node[m];\n  output x;\n}\n"
                    "layer b(n = 3) {\n  input x: node[n];\n  output x;\n}\n";
  CheckedModule m = checkOk(src);
  CHECK(m.layers[0].params == std::map<std::string, double>{{"m", 8}, {"n", 4}});
  FrontendOptions o;
  o.paramOverrides["n"] = 5;
  CheckedModule m2 = checkOk(src, o);
  CHECK(m2.layers[0].params.at("m") == 10);
  CHECK(m2.layers[1].params.at("n") == 5);
  CHECK(shapeString(m2.layers[1].instrs[0].shape) == "[5]");

  o.paramOverrides["zz"] = 1;
  CHECK(errs(src, o) ==
        Lines{"0:0: error: parameter 'zz' is set on the command line but no layer declares it"});

  FrontendOptions h;
  h.paramOverrides["H"] = 2.5;
  CHECK(errs(readSourceFile("examples/rgat.hector"), h) ==
        Lines{"9:35: error: head count 'H' must be a positive integer, got 2.5 (set on the "
              "command line)"});

  FrontendOptions z;
  z.paramOverrides["out"] = 0;
  auto r = errs(readSourceFile("examples/rgcn.hector"), z);
  REQUIRE(r.size() == 3);
  CHECK(r[0] == "13:26: error: dimension must be a positive integer, got 0");
}

TEST_CASE("parameters: overrides reach sub-layer defaults, not explicit bindings",
          "[sema][params]") {
  const char *src = "layer inner(w = 2, k = 3) {\n  input x: node[w];\n  weight W: [w, k];\n"
                    "  node y = linear(x, W);\n  output y;\n}\n"
                    "layer outer(w = 2) {\n  input x: node[w];\n  layer s = inner(w = w);\n"
                    "  node y = s(x);\n  output y;\n}\n";
  FrontendOptions o;
  o.paramOverrides["k"] = 7;
  CheckedModule m = checkOk(src, o);
  const CheckedLayer *outer = findLayer(m, "outer");
  REQUIRE(outer);
  CHECK(outer->instrs[1].name == "s.W");
  CHECK(shapeString(outer->instrs[1].shape) == "[2, 7]");
}

//===----------------------------------------------------------------------===//
// Error classes: message and position.
//===----------------------------------------------------------------------===//

TEST_CASE("name errors", "[sema][errors]") {
  CHECK(bodyErrs("  edge s = dot(q, src.x);\n  output s;") ==
        Lines{"9:16: error: unknown name 'q'"});
  CHECK(bodyErrs("  node x = relu(x);\n  output x;") == Lines{"9:8: error: redefinition of 'x'"});
  CHECK(check(withPreamble("  node x = relu(x);\n  output x;")).messages() ==
        Lines{"9:8: error: redefinition of 'x'", "2:9: note: previous definition is here"});
  CHECK(bodyErrs("  node g = frob(x);\n  output g;") ==
        Lines{"9:12: error: unknown function 'frob'"});
  CHECK(bodyErrs("  node g = relu(x, x);\n  output g;") ==
        Lines{"9:12: error: 'relu' takes 1 argument, got 2"});
  CHECK(bodyErrs("  edge g = leaky_relu();\n  output g;") ==
        Lines{"9:12: error: 'leaky_relu' takes 1 or 2 arguments, got 0"});
  CHECK(bodyErrs("  node g = concat(x);\n  output g;") ==
        Lines{"9:12: error: 'concat' takes at least 2 arguments, got 1"});
  CHECK(bodyErrs("  node g = relu;\n  output g;") ==
        Lines{"9:12: error: 'relu' is a builtin function; call it as relu(...)"});
  CHECK(bodyErrs("  layer s = nothere();\n  output x;") ==
        Lines{"9:13: error: unknown layer 'nothere'"});
  CHECK(bodyErrs("  output nope;") == Lines{"9:10: error: unknown name 'nope'"});
  CHECK(bodyErrs("  output W;") ==
        Lines{"9:10: error: output 'W' is a weight; outputs are node or edge values"});
  CHECK(bodyErrs("  output x, x;") == Lines{"9:13: error: 'x' is already an output"});
  CHECK(errs("layer l() {\n  input x: node[1];\n}") ==
        Lines{"1:7: error: layer 'l' has no output"});
  CHECK(errs("layer l() { input x: node[1]; output x; }\nlayer l() { input x: node[1]; "
             "output x; }") == Lines{"2:7: error: redefinition of layer 'l'"});
  CHECK(bodyErrs("  node g = linear(x, x);\n  output g;") ==
        Lines{"9:22: error: 'x' is not a weight"});
  CHECK(bodyErrs("  weight V: [in] init fancy;\n  output x;") ==
        Lines{"9:23: error: unknown init 'fancy'; expected glorot, zeros, ones, uniform or "
              "normal"});
}

TEST_CASE("shape errors", "[sema][errors]") {
  CHECK(bodyErrs("  weight V: [5, 4];\n  node g = linear(x, V);\n  output g;") ==
        Lines{"10:12: error: shape mismatch in linear: the value's last dimension (4) differs "
              "from the weight 'V''s first (5): [4] . [5, 4]"});
  CHECK(bodyErrs("  input y: node[5];\n  node g = x + y;\n  output g;") ==
        Lines{"10:14: error: shape mismatch in '+': [4] and [5] (shapes must be equal, [] or a "
              "prefix of the other)"});
  CHECK(bodyErrs("  input y: node[5];\n  edge g = dot(src.x, dst.y);\n  output g;") ==
        Lines{"10:12: error: shape mismatch in dot: [4] and [5] (shapes must be equal)"});
  CHECK(bodyErrs("  node g = concat(x, hx);\n  output g;") ==
        Lines{"9:12: error: shape mismatch in concat: [4] and [2h, 3] (all dimensions but the "
              "last must agree)"});
  CHECK(bodyErrs("  input y: node[in - 4];\n  output x;") ==
        Lines{"9:20: error: dimension must be a positive integer, got 0"});
  CHECK(bodyErrs("  input y: node[in / 3];\n  output x;") ==
        Lines{"9:20: error: dimension must be a positive integer, got 1.3333333333333333"});
  CHECK(bodyErrs("  input y: node[3e10];\n  output x;") ==
        Lines{"9:17: error: dimension 3e+10 is too large (the limit is 2147483647)"});
  CHECK(bodyErrs("  weight A: [in];\n  weight B: [3, in];\n  weight C = matmul(A, B);\n"
                 "  output x;") ==
        Lines{"11:14: error: shape mismatch in matmul: the last dimension of the first weight "
              "(4) differs from the first dimension of the second (3): [4] and [3, 4]"});
  CHECK(bodyErrs("  input y: node[x];\n  output x;") ==
        Lines{"9:17: error: 'x' is not a constant (only parameters and numbers)"});
  CHECK(bodyErrs("  input y: node[in / (d - 3)];\n  output x;") ==
        Lines{"9:20: error: division by zero in a constant expression"});
}

TEST_CASE("head-count errors", "[sema][errors]") {
  CHECK(bodyErrs("  weight P: relation[3, d, d];\n  edge g = linear(src.hx, P);\n  output g;") ==
        Lines{"10:12: error: linear of a value with heads needs a per-head weight [Hh, k, m], "
              "got [2h, 3] . [3, 3, 3]"});
  CHECK(errs("layer l(heads H = 2, heads K = 4) {\n  input x: node[H, 3];\n"
             "  weight P: [K, 3, 3];\n  node g = linear(x, P);\n  output g;\n}") ==
        Lines{"4:12: error: linear mixes 2 heads and 4 heads: [2h, 3] . [4h, 3, 3]"});
  CHECK(bodyErrs("  input y: node[d, H];\n  output x;") ==
        Lines{"9:20: error: the head dimension must be the first dimension of a value ('H' is "
              "dimension 2)"});
  CHECK(bodyErrs("  weight Q: [in, d, H];\n  node g = linear(x, Q);\n  output g;") ==
        Lines{"10:12: error: linear: the head dimension of the weight 'Q' must come right after "
              "the contracted one, so that it is first in the result: [4] . [4, 3, 2h]"});
  CHECK(bodyErrs("  node g = split_heads(x, 3);\n  output g;") ==
        Lines{"9:12: error: split_heads: 4 is not divisible into 3 heads"});
  CHECK(bodyErrs("  node g = split_heads(hx, 3);\n  output g;") ==
        Lines{"9:12: error: split_heads needs a value of shape [k] without heads, got [2h, 3]"});
  CHECK(bodyErrs("  node g = merge_heads(x);\n  output g;") ==
        Lines{"9:12: error: merge_heads needs a value of shape [Hh, d], got [4]"});
  CHECK(bodyErrs("  weight Q: [H, H];\n  output x;") ==
        Lines{"9:17: error: a shape can have only one head dimension ('H' is the second)"});
  CHECK(bodyErrs("  weight Q: [d, H];\n  node g = x + Q;\n  output g;") ==
        Lines{"10:16: error: a weight used as a value must have its head dimension first, got "
              "[3, 2h]"});
  CHECK(bodyErrs("  input y: node[H];\n  edge g = dot(src.y, dst.y);\n  output g;") ==
        Lines{"10:12: error: dot would contract the head dimension: [2h] and [2h]"});
  CHECK(errs("layer l(heads H = 0) {\n  input x: node[1];\n  output x;\n}") ==
        Lines{"1:15: error: head count 'H' must be a positive integer, got 0"});
}

TEST_CASE("index-space errors", "[sema][errors]") {
  CHECK(bodyErrs("  edge g = x * 2;\n  output g;") ==
        Lines{"9:12: error: node value 'x' in an edge statement; read it as src.x or dst.x"});
  CHECK(bodyErrs("  node g = e * 2;\n  output g;") ==
        Lines{"9:12: error: edge value 'e' in a node statement; aggregate it with sum, mean or "
              "max"});
  CHECK(bodyErrs("  node g = linear(x, W);\n  output g;") ==
        Lines{"9:22: error: relation-sliced weight 'W' in a node statement (a relation's slice "
              "is chosen by an edge)"});
  CHECK(bodyErrs("  edge g = linear(src.x, T);\n  output g;") ==
        Lines{"9:26: error: node-type-sliced weight 'T' in an edge statement (use it in a node "
              "statement)"});
  CHECK(bodyErrs("  edge g = sum(e);\n  output g;") ==
        Lines{"9:12: error: aggregation 'sum' outside a node statement (sum, mean and max "
              "reduce edge values into nodes)"});
  CHECK(bodyErrs("  node g = max(x);\n  output g;") ==
        Lines{"9:16: error: node value 'x' in the argument of 'max'; read it as src.x or dst.x"});
  CHECK(bodyErrs("  node g = softmax(x);\n  output g;") ==
        Lines{"9:12: error: softmax of a node value (softmax normalises edge values over the "
              "incoming edges of each node; use it in an edge statement)"});
  CHECK(bodyErrs("  node g = src.x;\n  output g;") ==
        Lines{"9:12: error: 'src.x' in a node statement; src. and dst. read node values on "
              "edges, in edge statements"});
  CHECK(bodyErrs("  edge g = src.e;\n  output g;") ==
        Lines{"9:16: error: 'src.e': 'e' is an edge value; src. and dst. read node values"});
  CHECK(bodyErrs("  weight s: relation[in];\n  node g = sum(s);\n  output g;") ==
        Lines{"10:16: error: 'sum' needs an edge value, got a per-relation value"});
  CHECK(bodyErrs("  edge g = linear(U, W);\n  output g;") ==
        Lines{"9:12: error: linear with relation-sliced weight 'W' needs an edge value, got a "
              "value that is the same everywhere (constants, unsliced weights)"});
  CHECK(bodyErrs("  edge g = 2 * slope;\n  output g;") ==
        Lines{"9:8: error: edge statement 'g' does not vary per edge: it is a value that is the "
              "same everywhere (constants, unsliced weights) (use src., dst., an edge input or "
              "an edge value)"});
  CHECK(bodyErrs("  node g = sigmoid(T);\n  output g;") ==
        Lines{"9:8: error: node statement 'g' does not vary per node: it is a per-node-type "
              "value (use a node input, a node value or an aggregation)"});
}

TEST_CASE("sub-layer errors", "[sema][errors]") {
  const std::string inner = "layer inner(w = 2) {\n  input x: node[w];\n  input n: edge[];\n"
                            "  weight V: [w, w];\n  node y = linear(x, V);\n  output y;\n}\n";
  CHECK(errs(inner + "layer o() {\n  input x: node[2];\n  layer s = inner();\n"
                     "  node y = s(x);\n  output y;\n}") ==
        Lines{"11:12: error: 's' (layer 'inner') takes 2 inputs, got 1"});
  CHECK(errs(inner + "layer o() {\n  input x: node[3];\n  input n: edge[];\n"
                     "  layer s = inner();\n  node y = s(x, n);\n  output y;\n}") ==
        Lines{"12:14: error: argument 1 of 's' has shape [3], but input 'x' of layer 'inner' is "
              "node[2]"});
  CHECK(errs(inner + "layer o() {\n  input x: node[2];\n  input n: edge[];\n"
                     "  layer s = inner();\n  node y = s(x, x);\n  output y;\n}") ==
        Lines{"12:17: error: node value 'x' in edge input 'n' of 's'; read it as src.x or dst.x"});
  CHECK(errs(inner + "layer o() {\n  input x: node[2];\n  input n: edge[];\n"
                     "  layer s = inner(v = 3);\n  output x;\n}") ==
        Lines{"11:19: error: layer 'inner' has no parameter 'v'"});
  CHECK(errs(inner + "layer o() {\n  input x: node[2];\n  input n: edge[];\n"
                     "  layer s = inner();\n  edge y = s(x, n);\n  output y;\n}") ==
        Lines{"12:12: error: 's' returns a node value; call it in a node statement"});
  CHECK(errs(inner + "layer o() {\n  input x: node[2];\n  node y = inner(x);\n  output y;\n}") ==
        Lines{"10:12: error: 'inner' is a layer; declare an instance (layer NAME = inner(...);) "
              "and call that"});
  // An error inside an instantiation carries notes back to the instance.
  auto r = check(inner + "layer o() {\n  input x: node[2];\n  layer s = inner(w = 0);\n"
                         "  output x;\n}");
  CHECK(r.messages() == Lines{"2:17: error: dimension must be a positive integer, got 0",
                              "10:9: note: in sub-layer instance 's' of layer 'inner'",
                              "4:14: error: dimension must be a positive integer, got 0",
                              "10:9: note: in sub-layer instance 's' of layer 'inner'",
                              "4:17: error: dimension must be a positive integer, got 0",
                              "10:9: note: in sub-layer instance 's' of layer 'inner'"});
  // Two outputs: not usable as a sub-layer.
  CHECK(errs("layer two() {\n  input x: node[1];\n  node y = relu(x);\n  output x, y;\n}\n"
             "layer o() {\n  input x: node[1];\n  layer s = two();\n  output x;\n}") ==
        Lines{"8:13: error: layer 'two' has 2 outputs; a sub-layer must have exactly one"});
}

TEST_CASE("recursion among layers", "[sema][errors]") {
  CHECK(errs("layer a() {\n  input x: node[1];\n  layer s = b();\n  output x;\n}\n"
             "layer b() {\n  input x: node[1];\n  layer s = a();\n  output x;\n}") ==
        Lines{"8:13: error: layer 'a' uses itself through sub-layers (a -> b -> a)"});
  CHECK(errs("layer a() {\n  input x: node[1];\n  layer s = a();\n  output x;\n}") ==
        Lines{"3:13: error: layer 'a' uses itself through sub-layers (a -> a)"});
}

TEST_CASE("poisoned values do not cascade; all errors are reported", "[sema][errors]") {
  CHECK(bodyErrs("  edge a = src.q;\n  edge b = a * 2;\n  node c = sum(b);\n"
                 "  node f = frob(x);\n  node g = c + f + nope;\n  output g;") ==
        Lines{"9:16: error: unknown name 'q'", "12:12: error: unknown function 'frob'",
              "13:20: error: unknown name 'nope'"});
}

TEST_CASE("limits: deep sub-layer nesting and size", "[sema][limits]") {
  std::string chain = "layer l0() {\n  input x: node[1];\n  output x;\n}\n";
  for (int i = 1; i <= 40; ++i)
    chain += "layer l" + std::to_string(i) + "() {\n  input x: node[1];\n  layer s = l" +
             std::to_string(i - 1) + "();\n  node y = s(x);\n  output y;\n}\n";
  auto r = check(chain);
  REQUIRE(r.errors().size() == 1);
  CHECK(r.errors()[0].find("sub-layers are nested too deeply") != std::string::npos);

  // Each layer calls the previous one four times: 4^12 operations without the limit.
  std::string blowup = "layer b0() {\n  input x: node[1];\n  node y = relu(x);\n  output y;\n}\n";
  for (int i = 1; i <= 12; ++i) {
    std::string prev = "b" + std::to_string(i - 1);
    blowup += "layer b" + std::to_string(i) + "() {\n  input x: node[1];\n  layer s = " + prev +
              "();\n  node y = s(s(s(s(x))));\n  output y;\n}\n";
  }
  auto b = check(blowup);
  REQUIRE(b.errors().size() == 1);
  CHECK(b.errors()[0].find("is too large: more than 10000 operations") != std::string::npos);
}
