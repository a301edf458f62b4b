//===- MLIRGen.cpp - Checked layers to Hector IR ----------------*- C++ -*-===//
//
// One Hector op per checked instr, in SSA order; types come from the instr's result fields and
// locations from its source position.
//
//===----------------------------------------------------------------------===//
#include "hector/Compiler/MLIRGen.h"

#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/SmallVector.h"

#include <cmath>
#include <optional>

using namespace mlir;
namespace fe = hector::frontend;

namespace hector {
namespace {

/// The number of operands an instr of `kind` takes; std::nullopt where it is not checked
/// (inputs and weights take none, a concatenation any number).
std::optional<size_t> arityOf(fe::OpKind kind) {
  switch (kind) {
  case fe::OpKind::Input:
  case fe::OpKind::Weight:
  case fe::OpKind::Concat:
    return std::nullopt;
  case fe::OpKind::Constant:
    return 0;
  case fe::OpKind::WeightMatmul:
  case fe::OpKind::Linear:
  case fe::OpKind::Dot:
  case fe::OpKind::Add:
  case fe::OpKind::Sub:
  case fe::OpKind::Mul:
  case fe::OpKind::Div:
    return 2;
  case fe::OpKind::Output:
  case fe::OpKind::Src:
  case fe::OpKind::Dst:
  case fe::OpKind::Slice:
  case fe::OpKind::SrcRow:
  case fe::OpKind::Neg:
#define HECTOR_UNARY_FUNCTION(kind, spelling) case fe::OpKind::kind:
#include "hector/Frontend/UnaryFunctions.def"
  case fe::OpKind::LeakyRelu:
  case fe::OpKind::Aggregate:
  case fe::OpKind::Softmax:
  case fe::OpKind::SplitHeads:
  case fe::OpKind::MergeHeads:
    return 1;
  }
  return std::nullopt; // not a kind: createOp reports it
}

/// Generates the ops of one module; stops at the first broken contract.
class Generator {
public:
  explicit Generator(MLIRContext &context) : context(context), builder(&context) {}

  OwningOpRef<ModuleOp> run(const fe::CheckedModule &checked) {
    OwningOpRef<ModuleOp> module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
    for (const fe::CheckedLayer &layer : checked.layers)
      if (failed(generateLayer(layer)))
        return nullptr;
    return module;
  }

private:
  Location loc(const fe::SourceLoc &source) {
    return FileLineColLoc::get(&context, source.file, source.line, source.col);
  }

  static Space convert(fe::Space space) {
    switch (space) {
    case fe::Space::Node:
      return Space::Node;
    case fe::Space::Src:
      return Space::Src;
    case fe::Space::Dst:
      return Space::Dst;
    case fe::Space::Edge:
      return Space::Edge;
    case fe::Space::UniqueSrc:
      return Space::UniqueSrc;
    case fe::Space::UniqueDst:
      return Space::UniqueDst;
    case fe::Space::Relation:
      return Space::Relation;
    case fe::Space::NType:
      return Space::NType;
    case fe::Space::None:
      return Space::None;
    }
    llvm_unreachable("unknown space");
  }

  static Slicing convert(fe::Slicing slicing) {
    switch (slicing) {
    case fe::Slicing::None:
      return Slicing::None;
    case fe::Slicing::Relation:
      return Slicing::Relation;
    case fe::Slicing::NType:
      return Slicing::NType;
    }
    llvm_unreachable("unknown slicing");
  }

  static AggregateKind convert(fe::AggregateKind kind) {
    switch (kind) {
    case fe::AggregateKind::Sum:
      return AggregateKind::Sum;
    case fe::AggregateKind::Mean:
      return AggregateKind::Mean;
    case fe::AggregateKind::Max:
      return AggregateKind::Max;
    }
    llvm_unreachable("unknown aggregate kind");
  }

  /// The type of an instr's result, or null (after an error) for an ill-formed shape.
  Type resultType(const fe::Instr &instr, Location where) {
    ArrayRef<int64_t> dims = instr.shape.dims;
    int64_t headAxis = instr.shape.headAxis;
    auto emit = [&] { return emitError(where); };
    if (instr.isWeight)
      return WeightType::getChecked(emit, &context, convert(instr.slicing), dims, headAxis);
    return ValueType::getChecked(emit, &context, convert(instr.space), dims, headAxis);
  }

  /// The parameter values as attributes: integral values as i64, others as f64.
  DictionaryAttr paramsAttr(const fe::CheckedLayer &layer) {
    SmallVector<NamedAttribute> entries;
    for (const auto &[name, value] : layer.params) {
      Attribute attr;
      if (std::nearbyint(value) == value && std::fabs(value) < 9.0e15)
        attr = builder.getI64IntegerAttr(static_cast<int64_t>(value));
      else
        attr = builder.getF64FloatAttr(value);
      entries.push_back(builder.getNamedAttr(name, attr));
    }
    return builder.getDictionaryAttr(entries);
  }

  LogicalResult generateLayer(const fe::CheckedLayer &layer) {
    auto op = builder.create<LayerOp>(loc(layer.loc), layer.name, paramsAttr(layer));
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToEnd(op.getBody());
    values.assign(layer.instrs.size(), Value());
    for (auto [index, instr] : llvm::enumerate(layer.instrs))
      if (failed(generateInstr(index, instr)))
        return failure();
    return success();
  }

  /// The value of operand `i` of `instr`, or null after an error.
  Value operand(const fe::Instr &instr, size_t i, size_t index, Location where) {
    if (i >= instr.operands.size()) {
      emitError(where) << "internal error: instr #" << index << " has too few operands";
      return {};
    }
    int source = instr.operands[i];
    if (source < 0 || static_cast<size_t>(source) >= index || !values[source]) {
      emitError(where) << "internal error: instr #" << index << " uses #" << source
                       << ", which does not precede it or has no result";
      return {};
    }
    return values[source];
  }

  LogicalResult generateInstr(size_t index, const fe::Instr &instr) {
    Location where = loc(instr.loc);
    Type type;
    if (instr.kind != fe::OpKind::Output) {
      type = resultType(instr, where);
      if (!type)
        return failure();
    }
    // Operands by position; a null one has already been reported.
    SmallVector<Value> args;
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      Value value = operand(instr, i, index, where);
      if (!value)
        return failure();
      args.push_back(value);
    }
    std::optional<size_t> arity = arityOf(instr.kind);
    if (arity && args.size() != *arity)
      return emitError(where) << "internal error: instr #" << index << " has " << args.size()
                              << " operands, expected " << *arity;
    Operation *op = createOp(index, instr, where, type, args);
    if (!op)
      return failure();
    if (op->getNumResults() == 1)
      values[index] = op->getResult(0);
    return success();
  }

  /// Creates `hector.<spelling>`, the op of an elementwise function of UnaryFunctions.def (an
  /// op with the UnaryFunction trait, whose result has its operand's type); null, with an
  /// error, when the dialect has no such op.
  Operation *createUnaryFunction(StringRef spelling, Location where, Type type, Value operand) {
    std::string name = (HectorDialect::getDialectNamespace() + "." + spelling).str();
    std::optional<RegisteredOperationName> op = RegisteredOperationName::lookup(name, &context);
    if (!op || !op->hasTrait<hector::OpTrait::UnaryFunction>()) {
      emitError(where) << "internal error: '" << spelling
                       << "' has no elementwise function op in the Hector dialect";
      return nullptr;
    }
    OperationState state(where, *op);
    state.addOperands(operand);
    state.addTypes(type);
    return builder.create(state);
  }

  /// Creates the op of instr #`index` with result type `type` and operands `args` (as many as
  /// arityOf(instr.kind) says); null, with an error, when that is not possible.
  Operation *createOp(size_t index, const fe::Instr &instr, Location where, Type type,
                      ArrayRef<Value> args) {
    switch (instr.kind) {
    case fe::OpKind::Input:
      return builder.create<InputOp>(where, type, instr.name);
    case fe::OpKind::Weight: {
      std::optional<WeightInit> init =
          instr.init.empty() ? WeightInit::Glorot : symbolizeWeightInit(instr.init);
      if (!init) {
        emitError(where) << "internal error: unknown initialiser '" << instr.init << "'";
        return nullptr;
      }
      return builder.create<WeightOp>(where, type, instr.name, *init);
    }
    case fe::OpKind::Output:
      return builder.create<OutputOp>(where, instr.name, args[0]);
    case fe::OpKind::WeightMatmul:
      return builder.create<WeightMatmulOp>(where, type, args[0], args[1]);
    case fe::OpKind::Src:
      return builder.create<SrcOp>(where, type, args[0]);
    case fe::OpKind::Dst:
      return builder.create<DstOp>(where, type, args[0]);
    case fe::OpKind::Slice:
      return builder.create<SliceOp>(where, type, args[0]);
    case fe::OpKind::SrcRow:
      return builder.create<SrcRowOp>(where, type, args[0]);
    case fe::OpKind::Linear:
      return builder.create<LinearOp>(where, type, args[0], args[1]);
    case fe::OpKind::Dot:
      return builder.create<DotOp>(where, type, args[0], args[1]);
    case fe::OpKind::Add:
      return builder.create<AddOp>(where, type, args[0], args[1]);
    case fe::OpKind::Sub:
      return builder.create<SubOp>(where, type, args[0], args[1]);
    case fe::OpKind::Mul:
      return builder.create<MulOp>(where, type, args[0], args[1]);
    case fe::OpKind::Div:
      return builder.create<DivOp>(where, type, args[0], args[1]);
    case fe::OpKind::Neg:
      return builder.create<NegOp>(where, type, args[0]);
#define HECTOR_UNARY_FUNCTION(kind, spelling)                                                      \
  case fe::OpKind::kind:                                                                           \
    return createUnaryFunction(spelling, where, type, args[0]);
#include "hector/Frontend/UnaryFunctions.def"
    case fe::OpKind::LeakyRelu:
      return builder.create<LeakyReluOp>(where, type, args[0],
                                         builder.getF64FloatAttr(instr.number));
    case fe::OpKind::Constant:
      return builder.create<ConstantOp>(where, type, builder.getF64FloatAttr(instr.number));
    case fe::OpKind::Aggregate:
      return builder.create<AggregateOp>(where, type, convert(instr.aggregate), args[0],
                                         EdgeEnd::Dst);
    case fe::OpKind::Softmax:
      return builder.create<SoftmaxOp>(where, type, args[0]);
    case fe::OpKind::Concat:
      return builder.create<ConcatOp>(where, type, args);
    case fe::OpKind::SplitHeads:
      return builder.create<SplitHeadsOp>(where, type, args[0]);
    case fe::OpKind::MergeHeads:
      return builder.create<MergeHeadsOp>(where, type, args[0]);
    }
    emitError(where) << "internal error: instr #" << index << " has an unknown kind";
    return nullptr;
  }

  MLIRContext &context;
  OpBuilder builder;
  /// The result of every instr of the current layer (null for outputs).
  SmallVector<Value> values;
};

} // namespace

OwningOpRef<ModuleOp> generateModule(MLIRContext &context, const fe::CheckedModule &module) {
  return Generator(context).run(module);
}

} // namespace hector
