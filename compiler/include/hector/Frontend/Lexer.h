//===- Lexer.h - Tokens of the model language ------------------*- C++ -*-===//
//
// Splits a model file into tokens. Every byte sequence lexes: bad characters and bad numbers are
// reported and skipped, and the token list always ends with Eof.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_LEXER_H
#define HECTOR_FRONTEND_LEXER_H

#include "hector/Frontend/Frontend.h"

#include <string>
#include <vector>

namespace hector {
namespace frontend {

/// The kinds of token.
enum class TokKind {
  Eof,
  Ident,
  Number,
  // Keywords.
  KwLayer,
  KwInput,
  KwWeight,
  KwOutput,
  KwEdge,
  KwNode,
  KwHeads,
  KwInit,
  KwRelation,
  KwNtype,
  KwSrc,
  KwDst,
  // Punctuation.
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Comma,
  Semi,
  Colon,
  Equal,
  Plus,
  Minus,
  Star,
  Slash,
  Dot,
};

/// One token; `line` and `col` are 1-based, columns count bytes.
struct Token {
  TokKind kind = TokKind::Eof;
  std::string text;          ///< the token's bytes (empty for Eof)
  double number = 0.0;       ///< Number: its value
  bool isInteger = false;    ///< Number: written without '.' or exponent
  bool invalid = false;      ///< Number: bad or out of range (reported); parsed as poison
  bool afterBadChar = false; ///< a reported bad character was skipped right before this token
  unsigned line = 1;
  unsigned col = 1;
};

/// How a token kind is written in messages: `'layer'`, `';'`, "identifier", "end of file".
std::string tokKindSpelling(TokKind kind);
/// How a token is named in "got X": `'foo'`, `'12'`, `';'`, "end of file".
std::string describeToken(const Token &tok);

/// Lexes `text`; errors go to `diags`. Stops early (with an Eof token) once the engine is over
/// its error limit.
std::vector<Token> lex(const std::string &file, const std::string &text, DiagnosticEngine &diags);

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_LEXER_H
