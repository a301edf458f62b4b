//===- hector/emit/graph_view.h - The graph as emitted kernels see it -----===//
//
// Plain pointers and counts of a preprocessed hector::Graph (no LibTorch), the math of the
// elementwise ops in the precision of T, and the uniform signature of emitted kernels. Valid
// C++17 for the host compiler and nvcc.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_GRAPH_VIEW_H
#define HECTOR_EMIT_GRAPH_VIEW_H

#include "hector/kernel_common.h"
#include "hector/emit/graph_schema.h"

#include <cmath>
#include <cstdint>

namespace hector {
namespace emit {

/// Device (or host) pointers into a preprocessed graph (see graph_schema.h for each array),
/// with indices of type I (int32 or int64, the graph's index dtype). Every edge-indexed table is
/// in the graph's internal order (by destination, then relation, then user edge id). A structure
/// the layer does not read may be null.
template <typename I> struct GraphView {
  std::int64_t numNodes = 0, numEdges = 0, numRelations = 0, numNtypes = 1;
  std::int64_t numUniqueSrc = 0, numUniqueDst = 0;
#define HECTOR_GRAPH_VIEW_FIELD(name, field, group, length) const I *field = nullptr;
  HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_VIEW_FIELD)
#undef HECTOR_GRAPH_VIEW_FIELD

  /// The edges for edge-parallel traversals, grouped by destination.
  tmpl::EdgeRows<I> edges() const {
    tmpl::EdgeRows<I> r;
    r.numRows = numEdges;
    r.numGroups = numNodes;
    r.groupPtr = inPtr;
    r.src = sortedSrc;
    r.rel = sortedEtype;
    return r;
  }
  /// The unique (source, relation) pairs as the rows of an edge-parallel traversal over
  /// compacted rows: row u is pair u, src = dst = its node, grouped by relation.
  tmpl::EdgeRows<I> uniqueSrcPairs() const { return pairsOf(numUniqueSrc, uniqueSrcPtr, uniqueSrc); }
  /// The same over the unique (destination, relation) pairs.
  tmpl::EdgeRows<I> uniqueDstPairs() const { return pairsOf(numUniqueDst, uniqueDstPtr, uniqueDst); }
  /// Incoming edges of every node: the positions in_ptr[v] .. (neighbour: the source).
  tmpl::Csr<I> inCsr() const { return {numNodes, numEdges, inPtr, nullptr, sortedSrc}; }
  /// Outgoing edges of every node (neighbour: the destination, in CSR order).
  tmpl::Csr<I> outCsr() const { return {numNodes, numEdges, outPtr, outPos, outDst}; }
  /// inCsr() with its runs: the unique (destination, relation) pairs.
  tmpl::Csr<I> inPairCsr() const {
    return withRuns(inCsr(), numUniqueDst, uniqueDstRunPtr, uniqueDstRun);
  }
  /// outCsr() with its runs: the unique (source, relation) pairs.
  tmpl::Csr<I> outPairCsr() const {
    return withRuns(outCsr(), numUniqueSrc, uniqueSrcRunPtr, uniqueSrcRun);
  }
  /// The runs of inCsr() without its neighbours (what a run sum reads).
  tmpl::Csr<I> inRuns() const {
    return withRuns({numNodes, numEdges, inPtr, nullptr, nullptr}, numUniqueDst, uniqueDstRunPtr,
                    uniqueDstRun);
  }
  /// The runs of outCsr() without its neighbours.
  tmpl::Csr<I> outRuns() const {
    return withRuns({numNodes, numEdges, outPtr, outPos, nullptr}, numUniqueSrc, uniqueSrcRunPtr,
                    uniqueSrcRun);
  }

private:
  static tmpl::Csr<I> withRuns(tmpl::Csr<I> c, std::int64_t numRuns, const I *runPtr,
                               const I *runPair) {
    c.numRuns = numRuns;
    c.runPtr = runPtr;
    c.runPair = runPair;
    return c;
  }
  tmpl::EdgeRows<I> pairsOf(std::int64_t count, const I *relPtr, const I *node) const {
    tmpl::EdgeRows<I> r;
    r.numRows = count;
    r.numGroups = numRelations;
    r.groupPtr = relPtr;
    r.groupIsNode = false;
    r.node = node;
    return r;
  }
};

/// Starts loading a row of `n` elements of T (at most its first 512 bytes) into the caches: the
/// CPU traversals call a functor's prefetch() a few edges ahead of the edge they compute.
///
/// The empty volatile asm gives the function a side effect: GCC treats __builtin_prefetch as
/// free of them, so a prefetch() left out of line (or split off by partial inlining) is found
/// pure and its call, whose result nobody uses, deleted; the traversals then ran without any
/// prefetch. It is neither a barrier nor an instruction.
template <typename T> inline void prefetchRow(const T *row, std::int64_t n) {
#if !defined(__CUDA_ARCH__) && (defined(__GNUC__) || defined(__clang__))
  const char *p = reinterpret_cast<const char *>(row);
  const std::int64_t bytes = n * static_cast<std::int64_t>(sizeof(T));
  for (std::int64_t off = 0; off < bytes && off < 512; off += 64)
    __builtin_prefetch(p + off);
  __asm__ __volatile__("" : : "r"(p));
#else
  (void)row;
  (void)n;
#endif
}

/// The elementwise functions of the Hector dialect, in the precision of T (the functors call
/// them with their accumulation type, tmpl::AccumType of the element type).
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
/// log(1 + exp(x)), and x itself above 20, as PyTorch's softplus (beta 1, threshold 20).
template <typename T> HECTOR_HD T softplus(T x) {
  using std::exp;
  using std::log1p;
  return x > T(20) ? x : log1p(exp(x));
}
/// Lanes of the fixed-order sums below: eight partial sums, which the compiler maps onto
/// vector lanes, combined pairwise.
constexpr int kSumLanes = 8;

/// sum_{k < D} a[k] * b[k] in a fixed order (the same on every thread count and device):
/// partial sums over k mod 8, combined pairwise; rows narrower than 16 are summed in order.
/// Computed in T (the accumulation type) whatever the element types of a and b.
template <typename T, int D, typename P, typename Q> HECTOR_HD T dot(const P *a, const Q *b) {
  if constexpr (D < 2 * kSumLanes) {
    T acc = T(0);
    for (int k = 0; k < D; ++k)
      acc += T(a[k]) * T(b[k]);
    return acc;
  } else {
    constexpr int M = D / kSumLanes * kSumLanes;
    T acc[kSumLanes] = {};
    for (int k = 0; k < M; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l)
        acc[l] += T(a[k + l]) * T(b[k + l]);
    for (int k = M; k < D; ++k)
      acc[k - M] += T(a[k]) * T(b[k]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
}

/// sum_{k < D} a[k], in the order of dot(), in T.
template <typename T, int D, typename P> HECTOR_HD T sum(const P *a) {
  if constexpr (D < 2 * kSumLanes) {
    T acc = T(0);
    for (int k = 0; k < D; ++k)
      acc += T(a[k]);
    return acc;
  } else {
    constexpr int M = D / kSumLanes * kSumLanes;
    T acc[kSumLanes] = {};
    for (int k = 0; k < M; k += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l)
        acc[l] += T(a[k + l]);
    for (int k = M; k < D; ++k)
      acc[k - M] += T(a[k]);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  }
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
