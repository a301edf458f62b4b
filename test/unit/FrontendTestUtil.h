//===- FrontendTestUtil.h - Helpers for the front-end unit tests -*- C++ -*-===//
#ifndef HECTOR_TEST_UNIT_FRONTENDTESTUTIL_H
#define HECTOR_TEST_UNIT_FRONTENDTESTUTIL_H

#include "hector/Frontend/Frontend.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace hector {
namespace frontend {
namespace test {

/// The result of checking a source text.
struct CheckResult {
  std::optional<CheckedModule> module;
  DiagnosticEngine diags;
  std::string source;

  /// Every diagnostic as "L:C: error: message" (or note).
  std::vector<std::string> messages() const {
    std::vector<std::string> out;
    for (const Diagnostic &d : diags.diagnostics())
      out.push_back(std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) +
                    (d.severity == Diagnostic::Severity::Error ? ": error: " : ": note: ") +
                    d.message);
    return out;
  }
  /// Errors only.
  std::vector<std::string> errors() const {
    std::vector<std::string> out;
    for (const std::string &m : messages())
      if (m.find(": error: ") != std::string::npos)
        out.push_back(m);
    return out;
  }
  std::string printed() const {
    std::ostringstream os;
    diags.print(os, source);
    return os.str();
  }
};

inline CheckResult check(const std::string &source, const FrontendOptions &options = {}) {
  CheckResult r;
  r.source = source;
  r.module = checkSource("t.hector", source, r.diags, options);
  return r;
}

/// The text of a file under the source tree.
inline std::string readSourceFile(const std::string &relative) {
  std::ifstream in(std::string(HECTOR_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The first layer named `name`, or nullptr.
inline const CheckedLayer *findLayer(const CheckedModule &m, const std::string &name) {
  for (const CheckedLayer &l : m.layers)
    if (l.name == name)
      return &l;
  return nullptr;
}

/// One line per instr: "kind space [shape]" (weights: "kind weight slicing [shape]").
inline std::vector<std::string> instrTypes(const CheckedLayer &layer) {
  std::vector<std::string> out;
  for (const Instr &in : layer.instrs) {
    std::string s = opKindName(in.kind);
    if (in.kind == OpKind::Output)
      s += " " + in.name;
    else if (in.isWeight)
      s += std::string(" weight ") + slicingName(in.slicing) + " " + shapeString(in.shape);
    else
      s += std::string(" ") + spaceName(in.space) + " " + shapeString(in.shape);
    out.push_back(s);
  }
  return out;
}

} // namespace test
} // namespace frontend
} // namespace hector

#endif // HECTOR_TEST_UNIT_FRONTENDTESTUTIL_H
