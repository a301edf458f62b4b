//===- hector/cpu/traversal.h - CPU traversal template --------------------===//
//
// The traversal template on the CPU: an edge-parallel map over the rows of a traversal (edges
// by destination, or unique pairs by node), and the segmented row sum. Node-parallel
// traversals with fused reductions are in hector/emit/node_traversal.h. A node's rows are
// always visited by one thread in order, so every reduction is deterministic and race-free.
//
// Functor convention (emitted code passes structs or lambdas):
//   edge map      f(const EdgeRef &)                          -> void
//                 f.prefetch(const EdgeRef &) (optional)       -> void: starts loading the rows
//                 the row will read at random, kEdgePrefetchAhead rows before it is computed
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_TRAVERSAL_H
#define HECTOR_TEMPLATES_CPU_TRAVERSAL_H

#include "hector/cpu/parallel.h"
#include "hector/kernel_common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace hector {
namespace tmpl {
namespace cpu {

/// Rows handled by one task of `edgeMap`.
constexpr std::int64_t kEdgeChunk = 4096;
/// Rows `edgeMap` looks ahead when the functor can prefetch (F::prefetch(EdgeRef)).
constexpr std::int64_t kEdgePrefetchAhead = 8;

namespace detail {
template <typename F, typename = void> struct HasEdgePrefetch : std::false_type {};
template <typename F>
struct HasEdgePrefetch<
    F, std::void_t<decltype(std::declval<const F &>().prefetch(std::declval<const EdgeRef &>()))>>
    : std::true_type {};

/// The group of row `pos` of `g`: found by binary search in `g.groupPtr`.
template <typename Index> std::int64_t groupOf(const EdgeRows<Index> &g, std::int64_t pos) {
  return std::upper_bound(g.groupPtr, g.groupPtr + g.numGroups + 1, Index(pos)) - g.groupPtr - 1;
}
} // namespace detail

/// Calls `f(EdgeRef)` once for every row of `g`, in parallel over chunks of consecutive rows.
/// Each chunk finds its first row's group by binary search in `g.groupPtr` and walks on, so a
/// group with many rows (a hub node) is shared among chunks. A functor with a prefetch() is
/// called for the row kEdgePrefetchAhead rows ahead within the chunk (its indices are read in
/// order, the rows they point to at random: loading those early overlaps their misses).
template <typename Index, typename F> void edgeMap(const EdgeRows<Index> &g, F &&f) {
  using Functor = std::remove_cv_t<std::remove_reference_t<F>>;
  constexpr bool kPrefetch = detail::HasEdgePrefetch<Functor>::value;
  const std::int64_t numChunks = ceilDiv<std::int64_t>(g.numRows, kEdgeChunk);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t chunk = 0; chunk < numChunks; ++chunk) {
    const std::int64_t begin = chunk * kEdgeChunk;
    const std::int64_t end = std::min<std::int64_t>(g.numRows, begin + kEdgeChunk);
    // Moves `at` (the group of an earlier row, or of `pos`) on to the group of row `pos`.
    const auto advance = [&](std::int64_t &at, std::int64_t pos) {
      while (pos >= static_cast<std::int64_t>(g.groupPtr[at + 1]))
        ++at;
    };
    std::int64_t group = detail::groupOf(g, begin), ahead = group;
    (void)ahead;
    if constexpr (kPrefetch)
      for (std::int64_t pos = begin; pos < std::min(end, begin + kEdgePrefetchAhead); ++pos) {
        advance(ahead, pos);
        f.prefetch(g.at(pos, ahead));
      }
    for (std::int64_t pos = begin; pos < end; ++pos) {
      advance(group, pos);
      if constexpr (kPrefetch) {
        const std::int64_t next = pos + kEdgePrefetchAhead;
        if (next < end) {
          advance(ahead, next);
          f.prefetch(g.at(next, ahead));
        }
      }
      f(g.at(pos, group));
    }
  }
}

/// Nodes handed to a thread at a time by `runSum`.
constexpr std::int64_t kRunSumChunk = 64;

/// Sums over the (node, relation) runs of a CSR with runs (g.runPtr, g.runPair: the unique
/// pairs). `toNodes`: out[v] = sum of in[pair] over the pairs of node v, in relation order; else
/// out[pair] = sum of in[edge] over the pair's edges, in CSR order. Rows of `width` elements;
/// each output row is summed by one thread in order: deterministic. A node without entries (or a
/// pair without edges) yields 0. Sums run in AccumType<T> (float for 16-bit elements, in a
/// per-thread row buffer) and are rounded to T once.
template <typename T, typename Index>
void runSum(const Csr<Index> &g, const T *in, std::int64_t width, T *out, bool toNodes) {
  using Acc = AccumType<T>;
  constexpr bool kDirect = std::is_same<T, Acc>::value;
  const std::int64_t numChunks = ceilDiv<std::int64_t>(g.numNodes, kRunSumChunk);
  // The rows of 16-bit sums: one per thread, allocated before the parallel region.
  std::vector<Acc> rowBuffers(kDirect ? 0 : static_cast<std::size_t>(maxThreadCount() * width));
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t chunk = 0; chunk < numChunks; ++chunk) {
    Acc *HECTOR_RESTRICT buffer = kDirect ? nullptr : rowBuffers.data() + threadIndex() * width;
    // The row an output row is summed in: the output itself, or the thread's buffer.
    const auto sumRow = [&](T *o) -> Acc * {
      if constexpr (kDirect)
        return o;
      else
        return buffer;
    };
    const auto storeRow = [&](T *o, const Acc *acc) {
      if constexpr (!kDirect)
        for (std::int64_t c = 0; c < width; ++c)
          o[c] = T(acc[c]);
      (void)o;
      (void)acc;
    };
    const std::int64_t vb = chunk * kRunSumChunk;
    const std::int64_t ve = std::min<std::int64_t>(g.numNodes, vb + kRunSumChunk);
    std::int64_t k = g.firstRunFrom(g.rowPtr[vb]);
    for (std::int64_t v = vb; v < ve; ++v) {
      const std::int64_t end = g.rowPtr[v + 1];
      T *node = out + v * width;
      Acc *HECTOR_RESTRICT nodeSum = sumRow(node);
      if (toNodes)
        std::fill(nodeSum, nodeSum + width, Acc(0));
      for (; k < g.numRuns && static_cast<std::int64_t>(g.runPtr[k]) < end; ++k) {
        const std::int64_t pair = g.runPair[k];
        if (toNodes) {
          const T *HECTOR_RESTRICT x = in + pair * width;
#pragma omp simd
          for (std::int64_t c = 0; c < width; ++c)
            nodeSum[c] += Acc(x[c]);
        } else {
          T *o = out + pair * width;
          Acc *HECTOR_RESTRICT pairSum = sumRow(o);
          std::fill(pairSum, pairSum + width, Acc(0));
          for (std::int64_t i = g.runPtr[k]; i < static_cast<std::int64_t>(g.runPtr[k + 1]); ++i) {
            const T *HECTOR_RESTRICT x = in + g.edgeAt(i) * width;
#pragma omp simd
            for (std::int64_t c = 0; c < width; ++c)
              pairSum[c] += Acc(x[c]);
          }
          storeRow(o, pairSum);
        }
      }
      if (toNodes)
        storeRow(node, nodeSum);
    }
  }
}

} // namespace cpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CPU_TRAVERSAL_H
