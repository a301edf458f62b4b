//===- LowerToKernels.cpp - Inter-operator ops onto the two templates -----===//
//
// Every hector.linear becomes a hector.gemm (its gather fused), the remaining compute ops are
// grouped into hector.traversal regions, and the values that must live in memory between
// kernels are decided here, so that the kernel-level IR shows them as the results of top-level
// ops. The backward ops stay top-level kernels of their own where they are not row-local:
// hector.weight_grad (the GEMM template's outer-product form, its src/dst/unique gathers kept as
// its private operands), hector.reduce into other rows, hector.weight_matmul_grad and
// hector.weight_add. Elementwise work on relation, node-type or unsliced rows that reads such a
// reduction (HGT's gate gradient `sigmoid'(skip) * sum(dh * (m - x))` per type) stays at the
// top level too, on the R, T or 1 rows of its space, together with the weight-space values it
// reads.
//
// A hector.reduce of edge rows into unique pairs (a pair sum) whose input is computed inside a
// traversal becomes the root of a node traversal over the pairs: each pair's edge rows are
// computed and summed in registers, so the E-row input is never stored (RGCN's reordered
// `sum_j norm * x_j` per (destination, relation) pair). A pair sum of a stored value stays a
// kernel of its own (the template's segmented row sum).
//
//===----------------------------------------------------------------------===//
#include "hector/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include <functional>

namespace hector {
#define GEN_PASS_DEF_LOWERTOKERNELS
#include "hector/Transforms/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {

/// Ops a traversal body may hold, except softmax (decomposed before the lowering) and the
/// gradient of a max aggregation (a kernel of its own: it scans each node's edges for the first
/// maximum before it writes any edge row).
bool isTraversalBodyOp(Operation *op) {
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return reduce.isRowLocal() || reduce.isPairSum();
  if (auto grad = dyn_cast<AggregateGradOp>(op))
    return grad.getKind() != AggregateKind::Max;
  return op->hasTrait<hector::OpTrait::TraversalBody>() && !isa<SoftmaxOp>(op);
}

/// Whether `op` is a pair sum (see the file comment).
bool isPairSum(Operation *op) {
  auto reduce = dyn_cast_or_null<ReduceOp>(op);
  return reduce && reduce.isPairSum();
}

/// The kind of kernel a materialised value is computed by, for node traversals the end of the
/// edges it reduces over, and for traversals over unique pairs (edge traversals of compacted
/// rows, node traversals of pair sums) their space.
struct KernelKey {
  TraversalKind kind;
  EdgeEnd by;
  std::optional<Space> pairs = std::nullopt;
  bool operator==(const KernelKey &other) const {
    return kind == other.kind && by == other.by && pairs == other.pairs;
  }
};

class Lowering {
public:
  Lowering(LayerOp layer) : layer(layer) {}

  LogicalResult run() {
    if (failed(checkInput()))
      return failure();
    createGemms();
    fuseAccumulations();
    createWeightGradGathers();
    findWeightSpaceOps();
    if (failed(decideMaterialised()))
      return failure();
    formKernels();
    eraseFusedOps();
    return success();
  }

private:
  LayerOp layer;
  /// Fusible values that live in memory: the roots of the traversals.
  llvm::SetVector<Value> materialised;
  /// Graph-access ops kept at the top level as the fused gathers of a hector.weight_grad.
  llvm::DenseSet<Operation *> gathers;

  /// Elementwise ops on relation, node-type or unsliced rows kept at the top level.
  llvm::DenseSet<Operation *> weightSpaceOps;
  /// Pair sums of stored values, kept as segmented row sums at the top level.
  llvm::DenseSet<Operation *> rowSums;

  /// Ops that traversals fuse.
  bool isFusible(Operation *op) const {
    return isTraversalBodyOp(op) && !gathers.contains(op) && !weightSpaceOps.contains(op) &&
           !rowSums.contains(op);
  }

  /// Whether `value` is a value in `relation`, `ntype` or `none` space (one row per slice).
  static bool isWeightSpace(Value value) {
    auto type = dyn_cast<ValueType>(value.getType());
    if (!type)
      return false;
    Space space = type.getSpace();
    return space == Space::Relation || space == Space::NType || space == Space::None;
  }

  /// Collects the weight-space traversal-body ops that a top-level op reads or that depend on a
  /// reduction into weight-space rows (a hector.reduce that is not row-local), then the
  /// weight-space traversal-body ops they read: all of them are computed once per slice at the
  /// top level instead of in a traversal, which could not store their rows.
  void findWeightSpaceOps() {
    auto candidate = [](Operation *op) {
      return isTraversalBodyOp(op) && op->getNumResults() == 1 && isWeightSpace(op->getResult(0));
    };
    // Weight-space values a top-level op reads (the operand of a linear map of weights, such
    // as a projected relation embedding, or a gradient summed into a weight's slices).
    for (Operation &op : body())
      if (candidate(&op) &&
          llvm::any_of(op.getUsers(), [](Operation *user) { return !isTraversalBodyOp(user); }))
        weightSpaceOps.insert(&op);
    for (Operation &op : body()) {
      if (!candidate(&op) || weightSpaceOps.contains(&op))
        continue;
      bool dependent = llvm::any_of(op.getOperands(), [&](Value operand) {
        Operation *def = operand.getDefiningOp();
        if (auto reduce = dyn_cast_or_null<ReduceOp>(def))
          return !reduce.isRowLocal();
        return def && weightSpaceOps.contains(def);
      });
      if (dependent)
        weightSpaceOps.insert(&op);
    }
    SmallVector<Operation *> work(weightSpaceOps.begin(), weightSpaceOps.end());
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (candidate(def) && weightSpaceOps.insert(def).second)
            work.push_back(def);
    }
  }

  Block &body() { return layer.getBodyRegion().front(); }

  /// True for a value computed inside a traversal (fusible and not materialised).
  bool isInlined(Value value) const {
    Operation *def = value.getDefiningOp();
    return def && isFusible(def) && !materialised.contains(value);
  }

  LogicalResult checkInput() {
    WalkResult result = layer.walk([&](SoftmaxOp op) {
      op.emitError("hector.softmax must be decomposed before the lowering (run "
                   "--hector-decompose-softmax first)");
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// linear(src(x), W) => gemm x, W gather src; linear(x, W) => gemm x, W gather none.
  void createGemms() {
    SmallVector<LinearOp> linears(body().getOps<LinearOp>());
    for (LinearOp linear : linears) {
      OpBuilder b(linear);
      Value a = linear.getInput();
      GemmGather gather = GemmGather::None;
      Operation *def = a.getDefiningOp();
      if (auto src = dyn_cast_or_null<SrcOp>(def)) {
        gather = GemmGather::Src;
        a = src.getInput();
      } else if (auto dst = dyn_cast_or_null<DstOp>(def)) {
        gather = GemmGather::Dst;
        a = dst.getInput();
      } else if (auto unique = dyn_cast_or_null<UniqueGatherOp>(def)) {
        gather = unique.getSide() == EdgeEnd::Src ? GemmGather::UniqueSrc : GemmGather::UniqueDst;
        a = unique.getInput();
      }
      auto gemm = b.create<GemmOp>(linear.getLoc(), linear.getType(), a, linear.getWeight(),
                                   linear.getWeight().getType().getSlicing(), gather,
                                   GemmScatter::Store, linear.getTransposed(), Value());
      linear.getResult().replaceAllUsesWith(gemm.getResult());
      linear.erase();
      if (def && def->use_empty() && isa<SrcOp, DstOp, UniqueGatherOp>(def))
        def->erase();
    }
  }

  /// Whether `gemm` is a kernel of the GEMM template (not a linear map of weight-space rows,
  /// which the glue computes with ATen) with one reader and no accumulator yet.
  static bool isFusibleGemm(GemmOp gemm) {
    return gemm && !gemm.getAcc() && gemm->hasOneUse() &&
           !(gemm.getGather() == GemmGather::None && isWeightSpace(gemm.getA()));
  }

  /// Folds the sums that follow a GEMM into the GEMM, so that they are written into one buffer
  /// instead of each into its own:
  ///
  /// - the sum of a GEMM's rows of unique pairs into their nodes (`reduce(gemm(...) ->
  ///   unique_dst) -> node`, the reordered RGCN's per-relation products) becomes the GEMM's
  ///   `accumulate_dst` (`accumulate_src`) scatter: the [U, out] products are never stored;
  /// - `add(v, gemm(...))` where `v` is another GEMM's result and both have no other reader
  ///   becomes `gemm(...) plus v`: the product is added into `v`'s buffer (RGCN's root term
  ///   into the sum over relations). The GEMM with the plain `store` scatter takes the
  ///   accumulator, so that the sum is formed in the order the addition had.
  void fuseAccumulations() {
    for (ReduceOp reduce : llvm::make_early_inc_range(body().getOps<ReduceOp>())) {
      auto gemm = reduce.getInput().getDefiningOp<GemmOp>();
      auto result = dyn_cast<ValueType>(reduce.getResult().getType());
      if (!gemm || !isFusibleGemm(gemm) || gemm.getScatter() != GemmScatter::Store ||
          gemm.getSegment() != Slicing::Relation || !result || result.getSpace() != Space::Node ||
          result.getShape() != reduce.getInput().getType().getShape())
        continue;
      Space rows = reduce.getInput().getType().getSpace();
      if (rows != Space::UniqueDst && rows != Space::UniqueSrc)
        continue;
      OpBuilder b(gemm); // where the GEMM was: the order of the other kernels stays
      auto fused = b.create<GemmOp>(
          gemm.getLoc(), result, gemm.getA(), gemm.getB(), gemm.getSegment(), gemm.getGather(),
          rows == Space::UniqueDst ? GemmScatter::AccumulateDst : GemmScatter::AccumulateSrc,
          gemm.getTransposeB(), Value());
      reduce.getResult().replaceAllUsesWith(fused.getResult());
      reduce.erase();
      gemm.erase();
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (AddOp add : llvm::make_early_inc_range(body().getOps<AddOp>())) {
        Type type = add.getResult().getType();
        if (add.getLhs().getType() != type || add.getRhs().getType() != type)
          continue;
        auto lhs = add.getLhs().getDefiningOp<GemmOp>();
        auto rhs = add.getRhs().getDefiningOp<GemmOp>();
        if (!lhs || !rhs || lhs == rhs || !lhs->hasOneUse() || !rhs->hasOneUse())
          continue;
        // The GEMM that takes the accumulator: a `store` one where there is a choice.
        auto preferred = [](GemmOp gemm) {
          return isFusibleGemm(gemm) ? (gemm.getScatter() == GemmScatter::Store ? 2 : 1) : 0;
        };
        GemmOp into = rhs, from = lhs;
        if (preferred(lhs) > preferred(rhs))
          std::swap(into, from);
        if (!preferred(into))
          continue;
        // Right after the later of the two GEMMs (both dominate the addition).
        OpBuilder b(add.getContext());
        if (into->isBeforeInBlock(from))
          b.setInsertionPointAfter(from);
        else
          b.setInsertionPoint(into);
        auto fused = b.create<GemmOp>(into.getLoc(), type, into.getA(), into.getB(),
                                      into.getSegment(), into.getGather(), into.getScatter(),
                                      into.getTransposeB(), from.getResult());
        add.getResult().replaceAllUsesWith(fused.getResult());
        add.erase();
        into.erase();
        changed = true;
      }
    }
  }

  /// Gives every hector.weight_grad operand read through `src`, `dst` or `unique_gather` of a
  /// node table its own copy of that graph access, right before it: the weight-gradient GEMM
  /// gathers the node rows itself, so the gathered rows are never materialised.
  void createWeightGradGathers() {
    // A unique_gather left without readers (its reader was dead code) is not a kernel.
    for (UniqueGatherOp unique : llvm::make_early_inc_range(body().getOps<UniqueGatherOp>()))
      if (unique->use_empty())
        unique.erase();
    SmallVector<WeightGradOp> grads(body().getOps<WeightGradOp>());
    for (WeightGradOp grad : grads)
      for (OpOperand &operand : grad->getOpOperands()) {
        Operation *def = operand.get().getDefiningOp();
        if (!isa_and_nonnull<SrcOp, DstOp, UniqueGatherOp>(def))
          continue;
        OpBuilder b(grad);
        Operation *gather = b.clone(*def);
        gathers.insert(gather);
        operand.set(gather->getResult(0));
        if (def->use_empty())
          def->erase();
      }
  }

  /// Calls `visit` on every inlined value of the expression tree of `root` (root included),
  /// operands before users, each once.
  void walkTree(Value root, llvm::function_ref<void(Value)> visit) {
    llvm::DenseSet<Value> seen;
    std::function<void(Value)> go = [&](Value value) {
      if (!seen.insert(value).second)
        return;
      for (Value operand : value.getDefiningOp()->getOperands())
        if (isInlined(operand))
          go(operand);
      visit(value);
    };
    go(root);
  }

  /// Whether the inlined tree of `value` holds an op in `pred`.
  bool treeHas(Value value, llvm::function_ref<bool(Operation *)> pred) {
    bool found = false;
    walkTree(value, [&](Value v) { found |= pred(v.getDefiningOp()); });
    return found;
  }

  static bool isReduction(Operation *op) { return isa<AggregateOp>(op); }
  /// A sum over a row's trailing dimensions (a row-local hector.reduce that sums elements): as
  /// costly as an inner product.
  static bool isRowReduction(Operation *op) {
    auto reduce = dyn_cast<ReduceOp>(op);
    return reduce && reduce.isRowLocal() &&
           reduce.getInput().getType().getDims().size() >
               cast<ValueType>(reduce.getResult().getType()).getDims().size();
  }
  /// Ops whose recomputation costs more than a load: reductions over a row or over edges.
  static bool isExpensive(Operation *op) {
    return isa<AggregateOp, DotOp, ConcatOp>(op) || isRowReduction(op);
  }
  /// Elementwise functions that cost far more than a load per element.
  static bool isTranscendental(Operation *op) {
    return op->hasTrait<hector::OpTrait::Transcendental>();
  }

  /// Whether computing the edge value `value` again costs more than loading it: its tree holds
  /// a reduction over a row. Node values read through an edge end are not counted; the rule for
  /// them decides whether they are stored.
  bool edgeWorkIsExpensive(Value value) {
    bool found = false;
    llvm::DenseSet<Value> seen;
    std::function<void(Value)> go = [&](Value v) {
      if (!seen.insert(v).second)
        return;
      Operation *def = v.getDefiningOp();
      if (isa<SrcOp, DstOp, UniqueExpandOp>(def))
        return;
      found |= isa<DotOp, ConcatOp>(def) || isRowReduction(def);
      for (Value operand : def->getOperands())
        if (isInlined(operand))
          go(operand);
    };
    go(value);
    return found;
  }

  /// The kernel a root value is computed by.
  KernelKey keyOf(Value root) {
    if (isPairSum(root.getDefiningOp()))
      return {TraversalKind::Node, EdgeEnd::Dst, cast<ValueType>(root.getType()).getSpace()};
    if (!isEdgeIndexed(cast<ValueType>(root.getType()).getSpace()))
      if (std::optional<EdgeEnd> end = outerAggregateEnd(root))
        return {TraversalKind::Node, *end};
    Space space = cast<ValueType>(root.getType()).getSpace();
    // Compacted rows are computed by an edge traversal over their pairs, apart from per-edge rows.
    if (space == Space::UniqueSrc || space == Space::UniqueDst)
      return {TraversalKind::Edge, EdgeEnd::Dst, space};
    bool edge = isEdgeIndexed(space);
    return {edge ? TraversalKind::Edge : TraversalKind::Node, EdgeEnd::Dst};
  }

  /// The end of the edges that the outermost aggregate of `root`'s tree reduces over (the first
  /// one reached from the root without passing through another aggregate), or std::nullopt. An
  /// aggregate inside another one's operand is a node value read through an edge end, which
  /// the rules store unless it is in registers: it never decides the traversal's end.
  std::optional<EdgeEnd> outerAggregateEnd(Value root) {
    std::optional<EdgeEnd> end;
    llvm::DenseSet<Value> seen;
    std::function<void(Value)> go = [&](Value v) {
      if (end || !seen.insert(v).second)
        return;
      Operation *def = v.getDefiningOp();
      if (auto agg = dyn_cast<AggregateOp>(def)) {
        end = agg.getBy();
        return;
      }
      for (Value operand : def->getOperands())
        if (isInlined(operand))
          go(operand);
    };
    go(root);
    return end;
  }

  SmallVector<Value> treeValues(Value root) {
    SmallVector<Value> values;
    walkTree(root, [&](Value v) { values.push_back(v); });
    return values;
  }

  /// Adds `value` to the materialised set; true when it was not there.
  bool materialise(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def || !isFusible(def))
      return false;
    return materialised.insert(value);
  }

  /// Seeds the materialised set with every fusible value a top-level op reads (GEMM and
  /// weight-gradient operands, reductions into other rows, outputs) and every pair sum, then
  /// applies the rules of the pass description until nothing changes. A pair sum whose input
  /// is then stored (or is not computed in a traversal) is left to the segmented row sum.
  LogicalResult decideMaterialised() {
    for (Operation &op : body()) {
      if (isFusible(&op)) {
        if (isPairSum(&op))
          materialise(op.getResult(0));
        continue;
      }
      for (Value operand : op.getOperands())
        materialise(operand);
    }
    bool changed = true;
    while (changed) {
      changed = false;
      // How many kernels (roots) inline each value.
      llvm::DenseMap<Value, unsigned> kernels;
      for (Value root : materialised)
        walkTree(root, [&](Value v) {
          if (v != root)
            ++kernels[v];
        });
      for (Value root : SmallVector<Value>(materialised.begin(), materialised.end())) {
        KernelKey key = keyOf(root);
        for (Value v : treeValues(root)) {
          if (v == root)
            continue;
          Operation *def = v.getDefiningOp();
          bool edge = isEdgeIndexed(cast<ValueType>(v.getType()).getSpace());
          bool reduces = treeHas(v, isReduction);
          // A reduction read by several kernels is computed once.
          if (reduces && kernels[v] > 1)
            changed |= materialise(v);
          // An edge value with an inner product read twice (two kernels, or two passes of a
          // node traversal) is stored rather than recomputed.
          if (edge && edgeWorkIsExpensive(v) && (kernels[v] > 1 || !v.hasOneUse()))
            changed |= materialise(v);
          // Aggregates of a node traversal all reduce over the same end of the edges (and a
          // traversal over unique pairs holds none).
          if (auto agg = dyn_cast<AggregateOp>(def))
            if (key.kind == TraversalKind::Edge || key.pairs || agg.getBy() != key.by)
              changed |= materialise(v);
          // A node value read through an edge end: registers hold it only at the node the
          // traversal reduces into; elsewhere a reduction or an inner product is stored.
          Value node;
          EdgeEnd end = EdgeEnd::Src;
          if (auto src = dyn_cast<SrcOp>(def)) {
            node = src.getInput();
            end = EdgeEnd::Src;
          } else if (auto dst = dyn_cast<DstOp>(def)) {
            node = dst.getInput();
            end = EdgeEnd::Dst;
          } else if (auto expand = dyn_cast<UniqueExpandOp>(def)) {
            // Compacted rows read per edge: the same rules, never in registers.
            node = expand.getInput();
            end = EdgeEnd::Src;
          }
          if (node && isInlined(node)) {
            bool inRegisters = key.kind == TraversalKind::Node && !key.pairs && end == key.by &&
                               !isa<UniqueExpandOp>(def);
            if (treeHas(node, isExpensive) && !inRegisters)
              changed |= materialise(node);
            // The functor evaluates a node value read through an edge end once per edge (only
            // a node traversal's own aggregates stay in registers): N rows of exp, tanh,
            // sigmoid or GELU stored once cost less than E rows of them recomputed.
            if (treeHas(node, isTranscendental) && !treeHas(node, isReduction))
              changed |= materialise(node);
          }
        }
      }
    }
    for (Value root : SmallVector<Value>(materialised.begin(), materialised.end())) {
      Operation *def = root.getDefiningOp();
      if (isPairSum(def) && !isInlined(def->getOperand(0))) {
        rowSums.insert(def);
        materialised.remove(root);
      }
    }
    for (Value root : materialised) {
      Space space = cast<ValueType>(root.getType()).getSpace();
      if (space == Space::Relation || space == Space::NType || space == Space::None)
        return root.getDefiningOp()->emitError()
               << "cannot store a value indexed by " << stringifySpace(space)
               << " between kernels; use it inside a node or edge expression";
    }
    return success();
  }

  /// An open group of roots that will become one traversal.
  struct Group {
    KernelKey key;
    SmallVector<Value> roots;
  };

  /// Inlined values and leaves of `root`'s tree.
  void collect(Value root, llvm::SetVector<Operation *> &ops, llvm::SetVector<Value> &leaves) {
    walkTree(root, [&](Value v) {
      Operation *def = v.getDefiningOp();
      ops.insert(def);
      for (Value operand : def->getOperands())
        if (!isInlined(operand))
          leaves.insert(operand);
    });
  }

  /// Walks the block in order, grouping roots of the same kernel kind into one traversal that
  /// is created right before the first op that reads one of its results.
  void formKernels() {
    SmallVector<Group> open;
    auto flushProducerOf = [&](Value value, Operation *before) {
      for (auto it = open.begin(); it != open.end(); ++it)
        if (llvm::is_contained(it->roots, value)) {
          Group group = std::move(*it);
          open.erase(it);
          createTraversal(group, before);
          return;
        }
    };
    SmallVector<Operation *> ops;
    for (Operation &op : body())
      ops.push_back(&op);
    for (Operation *op : ops) {
      if (isFusible(op)) {
        Value root = op->getResult(0);
        if (!materialised.contains(root))
          continue;
        llvm::SetVector<Operation *> treeOps;
        llvm::SetVector<Value> leaves;
        collect(root, treeOps, leaves);
        for (Value leaf : leaves)
          flushProducerOf(leaf, op);
        KernelKey key = keyOf(root);
        auto it = llvm::find_if(open, [&](const Group &g) { return g.key == key; });
        if (it == open.end())
          open.push_back({key, {root}});
        else
          it->roots.push_back(root);
        continue;
      }
      for (Value operand : op->getOperands())
        flushProducerOf(operand, op);
    }
    for (Group &group : open)
      createTraversal(group, nullptr);
  }

  /// Builds the traversal computing `group`'s roots before `before` (or at the block's end).
  void createTraversal(const Group &group, Operation *before) {
    llvm::SetVector<Operation *> treeOps;
    llvm::SetVector<Value> leaves;
    for (Value root : group.roots)
      collect(root, treeOps, leaves);
    // Clone in block order so that operands come first.
    SmallVector<Operation *> ordered(treeOps.begin(), treeOps.end());
    llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

    OpBuilder b(layer.getContext());
    if (before)
      b.setInsertionPoint(before);
    else
      b.setInsertionPointToEnd(&body());
    SmallVector<Type> resultTypes;
    for (Value root : group.roots)
      resultTypes.push_back(root.getType());
    SmallVector<Value> inputs(leaves.begin(), leaves.end());
    auto traversal =
        b.create<TraversalOp>(group.roots.front().getLoc(), resultTypes,
                              TraversalKindAttr::get(b.getContext(), group.key.kind), inputs);
    Block *block = new Block();
    traversal.getBodyRegion().push_back(block);
    IRMapping mapping;
    for (Value input : inputs)
      mapping.map(input, block->addArgument(input.getType(), input.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(block);
    for (Operation *op : ordered)
      inner.clone(*op, mapping);
    SmallVector<Value> yielded;
    for (Value root : group.roots)
      yielded.push_back(mapping.lookup(root));
    inner.create<YieldOp>(traversal.getLoc(), yielded);
    for (auto [root, result] : llvm::zip(group.roots, traversal.getResults()))
      Value(root).replaceAllUsesWith(result);
  }

  /// Removes the original fusible ops, now cloned into traversals.
  void eraseFusedOps() {
    SmallVector<Operation *> fused;
    for (Operation &op : body())
      if (isFusible(&op))
        fused.push_back(&op);
    for (Operation *op : llvm::reverse(fused)) {
      assert(op->use_empty() && "a fused op is still read outside the traversals");
      op->erase();
    }
  }
};

struct LowerToKernelsPass : public hector::impl::LowerToKernelsBase<LowerToKernelsPass> {
  void runOnOperation() override {
    if (failed(Lowering(getOperation()).run()))
      signalPassFailure();
  }
};

} // namespace
