//===- Autodiff.cpp - Reverse-mode differentiation of Hector layers -------===//
//
// hector-autodiff: for every layer @L, a layer @L_backward holding the adjoint of each op of
// @L, and the `saved.N` outputs of @L that it reads. The rules are in docs/architecture.md,
// "Automatic differentiation".
//
//===----------------------------------------------------------------------===//
#include "hector/Autodiff/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/TypeSwitch.h"

namespace hector {
#define GEN_PASS_DEF_AUTODIFF
#include "hector/Autodiff/AutodiffPasses.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {

/// The type of the gradient of a value of type `type`: the same type, except that `src` and
/// `dst` rows become `edge` rows (a gradient depends on the whole edge, not on one end).
Type gradType(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    if (value.getSpace() == Space::Src || value.getSpace() == Space::Dst)
      return value.withSpace(Space::Edge);
  return type;
}

/// True when a gradient of type `grad` can stand for a gradient of type `target` (a gradType):
/// equal types, or `src`/`dst` rows for `edge` rows (a gradient known to depend on one end).
bool fits(Type grad, Type target) {
  if (grad == target)
    return true;
  auto g = dyn_cast<ValueType>(grad), t = dyn_cast<ValueType>(target);
  return g && t && t.getSpace() == Space::Edge &&
         (g.getSpace() == Space::Src || g.getSpace() == Space::Dst) && g.getShape() == t.getShape();
}

/// True for weights and for values in the `relation`, `ntype` and `none` spaces: they depend on
/// weights and constants only, so the backward recomputes them from its own weights.
bool isWeightDerived(Type type) {
  auto value = dyn_cast<ValueType>(type);
  if (!value)
    return true;
  Space space = value.getSpace();
  return space == Space::Relation || space == Space::NType || space == Space::None;
}

/// Graph access and head reshapes: always recomputed from their operand, which has no more
/// rows than the result (saving the operand instead of the result never costs more; the
/// operand of a src_row is a weight).
bool isGather(Operation *op) {
  return isa<SrcOp, DstOp, UniqueGatherOp, UniqueExpandOp, SplitHeadsOp, MergeHeadsOp, SrcRowOp>(
      op);
}

/// Cheap ops: O(1) work per element of the result. Their results are recomputed when that
/// needs no saved value beyond those already saved.
bool isCheap(Operation *op) {
  return isGather(op) || op->hasTrait<hector::OpTrait::Elementwise>() ||
         isa<ConstantOp, ConcatOp>(op);
}

/// Why `op` cannot appear in a layer being differentiated, or an empty string when it can.
StringRef unsupportedReason(Operation *op) {
  if (isa<GemmOp, TraversalOp, YieldOp>(op))
    return "is a kernel-level op: run hector-autodiff before the lowering";
  if (isa<WeightGradOp, AggregateGradOp, LeakyReluGradOp, GeluGradOp, NarrowOp, WeightMatmulGradOp,
          WeightDotGradOp, WeightAddOp, SrcRowGradOp>(op))
    return "is a backward op: differentiating a backward layer is not supported";
  if (auto linear = dyn_cast<LinearOp>(op); linear && linear.getTransposed())
    return "is a transposed linear, which only backward layers hold: differentiating a "
           "backward layer is not supported";
  return "";
}

/// Builds the backward layer of one forward layer (see the pass description).
class BackwardBuilder {
public:
  BackwardBuilder(LayerOp forward, LayerOp backward)
      : forward(forward), backward(backward), b(backward.getContext()) {
    b.setInsertionPointToEnd(backward.getBody());
  }

  /// Fills the backward layer and adds the saved outputs to the forward one. Fails (with an
  /// error at the op) when an op whose result has a gradient has no derivative rule.
  LogicalResult run();
  /// Fills the backward layer only, recording the forward values the derivative rules read.
  /// `pinned` then holds the results of expensive ops that must be saved in any case.
  LogicalResult recordDemands();
  /// Values whose saving is unavoidable (see recordDemands), from an earlier builder.
  void setPinned(llvm::DenseSet<Value> values) { pinned = std::move(values); }
  const llvm::DenseSet<Value> &getPinned() const { return pinned; }

private:
  /// Marks the values whose gradient the backward computes: those that depend on an input or
  /// weight and that some output depends on.
  void findNeeded();
  /// The backward's copy of the forward value `value`: an input or weight of the backward, a
  /// recomputation, or a saved activation.
  Value materialize(Value value);
  /// True when the backward can compute `value` without saving another activation.
  bool isAvailable(Value value) const;
  /// Adds `grad` (a type that fits gradType(value)) to the gradient of the forward value `value`.
  void accumulate(Value value, Value grad);
  /// Sums `grad` into the rows and shape of the gradient of a value of type `type`.
  Value reduceTo(Value grad, Type type);
  /// Adds the gradients of the operands of `op` given the gradient `grad` of its result; emits
  /// an error at `op` and fails when no derivative rule covers it.
  LogicalResult differentiate(Operation *op, Value grad);
  /// The two halves of differentiate(): true when a rule covered `op` (see the definitions).
  bool differentiateStructural(Operation *op, Value grad);
  bool differentiateElementwise(Operation *op, Value grad);
  /// src_row of a weight's slice: the weight gets the edges' gradient rows added into their
  /// rows (src_row_grad). False when the table is not a slice (the front end writes no other).
  bool differentiateSrcRow(SrcRowOp row, Value dy);
  /// The gradient of the operand of a forward `hector.reduce` given the gradient `dy` of its
  /// result: `dy` read back on the operand's rows, or null when no rule covers the reduction.
  Value reduceGrad(ReduceOp reduce, Value dy);
  /// The body of run() and recordDemands(): the backward layer's body.
  LogicalResult buildBody();
  /// Declares the backward's inputs in the order of the interface: forward inputs, saved
  /// activations, output gradients.
  void orderInputs();

  /// Binary elementwise op of the backward (extra attributes after the operands); the op
  /// infers its result type (the join of the spaces and the broadcast of the shapes).
  template <typename OpT, typename... Attrs>
  Value binary(Location loc, Value lhs, Value rhs, Attrs... attrs) {
    return b.create<OpT>(loc, lhs, rhs, attrs...);
  }
  Value constant(Location loc, double value) {
    return b.create<ConstantOp>(loc, ValueType::get(b.getContext(), Space::None, {}, -1),
                                b.getF64FloatAttr(value));
  }
  bool wants(Value value) const { return needed.contains(value); }

  LayerOp forward, backward;
  OpBuilder b;
  llvm::DenseSet<Value> needed;
  /// Results of expensive ops that the rules read, directly or through gathers: saved anyway.
  llvm::DenseSet<Value> pinned;
  /// Whether materialize() records the values the rules read into `pinned`.
  bool recording = false;
  /// Nesting depth of materialize() (0: called by a rule).
  int depth = 0;
  /// Forward value -> its copy in the backward.
  llvm::DenseMap<Value, Value> mapped;
  /// Forward value -> its gradient so far.
  llvm::DenseMap<Value, Value> grads;
  /// Saved forward values and the backward inputs that receive them.
  SmallVector<std::pair<Value, InputOp>> saved;
  /// The backward's gradient inputs, in the forward's output order.
  SmallVector<InputOp> gradInputs;
};

void BackwardBuilder::findNeeded() {
  Block &body = *forward.getBody();
  llvm::DenseSet<Value> active, reaches;
  for (Operation &op : body) {
    bool isActive = isa<InputOp, WeightOp>(op) ||
                    llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); });
    if (isActive)
      active.insert(op.getResults().begin(), op.getResults().end());
  }
  for (Operation &op : llvm::reverse(body)) {
    bool isUsed = isa<OutputOp>(op) ||
                  llvm::any_of(op.getResults(), [&](Value v) { return reaches.contains(v); });
    if (isUsed)
      reaches.insert(op.getOperands().begin(), op.getOperands().end());
  }
  for (Value value : active)
    if (reaches.contains(value))
      needed.insert(value);
}

bool BackwardBuilder::isAvailable(Value value) const {
  Operation *def = value.getDefiningOp();
  if (mapped.contains(value) || pinned.contains(value) || isa<InputOp>(def) ||
      isWeightDerived(value.getType()))
    return true;
  return isCheap(def) &&
         llvm::all_of(def->getOperands(), [&](Value operand) { return isAvailable(operand); });
}

Value BackwardBuilder::materialize(Value value) {
  Operation *def = value.getDefiningOp();
  if (recording && depth == 0) {
    // What a rule reads: through gathers, an expensive result it cannot do without.
    Value leaf = value;
    while (!isWeightDerived(leaf.getType()) && isGather(leaf.getDefiningOp()))
      leaf = leaf.getDefiningOp()->getOperand(0);
    Operation *leafDef = leaf.getDefiningOp();
    if (!isa<InputOp>(leafDef) && !isWeightDerived(leaf.getType()) && !isCheap(leafDef))
      pinned.insert(leaf);
  }
  if (Value copy = mapped.lookup(value))
    return copy;
  ++depth;
  auto restore = llvm::make_scope_exit([&] { --depth; });
  Value copy;
  if (auto input = dyn_cast<InputOp>(def)) {
    copy = b.create<InputOp>(input.getLoc(), input.getType(), input.getName());
  } else if (isWeightDerived(value.getType()) || isGather(def) ||
             (isCheap(def) && isAvailable(value))) {
    IRMapping operands;
    for (Value operand : def->getOperands())
      operands.map(operand, materialize(operand));
    copy = b.clone(*def, operands)->getResult(0);
  } else {
    // Named once every saved value is known (in forward order, see run()).
    auto input = b.create<InputOp>(def->getLoc(), cast<ValueType>(value.getType()),
                                   std::string(kSavedPrefix));
    saved.emplace_back(value, input);
    copy = input;
  }
  mapped[value] = copy;
  return copy;
}

void BackwardBuilder::accumulate(Value value, Value grad) {
  assert(fits(grad.getType(), gradType(value.getType())) && "gradient of the wrong type");
  if (!wants(value))
    return;
  auto [it, inserted] = grads.try_emplace(value, grad);
  if (inserted)
    return;
  Location loc = value.getLoc();
  if (isa<WeightType>(grad.getType()))
    it->second = b.create<WeightAddOp>(loc, it->second, grad);
  else
    it->second = binary<AddOp>(loc, it->second, grad);
}

Value BackwardBuilder::reduceTo(Value grad, Type type) {
  Type target = gradType(type);
  if (fits(grad.getType(), target))
    return grad;
  // Keep what is known about src/dst rows when only trailing dimensions are summed.
  auto g = cast<ValueType>(grad.getType());
  auto t = dyn_cast<ValueType>(target);
  if (t && t.getSpace() == Space::Edge &&
      (g.getSpace() == Space::Src || g.getSpace() == Space::Dst))
    target = t.withSpace(g.getSpace());
  // The adjoint of a slice of a reduced gradient: one reduction straight into the weight.
  auto inner = grad.getDefiningOp<ReduceOp>();
  bool single = llvm::count_if(grads, [&](const auto &entry) { return entry.second == grad; }) <= 1;
  if (inner && isa<WeightType>(target) && grad.use_empty() && single) {
    Value input = inner.getInput();
    Location loc = inner.getLoc();
    inner.erase();
    return b.create<ReduceOp>(loc, target, input);
  }
  return b.create<ReduceOp>(grad.getLoc(), target, grad);
}

Value BackwardBuilder::reduceGrad(ReduceOp reduce, Value dy) {
  auto in = cast<ValueType>(reduce.getInput().getType());
  auto out = dyn_cast<ValueType>(reduce.getResult().getType());
  // Only reductions over rows are covered: summed trailing dimensions or rows summed into
  // relation, node-type or unsliced rows would need a broadcast the dialect cannot express.
  if (!out || out.getShape() != in.getShape())
    return Value();
  Location loc = reduce.getLoc();
  Space from = in.getSpace(), to = out.getSpace();
  bool perEdge = from == Space::Src || from == Space::Dst || from == Space::Edge;
  // The same rows, or src/dst rows read as edge rows: the gradient is dy itself.
  if (from == to || (to == Space::Edge && perEdge))
    return dy;
  // Edges summed into their unique pair: every edge reads its pair's gradient.
  if (perEdge && (to == Space::UniqueSrc || to == Space::UniqueDst))
    return b.create<UniqueExpandOp>(loc, dy);
  // Unique pairs summed into their node: every pair reads its node's gradient.
  if (to == Space::Node && (from == Space::UniqueSrc || from == Space::UniqueDst))
    return b.create<UniqueGatherOp>(loc, from == Space::UniqueSrc ? EdgeEnd::Src : EdgeEnd::Dst,
                                    dy);
  return Value();
}

/// The rules of the ops that move rows between spaces, reduce or reshape them, and of the
/// linear maps: false when `op` is none of them (or no rule covers its form).
bool BackwardBuilder::differentiateSrcRow(SrcRowOp row, Value dy) {
  auto slice = row.getInput().getDefiningOp<SliceOp>();
  if (!slice)
    return false;
  Value w = slice.getInput();
  if (wants(w))
    accumulate(w, b.create<SrcRowGradOp>(row.getLoc(), w.getType(), dy));
  return true;
}

bool BackwardBuilder::differentiateStructural(Operation *op, Value dy) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  // Adds the gradient `g` of operand `x`, first summed into x's rows and shape.
  auto give = [&](Value x, Value g) { accumulate(x, reduceTo(g, x.getType())); };
  bool covered = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](SrcOp src) {
        give(src.getInput(), b.create<AggregateOp>(loc, AggregateKind::Sum, dy, EdgeEnd::Src));
      })
      .Case([&](DstOp dst) {
        give(dst.getInput(), b.create<AggregateOp>(loc, AggregateKind::Sum, dy, EdgeEnd::Dst));
      })
      .Case([&](UniqueGatherOp gather) { give(gather.getInput(), dy); })
      .Case([&](UniqueExpandOp expand) { give(expand.getInput(), dy); })
      .Case([&](SliceOp slice) { give(slice.getInput(), dy); })
      .Case([&](SrcRowOp row) { covered = differentiateSrcRow(row, dy); })
      .Case([&](LinearOp linear) {
        Value x = linear.getInput(), w = linear.getWeight();
        if (wants(x))
          give(x, b.create<LinearOp>(loc, dy, materialize(w), /*transposed=*/true));
        if (wants(w))
          give(w, b.create<WeightGradOp>(loc, w.getType(), materialize(x), dy));
      })
      .Case([&](WeightMatmulOp matmul) {
        Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
        if (wants(lhs))
          give(lhs, b.create<WeightMatmulGradOp>(loc, lhs.getType(), /*rhs=*/false, dy,
                                                 materialize(rhs)));
        if (wants(rhs))
          give(rhs, b.create<WeightMatmulGradOp>(loc, rhs.getType(), /*rhs=*/true, dy,
                                                 materialize(lhs)));
      })
      .Case([&](WeightDotOp dot) {
        Value lhs = dot.getLhs(), rhs = dot.getRhs();
        if (wants(lhs))
          give(lhs,
               b.create<WeightDotGradOp>(loc, lhs.getType(), /*rhs=*/false, dy, materialize(rhs)));
        if (wants(rhs))
          give(rhs,
               b.create<WeightDotGradOp>(loc, rhs.getType(), /*rhs=*/true, dy, materialize(lhs)));
      })
      .Case([&](ReduceOp reduce) {
        Value dx = reduceGrad(reduce, dy);
        if (dx)
          give(reduce.getInput(), dx);
        else
          covered = false;
      })
      .Case([&](AggregateOp aggregate) {
        Value x = aggregate.getInput();
        EdgeEnd by = aggregate.getBy();
        Value dx;
        switch (aggregate.getKind()) {
        case AggregateKind::Sum:
          if (by == EdgeEnd::Src)
            dx = b.create<SrcOp>(loc, dy);
          else
            dx = b.create<DstOp>(loc, dy);
          break;
        case AggregateKind::Mean:
          dx = b.create<AggregateGradOp>(loc, AggregateKind::Mean, dy, Value(), by);
          break;
        case AggregateKind::Max:
          dx = b.create<AggregateGradOp>(loc, AggregateKind::Max, dy, materialize(x), by);
          break;
        }
        give(x, dx);
      })
      .Case([&](SoftmaxOp softmax) {
        // ds = alpha * (dalpha - dst(sum_dst(alpha * dalpha)))
        Value alpha = materialize(softmax.getResult());
        Value weighted = binary<MulOp>(loc, alpha, dy);
        Value sum = b.create<AggregateOp>(loc, AggregateKind::Sum, weighted, EdgeEnd::Dst);
        Value perEdge = b.create<DstOp>(loc, sum);
        Value centred = binary<SubOp>(loc, dy, perEdge);
        give(softmax.getInput(), binary<MulOp>(loc, alpha, centred));
      })
      .Case([&](ConcatOp concat) {
        auto dyType = cast<ValueType>(dy.getType());
        int64_t offset = 0;
        for (Value input : concat.getInputs()) {
          RowShape shape = cast<ValueType>(input.getType()).getShape();
          if (wants(input)) {
            auto type = ValueType::get(ctx, dyType.getSpace(), shape);
            give(input, b.create<NarrowOp>(loc, type, dy, b.getI64IntegerAttr(offset)));
          }
          offset += shape.dims.back();
        }
      })
      .Case([&](SplitHeadsOp split) { give(split.getInput(), b.create<MergeHeadsOp>(loc, dy)); })
      .Case([&](MergeHeadsOp merge) {
        Value x = merge.getInput();
        auto type =
            cast<ValueType>(x.getType()).withSpace(cast<ValueType>(dy.getType()).getSpace());
        give(x, b.create<SplitHeadsOp>(loc, type, dy));
      })
      .Default([&](Operation *) { covered = false; });
  return covered;
}

/// The rules of the row-wise arithmetic and activation ops: false when `op` is none of them.
bool BackwardBuilder::differentiateElementwise(Operation *op, Value dy) {
  Location loc = op->getLoc();
  // Adds the gradient `g` of operand `x`, first summed into x's rows and shape.
  auto give = [&](Value x, Value g) { accumulate(x, reduceTo(g, x.getType())); };
  bool covered = true;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](DotOp dot) {
        Value lhs = dot.getLhs(), rhs = dot.getRhs();
        if (wants(lhs))
          give(lhs, binary<MulOp>(loc, dy, materialize(rhs)));
        if (wants(rhs))
          give(rhs, binary<MulOp>(loc, dy, materialize(lhs)));
      })
      .Case([&](AddOp add) {
        if (wants(add.getLhs()))
          give(add.getLhs(), dy);
        if (wants(add.getRhs()))
          give(add.getRhs(), dy);
      })
      .Case([&](SubOp sub) {
        if (wants(sub.getLhs()))
          give(sub.getLhs(), dy);
        if (wants(sub.getRhs())) {
          Value reduced = reduceTo(dy, sub.getRhs().getType());
          accumulate(sub.getRhs(), b.create<NegOp>(loc, reduced));
        }
      })
      .Case([&](MulOp mul) {
        Value lhs = mul.getLhs(), rhs = mul.getRhs();
        if (wants(lhs))
          give(lhs, binary<MulOp>(loc, dy, materialize(rhs)));
        if (wants(rhs))
          give(rhs, binary<MulOp>(loc, dy, materialize(lhs)));
      })
      .Case([&](DivOp div) {
        // y = a / b: da = dy / b, db = -(dy / b) * y.
        Value lhs = div.getLhs(), rhs = div.getRhs();
        Value scaled = binary<DivOp>(loc, dy, materialize(rhs));
        if (wants(lhs))
          give(lhs, scaled);
        if (wants(rhs)) {
          Value product = binary<MulOp>(loc, scaled, materialize(div.getResult()));
          Value reduced = reduceTo(product, rhs.getType());
          accumulate(rhs, b.create<NegOp>(loc, reduced));
        }
      })
      .Case([&](NegOp neg) { give(neg.getInput(), b.create<NegOp>(loc, dy)); })
      .Case([&](ExpOp exp) {
        give(exp.getInput(), binary<MulOp>(loc, dy, materialize(exp.getResult())));
      })
      .Case([&](ReluOp relu) {
        Value x = relu.getInput();
        give(x, binary<LeakyReluGradOp>(loc, dy, materialize(x), b.getF64FloatAttr(0.0)));
      })
      .Case([&](LeakyReluOp relu) {
        Value x = relu.getInput();
        give(x, binary<LeakyReluGradOp>(loc, dy, materialize(x), relu.getSlopeAttr()));
      })
      .Case([&](TanhOp tanh) {
        // dx = dy * (1 - y^2)
        Value y = materialize(tanh.getResult());
        Value slope = binary<SubOp>(loc, constant(loc, 1.0), binary<MulOp>(loc, y, y));
        give(tanh.getInput(), binary<MulOp>(loc, dy, slope));
      })
      .Case([&](SigmoidOp sigmoid) {
        // dx = dy * y * (1 - y)
        Value y = materialize(sigmoid.getResult());
        Value slope = binary<MulOp>(loc, y, binary<SubOp>(loc, constant(loc, 1.0), y));
        give(sigmoid.getInput(), binary<MulOp>(loc, dy, slope));
      })
      .Case([&](SoftplusOp softplus) {
        // dx = dy * sigmoid(x)
        Value x = materialize(softplus.getInput());
        give(softplus.getInput(), binary<MulOp>(loc, dy, b.create<SigmoidOp>(loc, x)));
      })
      .Case([&](GeluOp gelu) {
        Value x = gelu.getInput();
        give(x, binary<GeluGradOp>(loc, dy, materialize(x)));
      })
      .Default([&](Operation *) { covered = false; });
  return covered;
}

LogicalResult BackwardBuilder::differentiate(Operation *op, Value dy) {
  if (differentiateElementwise(op, dy) || differentiateStructural(op, dy))
    return success();
  return op->emitError() << "hector-autodiff: no derivative rule for '" << op->getName()
                         << "' with operand types " << op->getOperandTypes() << " and result type "
                         << op->getResultTypes() << ": its operands' gradients cannot be computed";
}

void BackwardBuilder::orderInputs() {
  SmallVector<Operation *> order;
  for (InputOp input : forward.getBody()->getOps<InputOp>())
    if (Value copy = mapped.lookup(input.getResult()))
      order.push_back(copy.getDefiningOp());
  for (auto &[value, input] : saved)
    order.push_back(input);
  for (InputOp input : gradInputs)
    order.push_back(input);
  Block &body = *backward.getBody();
  for (Operation *op : llvm::reverse(order))
    op->moveBefore(&body.front());
}

LogicalResult BackwardBuilder::recordDemands() {
  recording = true;
  return buildBody();
}

LogicalResult BackwardBuilder::run() {
  if (failed(buildBody()))
    return failure();
  Block &body = *forward.getBody();
  // Name the saved activations in forward order and return them from the forward.
  llvm::sort(saved, [](const auto &a, const auto &b) {
    return a.first.getDefiningOp()->isBeforeInBlock(b.first.getDefiningOp());
  });
  OpBuilder fb = OpBuilder::atBlockEnd(&body);
  for (auto [i, entry] : llvm::enumerate(saved)) {
    std::string name = (kSavedPrefix + Twine(i)).str();
    entry.second.setName(name);
    fb.create<OutputOp>(entry.first.getLoc(), name, entry.first);
  }
  orderInputs();
  return success();
}

LogicalResult BackwardBuilder::buildBody() {
  findNeeded();
  Block &body = *forward.getBody();

  // The backward takes every weight of the forward, in the same order.
  for (WeightOp weight : body.getOps<WeightOp>())
    mapped[weight.getResult()] = b.clone(*weight)->getResult(0);

  // One gradient input per output, seeding the gradient of the output's value.
  SmallVector<OutputOp> outputs(body.getOps<OutputOp>());
  for (OutputOp output : outputs) {
    Value value = output.getValue();
    auto input = b.create<InputOp>(output.getLoc(), cast<ValueType>(gradType(value.getType())),
                                   (kGradPrefix + output.getName()).str());
    gradInputs.push_back(input);
    accumulate(value, input);
  }

  // Reverse sweep: every user of a value comes after it, so its gradient is complete when
  // its defining op is reached.
  for (Operation &op : llvm::reverse(body)) {
    if (op.getNumResults() != 1 || isa<InputOp, WeightOp>(op))
      continue;
    if (Value dy = grads.lookup(op.getResult(0)))
      if (failed(differentiate(&op, dy)))
        return failure();
  }

  // One gradient output per input and weight that some output depends on.
  for (Operation &op : body) {
    if (!isa<InputOp, WeightOp>(op))
      continue;
    Value grad = grads.lookup(op.getResult(0));
    if (!grad)
      continue;
    StringRef name = isa<InputOp>(op) ? cast<InputOp>(op).getName() : cast<WeightOp>(op).getName();
    // The gradient of an input has exactly the input's type.
    Type type = op.getResult(0).getType();
    if (grad.getType() != type)
      grad = b.create<ReduceOp>(op.getLoc(), type, grad);
    b.create<OutputOp>(op.getLoc(), (kGradPrefix + name).str(), grad);
  }
  return success();
}

/// Checks that `layer` can be differentiated; emits an error at the offending op otherwise.
LogicalResult checkDifferentiable(LayerOp layer) {
  for (Operation &op : *layer.getBody()) {
    StringRef reason = unsupportedReason(&op);
    if (!reason.empty())
      return op.emitError() << "hector-autodiff: '" << op.getName() << "' " << reason;
    auto output = dyn_cast<OutputOp>(op);
    if (!output)
      continue;
    if (output.getName().starts_with(kSavedPrefix))
      return output.emitError() << "hector-autodiff: output name '" << output.getName()
                                << "' is reserved for saved activations";
    if (isWeightDerived(output.getValue().getType()))
      return output.emitError() << "hector-autodiff: output '" << output.getName()
                                << "' must be indexed by nodes or edges to be differentiated, "
                                   "got "
                                << output.getValue().getType();
  }
  return success();
}

struct AutodiffPass : public hector::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LayerOp> layers;
    for (LayerOp layer : module.getOps<LayerOp>())
      if (!layer->hasAttr(kBackwardAttrName) && !layer->hasAttr(kForwardAttrName) &&
          !layer->hasAttr(kInferenceOfAttrName))
        layers.push_back(layer);
    // Serial, in the module's order: the checks (the first error stops the pass), the names,
    // and the new layers in the module (the inference copy before the forward changes).
    SmallVector<LayerOp> backwards;
    for (LayerOp layer : layers) {
      if (failed(checkDifferentiable(layer)))
        return signalPassFailure();
      FailureOr<LayerOp> backward = declareDerived(layer, symbols);
      if (failed(backward))
        return signalPassFailure();
      backwards.push_back(*backward);
    }
    // Parallel: each backward body reads and changes only its own forward and backward layer.
    // Diagnostics are ordered by layer, so the report does not depend on the threads.
    ParallelDiagnosticHandler diagnostics(&getContext());
    std::vector<char> failures(layers.size(), 0);
    parallelFor(&getContext(), 0, layers.size(), [&](size_t i) {
      diagnostics.setOrderIDForThread(i);
      failures[i] = failed(buildBackward(layers[i], backwards[i]));
      diagnostics.eraseOrderIDForThread();
    });
    if (llvm::is_contained(failures, 1))
      signalPassFailure();
  }

  /// Inserts the (empty) backward layer of `layer` after it, and its inference copy where
  /// the pass makes one, with the attributes that relate them; fails on a name clash.
  FailureOr<LayerOp> declareDerived(LayerOp layer, SymbolTable &symbols) {
    std::string name = (layer.getSymName() + "_backward").str();
    std::string copyName = (layer.getSymName() + "_inference").str();
    for (const std::string &taken : {name, copyName}) {
      if (taken == copyName && !inference)
        continue;
      if (Operation *clash = symbols.lookup(taken)) {
        (layer.emitError() << "hector-autodiff: cannot name the derived layer @" << taken
                           << ": the symbol exists")
                .attachNote(clash->getLoc())
            << "defined here";
        return failure();
      }
    }
    OpBuilder mb(layer);
    mb.setInsertionPointAfter(layer);
    if (inference) {
      // The layer as it is, before it returns saved activations.
      auto copy = cast<LayerOp>(mb.clone(*layer.getOperation()));
      copy.setSymName(copyName);
      // The copy is the forward's internal twin: none of the forward's hector.* relations
      // (variants, rewrite logs, ...) apply to it.
      for (NamedAttribute attr : llvm::to_vector(copy->getDiscardableAttrs()))
        if (attr.getName().getValue().starts_with("hector."))
          copy->removeDiscardableAttr(attr.getName());
      symbols.insert(copy);
      copy->setAttr(kInferenceOfAttrName, FlatSymbolRefAttr::get(layer.getSymNameAttr()));
      layer->setAttr(kInferenceAttrName, FlatSymbolRefAttr::get(copy.getSymNameAttr()));
    }
    auto backward = mb.create<LayerOp>(layer.getLoc(), name, layer.getParamsAttr());
    symbols.insert(backward);
    backward->setAttr(kForwardAttrName, FlatSymbolRefAttr::get(layer.getSymNameAttr()));
    layer->setAttr(kBackwardAttrName, FlatSymbolRefAttr::get(backward.getSymNameAttr()));
    return backward;
  }

  /// Fills `backward` with the derivative of `layer` and adds the saved outputs to `layer`.
  static LogicalResult buildBackward(LayerOp layer, LayerOp backward) {
    // A first build records which expensive results must be saved in any case, so that
    // the real one recomputes the cheap values that only depend on those. It builds into a
    // scratch layer outside the module.
    OpBuilder detached(layer.getContext());
    auto scratch = detached.create<LayerOp>(
        layer.getLoc(), (backward.getSymName() + ".scratch").str(), DictionaryAttr());
    BackwardBuilder demands(layer, scratch);
    LogicalResult recorded = demands.recordDemands();
    llvm::DenseSet<Value> pinned = demands.getPinned();
    scratch->destroy();
    if (failed(recorded))
      return failure();
    BackwardBuilder builder(layer, backward);
    builder.setPinned(std::move(pinned));
    return builder.run();
  }
};

} // namespace
