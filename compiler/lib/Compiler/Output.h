//===- Output.h - Files and directories of one hectorc job ------*- C++ -*-===//
//
// What the driver and the library build share: the error line, atomic file output, temporary
// directories and the configured tool paths. Internal to HectorCompiler.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_COMPILER_OUTPUT_H
#define HECTOR_COMPILER_OUTPUT_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace hector {

/// Prints `hectorc: error: MESSAGE` to stderr and returns exit code 1.
int fail(const llvm::Twine &message);

/// True if `path` names (through any symbolic links) something other than a regular file or a
/// directory: a device such as /dev/null, a FIFO or a socket. Renaming a file over it would
/// replace it (and, run as root, remove /dev/null).
bool isSpecialFile(llvm::StringRef path);

/// Moves the finished temporary file `temp` over `path`. A symbolic link at `path` is followed
/// (its target is replaced, the link stays), and an existing file's permissions are kept. A
/// `path` that is not a regular file (a device such as /dev/null, a FIFO) is refused, never
/// replaced; `temp` is removed.
int replaceWith(llvm::StringRef temp, llvm::StringRef path);

/// Writes `text` (from `print`) to `path` ("-": stdout), atomically for a file; into a device
/// or FIFO (/dev/null, a pipe) directly.
int writeText(llvm::StringRef path,
              llvm::function_ref<mlir::LogicalResult(llvm::raw_ostream &)> print);

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
std::string configured(const char *env, const char *fallback);

/// `<hectorc's directory>/../relative` when that exists: an installed tree
/// (tools/cmake/Install.cmake), where the templates, headers and runtime sit beside the compiler.
/// Empty otherwise (a build tree: the configured source paths apply).
std::string besideCompiler(llvm::StringRef relative);

/// `path` when it is an executable file, else the program `name` on PATH, else `path` (so that
/// the error names what was configured). An installed hectorc may have been built in an
/// environment that no longer exists (pip's isolated build).
std::string executableOr(llvm::StringRef path, llvm::StringRef name);

} // namespace hector

#endif // HECTOR_COMPILER_OUTPUT_H
