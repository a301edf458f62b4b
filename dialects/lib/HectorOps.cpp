//===- HectorOps.cpp - Hector dialect operations ----------------*- C++ -*-===//
//
// Verifiers (spaces, shapes, heads, slicing), the layer builder, the traversal's custom syntax,
// and the small interface hooks of the ops.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/HectorOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace hector;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace {
/// A row shape with owned dimensions, for shapes computed by the verifiers.
struct OwnedShape {
  SmallVector<int64_t> dims;
  int64_t headAxis = -1;

  OwnedShape() = default;
  OwnedShape(RowShape shape) : dims(shape.dims), headAxis(shape.headAxis) {}
  RowShape view() const { return {dims, headAxis}; }
};
} // namespace

/// Emits "result type must be EXPECTED, got ACTUAL" unless `actual` is `expected`.
static LogicalResult checkResultType(Operation *op, Type expected, Type actual,
                                     StringRef what = "result") {
  if (expected == actual)
    return success();
  return op->emitOpError() << what << " type must be " << expected << ", got " << actual;
}

/// The space of `hector.linear` rows in `space` times a weight of `slicing`; emits an error
/// naming `operand` when the rows cannot select a slice.
static FailureOr<Space> linearSpace(Operation *op, StringRef operand, Space space,
                                    Slicing slicing) {
  switch (slicing) {
  case Slicing::Relation:
    if (!isEdgeIndexed(space))
      return op->emitOpError()
             << operand
             << " must be indexed by edges (src, dst, edge, unique_*) when the weight is "
                "relation-sliced, got "
             << stringifySpace(space);
    if (space == Space::UniqueSrc || space == Space::UniqueDst)
      return space;
    return Space::Edge;
  case Slicing::NType:
    if (space != Space::Node)
      return op->emitOpError() << operand
                               << " must be indexed by nodes (node) when the weight is "
                                  "ntype-sliced, got "
                               << stringifySpace(space);
    return Space::Node;
  case Slicing::None:
    return space;
  }
  llvm_unreachable("unknown slicing");
}

/// The row shape of `x . W` (contracting x's last dim with W's first), or with `transposed`
/// of `x . W^T` (contracting x with W's trailing dims). Emits an error naming `operand`.
static FailureOr<OwnedShape> linearShape(Operation *op, StringRef operand, RowShape x, RowShape w,
                                         bool transposed) {
  auto fail = [&]() {
    return op->emitOpError() << operand << " row " << formatShape(x)
                             << " does not match the weight " << formatShape(w) << ": ";
  };
  OwnedShape result;
  if (w.headAxis == 0) {
    // Per head: W is [Hh, k, m...].
    if (w.rank() < 2)
      return fail() << "a per-head weight needs [Hh, k, ...]";
    if (!transposed) {
      if (x.rank() != 2 || !x.hasHeads() || x.dims[0] != w.dims[0] || x.dims[1] != w.dims[1])
        return fail() << "expected [" << w.dims[0] << "h, " << w.dims[1] << "]";
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
      return fail() << "expected " << formatShape(expected.view());
    result.dims = {w.dims[0], w.dims[1]};
    result.headAxis = 0;
    return result;
  }
  if (w.rank() < 1)
    return fail() << "the weight needs at least one dimension";
  OwnedShape rest;
  rest.dims.assign(w.dims.begin() + 1, w.dims.end());
  rest.headAxis = w.hasHeads() ? w.headAxis - 1 : -1;
  if (rest.headAxis > 0)
    return op->emitOpError() << "the weight's head dimension must follow the contracted "
                                "dimension directly, got "
                             << formatShape(w);
  if (!transposed) {
    if (x.rank() != 1 || x.hasHeads() || x.dims[0] != w.dims[0])
      return fail() << "expected [" << w.dims[0] << "]";
    return rest;
  }
  if (x != rest.view())
    return fail() << "expected " << formatShape(rest.view());
  result.dims = {w.dims[0]};
  return result;
}

/// The type of `hector.linear` of `x` and `w` (`x . W^T` with `transposed`), with errors naming
/// `operand` (the rows).
static FailureOr<ValueType> linearType(Operation *op, StringRef operand, ValueType x, WeightType w,
                                       bool transposed = false) {
  FailureOr<Space> space = linearSpace(op, operand, x.getSpace(), w.getSlicing());
  if (failed(space))
    return failure();
  FailureOr<OwnedShape> shape = linearShape(op, operand, x.getShape(), w.getShape(), transposed);
  if (failed(shape))
    return failure();
  return ValueType::get(op->getContext(), *space, shape->view());
}

/// Emits an error unless `actual` equals `expected` (the shape of `of`), naming `operand`.
static LogicalResult checkSameShape(Operation *op, StringRef operand, RowShape actual,
                                    RowShape expected, StringRef of) {
  if (actual == expected)
    return success();
  return op->emitOpError() << operand << " shape " << formatShape(actual) << " must equal the "
                           << of << " shape " << formatShape(expected);
}

LogicalResult hector::verifyElementwiseBinary(Operation *op) {
  auto lhs = cast<ValueType>(op->getOperand(0).getType());
  auto rhs = cast<ValueType>(op->getOperand(1).getType());
  std::optional<Space> space = joinSpaces(lhs.getSpace(), rhs.getSpace());
  if (!space)
    return op->emitOpError() << "operands have incompatible index spaces: lhs is "
                             << stringifySpace(lhs.getSpace()) << ", rhs is "
                             << stringifySpace(rhs.getSpace());
  std::optional<RowShape> shape = broadcastShapes(lhs.getShape(), rhs.getShape());
  if (!shape)
    return op->emitOpError() << "operand shapes " << formatShape(lhs.getShape()) << " and "
                             << formatShape(rhs.getShape())
                             << " do not broadcast (one must be a prefix of the other)";
  return checkResultType(op, ValueType::get(op->getContext(), *space, *shape),
                         op->getResult(0).getType());
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

void LayerOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    DictionaryAttr params) {
  state.addAttribute(getSymNameAttrName(state.name), builder.getStringAttr(name));
  if (params)
    state.addAttribute(getParamsAttrName(state.name), params);
  Region *body = state.addRegion();
  body->push_back(new Block());
}

LogicalResult LayerOp::verifyRegions() {
  // Inputs and weights are the layer's arguments and share one namespace; outputs another.
  llvm::StringMap<Operation *> arguments, outputs;
  for (Operation &op : *getBody()) {
    StringRef name, kind;
    llvm::StringMap<Operation *> *names = &arguments;
    if (auto input = dyn_cast<InputOp>(op)) {
      name = input.getName();
      kind = "input";
    } else if (auto weight = dyn_cast<WeightOp>(op)) {
      name = weight.getName();
      kind = "weight";
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      name = output.getName();
      kind = "output";
      names = &outputs;
    } else {
      continue;
    }
    auto [it, inserted] = names->try_emplace(name, &op);
    if (!inserted)
      return (op.emitOpError() << "duplicate " << kind << " name '" << name << "'")
                 .attachNote(it->second->getLoc())
             << "previously defined here";
  }
  return success();
}

LogicalResult InputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  // Users pass node or edge data; a backward layer's saved activations may be in any space
  // with rows per node, edge or unique pair.
  Space space = getResult().getType().getSpace();
  if (space != Space::Node && !isEdgeIndexed(space))
    return emitOpError() << "result must be indexed by nodes or edges, got "
                         << stringifySpace(space);
  return success();
}

void InputOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return success();
}

void WeightOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult OutputOp::verify() {
  if (getName().empty())
    return emitOpError("name must not be empty");
  return success();
}

//===----------------------------------------------------------------------===//
// Graph access, slicing and compaction
//===----------------------------------------------------------------------===//

/// Verifies an op reading node rows per edge end: input `node`, result `space`, same shape.
static LogicalResult verifyEndGather(Operation *op, ValueType input, ValueType result,
                                     Space space) {
  if (input.getSpace() != Space::Node)
    return op->emitOpError() << "input must be indexed by nodes (node), got "
                             << stringifySpace(input.getSpace());
  return checkResultType(op, input.withSpace(space), result);
}

LogicalResult SrcOp::verify() {
  return verifyEndGather(*this, getInput().getType(), getResult().getType(), Space::Src);
}

LogicalResult DstOp::verify() {
  return verifyEndGather(*this, getInput().getType(), getResult().getType(), Space::Dst);
}

LogicalResult SliceOp::verify() {
  WeightType weight = getInput().getType();
  ValueType result = getResult().getType();
  Space expected = sliceSpace(weight.getSlicing());
  if (result.getSpace() != expected)
    return emitOpError() << "result space must be " << stringifySpace(expected) << " for a "
                         << stringifySlicing(weight.getSlicing()) << "-sliced weight, got "
                         << stringifySpace(result.getSpace());
  return checkSameShape(*this, "result", result.getShape(), weight.getShape(), "weight");
}

LogicalResult UniqueGatherOp::verify() {
  Space space = getSide() == EdgeEnd::Src ? Space::UniqueSrc : Space::UniqueDst;
  return verifyEndGather(*this, getInput().getType(), getResult().getType(), space);
}

LogicalResult UniqueExpandOp::verify() {
  ValueType input = getInput().getType();
  if (input.getSpace() != Space::UniqueSrc && input.getSpace() != Space::UniqueDst)
    return emitOpError() << "input must be indexed by unique pairs (unique_src, unique_dst), got "
                         << stringifySpace(input.getSpace());
  return checkResultType(*this, input.withSpace(Space::Edge), getResult().getType());
}

//===----------------------------------------------------------------------===//
// Dense products
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::verify() {
  FailureOr<ValueType> expected = linearType(*this, "input", getInput().getType(),
                                             getWeight().getType(), getTransposed());
  if (failed(expected))
    return failure();
  return checkResultType(*this, *expected, getResult().getType());
}

/// The type of `hector.weight_matmul` of `lhs` and `rhs`, with errors on `op`.
static FailureOr<WeightType> weightMatmulType(Operation *op, WeightType lhs, WeightType rhs) {
  Slicing slicing = lhs.getSlicing();
  if (rhs.getSlicing() != Slicing::None) {
    if (slicing != Slicing::None && slicing != rhs.getSlicing())
      return op->emitOpError() << "operands must not be sliced differently, got lhs "
                               << stringifySlicing(slicing) << " and rhs "
                               << stringifySlicing(rhs.getSlicing());
    slicing = rhs.getSlicing();
  }
  RowShape a = lhs.getShape(), b = rhs.getShape();
  if (a.rank() < 1 || b.rank() < 1)
    return op->emitOpError() << "operands need at least one dimension, got lhs "
                             << formatShape(a) << " and rhs " << formatShape(b);
  if (a.dims.back() != b.dims.front())
    return op->emitOpError() << "lhs last dimension " << a.dims.back()
                             << " must equal rhs first dimension " << b.dims.front();
  if (a.isHead(a.rank() - 1) || b.isHead(0))
    return op->emitOpError() << "cannot contract a head dimension, got lhs " << formatShape(a)
                             << " and rhs " << formatShape(b);
  if (a.hasHeads() && b.hasHeads())
    return op->emitOpError() << "at most one operand may have a head dimension, got lhs "
                             << formatShape(a) << " and rhs " << formatShape(b);
  OwnedShape shape;
  shape.dims.assign(a.dims.begin(), a.dims.end() - 1);
  shape.dims.append(b.dims.begin() + 1, b.dims.end());
  if (a.hasHeads())
    shape.headAxis = a.headAxis;
  else if (b.hasHeads())
    shape.headAxis = a.rank() - 1 + b.headAxis - 1;
  return WeightType::get(op->getContext(), slicing, shape.view());
}

LogicalResult WeightMatmulOp::verify() {
  FailureOr<WeightType> expected =
      weightMatmulType(*this, getLhs().getType(), getRhs().getType());
  if (failed(expected))
    return failure();
  return checkResultType(*this, *expected, getResult().getType());
}

/// The slicing of a weight product of `lhs` and `rhs`: at most one sliced, or both the same way.
static FailureOr<Slicing> productSlicing(Operation *op, WeightType lhs, WeightType rhs) {
  Slicing slicing = lhs.getSlicing();
  if (rhs.getSlicing() == Slicing::None)
    return slicing;
  if (slicing != Slicing::None && slicing != rhs.getSlicing())
    return op->emitOpError() << "operands must not be sliced differently, got lhs "
                             << stringifySlicing(slicing) << " and rhs "
                             << stringifySlicing(rhs.getSlicing());
  return rhs.getSlicing();
}

/// The type of `hector.weight_dot` of `lhs` and `rhs`, or failure (diagnosed on `op`).
static FailureOr<WeightType> weightDotType(Operation *op, WeightType lhs, WeightType rhs) {
  FailureOr<Slicing> slicing = productSlicing(op, lhs, rhs);
  if (failed(slicing))
    return failure();
  RowShape a = lhs.getShape(), b = rhs.getShape();
  if (b.rank() < 1)
    return op->emitOpError("rhs needs at least one dimension to contract");
  if (b.isHead(b.rank() - 1))
    return op->emitOpError() << "cannot contract a head dimension, got rhs " << formatShape(b);
  int64_t prefix = a.rank() - b.rank();
  bool suffix = prefix >= 0 && a.dims.drop_front(prefix) == b.dims &&
                (b.hasHeads() ? a.headAxis == prefix + b.headAxis
                              : a.headAxis < prefix);
  if (!suffix)
    return op->emitOpError() << "rhs shape " << formatShape(b)
                             << " must be a suffix of the lhs shape " << formatShape(a);
  RowShape shape{a.dims.drop_back(), a.headAxis};
  return WeightType::get(op->getContext(), *slicing, shape);
}

LogicalResult WeightDotOp::verify() {
  FailureOr<WeightType> expected = weightDotType(*this, getLhs().getType(), getRhs().getType());
  if (failed(expected))
    return failure();
  return checkResultType(*this, *expected, getResult().getType());
}

LogicalResult WeightGradOp::verify() {
  // grad must be what a linear of the input and a weight of the result type produces, except
  // that rows per edge may be in any of the per-edge spaces (src, dst, edge).
  FailureOr<ValueType> expected =
      linearType(*this, "input", getInput().getType(), getResult().getType());
  if (failed(expected))
    return failure();
  ValueType grad = getGrad().getType();
  auto perEdge = [](Space s) { return s == Space::Src || s == Space::Dst || s == Space::Edge; };
  if (perEdge(expected->getSpace()) && perEdge(grad.getSpace()))
    return checkResultType(*this, expected->withSpace(grad.getSpace()), grad, "grad");
  return checkResultType(*this, *expected, grad, "grad");
}

//===----------------------------------------------------------------------===//
// Elementwise and reductions
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::verify() {
  ValueType type = getResult().getType();
  if (type.getSpace() != Space::None || !type.getDims().empty())
    return emitOpError() << "result must be a scalar !hector.value<none, []>, got " << type;
  return success();
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValueAttr(); }

LogicalResult DotOp::verify() {
  ValueType lhs = getLhs().getType(), rhs = getRhs().getType();
  std::optional<Space> space = joinSpaces(lhs.getSpace(), rhs.getSpace());
  if (!space)
    return emitOpError() << "operands have incompatible index spaces: lhs is "
                         << stringifySpace(lhs.getSpace()) << ", rhs is "
                         << stringifySpace(rhs.getSpace());
  RowShape shape = lhs.getShape();
  if (shape != rhs.getShape())
    return emitOpError() << "operand shapes must be equal, got lhs " << formatShape(shape)
                         << " and rhs " << formatShape(rhs.getShape());
  if (shape.rank() < 1)
    return emitOpError("operands need at least one dimension to contract");
  if (shape.isHead(shape.rank() - 1))
    return emitOpError() << "cannot contract the head dimension of " << formatShape(shape);
  RowShape resultShape{shape.dims.drop_back(), shape.headAxis};
  return checkResultType(*this, ValueType::get(getContext(), *space, resultShape),
                         getResult().getType());
}

/// Emits an error unless `input` is edge-indexed.
static LogicalResult checkEdgeIndexed(Operation *op, ValueType input) {
  if (isEdgeIndexed(input.getSpace()))
    return success();
  return op->emitOpError() << "input must be indexed by edges (src, dst, edge, unique_*), got "
                           << stringifySpace(input.getSpace());
}

LogicalResult AggregateOp::verify() {
  ValueType input = getInput().getType();
  if (failed(checkEdgeIndexed(*this, input)))
    return failure();
  return checkResultType(*this, input.withSpace(Space::Node), getResult().getType());
}

LogicalResult SoftmaxOp::verify() {
  ValueType input = getInput().getType();
  if (failed(checkEdgeIndexed(*this, input)))
    return failure();
  return checkResultType(*this, input.withSpace(Space::Edge), getResult().getType());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError() << "needs at least two inputs, got " << getInputs().size();
  auto first = cast<ValueType>(getInputs().front().getType());
  Space space = first.getSpace();
  RowShape firstShape = first.getShape();
  int64_t lastDim = 0;
  for (auto [i, value] : llvm::enumerate(getInputs())) {
    auto type = cast<ValueType>(value.getType());
    RowShape shape = type.getShape();
    std::optional<Space> joined = joinSpaces(space, type.getSpace());
    if (!joined)
      return emitOpError() << "input #" << i << " in " << stringifySpace(type.getSpace())
                           << " is incompatible with the index space " << stringifySpace(space)
                           << " of the inputs before it";
    space = *joined;
    if (shape.rank() < 1)
      return emitOpError() << "input #" << i << " needs at least one dimension";
    if (shape.isHead(shape.rank() - 1))
      return emitOpError() << "input #" << i
                           << " cannot be concatenated along its head dimension, got "
                           << formatShape(shape);
    if (shape.rank() != firstShape.rank() || shape.headAxis != firstShape.headAxis ||
        shape.dims.drop_back() != firstShape.dims.drop_back())
      return emitOpError() << "input #" << i << " shape " << formatShape(shape)
                           << " must match input #0 shape " << formatShape(firstShape)
                           << " in all but the last dimension";
    lastDim += shape.dims.back();
  }
  OwnedShape shape(firstShape);
  shape.dims.back() = lastDim;
  return checkResultType(*this, ValueType::get(getContext(), space, shape.view()),
                         getResult().getType());
}

LogicalResult SplitHeadsOp::verify() {
  ValueType input = getInput().getType(), result = getResult().getType();
  RowShape in = input.getShape(), out = result.getShape();
  if (in.rank() != 1 || in.hasHeads())
    return emitOpError() << "input row must be a vector [n] without heads, got " << formatShape(in);
  if (out.rank() != 2 || !out.isHead(0))
    return emitOpError() << "result row must be [Hh, d], got " << formatShape(out);
  if (out.dims[0] * out.dims[1] != in.dims[0])
    return emitOpError() << "result " << formatShape(out) << " must have " << in.dims[0]
                         << " elements like the input";
  if (result.getSpace() != input.getSpace())
    return emitOpError() << "result space must be the input's " << stringifySpace(input.getSpace())
                         << ", got " << stringifySpace(result.getSpace());
  return success();
}

LogicalResult MergeHeadsOp::verify() {
  ValueType input = getInput().getType();
  RowShape in = input.getShape();
  if (in.rank() != 2 || !in.isHead(0))
    return emitOpError() << "input row must be [Hh, d], got " << formatShape(in);
  int64_t merged[] = {in.dims[0] * in.dims[1]};
  return checkResultType(*this, ValueType::get(getContext(), input.getSpace(), merged, -1),
                         getResult().getType());
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// True when every row of space `from` belongs to exactly one row of space `to` (see
/// hector.reduce).
static bool rowsBelongTo(Space from, Space to) {
  bool perEdge = from == Space::Src || from == Space::Dst || from == Space::Edge;
  bool unique = from == Space::UniqueSrc || from == Space::UniqueDst;
  switch (to) {
  case Space::None:
    return true;
  case Space::NType:
    return from == Space::Node || from == Space::NType;
  case Space::Relation:
    return perEdge || unique || from == Space::Relation;
  case Space::UniqueSrc:
  case Space::UniqueDst:
    return perEdge || from == to;
  case Space::Edge:
    return perEdge;
  case Space::Node:
    return unique || from == Space::Node;
  case Space::Src:
  case Space::Dst:
    return from == to;
  }
  llvm_unreachable("unknown space");
}

LogicalResult ReduceOp::verify() {
  ValueType input = getInput().getType();
  Type resultType = getResult().getType();
  Space space;
  RowShape shape;
  if (auto weight = dyn_cast<WeightType>(resultType)) {
    space = sliceSpace(weight.getSlicing());
    shape = weight.getShape();
  } else {
    auto value = cast<ValueType>(resultType);
    space = value.getSpace();
    shape = value.getShape();
  }
  if (!rowsBelongTo(input.getSpace(), space))
    return emitOpError() << "cannot sum " << stringifySpace(input.getSpace()) << " rows into "
                         << stringifySpace(space) << " rows";
  std::optional<RowShape> joined = broadcastShapes(shape, input.getShape());
  if (!joined || *joined != input.getShape())
    return emitOpError() << "result shape " << formatShape(shape)
                         << " must be a prefix of the input shape "
                         << formatShape(input.getShape());
  return success();
}

bool ReduceOp::isRowLocal() {
  auto result = dyn_cast<ValueType>(getResult().getType());
  if (!result)
    return false;
  Space from = getInput().getType().getSpace(), to = result.getSpace();
  return from == to || ((from == Space::Src || from == Space::Dst) && to == Space::Edge);
}

bool ReduceOp::isPairSum() {
  auto result = dyn_cast<ValueType>(getResult().getType());
  if (!result)
    return false;
  Space from = getInput().getType().getSpace(), to = result.getSpace();
  bool edge = from == Space::Src || from == Space::Dst || from == Space::Edge;
  return edge && (to == Space::UniqueSrc || to == Space::UniqueDst) &&
         result.getShape() == getInput().getType().getShape();
}

LogicalResult AggregateGradOp::verify() {
  ValueType grad = getGrad().getType();
  if (grad.getSpace() != Space::Node)
    return emitOpError() << "grad must be indexed by nodes (node), got "
                         << stringifySpace(grad.getSpace());
  Space space;
  switch (getKind()) {
  case AggregateKind::Sum:
    return emitOpError("the gradient of a sum is hector.src or hector.dst of the gradient");
  case AggregateKind::Mean:
    if (getInput())
      return emitOpError("the gradient of a mean takes no input");
    space = getBy() == EdgeEnd::Src ? Space::Src : Space::Dst;
    break;
  case AggregateKind::Max: {
    if (!getInput())
      return emitOpError("the gradient of a max needs the aggregated input");
    auto input = cast<ValueType>(getInput().getType());
    if (failed(checkEdgeIndexed(*this, input)) ||
        failed(checkSameShape(*this, "input", input.getShape(), grad.getShape(), "grad")))
      return failure();
    space = Space::Edge;
    break;
  }
  }
  return checkResultType(*this, grad.withSpace(space), getResult().getType());
}

LogicalResult NarrowOp::verify() {
  ValueType input = getInput().getType(), result = getResult().getType();
  RowShape in = input.getShape(), out = result.getShape();
  if (in.rank() < 1 || in.isHead(in.rank() - 1))
    return emitOpError() << "input needs a last dimension that is not the head dimension, got "
                         << formatShape(in);
  if (result.getSpace() != input.getSpace() || out.rank() != in.rank() ||
      out.headAxis != in.headAxis || out.dims.drop_back() != in.dims.drop_back())
    return emitOpError() << "result " << result << " must equal the input " << input
                         << " in all but the last dimension";
  int64_t offset = getOffset();
  if (offset < 0 || offset + out.dims.back() > in.dims.back())
    return emitOpError() << "columns [" << offset << ", " << offset + out.dims.back()
                         << ") are out of range for a last dimension of " << in.dims.back();
  return success();
}

LogicalResult WeightMatmulGradOp::verify() {
  // The forward product of the result and `other`, in operand order, must have grad's type.
  WeightType result = getResult().getType(), other = getOther().getType();
  FailureOr<WeightType> product = getRhs() ? weightMatmulType(*this, other, result)
                                           : weightMatmulType(*this, result, other);
  if (failed(product))
    return failure();
  return checkResultType(*this, *product, getGrad().getType(), "grad");
}

LogicalResult WeightDotGradOp::verify() {
  // The forward product of the result and `other`, in operand order, must have grad's type.
  WeightType result = getResult().getType(), other = getOther().getType();
  FailureOr<WeightType> product = getRhs() ? weightDotType(*this, other, result)
                                           : weightDotType(*this, result, other);
  if (failed(product))
    return failure();
  return checkResultType(*this, *product, getGrad().getType(), "grad");
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

LogicalResult GemmOp::verify() {
  ValueType a = getA().getType();
  WeightType b = getB().getType();
  if (getSegment() != b.getSlicing())
    return emitOpError() << "segment " << stringifySlicing(getSegment())
                         << " must be the slicing of b, " << stringifySlicing(b.getSlicing());

  // The space of the rows the GEMM iterates over.
  Space rows = a.getSpace();
  if (getGather() != GemmGather::None) {
    if (a.getSpace() != Space::Node)
      return emitOpError() << "a must be indexed by nodes (node) when gathered through "
                           << stringifyGemmGather(getGather()) << ", got "
                           << stringifySpace(a.getSpace());
    switch (getGather()) {
    case GemmGather::Src:
      rows = Space::Src;
      break;
    case GemmGather::Dst:
      rows = Space::Dst;
      break;
    case GemmGather::UniqueSrc:
      rows = Space::UniqueSrc;
      break;
    case GemmGather::UniqueDst:
      rows = Space::UniqueDst;
      break;
    case GemmGather::None:
      break;
    }
  }
  FailureOr<Space> product = linearSpace(*this, "a", rows, b.getSlicing());
  if (failed(product))
    return failure();
  FailureOr<OwnedShape> shape =
      linearShape(*this, "a", a.getShape(), b.getShape(), getTransposeB());
  if (failed(shape))
    return failure();

  ValueType result = getResult().getType();
  auto expect = [&](Space space) {
    return checkResultType(*this, ValueType::get(getContext(), space, shape->view()), result);
  };
  bool perEdge = *product == Space::Src || *product == Space::Dst || *product == Space::Edge;
  switch (getScatter()) {
  case GemmScatter::Store:
    return expect(*product);
  case GemmScatter::AccumulateDst:
  case GemmScatter::AccumulateSrc:
    if (!perEdge)
      return emitOpError() << "scatter " << stringifyGemmScatter(getScatter())
                           << " needs one row per edge, got " << stringifySpace(*product)
                           << " rows";
    return expect(Space::Node);
  case GemmScatter::AccumulateUnique:
    if (!perEdge)
      return emitOpError() << "scatter accumulate_unique needs one row per edge, got "
                           << stringifySpace(*product) << " rows";
    if (result.getSpace() != Space::UniqueSrc && result.getSpace() != Space::UniqueDst)
      return emitOpError() << "scatter accumulate_unique needs a unique_src or unique_dst "
                              "result, got "
                           << stringifySpace(result.getSpace());
    return expect(result.getSpace());
  }
  llvm_unreachable("unknown scatter mode");
}

LogicalResult TraversalOp::verifyRegions() {
  Block &body = getBodyRegion().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments() << " arguments for "
                         << getInputs().size() << " inputs";
  for (auto [i, input, arg] : llvm::enumerate(getInputs(), body.getArguments()))
    if (input.getType() != arg.getType())
      return emitOpError() << "body argument #" << i << " type " << arg.getType()
                           << " must equal input #" << i << " type " << input.getType();
  // A node traversal over unique pairs: its results' space (see the op's description).
  std::optional<Space> pairs;
  for (Operation &op : body.without_terminator())
    if (auto reduce = dyn_cast<ReduceOp>(op); reduce && reduce.isPairSum() && !pairs)
      pairs = cast<ValueType>(reduce.getResult().getType()).getSpace();
  // The end of the edges the traversal's aggregates reduce over.
  std::optional<EdgeEnd> by;
  for (Operation &op : body.without_terminator()) {
    auto reduce = dyn_cast<ReduceOp>(op);
    bool pairSum = reduce && reduce.isPairSum();
    if (!op.hasTrait<OpTrait::TraversalBody>() && !(reduce && reduce.isRowLocal()) && !pairSum)
      return op.emitOpError() << "is not allowed in the body of a 'hector.traversal'";
    if (getKind() == TraversalKind::Edge && isa<SoftmaxOp>(op))
      return op.emitOpError() << "needs a node traversal, not an edge traversal";
    if (pairSum && getKind() != TraversalKind::Node)
      return op.emitOpError() << "sums the edges of unique pairs: it needs a node traversal "
                                 "over the pairs, not an edge traversal";
    if (pairSum && cast<ValueType>(reduce.getResult().getType()).getSpace() != *pairs)
      return op.emitOpError() << "sums into " << reduce.getResult().getType()
                              << " rows; a traversal runs over the pairs of one space";
    if (pairs && isa<AggregateOp, SoftmaxOp>(op))
      return op.emitOpError() << "cannot be in a traversal over "
                              << stringifySpace(*pairs) << " pairs";
    if (auto agg = dyn_cast<AggregateOp>(op)) {
      if (!by)
        by = agg.getBy();
      else if (agg.getBy() != *by)
        return op.emitOpError() << "reduces by " << stringifyEdgeEnd(agg.getBy())
                                << ", but an earlier aggregate of this traversal reduces by "
                                << stringifyEdgeEnd(*by)
                                << "; a traversal reduces over one end of the edges";
    }
  }
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yielded types must equal the result types";
  if (pairs)
    for (Value value : yield.getValues()) {
      auto reduce = value.getDefiningOp<ReduceOp>();
      if (!reduce || !reduce.isPairSum())
        return emitOpError() << "over " << stringifySpace(*pairs)
                             << " pairs: every result must be a pair sum (hector.reduce into "
                             << stringifySpace(*pairs) << ")";
    }
  return success();
}

ParseResult TraversalOp::parse(OpAsmParser &parser, OperationState &result) {
  // hector.traversal KIND (%arg = %input, ...) attr-dict : (types) -> (types) REGION
  SMLoc kindLoc = parser.getCurrentLocation();
  StringRef kindName;
  if (parser.parseKeyword(&kindName))
    return failure();
  std::optional<TraversalKind> kind = symbolizeTraversalKind(kindName);
  if (!kind)
    return parser.emitError(kindLoc, "unknown traversal kind '") << kindName << "'";
  result.addAttribute(getKindAttrName(result.name),
                      TraversalKindAttr::get(parser.getContext(), *kind));

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<OpAsmParser::UnresolvedOperand> inputs;
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
        OpAsmParser::Argument arg;
        OpAsmParser::UnresolvedOperand input;
        if (parser.parseArgument(arg) || parser.parseEqual() || parser.parseOperand(input))
          return failure();
        args.push_back(arg);
        inputs.push_back(input);
        return success();
      }))
    return failure();

  SMLoc typesLoc = parser.getCurrentLocation();
  FunctionType types;
  if (parser.parseOptionalAttrDict(result.attributes) || parser.parseColonType(types))
    return failure();
  if (types.getNumInputs() != inputs.size())
    return parser.emitError(typesLoc)
           << "expected " << inputs.size() << " input types, got " << types.getNumInputs();
  if (parser.resolveOperands(inputs, types.getInputs(), typesLoc, result.operands))
    return failure();
  result.addTypes(types.getResults());
  for (auto [arg, type] : llvm::zip(args, types.getInputs()))
    arg.type = type;
  return parser.parseRegion(*result.addRegion(), args);
}

void TraversalOp::print(OpAsmPrinter &printer) {
  printer << ' ' << stringifyTraversalKind(getKind()) << " (";
  Block &body = getBodyRegion().front();
  llvm::interleaveComma(llvm::zip(body.getArguments(), getInputs()), printer, [&](auto pair) {
    printer.printRegionArgument(std::get<0>(pair), /*argAttrs=*/{}, /*omitType=*/true);
    printer << " = " << std::get<1>(pair);
  });
  printer << ')';
  printer.printOptionalAttrDict((*this)->getAttrs(), {getKindAttrName()});
  printer << " : ";
  printer.printFunctionalType(getInputs().getTypes(), getResultTypes());
  printer << ' ';
  printer.printRegion(getBodyRegion(), /*printEntryBlockArgs=*/false);
}

#define GET_OP_CLASSES
#include "hector/Dialect/HectorOps.cpp.inc"
