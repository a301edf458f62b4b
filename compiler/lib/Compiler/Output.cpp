//===- Output.cpp - Files and directories of one hectorc job --------------===//
//
// The error line, atomic file output and the configured tool paths (Output.h).
//
//===----------------------------------------------------------------------===//
#include "Output.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

#include <optional>

using namespace mlir;

namespace hector {

int fail(const llvm::Twine &message) {
  llvm::errs() << "hectorc: error: " << message << "\n";
  return 1;
}

bool isSpecialFile(llvm::StringRef path) {
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(path, status))
    return false; // absent (or unreadable): a new file is created
  llvm::sys::fs::file_type type = status.type();
  return type != llvm::sys::fs::file_type::regular_file &&
         type != llvm::sys::fs::file_type::directory_file;
}

namespace {

/// Writes `text` to `file` and closes it; an error names `path`.
int writeAndClose(llvm::raw_fd_ostream &file, llvm::StringRef path, llvm::StringRef text) {
  file << text;
  file.close();
  if (!file.has_error())
    return 0;
  std::string message = file.error().message();
  file.clear_error();
  return fail("cannot write '" + path + "': " + message);
}

} // namespace

int replaceWith(llvm::StringRef temp, llvm::StringRef path) {
  if (isSpecialFile(path)) {
    llvm::sys::fs::remove(temp);
    return fail("cannot write '" + path + "': not a regular file");
  }
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

int writeText(llvm::StringRef path, llvm::function_ref<LogicalResult(llvm::raw_ostream &)> print) {
  // Printed in full before anything is written: a failure leaves no partial output, on stdout
  // either.
  std::string text;
  llvm::raw_string_ostream os(text);
  os.SetBuffered(); // raw_string_ostream is unbuffered: one append per token otherwise
  LogicalResult printed = print(os);
  os.flush(); // a buffered stream must be empty when it is destroyed
  if (failed(printed))
    return 1;
  if (path == "-") {
    llvm::outs() << text;
    llvm::outs().flush();
    return 0;
  }
  if (isSpecialFile(path)) {
    // A device or a FIFO is written into directly: it has no partial state that another
    // reader could mistake for a complete output, and a rename would replace it.
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec, llvm::sys::fs::OF_None);
    if (ec)
      return fail("cannot write '" + path + "': " + ec.message());
    return writeAndClose(file, path, text);
  }
  int fd;
  llvm::SmallString<256> temp;
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(path + ".tmp-%%%%%%%%", fd, temp))
    return fail("cannot create '" + path + "': " + ec.message());
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    if (writeAndClose(file, path, text) != 0) {
      llvm::sys::fs::remove(temp);
      return 1;
    }
  }
  return replaceWith(temp, path);
}

std::string configured(const char *env, const char *fallback) {
  if (std::optional<std::string> value = llvm::sys::Process::GetEnv(env))
    if (!value->empty())
      return *value;
  return fallback;
}

std::string besideCompiler(llvm::StringRef relative) {
  static int anchor;
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  if (self.empty())
    return "";
  llvm::SmallString<256> path(llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
  llvm::sys::path::append(path, relative);
  if (!llvm::sys::fs::exists(path))
    return "";
  return std::string(path);
}

std::string executableOr(llvm::StringRef path, llvm::StringRef name) {
  if (!path.empty() && llvm::sys::fs::can_execute(path))
    return path.str();
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name))
    return *found;
  return path.str();
}

} // namespace hector
