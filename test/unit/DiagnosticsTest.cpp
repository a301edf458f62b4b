//===- DiagnosticsTest.cpp - Printing diagnostics with a caret ------------===//

#include "FrontendTestUtil.h"

#include <catch2/catch.hpp>

#include <sstream>

using namespace hector::frontend;
using namespace hector::frontend::test;

namespace {

std::string printOne(const std::string &source, unsigned line, unsigned col,
                     const std::string &message = "m") {
  DiagnosticEngine diags;
  diags.error(SourceLoc{"f.hector", line, col}, message);
  std::ostringstream os;
  diags.print(os, source);
  return os.str();
}

} // namespace

TEST_CASE("diagnostics: line, caret, notes", "[diagnostics]") {
  CHECK(printOne("layer l() {\n  edge s = dot(q, z);\n}\n", 2, 16, "unknown name 'q'") ==
        "f.hector:2:16: error: unknown name 'q'\n"
        "  edge s = dot(q, z);\n"
        "               ^\n");
  DiagnosticEngine diags;
  diags.error(SourceLoc{"f.hector", 1, 3}, "e");
  diags.note(SourceLoc{"f.hector", 2, 1}, "n");
  std::ostringstream os;
  diags.print(os, "abcd\nxy\n");
  CHECK(os.str() == "f.hector:1:3: error: e\nabcd\n  ^\nf.hector:2:1: note: n\nxy\n^\n");
  CHECK(diags.errorCount() == 1);
}

TEST_CASE("diagnostics: tabs keep the caret aligned", "[diagnostics]") {
  CHECK(printOne("\tedge\t s = q;\n", 1, 11) == "f.hector:1:11: error: m\n"
                                                "\tedge\t s = q;\n"
                                                "\t    \t    ^\n");
}

TEST_CASE("diagnostics: multi-byte characters count as one column", "[diagnostics]") {
  CHECK(printOne("# \xC3\xA9t\xC3\xA9\nx \xC3\xA9 y\n", 2, 6) ==
        "f.hector:2:6: error: m\nx \xC3\xA9 y\n    ^\n");
}

TEST_CASE("diagnostics: control bytes, invalid UTF-8, CRLF", "[diagnostics]") {
  std::string src("a\0b\xFF"
                  "c\r\n",
                  7);
  CHECK(printOne(src, 1, 5) == "f.hector:1:5: error: m\na b?c\n    ^\n");
}

TEST_CASE("diagnostics: positions at the end of the file", "[diagnostics]") {
  // After a final newline: an empty last line.
  CHECK(printOne("layer l(\n", 2, 1) == "f.hector:2:1: error: m\n\n^\n");
  // Without one: just past the last character.
  CHECK(printOne("layer l(", 1, 9) == "f.hector:1:9: error: m\nlayer l(\n        ^\n");
  // Real errors at end of file.
  auto r = check("layer l(a = 1) {\n  input x: node[a]");
  CHECK(r.printed() ==
        "t.hector:2:19: error: expected ';' at the end of the statement, got end of file\n"
        "  input x: node[a]\n"
        "                  ^\n"
        "t.hector:2:19: error: expected '}' at the end of layer 'l', got end of file\n"
        "  input x: node[a]\n"
        "                  ^\n"
        "t.hector:1:16: note: to match this '{'\n"
        "layer l(a = 1) {\n"
        "               ^\n");
  auto empty = check("");
  CHECK_FALSE(empty.module.has_value());
  CHECK(empty.printed() == "t.hector:1:1: error: expected 'layer', got end of file\n\n^\n");
  auto comment = check("# only a comment\n");
  CHECK(comment.errors() ==
        std::vector<std::string>{"2:1: error: expected 'layer', got end of file"});
}

TEST_CASE("diagnostics: line 0 has no source line", "[diagnostics]") {
  CHECK(printOne("abc\n", 0, 0, "p") == "f.hector: error: p\n");
}

TEST_CASE("diagnostics: too many errors", "[diagnostics]") {
  std::string src;
  for (int i = 0; i < 80; ++i)
    src += "@\n";
  auto r = check(src);
  CHECK_FALSE(r.module);
  CHECK(r.diags.errorCount() == DiagnosticEngine::kMaxErrors);
  std::string printed = r.printed();
  std::string last = "t.hector: error: too many errors emitted, stopping now\n";
  REQUIRE(printed.size() > last.size());
  CHECK(printed.substr(printed.size() - last.size()) == last);
}

TEST_CASE("diagnostics: errors are sorted by position", "[diagnostics]") {
  // Sema checks `b` first (a uses it), but its error is printed after a's.
  auto r = check("layer a() {\n  input x: node[1];\n  node y = nope;\n  layer s = b();\n"
                 "  output x;\n}\nlayer b() {\n  input x: node[1];\n  node y = frob(x);\n"
                 "  output y;\n}\n");
  CHECK(r.errors() == std::vector<std::string>{"3:12: error: unknown name 'nope'",
                                               "9:12: error: unknown function 'frob'"});
}

TEST_CASE("diagnostics: long lines are cut around the column", "[diagnostics]") {
  // A 100,000-byte line: the snippet shows 160 bytes around the column, the cuts marked.
  std::string line(50000, 'a');
  line += "BAD";
  line += std::string(50000, 'b');
  std::string out = printOne(line + "\n", 1, 50001);
  std::istringstream lines(out);
  std::string header, shown, caret;
  std::getline(lines, header);
  std::getline(lines, shown);
  std::getline(lines, caret);
  CHECK(header == "f.hector:1:50001: error: m");
  CHECK(shown.size() == 3 + 160 + 3);
  CHECK(shown.substr(0, 3) == "...");
  CHECK(shown.substr(shown.size() - 3) == "...");
  // The caret sits under the 'B' of BAD.
  size_t at = caret.find('^');
  REQUIRE(at != std::string::npos);
  CHECK(shown.substr(at, 3) == "BAD");
  CHECK(caret.find_first_not_of(' ') == at);
  // 50 errors on such a line print a few kilobytes, not 50 copies of the line.
  DiagnosticEngine diags;
  for (unsigned i = 0; i < 50; ++i)
    diags.error(SourceLoc{"f.hector", 1, 1 + i * 2000}, "m");
  std::ostringstream os;
  diags.print(os, line);
  CHECK(os.str().size() < 50 * 400);
}

TEST_CASE("diagnostics: a cut never splits a UTF-8 character", "[diagnostics]") {
  std::string line;
  for (int i = 0; i < 400; ++i)
    line += "\xC3\xA9"; // é, two bytes each
  std::string out = printOne(line, 1, 401);
  CHECK(out.find('?') == std::string::npos); // no sequence was cut into invalid bytes
  CHECK(out.find("...") != std::string::npos);
}
