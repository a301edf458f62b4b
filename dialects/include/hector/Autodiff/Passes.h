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

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "hector/Autodiff/AutodiffPasses.h.inc"

/// Attribute of a forward layer naming its backward layer (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kBackwardAttrName = "hector.backward";
/// Attribute of a backward layer naming its forward layer (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kForwardAttrName = "hector.forward";
/// Attribute of a forward layer naming its inference copy, and of the copy naming the forward
/// (FlatSymbolRefAttrs; hector-autodiff with inference=true).
inline constexpr llvm::StringLiteral kInferenceAttrName = "hector.inference";
inline constexpr llvm::StringLiteral kInferenceOfAttrName = "hector.inference_of";
/// Prefix of the forward outputs, and backward inputs, holding saved activations ("saved.0").
inline constexpr llvm::StringLiteral kSavedPrefix = "saved.";
/// Prefix of the gradient inputs and outputs of a backward layer ("grad.h", "grad.W").
inline constexpr llvm::StringLiteral kGradPrefix = "grad.";

} // namespace hector

#endif // HECTOR_AUTODIFF_PASSES_H
