//===- Frontend.h - Entry points of the model-language front end -*- C++ -*-===//
//
// Plain C++17 (no MLIR, no LLVM): the fuzz target links it alone.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_FRONTEND_H
#define HECTOR_FRONTEND_FRONTEND_H

#include "hector/Frontend/Checked.h"

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace hector {
namespace frontend {

/// One message about a model file.
struct Diagnostic {
  enum class Severity { Error, Note };
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

/// Collects diagnostics; prints them as `FILE:LINE:COL: error: message`, the source line, and a
/// caret under the column.
class DiagnosticEngine {
public:
  void error(const SourceLoc &loc, std::string message);
  void note(const SourceLoc &loc, std::string message);
  bool hasErrors() const { return numErrors > 0; }
  unsigned errorCount() const { return numErrors; }
  const std::vector<Diagnostic> &diagnostics() const { return diags; }
  /// Prints every diagnostic; `source` is the file's text (for the line and the caret).
  void print(std::ostream &os, const std::string &source) const;

private:
  std::vector<Diagnostic> diags;
  unsigned numErrors = 0;
};

/// Options of one front-end run.
struct FrontendOptions {
  /// `NAME=VALUE` overrides of parameter defaults, applied to every layer that declares NAME
  /// (an override no layer declares is an error).
  std::map<std::string, double> paramOverrides;
};

/// Lexes, parses and checks a model file. On any error returns std::nullopt with every error in
/// `diags`; never throws, asserts or crashes, whatever the bytes in `text`.
std::optional<CheckedModule> checkSource(const std::string &filename, const std::string &text,
                                         DiagnosticEngine &diags,
                                         const FrontendOptions &options = {});

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_FRONTEND_H
