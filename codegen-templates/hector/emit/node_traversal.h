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

} // namespace cpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_H
