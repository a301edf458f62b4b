//===- hectorc.cpp - The Hector compiler ------------------------*- C++ -*-===//
//
// Parses the command line into CompilerOptions and runs one job. Options CLI11 does not know
// that start with --mlir- (MLIR's debugging flags) are handed to llvm::cl.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Driver.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace {

int run(int argc, char **argv) {
  hector::registerCompilerCLOptions();

  hector::CompilerOptions options;
  options.skipTeardown = true; // one job, then the process exits
  CLI::App app{"hectorc: ahead-of-time compiler for relational graph neural networks"};
  app.allow_extras();
  app.footer("MLIR debugging flags (--mlir-print-ir-after-all, --mlir-print-debuginfo,\n"
             "--mlir-timing, ...) are accepted as --mlir-NAME or --mlir-NAME=VALUE.\n");
  app.add_option("FILE", options.inputFile, "Input file ('-' for stdin)")->required();
  app.add_option("-x", options.inputKind, "Input language: hector or mlir (default: by extension)")
      ->check(CLI::IsMember({"hector", "mlir"}));
  app.add_option("--emit", options.emit,
                 "What to produce: hector (the dialect), lowered (kernel-level IR), cpp, cuda "
                 "(sources), package (a source package in -o DIR), library (build -o FILE.so; "
                 "the default when -o ends in .so)");
  app.add_option("-o", options.outputFile,
                 "Output file or package directory ('-' for stdout; written atomically)");
  app.add_option("--target", options.target,
                 "Kernels to build: cpu, or cuda (CPU and CUDA; the default when hectorc "
                 "was configured with a CUDA compiler)");
  app.add_option(
      "--entry", options.entry,
      "The layer that names the library and manifest.json (default: the last forward layer)");
  app.add_flag("!--no-backward", options.backward,
               "Build an inference-only library: no backward layers (by default every layer "
               "gets one, derived by hector-autodiff, so that it can be trained)");
  app.add_flag("!--no-reorder", options.reorder,
               "Do not add the linear-reordered variants of the layers (by default the library "
               "carries every variant and the runtime picks one per graph with the cost model)");
  app.add_flag("!--no-compact", options.compact,
               "Do not add the compact-materialised variants of the layers");
  app.add_flag("--portable", options.portable,
               "Do not tune the CPU kernels for this machine (-march=native, the default), so "
               "that the library also runs on other machines of its architecture");
  app.add_flag("--index64", options.index64,
               "Also build the kernels for graphs with 64-bit indices (2^31 nodes or edges and "
               "more; by default only the 32-bit ones are built)");
  app.add_option("-O", options.optLevel,
                 "Optimisation level of the library's C++ and CUDA compile, 0-3 (default 3): "
                 "-O0 builds several times faster, for a library that only has to compile; "
                 "the IR's optimisations are --no-reorder / --no-compact")
      ->check(CLI::Range(0, 3));
  app.add_flag("--verify-each", options.verifyEach,
               "Verify the IR after every pass rather than once after the pipeline (to find "
               "the pass that produced invalid IR)");
  app.add_option("--explain", options.explain,
                 "Print the cost model's comparison of each layer's variants at the given "
                 "graph sizes and the choice, instead of compiling: \"edges=E nodes=N "
                 "relations=R ntypes=T unique-src=U unique-dst=U [balance=B]\"");
  app.add_option("-P,--param", options.paramOverrides,
                 "Override a parameter default: NAME=VALUE (repeatable)")
      ->allow_extra_args(false);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    if (error.get_exit_code() == 0) // --help
      return app.exit(error);
    std::cerr << "hectorc: error: " << error.what() << "\n";
    return 1;
  }

  if (app.count("--explain") && options.explain.empty()) {
    std::cerr << "hectorc: error: --explain needs the graph's sizes, e.g. --explain "
                 "\"edges=100000 nodes=10000 relations=20 unique-src=10000 unique-dst=20000\"\n";
    return 1;
  }

  // Everything CLI11 left over must be an MLIR flag.
  std::vector<std::string> extras = app.remaining();
  std::vector<const char *> clArgs = {argv[0]};
  for (const std::string &extra : extras) {
    if (!llvm::StringRef(extra).starts_with("--mlir-") &&
        !llvm::StringRef(extra).starts_with("-mlir-")) {
      std::cerr << "hectorc: error: unknown argument '" << extra << "'\n";
      return 1;
    }
    clArgs.push_back(extra.c_str());
  }
  if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(clArgs.size()), clArgs.data(),
                                         "hectorc\n", &llvm::errs()))
    return 1;

  return hector::runCompiler(options);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  // runCompiler reports its own exceptions; this catches those of the command line's parsing.
  try {
    return run(argc, argv);
  } catch (const std::exception &error) {
    std::cerr << "hectorc: error: internal error: " << error.what() << "\n";
  } catch (...) {
    std::cerr << "hectorc: error: internal error: an unknown exception\n";
  }
  return 1;
}
