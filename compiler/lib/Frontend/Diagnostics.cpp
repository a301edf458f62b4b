//===- Diagnostics.cpp - Collecting and printing diagnostics --------------===//
//
// `FILE:LINE:COL: error: message`, then the source line and a caret under the column.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Frontend.h"

#include <algorithm>
#include <tuple>

namespace hector {
namespace frontend {

void DiagnosticEngine::error(const SourceLoc &loc, std::string message) {
  if (numErrors >= kMaxErrors) {
    overLimit = true;
    droppingNotes = true;
    return;
  }
  droppingNotes = false;
  ++numErrors;
  diags.push_back(Diagnostic{Diagnostic::Severity::Error, loc, std::move(message)});
}

void DiagnosticEngine::note(const SourceLoc &loc, std::string message) {
  if (droppingNotes)
    return;
  diags.push_back(Diagnostic{Diagnostic::Severity::Note, loc, std::move(message)});
}

void DiagnosticEngine::sortByLocation(size_t begin) {
  if (begin >= diags.size())
    return;
  // Group each error with the notes that follow it, then order the groups.
  std::vector<std::vector<Diagnostic>> groups;
  for (size_t i = begin; i < diags.size(); ++i) {
    if (diags[i].severity == Diagnostic::Severity::Error || groups.empty())
      groups.emplace_back();
    groups.back().push_back(std::move(diags[i]));
  }
  // Order by (line, col), ties by original order (a stable sort, by index).
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const SourceLoc &x = groups[a].front().loc, &y = groups[b].front().loc;
    return std::make_tuple(x.line, x.col, a) < std::make_tuple(y.line, y.col, b);
  });
  diags.resize(begin);
  for (size_t i : order)
    for (auto &d : groups[i])
      diags.push_back(std::move(d));
}

namespace {

/// The most bytes of a source line a diagnostic shows (around its column).
constexpr size_t kMaxSnippetBytes = 160;

/// The text of 1-based line `line` of `source` (without its line break), or false if none.
bool sourceLine(const std::string &source, unsigned line, std::string &out) {
  size_t start = 0;
  for (unsigned l = 1; l < line; ++l) {
    size_t nl = source.find('\n', start);
    if (nl == std::string::npos)
      return false;
    start = nl + 1;
  }
  size_t end = source.find('\n', start);
  if (end == std::string::npos)
    end = source.size();
  out = source.substr(start, end - start);
  if (!out.empty() && out.back() == '\r')
    out.pop_back();
  return true;
}

/// Length of a valid UTF-8 sequence at `pos` (1 for ASCII), or 0 if the byte starts none.
unsigned utf8Length(const std::string &s, size_t pos) {
  unsigned char c = static_cast<unsigned char>(s[pos]);
  if (c < 0x80)
    return 1;
  unsigned len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
  if (!len || pos + len > s.size())
    return 0;
  for (unsigned i = 1; i < len; ++i)
    if ((static_cast<unsigned char>(s[pos + i]) & 0xC0) != 0x80)
      return 0;
  return len;
}

void printSnippet(std::ostream &os, const std::string &source, const SourceLoc &loc) {
  std::string text;
  if (loc.line == 0 || !sourceLine(source, loc.line, text))
    return;
  // The line as written, with control characters as spaces and invalid UTF-8 as '?'; the caret
  // line copies tabs and counts one column per character (not per byte). A line longer than
  // kMaxSnippetBytes is cut to that many bytes around the column, the cuts marked "...".
  std::string shown, caret;
  size_t caretByte = loc.col ? loc.col - 1 : 0;
  bool cutLeft = false, cutRight = false;
  if (text.size() > kMaxSnippetBytes) {
    size_t from = caretByte > kMaxSnippetBytes / 2 ? caretByte - kMaxSnippetBytes / 2 : 0;
    from = std::min(from, text.size() - kMaxSnippetBytes);
    auto continuation = [&](size_t i) {
      return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
    };
    while (from > 0 && continuation(from))
      --from; // never cut a UTF-8 sequence
    size_t to = from + kMaxSnippetBytes;
    while (to < text.size() && continuation(to))
      ++to;
    cutLeft = from > 0;
    cutRight = to < text.size();
    text = text.substr(from, to - from);
    caretByte -= from;
  }
  if (cutLeft) {
    shown += "...";
    caret += "   ";
  }
  bool caretPlaced = false;
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    unsigned len = utf8Length(text, i);
    if (!caretPlaced && i >= caretByte) {
      caret += '^';
      caretPlaced = true;
    }
    if (c == '\t') {
      shown += '\t';
      if (!caretPlaced)
        caret += '\t';
    } else if (c < 0x20 || c == 0x7F) {
      shown += ' ';
      if (!caretPlaced)
        caret += ' ';
    } else if (len == 0) {
      shown += '?';
      if (!caretPlaced)
        caret += ' ';
      len = 1;
    } else {
      shown.append(text, i, len);
      if (!caretPlaced)
        caret += ' ';
    }
    i += len;
  }
  if (cutRight)
    shown += "...";
  if (!caretPlaced) {
    // At or past the end of the line (e.g. "end of file"): pad up to the column.
    size_t extra = caretByte > text.size() ? caretByte - text.size() : 0;
    caret.append(std::min<size_t>(extra, kMaxSnippetBytes), ' ');
    caret += '^';
  }
  os << shown << '\n' << caret << '\n';
}

} // namespace

void DiagnosticEngine::print(std::ostream &os, const std::string &source) const {
  for (const Diagnostic &d : diags) {
    os << d.loc.file;
    if (d.loc.line)
      os << ':' << d.loc.line << ':' << d.loc.col;
    os << (d.severity == Diagnostic::Severity::Error ? ": error: " : ": note: ") << d.message
       << '\n';
    printSnippet(os, source, d.loc);
  }
  if (overLimit) {
    std::string file = diags.empty() ? std::string("<input>") : diags.back().loc.file;
    os << file << ": error: too many errors emitted, stopping now\n";
  }
}

} // namespace frontend
} // namespace hector
