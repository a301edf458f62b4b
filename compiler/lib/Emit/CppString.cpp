//===- CppString.cpp - Strings printed into emitted C++ -------------------===//
#include "hector/Emit/CppString.h"

namespace hector {

std::string cppQuoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('"');
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '?':
      out += "\\?";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c >= 0x20 && c <= 0x7E) {
        out.push_back(static_cast<char>(c));
      } else {
        out.push_back('\\');
        out.push_back(static_cast<char>('0' + ((c >> 6) & 7)));
        out.push_back(static_cast<char>('0' + ((c >> 3) & 7)));
        out.push_back(static_cast<char>('0' + (c & 7)));
      }
    }
  }
  out.push_back('"');
  return out;
}

} // namespace hector
