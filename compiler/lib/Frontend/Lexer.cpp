//===- Lexer.cpp - Tokens of the model language ---------------------------===//
//
// Lexical rules (docs/language.md): `#` comments to the end of the line; identifiers
// [A-Za-z_][A-Za-z0-9_]*; numbers digits [. digits] [(e|E) [+|-] digits]; punctuation
// ( ) { } [ ] , ; : = + - * / . ; spaces, tabs, CR and LF between tokens.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Lexer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>

namespace hector {
namespace frontend {

namespace {

const std::map<std::string, TokKind> &keywords() {
  static const std::map<std::string, TokKind> table = {
      {"layer", TokKind::KwLayer},   {"input", TokKind::KwInput}, {"weight", TokKind::KwWeight},
      {"output", TokKind::KwOutput}, {"edge", TokKind::KwEdge},   {"node", TokKind::KwNode},
      {"heads", TokKind::KwHeads},   {"init", TokKind::KwInit},   {"relation", TokKind::KwRelation},
      {"ntype", TokKind::KwNtype},   {"src", TokKind::KwSrc},     {"dst", TokKind::KwDst},
  };
  return table;
}

bool isIdentStart(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(unsigned char c) { return isIdentStart(c) || isDigit(c); }

/// Length of the valid UTF-8 sequence at `pos` (2-4) and its code point, or 0 if invalid.
unsigned utf8Sequence(const std::string &text, size_t pos, unsigned &codePoint) {
  unsigned char c = static_cast<unsigned char>(text[pos]);
  unsigned len;
  unsigned cp;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (pos + len > text.size())
    return 0;
  for (unsigned i = 1; i < len; ++i) {
    unsigned char cc = static_cast<unsigned char>(text[pos + i]);
    if ((cc & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are invalid.
  if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  codePoint = cp;
  return len;
}

/// Describes the unexpected character at `pos`; sets `len` to the bytes it covers.
std::string describeBadChar(const std::string &text, size_t pos, size_t &len) {
  unsigned char c = static_cast<unsigned char>(text[pos]);
  char buf[64];
  len = 1;
  if (c >= 0x21 && c < 0x7F) {
    std::snprintf(buf, sizeof(buf), "unexpected character '%c'", c);
    return buf;
  }
  if (c < 0x80) {
    std::snprintf(buf, sizeof(buf), "unexpected control character 0x%02X", c);
    return buf;
  }
  unsigned cp = 0;
  unsigned n = utf8Sequence(text, pos, cp);
  if (n) {
    len = n;
    std::snprintf(buf, sizeof(buf), "unexpected character U+%04X", cp);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "invalid UTF-8 byte 0x%02X", c);
  return buf;
}

/// True if a decimal integer literal is at most 2^53 (exactly representable as a double).
bool integerFits(const std::string &digits) {
  size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos)
    return true;
  std::string significant = digits.substr(first);
  static const std::string limit = "9007199254740992";
  if (significant.size() != limit.size())
    return significant.size() < limit.size();
  return significant <= limit;
}

class Lexer {
public:
  Lexer(const std::string &file, const std::string &text, DiagnosticEngine &diags)
      : file(file), text(text), diags(diags) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    bool skippedBad = false;
    while (!diags.limitReached()) {
      skipSpaceAndComments();
      if (pos >= text.size())
        break;
      Token tok;
      tok.afterBadChar = skippedBad;
      skippedBad = false;
      tok.line = line;
      tok.col = col();
      unsigned char c = static_cast<unsigned char>(text[pos]);
      if (isIdentStart(c)) {
        size_t start = pos;
        while (pos < text.size() && isIdentChar(static_cast<unsigned char>(text[pos])))
          ++pos;
        tok.text = text.substr(start, pos - start);
        auto it = keywords().find(tok.text);
        tok.kind = it == keywords().end() ? TokKind::Ident : it->second;
        tokens.push_back(std::move(tok));
        continue;
      }
      if (isDigit(c)) {
        // A bad number is still a Number token (marked invalid), so parsing goes on quietly.
        tok.kind = TokKind::Number;
        tok.invalid = !lexNumber(tok);
        tokens.push_back(std::move(tok));
        continue;
      }
      TokKind kind;
      if (punctuation(c, kind)) {
        tok.kind = kind;
        tok.text = std::string(1, static_cast<char>(c));
        ++pos;
        tokens.push_back(std::move(tok));
        continue;
      }
      // A run of unexpected characters is one error, at its first character.
      size_t len = 0;
      std::string message = describeBadChar(text, pos, len);
      diags.error(here(), message);
      pos += len;
      while (pos < text.size() && isBad(pos, len))
        pos += len;
      skippedBad = true;
    }
    Token eof;
    eof.afterBadChar = skippedBad;
    eof.kind = TokKind::Eof;
    eof.line = line;
    eof.col = col();
    tokens.push_back(eof);
    return tokens;
  }

private:
  const std::string &file;
  const std::string &text;
  DiagnosticEngine &diags;
  size_t pos = 0;
  size_t lineStart = 0;
  unsigned line = 1;

  unsigned col() const { return static_cast<unsigned>(pos - lineStart + 1); }
  SourceLoc here() const { return SourceLoc{file, line, col()}; }

  static bool punctuation(unsigned char c, TokKind &kind) {
    switch (c) {
    case '(':
      kind = TokKind::LParen;
      return true;
    case ')':
      kind = TokKind::RParen;
      return true;
    case '{':
      kind = TokKind::LBrace;
      return true;
    case '}':
      kind = TokKind::RBrace;
      return true;
    case '[':
      kind = TokKind::LBracket;
      return true;
    case ']':
      kind = TokKind::RBracket;
      return true;
    case ',':
      kind = TokKind::Comma;
      return true;
    case ';':
      kind = TokKind::Semi;
      return true;
    case ':':
      kind = TokKind::Colon;
      return true;
    case '=':
      kind = TokKind::Equal;
      return true;
    case '+':
      kind = TokKind::Plus;
      return true;
    case '-':
      kind = TokKind::Minus;
      return true;
    case '*':
      kind = TokKind::Star;
      return true;
    case '/':
      kind = TokKind::Slash;
      return true;
    case '.':
      kind = TokKind::Dot;
      return true;
    default:
      return false;
    }
  }

  /// True if the character at `p` starts no token and is not white space; sets its length.
  bool isBad(size_t p, size_t &len) const {
    unsigned char c = static_cast<unsigned char>(text[p]);
    TokKind kind;
    len = 1;
    if (isIdentStart(c) || isDigit(c) || punctuation(c, kind) || c == ' ' || c == '\t' ||
        c == '\r' || c == '\n' || c == '#')
      return false;
    unsigned cp;
    if (c >= 0x80) {
      unsigned n = utf8Sequence(text, p, cp);
      len = n ? n : 1;
    }
    return true;
  }

  void skipSpaceAndComments() {
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\n') {
        ++pos;
        ++line;
        lineStart = pos;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos;
      } else if (c == '#') {
        while (pos < text.size() && text[pos] != '\n')
          ++pos;
      } else {
        break;
      }
    }
  }

  /// Lexes a number at `pos` into `tok`; returns false (after an error) for a bad one.
  bool lexNumber(Token &tok) {
    size_t start = pos;
    SourceLoc loc = here();
    auto digits = [&] {
      size_t s = pos;
      while (pos < text.size() && isDigit(static_cast<unsigned char>(text[pos])))
        ++pos;
      return pos - s;
    };
    digits();
    bool isInteger = true;
    bool bad = false;
    bool negativeExponent = false;
    if (pos < text.size() && text[pos] == '.') {
      isInteger = false;
      ++pos;
      if (digits() == 0)
        bad = true;
    }
    if (!bad && pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
      isInteger = false;
      ++pos;
      if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
        negativeExponent = text[pos] == '-';
        ++pos;
      }
      if (digits() == 0)
        bad = true;
    }
    // A number runs into no letter, digit or second '.' (`12ab`, `1.2.3`, `0x1F`).
    while (pos < text.size() &&
           (isIdentChar(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) {
      bad = true;
      ++pos;
    }
    tok.text = text.substr(start, pos - start);
    if (bad) {
      diags.error(loc, "bad number '" + tok.text + "'");
      return false;
    }
    double value = 0.0;
    auto result = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), value);
    if (result.ec == std::errc::result_out_of_range || !std::isfinite(value)) {
      diags.error(loc,
                  "number '" + tok.text + "' is too " + (negativeExponent ? "small" : "large"));
      return false;
    }
    if (result.ec != std::errc() || result.ptr != tok.text.data() + tok.text.size()) {
      diags.error(loc, "bad number '" + tok.text + "'");
      return false;
    }
    if (isInteger && !integerFits(tok.text)) {
      diags.error(loc, "number '" + tok.text + "' is too large (integers are limited to 2^53)");
      return false;
    }
    tok.kind = TokKind::Number;
    tok.number = value;
    tok.isInteger = isInteger;
    return true;
  }
};

} // namespace

std::string tokKindSpelling(TokKind kind) {
  switch (kind) {
  case TokKind::Eof:
    return "end of file";
  case TokKind::Ident:
    return "identifier";
  case TokKind::Number:
    return "number";
  case TokKind::KwLayer:
    return "'layer'";
  case TokKind::KwInput:
    return "'input'";
  case TokKind::KwWeight:
    return "'weight'";
  case TokKind::KwOutput:
    return "'output'";
  case TokKind::KwEdge:
    return "'edge'";
  case TokKind::KwNode:
    return "'node'";
  case TokKind::KwHeads:
    return "'heads'";
  case TokKind::KwInit:
    return "'init'";
  case TokKind::KwRelation:
    return "'relation'";
  case TokKind::KwNtype:
    return "'ntype'";
  case TokKind::KwSrc:
    return "'src'";
  case TokKind::KwDst:
    return "'dst'";
  case TokKind::LParen:
    return "'('";
  case TokKind::RParen:
    return "')'";
  case TokKind::LBrace:
    return "'{'";
  case TokKind::RBrace:
    return "'}'";
  case TokKind::LBracket:
    return "'['";
  case TokKind::RBracket:
    return "']'";
  case TokKind::Comma:
    return "','";
  case TokKind::Semi:
    return "';'";
  case TokKind::Colon:
    return "':'";
  case TokKind::Equal:
    return "'='";
  case TokKind::Plus:
    return "'+'";
  case TokKind::Minus:
    return "'-'";
  case TokKind::Star:
    return "'*'";
  case TokKind::Slash:
    return "'/'";
  case TokKind::Dot:
    return "'.'";
  }
  return "token";
}

std::string describeToken(const Token &tok) {
  if (tok.kind == TokKind::Eof)
    return "end of file";
  return "'" + tok.text + "'";
}

std::vector<Token> lex(const std::string &file, const std::string &text, DiagnosticEngine &diags) {
  return Lexer(file, text, diags).run();
}

} // namespace frontend
} // namespace hector
