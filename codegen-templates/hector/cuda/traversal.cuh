//===- hector/cuda/traversal.cuh - CUDA traversal template ----------------===//
//
// The traversal template on the GPU: an edge-parallel kernel over
// relation-sorted edges, and node-parallel kernels over a CSR with reductions
// in registers (a thread group or a warp per node): sum / mean / max, edge
// softmax (max-subtracted) and its backward, fused softmax-weighted
// aggregation. No atomics: every output is written by the one group that
// owns its node, and every sum has a fixed order (sequential per lane, then
// a fixed butterfly across lanes), so results are deterministic.
//
// Functors are device-callable objects with the conventions of the CPU
// template (hector/cpu/traversal.h):
//   edge map      f(const EdgeRef &)                          -> void
//   node reduce   f(const CsrEdge &) -> row accessor; row(c)  -> T
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH
#define HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH

#include "hector/common.h"

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

/// exp in the precision of T (expf for float, exp for double).
__device__ __forceinline__ float typedExp(float x) { return expf(x); }
__device__ __forceinline__ double typedExp(double x) { return exp(x); }

//===----------------------------------------------------------------------===//
// Edge-parallel map
//===----------------------------------------------------------------------===//

/// One thread per relation-sorted edge (grid-stride); the relation comes from
/// a binary search in relOffsets.
template <typename Index, typename F>
__global__ void __launch_bounds__(kTraversalThreads)
    edgeMapKernel(SortedEdges<Index> g, F f) {
  for (std::int64_t pos = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       pos < g.numEdges; pos += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t lo = 0, hi = g.numRelations; // last r with relOffsets[r] <= pos
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      if (static_cast<std::int64_t>(g.relOffsets[mid]) <= pos)
        lo = mid;
      else
        hi = mid;
    }
    EdgeRef e;
    e.pos = pos;
    e.eid = g.eid ? static_cast<std::int64_t>(g.eid[pos]) : pos;
    e.src = g.src[pos];
    e.dst = g.dst[pos];
    e.rel = lo;
    f(e);
  }
}

/// Launches `edgeMapKernel` over all edges of `g` on `stream`.
template <typename Index, typename F>
cudaError_t launchEdgeMap(const SortedEdges<Index> &g, F f, cudaStream_t stream) {
  if (g.numEdges == 0)
    return cudaSuccess;
  edgeMapKernel<Index, F>
      <<<traversalBlocks(g.numEdges, kTraversalThreads), kTraversalThreads, 0, stream>>>(g, f);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Node-parallel reduction
//===----------------------------------------------------------------------===//

/// A group of `Group` lanes (a power of two, at most 32) per node; lane l
/// owns columns c0 + l + v * Group for v < Vec, accumulated in registers over
/// the node's entries in CSR order.
template <Reduce R, Assign A, int Group, int Vec, typename T, typename Index, typename F>
__global__ void __launch_bounds__(kTraversalThreads)
    nodeReduceKernel(Csr<Index> g, std::int64_t width, T *__restrict__ out, std::int64_t ldo,
                     F f) {
  static_assert(Group > 0 && Group <= 32 && (Group & (Group - 1)) == 0, "Group: 1..32, 2^k");
  using Op = ReduceOp<R, T>;
  const int lane = threadIdx.x % Group;
  const std::int64_t groupsPerGrid = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / Group);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / Group) +
                        threadIdx.x / Group;
       v < g.numNodes; v += groupsPerGrid) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    for (std::int64_t c0 = 0; c0 < width; c0 += Group * Vec) {
      T acc[Vec];
#pragma unroll
      for (int i = 0; i < Vec; ++i)
        acc[i] = Op::identity();
      for (std::int64_t j = begin; j < end; ++j) {
        const auto row = f(CsrEdge{static_cast<std::int64_t>(g.edge[j]),
                                   static_cast<std::int64_t>(g.nbr[j]), v});
#pragma unroll
        for (int i = 0; i < Vec; ++i) {
          const std::int64_t c = c0 + lane + i * Group;
          if (c < width)
            acc[i] = Op::combine(acc[i], row(c));
        }
      }
#pragma unroll
      for (int i = 0; i < Vec; ++i) {
        const std::int64_t c = c0 + lane + i * Group;
        if (c < width) {
          const T r = Op::finish(acc[i], end - begin);
          if constexpr (A == Assign::kAdd)
            out[v * ldo + c] += r;
          else
            out[v * ldo + c] = r;
        }
      }
    }
  }
}

/// Launches `nodeReduceKernel` over all nodes of `g` on `stream`. Choose
/// Group near the row width (32 for width >= 32) and Vec so that
/// Group * Vec covers the width in one or two passes.
template <Reduce R, Assign A, int Group = 32, int Vec = 2, typename T, typename Index,
          typename F>
cudaError_t launchNodeReduce(const Csr<Index> &g, std::int64_t width, T *out, std::int64_t ldo,
                             F f, cudaStream_t stream) {
  if (g.numNodes == 0 || width == 0)
    return cudaSuccess;
  nodeReduceKernel<R, A, Group, Vec, T, Index, F>
      <<<traversalBlocks(g.numNodes, kTraversalThreads / Group), kTraversalThreads, 0, stream>>>(
          g, width, out, ldo, f);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Edge softmax and its backward (a warp per node)
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

/// Softmax statistics of one node and head (called by a whole warp): the
/// maximum logit and sum_j exp(s_j - max), each lane striding the entries.
template <typename T, typename Index>
__device__ __forceinline__ void warpSoftmaxStats(const Csr<Index> &g, std::int64_t begin,
                                                 std::int64_t end, std::int64_t heads,
                                                 std::int64_t h, const T *__restrict__ logits,
                                                 T &mx, T &sum) {
  const int lane = threadIdx.x % 32;
  T m = -FiniteMax<T>::value();
  for (std::int64_t j = begin + lane; j < end; j += 32) {
    const T x = logits[static_cast<std::int64_t>(g.edge[j]) * heads + h];
    m = x > m ? x : m;
  }
  mx = warpMax(m);
  T s = T(0);
  for (std::int64_t j = begin + lane; j < end; j += 32)
    s += typedExp(logits[static_cast<std::int64_t>(g.edge[j]) * heads + h] - mx);
  sum = warpSum(s);
}

/// alpha[e, h] = exp(s[e, h] - max_h) / sum_h over each node's entries; a
/// warp per node, heads in turn; [E, heads] tables by edge row.
template <typename T, typename Index>
__global__ void __launch_bounds__(kTraversalThreads)
    edgeSoftmaxKernel(Csr<Index> g, std::int64_t heads, const T *__restrict__ logits,
                      T *__restrict__ alpha) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warpsPerGrid = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) +
                        threadIdx.x / 32;
       v < g.numNodes; v += warpsPerGrid) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    if (begin == end)
      continue;
    for (std::int64_t h = 0; h < heads; ++h) {
      T mx, sum;
      warpSoftmaxStats(g, begin, end, heads, h, logits, mx, sum);
      const T inv = T(1) / sum;
      for (std::int64_t j = begin + lane; j < end; j += 32) {
        const std::int64_t at = static_cast<std::int64_t>(g.edge[j]) * heads + h;
        alpha[at] = typedExp(logits[at] - mx) * inv;
      }
    }
  }
}

/// dS[e, h] (=|+=) alpha[e, h] * (dAlpha[e, h] - sum_j alpha[j, h] dAlpha[j, h]).
template <typename T, Assign A, typename Index>
__global__ void __launch_bounds__(kTraversalThreads)
    edgeSoftmaxBackwardKernel(Csr<Index> g, std::int64_t heads, const T *__restrict__ alpha,
                              const T *__restrict__ dalpha, T *__restrict__ dlogits) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warpsPerGrid = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) +
                        threadIdx.x / 32;
       v < g.numNodes; v += warpsPerGrid) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    for (std::int64_t h = 0; h < heads; ++h) {
      T dot = T(0);
      for (std::int64_t j = begin + lane; j < end; j += 32) {
        const std::int64_t at = static_cast<std::int64_t>(g.edge[j]) * heads + h;
        dot += alpha[at] * dalpha[at];
      }
      dot = warpSum(dot);
      for (std::int64_t j = begin + lane; j < end; j += 32) {
        const std::int64_t at = static_cast<std::int64_t>(g.edge[j]) * heads + h;
        const T d = alpha[at] * (dalpha[at] - dot);
        if constexpr (A == Assign::kAdd)
          dlogits[at] += d;
        else
          dlogits[at] = d;
      }
    }
  }
}

/// Launches `edgeSoftmaxKernel` on `stream`.
template <typename T, typename Index>
cudaError_t launchEdgeSoftmax(const Csr<Index> &g, std::int64_t heads, const T *logits,
                              T *alpha, cudaStream_t stream) {
  if (g.numNodes == 0 || heads == 0)
    return cudaSuccess;
  edgeSoftmaxKernel<T, Index>
      <<<traversalBlocks(g.numNodes, kTraversalThreads / 32), kTraversalThreads, 0, stream>>>(
          g, heads, logits, alpha);
  return cudaGetLastError();
}

/// Launches `edgeSoftmaxBackwardKernel` on `stream`.
template <typename T, Assign A = Assign::kStore, typename Index>
cudaError_t launchEdgeSoftmaxBackward(const Csr<Index> &g, std::int64_t heads, const T *alpha,
                                      const T *dalpha, T *dlogits, cudaStream_t stream) {
  if (g.numNodes == 0 || heads == 0)
    return cudaSuccess;
  edgeSoftmaxBackwardKernel<T, A, Index>
      <<<traversalBlocks(g.numNodes, kTraversalThreads / 32), kTraversalThreads, 0, stream>>>(
          g, heads, alpha, dalpha, dlogits);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Fused softmax-weighted aggregation (a warp per node)
//===----------------------------------------------------------------------===//

/// out[v, h, c] (=|+=) sum_e softmax_e(logits[., h]) * msg(e)(h * width + c)
/// in one pass over each node's entries with an online softmax: lane l owns
/// columns c0 + l + 32 i (i < Vec) with a running maximum, rescaled sum and
/// accumulator per column. A node without entries yields 0. With
/// `alphaOut`, the normalised weights are written too (warp statistics).
template <typename T, Assign A, int Vec, typename Index, typename F>
__global__ void __launch_bounds__(kTraversalThreads)
    softmaxAggregateKernel(Csr<Index> g, std::int64_t heads, std::int64_t width,
                           const T *__restrict__ logits, F msg, T *__restrict__ out,
                           std::int64_t ldo, T *__restrict__ alphaOut) {
  const int lane = threadIdx.x % 32;
  const std::int64_t cols = heads * width;
  const std::int64_t warpsPerGrid = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t v = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) +
                        threadIdx.x / 32;
       v < g.numNodes; v += warpsPerGrid) {
    const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
    for (std::int64_t c0 = 0; c0 < cols; c0 += 32 * Vec) {
      T mx[Vec], sum[Vec], acc[Vec];
#pragma unroll
      for (int i = 0; i < Vec; ++i) {
        mx[i] = T(0);
        sum[i] = T(0);
        acc[i] = T(0);
      }
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t e = g.edge[j];
        const auto row = msg(CsrEdge{e, static_cast<std::int64_t>(g.nbr[j]), v});
#pragma unroll
        for (int i = 0; i < Vec; ++i) {
          const std::int64_t c = c0 + lane + 32 * i;
          if (c >= cols)
            continue;
          const T x = logits[e * heads + c / width];
          const T z = row(c);
          if (j == begin) {
            mx[i] = x;
            sum[i] = T(1);
            acc[i] = z;
          } else if (x > mx[i]) {
            const T scale = typedExp(mx[i] - x);
            mx[i] = x;
            sum[i] = sum[i] * scale + T(1);
            acc[i] = acc[i] * scale + z;
          } else {
            const T w = typedExp(x - mx[i]);
            sum[i] += w;
            acc[i] += w * z;
          }
        }
      }
#pragma unroll
      for (int i = 0; i < Vec; ++i) {
        const std::int64_t c = c0 + lane + 32 * i;
        if (c >= cols)
          continue;
        const T r = begin < end ? acc[i] / sum[i] : T(0);
        if constexpr (A == Assign::kAdd)
          out[v * ldo + c] += r;
        else
          out[v * ldo + c] = r;
      }
    }
    if (alphaOut != nullptr && begin < end) {
      for (std::int64_t h = 0; h < heads; ++h) {
        T m, s;
        warpSoftmaxStats(g, begin, end, heads, h, logits, m, s);
        const T inv = T(1) / s;
        for (std::int64_t j = begin + lane; j < end; j += 32) {
          const std::int64_t at = static_cast<std::int64_t>(g.edge[j]) * heads + h;
          alphaOut[at] = typedExp(logits[at] - m) * inv;
        }
      }
    }
  }
}

/// Launches `softmaxAggregateKernel` on `stream` (`alphaOut` may be null).
template <typename T, Assign A = Assign::kStore, int Vec = 2, typename Index, typename F>
cudaError_t launchSoftmaxAggregate(const Csr<Index> &g, std::int64_t heads, std::int64_t width,
                                   const T *logits, F msg, T *out, std::int64_t ldo, T *alphaOut,
                                   cudaStream_t stream) {
  if (g.numNodes == 0 || heads * width == 0)
    return cudaSuccess;
  softmaxAggregateKernel<T, A, Vec, Index, F>
      <<<traversalBlocks(g.numNodes, kTraversalThreads / 32), kTraversalThreads, 0, stream>>>(
          g, heads, width, logits, msg, out, ldo, alphaOut);
  return cudaGetLastError();
}

//===----------------------------------------------------------------------===//
// Segmented row sum
//===----------------------------------------------------------------------===//

/// A warp per segment (grid-stride); lane l sums columns l, l + 32, ... over the segment's rows
/// in order (row(j) = rows[j], or j when `rows` is null). Deterministic, no atomics.
template <typename T, typename Index>
__global__ void __launch_bounds__(kTraversalThreads)
    segmentedRowSumKernel(std::int64_t numSegments, const Index *__restrict__ segOffsets,
                          const Index *__restrict__ rows, const T *__restrict__ in,
                          std::int64_t width, T *__restrict__ out) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t s = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) +
                        threadIdx.x / 32;
       s < numSegments; s += warps) {
    const std::int64_t begin = segOffsets[s], end = segOffsets[s + 1];
    for (std::int64_t c = lane; c < width; c += 32) {
      T acc = T(0);
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t r = rows ? static_cast<std::int64_t>(rows[j]) : j;
        acc += in[r * width + c];
      }
      out[s * width + c] = acc;
    }
  }
}

/// Launches `segmentedRowSumKernel` on `stream` (see cpu::segmentedRowSum for the contract).
template <typename T, typename Index>
cudaError_t launchSegmentedRowSum(std::int64_t numSegments, const Index *segOffsets,
                                  const Index *rows, const T *in, std::int64_t width, T *out,
                                  cudaStream_t stream) {
  if (numSegments == 0 || width == 0)
    return cudaSuccess;
  segmentedRowSumKernel<T, Index>
      <<<traversalBlocks(numSegments, kTraversalThreads / 32), kTraversalThreads, 0, stream>>>(
          numSegments, segOffsets, rows, in, width, out);
  return cudaGetLastError();
}

} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_TRAVERSAL_CUH
