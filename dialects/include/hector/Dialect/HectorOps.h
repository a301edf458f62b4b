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

/// Verifies a binary elementwise op: space join and prefix broadcasting of its operands, and a
/// result of exactly the joined space and broadcast shape.
llvm::LogicalResult verifyElementwiseBinary(mlir::Operation *op);

} // namespace hector

#define GET_OP_CLASSES
#include "hector/Dialect/HectorOps.h.inc"

#endif // HECTOR_DIALECT_HECTOROPS_H
