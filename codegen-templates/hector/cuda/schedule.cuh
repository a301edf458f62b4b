//===- hector/cuda/schedule.cuh - Device-side block schedules -------------===//
//
// Maps thread blocks to segments in proportion to their rows without a
// device-to-host copy: a one-block kernel turns segment offsets into
// per-segment unit-start offsets (an exclusive prefix sum of
// ceil(rows_s / unitRows)), and every block of the main kernel binary-searches
// its segment. The main grid is launched with the host-known upper bound
// ceil(numRows / unitRows) + numSegments; surplus blocks exit at once.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_SCHEDULE_CUH
#define HECTOR_TEMPLATES_CUDA_SCHEDULE_CUH

#include "hector/kernel_common.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace hector {
namespace tmpl {
namespace gpu {

/// Threads of the one-block prefix-sum kernel.
constexpr int kScheduleThreads = 1024;

/// unitStart[s] = sum_{t < s} ceil((off[t+1] - off[t]) / unitRows) for
/// s in [0, numSegments]. One block of kScheduleThreads threads; each thread
/// owns a contiguous run of segments, then a block-wide scan combines runs.
template <typename Index>
__global__ void __launch_bounds__(kScheduleThreads)
    unitOffsetsKernel(const Index *__restrict__ off, std::int64_t numSegments,
                      std::int64_t unitRows, std::int64_t *__restrict__ unitStart) {
  __shared__ std::int64_t partial[kScheduleThreads];
  const int tid = threadIdx.x;
  const std::int64_t per = ceilDiv<std::int64_t>(numSegments, kScheduleThreads);
  const std::int64_t begin = tid * per;
  const std::int64_t end = begin + per < numSegments ? begin + per : numSegments;
  std::int64_t local = 0;
  for (std::int64_t s = begin; s < end; ++s)
    local += ceilDiv<std::int64_t>(static_cast<std::int64_t>(off[s + 1] - off[s]), unitRows);
  partial[tid] = local;
  __syncthreads();
  // Hillis-Steele inclusive scan over the per-thread totals.
  for (int stride = 1; stride < kScheduleThreads; stride <<= 1) {
    const std::int64_t add = tid >= stride ? partial[tid - stride] : 0;
    __syncthreads();
    partial[tid] += add;
    __syncthreads();
  }
  std::int64_t run = partial[tid] - local; // exclusive
  for (std::int64_t s = begin; s < end; ++s) {
    unitStart[s] = run;
    run += ceilDiv<std::int64_t>(static_cast<std::int64_t>(off[s + 1] - off[s]), unitRows);
  }
  if (tid == kScheduleThreads - 1)
    unitStart[numSegments] = partial[tid];
}

/// The segment owning global unit `unit`: the last s with unitStart[s] <=
/// unit (empty segments share their successor's start and are skipped).
__device__ __forceinline__ std::int64_t findSegment(const std::int64_t *__restrict__ unitStart,
                                                    std::int64_t numSegments,
                                                    std::int64_t unit) {
  std::int64_t lo = 0, hi = numSegments; // answer in [lo, hi)
  while (hi - lo > 1) {
    const std::int64_t mid = (lo + hi) / 2;
    if (unitStart[mid] <= unit)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/// Upper bound on the number of units, computable on the host.
inline std::int64_t maxUnits(std::int64_t numRows, std::int64_t numSegments,
                             std::int64_t unitRows) {
  return ceilDiv<std::int64_t>(numRows, unitRows) + numSegments;
}

/// Rounds a byte count up to 256 (the alignment of workspace sub-buffers).
inline std::size_t alignBytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Launches `unitOffsetsKernel` on `stream`.
template <typename Index>
cudaError_t launchUnitOffsets(const Index *off, std::int64_t numSegments, std::int64_t unitRows,
                              std::int64_t *unitStart, cudaStream_t stream) {
  unitOffsetsKernel<Index><<<1, kScheduleThreads, 0, stream>>>(off, numSegments, unitRows,
                                                               unitStart);
  return cudaGetLastError();
}

} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_SCHEDULE_CUH
