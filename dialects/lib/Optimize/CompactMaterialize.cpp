//===- CompactMaterialize.cpp - Compact materialisation -------------------===//
//
// hector-compact-materialize: edge values that depend only on one end of the edge and its
// relation are computed once per unique (node, relation) pair and read through the pairs'
// inverse index, where the cost policy says it pays.
//
//===----------------------------------------------------------------------===//
#include "Sites.h"

#include "hector/Dialect/HectorDialect.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace hector;

namespace {

/// What an edge value depends on: bits of the edge's source node, destination node, relation,
/// or anything else (edge data, reductions, softmax).
enum Dependence : unsigned { OnSrc = 1, OnDst = 2, OnRelation = 4, OnOther = 8 };

/// The kinds of op recomputed per unique pair: products, elementwise ops and head reshapes of
/// the traversal body.
bool isPairwiseKind(OperationName name) {
  return name.hasTrait<hector::OpTrait::Elementwise>() ||
         llvm::is_contained({LinearOp::getOperationName(), DotOp::getOperationName(),
                             ConcatOp::getOperationName(), SplitHeadsOp::getOperationName(),
                             MergeHeadsOp::getOperationName()},
                            name.getStringRef());
}

/// Ops recomputed per unique pair (a transposed linear map is a backward op: never).
bool isPairwise(Operation *op) {
  return isPairwiseKind(op->getName()) &&
         !(isa<LinearOp>(op) && cast<LinearOp>(op).getTransposed());
}

/// The dependence of every value of a layer, computed on demand.
class DependenceAnalysis {
public:
  unsigned of(Value value) {
    if (auto it = cache.find(value); it != cache.end())
      return it->second;
    unsigned result = compute(value);
    cache[value] = result;
    return result;
  }

private:
  unsigned compute(Value value) {
    Space space = cast<ValueType>(value.getType()).getSpace();
    if (space == Space::Relation)
      return OnRelation;
    if (space == Space::None)
      return 0;
    Operation *def = value.getDefiningOp();
    if (isa<SrcOp>(def))
      return OnSrc;
    if (isa<DstOp>(def))
      return OnDst;
    if (auto expand = dyn_cast<UniqueExpandOp>(def))
      return (spaceOfValue(expand.getInput()) == Space::UniqueSrc ? OnSrc : OnDst) | OnRelation;
    if (!isEdgeIndexed(space) || !isPairwise(def))
      return OnOther;
    unsigned result = 0;
    for (Value operand : def->getOperands()) {
      if (isa<WeightType>(operand.getType())) {
        if (cast<WeightType>(operand.getType()).getSlicing() == Slicing::Relation)
          result |= OnRelation;
        continue;
      }
      result |= of(operand);
    }
    return result;
  }

  static Space spaceOfValue(Value value) { return cast<ValueType>(value.getType()).getSpace(); }

  llvm::DenseMap<Value, unsigned> cache;
};

/// Compacts a maximal edge value depending only on (`side` node, relation).
struct CompactValue : public SitePattern {
  CompactValue(MLIRContext *context, StringRef opName, EdgeEnd side, const CostPolicy &policy,
               RewriteLog *log)
      : SitePattern(opName, context, policy, log), side(side) {}

  EdgeEnd side;

  unsigned onSide() const { return side == EdgeEnd::Src ? OnSrc : OnDst; }
  Space uniqueSpace() const { return side == EdgeEnd::Src ? Space::UniqueSrc : Space::UniqueDst; }

  /// True when `value` is computed from the side's node, the relation and constants only,
  /// with some per-edge work (not a bare gather).
  bool isCandidate(Value value, DependenceAnalysis &deps) const {
    Operation *def = value.getDefiningOp();
    if (!def || !isPairwise(def))
      return false;
    Space space = cast<ValueType>(value.getType()).getSpace();
    if (space != Space::Src && space != Space::Dst && space != Space::Edge)
      return false;
    unsigned dep = deps.of(value);
    return (dep & onSide()) && !(dep & ~(onSide() | OnRelation));
  }

  LogicalResult check(Operation *op, PatternRewriter &rewriter) const override {
    if (op->getNumResults() != 1 || !isa<ValueType>(op->getResult(0).getType()))
      return failure();
    DependenceAnalysis deps;
    Value value = op->getResult(0);
    if (!isCandidate(value, deps))
      return failure();
    // A root: read by something that is not itself computed per pair on this side.
    bool root = llvm::any_of(value.getUsers(), [&](Operation *user) {
      return user->getNumResults() != 1 || !isa<ValueType>(user->getResult(0).getType()) ||
             !isCandidate(user->getResult(0), deps);
    });
    if (!root)
      return failure();
    if (cast<ValueType>(value.getType()).getSpace() != Space::Edge)
      return rewriter.notifyMatchFailure(
          op, "the value depends on the node only: it belongs at node level, not per pair");
    if (!(deps.of(value) & OnRelation))
      return rewriter.notifyMatchFailure(op, "the value does not depend on the relation");
    return success();
  }

  /// The result type of `copy`, the op defining `value` recomputed on pair rows: inferred from
  /// its pair-row operands where the op infers its type, else (split_heads, whose head count
  /// is its own) `value`'s type in the pair space.
  Type pairRowType(Operation *copy, Value value) const {
    if (auto infer = dyn_cast<InferTypeOpInterface>(copy)) {
      SmallVector<Type, 1> inferred;
      if (succeeded(infer.inferReturnTypes(copy->getContext(), copy->getLoc(), copy->getOperands(),
                                           copy->getAttrDictionary(), copy->getPropertiesStorage(),
                                           copy->getRegions(), inferred)))
        return inferred.front();
    }
    return inSpace(value.getType(), uniqueSpace());
  }

  /// The value on unique pairs equal to `value` (a candidate, a gather of the side, or a
  /// weight-like value), building the ops before `rewriter`'s insertion point.
  Value compacted(Value value, PatternRewriter &rewriter,
                  llvm::DenseMap<Value, Value> &mapped) const {
    if (Value known = mapped.lookup(value))
      return known;
    Space space = cast<ValueType>(value.getType()).getSpace();
    if (space == Space::Relation || space == Space::None || space == uniqueSpace())
      return value;
    Operation *def = value.getDefiningOp();
    Value result;
    if (isa<SrcOp, DstOp>(def)) {
      Value node = def->getOperand(0);
      // Reuse a gather of the same node table if there is one.
      for (Operation *user : node.getUsers())
        if (auto gather = dyn_cast<UniqueGatherOp>(user);
            gather && gather.getSide() == side &&
            gather->getBlock() == rewriter.getInsertionBlock() &&
            gather->isBeforeInBlock(&*rewriter.getInsertionPoint()))
          result = gather;
      if (!result)
        result = rewriter.create<UniqueGatherOp>(def->getLoc(), side, node);
    } else if (auto expand = dyn_cast<UniqueExpandOp>(def)) {
      result = expand.getInput();
    } else {
      IRMapping operands;
      for (Value operand : def->getOperands())
        operands.map(operand, isa<WeightType>(operand.getType())
                                  ? operand
                                  : compacted(operand, rewriter, mapped));
      Operation *copy = rewriter.clone(*def, operands);
      copy->getResult(0).setType(pairRowType(copy, value));
      result = copy->getResult(0);
    }
    mapped[value] = result;
    return result;
  }

  std::string apply(Operation *op, PatternRewriter &rewriter) const override {
    rewriter.setInsertionPoint(op);
    llvm::DenseMap<Value, Value> mapped;
    Value value = op->getResult(0);
    Value pairs = compacted(value, rewriter, mapped);
    Value expanded = rewriter.create<UniqueExpandOp>(op->getLoc(), pairs);
    rewriter.replaceAllUsesWith(value, expanded);
    std::string text;
    llvm::raw_string_ostream os(text);
    os << "on " << stringifySpace(uniqueSpace()) << " rows (" << mapped.size()
       << " ops), read through unique_expand";
    return text;
  }
};

} // namespace

unsigned hector::compactMaterialize(LayerOp layer, const CostPolicy &policy, RewriteLog *log) {
  MLIRContext *context = layer.getContext();
  RewritePatternSet patterns(context);
  // Every kind of op that compaction recomputes per unique pair roots a site.
  for (RegisteredOperationName name : context->getRegisteredOperations())
    if (name.getDialectNamespace() == HectorDialect::getDialectNamespace() && isPairwiseKind(name))
      for (EdgeEnd side : {EdgeEnd::Src, EdgeEnd::Dst})
        patterns.add<CompactValue>(context, name.getStringRef(), side, policy, log);
  return applySites(layer, patterns, log);
}
