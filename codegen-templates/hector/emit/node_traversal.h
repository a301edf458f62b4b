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
// pairTraversal runs the same protocol over the unique pairs of a compacted space (one pass):
// the sum of a pair's member edges is kept in registers, as a node's aggregates are.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_NODE_TRAVERSAL_H
#define HECTOR_EMIT_NODE_TRAVERSAL_H

#include "hector/common.h"

#include <cstdint>

namespace hector {
namespace emit {
namespace cpu {

/// Runs `Passes` passes of `f` over the entries of every node of `g`, then `f.finish`.
template <int Passes, typename Index, typename F>
void nodeTraversal(const tmpl::Csr<Index> &g, const F &f) {
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t v = 0; v < g.numNodes; ++v) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    typename F::State state;
    f.begin(state, v);
    for (int pass = 0; pass < Passes; ++pass) {
      for (std::int64_t j = begin; j < end; ++j)
        f.edge(state, pass,
               tmpl::CsrEdge{static_cast<std::int64_t>(g.edge[j]),
                             static_cast<std::int64_t>(g.nbr[j]), v});
      f.endPass(state, pass, v, end - begin);
    }
    f.finish(state, v, end - begin);
  }
}

/// Runs `f` over the unique pairs of a compacted space, as over the nodes of a one-pass node
/// traversal: pair u's member edges are the positions rows[j] for j in [ptr[u], ptr[u + 1])
/// (the positions j themselves when `rows` is null), visited in that order with `node` = u
/// and no neighbour (-1; the functor reads both ends from the edge), then `f.finish` writes
/// the pair's row. Deterministic: every pair is owned by one thread.
template <typename F>
void pairTraversal(std::int64_t numPairs, const std::int64_t *ptr, const std::int64_t *rows,
                   const F &f) {
#pragma omp parallel for schedule(dynamic, 64)
  for (std::int64_t u = 0; u < numPairs; ++u) {
    const std::int64_t begin = ptr[u], end = ptr[u + 1];
    typename F::State state;
    f.begin(state, u);
    for (std::int64_t j = begin; j < end; ++j)
      f.edge(state, 0, tmpl::CsrEdge{rows ? rows[j] : j, -1, u});
    f.endPass(state, 0, u, end - begin);
    f.finish(state, u, end - begin);
  }
}

} // namespace cpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_H
