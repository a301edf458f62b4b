//===- Emitter.h - Kernel-level Hector IR to C++/CUDA sources ---*- C++ -*-===//
//
// The read-only emitter: it walks the kernel-level IR of every hector.layer (after the pipeline
// of hector/Transforms/Passes.h and hector-prepare-emission, hector/Emit/Passes.h) and prints
// the sources of a self-contained package (see docs/architecture.md, "The emitted library and
// its ABI"). It never modifies the IR and prints from the kernel kinds, names and ids that
// hector-prepare-emission recorded; IR that pass did not annotate is reported at its location.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_EMITTER_H
#define HECTOR_EMIT_EMITTER_H

#include "hector/Dialect/HectorOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace hector {

/// What the emitted package contains.
struct EmitOptions {
  /// Emit CUDA kernels (model_cuda.cu) and register them for the CUDA dispatch key.
  bool cuda = true;
  /// The layer whose manifest is manifest.json and that names the library; empty: the last
  /// layer of the module. Every layer of the module is registered in the library.
  std::string entry;
  /// The library's name (`lib<name>.so`); empty: `hector_<entry layer>`.
  std::string libraryName;
  /// The optimisation level (0-3) the package's CMakeLists.txt compiles the kernels at, by
  /// default (its HECTOR_OPT_LEVEL): -O<level> for the C++ and the CUDA host code, and for
  /// ptxas. 3 runs fastest; 0 builds several times faster (checks that only compile).
  int optLevel = 3;
};

/// The entry layer of `module` (`entry`, or the last layer); reports an error and fails when
/// there is none.
mlir::FailureOr<LayerOp> selectEntryLayer(mlir::ModuleOp module, llvm::StringRef entry);

/// Prints model.cpp: the CPU kernels and the LibTorch host glue of every layer.
mlir::LogicalResult emitCpp(mlir::ModuleOp module, const EmitOptions &options,
                            llvm::raw_ostream &os);

/// Prints model_cuda.cu: the CUDA kernels of every layer.
mlir::LogicalResult emitCuda(mlir::ModuleOp module, const EmitOptions &options,
                             llvm::raw_ostream &os);

/// Prints the manifest (JSON, format 1) of one layer.
mlir::LogicalResult emitManifest(LayerOp layer, const EmitOptions &options,
                                 llvm::raw_ostream &os);

/// Prints the package's CMakeLists.txt (`optLevel`: its default HECTOR_OPT_LEVEL).
void emitCMakeLists(llvm::StringRef libraryName, int optLevel, llvm::raw_ostream &os);

/// The library name the options give for `module` (`libraryName`, or `hector_<entry>`).
mlir::FailureOr<std::string> libraryNameOf(mlir::ModuleOp module, const EmitOptions &options);

/// Writes the package (sources, manifest.json, CMakeLists.txt, and under include/ a copy of
/// the template headers from `templatesDir` and of the runtime's hector/graph.h from
/// `runtimeIncludeDir`) into the existing empty directory `dir`. Errors name the file.
mlir::LogicalResult writePackage(mlir::ModuleOp module, const EmitOptions &options,
                                 llvm::StringRef templatesDir, llvm::StringRef runtimeIncludeDir,
                                 llvm::StringRef dir);

} // namespace hector

#endif // HECTOR_EMIT_EMITTER_H
