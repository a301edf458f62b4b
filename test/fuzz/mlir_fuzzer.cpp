//===- mlir_fuzzer.cpp - libFuzzer target for `hectorc -x mlir` -----------===//
//
// Feeds arbitrary bytes to the compiler driver as Hector dialect text: parse, verify, the pass
// pipeline (variants, autodiff, cost annotation, lowering) and the C++ emission, written to a
// scratch file (no library is built). The driver must return 0 or 1 for every input; a crash,
// an abort, an uncaught exception or a sanitizer report is a finding. Built in the sanitizer
// tree (tools/run-tests.sh --sanitize=address,undefined), where the compiler's sources carry
// libFuzzer's coverage instrumentation; run it with -close_fd_mask=3 (the driver's diagnostics
// go to stderr) and test/fuzz/mlir-corpus as the seed corpus.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Driver.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string scratch;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  char dir[] = "/tmp/hector-mlir-fuzz-XXXXXX";
  if (!mkdtemp(dir))
    std::abort();
  scratch = dir;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string input = scratch + "/in.mlir";
  if (FILE *f = std::fopen(input.c_str(), "wb")) {
    std::fwrite(data, 1, size, f);
    std::fclose(f);
  } else {
    std::abort();
  }
  for (const char *emit : {"hector", "cpp"}) {
    hector::CompilerOptions options;
    options.inputFile = input;
    options.inputKind = "mlir";
    options.emit = emit;
    options.target = "cpu";
    options.outputFile = scratch + "/out";
    options.exitOnParseError = false; // one process for every input
    options.verifyEach = true;        // a pass that breaks the IR is found at that pass
    const int rc = hector::runCompiler(options);
    if (rc != 0 && rc != 1)
      __builtin_trap();
    std::remove(options.outputFile.c_str());
    if (rc != 0)
      break; // the later stage fails at the same point
  }
  return 0;
}
