//===- Emitter.cpp - Kernel-level Hector IR to C++/CUDA sources -----------===//
//
// Walks the kernel-level IR and prints: the traversal bodies as functors, the GEMM instances
// as problems of the segmented GEMM template, the host glue (validation, edge permutation,
// kernel calls, TORCH_LIBRARY registration), the CUDA kernels and the manifest. Read-only.
//
//===----------------------------------------------------------------------===//
#include "hector/Emit/Emitter.h"
#include "hector/Emit/CppString.h"

#include "hector/Dialect/LayerRelations.h"
#include "hector/emit/graph_schema.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <string>

using namespace mlir;

namespace hector {
namespace {

//===----------------------------------------------------------------------===//
// Spellings
//===----------------------------------------------------------------------===//

int64_t numElements(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// A C++ identifier for a name of the model (layer, input, weight): other characters become '_'.
std::string identifier(StringRef name) {
  std::string out;
  for (char c : name)
    out.push_back(llvm::isAlnum(c) ? c : '_');
  if (out.empty() || llvm::isDigit(out.front()))
    out.insert(out.begin(), '_');
  return out;
}

/// The library ABI (the manifest's "format" and the `.hector_abi` marker's number): what the
/// runtime must agree on with the emitted glue (runtime/src/model.cpp, kLibraryAbi).
constexpr int kLibraryAbi = 3;

/// The manifest's JSON text; bytes that are not UTF-8 (which verified IR never holds in a name,
/// but an attribute may) become U+FFFD instead of throwing.
std::string manifestText(const nlohmann::ordered_json &manifest) {
  return manifest.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

/// A floating-point literal that round-trips.
std::string literal(double value) { return llvm::formatv("{0:e16}", value).str(); }

/// Rows of a table in `space`, as an expression on the hector::Graph `graph` of the glue.
std::string graphRows(Space space) {
  switch (space) {
  case Space::Node:
    return "graph.numNodes()";
  case Space::Src:
  case Space::Dst:
  case Space::Edge:
    return "graph.numEdges()";
  case Space::UniqueSrc:
    return "graph.numUniqueSrc()";
  case Space::UniqueDst:
    return "graph.numUniqueDst()";
  case Space::Relation:
    return "graph.numRelations()";
  case Space::NType:
    return "graph.numNtypes()";
  case Space::None:
    return "1";
  }
  llvm_unreachable("unknown space");
}

/// The leading dimension of a weight of the given slicing (glue expression; empty for none).
std::string sliceCount(Slicing slicing) {
  switch (slicing) {
  case Slicing::Relation:
    return "graph.numRelations()";
  case Slicing::NType:
    return "graph.numNtypes()";
  case Slicing::None:
    return "";
  }
  llvm_unreachable("unknown slicing");
}

/// `{rows, d0, d1, ...}` for at::empty.
std::string shapeList(StringRef rows, ArrayRef<int64_t> dims) {
  std::string out = "{";
  if (!rows.empty())
    out += rows.str();
  for (int64_t d : dims) {
    if (out.size() > 1)
      out += ", ";
    out += std::to_string(d);
  }
  return out + "}";
}

//===----------------------------------------------------------------------===//
// Layer plan: the top-level ops in order, tensor names, kernel names
//===----------------------------------------------------------------------===//

/// The configuration of one instance of the segmented GEMM template.
struct GemmConfig {
  int64_t heads = 1, k = 0, n = 0;
  bool transposeB = false;
  int64_t strideB = 0;
  /// GraphView expressions (on `g`).
  std::string numSegments, segOffsets, numRows, rows = "nullptr", gather = "nullptr";
  std::string scatterMode = "kStore", scatter = "nullptr", numOutRows = "0";
  std::string scatterPtr = "nullptr", scatterRows = "nullptr";
  /// Weight products read their segment offsets and gather from the kernel's aux arrays.
  bool weightProduct = false;
};

/// What runs one top-level op of the kernel-level IR.
enum class KernelKind {
  Gemm,          ///< hector.gemm: the segmented GEMM template
  WeightProduct, ///< hector.weight_matmul: the GEMM template over weight slices
  Traversal,     ///< hector.traversal: an edge or node traversal
  WeightGrad,    ///< hector.weight_grad, and hector.reduce into coarser rows: the GEMM
                 ///< template's outer-product (weight-gradient) form
  RowSum,        ///< hector.reduce from edges into unique pairs, or from unique pairs into
                 ///< nodes: the traversal template's segmented row sum
  Glue,          ///< O(weights) or O(slices) work done with ATen in the glue: weight-space
                 ///< products and their gradients, reductions that keep the rows, elementwise
                 ///< ops on relation/ntype/unsliced rows
};

struct Kernel {
  Operation *op;
  std::string name;
  KernelKind kind;
};

/// A top-level hector.src / hector.dst / hector.unique_gather: the operand of a weight gradient
/// read through a gather that the kernel fuses.
struct GatherMarker {
  Value table;        ///< the node table read
  std::string gather; ///< the GraphView index array
};

struct LayerPlan {
  LayerOp layer;
  /// The layer's C++ and operator-namespace identifier: its name and a hash of its kernel-level IR,
  /// so that one layer compiled with other parameters loads into the same process.
  std::string id;
  /// Whether this is the library's entry layer (`--entry`, default: the last layer).
  bool entry = false;
  SmallVector<InputOp> inputs;
  SmallVector<WeightOp> weights;
  SmallVector<OutputOp> outputs;
  SmallVector<Kernel> kernels;
  /// The glue's tensor variable of every top-level value.
  llvm::DenseMap<Value, std::string> tensors;
  /// Top-level gathers, fused into the weight gradients that read them.
  llvm::DenseMap<Value, GatherMarker> gathers;
  /// The namespace of the backward layer (for a forward layer with one) or of the forward layer
  /// (for a backward layer); filled in by planModule.
  std::string backwardOf, forwardOf;
  /// The namespace of a forward layer's inference copy, or of the layer an inference copy
  /// copies.
  std::string inference, inferenceOf;
  /// Optimisation variants (hector-variants): the layer as written lists its variants'
  /// namespaces; a variant names the layer's.
  std::string variant, variantOf;
  std::vector<std::string> variants;
  /// The graph structures the layer's kernels and glue read (graph_schema.h), written to the
  /// manifest: the runtime builds them before a call.
  graph_schema::GraphStructureMask structures = 0;
  /// The memory of a call, in elements, as coefficients of N, E, U_src, U_dst, R, T, 1: the
  /// tensors the glue holds at each of its allocation points, and the outputs it returns
  /// (written to the manifest for the runtime's memory estimate).
  std::vector<std::array<double, 7>> memory;
  std::array<double, 7> outputElements{};
};

/// Whether `layer` is derived by hector-autodiff (a backward layer or an inference copy): never
/// an entry, not listed by the loaders.
bool isDerivedLayer(LayerOp layer) {
  return layer->hasAttr(kForwardAttrName) || layer->hasAttr(kInferenceOfAttrName) ||
         layer->hasAttr(kVariantOfAttrName);
}

/// Whether `output` is an activation saved for the backward layer (kept in the graph's
/// internal edge order: it only travels from the forward to the backward kernels).
bool isSavedOutput(OutputOp output) { return output.getName().starts_with("saved."); }
bool isSavedInput(InputOp input) { return input.getName().starts_with("saved."); }

/// The per-head GEMM shape of a weight as a linear map's operand: heads (the weight's leading
/// head dimension, or 1), K and N (N x K when transposed).
struct LinearShape {
  int64_t heads = 1, k = 0, n = 0;
};
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

/// The GEMM configuration of `op`, or an error at its location.
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
      return op.emitError() << "cannot emit a GEMM over rows indexed by "
                            << stringifySpace(rows);
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
      c.numOutRows = "g.numNodes";
      return c;
    }
    break;
  case GemmScatter::AccumulateUnique:
    break;
  }
  return op.emitError() << "the emitter has no kernel for scatter "
                        << stringifyGemmScatter(op.getScatter()) << " of "
                        << stringifySpace(rows)
                        << " rows (the lowering sums edge rows in traversals)";
}

/// The GEMM configuration of a weight product: per slice `C_s = A_s x B_s`, A_s viewed as
/// [M, K], B_s as [K, N] (row-major weights, any head dimension included).
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

/// The configuration of one instance of the weight-gradient (outer-product) form of the GEMM
/// template: per segment s, dB[s] = sum over its rows r of A[gatherA(r)]^T dC[gatherC(r)].
/// A hector.reduce into coarser rows is the same with A a single 1 (K = 1, lda = 0).
struct WeightGradConfig {
  int64_t heads = 1, k = 0, n = 0;
  std::string numSegments, segOffsets, numRows, rows = "nullptr", gatherA = "nullptr",
                                                gatherC = "nullptr";
  /// The tensors read: A (or empty for a reduction: the glue's `one`) and dC.
  Value a, c;
  /// A reduction that also sums trailing dimensions: dC is the input summed down to `n` first.
  bool presum = false;
};

/// The rows of the weight-gradient form for rows in `rows` grouped by `into` (a slicing's
/// space: relation, ntype or none), or an error at `op`.
LogicalResult segmentRows(Operation *op, Space rows, Space into, WeightGradConfig &c) {
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

/// Whether a top-level hector.reduce sums rows (a weight-gradient kernel) rather than only
/// trailing dimensions of each row (glue).
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

/// The configuration of a sum over unique pairs (a run sum of the traversal template): the
/// pairs are the (node, relation) runs of a CSR (`csr`), `inv` names every edge's pair;
/// `toNodes` sums pairs into their nodes, else edges into their pairs.
struct RowSumConfig {
  std::string csr, inv;
  bool toNodes = false;
  /// Elements per output row.
  int64_t width = 0;
  /// The input row has more elements (trailing dimensions to sum first).
  bool presum = false;
};

/// The run sum of a hector.reduce from edge rows into unique pairs, or from unique pairs into
/// nodes; std::nullopt for any other reduce.
std::optional<RowSumConfig> rowSumConfig(ReduceOp op) {
  auto result = dyn_cast<ValueType>(op.getResult().getType());
  if (!result)
    return std::nullopt;
  Space from = op.getInput().getType().getSpace(), to = result.getSpace();
  bool edge = from == Space::Edge || from == Space::Src || from == Space::Dst;
  RowSumConfig c;
  if (edge && (to == Space::UniqueSrc || to == Space::UniqueDst)) {
    c.toNodes = false;
    c.csr = to == Space::UniqueSrc ? "g.outCsr()" : "g.inCsr()";
    c.inv = to == Space::UniqueSrc ? "g.uniqueSrcInv" : "g.uniqueDstInv";
  } else if ((from == Space::UniqueSrc || from == Space::UniqueDst) && to == Space::Node) {
    c.toNodes = true;
    c.csr = from == Space::UniqueSrc ? "g.outCsr()" : "g.inCsr()";
    c.inv = from == Space::UniqueSrc ? "g.uniqueSrcInv" : "g.uniqueDstInv";
  } else {
    return std::nullopt;
  }
  c.width = numElements(result.getDims());
  c.presum = c.width != numElements(op.getInput().getType().getDims());
  return c;
}

FailureOr<WeightGradConfig> weightGradConfig(Operation *op, const LayerPlan &plan) {
  WeightGradConfig c;
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Type resultType = reduce.getResult().getType();
    Space to = isa<WeightType>(resultType)
                   ? sliceSpace(cast<WeightType>(resultType).getSlicing())
                   : cast<ValueType>(resultType).getSpace();
    ArrayRef<int64_t> outDims = isa<WeightType>(resultType)
                                    ? cast<WeightType>(resultType).getDims()
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
    auto it = plan.gathers.find(v);
    if (it == plan.gathers.end())
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

int passesOf(TraversalOp op);
std::optional<Space> pairSumSpaceOf(TraversalOp op);
bool onWeightRows(Operation *op);

std::string kernelName(LayerPlan &plan, size_t index, Operation *op) {
  std::string base = identifier(plan.layer.getSymName()) + "_k" + std::to_string(index) + "_";
  if (auto gemm = dyn_cast<GemmOp>(op); gemm && !onWeightRows(op)) {
    FailureOr<GemmConfig> c = gemmConfig(gemm);
    std::string name = base + "gemm_" + stringifySlicing(gemm.getSegment()).str() + "_g" +
                       stringifyGemmGather(gemm.getGather()).str() + "_s" +
                       stringifyGemmScatter(gemm.getScatter()).str();
    if (gemm.getTransposeB())
      name += "_tb";
    if (gemm.getAcc())
      name += "_acc";
    if (succeeded(c))
      name += "_h" + std::to_string(c->heads) + "_k" + std::to_string(c->k) + "_n" +
              std::to_string(c->n);
    return name;
  }
  if (auto matmul = dyn_cast<WeightMatmulOp>(op)) {
    GemmConfig c = weightProductConfig(matmul);
    RowShape lhs = matmul.getLhs().getType().getShape();
    return base + "wgemm_" + stringifySlicing(matmul.getLhs().getType().getSlicing()).str() +
           "_" + stringifySlicing(matmul.getRhs().getType().getSlicing()).str() + "_m" +
           std::to_string(numElements(lhs.dims.drop_back())) + "_k" + std::to_string(c.k) +
           "_n" + std::to_string(c.n);
  }
  if (isa<WeightGradOp>(op))
    return base + "wgrad";
  if (auto reduce = dyn_cast<ReduceOp>(op))
    return base + (rowSumConfig(reduce) ? "segsum" : "rowsum");
  if (!isa<TraversalOp>(op))
    return base + "glue";
  auto traversal = cast<TraversalOp>(op);
  if (pairSumSpaceOf(traversal))
    return base + "pair_traversal_r" + std::to_string(traversal.getNumResults());
  return base + stringifyTraversalKind(traversal.getKind()).str() + "_traversal_p" +
         std::to_string(passesOf(traversal)) + "_r" + std::to_string(traversal.getNumResults());
}

/// The unique-pair space an edge traversal runs over instead of the edges (every result in
/// unique_src rows, or every result in unique_dst rows: compacted values), or std::nullopt.
std::optional<Space> pairSpaceOf(TraversalOp op) {
  if (op.getKind() != TraversalKind::Edge || op.getNumResults() == 0)
    return std::nullopt;
  Space first = cast<ValueType>(op.getResult(0).getType()).getSpace();
  if (first != Space::UniqueSrc && first != Space::UniqueDst)
    return std::nullopt;
  for (Type type : op.getResultTypes())
    if (cast<ValueType>(type).getSpace() != first)
      return std::nullopt;
  return first;
}

/// The unique-pair space a node traversal runs over instead of the nodes (its body sums edge
/// rows into those pairs: hector.reduce ops that are pair sums), or std::nullopt.
std::optional<Space> pairSumSpaceOf(TraversalOp op) {
  if (op.getKind() != TraversalKind::Node)
    return std::nullopt;
  for (Operation &inner : op.getBodyRegion().front())
    if (auto reduce = dyn_cast<ReduceOp>(inner); reduce && reduce.isPairSum())
      return cast<ValueType>(reduce.getResult().getType()).getSpace();
  return std::nullopt;
}

/// Checks that a traversal's body is printable.
LogicalResult checkTraversal(TraversalOp op) {
  for (Operation &inner : op.getBodyRegion().front().without_terminator()) {
    if (isa<SoftmaxOp>(inner))
      return inner.emitError("hector.softmax must be decomposed before emission (the pipeline "
                             "runs --hector-decompose-softmax)");
    if (isa<AggregateOp>(inner) && op.getKind() == TraversalKind::Edge)
      return inner.emitError("an edge traversal cannot reduce into nodes");
  }
  if (pairSpaceOf(op) || pairSumSpaceOf(op))
    return success(); // the verifier checked the results' space
  for (Type type : op.getResultTypes()) {
    Space space = cast<ValueType>(type).getSpace();
    bool edge = isEdgeIndexed(space) && space != Space::UniqueSrc && space != Space::UniqueDst;
    if (op.getKind() == TraversalKind::Edge ? !edge : space != Space::Node)
      return op.emitError() << "cannot emit a " << stringifyTraversalKind(op.getKind())
                            << " traversal with a result indexed by " << stringifySpace(space);
  }
  return success();
}

/// The space of a top-level value or weight operand (a weight counts as its slices' space).
Space spaceOf(Value v) {
  if (auto value = dyn_cast<ValueType>(v.getType()))
    return value.getSpace();
  return sliceSpace(cast<WeightType>(v.getType()).getSlicing());
}

/// Checks that a top-level op the glue computes with ATen reads rows it can broadcast: the
/// result's own rows or a single (unsliced) row.
/// Whether `op` is a GEMM or a weight gradient over relation, node-type or unsliced rows (a
/// linear map of weights, such as a projected relation embedding): at most R or T rows, which
/// the glue multiplies with ATen.
bool onWeightRows(Operation *op) {
  auto weightRows = [](Value v) {
    Space space = spaceOf(v);
    return space == Space::Relation || space == Space::NType || space == Space::None;
  };
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getGather() == GemmGather::None && weightRows(gemm.getA());
  if (auto grad = dyn_cast<WeightGradOp>(op))
    return weightRows(grad.getInput()) && weightRows(grad.getGrad());
  return false;
}

LogicalResult checkGlueOp(Operation *op) {
  if (isa<WeightAddOp, WeightMatmulGradOp, WeightDotOp, WeightDotGradOp, ConstantOp>(op))
    return success();
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getSegment() != Slicing::None || gemm.getScatter() != GemmScatter::Store)
      return op->emitError() << "a linear map of values indexed by "
                             << stringifySpace(spaceOf(gemm.getA()))
                             << " needs an unsliced weight and a stored result";
    return success();
  }
  if (auto grad = dyn_cast<WeightGradOp>(op)) {
    if (grad.getResult().getType().getSlicing() != Slicing::None ||
        spaceOf(grad.getInput()) != spaceOf(grad.getGrad()))
      return op->emitError() << "the weight gradient of a linear map of values indexed by "
                             << stringifySpace(spaceOf(grad.getGrad()))
                             << " needs an unsliced weight and operands on the same rows";
    return success();
  }
  if (auto grad = dyn_cast<AggregateGradOp>(op)) {
    if (grad.getKind() == AggregateKind::Max && grad.getInput())
      return success();
    return op->emitError("a mean aggregation's gradient belongs in a traversal (lower the "
                         "layer with --hector-lower-to-kernels)");
  }
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Space from = reduce.getInput().getType().getSpace(), to = spaceOf(reduce.getResult());
    if (from == to || to == Space::None)
      return success();
    return op->emitError() << "cannot emit a sum of rows indexed by " << stringifySpace(from)
                           << " into rows indexed by " << stringifySpace(to);
  }
  Space to = spaceOf(op->getResult(0));
  if (isEdgeIndexed(to) || to == Space::Node)
    return op->emitError() << "'" << op->getName()
                           << "' on rows indexed by " << stringifySpace(to)
                           << " belongs in a traversal (lower the layer with "
                              "--hector-lower-to-kernels)";
  for (Value operand : op->getOperands()) {
    Space from = spaceOf(operand);
    if (from != to && from != Space::None)
      return op->emitError() << "cannot broadcast rows indexed by " << stringifySpace(from)
                             << " to rows indexed by " << stringifySpace(to);
  }
  return success();
}

/// Plans one layer: the tensors of its inputs, weights and outputs, and a kernel (its kind,
/// name and result tensors) for every other top-level op of its kernel-level IR, or an error
/// at an op that is not one. `moduleHash`: a hash of the whole module and the target (see
/// planModule).
FailureOr<LayerPlan> planLayer(LayerOp layer, uint64_t moduleHash) {
  LayerPlan plan;
  plan.layer = layer;
  std::string text;
  llvm::raw_string_ostream textStream(text);
  // Local scope: the layer is isolated from above, and printing it within the module's scope
  // would number the whole module again for every layer (quadratic in the number of layers).
  layer->print(textStream, OpPrintingFlags().printGenericOpForm().useLocalScope());
  text += "\n" + llvm::utohexstr(moduleHash);
  plan.id = identifier(layer.getSymName()) + "_" +
            llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true).substr(0, 8);
  for (Operation &op : layer.getBodyRegion().front()) {
    if (auto input = dyn_cast<InputOp>(op)) {
      plan.tensors[input.getResult()] = "in" + std::to_string(plan.inputs.size());
      plan.inputs.push_back(input);
    } else if (auto weight = dyn_cast<WeightOp>(op)) {
      plan.tensors[weight.getResult()] = "w" + std::to_string(plan.weights.size());
      plan.weights.push_back(weight);
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      plan.tensors[slice.getResult()] = plan.tensors.lookup(slice.getInput());
    } else if (auto output = dyn_cast<OutputOp>(op)) {
      if (auto value = dyn_cast<ValueType>(output.getValue().getType())) {
        Space space = value.getSpace();
        bool unique = space == Space::UniqueSrc || space == Space::UniqueDst;
        if (space != Space::Node && space != Space::Edge && space != Space::Src &&
            space != Space::Dst && !(unique && isSavedOutput(output)))
          return output.emitError() << "cannot emit an output indexed by "
                                    << stringifySpace(space);
      }
      plan.outputs.push_back(output);
    } else if (isa<SrcOp, DstOp, UniqueGatherOp>(op)) {
      // A gather at the top level is fused into the weight gradients that read it.
      Value table = op.getOperand(op.getNumOperands() - 1);
      std::string gather;
      if (isa<SrcOp>(op))
        gather = "g.sortedSrc";
      else if (isa<DstOp>(op))
        gather = "g.sortedDst";
      else
        gather = cast<UniqueGatherOp>(op).getSide() == EdgeEnd::Src ? "g.uniqueSrc" : "g.uniqueDst";
      for (Operation *user : op.getResult(0).getUsers())
        if (!isa<WeightGradOp>(user))
          return user->emitError("reads a top-level gather; only hector.weight_grad fuses one "
                                 "(lower the layer with --hector-lower-to-kernels)");
      plan.gathers[op.getResult(0)] = {table, gather};
      plan.tensors[op.getResult(0)] = plan.tensors.lookup(table);
    } else if (isa<GemmOp, TraversalOp, WeightMatmulOp, WeightGradOp, ReduceOp, WeightAddOp,
                   WeightMatmulGradOp, WeightDotOp, WeightDotGradOp, AddOp, SubOp, MulOp, DivOp,
                   NegOp, ExpOp, ReluOp, TanhOp, SigmoidOp, GeluOp, LeakyReluOp, LeakyReluGradOp,
                   GeluGradOp, DotOp, ConcatOp, NarrowOp, SplitHeadsOp, MergeHeadsOp, ConstantOp,
                   AggregateGradOp>(op)) {
      KernelKind kind = KernelKind::Glue;
      if (onWeightRows(&op)) {
        if (failed(checkGlueOp(&op)))
          return failure();
      } else if (auto gemm = dyn_cast<GemmOp>(op)) {
        if (failed(gemmConfig(gemm)))
          return failure();
        kind = KernelKind::Gemm;
      } else if (auto traversal = dyn_cast<TraversalOp>(op)) {
        if (failed(checkTraversal(traversal)))
          return failure();
        kind = KernelKind::Traversal;
      } else if (isa<WeightMatmulOp>(op)) {
        kind = KernelKind::WeightProduct;
      } else if (isa<ReduceOp>(op) && rowSumConfig(cast<ReduceOp>(op))) {
        kind = KernelKind::RowSum;
      } else if (isa<WeightGradOp>(op) ||
                 (isa<ReduceOp>(op) && reduceSumsRows(cast<ReduceOp>(op)))) {
        if (failed(weightGradConfig(&op, plan)))
          return failure();
        kind = KernelKind::WeightGrad;
      } else if (failed(checkGlueOp(&op))) {
        return failure();
      }
      size_t index = plan.kernels.size();
      for (auto [i, result] : llvm::enumerate(op.getResults()))
        plan.tensors[result] = "t" + std::to_string(index) + "_" + std::to_string(i);
      plan.kernels.push_back({&op, kernelName(plan, index, &op), kind});
    } else {
      return op.emitError() << "'" << op.getName()
                            << "' is not a kernel-level op: lower the layer first "
                               "(--emit=lowered shows the kernel-level IR)";
    }
  }
  return plan;
}

void computeStructures(LayerPlan &plan);
void computeMemory(LayerPlan &plan);

/// Plans every layer of `module`. Each layer's operator namespace hashes its own IR, the whole
/// module's and the target (`cuda`): libraries that differ in any layer (another variant, another
/// backward) or in their target never share a namespace, so they load into one process side by
/// side.
FailureOr<std::vector<LayerPlan>> planModule(ModuleOp module, StringRef entryName, bool cuda) {
  std::string moduleText;
  llvm::raw_string_ostream moduleStream(moduleText);
  module->print(moduleStream, OpPrintingFlags().printGenericOpForm());
  moduleText += cuda ? "\ncuda" : "\ncpu";
  uint64_t moduleHash = llvm::xxh3_64bits(moduleText);
  std::vector<LayerPlan> plans;
  for (LayerOp layer : module.getOps<LayerOp>()) {
    FailureOr<LayerPlan> plan = planLayer(layer, moduleHash);
    if (failed(plan))
      return failure();
    plans.push_back(std::move(*plan));
  }
  if (plans.empty())
    return module.emitError("the module holds no hector.layer to emit");
  for (LayerPlan &plan : plans) {
    computeStructures(plan);
    computeMemory(plan);
  }
  FailureOr<LayerOp> entry = selectEntryLayer(module, entryName);
  if (failed(entry))
    return failure();
  llvm::StringMap<std::string> ids;
  for (LayerPlan &plan : plans)
    ids[plan.layer.getSymName()] = "hector_" + plan.id;
  for (LayerPlan &plan : plans) {
    plan.entry = plan.layer == *entry;
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName))
      plan.backwardOf = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kForwardAttrName))
      plan.forwardOf = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kInferenceAttrName))
      plan.inference = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kInferenceOfAttrName))
      plan.inferenceOf = ids.lookup(ref.getValue());
    if (auto name = plan.layer->getAttrOfType<StringAttr>(kVariantAttrName))
      plan.variant = name.getValue().str();
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kVariantOfAttrName))
      plan.variantOf = ids.lookup(ref.getValue());
    if (auto list = plan.layer->getAttrOfType<ArrayAttr>(kVariantsAttrName))
      for (Attribute item : list)
        if (auto ref = dyn_cast<FlatSymbolRefAttr>(item))
          plan.variants.push_back(ids.lookup(ref.getValue()));
  }
  return plans;
}

//===----------------------------------------------------------------------===//
// Traversal bodies as functors
//===----------------------------------------------------------------------===//

/// Prints the functor of one traversal: every body value becomes a row array (or a pointer
/// into a table) of compile-time length, computed once per scope.
class FunctorPrinter {
public:
  FunctorPrinter(TraversalOp op, StringRef name, llvm::raw_ostream &os)
      : op(op), name(name), os(os), body(op.getBodyRegion().front()) {
    nodeKind = op.getKind() == TraversalKind::Node;
    pairSpace = pairSpaceOf(op);
    pairSums = pairSumSpaceOf(op);
    for (Operation &inner : body)
      if (isAccumulated(&inner)) {
        aggregateIndex[&inner] = aggregates.size();
        aggregates.push_back(&inner);
        if (auto agg = dyn_cast<AggregateOp>(inner))
          by = agg.getBy();
      }
    for (Operation *agg : aggregates)
      numPasses = std::max(numPasses, passOf(agg) + 1);
  }

  /// Passes over the edges of each node (node traversals).
  int passes() const { return numPasses; }
  EdgeEnd reducesBy() const { return by; }

  /// Prints the functor. Its index members (the graph arrays the body reads) are the line
  /// kIndexMembers, which the caller replaces (printFunctor).
  LogicalResult print() {
    os << "template <typename T, typename I> struct " << name << "_f {\n";
    for (unsigned i = 0; i < op.getInputs().size(); ++i)
      os << "  const T *in" << i << ";\n";
    for (unsigned i = 0; i < op.getNumResults(); ++i)
      os << "  T *out" << i << ";\n";
    os << kIndexMembers;
    return nodeKind ? printNode() : printEdge();
  }

  /// The placeholder of the index members in print()'s output.
  static constexpr const char *kIndexMembers = "  @index-members@\n";

  /// The unique pairs a node traversal runs over (its body's pair sums), or std::nullopt.
  std::optional<Space> pairSumSpace() const { return pairSums; }

private:
  TraversalOp op;
  StringRef name;
  llvm::raw_ostream &os;
  Block &body;
  bool nodeKind;
  /// An edge traversal over the unique pairs of this space (e is the pair's row, src = dst its
  /// node).
  std::optional<Space> pairSpace;
  /// A node traversal over the unique pairs of this space (v is the pair's row, e its member
  /// edge; src and dst are read from the edge).
  std::optional<Space> pairSums;
  EdgeEnd by = EdgeEnd::Dst;
  /// The reductions kept in registers: hector.aggregate ops, or the pair sums.
  SmallVector<Operation *> aggregates;
  llvm::DenseMap<Operation *, unsigned> aggregateIndex;
  llvm::DenseMap<Operation *, int> passMemo;
  int numPasses = 0;

  // The current scope: memoised values, node variables, emitted text.
  std::map<std::pair<const void *, std::string>, std::string> memo;
  std::string srcVar, dstVar, indent;
  /// The aggregates of passes before this one are finished (their state is readable).
  int readablePasses = 0;
  /// While the edge() of a node traversal is printed: the table rows it reads per edge
  /// (operand, row expression, elements), which prefetch() loads ahead.
  bool collectEdgeRows = false;
  std::vector<std::tuple<unsigned, std::string, int64_t>> edgeRows;
  unsigned counter = 0;
  bool failedScope = false;

  /// Whether `op` accumulates over the edges of the traversal's node or pair.
  static bool isAccumulated(Operation *op) {
    if (auto reduce = dyn_cast_or_null<ReduceOp>(op))
      return reduce.isPairSum();
    return isa_and_nonnull<AggregateOp>(op);
  }

  /// 1 + the latest pass of the aggregates `agg`'s operand depends on (0 when none).
  int passOf(Operation *agg) {
    auto it = passMemo.find(agg);
    if (it != passMemo.end())
      return it->second;
    int pass = 0;
    llvm::DenseSet<Value> seen;
    std::function<void(Value)> walk = [&](Value v) {
      if (!seen.insert(v).second)
        return;
      Operation *def = v.getDefiningOp();
      if (!def)
        return;
      if (isAccumulated(def)) {
        pass = std::max(pass, passOf(def) + 1);
        return;
      }
      for (Value operand : def->getOperands())
        walk(operand);
    };
    walk(agg->getOperand(0));
    passMemo[agg] = pass;
    return pass;
  }

  void beginScope(std::string src, std::string dst, std::string ind, int readable) {
    memo.clear();
    srcVar = std::move(src);
    dstVar = std::move(dst);
    indent = std::move(ind);
    readablePasses = readable;
  }

  std::string fresh() { return "v" + std::to_string(counter++); }

  static int64_t sizeOf(Value v) { return numElements(cast<ValueType>(v.getType()).getDims()); }

  /// The row expression of a table in `space` read at context `ctx` (a node variable, or "e").
  std::string rowOf(Space space, const std::string &ctx) {
    if (pairSpace && (space == Space::Src || space == Space::Dst || space == Space::Edge ||
                      ((space == Space::UniqueSrc || space == Space::UniqueDst) &&
                       space != *pairSpace))) {
      op.emitError() << "a traversal over " << stringifySpace(*pairSpace)
                     << " pairs cannot read rows indexed by " << stringifySpace(space);
      failedScope = true;
      return "0";
    }
    if (pairSpace && space == *pairSpace)
      return "e";
    switch (space) {
    case Space::Node:
      return ctx;
    case Space::NType:
      return "ntype[" + ctx + "]";
    case Space::Src:
    case Space::Dst:
    case Space::Edge:
      return "e";
    case Space::Relation:
      return "rel";
    case Space::None:
      return "0";
    case Space::UniqueSrc:
      return "uinvSrc[e]";
    case Space::UniqueDst:
      return "uinvDst[e]";
    }
    llvm_unreachable("unknown space");
  }

  /// A loop header over `n` elements.
  std::string loop(int64_t n) {
    return indent + "for (std::int64_t i = 0; i < " + std::to_string(n) + "; ++i)\n";
  }

  /// The name of an indexable array holding `v`'s row at context `ctx`, printing the code that
  /// computes it into the current scope on first use.
  std::string eval(Value v, const std::string &ctx) {
    auto key = std::make_pair(v.getAsOpaquePointer(), ctx);
    auto it = memo.find(key);
    if (it != memo.end())
      return it->second;
    std::string result = compute(v, ctx);
    memo[key] = result;
    return result;
  }

  std::string compute(Value v, const std::string &ctx) {
    int64_t n = sizeOf(v);
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      std::string name = fresh();
      Space space = cast<ValueType>(arg.getType()).getSpace();
      std::string row = rowOf(space, ctx);
      os << indent << "const T *" << name << " = in" << arg.getArgNumber() << " + (" << row
         << ") * " << n << ";\n";
      // Rows that change from edge to edge in no particular order are loaded ahead: not the
      // traversal's node, a relation or a single row, nor an edge's own row where the CSR
      // visits the edges in order (by destination).
      bool inOrder = row == "e" && !(pairSums ? *pairSums == Space::UniqueSrc : by == EdgeEnd::Src);
      if (collectEdgeRows && row != "v" && row != "rel" && row != "0" && !inOrder &&
          row.rfind("ntype[", 0) != 0) {
        auto entry = std::make_tuple(arg.getArgNumber(), row, n);
        if (llvm::find(edgeRows, entry) == edgeRows.end())
          edgeRows.push_back(entry);
      }
      return name;
    }
    Operation *def = v.getDefiningOp();
    if (auto src = dyn_cast<SrcOp>(def))
      return eval(src.getInput(), srcVar);
    if (auto dst = dyn_cast<DstOp>(def))
      return eval(dst.getInput(), dstVar);
    if (auto expand = dyn_cast<UniqueExpandOp>(def))
      return eval(expand.getInput(), "e");
    if (auto gather = dyn_cast<UniqueGatherOp>(def))
      return eval(gather.getInput(), gather.getSide() == EdgeEnd::Src ? srcVar : dstVar);
    if (isa<SplitHeadsOp, MergeHeadsOp>(def))
      return eval(def->getOperand(0), ctx);
    if (isAccumulated(def)) {
      if (ctx != "v" || passOf(def) >= readablePasses) {
        def->emitError("this reduction is read where its value is not available in the "
                       "traversal (it must be materialised by the lowering)");
        failedScope = true;
      }
      return "s.g" + std::to_string(aggregateIndex.lookup(def));
    }
    std::string name = fresh();
    if (auto constant = dyn_cast<ConstantOp>(def)) {
      os << indent << "const T " << name << "[1] = {T(" << literal(constant.getValue().convertToDouble())
         << ")};\n";
      return name;
    }
    os << indent << "T " << name << "[" << n << "];\n";
    auto element = [&](Value operand, const std::string &array) {
      int64_t m = sizeOf(operand);
      if (m == n)
        return array + "[i]";
      return array + "[i / " + std::to_string(n / m) + "]";
    };
    if (isa<AddOp, SubOp, MulOp, DivOp>(def)) {
      std::string a = eval(def->getOperand(0), ctx), b = eval(def->getOperand(1), ctx);
      const char *sym = isa<AddOp>(def) ? " + " : isa<SubOp>(def) ? " - " : isa<MulOp>(def) ? " * " : " / ";
      os << loop(n) << indent << "  " << name << "[i] = " << element(def->getOperand(0), a)
         << sym << element(def->getOperand(1), b) << ";\n";
      return name;
    }
    if (isa<NegOp, ExpOp, ReluOp, TanhOp, SigmoidOp, GeluOp, LeakyReluOp>(def)) {
      std::string a = eval(def->getOperand(0), ctx);
      std::string call;
      if (isa<NegOp>(def))
        call = "-" + a + "[i]";
      else if (auto leaky = dyn_cast<LeakyReluOp>(def))
        call = "::hector::emit::ops::leakyRelu<T>(" + a + "[i], T(" +
               literal(leaky.getSlope().convertToDouble()) + "))";
      else {
        const char *fn = isa<ExpOp>(def)    ? "exp"
                         : isa<ReluOp>(def) ? "relu"
                         : isa<TanhOp>(def) ? "tanh"
                         : isa<SigmoidOp>(def) ? "sigmoid"
                                               : "gelu";
        call = std::string("::hector::emit::ops::") + fn + "<T>(" + a + "[i])";
      }
      os << loop(n) << indent << "  " << name << "[i] = " << call << ";\n";
      return name;
    }
    if (isa<LeakyReluGradOp, GeluGradOp>(def)) {
      std::string g = eval(def->getOperand(0), ctx), x = eval(def->getOperand(1), ctx);
      std::string call;
      if (auto leaky = dyn_cast<LeakyReluGradOp>(def))
        call = "::hector::emit::ops::leakyReluGrad<T>(" + element(def->getOperand(0), g) + ", " +
               element(def->getOperand(1), x) + ", T(" +
               literal(leaky.getSlope().convertToDouble()) + "))";
      else
        call = "::hector::emit::ops::geluGrad<T>(" + element(def->getOperand(0), g) + ", " +
               element(def->getOperand(1), x) + ")";
      os << loop(n) << indent << "  " << name << "[i] = " << call << ";\n";
      return name;
    }
    if (auto reduce = dyn_cast<ReduceOp>(def)) {
      // Row-local: sums trailing dimensions (and forgets the edge end of src/dst rows).
      std::string a = eval(reduce.getInput(), ctx);
      int64_t ratio = sizeOf(reduce.getInput()) / n;
      os << loop(n) << indent << "  " << name << "[i] = ::hector::emit::ops::sum<T, " << ratio
         << ">(" << a << " + i * " << ratio << ");\n";
      return name;
    }
    if (auto narrow = dyn_cast<NarrowOp>(def)) {
      std::string a = eval(narrow.getInput(), ctx);
      int64_t width = cast<ValueType>(v.getType()).getDims().back();
      int64_t inWidth = cast<ValueType>(narrow.getInput().getType()).getDims().back();
      os << indent << "for (std::int64_t r = 0; r < " << n / width << "; ++r)\n"
         << indent << "  for (std::int64_t c = 0; c < " << width << "; ++c)\n"
         << indent << "    " << name << "[r * " << width << " + c] = " << a << "[r * " << inWidth
         << " + " << narrow.getOffset() << " + c];\n";
      return name;
    }
    if (auto aggGrad = dyn_cast<AggregateGradOp>(def)) {
      bool byDst = aggGrad.getBy() == EdgeEnd::Dst;
      const std::string &node = byDst ? dstVar : srcVar;
      if (aggGrad.getKind() != AggregateKind::Mean || node.empty()) {
        def->emitError("the gradient of a max aggregation is a kernel of its own, not a "
                       "traversal body op (lower the layer with --hector-lower-to-kernels)");
        failedScope = true;
        return name;
      }
      std::string g = eval(aggGrad.getGrad(), node);
      std::string ptr = byDst ? "inPtr" : "outPtr";
      os << indent << "const T " << name << "_deg = T(" << ptr << "[" << node << " + 1] - " << ptr
         << "[" << node << "]);\n"
         << loop(n) << indent << "  " << name << "[i] = " << g << "[i] / " << name << "_deg;\n";
      return name;
    }
    if (auto dot = dyn_cast<DotOp>(def)) {
      std::string a = eval(dot.getLhs(), ctx), b = eval(dot.getRhs(), ctx);
      int64_t d = cast<ValueType>(dot.getLhs().getType()).getDims().back();
      os << loop(n) << indent << "  " << name << "[i] = ::hector::emit::ops::dot<T, " << d
         << ">(" << a << " + i * " << d << ", " << b << " + i * " << d << ");\n";
      return name;
    }
    if (auto concat = dyn_cast<ConcatOp>(def)) {
      int64_t last = cast<ValueType>(v.getType()).getDims().back();
      int64_t rows = n / last, offset = 0;
      for (Value input : concat.getInputs()) {
        std::string a = eval(input, ctx);
        int64_t width = cast<ValueType>(input.getType()).getDims().back();
        os << indent << "for (std::int64_t r = 0; r < " << rows << "; ++r)\n"
           << indent << "  for (std::int64_t c = 0; c < " << width << "; ++c)\n"
           << indent << "    " << name << "[r * " << last << " + " << offset << " + c] = " << a
           << "[r * " << width << " + c];\n";
        offset += width;
      }
      return name;
    }
    def->emitError("cannot emit this op in a traversal body");
    failedScope = true;
    return name;
  }

  static std::string reduceOp(Operation *op) {
    auto agg = dyn_cast<AggregateOp>(op);
    const char *kind = !agg || agg.getKind() == AggregateKind::Sum ? "kSum"
                       : agg.getKind() == AggregateKind::Mean      ? "kMean"
                                                                   : "kMax";
    return std::string("::hector::tmpl::ReduceOp<::hector::tmpl::Reduce::") + kind + ", T>";
  }

  void writeResults(const std::string &row) {
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [i, value] : llvm::enumerate(yield.getValues())) {
      std::string a = eval(value, nodeKind ? "v" : "e");
      int64_t n = sizeOf(value);
      os << loop(n) << indent << "  out" << i << "[" << row << " * " << n << " + i] = " << a
         << "[i];\n";
    }
  }

  LogicalResult printEdge() {
    os << "  HECTOR_HD void operator()(const ::hector::tmpl::EdgeRef &er) const {\n"
       << "    const std::int64_t e = er.pos, src = er.src, dst = er.dst, rel = er.rel;\n"
       << "    (void)src;\n    (void)dst;\n    (void)rel;\n";
    beginScope("src", "dst", "    ", 0);
    writeResults("e");
    os << "  }\n};\n\n";
    return failure(failedScope);
  }

  LogicalResult printNode() {
    os << "  struct State {\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    T g" << i << "[" << sizeOf(agg->getResult(0)) << "];\n";
    os << "  };\n";
    os << "  HECTOR_HD void begin(State &s, std::int64_t v) const {\n    (void)s;\n    (void)v;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "      s.g" << i << "[i] = " << reduceOp(agg) << "::identity();\n";
    os << "  }\n";

    // The CUDA traversal splits a node's edges among lanes: each lane's accumulators of a pass
    // are added to another's (a max is a max, a mean a sum until endPass divides it).
    os << "  HECTOR_HD void combine(State &s, const State &o, int pass) const {\n"
       << "    (void)s;\n    (void)o;\n    (void)pass;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    if (pass == " << passOf(agg) << ")\n"
         << "      for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "        s.g" << i << "[i] = " << reduceOp(agg) << "::combine(s.g" << i << "[i], o.g" << i
         << "[i]);\n";
    os << "  }\n";

    bool bySrc = by == EdgeEnd::Src;
    // The variables of one edge, in edge() and prefetch().
    std::string edgeVars;
    if (pairSums)
      // A pair is a run of its node's CSR entries: that node is one end, the neighbour the
      // other.
      edgeVars = std::string("    const std::int64_t e = ce.edge, v = ce.node, rel = etype[e], ") +
                 (*pairSums == Space::UniqueSrc ? "src = ce.csrNode, dst = ce.nbr"
                                                : "src = ce.nbr, dst = ce.csrNode") +
                 ";\n    (void)v;\n    (void)rel;\n    (void)src;\n    (void)dst;\n";
    else
      edgeVars = "    const std::int64_t e = ce.edge, v = ce.node, nbr = ce.nbr, rel = etype[e];\n"
                 "    (void)e;\n    (void)v;\n    (void)nbr;\n    (void)rel;\n";
    os << "  HECTOR_HD void edge(State &s, int pass, const ::hector::tmpl::CsrEdge &ce) const {\n"
       << edgeVars << "    (void)s;\n    (void)pass;\n";
    collectEdgeRows = true;
    for (int pass = 0; pass < numPasses; ++pass) {
      os << "    if (pass == " << pass << ") {\n";
      if (pairSums)
        beginScope("src", "dst", "      ", pass);
      else
        beginScope(bySrc ? "v" : "nbr", bySrc ? "nbr" : "v", "      ", pass);
      for (auto [i, agg] : llvm::enumerate(aggregates)) {
        if (passOf(agg) != pass)
          continue;
        std::string a = eval(agg->getOperand(0), "e");
        os << loop(sizeOf(agg->getResult(0))) << indent << "  s.g" << i << "[i] = "
           << reduceOp(agg) << "::combine(s.g" << i << "[i], " << a << "[i]);\n";
      }
      os << "    }\n";
    }
    os << "  }\n";
    collectEdgeRows = false;
    // The CPU traversals call prefetch() a few edges ahead: the rows an edge reads from node
    // (or pair, or edge) tables through its ends are scattered in memory.
    if (!edgeRows.empty()) {
      os << "  void prefetch(const ::hector::tmpl::CsrEdge &ce) const {\n" << edgeVars;
      for (const auto &[arg, row, n] : edgeRows)
        os << "    ::hector::emit::prefetchRow(in" << arg << " + (" << row << ") * " << n << ", "
           << n << ");\n";
      os << "  }\n";
    }

    os << "  HECTOR_HD void endPass(State &s, int pass, std::int64_t v, std::int64_t degree) "
          "const {\n    (void)s;\n    (void)pass;\n    (void)v;\n    (void)degree;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    if (pass == " << passOf(agg) << ")\n"
         << "      for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "        s.g" << i << "[i] = " << reduceOp(agg) << "::finish(s.g" << i
         << "[i], degree);\n";
    os << "  }\n";

    os << "  HECTOR_HD void finish(const State &s, std::int64_t v, std::int64_t degree) const {\n"
       << "    (void)s;\n    (void)degree;\n";
    beginScope("", "", "    ", numPasses);
    writeResults("v");
    os << "  }\n};\n\n";
    return failure(failedScope);
  }
};

/// Passes over the edges of each node of a node traversal (0 for an edge traversal).
int passesOf(TraversalOp op) { return FunctorPrinter(op, "", llvm::nulls()).passes(); }

//===----------------------------------------------------------------------===//
// Kernels (shared by the CPU and CUDA sources)
//===----------------------------------------------------------------------===//

const char *kKernelParams = "const ::hector::emit::GraphView<I> &g, const T *const *in, "
                            "T *const *out, const I *const *aux";

/// The index members a functor's body reads (of etype, ntype, uinvSrc, uinvDst, inPtr,
/// outPtr) and the GraphView array each is set from.
const std::pair<const char *, const char *> kFunctorIndexMembers[] = {
    {"etype", "g.sortedEtype"},  {"ntype", "g.ntype"},   {"uinvSrc", "g.uniqueSrcInv"},
    {"uinvDst", "g.uniqueDstInv"}, {"inPtr", "g.inPtr"}, {"outPtr", "g.outPtr"}};

/// Whether `text` uses `name` as an identifier (not as part of a longer one).
bool mentions(StringRef text, StringRef name) {
  for (size_t at = text.find(name); at != StringRef::npos; at = text.find(name, at + 1)) {
    bool before = at > 0 && (llvm::isAlnum(text[at - 1]) || text[at - 1] == '_');
    size_t end = at + name.size();
    bool after = end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_');
    if (!before && !after)
      return true;
  }
  return false;
}

/// A traversal's functor, printed once: its text (with its index members declared) and the
/// members its body reads.
struct Functor {
  std::string text;
  SmallVector<std::pair<const char *, const char *>> members;
  int passes = 0;
  EdgeEnd by = EdgeEnd::Dst;
  std::optional<Space> pairSums;
};

FailureOr<Functor> printFunctor(TraversalOp traversal, StringRef name) {
  Functor f;
  llvm::raw_string_ostream os(f.text);
  FunctorPrinter printer(traversal, name, os);
  if (failed(printer.print()))
    return failure();
  f.passes = printer.passes();
  f.by = printer.reducesBy();
  f.pairSums = printer.pairSumSpace();
  std::string body = f.text;
  std::string decl;
  for (const auto &member : kFunctorIndexMembers)
    if (mentions(body, member.first)) {
      f.members.push_back(member);
      decl += std::string("  const I *") + member.first + ";\n";
    }
  size_t at = f.text.find(FunctorPrinter::kIndexMembers);
  f.text.replace(at, std::strlen(FunctorPrinter::kIndexMembers), decl);
  return f;
}

/// Prints `NAME_problem<T, I>(g, in, out, aux)`, building the GemmProblem of a GEMM kernel.
void printProblem(const Kernel &kernel, const GemmConfig &c, llvm::raw_ostream &os) {
  os << "template <typename T, typename I>\n::hector::tmpl::GemmProblem<T, I> " << kernel.name
     << "_problem(" << kKernelParams << ") {\n"
     << "  (void)aux;\n"
     << "  ::hector::tmpl::GemmProblem<T, I> p;\n";
  if (c.weightProduct) {
    auto matmul = cast<WeightMatmulOp>(kernel.op);
    bool lhsSliced = matmul.getLhs().getType().getSlicing() != Slicing::None;
    bool rhsSliced = matmul.getRhs().getType().getSlicing() != Slicing::None;
    int64_t m = numElements(matmul.getLhs().getType().getDims().drop_back());
    Slicing slicing = matmul.getResult().getType().getSlicing();
    std::string slices = slicing == Slicing::Relation ? "g.numRelations"
                         : slicing == Slicing::NType  ? "g.numNtypes"
                                                      : "1";
    os << "  p.numSegments = " << (rhsSliced ? slices : "1") << ";\n"
       << "  p.segOffsets = aux[0];\n"
       << "  p.numRows = " << ((lhsSliced || rhsSliced) ? slices : "1") << " * " << m << ";\n"
       << "  p.gather = " << (rhsSliced && !lhsSliced ? "aux[1]" : "nullptr") << ";\n";
  } else {
    os << "  p.numSegments = " << c.numSegments << ";\n"
       << "  p.segOffsets = " << c.segOffsets << ";\n"
       << "  p.numRows = " << c.numRows << ";\n"
       << "  p.rows = " << c.rows << ";\n"
       << "  p.gather = " << c.gather << ";\n";
  }
  os << "  p.K = " << c.k << ";\n  p.N = " << c.n << ";\n  p.heads = " << c.heads << ";\n"
     << "  p.A = in[0];\n  p.lda = " << c.heads * c.k << ";\n"
     << "  p.B = in[1];\n  p.strideB = " << c.strideB << ";\n"
     << "  p.C = out[0];\n  p.ldc = " << c.heads * c.n << ";\n"
     << "  p.scatter = " << c.scatter << ";\n  p.numOutRows = " << c.numOutRows << ";\n"
     << "  p.scatterPtr = " << c.scatterPtr << ";\n  p.scatterRows = " << c.scatterRows
     << ";\n  return p;\n}\n\n";
}

GemmConfig configOf(const Kernel &kernel) {
  if (auto gemm = dyn_cast<GemmOp>(kernel.op))
    return *gemmConfig(gemm);
  return weightProductConfig(cast<WeightMatmulOp>(kernel.op));
}

std::string bop(const GemmConfig &c) {
  return c.transposeB ? "::hector::tmpl::BOp::kTranspose" : "::hector::tmpl::BOp::kIdentity";
}

/// The pointer fields of a traversal functor, set from the uniform kernel arguments.
void printFunctorSetup(const Kernel &kernel, const Functor &functor, llvm::raw_ostream &os) {
  auto traversal = cast<TraversalOp>(kernel.op);
  os << "  " << kernel.name << "_f<T, I> f;\n";
  for (unsigned i = 0; i < traversal.getInputs().size(); ++i)
    os << "  f.in" << i << " = in[" << i << "];\n";
  for (unsigned i = 0; i < traversal.getNumResults(); ++i)
    os << "  f.out" << i << " = out[" << i << "];\n";
  for (const auto &[member, field] : functor.members)
    os << "  f." << member << " = " << field << ";\n";
}

/// Prints `NAME_problem<T, I>(g, in, out, aux)`, building the WeightGradProblem of a weight
/// gradient or row sum (in[0] = A, in[1] = dC, out[0] = dB).
void printWeightGradProblem(const Kernel &kernel, const WeightGradConfig &c,
                            llvm::raw_ostream &os) {
  bool reduce = isa<ReduceOp>(kernel.op);
  os << "template <typename T, typename I>\n::hector::tmpl::WeightGradProblem<T, I> "
     << kernel.name << "_problem(" << kKernelParams << ") {\n"
     << "  (void)aux;\n"
     << "  ::hector::tmpl::WeightGradProblem<T, I> p;\n"
     << "  p.numSegments = " << c.numSegments << ";\n"
     << "  p.segOffsets = " << c.segOffsets << ";\n"
     << "  p.numRows = " << c.numRows << ";\n"
     << "  p.K = " << c.k << ";\n  p.N = " << c.n << ";\n  p.heads = " << c.heads << ";\n"
     << "  p.A = in[0];\n  p.lda = " << (reduce ? 0 : c.heads * c.k) << ";\n"
     << "  p.rows = " << c.rows << ";\n"
     << "  p.gatherA = " << c.gatherA << ";\n"
     << "  p.dC = in[1];\n  p.ldc = " << c.heads * c.n << ";\n"
     << "  p.gatherC = " << c.gatherC << ";\n"
     << "  p.dB = out[0];\n  p.strideB = " << c.heads * c.k * c.n << ";\n"
     << "  return p;\n}\n\n";
}

/// Prints the kernels of one layer for the CPU (`cuda` false) or CUDA: function templates over
/// the element type T and the index type I.
LogicalResult printKernels(LayerPlan &plan, bool cuda, llvm::raw_ostream &os) {
  const std::string head = "template <typename T, typename I> ";
  for (const Kernel &kernel : plan.kernels) {
    if (kernel.kind == KernelKind::Glue)
      continue;
    os << "// " << kernel.name << "\n";
    if (kernel.kind == KernelKind::RowSum) {
      RowSumConfig c = *rowSumConfig(cast<ReduceOp>(kernel.op));
      std::string args = c.csr + ", g.sortedEtype, " + c.inv + ", in[0], " +
                         std::to_string(c.width) + ", out[0], " +
                         (c.toNodes ? "true" : "false");
      if (!cuda) {
        os << head << "void " << kernel.name << "(" << kKernelParams << ") {\n"
           << "  (void)aux;\n"
           << "  ::hector::tmpl::cpu::runSum<T, I>(" << args << ");\n}\n\n";
      } else {
        os << head << "std::size_t " << kernel.name << "_workspace(" << kKernelParams
           << ") {\n  (void)g;\n  (void)in;\n  (void)out;\n  (void)aux;\n"
           << "  return 0;\n}\n\n";
        os << head << "cudaError_t " << kernel.name << "(" << kKernelParams
           << ", void *, std::size_t, cudaStream_t stream) {\n  (void)aux;\n"
           << "  return ::hector::tmpl::gpu::launchRunSum<T, I>(" << args << ", stream);\n}\n\n";
      }
      continue;
    }
    if (kernel.kind == KernelKind::WeightGrad) {
      printWeightGradProblem(kernel, *weightGradConfig(kernel.op, plan), os);
      std::string modes = "T, ::hector::tmpl::BOp::kIdentity, ::hector::tmpl::Assign::kStore";
      std::string problem = kernel.name + "_problem<T, I>(g, in, out, aux)";
      if (!cuda) {
        os << head << "void " << kernel.name << "(" << kKernelParams << ") {\n"
           << "  ::hector::tmpl::cpu::segmentedWeightGrad<" << modes << ">(" << problem
           << ");\n}\n\n";
      } else {
        os << head << "std::size_t " << kernel.name << "_workspace(" << kKernelParams << ") {\n"
           << "  const auto p = " << problem << ";\n"
           << "  return ::hector::tmpl::gpu::segmentedWeightGradWorkspaceBytes(p, "
              "::hector::tmpl::gpu::defaultWgradChunkRows(p.numRows));\n}\n\n";
        os << head << "cudaError_t " << kernel.name << "(" << kKernelParams
           << ", void *workspace, std::size_t workspaceBytes, cudaStream_t stream) {\n"
           << "  const auto p = " << problem << ";\n"
           << "  return ::hector::tmpl::gpu::launchSegmentedWeightGrad<" << modes
           << ">(p, ::hector::tmpl::gpu::defaultWgradChunkRows(p.numRows), workspace, "
              "workspaceBytes, stream);\n}\n\n";
      }
      continue;
    }
    if (auto traversal = dyn_cast<TraversalOp>(kernel.op)) {
      FailureOr<Functor> functor = printFunctor(traversal, kernel.name);
      if (failed(functor))
        return failure();
      os << functor->text;
      bool edge = traversal.getKind() == TraversalKind::Edge;
      std::string csr = functor->by == EdgeEnd::Src ? "g.outCsr()" : "g.inCsr()";
      // An edge traversal over compacted rows runs over the unique pairs instead.
      std::string edges = "g.edges()";
      if (std::optional<Space> pairs = pairSpaceOf(traversal))
        edges = *pairs == Space::UniqueSrc ? "g.uniqueSrcPairs()" : "g.uniqueDstPairs()";
      // A node traversal over unique pairs: the runs of the CSR by source (source pairs) or
      // by destination, and every edge's pair.
      std::string pairs;
      if (functor->pairSums)
        pairs = *functor->pairSums == Space::UniqueSrc
                    ? "g.outCsr(), g.sortedEtype, g.uniqueSrcInv"
                    : "g.inCsr(), g.sortedEtype, g.uniqueDstInv";
      if (!cuda) {
        os << head << "void " << kernel.name << "(" << kKernelParams << ") {\n"
           << "  (void)aux;\n";
        printFunctorSetup(kernel, *functor, os);
        if (edge)
          os << "  ::hector::tmpl::cpu::edgeMap(" << edges << ", f);\n}\n\n";
        else if (!pairs.empty())
          os << "  ::hector::emit::cpu::pairTraversal(" << pairs << ", f);\n}\n\n";
        else
          os << "  ::hector::emit::cpu::nodeTraversal<" << functor->passes << ">(" << csr
             << ", f);\n}\n\n";
      } else {
        os << head << "std::size_t " << kernel.name << "_workspace(" << kKernelParams
           << ") {\n  (void)g;\n  (void)in;\n  (void)out;\n  (void)aux;\n"
           << "  return 0;\n}\n\n";
        os << head << "cudaError_t " << kernel.name << "(" << kKernelParams
           << ", void *, std::size_t, cudaStream_t stream) {\n  (void)aux;\n";
        printFunctorSetup(kernel, *functor, os);
        if (edge)
          os << "  return ::hector::tmpl::gpu::launchEdgeMap(" << edges
             << ", f, stream);\n}\n\n";
        else if (!pairs.empty())
          os << "  return ::hector::emit::gpu::launchPairTraversal(" << pairs
             << ", f, stream);\n}\n\n";
        else
          os << "  return ::hector::emit::gpu::launchNodeTraversal<" << functor->passes << ">("
             << csr << ", f, stream);\n}\n\n";
      }
      continue;
    }
    GemmConfig c = configOf(kernel);
    printProblem(kernel, c, os);
    std::string mode = "::hector::tmpl::Scatter::" + c.scatterMode;
    std::string problem = kernel.name + "_problem<T, I>(g, in, out, aux)";
    if (!cuda) {
      os << head << "void " << kernel.name << "(" << kKernelParams << ") {\n"
         << "  ::hector::tmpl::cpu::segmentedGemm<T, " << bop(c) << ", " << mode << ">("
         << problem << ");\n}\n\n";
    } else {
      os << head << "std::size_t " << kernel.name << "_workspace(" << kKernelParams << ") {\n"
         << "  return ::hector::tmpl::gpu::segmentedGemmWorkspaceBytes<T, " << mode << ">("
         << problem << ");\n}\n\n";
      os << head << "cudaError_t " << kernel.name << "(" << kKernelParams
         << ", void *workspace, std::size_t workspaceBytes, cudaStream_t stream) {\n"
         << "  return ::hector::tmpl::gpu::launchSegmentedGemm<T, " << bop(c) << ", " << mode
         << ">(" << problem << ", workspace, workspaceBytes, stream);\n}\n\n";
    }
  }
  return success();
}

/// Prints the declarations (in model.cpp) or explicit instantiations (in model_cuda.cu) of a
/// layer's CUDA kernels, for float and double and both index types (the 64-bit ones under
/// HECTOR_INDEX64).
void printCudaSignatures(LayerPlan &plan, bool instantiate, llvm::raw_ostream &os) {
  auto print = [&](StringRef type, StringRef index) {
    std::string t = type.str(), i = index.str();
    std::string params = "const ::hector::emit::GraphView<" + i + "> &, const " + t +
                         " *const *, " + t + " *const *, const " + i + " *const *";
    std::string prefix = instantiate ? "template " : "template <typename T, typename I> ";
    std::string args = instantiate ? "<" + t + ", " + i + ">" : "";
    for (const Kernel &kernel : plan.kernels)
      if (kernel.kind != KernelKind::Glue)
        os << prefix << "std::size_t " << kernel.name << "_workspace" << args << "(" << params
           << ");\n"
           << prefix << "cudaError_t " << kernel.name << args << "(" << params
           << ", void *, std::size_t, cudaStream_t);\n";
  };
  if (!instantiate) {
    print("T", "I");
    return;
  }
  for (StringRef type : {"float", "double"})
    print(type, "std::int32_t");
  os << "#ifdef HECTOR_INDEX64\n";
  for (StringRef type : {"float", "double"})
    print(type, "std::int64_t");
  os << "#endif\n";
}

void printGlueOp(LayerPlan &plan, const Kernel &kernel, llvm::raw_ostream &os);

/// The graph structures that emitted code reads: every GraphView array `g.<field>` and graph
/// accessor `graph.<field>()` it names, and the arrays of the GraphView views it builds.
graph_schema::GraphStructureMask structuresNamedIn(StringRef text) {
  using graph_schema::GraphStructure;
  using graph_schema::maskOf;
  graph_schema::GraphStructureMask mask = 0;
  // `g.<field>` not followed by more of an identifier, or `graph.<field>()`.
  auto named = [&](const std::string &field) {
    std::string member = "g." + field;
    for (size_t at = text.find(member); at != StringRef::npos; at = text.find(member, at + 1)) {
      bool before = at > 0 && (llvm::isAlnum(text[at - 1]) || text[at - 1] == '_');
      size_t end = at + member.size();
      bool after = end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_');
      if (!before && !after)
        return true;
    }
    return text.contains("graph." + field + "()");
  };
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    if (named(graph_schema::graphStructures()[k].field))
      mask |= graph_schema::GraphStructureMask(1) << k;
  auto view = [&](StringRef call, std::initializer_list<GraphStructure> reads) {
    if (text.contains(call))
      for (GraphStructure r : reads)
        mask |= maskOf(r);
  };
  view("g.edges()", {GraphStructure::in_ptr, GraphStructure::sorted_src,
                     GraphStructure::sorted_etype});
  view("g.inCsr()", {GraphStructure::in_ptr, GraphStructure::sorted_src});
  view("g.outCsr()", {GraphStructure::out_ptr, GraphStructure::out_pos, GraphStructure::sorted_dst});
  view("g.uniqueSrcPairs()", {GraphStructure::unique_src_ptr, GraphStructure::unique_src});
  view("g.uniqueDstPairs()", {GraphStructure::unique_dst_ptr, GraphStructure::unique_dst});
  view("graph.sortEdgeData(", {GraphStructure::edge_perm});
  view("graph.unsortEdgeData(", {GraphStructure::edge_perm});
  return mask;
}

/// Fills plan.structures: what the CPU kernels and the glue of the layer read (the CUDA
/// kernels read the same arrays), and the pair counts of the spaces its tensors have.
void computeStructures(LayerPlan &plan) {
  using graph_schema::GraphStructure;
  using graph_schema::maskOf;
  std::string text;
  llvm::raw_string_ostream os(text);
  (void)printKernels(plan, /*cuda=*/false, os);
  for (const Kernel &kernel : plan.kernels)
    if (kernel.kind == KernelKind::Glue)
      printGlueOp(plan, kernel, os);
  graph_schema::GraphStructureMask mask = structuresNamedIn(text);
  // Edge data in the user's order is sorted on the way in and out.
  for (InputOp input : plan.inputs)
    if (!input.getResult().use_empty() && !isSavedInput(input) &&
        input.getResult().getType().getSpace() != Space::Node)
      mask |= maskOf(GraphStructure::edge_perm);
  for (OutputOp output : plan.outputs)
    if (auto value = dyn_cast<ValueType>(output.getValue().getType()))
      if (value.getSpace() != Space::Node && !isSavedOutput(output))
        mask |= maskOf(GraphStructure::edge_perm);
  // Tensors with a row per unique pair need the pair count.
  auto countOf = [&](Type type) {
    if (auto value = dyn_cast<ValueType>(type)) {
      if (value.getSpace() == Space::UniqueSrc)
        mask |= maskOf(GraphStructure::unique_src_range);
      if (value.getSpace() == Space::UniqueDst)
        mask |= maskOf(GraphStructure::unique_dst_range);
    }
  };
  for (InputOp input : plan.inputs)
    countOf(input.getResult().getType());
  for (const Kernel &kernel : plan.kernels)
    for (Type type : kernel.op->getResultTypes())
      countOf(type);
  plan.structures = mask;
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

nlohmann::ordered_json shapeJson(RowShape shape) {
  return nlohmann::ordered_json(std::vector<int64_t>(shape.dims.begin(), shape.dims.end()));
}

nlohmann::ordered_json manifestOf(LayerPlan &plan, bool cuda) {
  using Json = nlohmann::ordered_json;
  Json m;
  m["format"] = kLibraryAbi; // the runtime ABI (see kLibraryAbi)
  m["layer"] = plan.layer.getSymName().str();
  m["entry"] = plan.entry;
  Json params = Json::object();
  if (DictionaryAttr dict = plan.layer.getParamsAttr())
    for (NamedAttribute attr : dict) {
      if (auto i = dyn_cast<IntegerAttr>(attr.getValue()))
        params[attr.getName().str()] = i.getInt();
      else if (auto f = dyn_cast<FloatAttr>(attr.getValue()))
        params[attr.getName().str()] = f.getValueAsDouble();
    }
  m["params"] = params;
  m["inputs"] = Json::array();
  for (InputOp input : plan.inputs) {
    ValueType type = input.getResult().getType();
    Json decl = {{"name", input.getName().str()},
                 {"space", stringifySpace(type.getSpace()).str()},
                 {"dims", shapeJson(type.getShape())},
                 {"head_axis", type.getHeadAxis()}};
    if (!plan.forwardOf.empty())
      decl["used"] = !input.getResult().use_empty();
    if (isSavedInput(input))
      decl["order"] = "internal";
    m["inputs"].push_back(decl);
  }
  m["weights"] = Json::array();
  for (WeightOp weight : plan.weights) {
    WeightType type = weight.getResult().getType();
    m["weights"].push_back({{"name", weight.getName().str()},
                            {"slicing", stringifySlicing(type.getSlicing()).str()},
                            {"dims", shapeJson(type.getShape())},
                            {"head_axis", type.getHeadAxis()},
                            {"init", stringifyWeightInit(weight.getInit()).str()}});
  }
  m["outputs"] = Json::array();
  for (OutputOp output : plan.outputs) {
    if (auto weight = dyn_cast<WeightType>(output.getValue().getType())) {
      m["outputs"].push_back({{"name", output.getName().str()},
                              {"space", "weight"},
                              {"slicing", stringifySlicing(weight.getSlicing()).str()},
                              {"dims", shapeJson(weight.getShape())},
                              {"head_axis", weight.getHeadAxis()}});
      continue;
    }
    auto type = cast<ValueType>(output.getValue().getType());
    // Saved activations keep their own rows (compaction saves unique-pair rows).
    Space space = type.getSpace() == Space::Node ? Space::Node : Space::Edge;
    if (isSavedOutput(output))
      space = type.getSpace() == Space::Src || type.getSpace() == Space::Dst ? Space::Edge
                                                                              : type.getSpace();
    Json decl = {{"name", output.getName().str()},
                 {"space", stringifySpace(space).str()},
                 {"dims", shapeJson(type.getShape())},
                 {"head_axis", type.getHeadAxis()}};
    if (isSavedOutput(output)) {
      decl["saved"] = true;
      decl["order"] = "internal";
    }
    m["outputs"].push_back(decl);
  }
  // Training: the forward layer names its backward layer's namespace and vice versa.
  if (!plan.backwardOf.empty())
    m["backward"] = plan.backwardOf;
  if (!plan.forwardOf.empty())
    m["forward"] = plan.forwardOf;
  if (!plan.inference.empty())
    m["inference"] = plan.inference;
  if (!plan.inferenceOf.empty())
    m["inference_of"] = plan.inferenceOf;
  // Optimisation variants, and the cost model's estimate the runtime chooses among them by
  // (coefficients of N, E, U_src, U_dst, R, T, 1).
  if (!plan.variant.empty())
    m["variant"] = plan.variant;
  if (!plan.variantOf.empty())
    m["variant_of"] = plan.variantOf;
  if (!plan.variant.empty() && plan.variantOf.empty())
    m["variants"] = plan.variants;
  if (auto lines = plan.layer->getAttrOfType<ArrayAttr>(kRewritesAttrName)) {
    m["rewrites"] = Json::array();
    for (Attribute line : lines)
      if (auto text = dyn_cast<StringAttr>(line))
        m["rewrites"].push_back(text.getValue().str());
  }
  if (auto cost = plan.layer->getAttrOfType<DictionaryAttr>(kCostAttrName)) {
    auto coefficients = [](Attribute attr) {
      std::vector<double> values;
      if (auto array = dyn_cast_or_null<DenseF64ArrayAttr>(attr))
        values.assign(array.asArrayRef().begin(), array.asArrayRef().end());
      return values;
    };
    Json c;
    c["terms"] = {"N", "E", "U_src", "U_dst", "R", "T", "1"};
    c["flops"] = coefficients(cost.get("flops"));
    c["bytes"] = coefficients(cost.get("bytes"));
    c["intermediates"] = Json::array();
    if (auto list = dyn_cast_or_null<ArrayAttr>(cost.get("intermediates")))
      for (Attribute item : list)
        c["intermediates"].push_back(coefficients(item));
    m["cost"] = c;
  }
  m["kernels"] = Json::array();
  for (const Kernel &kernel : plan.kernels) {
    Json k;
    k["name"] = kernel.name;
    if (kernel.kind == KernelKind::Glue) {
      k["template"] = "glue";
      k["op"] = kernel.op->getName().getStringRef().str();
    } else if (kernel.kind == KernelKind::RowSum) {
      k["template"] = "traversal";
      k["kind"] = "segment_sum";
      k["N"] = rowSumConfig(cast<ReduceOp>(kernel.op))->width;
    } else if (kernel.kind == KernelKind::WeightGrad) {
      WeightGradConfig c = *weightGradConfig(kernel.op, plan);
      k["template"] = "weight_grad";
      k["op"] = kernel.op->getName().getStringRef().str();
      k["heads"] = c.heads;
      k["K"] = c.k;
      k["N"] = c.n;
    } else if (auto traversal = dyn_cast<TraversalOp>(kernel.op)) {
      FunctorPrinter printer(traversal, kernel.name, llvm::nulls());
      k["template"] = "traversal";
      k["kind"] = stringifyTraversalKind(traversal.getKind()).str();
      k["passes"] = printer.passes();
      k["results"] = traversal.getNumResults();
    } else {
      GemmConfig c = configOf(kernel);
      k["template"] = "gemm";
      if (auto gemm = dyn_cast<GemmOp>(kernel.op)) {
        k["segment"] = stringifySlicing(gemm.getSegment()).str();
        k["gather"] = stringifyGemmGather(gemm.getGather()).str();
        k["scatter"] = stringifyGemmScatter(gemm.getScatter()).str();
        k["transpose_b"] = gemm.getTransposeB();
      } else {
        k["operands"] = "weights";
      }
      k["heads"] = c.heads;
      k["K"] = c.k;
      k["N"] = c.n;
    }
    m["kernels"].push_back(k);
  }
  m["memory"] = {{"terms", {"N", "E", "U_src", "U_dst", "R", "T", "1"}},
                 {"points", plan.memory},
                 {"outputs", plan.outputElements}};
  m["graph"] = Json::array();
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    if (plan.structures >> k & 1)
      m["graph"].push_back(graph_schema::graphStructures()[k].name);
  m["cuda"] = cuda;
  return m;
}

//===----------------------------------------------------------------------===//
// Host glue
//===----------------------------------------------------------------------===//

/// The glue's shape of a top-level value or weight: {rows, dims...} / {slices, dims...}.
std::string tensorShape(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return shapeList(graphRows(value.getSpace()), value.getDims());
  auto weight = cast<WeightType>(type);
  return shapeList(sliceCount(weight.getSlicing()), weight.getDims());
}

ArrayRef<int64_t> dimsOf(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return value.getDims();
  return cast<WeightType>(type).getDims();
}

bool isSliced(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return value.getSpace() != Space::None;
  return cast<WeightType>(type).getSlicing() != Slicing::None;
}

std::string intList(ArrayRef<int64_t> values) {
  std::string out = "{";
  for (int64_t v : values)
    out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "}";
}

/// Prints the ATen code of a glue op: work on weights, on the R or T rows of relations and node
/// types, or a sum of trailing dimensions. Deterministic (no atomics) on the CPU and CUDA.
void printGlueOp(LayerPlan &plan, const Kernel &kernel, llvm::raw_ostream &os) {
  Operation *op = kernel.op;
  Value result = op->getResult(0);
  std::string out = plan.tensors.lookup(result);
  std::string shape = tensorShape(result.getType());
  auto in = [&](unsigned i) { return plan.tensors.lookup(op->getOperand(i)); };
  auto size = [](Value v) { return numElements(dimsOf(v.getType())); };
  os << "  " << out << " = [&] {\n";
  if (auto grad = dyn_cast<AggregateGradOp>(op)) {
    // The gradient of y = aggregate max x by END: per node n and element c, grad[n][c] goes to
    // the edge of n with the smallest internal position whose x equals the maximum; every
    // other edge gets 0. Max and min reductions do not depend on the order of their operands,
    // so this is deterministic on every device.
    std::string nodeOf = grad.getBy() == EdgeEnd::Dst ? "graph.sortedDst().to(at::kLong)"
                                                      : "graph.sortedSrc().to(at::kLong)";
    int64_t width = size(grad.getInput());
    os << "    const std::int64_t E = graph.numEdges(), N = graph.numNodes(), k = " << width
       << ";\n"
       << "    const at::Tensor node = " << nodeOf << ".unsqueeze(1).expand({E, k});\n"
       << "    const at::Tensor x = " << in(1) << ".reshape({E, k});\n"
       << "    const at::Tensor g = " << in(0) << ".reshape({N, k});\n"
       << "    const at::Tensor mx = at::full({N, k}, -std::numeric_limits<double>::infinity(), "
          "opts).scatter_reduce(0, node, x, \"amax\", /*include_self=*/true);\n"
       << "    const at::Tensor eid = at::arange(E, longOpts).unsqueeze(1).expand({E, k});\n"
       << "    const at::Tensor candidate = at::where(x == mx.gather(0, node), eid, "
          "at::full({}, E, longOpts));\n"
       << "    const at::Tensor first = at::full({N, k}, E, longOpts).scatter_reduce(0, node, "
          "candidate, \"amin\", /*include_self=*/true);\n"
       << "    return at::where(first.gather(0, node) == eid, g.gather(0, node), "
          "at::zeros({}, opts)).reshape("
       << shape << ").contiguous();\n";
  } else if (auto gemm = dyn_cast<GemmOp>(op)) {
    // A linear map of weight-space rows: [S, heads, 1, K] x [1, heads, K, N] per row.
    LinearShape ls = linearShape(gemm.getB().getType(), gemm.getTransposeB());
    std::string h = std::to_string(ls.heads), k = std::to_string(ls.k), n = std::to_string(ls.n);
    os << "    const at::Tensor a = ::hector::emit::rowView(" << in(0) << ", {" << h << ", " << k
       << "}).unsqueeze(2);\n";
    if (gemm.getTransposeB())
      os << "    const at::Tensor b = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << n
         << ", " << k << "}).transpose(2, 3);\n";
    else
      os << "    const at::Tensor b = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << k
         << ", " << n << "});\n";
    os << "    return at::matmul(a, b).reshape(" << shape << ").contiguous();\n";
  } else if (auto grad = dyn_cast<WeightGradOp>(op)) {
    // dW[h] = sum over the rows s of x[s, h]^T dy[s, h].
    LinearShape ls = linearShape(grad.getResult().getType(), false);
    std::string h = std::to_string(ls.heads), k = std::to_string(ls.k), n = std::to_string(ls.n);
    os << "    const at::Tensor x = ::hector::emit::rowView(" << in(0) << ", {" << h << ", " << k
       << "}).permute({1, 2, 0});\n"
       << "    const at::Tensor dy = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << n
       << "}).permute({1, 0, 2});\n"
       << "    return at::matmul(x, dy).reshape(" << shape << ").contiguous();\n";
  } else if (isa<SplitHeadsOp, MergeHeadsOp>(op)) {
    os << "    return " << in(0) << ".reshape(" << shape << ").contiguous();\n";
  } else if (isa<DotOp, ConcatOp, NarrowOp>(op)) {
    // On the rows of the result's space, every operand viewed as [rows, P, last dimension]
    // (P: the product of the other dimensions, the same for all operands).
    std::string rows = graphRows(spaceOf(result));
    auto view = [&](unsigned i) {
      ArrayRef<int64_t> dims = dimsOf(op->getOperand(i).getType());
      int64_t m = numElements(dims), last = dims.empty() ? 1 : dims.back();
      return "::hector::emit::broadcastRows(" + in(i) + ", " + std::to_string(m) + ", " + rows +
             ", " + std::to_string(m) + ").reshape({" + rows + ", " + std::to_string(m / last) +
             ", " + std::to_string(last) + "})";
    };
    if (isa<DotOp>(op)) {
      os << "    return (" << view(0) << " * " << view(1) << ").sum(2).reshape(" << shape
         << ").contiguous();\n";
    } else if (auto narrow = dyn_cast<NarrowOp>(op)) {
      os << "    return " << view(0) << ".narrow(2, " << narrow.getOffset() << ", "
         << dimsOf(result.getType()).back() << ").reshape(" << shape << ").contiguous();\n";
    } else {
      os << "    return at::cat({";
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        os << (i ? ", " : "") << view(i);
      os << "}, 2).reshape(" << shape << ").contiguous();\n";
    }
  } else if (auto constant = dyn_cast<ConstantOp>(op)) {
    os << "    return at::full(" << shape << ", " << literal(constant.getValue().convertToDouble())
       << ", opts);\n";
  } else if (isa<WeightAddOp>(op)) {
    os << "    return at::add(" << in(0) << ", " << in(1) << ");\n";
  } else if (auto grad = dyn_cast<WeightMatmulGradOp>(op)) {
    ArrayRef<int64_t> r = dimsOf(result.getType()), o = dimsOf(grad.getOther().getType());
    bool rhs = grad.getRhs();
    int64_t m = rhs ? numElements(o.drop_back()) : numElements(r.drop_back());
    int64_t k = rhs ? o.back() : r.back();
    int64_t n = rhs ? numElements(r.drop_front()) : numElements(o.drop_front());
    os << "    const at::Tensor g = ::hector::emit::rowView(" << in(0) << ", {" << m << ", " << n
       << "});\n";
    if (rhs)
      os << "    at::Tensor r = at::matmul(::hector::emit::rowView(" << in(1) << ", {" << m
         << ", " << k << "}).transpose(1, 2), g);\n";
    else
      os << "    at::Tensor r = at::matmul(g, ::hector::emit::rowView(" << in(1) << ", {" << k
         << ", " << n << "}).transpose(1, 2));\n";
    if (!isSliced(result.getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  } else if (isa<WeightDotOp, WeightDotGradOp>(op)) {
    // lhs [p..., s..., d] (P x Q x D), rhs [s..., d] (Q x D), result [p..., s...] (P x Q).
    auto dotGrad = dyn_cast<WeightDotGradOp>(op);
    Type lhsType = dotGrad ? (dotGrad.getRhs() ? dotGrad.getOther().getType() : result.getType())
                           : op->getOperand(0).getType();
    Type rhsType = dotGrad ? (dotGrad.getRhs() ? result.getType() : dotGrad.getOther().getType())
                           : op->getOperand(1).getType();
    int64_t d = dimsOf(rhsType).back();
    int64_t q = numElements(dimsOf(rhsType)) / d;
    int64_t p = numElements(dimsOf(lhsType)) / (q * d);
    std::string lhs4 = intList({p, q, d}), rhs4 = intList({1, q, d});
    if (!dotGrad) {
      os << "    at::Tensor r = (::hector::emit::rowView(" << in(0) << ", " << lhs4
         << ") * ::hector::emit::rowView(" << in(1) << ", " << rhs4 << ")).sum(-1);\n";
    } else if (!dotGrad.getRhs()) {
      os << "    at::Tensor r = ::hector::emit::rowView(" << in(0) << ", " << intList({p, q, 1})
         << ") * ::hector::emit::rowView(" << in(1) << ", " << rhs4 << ");\n";
    } else {
      os << "    at::Tensor r = (::hector::emit::rowView(" << in(0) << ", " << intList({p, q, 1})
         << ") * ::hector::emit::rowView(" << in(1) << ", " << lhs4 << ")).sum(1);\n";
    }
    if (dotGrad && !isSliced(result.getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  } else if (auto reduce = dyn_cast<ReduceOp>(op)) {
    int64_t n = numElements(dimsOf(result.getType()));
    os << "    at::Tensor r = ::hector::emit::rowView(" << in(0) << ", {" << n << ", "
       << size(reduce.getInput()) / n << "}).sum(2);\n";
    if (!isSliced(result.getType()) && isSliced(reduce.getInput().getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  } else {
    // Elementwise on the rows of the result's space (operands: the same rows or one row).
    int64_t n = size(result);
    std::string rows = graphRows(spaceOf(result));
    auto operand = [&](unsigned i) {
      return "::hector::emit::broadcastRows(" + in(i) + ", " +
             std::to_string(size(op->getOperand(i))) + ", " + rows + ", " + std::to_string(n) +
             ")";
    };
    std::string expr;
    if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
      const char *fn = isa<AddOp>(op) ? "add" : isa<SubOp>(op) ? "sub" : isa<MulOp>(op) ? "mul" : "div";
      expr = std::string("at::") + fn + "(" + operand(0) + ", " + operand(1) + ")";
    } else if (auto leaky = dyn_cast<LeakyReluOp>(op)) {
      expr = "at::leaky_relu(" + operand(0) + ", " + literal(leaky.getSlope().convertToDouble()) +
             ")";
    } else if (auto grad = dyn_cast<LeakyReluGradOp>(op)) {
      // Operands (g, x): g where x > 0, else slope * g (emit::ops::leakyReluGrad).
      expr = "at::leaky_relu_backward(" + operand(0) + ", " + operand(1) + ", " +
             literal(grad.getSlope().convertToDouble()) + ", false)";
    } else if (isa<GeluGradOp>(op)) {
      expr = "at::gelu_backward(" + operand(0) + ", " + operand(1) + ", \"none\")";
    } else {
      const char *fn = isa<NegOp>(op)    ? "neg"
                       : isa<ExpOp>(op)  ? "exp"
                       : isa<ReluOp>(op) ? "relu"
                       : isa<TanhOp>(op) ? "tanh"
                       : isa<SigmoidOp>(op) ? "sigmoid"
                                            : "gelu";
      expr = std::string("at::") + fn + "(" + operand(0) + ")";
    }
    os << "    return " << expr << ".reshape(" << shape << ").contiguous();\n";
  }
  os << "  }();\n";
}

/// For a reduction that also drops trailing dimensions: prints `t<index>_pre`, the rows of
/// `value` with the dimensions beyond its first `width` elements summed, and returns its name.
std::string printPresum(LayerPlan &plan, size_t index, Value value, int64_t width,
                        llvm::raw_ostream &os) {
  std::string pre = "t" + std::to_string(index) + "_pre";
  os << "  const at::Tensor " << pre << " = ::hector::emit::rowView(" << plan.tensors.lookup(value)
     << ", {" << width << ", " << numElements(cast<ValueType>(value.getType()).getDims()) / width
     << "}).sum(2).contiguous();\n";
  return pre;
}

SmallVector<Value> readsOf(const LayerPlan &plan, const Kernel &kernel);

/// The intermediates the glue releases after each kernel: those whose last reader it is
/// (outputs, inputs, weights and their aliases are never released).
std::map<size_t, SmallVector<Value>> releasePlan(const LayerPlan &plan) {
  llvm::DenseSet<Value> outputValues;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    outputValues.insert(OutputOp(plan.outputs[o]).getValue());
  llvm::MapVector<Value, size_t> lastRead;
  for (auto [k, kernel] : llvm::enumerate(plan.kernels))
    for (Value read : readsOf(plan, kernel)) {
      auto marker = plan.gathers.find(read);
      lastRead[marker != plan.gathers.end() ? marker->second.table : read] = k;
    }
  std::map<size_t, SmallVector<Value>> release;
  for (auto &[value, k] : lastRead) {
    Operation *def = value.getDefiningOp();
    if (!def || outputValues.contains(value) || isa<InputOp, WeightOp, SliceOp>(def))
      continue;
    std::string name = plan.tensors.lookup(value);
    if (!name.empty() && name[0] == 't')
      release[k].push_back(value);
  }
  return release;
}

/// The elements of a tensor of `type` as coefficients of N, E, U_src, U_dst, R, T, 1.
std::array<double, 7> elementsOf(Type type) {
  std::array<double, 7> c{};
  if (auto value = dyn_cast<ValueType>(type)) {
    double row = static_cast<double>(numElements(value.getDims()));
    switch (value.getSpace()) {
    case Space::Node: c[0] = row; break;
    case Space::Src:
    case Space::Dst:
    case Space::Edge: c[1] = row; break;
    case Space::UniqueSrc: c[2] = row; break;
    case Space::UniqueDst: c[3] = row; break;
    case Space::Relation: c[4] = row; break;
    case Space::NType: c[5] = row; break;
    case Space::None: c[6] = row; break;
    }
    return c;
  }
  auto weight = cast<WeightType>(type);
  double slice = static_cast<double>(numElements(weight.getDims()));
  c[weight.getSlicing() == Slicing::Relation ? 4 : weight.getSlicing() == Slicing::NType ? 5 : 6] =
      slice;
  return c;
}

/// Fills plan.memory and plan.outputElements by walking the glue's allocations and releases:
/// the sorted copies of edge inputs, every kernel's results (and a reduction's pre-summed
/// input, and a weight gradient's per-chunk partials), the unsorted copies of edge outputs.
void computeMemory(LayerPlan &plan) {
  std::array<double, 7> live{};
  auto add = [](std::array<double, 7> &to, const std::array<double, 7> &c, double sign = 1) {
    for (int i = 0; i < 7; ++i)
      to[i] += sign * c[i];
  };
  for (InputOp input : plan.inputs)
    if (!input.getResult().use_empty() && !isSavedInput(input) &&
        input.getResult().getType().getSpace() != Space::Node)
      add(live, elementsOf(input.getResult().getType()));
  std::map<size_t, SmallVector<Value>> release = releasePlan(plan);
  plan.memory.clear();
  for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
    std::array<double, 7> temporary{};
    // A GEMM with an accumulator writes into the accumulator's buffer, which lives on as its
    // result (it is not released after the GEMM).
    auto gemm = dyn_cast<GemmOp>(kernel.op);
    Value reused = gemm ? gemm.getAcc() : Value();
    if (!reused)
      for (Type type : kernel.op->getResultTypes())
        add(live, elementsOf(type));
    if (kernel.kind == KernelKind::WeightGrad) {
      WeightGradConfig c = *weightGradConfig(kernel.op, plan);
      std::array<double, 7> rows = elementsOf(c.c.getType());
      double perRow = static_cast<double>(numElements(dimsOf(c.c.getType())));
      // One [K, N] partial per 2048 rows of a segment (cpu::segmentedWeightGrad), and the
      // pre-summed rows of n elements of a reduction.
      for (int i = 0; i < 7; ++i) {
        double count = rows[i] / std::max(perRow, 1.0);
        temporary[i] += count * (c.heads * c.k * c.n) / 2048.0 + (c.presum ? count * c.n : 0);
      }
    }
    std::array<double, 7> point = live;
    add(point, temporary);
    plan.memory.push_back(point);
    for (Value value : release[k])
      if (value != reused)
        add(live, elementsOf(value.getType()), -1);
  }
  plan.outputElements = {};
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    OutputOp output = plan.outputs[o];
    add(plan.outputElements, elementsOf(output.getValue().getType()));
    auto value = dyn_cast<ValueType>(output.getValue().getType());
    if (value && value.getSpace() != Space::Node && !isSavedOutput(output))
      add(live, elementsOf(output.getValue().getType())); // the unsorted copy
  }
  plan.memory.push_back(live);
}

/// The output bit of output `o` in the glue's `needed` mask (outputs from 63 on share bit 63).
uint64_t outputBit(size_t o) { return uint64_t(1) << std::min<size_t>(o, 63); }

/// The top-level values kernel `k` reads (a weight gradient's resolved operands).
SmallVector<Value> readsOf(const LayerPlan &plan, const Kernel &kernel) {
  SmallVector<Value> reads;
  if (kernel.kind == KernelKind::WeightGrad) {
    WeightGradConfig c = *weightGradConfig(kernel.op, plan);
    if (c.a)
      reads.push_back(c.a);
    reads.push_back(c.c);
    return reads;
  }
  if (kernel.kind == KernelKind::RowSum) {
    reads.push_back(cast<ReduceOp>(kernel.op).getInput());
    return reads;
  }
  for (Value operand : kernel.op->getOperands())
    reads.push_back(operand);
  return reads;
}

/// For every kernel, the outputs that depend on it (a mask of outputBit): a kernel runs only
/// when one of them is needed.
std::vector<uint64_t> outputsOfKernels(const LayerPlan &plan) {
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [k, kernel] : llvm::enumerate(plan.kernels))
    index[kernel.op] = k;
  auto producer = [&](Value v) -> std::optional<size_t> {
    auto marker = plan.gathers.find(v);
    if (marker != plan.gathers.end())
      v = marker->second.table;
    if (Operation *def = v.getDefiningOp(); def && index.count(def))
      return index.lookup(def);
    return std::nullopt;
  };
  std::vector<uint64_t> mask(plan.kernels.size(), 0);
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (std::optional<size_t> k = producer(OutputOp(plan.outputs[o]).getValue()))
      mask[*k] |= outputBit(o);
  for (size_t k = plan.kernels.size(); k-- > 0;)
    for (Value read : readsOf(plan, plan.kernels[k]))
      if (std::optional<size_t> from = producer(read))
        mask[*from] |= mask[k];
  return mask;
}

/// Prints the glue of one layer: validation, tensors, kernel calls, outputs, registration.
void printGlue(LayerPlan &plan, bool cuda, llvm::raw_ostream &os) {
  std::string op = "hector_" + plan.id;
  std::string manifest = manifestText(manifestOf(plan, cuda));
  os << "namespace " << op << " {\n\n";
  os << "const char *const kManifest =";
  for (StringRef rest = manifest; !rest.empty();) {
    auto [line, tail] = rest.split('\n');
    bool newline = line.size() < rest.size();
    os << "\n    " << cppQuoted(newline ? line.str() + "\n" : line.str());
    rest = tail;
  }
  os << ";\n\n";
  os << "std::string manifest() { return kManifest; }\n\n";
  os << "/// The graph structures the kernels read.\n"
     << "constexpr ::hector::graph_schema::GraphStructureMask kStructures = 0x"
     << llvm::utohexstr(plan.structures) << "ull;\n\n";
  if (cuda) {
    os << "#ifdef HECTOR_WITH_CUDA\nnamespace cuda {\n";
    printCudaSignatures(plan, /*instantiate=*/false, os);
    os << "} // namespace cuda\n#endif\n\n";
  }

  // Which outputs each kernel serves, and the last kernel that reads each intermediate (it is
  // released right after, so that the peak holds only what is still needed).
  // Only a backward layer computes a subset of its outputs (the gradients autograd needs).
  const bool masked = !plan.forwardOf.empty();
  std::vector<uint64_t> serves = outputsOfKernels(plan);
  llvm::DenseSet<Value> outputValues;
  for (OutputOp output : plan.outputs)
    outputValues.insert(output.getValue());
  std::map<size_t, SmallVector<std::string>> releaseAfter;
  for (auto &[k, values] : releasePlan(plan)) {
    for (Value value : values)
      releaseAfter[k].push_back(plan.tensors.lookup(value));
    llvm::sort(releaseAfter[k]);
  }

  // run<T, I>: the kernels in order.
  os << "template <typename T, typename I>\n"
     << "std::vector<at::Tensor> run(const ::hector::Graph &graph, at::TensorList inputs, "
        "at::TensorList weights, std::uint64_t needed) {\n"
     << "  (void)needed;\n"
     << "  const at::Device device = graph.device();\n"
     << "  const bool onCuda = device.is_cuda();\n"
     << "  (void)onCuda;\n"
     << "  const auto opts = at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value)"
        ".device(device);\n"
     << "  const auto idxOpts = at::TensorOptions().dtype(c10::CppTypeToScalarType<I>::value)"
        ".device(device);\n"
     << "  (void)idxOpts;\n"
     << "  const auto longOpts = at::TensorOptions().dtype(at::kLong).device(device);\n"
     << "  (void)longOpts;\n"
     << "  const ::hector::emit::GraphView<I> g = ::hector::emit::makeGraphView<I>(graph, "
        "kStructures, "
     << cppQuoted(op) << ");\n";
  if (cuda)
    os << "#ifdef HECTOR_WITH_CUDA\n"
       << "  std::optional<c10::cuda::CUDAGuard> guard;\n"
       << "  if (onCuda)\n    guard.emplace(device);\n"
       << "  cudaStream_t stream = onCuda ? c10::cuda::getCurrentCUDAStream().stream() : "
          "nullptr;\n"
       << "#endif\n";
  for (auto [i, input] : llvm::enumerate(plan.inputs)) {
    if (input.getResult().use_empty()) {
      os << "  // in" << i << " (" << cppQuoted(input.getName()) << ") is not read.\n";
      continue;
    }
    // Saved activations stay in the graph's internal edge order.
    bool edge = input.getResult().getType().getSpace() != Space::Node && !isSavedInput(input);
    if (edge)
      os << "  const at::Tensor in" << i << " = graph.sortEdgeData(inputs[" << i
         << "]).contiguous();\n";
    else
      os << "  const at::Tensor in" << i << " = inputs[" << i << "].contiguous();\n";
  }
  bool needsOne = llvm::any_of(plan.kernels, [](const Kernel &k) {
    return k.kind == KernelKind::WeightGrad && isa<ReduceOp>(k.op);
  });
  if (needsOne)
    os << "  const at::Tensor one = at::ones({1}, opts);\n";
  for (auto [i, weight] : llvm::enumerate(plan.weights))
    os << "  const at::Tensor w" << i << " = weights[" << i << "].contiguous();\n";
  // Every intermediate, assigned by its kernel.
  for (const Kernel &kernel : plan.kernels)
    for (Value result : kernel.op->getResults())
      os << "  at::Tensor " << plan.tensors.lookup(result) << ";\n";

  for (auto [index, kernel] : llvm::enumerate(plan.kernels)) {
    Operation *kop = kernel.op;
    os << (masked ? "  if (needed & 0x" + llvm::utohexstr(serves[index]) + "ull) {\n" : "  {\n");
    if (kernel.kind == KernelKind::Glue) {
      printGlueOp(plan, kernel, os);
    } else {
      SmallVector<std::string> ins, outs, aux;
      if (kernel.kind == KernelKind::WeightGrad) {
        WeightGradConfig c = *weightGradConfig(kop, plan);
        ins.push_back(c.a ? plan.tensors.lookup(c.a) : "one");
        ins.push_back(c.presum ? printPresum(plan, index, c.c, c.n, os)
                               : plan.tensors.lookup(c.c));
      } else if (kernel.kind == KernelKind::RowSum) {
        RowSumConfig c = *rowSumConfig(cast<ReduceOp>(kop));
        Value input = cast<ReduceOp>(kop).getInput();
        ins.push_back(c.presum ? printPresum(plan, index, input, c.width, os)
                               : plan.tensors.lookup(input));
      } else if (auto gemm = dyn_cast<GemmOp>(kop)) {
        ins.push_back(plan.tensors.lookup(gemm.getA()));
        ins.push_back(plan.tensors.lookup(gemm.getB()));
      } else {
        for (Value operand : kop->getOperands())
          ins.push_back(plan.tensors.lookup(operand));
      }
      auto gemm = dyn_cast<GemmOp>(kop);
      for (Value result : kop->getResults()) {
        std::string name = plan.tensors.lookup(result);
        outs.push_back(name);
        if (gemm && gemm.getAcc()) {
          // The sum is written into the accumulator's buffer: the lowering folds an addition
          // into the GEMM only where the accumulator has no other reader.
          os << "  " << name << " = " << plan.tensors.lookup(gemm.getAcc()) << ";\n";
        } else if (auto value = dyn_cast<ValueType>(result.getType())) {
          bool zeroed = gemm && gemm.getScatter() != GemmScatter::Store;
          os << "  " << name << " = " << (zeroed ? "at::zeros(" : "at::empty(")
             << shapeList(graphRows(value.getSpace()), value.getDims()) << ", opts);\n";
        } else {
          auto weight = cast<WeightType>(result.getType());
          os << "  " << name << " = at::empty("
             << shapeList(sliceCount(weight.getSlicing()), weight.getDims()) << ", opts);\n";
        }
      }
      if (auto matmul = dyn_cast<WeightMatmulOp>(kop)) {
        // Segment offsets (and, for an unsliced lhs with a sliced rhs, the row gather).
        bool lhsSliced = matmul.getLhs().getType().getSlicing() != Slicing::None;
        bool rhsSliced = matmul.getRhs().getType().getSlicing() != Slicing::None;
        int64_t m = numElements(matmul.getLhs().getType().getDims().drop_back());
        std::string slices = sliceCount(matmul.getResult().getType().getSlicing());
        if (slices.empty())
          slices = "1";
        std::string off = "aux" + std::to_string(index) + "_off";
        if (rhsSliced)
          os << "  const at::Tensor " << off << " = at::arange(0, " << slices
             << " + 1, idxOpts) * " << m << ";\n";
        else
          os << "  const at::Tensor " << off << " = at::arange(0, 2, idxOpts) * ("
             << (lhsSliced ? slices : "1") << " * " << m << ");\n";
        aux.push_back(off);
        if (rhsSliced && !lhsSliced) {
          std::string gather = "aux" + std::to_string(index) + "_gather";
          os << "  const at::Tensor " << gather << " = at::arange(0, " << slices << " * " << m
             << ", idxOpts).remainder(" << m << ");\n";
          aux.push_back(gather);
        }
      }
      // Each kernel is a torch.profiler event (a flag test when no profiler is active).
      os << "  {\n    RECORD_FUNCTION(" << cppQuoted(kernel.name)
         << ", std::vector<c10::IValue>());\n    const T *in_[] = {";
      for (const std::string &name : ins)
        os << name << ".data_ptr<T>(), ";
      os << "nullptr};\n    T *out_[] = {";
      for (const std::string &name : outs)
        os << name << ".data_ptr<T>(), ";
      os << "nullptr};\n    const I *aux_[] = {";
      for (const std::string &name : aux)
        os << name << ".data_ptr<I>(), ";
      os << "nullptr};\n";
      if (cuda) {
        os << "    if (onCuda) {\n#ifdef HECTOR_WITH_CUDA\n"
           << "      const std::size_t bytes = cuda::" << kernel.name
           << "_workspace<T, I>(g, in_, out_, aux_);\n"
           << "      at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, "
              "opts.dtype(at::kByte));\n"
           << "      const cudaError_t error = cuda::" << kernel.name
           << "<T, I>(g, in_, out_, aux_, workspace.data_ptr(), bytes, stream);\n"
           << "      ::hector::emit::checkLaunch(error == cudaSuccess ? nullptr : "
              "cudaGetErrorString(error), "
           << cppQuoted(kernel.name) << ");\n"
           << "#endif\n    } else {\n  ";
      }
      os << "    cpu::" << kernel.name << "<T, I>(g, in_, out_, aux_);\n";
      if (cuda)
        os << "    }\n";
      os << "  }\n";
    }
    for (const std::string &name : releaseAfter[index])
      os << "  " << name << ".reset();\n";
    os << "  }\n";
  }
  os << "  std::vector<at::Tensor> results;\n";
  for (auto [o, output] : llvm::enumerate(plan.outputs)) {
    std::string name = plan.tensors.lookup(output.getValue());
    auto value = dyn_cast<ValueType>(output.getValue().getType());
    bool edge = value && value.getSpace() != Space::Node && !isSavedOutput(output);
    bool isInput = isa_and_nonnull<InputOp, WeightOp>(output.getValue().getDefiningOp());
    std::string result = edge      ? "graph.unsortEdgeData(" + name + ")"
                         : isInput ? name + ".clone()"
                                   : name;
    if (masked)
      os << "  results.push_back((needed & 0x" << llvm::utohexstr(outputBit(o)) << "ull) ? "
         << result << " : at::Tensor());\n";
    else
      os << "  results.push_back(" << result << ");\n";
  }
  os << "  return results;\n}\n\n";

  // forward: validation, then dispatch on the element and index types.
  os << "std::vector<at::Tensor> forward(at::TensorList graphTensors, c10::IntArrayRef "
        "graphSizes, at::TensorList inputs, at::TensorList weights, std::int64_t needed) {\n"
     << "  const ::hector::Graph graph = ::hector::Graph::fromTensors(graphTensors.vec(), "
        "graphSizes.vec());\n";
  auto names = [](auto ops) {
    std::string out;
    for (auto op : ops)
      out += (out.empty() ? "" : ", ") + op.getName().str();
    return out;
  };
  os << "  TORCH_CHECK_VALUE(inputs.size() == " << plan.inputs.size() << ", "
     << cppQuoted(op + ".forward: expected " + std::to_string(plan.inputs.size()) + " inputs (" +
               names(plan.inputs) + "), got ")
     << ", inputs.size());\n"
     << "  TORCH_CHECK_VALUE(weights.size() == " << plan.weights.size() << ", "
     << cppQuoted(op + ".forward: expected " + std::to_string(plan.weights.size()) + " weights (" +
               names(plan.weights) + "), got ")
     << ", weights.size());\n";
  std::string first = plan.weights.empty() ? "" : "weights[0]";
  // The tensor that sets the call's dtype and device, as messages name it.
  std::string firstName =
      plan.weights.empty() ? "" : "weight '" + plan.weights.front().getName().str() + "'";
  for (auto [i, input] : llvm::enumerate(plan.inputs))
    if (!input.getResult().use_empty()) {
      first = "inputs[" + std::to_string(i) + "]";
      firstName = "input '" + input.getName().str() + "'";
      break;
    }
  if (first.empty()) {
    os << "  const at::ScalarType dtype = at::kFloat;\n";
  } else {
    os << "  const at::ScalarType dtype = " << first << ".scalar_type();\n"
       << "  TORCH_CHECK_TYPE(dtype == at::kFloat || dtype == at::kDouble, "
       << cppQuoted(op + ".forward: " + firstName +
                    " must be float32 or float64 (the dtype of every tensor of the call), got ")
       << ", dtype);\n"
       << "  TORCH_CHECK_VALUE(" << first << ".device() == graph.device(), "
       << cppQuoted(op + ".forward: the graph is on ") << ", graph.device(), "
       << cppQuoted(" but " + firstName + " is on ") << ", " << first << ".device());\n";
  }
  for (auto [i, input] : llvm::enumerate(plan.inputs)) {
    if (input.getResult().use_empty())
      continue; // not read: may be undefined
    ValueType type = input.getResult().getType();
    Space space = type.getSpace();
    // Rows: N, E, or (saved compacted activations) U_src / U_dst.
    std::string label = space == Space::Node        ? "N"
                        : space == Space::UniqueSrc ? "U_src"
                        : space == Space::UniqueDst ? "U_dst"
                                                    : "E";
    os << "  ::hector::emit::checkArgument(inputs[" << i << "], "
       << cppQuoted(op + ".forward: input '" + input.getName().str() + "'")
       << ", dtype, graph.device(), " << cppQuoted(label) << ", "
       << shapeList(graphRows(space), type.getDims()) << ");\n";
  }
  for (auto [i, weight] : llvm::enumerate(plan.weights)) {
    WeightType type = weight.getResult().getType();
    std::string count = sliceCount(type.getSlicing());
    std::string label = type.getSlicing() == Slicing::Relation ? "R"
                        : type.getSlicing() == Slicing::NType  ? "T"
                                                               : "";
    os << "  ::hector::emit::checkArgument(weights[" << i << "], "
       << cppQuoted(op + ".forward: weight '" + weight.getName().str() + "'")
       << ", dtype, graph.device(), " << cppQuoted(label) << ", "
       << "std::vector<std::int64_t>" << shapeList(count, type.getDims()) << ");\n";
  }
  if (!cuda)
    os << "  TORCH_CHECK_VALUE(!graph.device().is_cuda(), "
       << cppQuoted(op + ".forward: this library was built without CUDA kernels") << ");\n";
  os << "  const std::uint64_t mask = static_cast<std::uint64_t>(needed);\n"
     << "  if (graph.indexDtype() == at::kLong) {\n"
     << "#ifdef HECTOR_INDEX64\n"
     << "    if (dtype == at::kDouble)\n"
     << "      return run<double, std::int64_t>(graph, inputs, weights, mask);\n"
     << "    return run<float, std::int64_t>(graph, inputs, weights, mask);\n"
     << "#else\n"
     << "    TORCH_CHECK_VALUE(false, "
     << cppQuoted(op + ".forward: the graph has 64-bit indices (2^31 nodes or edges or more, or "
                       "index_dtype=torch.int64); this library was built for 32-bit ones: "
                       "rebuild it with hectorc --index64")
     << ");\n"
     << "#endif\n"
     << "  }\n"
     << "  if (dtype == at::kDouble)\n"
     << "    return run<double, std::int32_t>(graph, inputs, weights, mask);\n"
     << "  return run<float, std::int32_t>(graph, inputs, weights, mask);\n}\n\n";
  os << "} // namespace " << op << "\n\n";

  // Registered by the library's HectorRegistration (printRegistration).
  os << "namespace " << op << " {\n"
     << "void define(torch::Library &m) {\n"
     << "  m.def(\"manifest() -> str\", &manifest);\n"
     << "  m.def(\"forward(Tensor[] graph, int[] graph_sizes, Tensor[] inputs, Tensor[] weights, "
        "int needed=-1) -> Tensor[]\");\n}\n"
     << "void implement(torch::Library &m) { m.impl(\"forward\", &forward); }\n"
     << "} // namespace " << op << "\n\n";
}

/// Prints the registration of every layer's operators when the library is loaded, and
/// `hector_library_namespaces()`, the namespaces it registers. A namespace already registered in
/// the process (the same library loaded from another file) makes PyTorch throw; the static
/// initialiser catches that, leaves that layer unregistered (undoing its partial registration)
/// and lets the loader report it, where TORCH_LIBRARY would end the process.
void printRegistration(const std::vector<LayerPlan> &plans, bool cuda, llvm::raw_ostream &os) {
  os << "namespace {\n"
     << "struct HectorRegistration {\n"
     << "  std::vector<std::unique_ptr<torch::Library>> libraries;\n"
     << "  HectorRegistration() {\n";
  for (const LayerPlan &plan : plans)
    os << "    add(" << cppQuoted("hector_" + plan.id) << ", &hector_" << plan.id << "::define, &hector_"
       << plan.id << "::implement);\n";
  os << "  }\n"
     << "  ~HectorRegistration() {\n"
     << "    while (!libraries.empty())\n      libraries.pop_back();\n  }\n"
     << "  void add(const char *ns, void (*define)(torch::Library &),\n"
     << "           void (*implement)(torch::Library &)) {\n"
     << "    std::vector<std::unique_ptr<torch::Library>> layer;\n"
     << "    try {\n"
     << "      layer.push_back(std::make_unique<torch::Library>(torch::Library::DEF, ns, "
        "std::nullopt, __FILE__, __LINE__));\n"
     << "      define(*layer.back());\n"
     << "      layer.push_back(std::make_unique<torch::Library>(torch::Library::IMPL, ns, "
        "c10::DispatchKey::CPU, __FILE__, __LINE__));\n"
     << "      implement(*layer.back());\n";
  if (cuda)
    os << "#ifdef HECTOR_WITH_CUDA\n"
       << "      layer.push_back(std::make_unique<torch::Library>(torch::Library::IMPL, ns, "
          "c10::DispatchKey::CUDA, __FILE__, __LINE__));\n"
       << "      implement(*layer.back());\n"
       << "#endif\n";
  os << "    } catch (const std::exception &) {\n"
     << "      // Already registered: hector.load / hector::loadLibrary report the namespace.\n"
     << "      while (!layer.empty())\n        layer.pop_back();\n"
     << "      return;\n    }\n"
     << "    for (auto &library : layer)\n      libraries.push_back(std::move(library));\n"
     << "  }\n};\n"
     << "const HectorRegistration registration;\n"
     << "} // namespace\n\n"
     << "/// The operator namespaces this library registers, comma-separated.\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const char *"
        "hector_library_namespaces() {\n  return ";
  std::string namespaces;
  for (auto [i, plan] : llvm::enumerate(plans))
    namespaces += (i ? "," : "") + ("hector_" + plan.id);
  os << cppQuoted(namespaces) << ";\n}\n\n"
     << "/// The hectorc ABI marker that hector.load and hector::loadLibrary look for before they\n"
     << "/// load a file (docs/architecture.md, \"The emitted library and its ABI\").\n"
     << "extern \"C\" __attribute__((visibility(\"default\"), used, section(\".hector_abi\"))) "
        "const char hector_library_abi[] = "
     << cppQuoted("hectorc library abi " + std::to_string(kLibraryAbi)) << ";\n";
}

} // namespace

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

FailureOr<LayerOp> selectEntryLayer(ModuleOp module, StringRef entry) {
  // A layer derived by hector-autodiff is never an entry.
  LayerOp found;
  for (LayerOp layer : module.getOps<LayerOp>())
    if (!isDerivedLayer(layer) && (entry.empty() || layer.getSymName() == entry))
      found = layer;
  if (found)
    return found;
  if (entry.empty())
    return module.emitError("the module holds no hector.layer");
  std::string names;
  for (LayerOp layer : module.getOps<LayerOp>())
    if (!isDerivedLayer(layer))
      names += (names.empty() ? "" : ", ") + layer.getSymName().str();
  return module.emitError() << "no layer named '" << entry << "' (layers: " << names << ")";
}

FailureOr<std::string> libraryNameOf(ModuleOp module, const EmitOptions &options) {
  if (!options.libraryName.empty())
    return options.libraryName;
  FailureOr<LayerOp> entry = selectEntryLayer(module, options.entry);
  if (failed(entry))
    return failure();
  return "hector_" + identifier(entry->getSymName());
}

LogicalResult emitCpp(ModuleOp module, const EmitOptions &options, llvm::raw_ostream &os) {
  FailureOr<std::vector<LayerPlan>> plans = planModule(module, options.entry, options.cuda);
  if (failed(plans))
    return failure();
  os << "// model.cpp: CPU kernels and LibTorch glue, generated by hectorc from the Hector IR.\n"
     << "// Every layer registers the torch operators hector_<layer>_<hash>::manifest and ::forward.\n"
     << "#include \"hector/cpu/segmented_gemm.h\"\n"
     << "#include \"hector/cpu/traversal.h\"\n"
     << "#include \"hector/emit/glue.h\"\n"
     << "#include \"hector/emit/graph_view.h\"\n"
     << "#include \"hector/emit/node_traversal.h\"\n"
     << "#include \"hector/graph.h\"\n\n"
     << "#include <ATen/ATen.h>\n#include <ATen/record_function.h>\n"
     << "#include <torch/library.h>\n";
  if (options.cuda)
    os << "#ifdef HECTOR_WITH_CUDA\n#include <c10/cuda/CUDAGuard.h>\n"
       << "#include <c10/cuda/CUDAStream.h>\n#include <cuda_runtime_api.h>\n#endif\n";
  os << "\n#include <cstddef>\n#include <cstdint>\n#include <exception>\n#include <memory>\n"
     << "#include <optional>\n#include <string>\n#include <vector>\n\n";
  for (LayerPlan &plan : *plans) {
    os << "namespace hector_" << plan.id << " {\nnamespace cpu {\n\n";
    if (failed(printKernels(plan, /*cuda=*/false, os)))
      return failure();
    os << "} // namespace cpu\n} // namespace hector_" << plan.id << "\n\n";
    printGlue(plan, options.cuda, os);
  }
  printRegistration(*plans, options.cuda, os);
  return success();
}

LogicalResult emitCuda(ModuleOp module, const EmitOptions &options, llvm::raw_ostream &os) {
  FailureOr<std::vector<LayerPlan>> plans = planModule(module, options.entry, options.cuda);
  if (failed(plans))
    return failure();
  os << "// model_cuda.cu: CUDA kernels, generated by hectorc from the Hector IR. No LibTorch:\n"
     << "// model.cpp calls these launchers with device pointers and a stream.\n"
     << "#include \"hector/cuda/segmented_gemm.cuh\"\n"
     << "#include \"hector/cuda/traversal.cuh\"\n"
     << "#include \"hector/emit/graph_view.h\"\n"
     << "#include \"hector/emit/node_traversal.cuh\"\n\n"
     << "#include <cuda_runtime.h>\n\n#include <cstddef>\n#include <cstdint>\n\n";
  for (LayerPlan &plan : *plans) {
    os << "namespace hector_" << plan.id << " {\nnamespace cuda {\n\n";
    if (failed(printKernels(plan, /*cuda=*/true, os)))
      return failure();
    printCudaSignatures(plan, /*instantiate=*/true, os);
    os << "\n} // namespace cuda\n} // namespace hector_" << plan.id << "\n\n";
  }
  return success();
}

LogicalResult emitManifest(LayerOp layer, const EmitOptions &options, llvm::raw_ostream &os) {
  auto module = layer->getParentOfType<ModuleOp>();
  FailureOr<std::vector<LayerPlan>> plans =
      planModule(module, layer.getSymName(), options.cuda);
  if (failed(plans))
    return failure();
  for (LayerPlan &plan : *plans)
    if (plan.layer == layer) {
      os << manifestText(manifestOf(plan, options.cuda)) << "\n";
      return success();
    }
  return layer.emitError("the layer is not in its module");
}

} // namespace hector
