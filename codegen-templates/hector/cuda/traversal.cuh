//===- hector/cuda/traversal.cuh - CUDA traversal template ----------------===//
//
// The traversal template on the GPU: an edge-parallel kernel over the rows of a traversal
// (edges by destination, or unique pairs by node), warp butterfly reductions, and the segmented
// row sum. No atomics: every output is written by the one thread (or warp) that owns it, and
// every sum has a fixed order, so results are deterministic. Node-parallel traversals with fused
// reductions are in hector/emit/node_traversal.cuh.
//
// Functor convention (device-callable objects, as for the CPU template hector/cpu/traversal.h):
//   edge map      f(const EdgeRef &)                          -> void
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH
#define HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH

#include "hector/kernel_common.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace hector {
namespace tmpl {
namespace gpu {

/// Threads per block of the traversal kernels.
constexpr int kTraversalThreads = 256;

/// Blocks for `items` work items of `perBlock` each, capped for grid-stride
/// loops.
inline unsigned traversalBlocks(std::int64_t items, std::int64_t perBlock) {
  const std::int64_t blocks = ceilDiv<std::int64_t>(items, perBlock);
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

//===----------------------------------------------------------------------===//
// Edge-parallel map
//===----------------------------------------------------------------------===//

/// One thread per row (grid-stride); the row's group comes from a binary search in groupPtr.
template <typename Index, typename F>
__global__ void __launch_bounds__(kTraversalThreads) edgeMapKernel(EdgeRows<Index> g, F f) {
  for (std::int64_t pos = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       pos < g.numRows; pos += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t lo = 0, hi = g.numGroups; // the last group with groupPtr[group] <= pos
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      if (static_cast<std::int64_t>(g.groupPtr[mid]) <= pos)
        lo = mid;
      else
        hi = mid;
    }
    f(g.at(pos, lo));
  }
}

/// Launches `edgeMapKernel` over all rows of `g` on `stream`.
template <typename Index, typename F>
cudaError_t launchEdgeMap(const EdgeRows<Index> &g, F f, cudaStream_t stream) {
  if (g.numRows == 0)
    return cudaSuccess;
  edgeMapKernel<Index, F>
      <<<traversalBlocks(g.numRows, kTraversalThreads), kTraversalThreads, 0, stream>>>(g, f);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Warp reductions
//===----------------------------------------------------------------------===//

/// Butterfly sum / max across a warp: a fixed pattern, so the result (and
/// its rounding) does not vary between runs; every lane gets the total.
template <typename T> __device__ __forceinline__ T warpSum(T x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
template <typename T> __device__ __forceinline__ T warpMax(T x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const T y = __shfl_xor_sync(0xffffffffu, x, offset);
    x = y > x ? y : x;
  }
  return x;
}

//===----------------------------------------------------------------------===//
// Sums over the unique pairs of a CSR
//===----------------------------------------------------------------------===//

/// The CUDA form of cpu::runSum: a warp per CSR node (grid-stride), its runs found by a binary
/// search of g.runPtr; lane l sums columns l, l + 32, ... in order. Deterministic, no atomics.
template <typename T, typename Index>
__global__ void __launch_bounds__(kTraversalThreads)
    runSumKernel(Csr<Index> g, const T *__restrict__ in, std::int64_t width, T *__restrict__ out,
                 bool toNodes) {
  using A = AccumType<T>; // the sums' type: float for 16-bit rows, rounded once
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) +
                        threadIdx.x / 32;
       v < g.numNodes; v += warps) {
    const std::int64_t end = g.rowPtr[v + 1];
    const std::int64_t first = g.firstRunFrom(g.rowPtr[v]);
    for (std::int64_t c = lane; c < width; c += 32) {
      A node = A(0);
      for (std::int64_t k = first; k < g.numRuns && static_cast<std::int64_t>(g.runPtr[k]) < end;
           ++k) {
        const std::int64_t pair = g.runPair[k];
        if (toNodes) {
          node += static_cast<A>(in[pair * width + c]);
        } else {
          A acc = A(0);
          for (std::int64_t i = g.runPtr[k]; i < static_cast<std::int64_t>(g.runPtr[k + 1]); ++i)
            acc += static_cast<A>(in[g.edgeAt(i) * width + c]);
          out[pair * width + c] = static_cast<T>(acc);
        }
      }
      if (toNodes)
        out[v * width + c] = static_cast<T>(node);
    }
  }
}

/// Launches `runSumKernel` on `stream` (see cpu::runSum for the contract).
template <typename T, typename Index>
cudaError_t launchRunSum(const Csr<Index> &g, const T *in, std::int64_t width, T *out,
                         bool toNodes, cudaStream_t stream) {
  if (g.numNodes == 0 || width == 0)
    return cudaSuccess;
  runSumKernel<T, Index>
      <<<traversalBlocks(g.numNodes, kTraversalThreads / 32), kTraversalThreads, 0, stream>>>(
          g, in, width, out, toNodes);
  return cudaGetLastError();
}

} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH
