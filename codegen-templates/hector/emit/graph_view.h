//===- hector/emit/graph_view.h - The graph as emitted kernels see it -----===//
//
// Plain pointers and counts of a preprocessed hector::Graph (no LibTorch), the math of the
// elementwise ops in the precision of T, and the uniform signature of emitted kernels. Valid
// C++17 for the host compiler and nvcc.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_GRAPH_VIEW_H
#define HECTOR_EMIT_GRAPH_VIEW_H

#include "hector/common.h"

#include <cmath>
#include <cstdint>

namespace hector {
namespace emit {

/// Device (or host) pointers into a preprocessed graph; see hector::Graph for each array.
/// Every edge-indexed table is in relation-sorted order.
struct GraphView {
  std::int64_t numNodes = 0, numEdges = 0, numRelations = 0, numNtypes = 1;
  std::int64_t numUniqueSrc = 0, numUniqueDst = 0;
  const std::int64_t *relPtr = nullptr, *sortedSrc = nullptr, *sortedDst = nullptr,
                     *sortedEtype = nullptr;
  const std::int64_t *inPtr = nullptr, *inEid = nullptr, *inSrc = nullptr;
  const std::int64_t *outPtr = nullptr, *outEid = nullptr, *outDst = nullptr;
  const std::int64_t *uniqueSrcPtr = nullptr, *uniqueSrc = nullptr, *uniqueSrcInv = nullptr;
  const std::int64_t *uniqueDstPtr = nullptr, *uniqueDst = nullptr, *uniqueDstInv = nullptr;
  const std::int64_t *ntype = nullptr, *ntypePtr = nullptr, *ntypePerm = nullptr;
  /// The members of every unique pair: its edges, and per node its pairs.
  const std::int64_t *uniqueSrcEdgePtr = nullptr, *uniqueSrcEdges = nullptr,
                     *uniqueDstEdgePtr = nullptr;
  const std::int64_t *uniqueSrcNodePtr = nullptr, *uniqueSrcByNode = nullptr,
                     *uniqueDstNodePtr = nullptr, *uniqueDstByNode = nullptr;
  /// One-segment offsets {0, rows}: for nodes, edges, unique sources, unique destinations.
  const std::int64_t *nodeRange = nullptr, *edgeRange = nullptr, *uniqueSrcRange = nullptr,
                     *uniqueDstRange = nullptr;

  /// The relation-sorted edges for edge-parallel traversals.
  tmpl::SortedEdges<std::int64_t> sortedEdges() const {
    return edgesOf(numEdges, relPtr, sortedSrc, sortedDst);
  }
  /// The unique (source, relation) pairs as the "edges" of an edge-parallel traversal over
  /// compacted rows: row u is pair u, its relation from uniqueSrcPtr, src = dst = its node.
  tmpl::SortedEdges<std::int64_t> uniqueSrcPairs() const {
    return edgesOf(numUniqueSrc, uniqueSrcPtr, uniqueSrc, uniqueSrc);
  }
  /// The same over the unique (destination, relation) pairs.
  tmpl::SortedEdges<std::int64_t> uniqueDstPairs() const {
    return edgesOf(numUniqueDst, uniqueDstPtr, uniqueDst, uniqueDst);
  }
  /// Incoming edges of every node (neighbour: the source).
  tmpl::Csr<std::int64_t> inCsr() const { return {numNodes, numEdges, inPtr, inEid, inSrc}; }
  /// Outgoing edges of every node (neighbour: the destination).
  tmpl::Csr<std::int64_t> outCsr() const { return {numNodes, numEdges, outPtr, outEid, outDst}; }

private:
  /// `count` rows grouped by relation by `relOffsets`, with their two ends.
  tmpl::SortedEdges<std::int64_t> edgesOf(std::int64_t count, const std::int64_t *relOffsets,
                                          const std::int64_t *src, const std::int64_t *dst) const {
    tmpl::SortedEdges<std::int64_t> g;
    g.numEdges = count;
    g.numRelations = numRelations;
    g.relOffsets = relOffsets;
    g.src = src;
    g.dst = dst;
    return g;
  }
};

/// The elementwise functions of the Hector dialect, in the precision of T.
namespace ops {
template <typename T> HECTOR_HD T exp(T x) {
  using std::exp;
  return exp(x);
}
template <typename T> HECTOR_HD T tanh(T x) {
  using std::tanh;
  return tanh(x);
}
template <typename T> HECTOR_HD T sigmoid(T x) { return T(1) / (T(1) + ops::exp(-x)); }
template <typename T> HECTOR_HD T relu(T x) { return x > T(0) ? x : T(0); }
template <typename T> HECTOR_HD T leakyRelu(T x, T slope) { return x >= T(0) ? x : slope * x; }
/// Exact (erf-based) GELU.
template <typename T> HECTOR_HD T gelu(T x) {
  using std::erf;
  return T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440)));
}
/// Gradient of leakyRelu (and of relu with slope 0) at x for the output gradient g: as in
/// PyTorch, the derivative at 0 is the slope.
template <typename T> HECTOR_HD T leakyReluGrad(T g, T x, T slope) {
  return x > T(0) ? g : slope * g;
}
/// Gradient of the exact GELU: g * (Phi(x) + x phi(x)).
template <typename T> HECTOR_HD T geluGrad(T g, T x) {
  using std::erf;
  using std::exp;
  const T cdf = T(0.5) * (T(1) + erf(x * T(0.70710678118654752440)));
  const T pdf = T(0.39894228040143267794) * exp(T(-0.5) * x * x);
  return g * (cdf + x * pdf);
}
} // namespace ops

} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_GRAPH_VIEW_H
