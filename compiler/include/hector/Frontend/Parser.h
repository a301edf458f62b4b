//===- Parser.h - Recursive-descent parser ----------------------*- C++ -*-===//
//
// Builds the AST from tokens, reporting syntax errors and recovering at statement level (skip to
// the next ';' or '}').
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_PARSER_H
#define HECTOR_FRONTEND_PARSER_H

#include "hector/Frontend/AST.h"
#include "hector/Frontend/Lexer.h"

namespace hector {
namespace frontend {

/// Parses a token list (ending with Eof). Always returns a module: the layers and statements that
/// parsed, with placeholders for those that did not.
Module parse(const std::string &file, const std::vector<Token> &tokens, DiagnosticEngine &diags);

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_PARSER_H
