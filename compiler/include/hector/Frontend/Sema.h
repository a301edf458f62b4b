//===- Sema.h - Semantic analysis of the model language ---------*- C++ -*-===//
//
// Binds parameters, resolves names, checks index spaces, shapes and heads, inlines sub-layers
// and produces one CheckedLayer per layer.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_SEMA_H
#define HECTOR_FRONTEND_SEMA_H

#include "hector/Frontend/AST.h"
#include "hector/Frontend/Frontend.h"

#include <optional>

namespace hector {
namespace frontend {

/// Operations in one checked layer after inlining; a layer over it is rejected.
constexpr size_t kMaxLayerInstrs = 10000;
/// Sub-layers nested deeper than this are rejected.
constexpr unsigned kMaxLayerNesting = 32;
/// Dimensions above this (2^31 - 1) are rejected.
constexpr int64_t kMaxDim = 2147483647;

/// Checks a parsed module. Returns the checked module when no error was reported (by sema or
/// before it, in `diags`).
std::optional<CheckedModule> analyze(const std::string &file, const Module &module,
                                     DiagnosticEngine &diags, const FrontendOptions &options);

/// Joins the index spaces of two operands of an elementwise op (docs/architecture.md); nullopt
/// for a node-indexed space with an edge-indexed one.
std::optional<Space> joinSpaces(Space a, Space b);
/// True for the spaces with one row per edge: src, dst, edge, unique_src, unique_dst.
bool isPerEdge(Space space);

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_SEMA_H
