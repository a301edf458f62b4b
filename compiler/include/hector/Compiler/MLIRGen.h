//===- MLIRGen.h - Checked layers to Hector IR ------------------*- C++ -*-===//
//
// Turns the front end's checked module into a builtin module of hector.layer ops: one op per
// checked instr, located at the source position the user wrote it.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_COMPILER_MLIRGEN_H
#define HECTOR_COMPILER_MLIRGEN_H

#include "hector/Frontend/Checked.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

namespace hector {

/// Builds one hector.layer per checked layer into a new module; `context` must have the Hector
/// dialect loaded. The module is not verified here. Returns null, after emitting an error
/// through the context, only when the checked form breaks its own contract (an internal error).
mlir::OwningOpRef<mlir::ModuleOp> generateModule(mlir::MLIRContext &context,
                                                 const frontend::CheckedModule &module);

} // namespace hector

#endif // HECTOR_COMPILER_MLIRGEN_H
