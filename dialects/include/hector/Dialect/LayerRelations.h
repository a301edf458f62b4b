//===- LayerRelations.h - The attributes that relate layers -----*- C++ -*-===//
//
// The discardable attributes by which the passes relate the layers of a module (a layer and its
// backward layer, inference copy and variants) and record what the runtime needs about each
// (variant name, rewrite log, cost estimate). The one list of their names: the passes that set
// them, the emitter that writes them into the manifest and the verifier of `hector.layer`
// (which checks that every layer they name exists) all use these constants.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_LAYERRELATIONS_H
#define HECTOR_DIALECT_LAYERRELATIONS_H

#include "llvm/ADT/StringRef.h"

namespace hector {

/// Attribute of a forward layer naming its backward layer (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kBackwardAttrName = "hector.backward";
/// Attribute of a backward layer naming its forward layer (a FlatSymbolRefAttr).
inline constexpr llvm::StringLiteral kForwardAttrName = "hector.forward";
/// Attribute of a forward layer naming its inference copy, and of the copy naming the forward
/// (FlatSymbolRefAttrs; hector-autodiff with inference=true).
inline constexpr llvm::StringLiteral kInferenceAttrName = "hector.inference";
inline constexpr llvm::StringLiteral kInferenceOfAttrName = "hector.inference_of";
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

/// The attributes that name one other layer (a FlatSymbolRefAttr each).
inline constexpr llvm::StringLiteral kLayerRefAttrNames[] = {
    kBackwardAttrName, kForwardAttrName, kInferenceAttrName, kInferenceOfAttrName,
    kVariantOfAttrName};

} // namespace hector

#endif // HECTOR_DIALECT_LAYERRELATIONS_H
