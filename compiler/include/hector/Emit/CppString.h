//===- CppString.h - Strings printed into emitted C++ ---------------------===//
//
// The one way a string of the model (a name, the manifest, a message naming a tensor) reaches
// the C++ that hectorc emits: as a string literal made by cppQuoted. Plain C++17.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace hector {

/// `text` (any bytes) as a C++ string literal, quotes included, whose value is exactly `text`.
/// The literal is printable ASCII without newlines: `"` and `\` are escaped, `?` too (no
/// trigraph can form), newline and tab print as \n and \t, and every other byte outside
/// 0x20..0x7E as a three-digit octal escape (which no following character can extend). So the
/// result is also safe inside a `//` comment: it cannot end the comment's line or continue it.
std::string cppQuoted(std::string_view text);

} // namespace hector
