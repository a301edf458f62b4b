//===- hector/emit/node_traversal.h - Multi-pass node traversal (CPU) -----===//
//
// A node-parallel traversal that runs several dependent reductions over the edges of each
// node in registers (a decomposed softmax: max, then sum of exponentials, then the weighted
// sum) and finishes with node-level elementwise work, all in one sweep over the nodes.
//
// Functor F (emitted):
//   struct State;                                          per-node accumulators
//   void begin(State &, int64_t node) const;
//   void edge(State &, int pass, const CsrEdge &) const;   one edge of the node, pass p
//   void endPass(State &, int pass, int64_t node, int64_t degree) const;
//   void finish(const State &, int64_t node, int64_t degree) const;
//
// Every node is owned by one thread and its edges are visited in CSR order: deterministic.
//
// pairTraversal runs the same protocol over the unique pairs of a compacted space (one pass,
// each pair a run of a CSR node's entries): the sum of a pair's member edges is kept in
// registers, as a node's aggregates are.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_NODE_TRAVERSAL_H
#define HECTOR_EMIT_NODE_TRAVERSAL_H

#include "hector/kernel_common.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace hector {
namespace emit {
namespace cpu {

/// Edges a traversal looks ahead when the functor can prefetch (F::prefetch).
constexpr std::int64_t kPrefetchAhead = 8;
/// Nodes handed to a thread at a time.
constexpr std::int64_t kNodeChunk = 64;

namespace detail {
template <typename F, typename = void> struct HasPrefetch : std::false_type {};
template <typename F>
struct HasPrefetch<F, std::void_t<decltype(std::declval<const F &>().prefetch(
                          std::declval<const tmpl::CsrEdge &>()))>> : std::true_type {};

/// Prefetches the rows of entry j of `g` when it is below `end` (the chunk's last entry).
template <typename Index, typename F>
inline void prefetchEntry(const tmpl::Csr<Index> &g, const F &f, std::int64_t j, std::int64_t end) {
  if constexpr (HasPrefetch<F>::value)
    if (j < end) {
      const std::int64_t e = g.edgeAt(j);
      f.prefetch(tmpl::CsrEdge{e, static_cast<std::int64_t>(g.nbr[e]), -1, -1});
    }
}
} // namespace detail

/// Runs body(vb, ve, chunkEnd) for every chunk of kNodeChunk nodes [vb, ve), in parallel (one
/// thread per chunk), after prefetching the chunk's first kPrefetchAhead CSR entries; chunkEnd
/// is the chunk's CSR end, the bound of every prefetch inside it.
template <typename Index, typename F, typename Body>
void forEachNodeChunk(const tmpl::Csr<Index> &g, const F &f, const Body &body) {
  const std::int64_t numChunks = tmpl::ceilDiv<std::int64_t>(g.numNodes, kNodeChunk);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t chunk = 0; chunk < numChunks; ++chunk) {
    const std::int64_t vb = chunk * kNodeChunk;
    const std::int64_t ve = std::min<std::int64_t>(g.numNodes, vb + kNodeChunk);
    const std::int64_t chunkEnd = g.rowPtr[ve];
    for (std::int64_t j = g.rowPtr[vb]; j < g.rowPtr[vb] + kPrefetchAhead; ++j)
      detail::prefetchEntry(g, f, j, chunkEnd);
    body(vb, ve, chunkEnd);
  }
}

/// Runs `Passes` passes of `f` over the entries of every node of `g`, then `f.finish`. Threads
/// take kNodeChunk nodes at a time; the first pass prefetches kPrefetchAhead entries ahead
/// across the chunk's nodes.
template <int Passes, typename Index, typename F>
void nodeTraversal(const tmpl::Csr<Index> &g, const F &f) {
  forEachNodeChunk(g, f, [&](std::int64_t vb, std::int64_t ve, std::int64_t chunkEnd) {
    for (std::int64_t v = vb; v < ve; ++v) {
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      typename F::State state;
      f.begin(state, v);
      for (int pass = 0; pass < Passes; ++pass) {
        for (std::int64_t j = begin; j < end; ++j) {
          if (pass == 0)
            detail::prefetchEntry(g, f, j + kPrefetchAhead, chunkEnd);
          const std::int64_t e = g.edgeAt(j);
          f.edge(state, pass, tmpl::CsrEdge{e, static_cast<std::int64_t>(g.nbr[e]), v, v});
        }
        f.endPass(state, pass, v, end - begin);
      }
      f.finish(state, v, end - begin);
    }
  });
}

/// Runs `f` over the unique (node, relation) pairs of a CSR whose entries are grouped by
/// relation within each node, as over the nodes of a one-pass node traversal: every run of a
/// node's entries with one relation is a pair (its id inv[edge]); its edges are visited in CSR
/// order with `node` = the pair and `csrNode` = the CSR node, then `f.finish` writes the pair's
/// row. Deterministic: every pair is owned by one thread.
template <typename Index, typename F>
void pairTraversal(const tmpl::Csr<Index> &g, const Index *etype, const Index *inv, const F &f) {
  forEachNodeChunk(g, f, [&](std::int64_t vb, std::int64_t ve, std::int64_t chunkEnd) {
    for (std::int64_t v = vb; v < ve; ++v) {
      const std::int64_t end = g.rowPtr[v + 1];
      for (std::int64_t j = g.rowPtr[v]; j < end;) {
        const std::int64_t first = g.edgeAt(j);
        const std::int64_t rel = etype[first], pair = inv[first];
        typename F::State state;
        f.begin(state, pair);
        std::int64_t degree = 0;
        for (; j < end; ++j) {
          const std::int64_t e = g.edgeAt(j);
          if (static_cast<std::int64_t>(etype[e]) != rel)
            break;
          detail::prefetchEntry(g, f, j + kPrefetchAhead, chunkEnd);
          f.edge(state, 0, tmpl::CsrEdge{e, static_cast<std::int64_t>(g.nbr[e]), pair, v});
          ++degree;
        }
        f.endPass(state, 0, pair, degree);
        f.finish(state, pair, degree);
      }
    }
  });
}

} // namespace cpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_H
