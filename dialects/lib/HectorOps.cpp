//===- HectorOps.cpp - Hector dialect operations ----------------*- C++ -*-===//
//
// Verifiers (spaces, shapes, heads, slicing), the layer builder, the traversal's custom syntax,
// and the small interface hooks of the ops.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/HectorOps.h"
#include "hector/Dialect/LayerRelations.h"
#include "hector/Dialect/Names.h"
#include "hector/Dialect/SpaceRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace hector;

namespace {

/// `name` quoted for a diagnostic: printable ASCII as is, every other byte as \xHH, at most
/// 80 bytes of it (names are data: a hostile one must not garble the terminal or the log).
std::string printableName(StringRef name) {
  std::string out = "'";
  for (size_t i = 0; i < name.size() && i < 80; ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char digits[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  if (name.size() > 80)
    out += "...";
  return out + "'";
}

LogicalResult verifyTensorName(Operation *op, StringRef name) {
  if (name.empty())
    return op->emitOpError("name must not be empty");
  if (!isValidTensorName(name))
    return op->emitOpError() << "name " << printableName(name) << " is not " << kTensorNameRule;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

namespace {
/// A row shape with owned dimensions, for shapes computed by the verifiers.
} // namespace

/// Emits "result type must be EXPECTED, got ACTUAL" unless `actual` is `expected`.
static LogicalResult checkResultType(Operation *op, Type expected, Type actual,
                                     StringRef what = "result") {
  if (expected == actual)
    return success();
  return op->emitOpError() << what << " type must be " << expected << ", got " << actual;
}

/// `value`, or the error `why` on `op` (the reason a shared type rule of HectorTypes.h gave).
template <typename T>
static FailureOr<T> orError(Operation *op, std::optional<T> value, const std::string &why) {
  if (value)
    return *value;
  return op->emitOpError() << why;
}

/// The space of `hector.linear` rows in `space` times a weight of `slicing`; emits an error
/// naming `operand` when the rows cannot select a slice.
static FailureOr<Space> checkedLinearSpace(Operation *op, StringRef operand, Space space,
                                           Slicing slicing) {
  std::string why;
  return orError(op, hector::linearSpace(space, slicing, operand, &why), why);
}

/// The row shape of `x . W` (`x . W^T` with `transposed`). Emits an error naming `operand`.
static FailureOr<OwnedShape> checkedLinearShape(Operation *op, StringRef operand, RowShape x,
                                                RowShape w, bool transposed) {
  std::string why;
  return orError(op, hector::linearShape(x, w, transposed, operand, &why), why);
}

/// The type of `hector.linear` of `x` and `w` (`x . W^T` with `transposed`), with errors naming
/// `operand` (the rows).
static FailureOr<ValueType> checkedLinearType(Operation *op, StringRef operand, ValueType x,
                                              WeightType w, bool transposed = false) {
  std::string why;
  return orError(op, hector::linearType(x, w, transposed, operand, &why), why);
}

/// Emits an error unless `actual` equals `expected` (the shape of `of`), naming `operand`.
static LogicalResult checkSameShape(Operation *op, StringRef operand, RowShape actual,
                                    RowShape expected, StringRef of) {
  if (actual == expected)
    return success();
  return op->emitOpError() << operand << " shape " << formatShape(actual) << " must equal the "
                           << of << " shape " << formatShape(expected);
}

/// Fails with the error `'OP' op MESSAGE...` at `location` when there is one: a result type
/// rule of `OpT` whose operands do not fit.
template <typename OpT, typename... Args>
static LogicalResult inferError(std::optional<Location> location, Args &&...message) {
  return emitOptionalError(location, "'", OpT::getOperationName(), "' op ",
                           std::forward<Args>(message)...);
}

LogicalResult hector::inferElementwiseBinary(StringRef opName, std::optional<Location> location,
                                             Value lhs, Value rhs,
                                             SmallVectorImpl<Type> &inferred) {
  auto l = dyn_cast<ValueType>(lhs.getType());
  auto r = dyn_cast<ValueType>(rhs.getType());
  if (!l || !r) // reported by the operand type constraints
    return failure();
  std::optional<Space> space = joinSpaces(l.getSpace(), r.getSpace());
  if (!space)
    return emitOptionalError(
        location, "'", opName, "' op operands have incompatible index spaces: lhs is ",
        stringifySpace(l.getSpace()), ", rhs is ", stringifySpace(r.getSpace()));
  std::optional<RowShape> shape = broadcastShapes(l.getShape(), r.getShape());
  if (!shape)
    return emitOptionalError(location, "'", opName, "' op operand shapes ",
                             formatShape(l.getShape()), " and ", formatShape(r.getShape()),
                             " do not broadcast (one must be a prefix of the other)");
  inferred.push_back(ValueType::get(lhs.getContext(), *space, *shape));
  return success();
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

LogicalResult LayerOp::verify() {
  if (!isValidLayerName(getSymName()))
    return emitOpError() << "layer name " << printableName(getSymName()) << " is not "
                         << kLayerNameRule;
  return success();
}

/// Emits an error unless `attr` (the value of the layer relation `name` on `layer`) is a
/// FlatSymbolRefAttr naming a layer.
static LogicalResult verifyLayerRef(LayerOp layer, SymbolTableCollection &symbols, StringRef name,
                                    Attribute attr) {
  auto ref = dyn_cast<FlatSymbolRefAttr>(attr);
  if (!ref)
    return layer.emitOpError() << "'" << name << "' must name a layer (@NAME), got " << attr;
  if (!symbols.lookupNearestSymbolFrom<LayerOp>(layer, ref))
    return layer.emitOpError() << "'" << name << "' names " << ref
                               << ", which is not a layer of the module";
  return success();
}

LogicalResult LayerOp::verifySymbolUses(SymbolTableCollection &symbols) {
  for (StringRef name : kLayerRefAttrNames)
    if (Attribute attr = (*this)->getAttr(name))
      if (failed(verifyLayerRef(*this, symbols, name, attr)))
        return failure();
  if (Attribute attr = (*this)->getAttr(kVariantsAttrName)) {
    auto list = dyn_cast<ArrayAttr>(attr);
    if (!list)
      return emitOpError() << "'" << kVariantsAttrName << "' must be a list of layers, got "
                           << attr;
    for (Attribute variant : list)
      if (failed(verifyLayerRef(*this, symbols, kVariantsAttrName, variant)))
        return failure();
  }
  return success();
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
  if (failed(verifyTensorName(*this, getName())))
    return failure();
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
  if (failed(verifyTensorName(*this, getName())))
    return failure();
  return success();
}

void WeightOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(), getName());
}

LogicalResult OutputOp::verify() {
  if (failed(verifyTensorName(*this, getName())))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Graph access, slicing and compaction
//===----------------------------------------------------------------------===//

/// The result type of `OpT`, which keeps its input's row shape: the input's rows in `space`.
/// Fails unless `accepts` the input's space (`expected` names the spaces it takes).
template <typename OpT>
static LogicalResult inferRowsIn(std::optional<Location> location, Value input,
                                 bool (*accepts)(Space), const char *expected, Space space,
                                 SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<ValueType>(input.getType());
  if (!type) // reported by the operand type constraints
    return failure();
  if (!accepts(type.getSpace()))
    return inferError<OpT>(location, "input must be indexed by ", expected, ", got ",
                           stringifySpace(type.getSpace()));
  inferred.push_back(type.withSpace(space));
  return success();
}

/// The result type of `OpT`, which reads node rows per edge end or per unique pair: the
/// input's rows in `space`. Fails unless the input is node-indexed.
template <typename OpT>
static LogicalResult inferEndGather(std::optional<Location> location, Value input, Space space,
                                    SmallVectorImpl<Type> &inferred) {
  return inferRowsIn<OpT>(
      location, input, [](Space s) { return s == Space::Node; }, "nodes (node)", space, inferred);
}

/// The node rows read on every edge through its source: `src` rows.
LogicalResult SrcOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferEndGather<SrcOp>(location, adaptor.getInput(), Space::Src, inferred);
}

/// The node rows read on every edge through its destination: `dst` rows.
LogicalResult DstOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                      Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferEndGather<DstOp>(location, adaptor.getInput(), Space::Dst, inferred);
}

/// The node rows gathered into the unique pairs of the side: `unique_src` or `unique_dst` rows.
LogicalResult UniqueGatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                               Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  Space space = adaptor.getSide() == EdgeEnd::Src ? Space::UniqueSrc : Space::UniqueDst;
  return inferEndGather<UniqueGatherOp>(location, adaptor.getInput(), space, inferred);
}

/// The weight read as a value: its slicing's space (sliceSpace), its shape. Fails when the
/// shape has a head dimension after the first (a value's head dimension is its first).
LogicalResult SliceOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                        Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto weight = dyn_cast<WeightType>(adaptor.getInput().getType());
  if (!weight) // reported by the operand type constraints
    return failure();
  RowShape shape = weight.getShape();
  if (shape.headAxis > 0)
    return inferError<SliceOp>(location,
                               "a weight read as a value needs its head dimension first, got ",
                               formatShape(shape));
  inferred.push_back(ValueType::get(context, sliceSpace(weight.getSlicing()), shape));
  return success();
}

/// The unique pairs' rows read on every edge: the input's rows as `edge` rows. Fails unless the
/// input is indexed by unique pairs.
LogicalResult UniqueExpandOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                               Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = dyn_cast<ValueType>(adaptor.getInput().getType());
  if (!input) // reported by the operand type constraints
    return failure();
  if (input.getSpace() != Space::UniqueSrc && input.getSpace() != Space::UniqueDst)
    return inferError<UniqueExpandOp>(
        location, "input must be indexed by unique pairs (unique_src, unique_dst), got ",
        stringifySpace(input.getSpace()));
  inferred.push_back(input.withSpace(Space::Edge));
  return success();
}

/// The shape of one row of a table of rows `table` (its first dimension the rows): the rest of
/// its dimensions (none: a table of scalars); std::nullopt without dimensions or with a head
/// dimension (a value's head dimension is its first, which here counts the rows).
static std::optional<OwnedShape> tableRowShape(RowShape table) {
  if (table.dims.empty() || table.headAxis >= 0)
    return std::nullopt;
  OwnedShape row;
  row.dims.assign(table.dims.begin() + 1, table.dims.end());
  return row;
}

LogicalResult hector::inferSrcRow(std::optional<Location> location, Value table,
                                  SmallVectorImpl<Type> &inferred) {
  auto type = dyn_cast<ValueType>(table.getType());
  if (!type) // reported by the operand type constraints
    return failure();
  auto fail = [&](const Twine &why) {
    return emitOptionalError(location, "'", SrcRowOp::getOperationName(), "' op ", why);
  };
  Space space = type.getSpace();
  std::optional<Space> result;
  if (space == Space::Relation)
    result = spaces::srcRowSpace<Space>(Slicing::Relation);
  else if (space == Space::None)
    result = spaces::srcRowSpace<Space>(Slicing::None);
  if (!result)
    return fail("input must be a relation-sliced or unsliced weight read as a value (relation "
                "or none), got " +
                stringifySpace(space));
  std::optional<OwnedShape> row = tableRowShape(type.getShape());
  if (!row)
    return fail("input must be a table of rows (at least 1 dimension, no head dimension), got " +
                formatShape(type.getShape()));
  inferred.push_back(ValueType::get(table.getContext(), *result, row->view()));
  return success();
}

LogicalResult SrcRowGradOp::verify() {
  WeightType result = getResult().getType();
  ValueType grad = getGrad().getType();
  if (result.getSlicing() == Slicing::NType)
    return emitOpError("result must be a relation-sliced or unsliced weight, got an "
                       "ntype-sliced one");
  std::optional<OwnedShape> row = tableRowShape(result.getShape());
  if (!row)
    return emitOpError() << "result must be a table of rows (at least 1 dimension, no head "
                            "dimension), got "
                         << formatShape(result.getShape());
  if (grad.getSpace() != Space::Edge && grad.getSpace() != Space::Src &&
      grad.getSpace() != Space::Dst)
    return emitOpError() << "grad must be indexed by edges (edge, src, dst), got "
                         << stringifySpace(grad.getSpace());
  return checkSameShape(*this, "grad", grad.getShape(), row->view(), "result's row");
}

//===----------------------------------------------------------------------===//
// Dense products
//===----------------------------------------------------------------------===//

LogicalResult hector::inferLinear(std::optional<Location> location, LinearOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto x = dyn_cast<ValueType>(adaptor.getInput().getType());
  auto w = dyn_cast<WeightType>(adaptor.getWeight().getType());
  if (!x || !w) // reported by the operand type constraints
    return failure();
  std::string why;
  std::optional<ValueType> type = linearType(x, w, adaptor.getTransposed(), "input", &why);
  if (!type)
    return emitOptionalError(location, "'", LinearOp::getOperationName(), "' op ", why);
  inferred.push_back(*type);
  return success();
}

/// The type of `hector.weight_matmul` of `lhs` and `rhs`, with errors on `op`.
static FailureOr<WeightType> checkedWeightMatmulType(Operation *op, WeightType lhs,
                                                     WeightType rhs) {
  std::string why;
  return orError(op, hector::weightMatmulType(lhs, rhs, &why), why);
}

LogicalResult hector::inferWeightMatmul(std::optional<Location> location,
                                        WeightMatmulOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  auto lhs = dyn_cast<WeightType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<WeightType>(adaptor.getRhs().getType());
  if (!lhs || !rhs) // reported by the operand type constraints
    return failure();
  std::string why;
  std::optional<WeightType> type = weightMatmulType(lhs, rhs, &why);
  if (!type)
    return emitOptionalError(location, "'", WeightMatmulOp::getOperationName(), "' op ", why);
  inferred.push_back(*type);
  return success();
}

/// The type of `hector.weight_dot` of `lhs` and `rhs`, with errors on `op`.
static FailureOr<WeightType> checkedWeightDotType(Operation *op, WeightType lhs, WeightType rhs) {
  std::string why;
  return orError(op, hector::weightDotType(lhs, rhs, &why), why);
}

/// HectorTypes.h's weightDotType of the operands.
LogicalResult WeightDotOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto lhs = dyn_cast<WeightType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<WeightType>(adaptor.getRhs().getType());
  if (!lhs || !rhs) // reported by the operand type constraints
    return failure();
  std::string why;
  std::optional<WeightType> type = weightDotType(lhs, rhs, &why);
  if (!type)
    return inferError<WeightDotOp>(location, why);
  inferred.push_back(*type);
  return success();
}

LogicalResult WeightGradOp::verify() {
  // grad must be what a linear of the input and a weight of the result type produces, except
  // that rows per edge may be in any of the per-edge spaces (src, dst, edge).
  FailureOr<ValueType> expected =
      checkedLinearType(*this, "input", getInput().getType(), getResult().getType());
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

LogicalResult hector::inferDot(std::optional<Location> location, DotOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
  auto lhs = dyn_cast<ValueType>(adaptor.getLhs().getType());
  auto rhs = dyn_cast<ValueType>(adaptor.getRhs().getType());
  if (!lhs || !rhs) // reported by the operand type constraints
    return failure();
  auto error = [&](auto &&...message) {
    return emitOptionalError(location, "'", DotOp::getOperationName(), "' op ", message...);
  };
  std::optional<Space> space = joinSpaces(lhs.getSpace(), rhs.getSpace());
  if (!space)
    return error("operands have incompatible index spaces: lhs is ", stringifySpace(lhs.getSpace()),
                 ", rhs is ", stringifySpace(rhs.getSpace()));
  RowShape shape = lhs.getShape();
  if (shape != rhs.getShape())
    return error("operand shapes must be equal, got lhs ", formatShape(shape), " and rhs ",
                 formatShape(rhs.getShape()));
  if (shape.rank() < 1)
    return error("operands need at least one dimension to contract");
  if (shape.isHead(shape.rank() - 1))
    return error("cannot contract the head dimension of ", formatShape(shape));
  inferred.push_back(
      ValueType::get(lhs.getContext(), *space, RowShape{shape.dims.drop_back(), shape.headAxis}));
  return success();
}

/// Emits an error unless `input` is edge-indexed.
static LogicalResult checkEdgeIndexed(Operation *op, ValueType input) {
  if (isEdgeIndexed(input.getSpace()))
    return success();
  return op->emitOpError() << "input must be indexed by edges (src, dst, edge, unique_*), got "
                           << stringifySpace(input.getSpace());
}

/// The result type of `OpT`, which reduces or normalises edge rows: the input's rows in
/// `space`. Fails unless the input is edge-indexed.
template <typename OpT>
static LogicalResult inferFromEdgeRows(std::optional<Location> location, Value input, Space space,
                                       SmallVectorImpl<Type> &inferred) {
  return inferRowsIn<OpT>(
      location, input, [](Space s) { return isEdgeIndexed(s); }, "edges (src, dst, edge, unique_*)",
      space, inferred);
}

/// The edge rows reduced into their nodes: `node` rows of the input's shape.
LogicalResult AggregateOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                            Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferFromEdgeRows<AggregateOp>(location, adaptor.getInput(), Space::Node, inferred);
}

/// The edge rows normalised per destination: `edge` rows of the input's shape.
LogicalResult SoftmaxOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                          Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  return inferFromEdgeRows<SoftmaxOp>(location, adaptor.getInput(), Space::Edge, inferred);
}

/// The join of the inputs' spaces, their common shape with the sum of their last dimensions.
/// Fails for fewer than two inputs, spaces that do not join, or shapes that differ elsewhere
/// than in a last dimension that is not the head dimension.
LogicalResult ConcatOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                         Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.size() < 2)
    return inferError<ConcatOp>(location, "needs at least two inputs, got ", inputs.size());
  auto first = dyn_cast<ValueType>(inputs.front().getType());
  if (!first) // reported by the operand type constraints
    return failure();
  Space space = first.getSpace();
  RowShape firstShape = first.getShape();
  int64_t lastDim = 0;
  for (auto [i, value] : llvm::enumerate(inputs)) {
    auto type = dyn_cast<ValueType>(value.getType());
    if (!type) // reported by the operand type constraints
      return failure();
    RowShape shape = type.getShape();
    std::optional<Space> joined = joinSpaces(space, type.getSpace());
    if (!joined)
      return inferError<ConcatOp>(location, "input #", i, " in ", stringifySpace(type.getSpace()),
                                  " is incompatible with the index space ", stringifySpace(space),
                                  " of the inputs before it");
    space = *joined;
    if (shape.rank() < 1)
      return inferError<ConcatOp>(location, "input #", i, " needs at least one dimension");
    if (shape.isHead(shape.rank() - 1))
      return inferError<ConcatOp>(location, "input #", i,
                                  " cannot be concatenated along its head dimension, got ",
                                  formatShape(shape));
    if (shape.rank() != firstShape.rank() || shape.headAxis != firstShape.headAxis ||
        shape.dims.drop_back() != firstShape.dims.drop_back())
      return inferError<ConcatOp>(location, "input #", i, " shape ", formatShape(shape),
                                  " must match input #0 shape ", formatShape(firstShape),
                                  " in all but the last dimension");
    lastDim += shape.dims.back();
  }
  OwnedShape shape(firstShape);
  shape.dims.back() = lastDim;
  inferred.push_back(ValueType::get(context, space, shape.view()));
  return success();
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

/// `[Hh, d]` rows as `[H*d]` rows of the same space. Fails unless the input row is `[Hh, d]`.
LogicalResult MergeHeadsOp::inferReturnTypes(MLIRContext *context, std::optional<Location> location,
                                             Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto input = dyn_cast<ValueType>(adaptor.getInput().getType());
  if (!input) // reported by the operand type constraints
    return failure();
  RowShape in = input.getShape();
  if (in.rank() != 2 || !in.isHead(0))
    return inferError<MergeHeadsOp>(location, "input row must be [Hh, d], got ", formatShape(in));
  int64_t merged[] = {in.dims[0] * in.dims[1]};
  inferred.push_back(ValueType::get(context, input.getSpace(), merged, -1));
  return success();
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

/// The gradient's node rows in the space of the aggregated rows they flow back to: `src`/`dst`
/// rows (the aggregation's end) for a mean, `edge` rows for a max. Fails for a gradient that is
/// not node-indexed and for a sum (whose gradient is hector.src/hector.dst).
LogicalResult AggregateGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> location,
                                                Adaptor adaptor, SmallVectorImpl<Type> &inferred) {
  auto grad = dyn_cast<ValueType>(adaptor.getGrad().getType());
  if (!grad) // reported by the operand type constraints
    return failure();
  if (grad.getSpace() != Space::Node)
    return inferError<AggregateGradOp>(location, "grad must be indexed by nodes (node), got ",
                                       stringifySpace(grad.getSpace()));
  Space space = Space::Edge;
  switch (adaptor.getKind()) {
  case AggregateKind::Sum:
    return inferError<AggregateGradOp>(
        location, "the gradient of a sum is hector.src or hector.dst of the gradient");
  case AggregateKind::Mean:
    space = adaptor.getBy() == EdgeEnd::Src ? Space::Src : Space::Dst;
    break;
  case AggregateKind::Max:
    break;
  }
  inferred.push_back(grad.withSpace(space));
  return success();
}

// The result type is inferred; the verifier checks the operand `input` against the kind.
LogicalResult AggregateGradOp::verify() {
  switch (getKind()) {
  case AggregateKind::Sum: // no result type: reported by the inference
    return success();
  case AggregateKind::Mean:
    if (getInput())
      return emitOpError("the gradient of a mean takes no input");
    return success();
  case AggregateKind::Max: {
    if (!getInput())
      return emitOpError("the gradient of a max needs the aggregated input");
    auto input = cast<ValueType>(getInput().getType());
    if (failed(checkEdgeIndexed(*this, input)))
      return failure();
    return checkSameShape(*this, "input", input.getShape(), getGrad().getType().getShape(), "grad");
  }
  }
  llvm_unreachable("unknown aggregate kind");
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
  FailureOr<WeightType> product = getRhs() ? checkedWeightMatmulType(*this, other, result)
                                           : checkedWeightMatmulType(*this, result, other);
  if (failed(product))
    return failure();
  return checkResultType(*this, *product, getGrad().getType(), "grad");
}

LogicalResult WeightDotGradOp::verify() {
  // The forward product of the result and `other`, in operand order, must have grad's type.
  WeightType result = getResult().getType(), other = getOther().getType();
  FailureOr<WeightType> product = getRhs() ? checkedWeightDotType(*this, other, result)
                                           : checkedWeightDotType(*this, result, other);
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
  FailureOr<Space> product = checkedLinearSpace(*this, "a", rows, b.getSlicing());
  if (failed(product))
    return failure();
  FailureOr<OwnedShape> shape =
      checkedLinearShape(*this, "a", a.getShape(), b.getShape(), getTransposeB());
  if (failed(shape))
    return failure();

  ValueType result = getResult().getType();
  if (getAcc() && getAcc().getType() != result)
    return emitOpError() << "acc type " << getAcc().getType() << " must equal the result type "
                         << result;
  auto expect = [&](Space space) {
    return checkResultType(*this, ValueType::get(getContext(), space, shape->view()), result);
  };
  bool perEdge = *product == Space::Src || *product == Space::Dst || *product == Space::Edge;
  switch (getScatter()) {
  case GemmScatter::Store:
    return expect(*product);
  case GemmScatter::AccumulateDst:
  case GemmScatter::AccumulateSrc: {
    // Rows of unique pairs go into their node: the pair's end of the same name.
    Space pairs = getScatter() == GemmScatter::AccumulateDst ? Space::UniqueDst : Space::UniqueSrc;
    if (*product == Space::UniqueSrc || *product == Space::UniqueDst) {
      if (*product != pairs)
        return emitOpError() << "scatter " << stringifyGemmScatter(getScatter()) << " sums rows of "
                             << stringifySpace(pairs) << " pairs, got " << stringifySpace(*product)
                             << " rows";
      if (getSegment() != Slicing::Relation)
        return emitOpError() << "scatter " << stringifyGemmScatter(getScatter())
                             << " of unique pairs needs segment relation (a node has one pair "
                                "per relation), got segment "
                             << stringifySlicing(getSegment());
      return expect(Space::Node);
    }
    if (!perEdge)
      return emitOpError() << "scatter " << stringifyGemmScatter(getScatter())
                           << " needs one row per edge or per unique pair, got "
                           << stringifySpace(*product) << " rows";
    return expect(Space::Node);
  }
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
      return op.emitOpError() << "cannot be in a traversal over " << stringifySpace(*pairs)
                              << " pairs";
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
  result.addTypes(types.getResults());
  for (auto [arg, type] : llvm::zip(args, types.getInputs()))
    arg.type = type;
  // The region first, the operands after: an operand resolved earlier as a forward reference
  // would be satisfied by a value the region defines under the same name, which replaces the
  // reference's uses but not the operand list being built, leaving it dangling (found by
  // fuzzing: a segfault creating the op). Resolved after the region's names are gone, such an
  // operand is an ordinary forward reference, an error if nothing outside defines it.
  if (parser.parseRegion(*result.addRegion(), args))
    return failure();
  return parser.resolveOperands(inputs, types.getInputs(), typesLoc, result.operands);
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
