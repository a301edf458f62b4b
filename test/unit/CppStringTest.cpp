//===- CppStringTest.cpp - Names as C++ string literals, and the name rule -===//
//
// cppQuoted (hector/Emit/CppString.h) over random byte strings, with the C++ compiler as the
// oracle: every literal is compiled into a program that writes its bytes back, which must give
// the input exactly; and the literal must be printable ASCII without a line break, so that it is
// inert inside a comment too. The name rule (hector/Dialect/Names.h) against a std::regex of the
// documented grammar.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/Names.h"
#include "hector/Emit/CppString.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

std::vector<std::string> randomStrings(unsigned seed, size_t count) {
  std::mt19937 rng(seed);
  // Bytes that matter most for C++ lexing, and any byte at all.
  static const char kSpecial[] = "\"\\?'\n\r\t\v\f\0/*()R+;{}#xX01789abcdefABCDEF ";
  const std::string special(kSpecial, sizeof(kSpecial) - 1); // with the NUL
  std::vector<std::string> out = {"", "\"", "\\", "?\?/", "\\x41g", "\\0019", "\n#include <x>",
                                  ")hectorjson\"", "\" + std::to_string(std::system(\"touch F\")) + \"",
                                  std::string("a\0b", 3), "\xff\xfe", "*/ /*", "\\\n"};
  while (out.size() < count) {
    size_t n = rng() % 24;
    std::string s;
    for (size_t i = 0; i < n; ++i)
      s.push_back(rng() % 2 ? special[rng() % special.size()] : static_cast<char>(rng() % 256));
    out.push_back(s);
  }
  return out;
}

} // namespace

TEST_CASE("cppQuoted: printable ASCII on one line, quoted", "[names]") {
  for (const std::string &s : randomStrings(1, 5000)) {
    std::string q = hector::cppQuoted(s);
    REQUIRE(q.size() >= 2);
    CHECK(q.front() == '"');
    CHECK(q.back() == '"');
    for (char c : q)
      CHECK((c >= 0x20 && c <= 0x7E));
  }
}

TEST_CASE("cppQuoted: the compiler reads back every byte", "[names]") {
  std::vector<std::string> inputs = randomStrings(2, 600);
  char dir[] = "/tmp/hector-cppquoted-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string base = dir;
  {
    std::ofstream src(base + "/t.cpp");
    src << "#include <cstdio>\n#include <cstring>\n";
    for (size_t i = 0; i < inputs.size(); ++i) // each in a comment too: it must stay inert
      src << "// " << hector::cppQuoted(inputs[i]) << "\nstatic const char s" << i
          << "[] = " << hector::cppQuoted(inputs[i]) << ";\n";
    src << "int main() {\n";
    for (size_t i = 0; i < inputs.size(); ++i)
      src << "  std::printf(\"%zu:\", sizeof(s" << i << ") - 1); std::fwrite(s" << i
          << ", 1, sizeof(s" << i << ") - 1, stdout);\n";
    src << "}\n";
  }
  const std::string build = std::string(HECTOR_TEST_CXX) + " -std=c++17 -w -o " + base + "/t " +
                            base + "/t.cpp 2>" + base + "/err.txt";
  REQUIRE(std::system(build.c_str()) == 0);
  REQUIRE(std::system((base + "/t > " + base + "/out.bin").c_str()) == 0);
  std::ifstream in(base + "/out.bin", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = 0;
  for (const std::string &expected : inputs) {
    size_t colon = all.find(':', pos);
    REQUIRE(colon != std::string::npos);
    size_t n = std::stoul(all.substr(pos, colon - pos));
    CHECK(all.substr(colon + 1, n) == expected);
    pos = colon + 1 + n;
  }
  CHECK(pos == all.size());
  std::system(("rm -rf " + base).c_str());
}

TEST_CASE("names: the rule is the documented grammar", "[names]") {
  const std::regex tensor("([A-Za-z_][A-Za-z0-9_]*|[0-9]+)(\\.([A-Za-z_][A-Za-z0-9_]*|[0-9]+))*");
  const std::regex layer("[A-Za-z_][A-Za-z0-9_]*");
  std::mt19937 rng(3);
  const std::string alphabet = "aZ_09.";
  std::vector<std::string> cases = randomStrings(4, 3000);
  for (int i = 0; i < 3000; ++i) { // mostly-valid strings, so both answers are exercised
    std::string s;
    for (size_t n = rng() % 8; n > 0; --n)
      s.push_back(alphabet[rng() % alphabet.size()]);
    cases.push_back(s);
  }
  size_t valid = 0;
  for (const std::string &s : cases) {
    bool expected = std::regex_match(s, tensor);
    valid += expected;
    CHECK(hector::isValidTensorName(s) == expected);
    CHECK(hector::isValidLayerName(s) == std::regex_match(s, layer));
  }
  CHECK(valid > 500);
  CHECK(hector::isValidTensorName("conv1.W"));
  CHECK(hector::isValidTensorName("saved.0"));
  CHECK(hector::isValidTensorName("grad.conv1.W"));
  CHECK_FALSE(hector::isValidTensorName("a b"));
  CHECK_FALSE(hector::isValidLayerName("conv1.W"));
}
