//===- HectorTypes.h - Hector types, enums and attributes -------*- C++ -*-===//
//
// !hector.value and !hector.weight, the enum attributes, and the index-space and row-shape
// algebra (join of spaces, prefix broadcasting) shared by the verifiers and the passes.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTORTYPES_H
#define HECTOR_DIALECT_HECTORTYPES_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Types.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

#include "hector/Dialect/HectorEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HectorAttrDefs.h.inc"

namespace hector {

/// The shape of one row of a value (or one slice of a weight): its dimensions and the position
/// of the head dimension (-1 when there is none). The dimensions are owned by the type.
struct RowShape {
  llvm::ArrayRef<int64_t> dims;
  int64_t headAxis = -1;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool hasHeads() const { return headAxis >= 0; }
  bool isHead(int64_t axis) const { return axis == headAxis; }
  bool operator==(const RowShape &other) const {
    return dims == other.dims && headAxis == other.headAxis;
  }
  bool operator!=(const RowShape &other) const { return !(*this == other); }
};

/// A row shape that owns its dimensions (a computed shape, before it becomes a type).
struct OwnedShape {
  llvm::SmallVector<int64_t> dims;
  int64_t headAxis = -1;

  OwnedShape() = default;
  OwnedShape(RowShape shape) : dims(shape.dims), headAxis(shape.headAxis) {}
  RowShape view() const { return {dims, headAxis}; }
};

/// Prints a row shape as written in types, e.g. `[4h, 16]`.
std::string formatShape(RowShape shape);

/// True for the spaces with rows addressed through edges: src, dst, edge, unique_src, unique_dst.
bool isEdgeIndexed(Space space);

/// The space of an elementwise combination of rows in spaces `a` and `b`, or std::nullopt when
/// node-indexed rows meet edge-indexed ones (see docs/architecture.md, "Index spaces").
std::optional<Space> joinSpaces(Space a, Space b);

/// Prefix broadcasting: the longer of `a` and `b` when the shorter is its prefix (dimensions and
/// head dimension), std::nullopt otherwise.
std::optional<RowShape> broadcastShapes(RowShape a, RowShape b);

/// The value space a weight of the given slicing is read as by hector.slice.
Space sliceSpace(Slicing slicing);

// The type rules of the linear maps (hector.linear, hector.gemm, hector.weight_matmul and their
// gradients), shared by the verifiers and by the passes that create such ops. Each returns
// std::nullopt when the operands do not fit, and then, when `why` is given, the reason as the
// verifier reports it (naming `operand`, the rows).

/// The space of the rows of `x . W` for `rows` in `space` and W of `slicing` (either
/// direction): relation-sliced W needs edge-indexed rows (edge, or the unique_* space kept),
/// ntype-sliced W node rows; an unsliced W keeps the space.
std::optional<Space> linearSpace(Space space, Slicing slicing, llvm::StringRef operand = "input",
                                 std::string *why = nullptr);

/// The row shape of `x . W` (contracting x's last dim with W's first), or with `transposed`
/// of `x . W^T` (contracting x with W's trailing dims); per head for a weight `[Hh, k, m...]`.
std::optional<OwnedShape> linearShape(RowShape x, RowShape w, bool transposed,
                                      llvm::StringRef operand = "input",
                                      std::string *why = nullptr);

/// The slicing of a product of weights sliced `a` and `b`: at most one sliced, or both the
/// same way; std::nullopt otherwise.
std::optional<Slicing> productSlicing(Slicing a, Slicing b);

} // namespace hector

#define GET_TYPEDEF_CLASSES
#include "hector/Dialect/HectorOpsTypes.h.inc"

namespace hector {

/// The type of `hector.linear` of `x` and `w` (`x . W^T` with `transposed`); see linearSpace
/// and linearShape.
std::optional<ValueType> linearType(ValueType x, WeightType w, bool transposed = false,
                                    llvm::StringRef operand = "input", std::string *why = nullptr);

/// The type of `hector.weight_matmul lhs, rhs`: contracts lhs's last dim with rhs's first (no
/// head dim contracted, at most one operand with heads), slicing by productSlicing.
std::optional<WeightType> weightMatmulType(WeightType lhs, WeightType rhs,
                                           std::string *why = nullptr);

/// The type of `hector.weight_dot lhs, rhs`: rhs's shape `[s..., d]` (head dim included) is a
/// suffix of lhs's `[p..., s..., d]`, d is contracted (not a head dim), the result is lhs's shape
/// without its last dim; slicing by productSlicing.
std::optional<WeightType> weightDotType(WeightType lhs, WeightType rhs, std::string *why = nullptr);

} // namespace hector

#endif // HECTOR_DIALECT_HECTORTYPES_H
