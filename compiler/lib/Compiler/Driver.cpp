//===- Driver.cpp - One hectorc job -----------------------------*- C++ -*-===//
//
// Reads a model file (or Hector dialect text), runs the front end, generates and verifies the
// Hector IR, runs the hector-compile pipeline, and writes the result (the package and library
// builds are in Library.cpp).
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Driver.h"

#include "Output.h"

#include "hector/Compiler/Library.h"
#include "hector/Compiler/MLIRGen.h"
#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorOps.h"
#include "hector/Emit/Emitter.h"
#include "hector/Emit/Passes.h"
#include "hector/Frontend/Frontend.h"
#include "hector/Optimize/CostModel.h"
#include "hector/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Threading.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

using namespace mlir;

namespace hector {
namespace {

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

/// Prints `module` as `module.print(os, flags)` does, its top-level ops in parallel; false
/// (nothing printed) where the text could differ. With local scope (no aliases, no locations),
/// an op that is isolated from above numbers its values itself, so its text does not depend on
/// the others: each is printed alone and indented as the module's body.
bool printInParallel(ModuleOp module, const OpPrintingFlags &flags, llvm::raw_ostream &os) {
  MLIRContext *context = module.getContext();
  if (!flags.shouldUseLocalScope() || flags.shouldPrintGenericOpForm() ||
      !context->isMultithreadingEnabled() || !module->getAttrs().empty())
    return false;
  std::vector<Operation *> ops;
  for (Operation &op : *module.getBody()) {
    if (!op.hasTrait<mlir::OpTrait::IsIsolatedFromAbove>())
      return false;
    ops.push_back(&op);
  }
  if (ops.size() < 2)
    return false;
  std::vector<std::string> texts(ops.size());
  parallelFor(context, 0, ops.size(), [&](size_t i) {
    llvm::raw_string_ostream text(texts[i]);
    text.SetBuffered();
    ops[i]->print(text, flags);
    text.flush();
  });
  os << "module {\n";
  for (const std::string &text : texts) {
    llvm::StringRef rest(text);
    while (!rest.empty()) {
      auto [line, tail] = rest.split('\n');
      if (!line.empty())
        os << "  ";
      os << line << '\n';
      rest = tail;
    }
  }
  os << '}';
  return true;
}

/// Writes `module` to `path` ("-": stdout). A file is written to a temporary beside it and
/// renamed into place, so that no partial output is ever visible under `path`.
/// The module has been verified (after MLIRGen or parsing, and after the pipeline), so the
/// printer does not verify it again. Hector IR has no attribute or type aliases, so without
/// locations (--mlir-print-debuginfo, which aliases them) the printer skips its alias pass, a
/// whole walk of the IR (a tenth of the time on large models): the text is the same.
int writeOutput(ModuleOp module, llvm::StringRef path) {
  return writeText(path, [&](llvm::raw_ostream &os) {
    OpPrintingFlags flags;
    flags.assumeVerified();
    if (!flags.shouldPrintDebugInfo())
      flags.useLocalScope();
    if (!printInParallel(module, flags, os))
      module.print(os, flags);
    // The top-level printer ends with a newline, the local-scope one does not; hector-opt and
    // earlier output end with one more.
    os << (flags.shouldUseLocalScope() ? "\n\n" : "\n");
    return success();
  });
}

/// The deepest bracket nesting accepted in Hector dialect text. MLIR's parser recurses once per
/// level and overflows the stack a few thousand levels down; printed Hector IR needs about ten.
constexpr unsigned kMaxMlirNesting = 256;

/// The position of the first bracket ('(', '[', '{' or '<') nested more than kMaxMlirNesting
/// deep in `text`, outside string literals and comments; nullptr if there is none.
const char *findExcessiveNesting(llvm::StringRef text) {
  unsigned depth = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < e && text[i] != '"' && text[i] != '\n'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '/' && i + 1 < e && text[i + 1] == '/') {
      while (i < e && text[i] != '\n')
        ++i;
    } else if (c == '(' || c == '[' || c == '{' || c == '<') {
      if (++depth > kMaxMlirNesting)
        return text.data() + i;
    } else if ((c == ')' || c == ']' || c == '}' || (c == '>' && (i == 0 || text[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return nullptr;
}

} // namespace

void registerCompilerCLOptions() {
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
}

namespace {

/// The IR and contexts of the jobs run with `skipTeardown`, reachable until the process exits.
struct KeptUntilExit {
  Operation *module;
  MLIRContext *context;
  KeptUntilExit *next;
};
KeptUntilExit *keptUntilExit = nullptr;

void keepUntilExit(ModuleOp module, MLIRContext *context) {
  keptUntilExit =
      new KeptUntilExit{module ? module.getOperation() : nullptr, context, keptUntilExit};
}

/// What a job does, from its options once they are checked.
struct Job {
  std::string emit; ///< hector, lowered, cpp, cuda, package or library
  std::string kind; ///< the input language: hector or mlir
  EmitOptions emitOptions;
  frontend::FrontendOptions frontendOptions;
};

/// Checks the options before anything touches the input; prints the error and returns 1 when
/// they are inconsistent, 0 with `job` filled otherwise.
int checkOptions(const CompilerOptions &options, Job &job) {
  std::string &emit = job.emit;
  emit = options.emit;
  if (emit.empty())
    emit = llvm::StringRef(options.outputFile).ends_with(".so") ? "library" : "hector";
  if (emit != "hector" && emit != "lowered" && emit != "cpp" && emit != "cuda" &&
      emit != "package" && emit != "library")
    return fail("unknown --emit kind '" + emit +
                "' (expected hector, lowered, cpp, cuda, package or library)");
  if (!options.target.empty() && options.target != "cpu" && options.target != "cuda")
    return fail("unknown --target '" + options.target + "' (expected cpu or cuda)");
  job.emitOptions.cuda = options.target.empty() ? HECTOR_HAVE_CUDA : options.target == "cuda";
  job.emitOptions.entry = options.entry;
  job.emitOptions.optLevel = options.optLevel;
  if (emit == "cuda" && !job.emitOptions.cuda)
    return fail("--emit=cuda with --target=cpu: there are no CUDA sources to print");
  std::string &kind = job.kind;
  kind = options.inputKind;
  if (kind.empty())
    kind = llvm::sys::path::extension(options.inputFile) == ".mlir" ? "mlir" : "hector";
  if (kind != "hector" && kind != "mlir")
    return fail("unknown input language '" + kind + "' (expected hector or mlir)");
  for (const std::string &text : options.paramOverrides)
    if (std::optional<std::string> error = parseOverride(text, job.frontendOptions.paramOverrides))
      return fail(*error);
  if (kind == "mlir" && !options.paramOverrides.empty())
    return fail("parameters (-P) apply only to model files, not to -x mlir input");
  return 0;
}

/// Parses and verifies the Hector dialect text in `sourceMgr`'s main buffer; null (the errors
/// printed) when it is malformed or invalid.
OwningOpRef<ModuleOp> parseDialectText(llvm::SourceMgr &sourceMgr, MLIRContext &context,
                                       const CompilerOptions &options) {
  if (const char *deep = findExcessiveNesting(sourceMgr.getMemoryBuffer(1)->getBuffer())) {
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(deep), llvm::SourceMgr::DK_Error,
                           "input nested too deeply (more than " + llvm::Twine(kMaxMlirNesting) +
                               " levels of brackets)");
    return nullptr;
  }
  // MLIR 19's parser can free a block while the half-parsed IR still refers to it when a
  // custom op's region fails to parse after forward references (found by fuzzing: a heap
  // corruption in its cleanup). The parser stops at its first error, and nothing has been
  // written yet: a parse error is printed and, where the caller allows it, ends the process
  // before that cleanup. Verification runs separately, after a successful parse.
  OwningOpRef<ModuleOp> module;
  {
    struct Printer : SourceMgrDiagnosticHandler {
      using SourceMgrDiagnosticHandler::emitDiagnostic;
      using SourceMgrDiagnosticHandler::SourceMgrDiagnosticHandler;
    } printer(sourceMgr, &context);
    ScopedDiagnosticHandler parseErrors(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error || !options.exitOnParseError)
        return failure(); // to the SourceMgr handler
      printer.emitDiagnostic(diag);
      llvm::errs().flush();
      std::_Exit(1);
      return success();
    });
    ParserConfig config(&context, /*verifyAfterParse=*/false);
    module = parseSourceFile<ModuleOp>(sourceMgr, config);
  }
  if (!module || failed(verify(*module)))
    return nullptr;
  return module;
}

/// Runs the front end on the model file `text` and generates its verified Hector IR; null (the
/// errors printed) when the model is invalid.
OwningOpRef<ModuleOp> readModelFile(const std::string &filename, const std::string &text,
                                    MLIRContext &context, const Job &job) {
  frontend::DiagnosticEngine frontendDiags;
  std::optional<frontend::CheckedModule> checked =
      frontend::checkSource(filename, text, frontendDiags, job.frontendOptions);
  std::cerr.flush();
  frontendDiags.print(std::cerr, text);
  std::cerr.flush();
  if (!checked || frontendDiags.hasErrors())
    return nullptr;
  OwningOpRef<ModuleOp> module = generateModule(context, *checked);
  if (module && failed(verify(*module))) {
    llvm::errs() << "hectorc: internal error: the generated Hector IR does not verify\n";
    return nullptr;
  }
  return module;
}

/// Runs the hector-compile pipeline on `module` (without the lowering for --explain), then
/// verifies the result once unless every pass was verified; 1 on failure.
int runPipeline(ModuleOp module, const CompilerOptions &options, bool lower, TimingScope &timing) {
  PassManager pm(module.getContext(), ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  // The IR is verified once, after the pipeline: verifying after every pass costs as much as
  // the passes on large models. --verify-each restores it, to find the pass that broke the IR.
  pm.enableVerifier(options.verifyEach);
  TimingScope pipelineTiming = timing.nest("Pipeline");
  pm.enableTiming(pipelineTiming);
  // hector-compile: what `hector-opt --hector-compile` runs, with the same options.
  CompileOptions compile;
  compile.reorder = options.reorder;
  compile.compact = options.compact;
  compile.backward = options.backward;
  compile.lower = lower;
  buildCompilePipeline(pm, compile);
  if (failed(pm.run(module)))
    return 1;
  pipelineTiming.stop();
  if (!options.verifyEach) {
    TimingScope verifyTiming = timing.nest("Verify");
    if (failed(verify(module))) {
      llvm::errs() << "hectorc: internal error: the IR after the compile pipeline does not "
                      "verify (--verify-each names the pass)\n";
      return 1;
    }
  }
  return 0;
}

/// Writes what `job.emit` names for the compiled `module` to the output.
int writeResult(ModuleOp module, const CompilerOptions &options, const Job &job) {
  const std::string &emit = job.emit;
  const EmitOptions &emitOptions = job.emitOptions;
  if (emit == "lowered")
    return writeOutput(module, options.outputFile);
  if (failed(selectEntryLayer(module, emitOptions.entry)))
    return 1;
  // The emitter prints from what hector-prepare-emission checks and records.
  PassManager prepare(module.getContext(), ModuleOp::getOperationName());
  prepare.enableVerifier(options.verifyEach);
  PrepareEmissionOptions prepareOptions;
  prepareOptions.target = emitOptions.cuda ? "cuda" : "cpu";
  prepare.addPass(createPrepareEmission(prepareOptions));
  if (failed(prepare.run(module)))
    return 1;
  if (emit == "cpp")
    return writeText(options.outputFile,
                     [&](llvm::raw_ostream &os) { return emitCpp(module, emitOptions, os); });
  if (emit == "cuda")
    return writeText(options.outputFile,
                     [&](llvm::raw_ostream &os) { return emitCuda(module, emitOptions, os); });
  if (emit == "package")
    return writePackageDir(module, emitOptions, options.outputFile);
  return buildLibrary(module, emitOptions, options.portable, options.index64, options.outputFile);
}

int runCompilerUnguarded(const CompilerOptions &options) {
  Job job;
  if (int status = checkOptions(options, job))
    return status;

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFileOrSTDIN(options.inputFile, /*IsText=*/true);
  if (std::error_code ec = file.getError())
    return fail("cannot open '" + options.inputFile + "': " + ec.message());
  std::string filename = options.inputFile == "-" ? "<stdin>" : options.inputFile;

  // Timing of the job's stages (--mlir-timing); the pass pipeline reports under its own scope.
  DefaultTimingManager timingManager;
  applyDefaultTimingManagerCLOptions(timingManager);
  TimingScope timing = timingManager.getRootScope();

  DialectRegistry registry;
  registry.insert<HectorDialect>();
  auto ownedContext = std::make_unique<MLIRContext>(registry);
  MLIRContext &context = *ownedContext;
  context.loadDialect<HectorDialect>();

  llvm::SourceMgr sourceMgr;
  std::string text = (*file)->getBuffer().str();
  sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);

  OwningOpRef<ModuleOp> module;
  // Declared after the module and the context so that it runs before their destructors, at
  // every return.
  auto teardown = llvm::make_scope_exit([&] {
    if (options.skipTeardown)
      keepUntilExit(module.release(), ownedContext.release());
  });
  TimingScope inputTiming = timing.nest("Input (parse, check, generate, verify)");
  module = job.kind == "mlir" ? parseDialectText(sourceMgr, context, options)
                              : readModelFile(filename, text, context, job);
  if (!module)
    return 1;
  inputTiming.stop();

  std::optional<GraphSizesAndBalance> explainSizes;
  if (!options.explain.empty()) {
    std::string error;
    FailureOr<GraphSizesAndBalance> parsed = parseGraphSizes(options.explain, error);
    if (failed(parsed))
      return fail("--explain: " + error);
    explainSizes = *parsed;
  }

  if (job.emit == "hector" && !explainSizes) {
    TimingScope outputTiming = timing.nest("Output");
    return writeOutput(*module, options.outputFile);
  }
  if (int status = runPipeline(*module, options, /*lower=*/!explainSizes, timing))
    return status;
  TimingScope outputTiming = timing.nest("Output");
  if (explainSizes) {
    printVariantChoice(*module, explainSizes->sizes, explainSizes->balance, llvm::outs());
    llvm::outs().flush();
    return 0;
  }
  return writeResult(*module, options, job);
}

} // namespace

int runCompiler(const CompilerOptions &options) {
  // Every failure is a diagnostic and exit code 1. An exception from a library (an allocation
  // that fails, a JSON or file-system error) unwinds through the job's guards, which remove
  // every temporary file and directory, and is reported here rather than ending the process.
  try {
    return runCompilerUnguarded(options);
  } catch (const std::bad_alloc &) {
    return fail("out of memory");
  } catch (const std::exception &error) {
    return fail(llvm::Twine("internal error: ") + error.what());
  } catch (...) {
    return fail("internal error: an unknown exception");
  }
}

} // namespace hector
