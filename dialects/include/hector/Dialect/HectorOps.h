//===- HectorOps.h - Hector dialect operations ------------------*- C++ -*-===//
//
// The ops of the Hector dialect and the trait marking the ops allowed in a traversal body.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTOROPS_H
#define HECTOR_DIALECT_HECTOROPS_H

#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorTypes.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace hector {
namespace OpTrait {

/// Ops that may appear in the body of a hector.traversal (elementwise ops, graph access, heads,
/// reductions); hector.traversal's verifier rejects every other op.
template <typename ConcreteType>
class TraversalBody : public mlir::OpTrait::TraitBase<ConcreteType, TraversalBody> {};

/// The row-wise elementwise ops of the layer language (HectorOps.td, Hector_Elementwise).
template <typename ConcreteType>
class Elementwise : public mlir::OpTrait::TraitBase<ConcreteType, Elementwise> {};

/// Elementwise ops far costlier than a load per element (HectorOps.td, Hector_Transcendental).
template <typename ConcreteType>
class Transcendental : public mlir::OpTrait::TraitBase<ConcreteType, Transcendental> {};

/// Elementwise functions of one operand named by their mnemonic in the model language, the
/// kernels' functors and ATen (HectorOps.td, Hector_UnaryFunction).
template <typename ConcreteType>
class UnaryFunction : public mlir::OpTrait::TraitBase<ConcreteType, UnaryFunction> {};

} // namespace OpTrait

/// The result type of a binary elementwise op `opName` (the arithmetic ops and the activation
/// gradients) over `lhs` and `rhs`: the join of their spaces and the prefix broadcast of their
/// shapes. Fails, with an error at `location` when there is one, where they do not combine.
llvm::LogicalResult inferElementwiseBinary(llvm::StringRef opName,
                                           std::optional<mlir::Location> location, mlir::Value lhs,
                                           mlir::Value rhs,
                                           llvm::SmallVectorImpl<mlir::Type> &inferred);

} // namespace hector

#define GET_OP_CLASSES
#include "hector/Dialect/HectorOps.h.inc"

namespace hector {

/// The result types of hector.linear, hector.weight_matmul and hector.dot from their operands
/// (HectorTypes.h's linearType and weightMatmulType; dot: the joined space, the shape without
/// its last dimension). Fail, with an error at `location` when there is one, where the operands
/// do not combine.
llvm::LogicalResult inferLinear(std::optional<mlir::Location> location, LinearOp::Adaptor adaptor,
                                llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult inferWeightMatmul(std::optional<mlir::Location> location,
                                      WeightMatmulOp::Adaptor adaptor,
                                      llvm::SmallVectorImpl<mlir::Type> &inferred);
llvm::LogicalResult inferDot(std::optional<mlir::Location> location, DotOp::Adaptor adaptor,
                             llvm::SmallVectorImpl<mlir::Type> &inferred);
/// The result type of hector.src_row of `table` (a weight read as a value): its row per edge
/// (SpaceRules.h srcRowSpace) of the table's shape without the first (row) dimension.
llvm::LogicalResult inferSrcRow(std::optional<mlir::Location> location, mlir::Value table,
                                llvm::SmallVectorImpl<mlir::Type> &inferred);

} // namespace hector

#endif // HECTOR_DIALECT_HECTOROPS_H
