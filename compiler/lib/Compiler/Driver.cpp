//===- Driver.cpp - One hectorc job -----------------------------*- C++ -*-===//
//
// Reads a model file (or Hector dialect text), runs the front end, generates and verifies the
// Hector IR, runs the pass pipeline, and writes the result.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Driver.h"

#include "hector/Compiler/MLIRGen.h"
#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorOps.h"
#include "hector/Frontend/Frontend.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>

using namespace mlir;

namespace hector {
namespace {

/// Prints `hectorc: error: MESSAGE` to stderr and returns exit code 1.
int fail(const llvm::Twine &message) {
  llvm::errs() << "hectorc: error: " << message << "\n";
  return 1;
}

/// Parses `NAME=VALUE` (VALUE a finite number) into `overrides`; an error message otherwise.
std::optional<std::string> parseOverride(llvm::StringRef text,
                                         std::map<std::string, double> &overrides) {
  auto [name, value] = text.split('=');
  auto malformed = [&](llvm::StringRef why) {
    return ("malformed parameter '" + text + "': " + why).str();
  };
  if (!text.contains('='))
    return malformed("expected NAME=VALUE");
  if (name.empty() || !(llvm::isAlpha(name.front()) || name.front() == '_') ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return malformed("NAME must be an identifier");
  std::string valueText = value.trim().str();
  char *end = nullptr;
  double number = valueText.empty() ? 0.0 : std::strtod(valueText.c_str(), &end);
  if (valueText.empty() || *end != '\0' || !std::isfinite(number))
    return malformed("VALUE must be a number");
  if (!overrides.emplace(name.str(), number).second)
    return ("parameter '" + name + "' is given more than once").str();
  return std::nullopt;
}

/// Writes `module` to `path` ("-": stdout). A file is written to a temporary beside it and
/// renamed into place, so that no partial output is ever visible under `path`.
int writeOutput(ModuleOp module, llvm::StringRef path) {
  if (path == "-") {
    module.print(llvm::outs());
    llvm::outs() << '\n';
    llvm::outs().flush();
    return 0;
  }
  int fd;
  llvm::SmallString<256> temp;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp))
    return fail("cannot create '" + path + "': " + ec.message());
  {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    module.print(os);
    os << '\n';
    os.close();
    if (os.has_error()) {
      std::string message = os.error().message();
      os.clear_error();
      llvm::sys::fs::remove(temp);
      return fail("cannot write '" + path + "': " + message);
    }
  }
  if (std::error_code ec = llvm::sys::fs::rename(temp, path)) {
    llvm::sys::fs::remove(temp);
    return fail("cannot write '" + path + "': " + ec.message());
  }
  return 0;
}

} // namespace

void registerCompilerCLOptions() {
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
}

int runCompiler(const CompilerOptions &options) {
  // Validate the options before touching the input.
  if (options.emit == "lowered" || options.emit == "cpp" || options.emit == "cuda" ||
      options.emit == "package")
    return fail("--emit=" + options.emit + " is not yet available (only --emit=hector is)");
  if (options.emit != "hector")
    return fail("unknown --emit kind '" + options.emit +
                "' (expected hector, lowered, cpp, cuda or package)");
  std::string kind = options.inputKind;
  if (kind.empty())
    kind = llvm::sys::path::extension(options.inputFile) == ".mlir" ? "mlir" : "hector";
  if (kind != "hector" && kind != "mlir")
    return fail("unknown input language '" + kind + "' (expected hector or mlir)");
  frontend::FrontendOptions frontendOptions;
  for (const std::string &text : options.paramOverrides)
    if (std::optional<std::string> error = parseOverride(text, frontendOptions.paramOverrides))
      return fail(*error);
  if (kind == "mlir" && !options.paramOverrides.empty())
    return fail("parameters (-P) apply only to model files, not to -x mlir input");

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFileOrSTDIN(options.inputFile, /*IsText=*/true);
  if (std::error_code ec = file.getError())
    return fail("cannot open '" + options.inputFile + "': " + ec.message());
  std::string filename = options.inputFile == "-" ? "<stdin>" : options.inputFile;

  DialectRegistry registry;
  registry.insert<HectorDialect>();
  MLIRContext context(registry);
  context.loadDialect<HectorDialect>();

  llvm::SourceMgr sourceMgr;
  std::string text = (*file)->getBuffer().str();
  sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module;
  if (kind == "mlir") {
    // Parse errors and verifier failures are reported through the handler.
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return 1;
  } else {
    frontend::DiagnosticEngine frontendDiags;
    std::optional<frontend::CheckedModule> checked =
        frontend::checkSource(filename, text, frontendDiags, frontendOptions);
    std::cerr.flush();
    frontendDiags.print(std::cerr, text);
    std::cerr.flush();
    if (!checked || frontendDiags.hasErrors())
      return 1;
    module = generateModule(context, *checked);
    if (!module)
      return 1;
    if (failed(verify(*module))) {
      llvm::errs() << "hectorc: internal error: the generated Hector IR does not verify\n";
      return 1;
    }
  }

  PassManager pm(&context, ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  applyDefaultTimingPassManagerCLOptions(pm);
  if (failed(pm.run(*module)))
    return 1;

  return writeOutput(*module, options.outputFile);
}

} // namespace hector
