//===- Driver.cpp - One hectorc job -----------------------------*- C++ -*-===//
//
// Reads a model file (or Hector dialect text), runs the front end, generates and verifies the
// Hector IR, runs the pass pipeline, and writes the result.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Driver.h"

#include "hector/Autodiff/Passes.h"

#include "hector/Compiler/MLIRGen.h"
#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorOps.h"
#include "hector/Emit/Emitter.h"
#include "hector/Optimize/CostModel.h"
#include "hector/Optimize/Passes.h"
#include "hector/Frontend/Frontend.h"
#include "hector/Transforms/Passes.h"

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
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include <unistd.h>

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

/// Moves the finished temporary file `temp` over `path`. A symbolic link at `path` is followed
/// (its target is replaced, the link stays), and an existing file's permissions are kept.
int replaceWith(llvm::StringRef temp, llvm::StringRef path) {
  llvm::SmallString<256> target(path);
  if (llvm::sys::fs::is_symlink_file(path)) {
    llvm::SmallString<256> real;
    if (!llvm::sys::fs::real_path(path, real))
      target = real;
  }
  if (llvm::ErrorOr<llvm::sys::fs::perms> mode = llvm::sys::fs::getPermissions(target))
    llvm::sys::fs::setPermissions(temp, *mode);
  if (std::error_code ec = llvm::sys::fs::rename(temp, target)) {
    llvm::sys::fs::remove(temp);
    return fail("cannot write '" + path + "': " + ec.message());
  }
  return 0;
}

/// Writes `text` (from `print`) to `path` ("-": stdout), atomically for a file.
int writeText(llvm::StringRef path, llvm::function_ref<LogicalResult(llvm::raw_ostream &)> print) {
  if (path == "-") {
    if (failed(print(llvm::outs())))
      return 1;
    llvm::outs().flush();
    return 0;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (failed(print(os)))
    return 1;
  int fd;
  llvm::SmallString<256> temp;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp))
    return fail("cannot create '" + path + "': " + ec.message());
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    file << text;
    file.close();
    if (file.has_error()) {
      std::string message = file.error().message();
      file.clear_error();
      llvm::sys::fs::remove(temp);
      return fail("cannot write '" + path + "': " + message);
    }
  }
  return replaceWith(temp, path);
}

/// Writes `module` to `path` ("-": stdout). A file is written to a temporary beside it and
/// renamed into place, so that no partial output is ever visible under `path`.
int writeOutput(ModuleOp module, llvm::StringRef path) {
  return writeText(path, [&](llvm::raw_ostream &os) {
    module.print(os);
    os << '\n';
    return success();
  });
}

/// A directory removed (with its contents) when this object dies, unless released.
struct TempDir {
  std::string path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

/// The build configuration hectorc was configured with (see compiler/lib/Compiler/CMakeLists.txt),
/// with the environment's overrides.
std::string configured(const char *env, const char *fallback) {
  if (std::optional<std::string> value = llvm::sys::Process::GetEnv(env))
    if (!value->empty())
      return *value;
  return fallback;
}

/// Writes the package of `module` into a new temporary directory beside `dir` and renames it
/// to `dir` (which must not exist or be empty).
int writePackageDir(ModuleOp module, const EmitOptions &emitOptions, llvm::StringRef dir) {
  if (dir == "-")
    return fail("--emit=package needs an output directory: -o DIR");
  bool exists = llvm::sys::fs::exists(dir);
  if (exists) {
    if (!llvm::sys::fs::is_directory(dir))
      return fail("'" + dir + "' exists and is not a directory");
    std::error_code ec;
    llvm::sys::fs::directory_iterator it(dir, ec);
    if (ec)
      return fail("cannot read '" + dir + "': " + ec.message());
    if (it != llvm::sys::fs::directory_iterator())
      return fail("'" + dir + "' is not empty; the package needs a new or empty directory");
  }
  llvm::SmallString<256> temp;
  // An absolute model: createUniqueDirectory puts a relative one in the system's temporary
  // directory, which may be another file system than `dir` (and rename cannot cross those).
  llvm::SmallString<256> model(dir);
  llvm::sys::fs::make_absolute(model);
  model += ".tmp-%%%%%%";
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(model, temp))
    return fail("cannot create a directory beside '" + dir + "': " + ec.message());
  // createUniqueDirectory appends its own suffix to the model; keep the result.
  TempDir guard{std::string(temp)};
  if (failed(writePackage(module, emitOptions,
                          configured("HECTOR_TEMPLATES_DIR", HECTOR_DEFAULT_TEMPLATES_DIR),
                          HECTOR_DEFAULT_RUNTIME_INCLUDE_DIR, temp)))
    return 1;
  if (exists)
    llvm::sys::fs::remove(dir);
  if (std::error_code ec = llvm::sys::fs::rename(temp, dir))
    return fail("cannot move the package to '" + dir + "': " + ec.message());
  guard.path.clear();
  return 0;
}

/// Runs `program args...` with its output appended to `log`; an error message on failure.
std::optional<std::string> runTool(llvm::StringRef program, llvm::ArrayRef<std::string> args,
                                   llvm::StringRef log) {
  llvm::SmallVector<llvm::StringRef> argv = {program};
  for (const std::string &arg : args)
    argv.push_back(arg);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0, 0, &message);
  if (rc == 0)
    return std::nullopt;
  std::string text = (program + " failed").str();
  if (!message.empty())
    text += ": " + message;
  // The last lines of the log say why.
  if (auto buffer = llvm::MemoryBuffer::getFile(log)) {
    llvm::StringRef all = (*buffer)->getBuffer();
    size_t keep = std::min<size_t>(all.size(), 6000);
    text += "\n" + all.take_back(keep).str();
  }
  return text;
}

/// Emits the package into a temporary directory, builds it with CMake and moves the library
/// to `output`. Nothing is left behind on failure.
int buildLibrary(ModuleOp module, const EmitOptions &emitOptions, bool portable, bool index64,
                 llvm::StringRef output) {
  if (output == "-")
    return fail("building a library needs an output file: -o FILE.so");
  std::string cmake = configured("HECTOR_CMAKE", HECTOR_CMAKE_COMMAND);
  std::string cxx = configured("HECTOR_CXX_COMPILER", HECTOR_CXX_COMPILER_PATH);
  if (cmake.empty() || !llvm::sys::fs::can_execute(cmake))
    return fail("cmake not found ('" + cmake + "'); set HECTOR_CMAKE to a cmake executable");
  if (cxx.empty() || !llvm::sys::fs::can_execute(cxx))
    return fail("no C++ compiler ('" + cxx + "'); set HECTOR_CXX_COMPILER to one");
  std::string runtimeDir = configured("HECTOR_RUNTIME_DIR", HECTOR_DEFAULT_RUNTIME_DIR);
  llvm::SmallString<256> runtimeLib(runtimeDir);
  llvm::sys::path::append(runtimeLib, "lib", "libhector_runtime.so");
  if (runtimeDir.empty() || !llvm::sys::fs::exists(runtimeLib))
    return fail("the hector runtime was not found ('" + runtimeLib +
                "'); build it (tools/bootstrap.sh) or set HECTOR_RUNTIME_DIR to its build "
                "directory");

  llvm::SmallString<256> tempRoot;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("hectorc-build", tempRoot))
    return fail("cannot create a temporary directory: " + ec.message());
  TempDir guard{std::string(tempRoot)};
  llvm::SmallString<256> source(tempRoot), build(tempRoot), log(tempRoot);
  llvm::sys::path::append(source, "package");
  llvm::sys::path::append(build, "build");
  llvm::sys::path::append(log, "build.log");
  if (std::error_code ec = llvm::sys::fs::create_directory(source))
    return fail("cannot create '" + source + "': " + ec.message());
  if (failed(writePackage(module, emitOptions,
                          configured("HECTOR_TEMPLATES_DIR", HECTOR_DEFAULT_TEMPLATES_DIR),
                          HECTOR_DEFAULT_RUNTIME_INCLUDE_DIR, source)))
    return 1;

  // LibTorch: HECTOR_TORCH_DIR, or the torch wheel of the configured python.
  std::string torchDir = configured("HECTOR_TORCH_DIR", "");
  if (torchDir.empty()) {
    llvm::SmallString<256> prefixFile(tempRoot);
    llvm::sys::path::append(prefixFile, "torch_prefix.txt");
    std::string python = HECTOR_PYTHON_PATH;
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(prefixFile),
                                                  llvm::StringRef(prefixFile)};
    llvm::StringRef argv[] = {python, "-c",
                              "import torch.utils; print(torch.utils.cmake_prefix_path)"};
    int rc = python.empty() ? -1
                            : llvm::sys::ExecuteAndWait(python, argv, std::nullopt, redirects);
    auto buffer = llvm::MemoryBuffer::getFile(prefixFile);
    if (rc != 0 || !buffer)
      return fail("LibTorch not found: set HECTOR_TORCH_DIR to LibTorch's cmake directory "
                  "(share/cmake/Torch), or install torch for '" +
                  python + "'");
    torchDir = ((*buffer)->getBuffer().trim() + "/Torch").str();
  }
  llvm::SmallString<256> torchConfig(torchDir);
  llvm::sys::path::append(torchConfig, "TorchConfig.cmake");
  if (!llvm::sys::fs::exists(torchConfig))
    return fail("LibTorch not found: '" + torchDir +
                "' has no TorchConfig.cmake; set HECTOR_TORCH_DIR to LibTorch's cmake directory "
                "(share/cmake/Torch)");
  std::string name = *libraryNameOf(module, emitOptions);
  std::vector<std::string> configure = {
      "-S", std::string(source), "-B", std::string(build), "-DCMAKE_BUILD_TYPE=Release",
      "-DCMAKE_CXX_COMPILER=" + cxx, "-DTorch_DIR=" + torchDir,
      "-DHECTOR_RUNTIME_DIR=" + runtimeDir,
      std::string("-DHECTOR_ENABLE_CUDA=") + (emitOptions.cuda ? "ON" : "OFF"),
      std::string("-DHECTOR_NATIVE=") + (portable ? "OFF" : "ON"),
      std::string("-DHECTOR_INDEX64=") + (index64 ? "ON" : "OFF")};
  std::string nvcc = configured("HECTOR_CUDA_COMPILER", HECTOR_CUDA_COMPILER_PATH);
  if (emitOptions.cuda) {
    if (nvcc.empty() || !llvm::sys::fs::can_execute(nvcc))
      return fail("no CUDA compiler ('" + nvcc +
                  "') for --target=cuda; set HECTOR_CUDA_COMPILER to nvcc, or use --target=cpu");
    configure.push_back("-DCMAKE_CUDA_COMPILER=" + nvcc);
    configure.push_back("-DHECTOR_REQUIRE_CUDA=ON");
  }
  if (std::optional<std::string> error = runTool(cmake, configure, log))
    return fail("configuring the generated package failed: " + *error);
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  if (std::optional<std::string> error =
          runTool(cmake, {"--build", std::string(build), "--parallel", std::to_string(jobs)}, log))
    return fail("building the generated package failed: " + *error);

  llvm::SmallString<256> built(build);
  llvm::sys::path::append(built, "lib" + name + ".so");
  llvm::SmallString<256> temp;
  int fd;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(output + ".tmp-%%%%%%%%", fd, temp))
    return fail("cannot create '" + output + "': " + ec.message());
  ::close(fd);
  if (std::error_code ec = llvm::sys::fs::copy_file(built, temp)) {
    llvm::sys::fs::remove(temp);
    return fail("cannot write '" + output + "': " + ec.message());
  }
  return replaceWith(temp, output);
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

int runCompiler(const CompilerOptions &options) {
  // Validate the options before touching the input.
  std::string emit = options.emit;
  if (emit.empty())
    emit = llvm::StringRef(options.outputFile).ends_with(".so") ? "library" : "hector";
  if (emit != "hector" && emit != "lowered" && emit != "cpp" && emit != "cuda" &&
      emit != "package" && emit != "library")
    return fail("unknown --emit kind '" + emit +
                "' (expected hector, lowered, cpp, cuda, package or library)");
  if (!options.target.empty() && options.target != "cpu" && options.target != "cuda")
    return fail("unknown --target '" + options.target + "' (expected cpu or cuda)");
  EmitOptions emitOptions;
  emitOptions.cuda = options.target.empty() ? HECTOR_HAVE_CUDA : options.target == "cuda";
  emitOptions.entry = options.entry;
  if (emit == "cuda" && !emitOptions.cuda)
    return fail("--emit=cuda with --target=cpu: there are no CUDA sources to print");
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
    if (const char *deep = findExcessiveNesting(sourceMgr.getMemoryBuffer(1)->getBuffer())) {
      sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(deep), llvm::SourceMgr::DK_Error,
                             "input nested too deeply (more than " +
                                 llvm::Twine(kMaxMlirNesting) + " levels of brackets)");
      return 1;
    }
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

  std::optional<GraphSizesAndBalance> explainSizes;
  if (!options.explain.empty()) {
    std::string error;
    FailureOr<GraphSizesAndBalance> parsed = parseGraphSizes(options.explain, error);
    if (failed(parsed))
      return fail("--explain: " + error);
    explainSizes = *parsed;
  }

  if (emit == "hector" && !explainSizes)
    return writeOutput(*module, options.outputFile);

  PassManager pm(&context, ModuleOp::getOperationName());
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  applyDefaultTimingPassManagerCLOptions(pm);
  // Training: every layer gets a backward layer, lowered and emitted like the forward, unless
  // the input already holds them (dialect text printed after hector-autodiff).
  bool derived = llvm::any_of(module->getOps<LayerOp>(), [](LayerOp layer) {
    return layer->hasAttr(kBackwardAttrName) || layer->hasAttr(kForwardAttrName) ||
           layer->hasAttr(kInferenceOfAttrName);
  });
  bool hasVariants = llvm::any_of(module->getOps<LayerOp>(), [](LayerOp layer) {
    return layer->hasAttr(kVariantsAttrName) || layer->hasAttr(kVariantOfAttrName);
  });
  // The optimisation variants of every layer; the runtime picks one per graph.
  if (!derived && !hasVariants) {
    VariantsOptions variants;
    variants.reorder = options.reorder;
    variants.compact = options.compact;
    pm.addPass(createVariants(variants));
  }
  if (options.backward && !derived) {
    // Calls without gradients run a copy of the forward that saves nothing (fused freely).
    AutodiffOptions autodiff;
    autodiff.inference = true;
    pm.addPass(createAutodiff(autodiff));
  }
  // The cost model's estimates, for the runtime's choice among the variants.
  if (!derived)
    pm.nest<LayerOp>().addPass(createAnnotateCost());
  if (explainSizes) {
    if (failed(pm.run(*module)))
      return 1;
    printVariantChoice(*module, explainSizes->sizes, explainSizes->balance, llvm::outs());
    llvm::outs().flush();
    return 0;
  }
  PipelineOptions pipelineOptions;
  buildHectorPipeline(pm, pipelineOptions);
  if (failed(pm.run(*module)))
    return 1;
  if (emit == "lowered")
    return writeOutput(*module, options.outputFile);
  if (failed(selectEntryLayer(*module, emitOptions.entry)))
    return 1;
  if (emit == "cpp")
    return writeText(options.outputFile,
                     [&](llvm::raw_ostream &os) { return emitCpp(*module, emitOptions, os); });
  if (emit == "cuda")
    return writeText(options.outputFile,
                     [&](llvm::raw_ostream &os) { return emitCuda(*module, emitOptions, os); });
  if (emit == "package")
    return writePackageDir(*module, emitOptions, options.outputFile);
  return buildLibrary(*module, emitOptions, options.portable, options.index64,
                      options.outputFile);
}

} // namespace hector
