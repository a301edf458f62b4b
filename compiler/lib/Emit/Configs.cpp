//===- Configs.cpp - The template instance of each kernel -----------------===//
//
// The configurations of the templates' instances: a GEMM or weight product as a problem of the
// segmented GEMM template, a weight gradient or row-summing reduction as its outer-product form,
// a sum into unique pairs or from them as the traversal template's run sum. Errors name the op.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

using namespace mlir;

namespace hector {
namespace emit {

LinearShape linearShape(WeightType weight, bool transposed) {
  RowShape w = weight.getShape();
  LinearShape s;
  ArrayRef<int64_t> dims = w.dims;
  if (w.headAxis == 0) {
    s.heads = dims[0];
    dims = dims.drop_front();
  }
  int64_t rest = numElements(dims.drop_front());
  s.k = transposed ? rest : dims[0];
  s.n = transposed ? dims[0] : rest;
  return s;
}

FailureOr<GemmConfig> gemmConfig(GemmOp op) {
  GemmConfig c;
  auto a = op.getA().getType();
  WeightType b = op.getB().getType();
  c.transposeB = op.getTransposeB();
  LinearShape ls = linearShape(b, c.transposeB);
  c.heads = ls.heads;
  c.k = ls.k;
  c.n = ls.n;
  c.strideB = b.getSlicing() == Slicing::None ? 0 : numElements(b.getDims());

  // The rows the GEMM iterates over.
  Space rows = a.getSpace();
  switch (op.getGather()) {
  case GemmGather::None:
    break;
  case GemmGather::Src:
    rows = Space::Src;
    c.gather = "g.sortedSrc";
    break;
  case GemmGather::Dst:
    rows = Space::Dst;
    c.gather = "g.sortedDst";
    break;
  case GemmGather::UniqueSrc:
    rows = Space::UniqueSrc;
    c.gather = "g.uniqueSrc";
    break;
  case GemmGather::UniqueDst:
    rows = Space::UniqueDst;
    c.gather = "g.uniqueDst";
    break;
  }
  bool unique = rows == Space::UniqueSrc || rows == Space::UniqueDst;
  std::string uniqueSide = rows == Space::UniqueSrc ? "Src" : "Dst";
  switch (op.getSegment()) {
  case Slicing::Relation:
    // Unique pairs are numbered by relation; edges are grouped by relation through rel_rows
    // (they are stored by destination).
    c.numSegments = "g.numRelations";
    c.segOffsets = unique ? "g.unique" + uniqueSide + "Ptr" : "g.relPtr";
    c.numRows = unique ? "g.numUnique" + uniqueSide : "g.numEdges";
    if (!unique)
      c.rows = "g.relRows";
    break;
  case Slicing::NType:
    // Nodes grouped by type through the type permutation (read and written in node order).
    c.numSegments = "g.numNtypes";
    c.segOffsets = "g.ntypePtr";
    c.numRows = "g.numNodes";
    c.rows = "g.ntypePerm";
    break;
  case Slicing::None:
    c.numSegments = "1";
    if (rows == Space::Node) {
      c.segOffsets = "g.nodeRange";
      c.numRows = "g.numNodes";
    } else if (unique) {
      c.segOffsets = "g.unique" + uniqueSide + "Range";
      c.numRows = "g.numUnique" + uniqueSide;
    } else if (isEdgeIndexed(rows)) {
      c.segOffsets = "g.edgeRange";
      c.numRows = "g.numEdges";
    } else {
      return op.emitError() << "cannot emit a GEMM over rows indexed by " << stringifySpace(rows);
    }
    break;
  }
  switch (op.getScatter()) {
  case GemmScatter::Store:
    // With an accumulator the glue passes its buffer as C.
    if (op.getAcc())
      c.scatterMode = "kAccumulate";
    return c;
  case GemmScatter::AccumulateDst:
  case GemmScatter::AccumulateSrc:
    // Rows of unique pairs into their nodes: one pair per node and relation, so each
    // relation's index is injective (the C buffer starts zeroed or as the accumulator).
    if (unique && op.getSegment() == Slicing::Relation) {
      c.scatterMode = "kAccumulateIndexPerSegment";
      c.scatter = "g.unique" + uniqueSide;
      return c;
    }
    break;
  case GemmScatter::AccumulateUnique:
    break;
  }
  return op.emitError() << "the emitter has no kernel for scatter "
                        << stringifyGemmScatter(op.getScatter()) << " of " << stringifySpace(rows)
                        << " rows (the lowering sums edge rows in traversals)";
}

GemmConfig weightProductConfig(WeightMatmulOp op) {
  GemmConfig c;
  c.weightProduct = true;
  RowShape lhs = op.getLhs().getType().getShape(), rhs = op.getRhs().getType().getShape();
  c.k = lhs.dims.back();
  c.n = numElements(rhs.dims.drop_front());
  bool rhsSliced = op.getRhs().getType().getSlicing() != Slicing::None;
  c.strideB = rhsSliced ? c.k * c.n : 0;
  return c;
}

GemmConfig configOf(const Kernel &kernel) {
  if (auto gemm = dyn_cast<GemmOp>(kernel.op))
    return *gemmConfig(gemm);
  return weightProductConfig(cast<WeightMatmulOp>(kernel.op));
}

/// The rows of the weight-gradient form for rows in `rows` grouped by `into` (a slicing's
/// space: relation, ntype or none), or an error at `op`.
static LogicalResult segmentRows(Operation *op, Space rows, Space into, WeightGradConfig &c) {
  bool edge = rows == Space::Edge || rows == Space::Src || rows == Space::Dst;
  bool unique = rows == Space::UniqueSrc || rows == Space::UniqueDst;
  std::string side = rows == Space::UniqueSrc ? "Src" : "Dst";
  if (into == Space::Relation && (edge || unique)) {
    c.numSegments = "g.numRelations";
    c.segOffsets = edge ? "g.relPtr" : "g.unique" + side + "Ptr";
    c.numRows = edge ? "g.numEdges" : "g.numUnique" + side;
    if (edge)
      c.rows = "g.relRows";
    return success();
  }
  if (into == Space::NType && rows == Space::Node) {
    c.numSegments = "g.numNtypes";
    c.segOffsets = "g.ntypePtr";
    c.numRows = "g.numNodes";
    c.rows = "g.ntypePerm";
    return success();
  }
  if (into == Space::None && (rows == Space::Node || edge || unique)) {
    c.numSegments = "1";
    c.segOffsets = rows == Space::Node ? "g.nodeRange"
                   : edge              ? "g.edgeRange"
                                       : "g.unique" + side + "Range";
    c.numRows = rows == Space::Node ? "g.numNodes" : edge ? "g.numEdges" : "g.numUnique" + side;
    return success();
  }
  return op->emitError() << "cannot emit a sum of rows indexed by " << stringifySpace(rows)
                         << " into rows indexed by " << stringifySpace(into);
}

FailureOr<WeightGradConfig>
weightGradConfig(Operation *op, const llvm::DenseMap<mlir::Value, GatherMarker> &gathers) {
  WeightGradConfig c;
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Type resultType = reduce.getResult().getType();
    Space to = isa<WeightType>(resultType) ? sliceSpace(cast<WeightType>(resultType).getSlicing())
                                           : cast<ValueType>(resultType).getSpace();
    ArrayRef<int64_t> outDims = isa<WeightType>(resultType) ? cast<WeightType>(resultType).getDims()
                                                            : cast<ValueType>(resultType).getDims();
    if (failed(segmentRows(op, reduce.getInput().getType().getSpace(), to, c)))
      return failure();
    c.k = 1;
    c.n = numElements(outDims);
    c.presum = c.n != numElements(reduce.getInput().getType().getDims());
    c.c = reduce.getInput();
    return c;
  }
  auto grad = cast<WeightGradOp>(op);
  WeightType w = grad.getResult().getType();
  LinearShape ls = linearShape(w, /*transposed=*/false);
  c.heads = ls.heads;
  c.k = ls.k;
  c.n = ls.n;
  auto resolve = [&](Value v, std::string &gather) -> Value {
    auto it = gathers.find(v);
    if (it == gathers.end())
      return v;
    gather = it->second.gather;
    return it->second.table;
  };
  std::string gatherA, gatherC;
  c.a = resolve(grad.getInput(), gatherA);
  c.c = resolve(grad.getGrad(), gatherC);
  if (failed(segmentRows(op, grad.getGrad().getType().getSpace(), sliceSpace(w.getSlicing()), c)))
    return failure();
  if (c.rows == "g.ntypePerm" && (!gatherA.empty() || !gatherC.empty()))
    return op->emitError("a per-type weight gradient reads node tables, not gathered rows");
  if (!gatherA.empty())
    c.gatherA = gatherA;
  if (!gatherC.empty())
    c.gatherC = gatherC;
  int64_t aRow = numElements(cast<ValueType>(c.a.getType()).getDims());
  int64_t cRow = numElements(cast<ValueType>(c.c.getType()).getDims());
  if (aRow != c.heads * c.k || cRow != c.heads * c.n)
    return op->emitError() << "the weight gradient's operands have rows of " << aRow << " and "
                           << cRow << " elements; the weight needs " << c.heads * c.k << " and "
                           << c.heads * c.n;
  return c;
}

bool reduceSumsRows(ReduceOp op) {
  Space from = op.getInput().getType().getSpace();
  Space to = isa<WeightType>(op.getResult().getType())
                 ? sliceSpace(cast<WeightType>(op.getResult().getType()).getSlicing())
                 : cast<ValueType>(op.getResult().getType()).getSpace();
  if (from == to)
    return false;
  // Rows of the small spaces are summed in the glue.
  return from != Space::Relation && from != Space::NType && from != Space::None;
}

std::optional<RowSumConfig> rowSumConfig(ReduceOp op) {
  auto result = dyn_cast<ValueType>(op.getResult().getType());
  if (!result)
    return std::nullopt;
  Space from = op.getInput().getType().getSpace(), to = result.getSpace();
  bool edge = from == Space::Edge || from == Space::Src || from == Space::Dst;
  RowSumConfig c;
  if (edge && (to == Space::UniqueSrc || to == Space::UniqueDst)) {
    c.toNodes = false;
    c.csr = to == Space::UniqueSrc ? "g.outRuns()" : "g.inRuns()";
  } else if ((from == Space::UniqueSrc || from == Space::UniqueDst) && to == Space::Node) {
    c.toNodes = true;
    c.csr = from == Space::UniqueSrc ? "g.outRuns()" : "g.inRuns()";
  } else {
    return std::nullopt;
  }
  c.width = numElements(result.getDims());
  c.presum = c.width != numElements(op.getInput().getType().getDims());
  return c;
}

} // namespace emit
} // namespace hector
