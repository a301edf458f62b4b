//===- Parser.cpp - Recursive-descent parser ------------------------------===//
//
// The grammar is in docs/language.md. Errors are "expected X, got Y" at the offending token;
// after one, the parser skips to the end of the statement (';', or before '}') and goes on.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Parser.h"

#include <algorithm>

namespace hector {
namespace frontend {

namespace {

class Parser {
public:
  Parser(const std::string &file, const std::vector<Token> &tokens, DiagnosticEngine &diags)
      : file(file), toks(tokens), diags(diags) {}

  Module run() {
    Module module;
    if (at(TokKind::Eof)) {
      // A model file defines at least one layer.
      error("expected 'layer', got end of file");
      return module;
    }
    while (!at(TokKind::Eof) && !diags.limitReached()) {
      if (!at(TokKind::KwLayer)) {
        failed = false;
        stmtStart = pos;
        error("expected 'layer', got " + describeToken(cur()));
        // Resynchronise at the next layer.
        while (!at(TokKind::Eof) && !at(TokKind::KwLayer))
          ++pos;
        continue;
      }
      parseLayer(module);
    }
    return module;
  }

private:
  const std::string &file;
  const std::vector<Token> &toks;
  DiagnosticEngine &diags;
  size_t pos = 0;
  /// Set by a failed parse of the current statement or header.
  bool failed = false;
  /// The first token of the current statement (or header, or top-level run).
  size_t stmtStart = 0;

  /// True if the current statement up to the current token holds a lexical error: its syntax
  /// errors are then consequences and are not reported.
  bool lexErrorInStatement() const {
    size_t end = std::min(pos, toks.size() - 1);
    for (size_t i = stmtStart; i <= end; ++i)
      if (toks[i].afterBadChar || toks[i].invalid)
        return true;
    return false;
  }

  const Token &cur() const { return toks[pos < toks.size() ? pos : toks.size() - 1]; }
  bool at(TokKind kind) const { return cur().kind == kind; }
  SourceLoc loc(const Token &tok) const { return SourceLoc{file, tok.line, tok.col}; }
  SourceLoc curLoc() const { return loc(cur()); }
  void advance() {
    if (!at(TokKind::Eof))
      ++pos;
  }

  /// Reports an error at the current token, once per statement.
  void error(const std::string &message) {
    if (!failed && !lexErrorInStatement())
      diags.error(curLoc(), message);
    failed = true;
  }

  bool expect(TokKind kind, const std::string &what) {
    if (at(kind)) {
      advance();
      return true;
    }
    error("expected " + what + ", got " + describeToken(cur()));
    return false;
  }

  /// Expects the closing bracket `kind` of the opener at `open`; notes the opener on failure.
  bool expectClose(TokKind kind, const SourceLoc &open) {
    if (at(kind)) {
      advance();
      return true;
    }
    if (!failed && !lexErrorInStatement()) {
      error("expected " + tokKindSpelling(kind) + ", got " + describeToken(cur()));
      diags.note(open,
                 "to match this " + tokKindSpelling(kind == TokKind::RParen     ? TokKind::LParen
                                                    : kind == TokKind::RBracket ? TokKind::LBracket
                                                                                : TokKind::LBrace));
    }
    return false;
  }

  bool expectIdent(std::string &name, SourceLoc &nameLoc, const std::string &what) {
    if (at(TokKind::Ident)) {
      name = cur().text;
      nameLoc = curLoc();
      advance();
      return true;
    }
    if (cur().kind >= TokKind::KwLayer && cur().kind <= TokKind::KwDst)
      error("expected " + what + ", got keyword " + describeToken(cur()));
    else
      error("expected " + what + ", got " + describeToken(cur()));
    return false;
  }

  /// Skips to the end of a failed statement: past the next ';', or up to a '}' or end of file.
  void recover() {
    while (!at(TokKind::Eof) && !at(TokKind::RBrace)) {
      if (at(TokKind::Semi)) {
        advance();
        return;
      }
      advance();
    }
  }

  void parseLayer(Module &module) {
    failed = false;
    stmtStart = pos;
    advance(); // 'layer'
    Layer layer;
    if (!expectIdent(layer.name, layer.loc, "a layer name")) {
      skipLayer();
      return;
    }
    SourceLoc open = curLoc();
    if (expect(TokKind::LParen, "'(' after the layer name")) {
      if (!at(TokKind::RParen)) {
        do {
          Param param;
          if (at(TokKind::KwHeads)) {
            param.isHeads = true;
            advance();
          }
          if (!expectIdent(param.name, param.loc, "a parameter name"))
            break;
          if (!expect(TokKind::Equal,
                      "'=' and a default value after parameter '" + param.name + "'"))
            break;
          param.defaultValue = parseExpr();
          if (!param.defaultValue)
            break;
          layer.params.push_back(std::move(param));
        } while (!failed && at(TokKind::Comma) && (advance(), true));
      }
      if (!failed)
        expectClose(TokKind::RParen, open);
    }
    SourceLoc braceLoc = curLoc();
    if (!failed)
      expect(TokKind::LBrace, "'{' to begin the body of layer '" + layer.name + "'");
    if (failed) {
      // A broken header: keep the name quiet and skip the body.
      module.poisonedLayers.push_back(layer.name);
      skipLayer();
      return;
    }
    while (!at(TokKind::RBrace) && !at(TokKind::Eof) && !diags.limitReached()) {
      failed = false;
      stmtStart = pos;
      parseStmt(layer);
      if (failed) {
        layer.hasSyntaxErrors = true;
        recover();
      }
    }
    failed = false;
    stmtStart = pos;
    if (at(TokKind::Eof)) {
      bool quiet = lexErrorInStatement();
      error("expected '}' at the end of layer '" + layer.name + "', got end of file");
      if (!quiet)
        diags.note(braceLoc, "to match this '{'");
      layer.hasSyntaxErrors = true;
    } else {
      advance();
    }
    module.layers.push_back(std::move(layer));
  }

  /// Skips the rest of a layer whose header did not parse: to the matching '}' if a '{' comes
  /// before the next 'layer', else to that 'layer'.
  void skipLayer() {
    while (!at(TokKind::Eof) && !at(TokKind::KwLayer) && !at(TokKind::LBrace))
      advance();
    if (!at(TokKind::LBrace))
      return;
    unsigned depth = 0;
    while (!at(TokKind::Eof)) {
      if (at(TokKind::LBrace))
        ++depth;
      if (at(TokKind::RBrace) && --depth == 0) {
        advance();
        return;
      }
      advance();
    }
  }

  /// Records a statement that failed after its name, so sema does not report uses of the name.
  void poison(Layer &layer, const std::string &name, const SourceLoc &nameLoc) {
    Stmt stmt;
    stmt.kind = Stmt::Kind::Poisoned;
    stmt.name = name;
    stmt.nameLoc = nameLoc;
    stmt.loc = nameLoc;
    layer.body.push_back(std::move(stmt));
  }

  void parseStmt(Layer &layer) {
    Stmt stmt;
    stmt.loc = curLoc();
    switch (cur().kind) {
    case TokKind::KwInput:
      advance();
      stmt.kind = Stmt::Kind::Input;
      if (!expectIdent(stmt.name, stmt.nameLoc, "an input name"))
        return;
      if (!expect(TokKind::Colon, "':' after input '" + stmt.name + "'"))
        return poison(layer, stmt.name, stmt.nameLoc);
      if (at(TokKind::KwNode) || at(TokKind::KwEdge)) {
        stmt.isEdge = at(TokKind::KwEdge);
        advance();
      } else {
        error("expected 'node' or 'edge' in the type of input '" + stmt.name + "', got " +
              describeToken(cur()));
        return poison(layer, stmt.name, stmt.nameLoc);
      }
      if (!parseDims(stmt.dims))
        return poison(layer, stmt.name, stmt.nameLoc);
      break;
    case TokKind::KwWeight:
      advance();
      if (!expectIdent(stmt.name, stmt.nameLoc, "a weight name"))
        return;
      if (at(TokKind::Equal)) {
        advance();
        stmt.kind = Stmt::Kind::DerivedWeight;
        stmt.expr = parseExpr();
        if (!stmt.expr)
          return poison(layer, stmt.name, stmt.nameLoc);
        break;
      }
      stmt.kind = Stmt::Kind::Weight;
      if (!expect(TokKind::Colon, "':' or '=' after weight '" + stmt.name + "'"))
        return poison(layer, stmt.name, stmt.nameLoc);
      if (at(TokKind::KwRelation) || at(TokKind::KwNtype)) {
        stmt.slicing = at(TokKind::KwRelation) ? Slicing::Relation : Slicing::NType;
        advance();
      }
      if (!parseDims(stmt.dims))
        return poison(layer, stmt.name, stmt.nameLoc);
      if (at(TokKind::KwInit)) {
        advance();
        if (!expectIdent(stmt.init, stmt.initLoc, "an init kind after 'init'"))
          return poison(layer, stmt.name, stmt.nameLoc);
      }
      break;
    case TokKind::KwEdge:
    case TokKind::KwNode:
      stmt.kind = Stmt::Kind::Value;
      stmt.isEdge = at(TokKind::KwEdge);
      advance();
      if (!expectIdent(stmt.name, stmt.nameLoc, "a value name"))
        return;
      if (!expect(TokKind::Equal, "'=' after '" + stmt.name + "'"))
        return poison(layer, stmt.name, stmt.nameLoc);
      stmt.expr = parseExpr();
      if (!stmt.expr)
        return poison(layer, stmt.name, stmt.nameLoc);
      break;
    case TokKind::KwLayer:
      if (!parseInstance(layer, stmt))
        return;
      break;
    case TokKind::KwOutput:
      advance();
      stmt.kind = Stmt::Kind::Output;
      do {
        std::string name;
        SourceLoc nameLoc;
        if (!expectIdent(name, nameLoc, "an output name"))
          return;
        stmt.outputs.emplace_back(name, nameLoc);
      } while (at(TokKind::Comma) && (advance(), true));
      break;
    default:
      error("expected a statement (input, weight, edge, node, layer or output), got " +
            describeToken(cur()));
      return;
    }
    if (!at(TokKind::Semi)) {
      error("expected ';' at the end of the statement, got " + describeToken(cur()));
      layer.hasSyntaxErrors = true;
      TokKind k = cur().kind;
      if (k == TokKind::KwInput || k == TokKind::KwWeight || k == TokKind::KwEdge ||
          k == TokKind::KwNode || k == TokKind::KwLayer || k == TokKind::KwOutput ||
          k == TokKind::RBrace) {
        // A forgotten ';' before the next statement: keep this one and do not skip that one.
        failed = false;
        layer.body.push_back(std::move(stmt));
      } else if (stmt.kind != Stmt::Kind::Output) {
        poison(layer, stmt.name, stmt.nameLoc);
      }
      return;
    }
    advance();
    layer.body.push_back(std::move(stmt));
  }

  /// The rest of a sub-layer instance statement after 'layer': `NAME = LAYER(P = EXPR, ...)`.
  /// False when the statement is abandoned (its name poisoned where it was read).
  bool parseInstance(Layer &layer, Stmt &stmt) {
    auto abandon = [&] {
      poison(layer, stmt.name, stmt.nameLoc);
      return false;
    };
    advance();
    stmt.kind = Stmt::Kind::Instance;
    if (!expectIdent(stmt.name, stmt.nameLoc, "a sub-layer instance name"))
      return false;
    if (!expect(TokKind::Equal, "'=' after sub-layer instance '" + stmt.name + "'") ||
        !expectIdent(stmt.layerName, stmt.layerLoc, "a layer name"))
      return abandon();
    SourceLoc open = curLoc();
    if (!expect(TokKind::LParen, "'(' after layer '" + stmt.layerName + "'"))
      return abandon();
    if (!at(TokKind::RParen)) {
      do {
        Binding binding;
        if (!expectIdent(binding.name, binding.loc, "a parameter name") ||
            !expect(TokKind::Equal, "'=' after parameter '" + binding.name + "'"))
          return abandon();
        binding.value = parseExpr();
        if (!binding.value)
          return abandon();
        stmt.bindings.push_back(std::move(binding));
      } while (at(TokKind::Comma) && (advance(), true));
    }
    if (!expectClose(TokKind::RParen, open))
      return abandon();
    return true;
  }

  bool parseDims(std::vector<ExprPtr> &dims) {
    SourceLoc open = curLoc();
    if (!expect(TokKind::LBracket, "'[' to begin the dimensions"))
      return false;
    if (!at(TokKind::RBracket)) {
      do {
        ExprPtr dim = parseExpr();
        if (!dim)
          return false;
        dims.push_back(std::move(dim));
      } while (at(TokKind::Comma) && (advance(), true));
    }
    return expectClose(TokKind::RBracket, open);
  }

  /// Builds a node with the given operands, rejecting it if it gets too tall.
  ExprPtr finish(ExprPtr node) {
    unsigned height = 0;
    for (const ExprPtr &arg : node->args)
      height = std::max(height, arg->height);
    node->height = height + 1;
    if (node->height > kMaxExprHeight) {
      if (!failed)
        diags.error(node->loc, "expression nested too deeply (more than " +
                                   std::to_string(kMaxExprHeight) + " levels)");
      failed = true;
      return nullptr;
    }
    return node;
  }

  // expr := term (('+' | '-') term)*
  ExprPtr parseExpr(unsigned depth = 0) {
    return parseLeftAssociative(depth, TokKind::Plus, TokKind::Minus, &Parser::parseTerm);
  }

  // term := unary (('*' | '/') unary)*
  ExprPtr parseTerm(unsigned depth) {
    return parseLeftAssociative(depth, TokKind::Star, TokKind::Slash, &Parser::parseUnary);
  }

  /// One left-associative level of binary operators `a` and `b` over operands from `operand`.
  ExprPtr parseLeftAssociative(unsigned depth, TokKind a, TokKind b,
                               ExprPtr (Parser::*operand)(unsigned)) {
    ExprPtr lhs = (this->*operand)(depth);
    while (lhs && (at(a) || at(b))) {
      auto node = std::make_unique<Expr>();
      node->kind = Expr::Kind::Binary;
      node->op = cur().text[0];
      node->loc = curLoc();
      advance();
      ExprPtr rhs = (this->*operand)(depth);
      if (!rhs)
        return nullptr;
      node->args.push_back(std::move(lhs));
      node->args.push_back(std::move(rhs));
      lhs = finish(std::move(node));
    }
    return lhs;
  }

  /// True (after an error) when the parser's own recursion is too deep.
  bool tooDeep(unsigned depth) {
    if (depth < kMaxExprHeight)
      return false;
    if (!failed)
      diags.error(curLoc(), "expression nested too deeply (more than " +
                                std::to_string(kMaxExprHeight) + " levels)");
    failed = true;
    return true;
  }

  // unary := '-' unary | primary
  ExprPtr parseUnary(unsigned depth) {
    if (tooDeep(depth))
      return nullptr;
    if (at(TokKind::Minus)) {
      auto node = std::make_unique<Expr>();
      node->kind = Expr::Kind::Neg;
      node->loc = curLoc();
      advance();
      ExprPtr operand = parseUnary(depth + 1);
      if (!operand)
        return nullptr;
      node->args.push_back(std::move(operand));
      return finish(std::move(node));
    }
    return parsePrimary(depth);
  }

  // primary := NUMBER | NAME | NAME '(' [expr (',' expr)*] ')' | ('src'|'dst') '.' NAME
  //          | '(' expr ')'
  ExprPtr parsePrimary(unsigned depth) {
    auto node = std::make_unique<Expr>();
    node->loc = curLoc();
    switch (cur().kind) {
    case TokKind::Number:
      node->kind = Expr::Kind::Number;
      node->number = cur().number;
      node->isInteger = cur().isInteger;
      node->invalid = cur().invalid;
      advance();
      return node;
    case TokKind::KwSrc:
    case TokKind::KwDst:
      node->kind = Expr::Kind::Member;
      node->memberDst = at(TokKind::KwDst);
      advance();
      if (!expect(TokKind::Dot, std::string("'.' after '") + (node->memberDst ? "dst" : "src") +
                                    "' (as in " + (node->memberDst ? "dst" : "src") + ".x)"))
        return nullptr;
      if (!expectIdent(node->name, node->nameLoc, "a node value name"))
        return nullptr;
      return node;
    case TokKind::Ident: {
      node->name = cur().text;
      advance();
      if (!at(TokKind::LParen)) {
        node->kind = Expr::Kind::Name;
        return node;
      }
      node->kind = Expr::Kind::Call;
      SourceLoc open = curLoc();
      advance();
      if (!at(TokKind::RParen)) {
        do {
          ExprPtr arg = parseExpr(depth + 1);
          if (!arg)
            return nullptr;
          node->args.push_back(std::move(arg));
        } while (at(TokKind::Comma) && (advance(), true));
      }
      if (!expectClose(TokKind::RParen, open))
        return nullptr;
      return finish(std::move(node));
    }
    case TokKind::LParen: {
      SourceLoc open = curLoc();
      advance();
      ExprPtr inner = parseExpr(depth + 1);
      if (!inner)
        return nullptr;
      if (!expectClose(TokKind::RParen, open))
        return nullptr;
      return inner;
    }
    default:
      error("expected an expression, got " + describeToken(cur()));
      return nullptr;
    }
  }
};

} // namespace

Module parse(const std::string &file, const std::vector<Token> &tokens, DiagnosticEngine &diags) {
  if (tokens.empty()) {
    // lex() always ends with Eof; be safe with a hand-made list.
    static const std::vector<Token> eofOnly(1);
    return Parser(file, eofOnly, diags).run();
  }
  return Parser(file, tokens, diags).run();
}

} // namespace frontend
} // namespace hector
