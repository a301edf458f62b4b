//===- HectorTypes.cpp - Hector types and attributes ------------*- C++ -*-===//
//
// Parsing, printing and verification of !hector.value and !hector.weight, the enum attributes,
// and the space/shape algebra.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/HectorTypes.h"
#include "hector/Dialect/HectorDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace hector;

#include "hector/Dialect/HectorEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Space and shape algebra
//===----------------------------------------------------------------------===//

std::string hector::formatShape(RowShape shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '[';
  for (int64_t i = 0, e = shape.rank(); i < e; ++i) {
    if (i)
      os << ", ";
    os << shape.dims[i];
    if (shape.isHead(i))
      os << 'h';
  }
  os << ']';
  return text;
}

bool hector::isEdgeIndexed(Space space) {
  switch (space) {
  case Space::Src:
  case Space::Dst:
  case Space::Edge:
  case Space::UniqueSrc:
  case Space::UniqueDst:
    return true;
  default:
    return false;
  }
}

/// Node-indexed spaces: rows addressed by a node or by its type.
static bool isNodeFamily(Space space) { return space == Space::Node || space == Space::NType; }

std::optional<Space> hector::joinSpaces(Space a, Space b) {
  if (a == b)
    return a;
  if (a == Space::None)
    return b;
  if (b == Space::None)
    return a;
  if (isNodeFamily(a) && isNodeFamily(b))
    return Space::Node;
  if (isNodeFamily(a) || isNodeFamily(b))
    return std::nullopt;
  // Both edge-indexed (relation counts as edge-indexed: read by each edge's relation).
  bool aUnique = a == Space::UniqueSrc || a == Space::UniqueDst;
  bool bUnique = b == Space::UniqueSrc || b == Space::UniqueDst;
  if (a == Space::Relation && bUnique)
    return b;
  if (b == Space::Relation && aUnique)
    return a;
  return Space::Edge;
}

std::optional<RowShape> hector::broadcastShapes(RowShape a, RowShape b) {
  const RowShape &shorter = a.rank() <= b.rank() ? a : b;
  const RowShape &longer = a.rank() <= b.rank() ? b : a;
  for (int64_t i = 0, e = shorter.rank(); i < e; ++i)
    if (shorter.dims[i] != longer.dims[i] || shorter.isHead(i) != longer.isHead(i))
      return std::nullopt;
  return longer;
}

Space hector::sliceSpace(Slicing slicing) {
  switch (slicing) {
  case Slicing::Relation:
    return Space::Relation;
  case Slicing::NType:
    return Space::NType;
  case Slicing::None:
    return Space::None;
  }
  llvm_unreachable("unknown slicing");
}

//===----------------------------------------------------------------------===//
// Type syntax: `<KEYWORD, [d, d, ...]>` where one d may carry the head suffix `h`.
//===----------------------------------------------------------------------===//

/// Parses `[d, Nh, ...]` into `dims` and `headAxis`.
static ParseResult parseDims(AsmParser &parser, SmallVectorImpl<int64_t> &dims, int64_t &headAxis) {
  headAxis = -1;
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
    SMLoc loc = parser.getCurrentLocation();
    int64_t dim;
    if (parser.parseInteger(dim))
      return failure();
    if (succeeded(parser.parseOptionalKeyword("h"))) {
      if (headAxis >= 0)
        return parser.emitError(loc, "at most one dimension may be the head dimension");
      headAxis = static_cast<int64_t>(dims.size());
    }
    dims.push_back(dim);
    return success();
  });
}

/// Parses the `<KEYWORD, [dims]>` body of a Hector type; `symbolize` maps the keyword.
template <typename EnumT>
static ParseResult parseTypeBody(AsmParser &parser, StringRef what,
                                 std::optional<EnumT> (*symbolize)(StringRef), EnumT &kind,
                                 SmallVectorImpl<int64_t> &dims, int64_t &headAxis) {
  if (parser.parseLess())
    return failure();
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<EnumT> parsed = symbolize(keyword);
  if (!parsed)
    return parser.emitError(loc, "unknown ") << what << " '" << keyword << "'";
  kind = *parsed;
  if (parser.parseComma() || parseDims(parser, dims, headAxis) || parser.parseGreater())
    return failure();
  return success();
}

/// Verifies the dimensions and head axis shared by both types.
static LogicalResult verifyShape(function_ref<InFlightDiagnostic()> emitError,
                                 ArrayRef<int64_t> dims, int64_t headAxis) {
  for (int64_t dim : dims)
    if (dim <= 0)
      return emitError() << "dimensions must be positive, got " << dim;
  if (headAxis < -1 || headAxis >= static_cast<int64_t>(dims.size()))
    return emitError() << "head axis " << headAxis << " out of range for " << dims.size()
                       << " dimensions";
  return success();
}

Type ValueType::parse(AsmParser &parser) {
  Space space;
  SmallVector<int64_t> dims;
  int64_t headAxis;
  if (parseTypeBody<Space>(parser, "index space", symbolizeSpace, space, dims, headAxis))
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); }, parser.getContext(),
                    space, dims, headAxis);
}

void ValueType::print(AsmPrinter &printer) const {
  printer << '<' << stringifySpace(getSpace()) << ", " << formatShape(getShape()) << '>';
}

LogicalResult ValueType::verify(function_ref<InFlightDiagnostic()> emitError, Space space,
                                ArrayRef<int64_t> dims, int64_t headAxis) {
  if (failed(verifyShape(emitError, dims, headAxis)))
    return failure();
  if (headAxis > 0)
    return emitError() << "the head dimension of a value must be its first dimension, got "
                       << formatShape({dims, headAxis});
  return success();
}

Type WeightType::parse(AsmParser &parser) {
  Slicing slicing;
  SmallVector<int64_t> dims;
  int64_t headAxis;
  if (parseTypeBody<Slicing>(parser, "slicing", symbolizeSlicing, slicing, dims, headAxis))
    return {};
  return getChecked([&] { return parser.emitError(parser.getNameLoc()); }, parser.getContext(),
                    slicing, dims, headAxis);
}

void WeightType::print(AsmPrinter &printer) const {
  printer << '<' << stringifySlicing(getSlicing()) << ", " << formatShape(getShape()) << '>';
}

LogicalResult WeightType::verify(function_ref<InFlightDiagnostic()> emitError, Slicing slicing,
                                 ArrayRef<int64_t> dims, int64_t headAxis) {
  return verifyShape(emitError, dims, headAxis);
}

#define GET_TYPEDEF_CLASSES
#include "hector/Dialect/HectorOpsTypes.cpp.inc"

void HectorDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "hector/Dialect/HectorOpsTypes.cpp.inc"
      >();
}
