//===- Names.h - The rule for the names of layers, inputs, weights, outputs -===//
//
// Names are data: they reach the emitted C++ only inside string literals (escaped, see
// hector/Emit/CppString.h) or, mangled, inside identifiers. The dialect verifier and the model
// front end accept only these names (docs/language.md, "Names"):
//
//   layer name   := ident                         e.g. rgcn, rgcn_backward, rgcn__reorder
//   tensor name  := part ('.' part)*              inputs, weights and outputs
//   part         := ident | digit+                e.g. x, conv1.W, saved.0, grad.conv1.W
//   ident        := [A-Za-z_][A-Za-z0-9_]*
//
// (ASCII only.) Digit-only parts are what the compiler itself
// produces for saved activations (`saved.0`); sub-layer prefixes (`conv1.`) and gradient
// prefixes (`grad.`) are ordinary parts. Plain C++17 (the front end and its fuzz target use it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <string_view>

namespace hector {

namespace detail {
constexpr bool isNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
constexpr bool isNameDigit(char c) { return c >= '0' && c <= '9'; }
} // namespace detail

/// Whether `name` is an identifier: [A-Za-z_][A-Za-z0-9_]* (layer names).
constexpr bool isValidLayerName(std::string_view name) {
  if (name.empty() || !detail::isNameStart(name.front()))
    return false;
  for (char c : name)
    if (!detail::isNameStart(c) && !detail::isNameDigit(c))
      return false;
  return true;
}

/// Whether `name` is a dotted tensor name: parts separated by single dots, each an identifier
/// or a run of digits (input, weight and output names).
constexpr bool isValidTensorName(std::string_view name) {
  if (name.empty())
    return false;
  std::size_t start = 0;
  while (true) {
    std::size_t end = name.find('.', start);
    std::string_view part =
        name.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (part.empty())
      return false;
    bool digits = true;
    for (char c : part)
      digits = digits && detail::isNameDigit(c);
    if (!digits && !isValidLayerName(part))
      return false;
    if (end == std::string_view::npos)
      return true;
    start = end + 1;
  }
}

/// The rule, for diagnostics.
constexpr const char *kTensorNameRule =
    "identifiers ([A-Za-z_][A-Za-z0-9_]*) or digit runs joined by single dots";
constexpr const char *kLayerNameRule = "an identifier ([A-Za-z_][A-Za-z0-9_]*)";

} // namespace hector
