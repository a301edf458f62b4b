//===- Library.cpp - The package and library a hectorc job builds --------===//
//
// Writes the emitted source package into a directory, or builds it with CMake into the model's
// shared library. Nothing is left behind on failure.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/Library.h"

#include "Output.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <optional>
#include <thread>

#include <unistd.h>

using namespace mlir;

namespace hector {
namespace {

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

/// The kernel templates the package copies: $HECTOR_TEMPLATES_DIR, else the installed tree
/// beside hectorc, else the source tree hectorc was configured in.
std::string templatesDir() {
  std::string installed = besideCompiler("codegen-templates");
  return configured("HECTOR_TEMPLATES_DIR",
                    installed.empty() ? HECTOR_DEFAULT_TEMPLATES_DIR : installed.c_str());
}

/// The runtime's headers (the package copies hector/graph.h): the installed tree, else the source
/// tree.
std::string runtimeIncludeDir() {
  std::string installed = besideCompiler("include/hector/graph.h");
  return installed.empty() ? HECTOR_DEFAULT_RUNTIME_INCLUDE_DIR : besideCompiler("include");
}

/// The directory whose lib/libhector_runtime.so the library links: $HECTOR_RUNTIME_DIR, else
/// the tree hectorc is in (installed, or the build directory), else the configured build
/// directory.
std::string runtimeDir() {
  std::string beside = besideCompiler("lib/libhector_runtime.so");
  if (!beside.empty())
    beside = llvm::sys::path::parent_path(llvm::sys::path::parent_path(beside)).str();
  return configured("HECTOR_RUNTIME_DIR",
                    beside.empty() ? HECTOR_DEFAULT_RUNTIME_DIR : beside.c_str());
}

} // namespace

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
  if (failed(writePackage(module, emitOptions, templatesDir(), runtimeIncludeDir(), temp)))
    return 1;
  if (exists)
    llvm::sys::fs::remove(dir);
  if (std::error_code ec = llvm::sys::fs::rename(temp, dir))
    return fail("cannot move the package to '" + dir + "': " + ec.message());
  guard.path.clear();
  return 0;
}

/// Emits the package into a temporary directory, builds it with CMake and moves the library
/// to `output`. Nothing is left behind on failure.
int buildLibrary(ModuleOp module, const EmitOptions &emitOptions, bool portable, bool index64,
                 llvm::StringRef output) {
  if (output == "-")
    return fail("building a library needs an output file: -o FILE.so");
  if (isSpecialFile(output))
    return fail("cannot write the library to '" + output + "': not a regular file");
  std::string cmake =
      configured("HECTOR_CMAKE", executableOr(HECTOR_CMAKE_COMMAND, "cmake").c_str());
  std::string cxx =
      configured("HECTOR_CXX_COMPILER", executableOr(HECTOR_CXX_COMPILER_PATH, "c++").c_str());
  if (cmake.empty() || !llvm::sys::fs::can_execute(cmake))
    return fail("cmake not found ('" + cmake + "'); set HECTOR_CMAKE to a cmake executable");
  if (cxx.empty() || !llvm::sys::fs::can_execute(cxx))
    return fail("no C++ compiler ('" + cxx + "'); set HECTOR_CXX_COMPILER to one");
  std::string runtime = runtimeDir();
  llvm::SmallString<256> runtimeLib(runtime);
  llvm::sys::path::append(runtimeLib, "lib", "libhector_runtime.so");
  if (runtime.empty() || !llvm::sys::fs::exists(runtimeLib))
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
  if (failed(writePackage(module, emitOptions, templatesDir(), runtimeIncludeDir(), source)))
    return 1;

  // LibTorch: HECTOR_TORCH_DIR, or the torch wheel of the configured python.
  std::string torchDir = configured("HECTOR_TORCH_DIR", "");
  if (torchDir.empty()) {
    llvm::SmallString<256> prefixFile(tempRoot);
    llvm::sys::path::append(prefixFile, "torch_prefix.txt");
    std::string python = executableOr(HECTOR_PYTHON_PATH, "python3");
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(prefixFile),
                                                  llvm::StringRef(prefixFile)};
    llvm::StringRef argv[] = {python, "-c",
                              "import torch.utils; print(torch.utils.cmake_prefix_path)"};
    int rc = python.empty() ? -1 : llvm::sys::ExecuteAndWait(python, argv, std::nullopt, redirects);
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
      "-S",
      std::string(source),
      "-B",
      std::string(build),
      "-DCMAKE_BUILD_TYPE=Release",
      "-DCMAKE_CXX_COMPILER=" + cxx,
      "-DTorch_DIR=" + torchDir,
      "-DHECTOR_RUNTIME_DIR=" + runtime,
      std::string("-DHECTOR_ENABLE_CUDA=") + (emitOptions.cuda ? "ON" : "OFF"),
      std::string("-DHECTOR_NATIVE=") + (portable ? "OFF" : "ON"),
      std::string("-DHECTOR_INDEX64=") + (index64 ? "ON" : "OFF")};
  // The sanitizer build's flags (or HECTOR_LIBRARY_CXX_FLAGS from the environment), so that the
  // library is instrumented like the runtime it links.
  std::string extraFlags = configured("HECTOR_LIBRARY_CXX_FLAGS", HECTOR_LIBRARY_CXX_FLAGS);
  if (!extraFlags.empty()) {
    configure.push_back("-DCMAKE_CXX_FLAGS=" + extraFlags);
    configure.push_back("-DCMAKE_SHARED_LINKER_FLAGS=" + extraFlags);
  }
  std::string nvcc =
      configured("HECTOR_CUDA_COMPILER", executableOr(HECTOR_CUDA_COMPILER_PATH, "nvcc").c_str());
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

} // namespace hector
