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

#include <optional>
#include <string>

#include "hector/Dialect/HectorEnums.h.inc"

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

} // namespace hector

#define GET_TYPEDEF_CLASSES
#include "hector/Dialect/HectorOpsTypes.h.inc"

#endif // HECTOR_DIALECT_HECTORTYPES_H
