//===- Passes.h - Hector optimisations --------------------------*- C++ -*-===//
//
// The optimisation passes (OptimizePasses.td: createReorderLinear(), createCompactMaterialize(),
// createExplain() and registerHectorOptimizePasses()).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_OPTIMIZE_PASSES_H
#define HECTOR_OPTIMIZE_PASSES_H

#include "hector/Dialect/HectorOps.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "hector/Optimize/OptimizePasses.h.inc"

/// Attribute of a layer naming its variant: "none" (the layer as written), "reorder",
/// "compact" or "both".
inline constexpr llvm::StringLiteral kVariantAttrName = "hector.variant";
/// Attribute of a layer as written listing its other variants (an ArrayAttr of
/// FlatSymbolRefAttrs), and of each variant naming the layer (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kVariantsAttrName = "hector.variants";
inline constexpr llvm::StringLiteral kVariantOfAttrName = "hector.variant_of";
/// The rewrites a variant applied and skipped (an ArrayAttr of StringAttrs, "applies ..." /
/// "skips ...").
inline constexpr llvm::StringLiteral kRewritesAttrName = "hector.rewrites";
/// The cost model's estimate (hector-annotate-cost): a DictionaryAttr with `flops` and `bytes`
/// (DenseF64ArrayAttrs of the coefficients of N, E, U_src, U_dst, R, T, 1) and
/// `intermediates` (an ArrayAttr of such arrays).
inline constexpr llvm::StringLiteral kCostAttrName = "hector.cost";

} // namespace hector

#endif // HECTOR_OPTIMIZE_PASSES_H
