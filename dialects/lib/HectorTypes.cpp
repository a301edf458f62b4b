//===- HectorTypes.cpp - Hector types and attributes ------------*- C++ -*-===//
//
// Parsing, printing and verification of !hector.value and !hector.weight, the enum attributes,
// and the space/shape algebra.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/HectorTypes.h"
#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/SpaceRules.h"

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

bool hector::isEdgeIndexed(Space space) { return spaces::isPerEdge(space); }

std::optional<Space> hector::joinSpaces(Space a, Space b) { return spaces::join(a, b); }

std::optional<RowShape> hector::broadcastShapes(RowShape a, RowShape b) {
  const RowShape &shorter = a.rank() <= b.rank() ? a : b;
  const RowShape &longer = a.rank() <= b.rank() ? b : a;
  for (int64_t i = 0, e = shorter.rank(); i < e; ++i)
    if (shorter.dims[i] != longer.dims[i] || shorter.isHead(i) != longer.isHead(i))
      return std::nullopt;
  return longer;
}

Space hector::sliceSpace(Slicing slicing) { return spaces::sliceSpace<Space>(slicing); }

namespace {
/// Writes the reason a type rule does not apply into `*why` (when given); returns nullopt.
struct Why {
  std::string *why;
  std::string text;
  llvm::raw_string_ostream os{text};
  explicit Why(std::string *why) : why(why) {}
  ~Why() {
    if (why)
      *why = os.str();
  }
};
} // namespace

std::optional<Space> hector::linearSpace(Space space, Slicing slicing, StringRef operand,
                                         std::string *why) {
  std::optional<Space> result = spaces::linearSpace(space, slicing);
  if (!result && slicing == Slicing::Relation)
    Why(why).os << operand
                << " must be indexed by edges (src, dst, edge, unique_*) when the weight is "
                   "relation-sliced, got "
                << stringifySpace(space);
  else if (!result)
    Why(why).os << operand
                << " must be indexed by nodes (node) when the weight is ntype-sliced, got "
                << stringifySpace(space);
  return result;
}

std::optional<OwnedShape> hector::linearShape(RowShape x, RowShape w, bool transposed,
                                              StringRef operand, std::string *why) {
  auto fail = [&](auto &&...reason) -> std::optional<OwnedShape> {
    Why out(why);
    out.os << operand << " row " << formatShape(x) << " does not match the weight "
           << formatShape(w) << ": ";
    (out.os << ... << reason);
    return std::nullopt;
  };
  OwnedShape result;
  if (w.headAxis == 0) {
    // Per head: W is [Hh, k, m...].
    if (w.rank() < 2)
      return fail("a per-head weight needs [Hh, k, ...]");
    if (!transposed) {
      if (x.rank() != 2 || !x.hasHeads() || x.dims[0] != w.dims[0] || x.dims[1] != w.dims[1])
        return fail("expected [", w.dims[0], "h, ", w.dims[1], "]");
      result.dims.push_back(w.dims[0]);
      result.dims.append(w.dims.begin() + 2, w.dims.end());
      result.headAxis = 0;
      return result;
    }
    OwnedShape expected;
    expected.dims.push_back(w.dims[0]);
    expected.dims.append(w.dims.begin() + 2, w.dims.end());
    expected.headAxis = 0;
    if (x != expected.view())
      return fail("expected ", formatShape(expected.view()));
    result.dims = {w.dims[0], w.dims[1]};
    result.headAxis = 0;
    return result;
  }
  if (w.rank() < 1)
    return fail("the weight needs at least one dimension");
  OwnedShape rest;
  rest.dims.assign(w.dims.begin() + 1, w.dims.end());
  rest.headAxis = w.hasHeads() ? w.headAxis - 1 : -1;
  if (rest.headAxis > 0) {
    Why(why).os << "the weight's head dimension must follow the contracted dimension directly, "
                   "got "
                << formatShape(w);
    return std::nullopt;
  }
  if (!transposed) {
    if (x.rank() != 1 || x.hasHeads() || x.dims[0] != w.dims[0])
      return fail("expected [", w.dims[0], "]");
    return rest;
  }
  if (x != rest.view())
    return fail("expected ", formatShape(rest.view()));
  result.dims = {w.dims[0]};
  return result;
}

std::optional<Slicing> hector::productSlicing(Slicing a, Slicing b) {
  return spaces::productSlicing(a, b);
}

std::optional<ValueType> hector::linearType(ValueType x, WeightType w, bool transposed,
                                            StringRef operand, std::string *why) {
  std::optional<Space> space = linearSpace(x.getSpace(), w.getSlicing(), operand, why);
  if (!space)
    return std::nullopt;
  std::optional<OwnedShape> shape =
      linearShape(x.getShape(), w.getShape(), transposed, operand, why);
  if (!shape)
    return std::nullopt;
  return ValueType::get(x.getContext(), *space, shape->view());
}

/// The slicing of a product of two weights' slices, or the reason there is none (in `why`).
static std::optional<Slicing> checkedProductSlicing(WeightType lhs, WeightType rhs,
                                                    std::string *why) {
  std::optional<Slicing> slicing = productSlicing(lhs.getSlicing(), rhs.getSlicing());
  if (!slicing)
    Why(why).os << "operands must not be sliced differently, got lhs "
                << stringifySlicing(lhs.getSlicing()) << " and rhs "
                << stringifySlicing(rhs.getSlicing());
  return slicing;
}

std::optional<WeightType> hector::weightMatmulType(WeightType lhs, WeightType rhs,
                                                   std::string *why) {
  std::optional<Slicing> slicing = checkedProductSlicing(lhs, rhs, why);
  if (!slicing)
    return std::nullopt;
  RowShape a = lhs.getShape(), b = rhs.getShape();
  if (a.rank() < 1 || b.rank() < 1) {
    Why(why).os << "operands need at least one dimension, got lhs " << formatShape(a) << " and rhs "
                << formatShape(b);
    return std::nullopt;
  }
  if (a.dims.back() != b.dims.front()) {
    Why(why).os << "lhs last dimension " << a.dims.back() << " must equal rhs first dimension "
                << b.dims.front();
    return std::nullopt;
  }
  if (a.isHead(a.rank() - 1) || b.isHead(0)) {
    Why(why).os << "cannot contract a head dimension, got lhs " << formatShape(a) << " and rhs "
                << formatShape(b);
    return std::nullopt;
  }
  if (a.hasHeads() && b.hasHeads()) {
    Why(why).os << "at most one operand may have a head dimension, got lhs " << formatShape(a)
                << " and rhs " << formatShape(b);
    return std::nullopt;
  }
  OwnedShape shape;
  shape.dims.assign(a.dims.begin(), a.dims.end() - 1);
  shape.dims.append(b.dims.begin() + 1, b.dims.end());
  if (a.hasHeads())
    shape.headAxis = a.headAxis;
  else if (b.hasHeads())
    shape.headAxis = a.rank() - 1 + b.headAxis - 1;
  return WeightType::get(lhs.getContext(), *slicing, shape.view());
}

std::optional<WeightType> hector::weightDotType(WeightType lhs, WeightType rhs, std::string *why) {
  std::optional<Slicing> slicing = checkedProductSlicing(lhs, rhs, why);
  if (!slicing)
    return std::nullopt;
  RowShape a = lhs.getShape(), b = rhs.getShape();
  if (b.rank() < 1) {
    Why(why).os << "rhs needs at least one dimension to contract";
    return std::nullopt;
  }
  if (b.isHead(b.rank() - 1)) {
    Why(why).os << "cannot contract a head dimension, got rhs " << formatShape(b);
    return std::nullopt;
  }
  int64_t prefix = a.rank() - b.rank();
  bool suffix = prefix >= 0 && a.dims.drop_front(prefix) == b.dims &&
                (b.hasHeads() ? a.headAxis == prefix + b.headAxis : a.headAxis < prefix);
  if (!suffix) {
    Why(why).os << "rhs shape " << formatShape(b) << " must be a suffix of the lhs shape "
                << formatShape(a);
    return std::nullopt;
  }
  return WeightType::get(lhs.getContext(), *slicing, a.dims.drop_back(), a.headAxis);
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

#define GET_ATTRDEF_CLASSES
#include "hector/Dialect/HectorAttrDefs.cpp.inc"

void HectorDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "hector/Dialect/HectorAttrDefs.cpp.inc"
      >();
}
