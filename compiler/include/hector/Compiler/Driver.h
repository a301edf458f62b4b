//===- Driver.h - One hectorc job -------------------------------*- C++ -*-===//
//
// The library behind the hectorc tool: the tool parses its command line into CompilerOptions and
// makes one call to runCompiler.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_COMPILER_DRIVER_H
#define HECTOR_COMPILER_DRIVER_H

#include <string>
#include <vector>

namespace hector {

/// Everything one hectorc run needs.
struct CompilerOptions {
  /// The input file, or "-" for standard input.
  std::string inputFile = "-";
  /// The input language: "hector" (model language), "mlir" (Hector dialect text), or empty to
  /// choose by extension (`.mlir` is dialect text, anything else the model language).
  std::string inputKind;
  /// What to produce: "hector" (the Hector dialect as generated), "lowered" (the kernel-level
  /// IR), "cpp" / "cuda" (the generated sources), "package" (a source package in the directory
  /// `outputFile`) or "library" (the built shared library `outputFile`). Empty: "library" when
  /// `outputFile` ends in ".so", "hector" otherwise.
  std::string emit;
  /// The output file (or package directory), or "-" for standard output. Files are written
  /// atomically; a package or library appears complete or not at all.
  std::string outputFile = "-";
  /// "cpu" (CPU kernels only), "cuda" (CPU and CUDA kernels), or empty: CUDA kernels whenever
  /// hectorc was configured with a CUDA compiler.
  std::string target;
  /// The layer that names the library and whose manifest is manifest.json; empty: the last.
  std::string entry;
  /// Derive the backward layers (hector-autodiff) before lowering, so that the library can be
  /// trained; false builds an inference-only library.
  bool backward = true;
  /// Add each layer's reordered / compacted variants (hector-variants) for the runtime to
  /// choose among per graph; false leaves the layer as written.
  bool reorder = true;
  bool compact = true;
  /// Build a library that runs on other machines of the same architecture: the CPU kernels are
  /// not tuned for this one (no -march=native).
  bool portable = false;
  /// Also build the kernels for graphs with 64-bit indices (2^31 nodes or edges and more); by
  /// default only the 32-bit ones are built, and such a graph is a clear error at the call.
  bool index64 = false;
  /// The optimisation level (0-3) the library's kernels are compiled at (EmitOptions::optLevel).
  int optLevel = 3;
  /// Non-empty: print the cost model's comparison of every layer's variants at these graph
  /// sizes ("edges=E nodes=N relations=R ntypes=T unique-src=U unique-dst=U [balance=B]",
  /// separated by spaces or commas) instead of producing output.
  std::string explain;
  /// Verify the IR after every pass of the pipeline rather than once after it (slower; names
  /// the pass that produced invalid IR).
  bool verifyEach = false;
  /// `NAME=VALUE` parameter overrides, as given on the command line.
  std::vector<std::string> paramOverrides;
  /// Dialect text: end the process (exit code 1) right after printing the first parse error,
  /// rather than return, which runs MLIR 19's cleanup of the half-parsed IR (unsafe after some
  /// errors; see Driver.cpp). Callers that run several jobs in one process set it to false.
  bool exitOnParseError = true;
  /// Leave the job's IR and MLIRContext allocated when it ends instead of destroying them, for a
  /// process that exits after one job: destroying the IR of a large model (millions of
  /// operations) costs most of a second. They stay reachable from a global, so leak checkers
  /// see them as live. Off for callers that run many jobs in one process.
  bool skipTeardown = false;
};

/// Registers the MLIR command-line options hectorc honours (asm printer, context, pass manager,
/// timing); call once before llvm::cl::ParseCommandLineOptions.
void registerCompilerCLOptions();

/// Runs one hectorc job. Diagnostics go to stderr; returns the process exit code (0 on success,
/// 1 on any user or internal error).
int runCompiler(const CompilerOptions &options);

} // namespace hector

#endif // HECTOR_COMPILER_DRIVER_H
