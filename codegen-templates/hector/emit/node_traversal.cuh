//===- hector/emit/node_traversal.cuh - Multi-pass node traversal (CUDA) --===//
//
// The CUDA form of hector/emit/node_traversal.h, balanced over power-law degrees: a group of G
// lanes per node (G = 32, a warp, on graphs of average degree 16 or more, else 8), its lanes
// splitting the node's edges (lane l takes entries l, l + G, ...), each with its own copy of
// the functor's state; after each pass the lanes' partial accumulators are combined by a fixed
// butterfly (F::combine), so every lane holds the node's totals before the next pass reads
// them, and the group's first lane finishes the node. A node with at least kHeavyDegree edges is
// left to a second kernel that gives it a whole block: the block's warps split its edges, and
// their states are combined in shared memory in warp order. Every order is fixed by the degree:
// deterministic, no atomics.
//
// Functor F (emitted), beyond the protocol of node_traversal.h:
//   void combine(State &, const State &other, int pass) const;  adds other's pass accumulators
// State must be trivially copyable (arrays of T): it travels through shuffles and shared memory.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_NODE_TRAVERSAL_CUH
#define HECTOR_EMIT_NODE_TRAVERSAL_CUH

#include "hector/kernel_common.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace hector {
namespace emit {
namespace gpu {

/// Threads per block of the node traversal: 4 warps, each a node at a time.
constexpr int kNodeTraversalThreads = 128;
/// Threads per block of the traversal of heavy nodes: a node per block.
constexpr int kHeavyTraversalThreads = 256;
/// The degree from which a node gets a whole block.
constexpr std::int64_t kHeavyDegree = 4096;

namespace detail {

/// `state` of the lane `lane ^ offset` within groups of `width` lanes (a butterfly step), word
/// by word.
template <typename State>
__device__ __forceinline__ State shuffleXor(const State &state, int offset, int width) {
  static_assert(std::is_trivially_copyable<State>::value, "a traversal state is plain data");
  constexpr int kWords = (sizeof(State) + 3) / 4;
  union Words {
    State state;
    unsigned word[kWords];
  };
  Words in, out;
  in.state = state;
#pragma unroll
  for (int w = 0; w < kWords; ++w)
    out.word[w] = __shfl_xor_sync(0xffffffffu, in.word[w], offset, width);
  return out.state;
}

/// Combines the pass accumulators of the states of each group of G lanes (every lane of the
/// group gets the total).
template <int G, typename F, typename State>
__device__ __forceinline__ void groupCombine(const F &f, State &state, int pass) {
#pragma unroll
  for (int offset = G / 2; offset > 0; offset >>= 1) {
    const State other = shuffleXor(state, offset, G);
    f.combine(state, other, pass);
  }
}

} // namespace detail

/// A group of G lanes per node of degree below kHeavyDegree (grid-stride over the nodes).
template <int G, int Passes, typename Index, typename F>
__global__ void __launch_bounds__(kNodeTraversalThreads)
    nodeTraversalKernel(tmpl::Csr<Index> g, F f) {
  static_assert(G > 0 && G <= 32 && (G & (G - 1)) == 0, "G: 1..32, a power of two");
  using State = typename F::State;
  const int lane = threadIdx.x % G;
  const std::int64_t groups = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / G);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / G) + threadIdx.x / G;
       v < g.numNodes; v += groups) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    if (end - begin >= kHeavyDegree)
      continue; // heavyNodeTraversalKernel's
    State state;
    f.begin(state, v);
    for (int pass = 0; pass < Passes; ++pass) {
      for (std::int64_t j = begin + lane; j < end; j += G) {
        const std::int64_t e = g.edgeAt(j);
        f.edge(state, pass, tmpl::CsrEdge{e, g.nbrAt(j), v, v});
      }
      detail::groupCombine<G>(f, state, pass);
      f.endPass(state, pass, v, end - begin);
    }
    if (lane == 0)
      f.finish(state, v, end - begin);
  }
}

/// A block per node of degree kHeavyDegree or more: the block scans its share of the nodes for
/// them, then its threads split each one's edges; warp states are combined by warp 0's lane 0
/// in warp order through shared memory and handed back to every thread.
template <int Passes, typename Index, typename F>
__global__ void __launch_bounds__(kHeavyTraversalThreads)
    heavyNodeTraversalKernel(tmpl::Csr<Index> g, F f) {
  using State = typename F::State;
  constexpr int kWarps = kHeavyTraversalThreads / 32;
  __shared__ State partial[kWarps];
  __shared__ std::int64_t found[kHeavyTraversalThreads];
  __shared__ int numFound;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (std::int64_t base = static_cast<std::int64_t>(blockIdx.x) * blockDim.x; base < g.numNodes;
       base += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // The heavy nodes among the next blockDim.x, in node order.
    if (threadIdx.x == 0)
      numFound = 0;
    __syncthreads();
    const std::int64_t mine = base + threadIdx.x;
    const bool heavy = mine < g.numNodes && g.rowPtr[mine + 1] - g.rowPtr[mine] >= kHeavyDegree;
    const unsigned ballot = __ballot_sync(0xffffffffu, heavy);
    if (lane == 0 && ballot) {
      // Warps append in warp order: the order of the list does not matter (each node is
      // computed by this block alone), only that every heavy node is in it once.
      const int at = atomicAdd(&numFound, __popc(ballot));
      int k = 0;
      for (int l = 0; l < 32; ++l)
        if (ballot >> l & 1u)
          found[at + k++] = base + warp * 32 + l;
    }
    __syncthreads();
    const int count = numFound;
    for (int n = 0; n < count; ++n) {
      const std::int64_t v = found[n];
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      State state;
      f.begin(state, v);
      for (int pass = 0; pass < Passes; ++pass) {
        for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
          const std::int64_t e = g.edgeAt(j);
          f.edge(state, pass, tmpl::CsrEdge{e, g.nbrAt(j), v, v});
        }
        detail::groupCombine<32>(f, state, pass);
        if (lane == 0)
          partial[warp] = state;
        __syncthreads();
        if (threadIdx.x == 0) {
          State total = partial[0];
          for (int w = 1; w < kWarps; ++w)
            f.combine(total, partial[w], pass);
          partial[0] = total;
        }
        __syncthreads();
        state = partial[0];
        __syncthreads();
        f.endPass(state, pass, v, end - begin);
      }
      if (threadIdx.x == 0)
        f.finish(state, v, end - begin);
      __syncthreads();
    }
  }
}

/// Launches the node traversal over all nodes of `g` on `stream`: groups of 8 or 32 lanes per
/// node (by the average degree), and a block per heavy node.
template <int Passes, typename Index, typename F>
cudaError_t launchNodeTraversal(const tmpl::Csr<Index> &g, const F &f, cudaStream_t stream) {
  if (g.numNodes == 0)
    return cudaSuccess;
  const bool wide = g.numEntries >= 16 * g.numNodes;
  const std::int64_t perBlock = kNodeTraversalThreads / (wide ? 32 : 8);
  std::int64_t blocks = tmpl::ceilDiv<std::int64_t>(g.numNodes, perBlock);
  if (blocks > 65535)
    blocks = 65535;
  if (wide)
    nodeTraversalKernel<32, Passes, Index, F>
        <<<static_cast<unsigned>(blocks), kNodeTraversalThreads, 0, stream>>>(g, f);
  else
    nodeTraversalKernel<8, Passes, Index, F>
        <<<static_cast<unsigned>(blocks), kNodeTraversalThreads, 0, stream>>>(g, f);
  std::int64_t heavyBlocks = tmpl::ceilDiv<std::int64_t>(g.numNodes, kHeavyTraversalThreads);
  if (heavyBlocks > 1024)
    heavyBlocks = 1024;
  heavyNodeTraversalKernel<Passes, Index, F>
      <<<static_cast<unsigned>(heavyBlocks), kHeavyTraversalThreads, 0, stream>>>(g, f);
  return cudaGetLastError();
}

/// The CUDA form of cpu::pairTraversal: a warp per run of the CSR (a unique pair; grid-stride
/// over g.runPtr), the lanes splitting the run's edges as in nodeTraversalKernel; lane 0
/// finishes the pair. The run's CSR node is found by a binary search of g.rowPtr.
template <typename Index, typename F>
__global__ void __launch_bounds__(kNodeTraversalThreads) pairTraversalKernel(tmpl::Csr<Index> g,
                                                                             F f) {
  using State = typename F::State;
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t k =
           static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
       k < g.numRuns; k += warps) {
    const std::int64_t begin = g.runPtr[k], end = g.runPtr[k + 1];
    const std::int64_t pair = g.runPair[k], v = g.nodeOf(begin);
    State state;
    f.begin(state, pair);
    for (std::int64_t j = begin + lane; j < end; j += 32)
      f.edge(state, 0, tmpl::CsrEdge{g.edgeAt(j), g.nbrAt(j), pair, v});
    detail::groupCombine<32>(f, state, 0);
    f.endPass(state, 0, pair, end - begin);
    if (lane == 0)
      f.finish(state, pair, end - begin);
  }
}

/// Launches `pairTraversalKernel` over the runs of `g` on `stream`.
template <typename Index, typename F>
cudaError_t launchPairTraversal(const tmpl::Csr<Index> &g, const F &f, cudaStream_t stream) {
  if (g.numRuns == 0)
    return cudaSuccess;
  std::int64_t blocks = tmpl::ceilDiv<std::int64_t>(g.numRuns, kNodeTraversalThreads / 32);
  if (blocks > 65535)
    blocks = 65535;
  pairTraversalKernel<Index, F>
      <<<static_cast<unsigned>(blocks), kNodeTraversalThreads, 0, stream>>>(g, f);
  return cudaGetLastError();
}

} // namespace gpu
} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_NODE_TRAVERSAL_CUH
