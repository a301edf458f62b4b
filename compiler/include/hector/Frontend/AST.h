//===- AST.h - Syntax tree of the model language ----------------*- C++ -*-===//
//
// What the parser builds and sema reads: layers, their parameters and statements, expressions.
// Every node keeps the position of the token that names it, for diagnostics.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_AST_H
#define HECTOR_FRONTEND_AST_H

#include "hector/Frontend/Checked.h"

#include <memory>
#include <string>
#include <vector>

namespace hector {
namespace frontend {

/// An expression. The parser bounds the height of every tree (kMaxExprHeight), so recursive
/// walks over it are bounded too.
struct Expr {
  enum class Kind {
    Number, ///< number
    Name,   ///< name
    Member, ///< `src.name` / `dst.name` (memberDst)
    Call,   ///< name(args...)
    Binary, ///< args[0] op args[1], op one of + - * /
    Neg,    ///< -args[0]
  };
  Kind kind = Kind::Number;
  SourceLoc loc; ///< the number, the name, `src`/`dst`, the callee, or the operator
  double number = 0.0;
  bool isInteger = false;
  bool invalid = false; ///< Number: a bad number (reported by the lexer), poison
  std::string name;     ///< Name, Member (the node value), Call (the callee)
  SourceLoc nameLoc;    ///< Member: the position of the name after the dot
  bool memberDst = false;
  char op = 0;
  std::vector<std::unique_ptr<Expr>> args;
  unsigned height = 1; ///< 1 + the height of the tallest operand
};
using ExprPtr = std::unique_ptr<Expr>;

/// Expressions taller than this are rejected by the parser.
constexpr unsigned kMaxExprHeight = 128;

/// `[heads] NAME = expr` in a layer header.
struct Param {
  bool isHeads = false;
  std::string name;
  SourceLoc loc;
  ExprPtr defaultValue;
};

/// `NAME = expr` in a sub-layer instance's parameter list.
struct Binding {
  std::string name;
  SourceLoc loc;
  ExprPtr value;
};

/// One statement of a layer body.
struct Stmt {
  enum class Kind {
    Input,         ///< input NAME: node|edge[dims];
    Weight,        ///< weight NAME: [relation|ntype] [dims] [init KIND];
    DerivedWeight, ///< weight NAME = expr;
    Value,         ///< edge|node NAME = expr;
    Instance,      ///< layer NAME = LAYER(bindings);
    Output,        ///< output NAME, ...;
    Poisoned,      ///< a statement that failed to parse after naming `name`
  };
  Kind kind = Kind::Poisoned;
  SourceLoc loc; ///< the statement's first token
  std::string name;
  SourceLoc nameLoc;
  bool isEdge = false; ///< Input, Value
  Slicing slicing = Slicing::None;
  std::vector<ExprPtr> dims; ///< Input, Weight
  std::string init;          ///< Weight ("" = default)
  SourceLoc initLoc;
  ExprPtr expr;          ///< Value, DerivedWeight
  std::string layerName; ///< Instance
  SourceLoc layerLoc;
  std::vector<Binding> bindings;
  std::vector<std::pair<std::string, SourceLoc>> outputs; ///< Output
};

/// `layer NAME(params) { body }`.
struct Layer {
  std::string name;
  SourceLoc loc; ///< the name
  std::vector<Param> params;
  std::vector<Stmt> body;
  bool hasSyntaxErrors = false; ///< some part failed to parse (sema stays quiet about its gaps)
};

/// A parsed file.
struct Module {
  std::vector<Layer> layers;
  /// Layers whose header failed to parse after the name: uses of them are not reported.
  std::vector<std::string> poisonedLayers;
};

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_AST_H
