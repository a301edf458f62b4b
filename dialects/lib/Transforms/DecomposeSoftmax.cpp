//===- DecomposeSoftmax.cpp - softmax => max, exp, sum, divide ------------===//
//
// Rewrites every hector.softmax into its numerically stable definition from aggregates, so
// that the lowering sees only reductions and elementwise ops.
//
//===----------------------------------------------------------------------===//
#include "hector/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace hector {
#define GEN_PASS_DEF_DECOMPOSESOFTMAX
#include "hector/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {

struct DecomposeSoftmaxPass : public hector::impl::DecomposeSoftmaxBase<DecomposeSoftmaxPass> {
  void runOnOperation() override {
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp op : softmaxes)
      decompose(op);
  }

  /// a = softmax(s) => ex = exp(s - dst(max(s))); a = ex / dst(sum(ex)). A score that depends
  /// only on the destination node (dst space) is the same on all of a node's edges: the
  /// quotient, 1 / in-degree, stays in the dst space and is retyped as edge rows at the end.
  static void decompose(SoftmaxOp op) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value s = op.getInput();
    auto sType = cast<ValueType>(s.getType());
    ValueType edgeType = sType.withSpace(Space::Edge);

    Value max = b.create<AggregateOp>(loc, AggregateKind::Max, s, EdgeEnd::Dst);
    Value maxAtDst = b.create<DstOp>(loc, max);
    // An edge-indexed space joins dst into edge, or stays dst (the ops infer it).
    Value diff = b.create<SubOp>(loc, s, maxAtDst);
    Value ex = b.create<ExpOp>(loc, diff);
    Value den = b.create<AggregateOp>(loc, AggregateKind::Sum, ex, EdgeEnd::Dst);
    Value denAtDst = b.create<DstOp>(loc, den);
    Value alpha = b.create<DivOp>(loc, ex, denAtDst);
    if (cast<ValueType>(alpha.getType()).getSpace() != Space::Edge)
      alpha = b.create<ReduceOp>(loc, edgeType, alpha);
    op.getResult().replaceAllUsesWith(alpha);
    op.erase();
  }
};

} // namespace
