//===- manifest_fuzz.cpp - The runtime's manifest reader on mutated manifests -===//
//
// hector-manifest-fuzz FILE [MUTANTS] [SEED]: parses the manifest in FILE (it must parse), then
// MUTANTS mutants of it (byte flips, truncations, insertions of the tokens that matter to a JSON
// reader: brackets, quotes, escapes, NULs, huge, fractional and non-finite numbers, deep
// nesting). Every mutant must parse or throw std::runtime_error with a "hector manifest"
// message; any other exception, a crash or (in the sanitizer build) a sanitizer report fails.
//
//===----------------------------------------------------------------------===//
#include "hector/model.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: hector-manifest-fuzz FILE [MUTANTS] [SEED]\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string seed = buffer.str();
  const long mutants = argc > 2 ? std::atol(argv[2]) : 20000;
  std::mt19937 rng(argc > 3 ? std::atoi(argv[3]) : 1);
  hector::parseManifest("hector_seed", seed); // the unmutated manifest parses
  static const char kNul[] = {'\0'};
  const std::vector<std::string> tokens = {
      "{", "}", "[", "]", "\"", "\\", "\\u", "\\u00zz", "\\uD800", ":", ",", std::string(kNul, 1),
      "1e999", "-1e999", "1e300", "-1", "0.5", "9007199254740993", "nan", "inf", "-", "e", ".",
      "true", "false", "null", "\"format\": 3", "\"dims\": [", std::string(200, '['),
      std::string(70, '['), "\xff", "\"head_axis\": 1e308"};
  long parsed = 0, refused = 0;
  for (long i = 0; i < mutants; ++i) {
    std::string m = seed;
    for (int k = 1 + rng() % 3; k > 0; --k) {
      const size_t pos = m.empty() ? 0 : rng() % (m.size() + 1);
      switch (rng() % 5) {
      case 0:
        if (!m.empty())
          m[std::min(pos, m.size() - 1)] ^= static_cast<char>(1 << (rng() % 8));
        break;
      case 1:
        m.resize(pos);
        break;
      case 2:
        m.insert(pos, tokens[rng() % tokens.size()]);
        break;
      case 3:
        m.erase(pos, rng() % 16);
        break;
      default: { // a number replaced
        size_t d = m.find_first_of("0123456789", pos);
        if (d != std::string::npos)
          m.replace(d, 1, tokens[15 + rng() % 7]);
      }
      }
    }
    try {
      hector::parseManifest("hector_mutant", m);
      ++parsed;
    } catch (const std::runtime_error &e) {
      if (std::string(e.what()).find("hector manifest") == std::string::npos) {
        std::fprintf(stderr, "mutant %ld: unexpected message: %s\n", i, e.what());
        return 1;
      }
      ++refused;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "mutant %ld: not a std::runtime_error: %s\n", i, e.what());
      return 1;
    }
  }
  std::printf("hector-manifest-fuzz: %ld mutants: %ld parsed, %ld refused: ok\n", mutants, parsed,
              refused);
  return 0;
}
