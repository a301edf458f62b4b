//===- hector/emit/node_traversal.cuh - Multi-pass node traversal (CUDA) --===//
//
// The CUDA form of hector/emit/node_traversal.h: one thread per node (grid-stride), the same
// functor protocol with host-and-device members, registers for the accumulators, no atomics.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_NODE_TRAVERSAL_CUH
#define HECTOR_EMIT_NODE_TRAVERSAL_CUH

#include "hector/common.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace hector {
namespace emit {
namespace gpu {

/// Threads per block of the node traversal.
constexpr int kNodeTraversalThreads = 128;

template <int Passes, typename Index, typename F>
__global__ void __launch_bounds__(kNodeTraversalThreads)
    nodeTraversalKernel(tmpl::Csr<Index> g, F f) {
  for (std::int64_t v = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       v < g.numNodes; v += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
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

/// Launches `nodeTraversalKernel` over all nodes of `g` on `stream`.
template <int Passes, typename Index, typename F>
cudaError_t launchNodeTraversal(const tmpl::Csr<Index> &g, const F &f, cudaStream_t stream) {
  if (g.numNodes == 0)
    return cudaSuccess;
  std::int64_t blocks = tmpl::ceilDiv<std::int64_t>(g.numNodes, kNodeTraversalThreads);
  if (blocks > 65535)
    blocks = 65535;
  nodeTraversalKernel<Passes, Index, F>
      <<<static_cast<unsigned>(blocks), kNodeTraversalThreads, 0, stream>>>(g, f);
  return cudaGetLastError();
}

/// The CUDA form of cpu::pairTraversal: one thread per unique pair (grid-stride).
template <typename F>
__global__ void __launch_bounds__(kNodeTraversalThreads)
    pairTraversalKernel(std::int64_t numPairs, const std::int64_t *ptr,
                        const std::int64_t *rows, F f) {
  for (std::int64_t u = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       u < numPairs; u += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t begin = ptr[u], end = ptr[u + 1];
    typename F::State state;
    f.begin(state, u);
    for (std::int64_t j = begin; j < end; ++j)
      f.edge(state, 0, tmpl::CsrEdge{rows ? rows[j] : j, -1, u});
    f.endPass(state, 0, u, end - begin);
    f.finish(state, u, end - begin);
  }
}

/// Launches `pairTraversalKernel` over `numPairs` pairs on `stream`.
template <typename F>
cudaError_t launchPairTraversal(std::int64_t numPairs, const std::int64_t *ptr,
                                const std::int64_t *rows, const F &f, cudaStream_t stream) {
  if (numPairs == 0)
    return cudaSuccess;
  std::int64_t blocks = tmpl::ceilDiv<std::int64_t>(numPairs, kNodeTraversalThreads);
  if (blocks > 65535)
    blocks = 65535;
  pairTraversalKernel<F>
      <<<static_cast<unsigned>(blocks), kNodeTraversalThreads, 0, stream>>>(numPairs, ptr, rows, f);
  return cudaGetLastError();
}

} // namespace gpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_CUH
