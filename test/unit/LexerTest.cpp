//===- LexerTest.cpp - Tokens, numbers and lexical errors -----------------===//

#include "hector/Frontend/Lexer.h"
#include "FrontendTestUtil.h"

#include <catch2/catch.hpp>

using namespace hector::frontend;
using namespace hector::frontend::test;

namespace {

std::vector<Token> lexOk(const std::string &text) {
  DiagnosticEngine diags;
  std::vector<Token> toks = lex("t.hector", text, diags);
  INFO(text);
  REQUIRE_FALSE(diags.hasErrors());
  return toks;
}

std::vector<std::string> lexErrors(const std::string &text) {
  DiagnosticEngine diags;
  lex("t.hector", text, diags);
  std::vector<std::string> out;
  for (const Diagnostic &d : diags.diagnostics())
    out.push_back(std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) + ": " + d.message);
  return out;
}

} // namespace

TEST_CASE("lexer: keywords, identifiers, punctuation and positions", "[lexer]") {
  auto toks = lexOk("layer f(in = 16) {\n\tedge m = src.x;  # comment\n}");
  std::vector<TokKind> kinds;
  for (const Token &t : toks)
    kinds.push_back(t.kind);
  std::vector<TokKind> expected = {
      TokKind::KwLayer, TokKind::Ident,  TokKind::LParen, TokKind::Ident,  TokKind::Equal,
      TokKind::Number,  TokKind::RParen, TokKind::LBrace, TokKind::KwEdge, TokKind::Ident,
      TokKind::Equal,   TokKind::KwSrc,  TokKind::Dot,    TokKind::Ident,  TokKind::Semi,
      TokKind::RBrace,  TokKind::Eof};
  CHECK(kinds == expected);
  // A tab is one column.
  CHECK(toks[8].line == 2);
  CHECK(toks[8].col == 2);
  CHECK(toks[15].line == 3);
  CHECK(toks[15].col == 1);
  CHECK(toks.back().line == 3);
  CHECK(toks.back().col == 2);
}

TEST_CASE("lexer: every keyword", "[lexer]") {
  auto toks = lexOk("layer input weight output edge node heads init relation ntype src dst");
  std::vector<TokKind> expected = {TokKind::KwLayer,  TokKind::KwInput, TokKind::KwWeight,
                                   TokKind::KwOutput, TokKind::KwEdge,  TokKind::KwNode,
                                   TokKind::KwHeads,  TokKind::KwInit,  TokKind::KwRelation,
                                   TokKind::KwNtype,  TokKind::KwSrc,   TokKind::KwDst};
  for (size_t i = 0; i < expected.size(); ++i)
    CHECK(toks[i].kind == expected[i]);
  CHECK(lexOk("Layer layer_ _x x1")[0].kind == TokKind::Ident);
}

TEST_CASE("lexer: numbers", "[lexer]") {
  auto toks = lexOk("16 0.2 1e-3 2.5E+2 007 9007199254740992");
  CHECK(toks[0].number == 16);
  CHECK(toks[0].isInteger);
  CHECK(toks[1].number == 0.2);
  CHECK_FALSE(toks[1].isInteger);
  CHECK(toks[2].number == 1e-3);
  CHECK(toks[3].number == 250);
  CHECK(toks[4].number == 7);
  CHECK(toks[5].number == 9007199254740992.0);
  // `-` is an operator, not part of the number.
  auto neg = lexOk("-1");
  CHECK(neg[0].kind == TokKind::Minus);
  CHECK(neg[1].kind == TokKind::Number);
}

TEST_CASE("lexer: bad and out-of-range numbers", "[lexer]") {
  CHECK(lexErrors("x = 1.;") == std::vector<std::string>{"1:5: bad number '1.'"});
  CHECK(lexErrors("1e") == std::vector<std::string>{"1:1: bad number '1e'"});
  CHECK(lexErrors("1e+") == std::vector<std::string>{"1:1: bad number '1e+'"});
  CHECK(lexErrors("12ab") == std::vector<std::string>{"1:1: bad number '12ab'"});
  CHECK(lexErrors("1.2.3") == std::vector<std::string>{"1:1: bad number '1.2.3'"});
  CHECK(lexErrors("0x1F") == std::vector<std::string>{"1:1: bad number '0x1F'"});
  CHECK(lexErrors("1e999") == std::vector<std::string>{"1:1: number '1e999' is too large"});
  CHECK(lexErrors("1e-999") == std::vector<std::string>{"1:1: number '1e-999' is too small"});
  CHECK(lexErrors("9007199254740993") ==
        std::vector<std::string>{
            "1:1: number '9007199254740993' is too large (integers are limited to 2^53)"});
  std::string huge(400, '9');
  CHECK(lexErrors(huge).size() == 1);
}

TEST_CASE("lexer: unexpected characters, one error per run", "[lexer]") {
  CHECK(lexErrors("a @ b") == std::vector<std::string>{"1:3: unexpected character '@'"});
  CHECK(lexErrors("a @$% b") == std::vector<std::string>{"1:3: unexpected character '@'"});
  CHECK(lexErrors("a @ $") ==
        std::vector<std::string>{"1:3: unexpected character '@'", "1:5: unexpected character '$'"});
  CHECK(lexErrors(std::string("a\0b", 3)) ==
        std::vector<std::string>{"1:2: unexpected control character 0x00"});
  CHECK(lexErrors("x \xC3\xA9 y") == std::vector<std::string>{"1:3: unexpected character U+00E9"});
  CHECK(lexErrors("x \xFF y") == std::vector<std::string>{"1:3: invalid UTF-8 byte 0xFF"});
  // Overlong and truncated sequences are invalid.
  CHECK(lexErrors("\xC0\xAF") == std::vector<std::string>{"1:1: invalid UTF-8 byte 0xC0"});
  CHECK(lexErrors("\xE2\x82") == std::vector<std::string>{"1:1: invalid UTF-8 byte 0xE2"});
  // Anything goes in a comment.
  CHECK(lexErrors("# \xFF\x00 @\nx").empty());
}

TEST_CASE("lexer: the error limit stops lexing", "[lexer]") {
  DiagnosticEngine diags;
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "@ a ";
  auto toks = lex("t.hector", text, diags);
  CHECK(diags.errorCount() == DiagnosticEngine::kMaxErrors);
  CHECK(diags.limitReached());
  CHECK(toks.back().kind == TokKind::Eof);
}
