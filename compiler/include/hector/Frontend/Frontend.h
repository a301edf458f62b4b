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
  /// Errors kept per run; later ones are dropped and print() ends with "too many errors".
  static constexpr unsigned kMaxErrors = 50;

  void error(const SourceLoc &loc, std::string message);
  /// A note attached to the preceding error (dropped with it when over the error limit).
  void note(const SourceLoc &loc, std::string message);
  bool hasErrors() const { return numErrors > 0; }
  unsigned errorCount() const { return numErrors; }
  /// True once an error was dropped for being over kMaxErrors.
  bool limitReached() const { return overLimit; }
  const std::vector<Diagnostic> &diagnostics() const { return diags; }
  /// Prints every diagnostic; `source` is the file's text (for the line and the caret).
  ///
  /// The source line is printed as it is in the file (control characters and bytes that are not
  /// UTF-8 shown as spaces and '?'), then a caret line that copies the line's tabs so the caret
  /// stays aligned. A location with line 0 (e.g. a command-line parameter) prints only the first
  /// line, `FILE: error: message`.
  void print(std::ostream &os, const std::string &source) const;
  /// Stable-sorts the diagnostics from index `begin` on by position, keeping each error's notes
  /// after it (line-0 locations first).
  void sortByLocation(size_t begin = 0);

private:
  std::vector<Diagnostic> diags;
  unsigned numErrors = 0;
  bool overLimit = false;
  bool droppingNotes = false;
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

/// The IR spelling of an index space: "node", "src", "dst", "edge", "unique_src", ...
const char *spaceName(Space space);
/// The IR spelling of a slicing: "none", "relation", "ntype".
const char *slicingName(Slicing slicing);
/// A row shape as the IR writes it: `[4h, 16]`, `[]`.
std::string shapeString(const Shape &shape);
/// The name of an op kind: "input", "linear", "aggregate", ... (the dialect's mnemonic).
const char *opKindName(OpKind kind);
/// A number in its shortest round-tripping decimal form ("0.2", "16", "1e-05").
std::string formatNumber(double value);

/// Prints a checked module, one line per instr (`%3 = linear %1, %2 : edge [4h, 16]`); for tests
/// and debugging.
void printChecked(std::ostream &os, const CheckedModule &module);

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_FRONTEND_H
