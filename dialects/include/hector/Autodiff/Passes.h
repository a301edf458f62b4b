//===- Passes.h - Hector automatic differentiation --------------*- C++ -*-===//
//
// The reverse-mode differentiation pass (AutodiffPasses.td: createAutodiff() and
// registerHectorAutodiffPasses()) and the names of the interface between a layer and its
// backward layer.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_AUTODIFF_PASSES_H
#define HECTOR_AUTODIFF_PASSES_H

#include "hector/Dialect/HectorOps.h"
#include "hector/Dialect/LayerRelations.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "hector/Autodiff/AutodiffPasses.h.inc"

/// Prefix of the forward outputs, and backward inputs, holding saved activations ("saved.0").
inline constexpr llvm::StringLiteral kSavedPrefix = "saved.";
/// Prefix of the gradient inputs and outputs of a backward layer ("grad.h", "grad.W").
inline constexpr llvm::StringLiteral kGradPrefix = "grad.";

} // namespace hector

#endif // HECTOR_AUTODIFF_PASSES_H
