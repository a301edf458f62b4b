//===- ReorderLinear.cpp - Linear-operator reordering ---------------------===//
//
// hector-reorder-linear: associativity sites turned into weight products, and RGCN-style
// aggregate-then-transform, each applied where the cost policy says it pays.
//
//===----------------------------------------------------------------------===//
#include "Sites.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace hector;

namespace {

/// The result type of `x . W` for a weight that is not per head (`[k, m...]` with its head
/// dimension, if any, right after k); nullopt otherwise.
std::optional<ValueType> linearResult(ValueType x, WeightType w) {
  if (w.getShape().headAxis == 0)
    return std::nullopt;
  return linearType(x, w);
}

/// The op that a linear's input goes through to reach `value`'s producer: `src`/`dst` gathers
/// are looked through (they commute with row-wise products).
Value throughGather(Value value) {
  if (Operation *def = value.getDefiningOp(); def && isa<SrcOp, DstOp>(def))
    return def->getOperand(0);
  return value;
}

/// True for the elementwise ops that stop a reassociation (nothing affine or non-linear is
/// moved across).
bool isNonLinear(Operation *op) {
  return op && (op->hasTrait<hector::OpTrait::Elementwise>() ||
                isa<SoftmaxOp, ConcatOp, SplitHeadsOp, MergeHeadsOp>(op));
}

/// Rewrites `(x W) . a` into `x (W a)`: `dot(slice(a), linear(x, W)) => linear(x, P)` with
/// `P = weight_dot(W, a)` (`weight_matmul` when `a` is a plain vector).
struct DotOfLinear : public OpSitePattern<DotOp> {
  using OpSitePattern::OpSitePattern;

  /// The (slice, linear) operands of a site.
  static std::pair<SliceOp, Value> split(DotOp op) {
    if (auto slice = op.getLhs().getDefiningOp<SliceOp>())
      return {slice, op.getRhs()};
    if (auto slice = op.getRhs().getDefiningOp<SliceOp>())
      return {slice, op.getLhs()};
    return {SliceOp(), Value()};
  }

  LogicalResult checkSite(DotOp op, PatternRewriter &rewriter) const override {
    auto [slice, other] = split(op);
    if (!slice)
      return failure();
    auto linear = other.getDefiningOp<LinearOp>();
    if (!linear) {
      if (isNonLinear(other.getDefiningOp()))
        return rewriter.notifyMatchFailure(op, [&](Diagnostic &diag) {
          diag << "'" << other.getDefiningOp()->getName()
               << "' between the weight and the linear is not linear";
        });
      return failure();
    }
    if (linear.getTransposed())
      return rewriter.notifyMatchFailure(op, "the linear is transposed");
    WeightType w = linear.getWeight().getType(), a = slice.getInput().getType();
    if (w.getShape().headAxis == 0)
      return rewriter.notifyMatchFailure(
          op, "a per-head weight [Hh, k, m] times a vector is not a weight product of the "
              "dialect");
    if (!productSlicing(w.getSlicing(), a.getSlicing()))
      return rewriter.notifyMatchFailure(op, "the weights are sliced differently");
    FailureOr<WeightType> product = productType(w, a);
    if (failed(product))
      return rewriter.notifyMatchFailure(op, "the weight product has no legal shape");
    std::optional<ValueType> result = linearResult(linear.getInput().getType(), *product);
    if (!result || *result != op.getResult().getType())
      return rewriter.notifyMatchFailure(op, "the reordered product would change the result "
                                             "type");
    return success();
  }

  /// The type of the weight product: weight_matmul for a plain vector, weight_dot otherwise
  /// (the two agree on a plain vector); W needs dimensions before a's.
  static FailureOr<WeightType> productType(WeightType w, WeightType a) {
    if (w.getShape().rank() <= a.getShape().rank())
      return failure();
    if (std::optional<WeightType> type = weightDotType(w, a))
      return *type;
    return failure();
  }

  std::string applySite(DotOp op, PatternRewriter &rewriter) const override {
    auto [slice, other] = split(op);
    auto linear = other.getDefiningOp<LinearOp>();
    Value w = linear.getWeight(), a = slice.getInput();
    Location loc = op.getLoc();
    Value product;
    bool vector = slice.getInput().getType().getShape().rank() == 1 &&
                  !slice.getInput().getType().getShape().hasHeads();
    rewriter.setInsertionPoint(op);
    if (vector)
      product = rewriter.create<WeightMatmulOp>(loc, w, a);
    else
      product = rewriter.create<WeightDotOp>(loc, w, a);
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getResult().getType(), linear.getInput(), product,
                                          /*transposed=*/false);
    return "dot(" + describe(a) + ", linear(x, " + describe(w) + ")) => linear(x, " +
           (vector ? "weight_matmul(" : "weight_dot(") + describe(w) + ", " + describe(a) + "))";
  }

  /// The name of a weight for the log: its declared name, or `product`.
  static std::string describe(Value weight) {
    if (auto decl = weight.getDefiningOp<WeightOp>())
      return decl.getName().str();
    return "product";
  }
};

/// Rewrites `(x A) B` into `x (A B)`: `linear(linear(x, A), B) => linear(x, weight_matmul(A,
/// B))`, also through a `src`/`dst` gather when A is unsliced.
struct LinearOfLinear : public OpSitePattern<LinearOp> {
  using OpSitePattern::OpSitePattern;

  LogicalResult checkSite(LinearOp op, PatternRewriter &rewriter) const override {
    if (op.getTransposed())
      return failure();
    Value input = throughGather(op.getInput());
    bool gathered = input != op.getInput();
    auto inner = input.getDefiningOp<LinearOp>();
    if (!inner) {
      Operation *def = input.getDefiningOp();
      if (isNonLinear(def) && llvm::any_of(def->getOperands(), [](Value v) {
            return v.getDefiningOp<LinearOp>() != nullptr;
          }))
        return rewriter.notifyMatchFailure(op, [&](Diagnostic &diag) {
          diag << "'" << def->getName() << "' between the linears is not linear";
        });
      return failure();
    }
    if (inner.getTransposed())
      return rewriter.notifyMatchFailure(op, "the inner linear is transposed");
    WeightType a = inner.getWeight().getType(), b = op.getWeight().getType();
    if (gathered && a.getSlicing() != Slicing::None)
      return rewriter.notifyMatchFailure(
          op, "the inner weight is sliced by node type, which edge rows cannot select");
    std::optional<WeightType> product = weightMatmulType(a, b);
    if (!product)
      return rewriter.notifyMatchFailure(op, "the weights' shapes, heads or slicings forbid "
                                             "their product");
    ValueType x = inner.getInput().getType();
    if (gathered)
      x = x.withSpace(spaceOf(op.getInput()));
    std::optional<ValueType> result = linearResult(x, *product);
    if (!result || *result != op.getResult().getType())
      return rewriter.notifyMatchFailure(op, "the reordered product would change the result "
                                             "type");
    return success();
  }

  static Space spaceOf(Value value) { return cast<ValueType>(value.getType()).getSpace(); }

  std::string applySite(LinearOp op, PatternRewriter &rewriter) const override {
    Value input = throughGather(op.getInput());
    Operation *gather = input != op.getInput() ? op.getInput().getDefiningOp() : nullptr;
    auto inner = input.getDefiningOp<LinearOp>();
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value product = rewriter.create<WeightMatmulOp>(loc, inner.getWeight(), op.getWeight());
    Value x = inner.getInput();
    if (gather) {
      if (isa<SrcOp>(gather))
        x = rewriter.create<SrcOp>(gather->getLoc(), x);
      else
        x = rewriter.create<DstOp>(gather->getLoc(), x);
    }
    rewriter.replaceOpWithNewOp<LinearOp>(op, op.getResult().getType(), x, product,
                                          /*transposed=*/false);
    std::string end = gather ? (isa<SrcOp>(gather) ? "src" : "dst") : "";
    std::string wrap = gather ? end + "(linear(h, " : "linear(linear(x, ";
    return wrap + DotOfLinear::describe(inner.getWeight()) + ")" + (gather ? ")" : "") + ", " +
           DotOfLinear::describe(op.getWeight()) + ") => linear(" +
           (gather ? end + "(h)" : std::string("x")) + ", weight_matmul(" +
           DotOfLinear::describe(inner.getWeight()) + ", " + DotOfLinear::describe(op.getWeight()) +
           "))";
  }
};

/// Aggregate-then-transform: `aggregate sum (c * linear(y, W)) by dst` sums per (destination,
/// relation) pair first and multiplies each pair's sum by W_r once.
struct AggregateOfLinear : public OpSitePattern<AggregateOp> {
  using OpSitePattern::OpSitePattern;

  /// The per-edge scalar factor (or null) and the linear of a site.
  static std::pair<Value, LinearOp> split(AggregateOp op) {
    Value input = op.getInput();
    if (auto linear = input.getDefiningOp<LinearOp>())
      return {Value(), linear};
    if (auto mul = input.getDefiningOp<MulOp>()) {
      if (auto linear = mul.getRhs().getDefiningOp<LinearOp>())
        return {mul.getLhs(), linear};
      if (auto linear = mul.getLhs().getDefiningOp<LinearOp>())
        return {mul.getRhs(), linear};
    }
    return {Value(), LinearOp()};
  }

  LogicalResult checkSite(AggregateOp op, PatternRewriter &rewriter) const override {
    auto [factor, linear] = split(op);
    if (!linear) {
      Operation *def = op.getInput().getDefiningOp();
      if (isNonLinear(def) && llvm::any_of(def->getOperands(), [](Value v) {
            return v.getDefiningOp<LinearOp>() != nullptr;
          }))
        return rewriter.notifyMatchFailure(op, [&](Diagnostic &diag) {
          diag << "'" << def->getName() << "' between the linear and the sum is not linear";
        });
      return failure();
    }
    if (op.getKind() != AggregateKind::Sum || op.getBy() != EdgeEnd::Dst)
      return rewriter.notifyMatchFailure(op, "only a sum by destination is reassociated");
    if (linear.getTransposed())
      return rewriter.notifyMatchFailure(op, "the linear is transposed");
    ValueType y = linear.getInput().getType();
    Space space = y.getSpace();
    if (space != Space::Src && space != Space::Dst && space != Space::Edge)
      return rewriter.notifyMatchFailure(op, "the linear's rows are not per edge");
    Slicing slicing = linear.getWeight().getType().getSlicing();
    if (slicing == Slicing::NType)
      return rewriter.notifyMatchFailure(op, "the weight is sliced by node type");
    if (factor) {
      auto type = cast<ValueType>(factor.getType());
      if (!type.getShape().dims.empty())
        return rewriter.notifyMatchFailure(op, "the per-edge factor is not a scalar");
      if (!isEdgeIndexed(type.getSpace()) && type.getSpace() != Space::None &&
          type.getSpace() != Space::Relation)
        return rewriter.notifyMatchFailure(op, "the factor is not read per edge");
      if (type.getSpace() == Space::UniqueSrc || type.getSpace() == Space::UniqueDst)
        return rewriter.notifyMatchFailure(op, "the factor is per unique pair");
    }
    return success();
  }

  std::string applySite(AggregateOp op, PatternRewriter &rewriter) const override {
    auto [factor, linear] = split(op);
    Location loc = op.getLoc();
    rewriter.setInsertionPoint(op);
    Value rows = linear.getInput();
    if (factor)
      rows = rewriter.create<MulOp>(loc, factor, rows);
    Value weight = linear.getWeight();
    Type resultType = op.getResult().getType();
    std::string name = DotOfLinear::describe(weight);
    std::string scaled = factor ? "c * " : "";
    if (linear.getWeight().getType().getSlicing() == Slicing::None) {
      Value sum = rewriter.create<AggregateOp>(loc, AggregateKind::Sum, rows, EdgeEnd::Dst);
      rewriter.replaceOpWithNewOp<LinearOp>(op, resultType, sum, weight, false);
      return "aggregate sum (" + scaled + "linear(y, " + name +
             ")) by dst => linear(aggregate "
             "sum (" +
             scaled + "y) by dst, " + name + ")";
    }
    Value pairs = rewriter.create<ReduceOp>(loc, inSpace(rows.getType(), Space::UniqueDst), rows);
    Value product = rewriter.create<LinearOp>(loc, pairs, weight, /*transposed=*/false);
    rewriter.replaceOpWithNewOp<ReduceOp>(op, resultType, product);
    return "aggregate sum (" + scaled + "linear(y, " + name +
           ")) by dst => reduce(linear("
           "reduce(" +
           scaled + "y -> unique_dst), " + name + ") -> node)";
  }
};

} // namespace

unsigned hector::reorderLinear(LayerOp layer, const CostPolicy &policy, RewriteLog *log) {
  MLIRContext *context = layer.getContext();
  RewritePatternSet patterns(context);
  patterns.add<DotOfLinear, LinearOfLinear, AggregateOfLinear>(context, policy, log);
  return applySites(layer, patterns, log);
}
