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
// each pair a run of a CSR node's entries, from the CSR's runs): the sum of a pair's member
// edges is kept in registers, as a node's aggregates are.
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
constexpr std::int64_t kPrefetchAhead = 16;
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
      f.prefetch(tmpl::CsrEdge{e, g.nbrAt(j), -1, -1});
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
          f.edge(state, pass, tmpl::CsrEdge{e, g.nbrAt(j), v, v});
        }
        f.endPass(state, pass, v, end - begin);
      }
      f.finish(state, v, end - begin);
    }
  });
}

/// Runs `f` over the unique (node, relation) pairs of a CSR with runs (g.runPtr, g.runPair), as
/// over the nodes of a one-pass node traversal: every run of a node's entries with one relation
/// is a pair; its edges are visited in CSR order with `node` = the pair and `csrNode` = the CSR
/// node, then `f.finish` writes the pair's row. Every index it reads is in CSR order (the edge
/// rows, the neighbours, the runs); only the functor's rows are read out of order, and those are
/// prefetched. Deterministic: every pair is owned by one thread.
template <typename Index, typename F> void pairTraversal(const tmpl::Csr<Index> &g, const F &f) {
  forEachNodeChunk(g, f, [&](std::int64_t vb, std::int64_t ve, std::int64_t chunkEnd) {
    std::int64_t v = vb;
    for (std::int64_t k = g.firstRunFrom(g.rowPtr[vb]);
         k < g.numRuns && static_cast<std::int64_t>(g.runPtr[k]) < chunkEnd; ++k) {
      const std::int64_t begin = g.runPtr[k], end = g.runPtr[k + 1];
      while (static_cast<std::int64_t>(g.rowPtr[v + 1]) <= begin)
        ++v;
      const std::int64_t pair = g.runPair[k];
      typename F::State state;
      f.begin(state, pair);
      for (std::int64_t j = begin; j < end; ++j) {
        detail::prefetchEntry(g, f, j + kPrefetchAhead, chunkEnd);
        f.edge(state, 0, tmpl::CsrEdge{g.edgeAt(j), g.nbrAt(j), pair, v});
      }
      f.endPass(state, 0, pair, end - begin);
      f.finish(state, pair, end - begin);
    }
  });
}

} // namespace cpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_H
