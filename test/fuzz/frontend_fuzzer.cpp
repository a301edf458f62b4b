//===- frontend_fuzzer.cpp - libFuzzer target for the model-language front end -===//
//
// Feeds arbitrary bytes to checkSource (with and without a parameter override), prints the
// diagnostics, and checks the invariants of any checked module it returns: every operand names an
// earlier instr, every error has a position inside the file or line 0.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Frontend.h"

#include <cstddef>
#include <cstdint>
#include <sstream>

using namespace hector::frontend;

namespace {

void checkInvariants(const std::string &text, const DiagnosticEngine &diags,
                     const std::optional<CheckedModule> &module) {
  if (module.has_value() == diags.hasErrors())
    __builtin_trap();
  unsigned lines = 1;
  for (char c : text)
    lines += c == '\n';
  for (const Diagnostic &d : diags.diagnostics())
    if (d.loc.line > lines || d.message.empty())
      __builtin_trap();
  if (!module)
    return;
  for (const CheckedLayer &layer : module->layers)
    for (size_t i = 0; i < layer.instrs.size(); ++i)
      for (int op : layer.instrs[i].operands)
        if (op < 0 || static_cast<size_t>(op) >= i)
          __builtin_trap();
}

void runOnce(const std::string &text, const FrontendOptions &options) {
  DiagnosticEngine diags;
  std::optional<CheckedModule> module = checkSource("fuzz.hector", text, diags, options);
  checkInvariants(text, diags, module);
  std::ostringstream os;
  diags.print(os, text);
  if (module)
    printChecked(os, *module);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  runOnce(text, FrontendOptions{});
  FrontendOptions options;
  options.paramOverrides["in"] = 3;
  options.paramOverrides["H"] = 2;
  runOnce(text, options);
  return 0;
}
