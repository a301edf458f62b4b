//===- Library.h - The package and library a hectorc job builds -*- C++ -*-===//
//
// The last stage of hectorc: the emitted sources as a package directory, or built with CMake
// into the model's shared library.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_COMPILER_LIBRARY_H
#define HECTOR_COMPILER_LIBRARY_H

#include "hector/Emit/Emitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace hector {

/// Writes the package of `module` into a new temporary directory beside `dir` and renames it
/// to `dir` (which must not exist or be empty). Returns the exit code (errors are printed).
int writePackageDir(mlir::ModuleOp module, const EmitOptions &emitOptions, llvm::StringRef dir);

/// Emits the package into a temporary directory, builds it with CMake and moves the library
/// to `output`; `portable` leaves out -march=native, `index64` also builds the kernels for
/// 64-bit indices. Returns the exit code (errors are printed); nothing is left behind on
/// failure.
int buildLibrary(mlir::ModuleOp module, const EmitOptions &emitOptions, bool portable,
                 bool index64, llvm::StringRef output);

} // namespace hector

#endif // HECTOR_COMPILER_LIBRARY_H
