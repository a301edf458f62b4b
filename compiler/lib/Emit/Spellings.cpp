//===- Spellings.cpp - How the emitter spells values in C++ ---------------===//
//
// Identifiers, literals and the glue's expressions of table rows and shapes.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace hector {
namespace emit {

int64_t numElements(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::string identifier(StringRef name) {
  std::string out;
  for (char c : name)
    out.push_back(llvm::isAlnum(c) ? c : '_');
  if (out.empty() || llvm::isDigit(out.front()))
    out.insert(out.begin(), '_');
  return out;
}

std::string literal(double value) { return llvm::formatv("{0:e16}", value).str(); }

std::string graphRows(Space space) {
  switch (space) {
  case Space::Node:
    return "graph.numNodes()";
  case Space::Src:
  case Space::Dst:
  case Space::Edge:
    return "graph.numEdges()";
  case Space::UniqueSrc:
    return "graph.numUniqueSrc()";
  case Space::UniqueDst:
    return "graph.numUniqueDst()";
  case Space::Relation:
    return "graph.numRelations()";
  case Space::NType:
    return "graph.numNtypes()";
  case Space::None:
    return "1";
  }
  llvm_unreachable("unknown space");
}

std::string sliceCount(Slicing slicing) {
  switch (slicing) {
  case Slicing::Relation:
    return "graph.numRelations()";
  case Slicing::NType:
    return "graph.numNtypes()";
  case Slicing::None:
    return "";
  }
  llvm_unreachable("unknown slicing");
}

std::string shapeList(StringRef rows, ArrayRef<int64_t> dims) {
  std::string out = "{";
  if (!rows.empty())
    out += rows.str();
  for (int64_t d : dims) {
    if (out.size() > 1)
      out += ", ";
    out += std::to_string(d);
  }
  return out + "}";
}

} // namespace emit
} // namespace hector
