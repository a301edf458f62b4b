//===- hector/cuda/segmented_gemm.cuh - CUDA segmented GEMM template ------===//
//
// The GEMM template on the GPU. One launch covers every segment: blocks are
// mapped to (segment, row tile) on the device (schedule.cuh), the gather of
// A's rows is fused into the shared-memory tile loads and the scatter /
// accumulation of C's rows into the store. Accumulation is in AccumType<T>:
// FP32 for float and for the 16-bit types (bfloat16, float16), FP64 for
// double; a 16-bit result is rounded to T once, in the store. The math of one
// tile is a policy (`TileMath`) selected by `MathPath`: SIMT FMAs (every
// type), TF32 tensor cores for float (mma.sync m16n8k8), or 16-bit tensor
// cores for bfloat16 and float16 (mma.sync m16n8k16), both with FP32
// accumulation, on sm_80 and newer. The paths share the loads, the schedule
// and the epilogue; the weight gradient uses the same policies on its
// [rows x K] and [rows x N] tiles. A problem whose operands have different
// element types (16-bit rows of A beside a float32 B, see GemmProblem) is
// staged in shared memory as float (StageType) and computed as a float32 one;
// its C is stored in C's own type.
//
// The weight-gradient form (dB_s = A_s^T dC_s) splits each segment's rows
// into fixed-size chunks, writes one partial per chunk and reduces the
// partials in chunk order: deterministic, no floating-point atomics.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_SEGMENTED_GEMM_CUH
#define HECTOR_TEMPLATES_CUDA_SEGMENTED_GEMM_CUH

#include "hector/cuda/mma_layout.h"
#include "hector/cuda/schedule.cuh"
#include "hector/kernel_common.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace hector {
namespace tmpl {
namespace gpu {

//===----------------------------------------------------------------------===//
// Tile configurations and the math policy
//===----------------------------------------------------------------------===//

/// A SIMT tile: each block computes a BM x BN tile of C stepping BK along K;
/// each thread owns TM x TN outputs, strided by (BM/TM, BN/TN) so that a
/// warp's shared-memory reads and global stores are contiguous.
template <int BM_, int BN_, int BK_, int TM_, int TN_> struct GemmTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int kThreadRows = BM / TM, kThreadCols = BN / TN;
  static constexpr int kThreads = kThreadRows * kThreadCols;
  static_assert(BM % TM == 0 && BN % TN == 0, "tile must divide into thread tiles");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
};

/// Whether T is a 16-bit floating type stored as its bits (c10::BFloat16, c10::Half): a
/// trivially copyable class of 2 bytes that converts to and from float, whose
/// std::numeric_limits say which format it is: 8 significant bits (bfloat16) or 11 (float16).
template <typename T> constexpr bool isSixteenBitFloat() {
  if constexpr (std::is_class_v<T> && sizeof(T) == 2 && std::is_trivially_copyable_v<T> &&
                std::numeric_limits<T>::is_specialized)
    return std::numeric_limits<T>::digits == 8 || std::numeric_limits<T>::digits == 11;
  else
    return false;
}

/// Default tiles: 64 x 64 outputs, 256 threads, 4 x 4 per thread; 32 deep for the 16-bit
/// types (two tensor-core steps of 16 per shared-memory stage).
template <typename T> struct DefaultGemmTile {
  static_assert(isSixteenBitFloat<T>(), "the GEMM takes float, double, bfloat16 or float16");
  using type = GemmTile<64, 64, 32, 4, 4>;
};
template <> struct DefaultGemmTile<float> { using type = GemmTile<64, 64, 16, 4, 4>; };
template <> struct DefaultGemmTile<double> { using type = GemmTile<64, 64, 8, 4, 4>; };

/// The element type of the shared-memory tiles of a problem whose first operand is T and whose
/// second is TB: T itself when they agree, otherwise their accumulation type (a 16-bit A beside
/// a float32 B is widened to float as it is staged, exactly, and multiplied as float32).
template <typename T, typename TB>
using StageType = std::conditional_t<std::is_same_v<T, TB>, T, AccumType<T>>;

/// Which arithmetic computes a tile.
enum class MathPath : int {
  kSimt = 0,       ///< CUDA cores, AccumType<T> accumulation (all types, all tiles)
  kTensorTf32 = 1, ///< tensor cores: operands rounded to TF32, FP32 accumulation (float)
  kTensor16 = 2,   ///< tensor cores on bfloat16 or float16 operands, FP32 accumulation
};

/// Shared-memory operand tiles of one K step: As is [BK][BM + Pad] and Bs is
/// [BK][BN + Pad] (k-major). The SIMT path pads by one, which keeps the
/// k-fastest stores of the gathered A tile and of a transposed B tile free
/// of bank conflicts; the tensor-core path pads by eight, which keeps its
/// fragment loads (eight rows by four k per warp) free of them.
template <typename T, typename Tile, int Pad> struct SmemTiles {
  T As[Tile::BK][Tile::BM + Pad];
  T Bs[Tile::BK][Tile::BN + Pad];
};

/// The math of one tile, as a policy: `Smem` is its shared-memory tiles,
/// `Accum` holds a thread's share of the BM x BN accumulator; `step`
/// consumes one K step from shared memory; `visit(acc, f)` calls
/// f(m, n, value) for every output the thread owns.
template <typename T, typename Tile, MathPath Path> struct TileMath;

/// SIMT: each thread owns TM x TN outputs and sums over k in increasing order, in
/// AccumType<T> (16-bit operands are widened to float as they leave shared memory).
template <typename T, typename Tile> struct TileMath<T, Tile, MathPath::kSimt> {
  using A = AccumType<T>;
  using Smem = SmemTiles<T, Tile, 1>;

  struct Accum {
    A v[Tile::TM][Tile::TN];
  };

  __device__ __forceinline__ static void clear(Accum &acc) {
#pragma unroll
    for (int i = 0; i < Tile::TM; ++i)
#pragma unroll
      for (int j = 0; j < Tile::TN; ++j)
        acc.v[i][j] = A(0);
  }

  __device__ __forceinline__ static void step(const Smem &s, Accum &acc) {
    const int tx = threadIdx.x % Tile::kThreadCols, ty = threadIdx.x / Tile::kThreadCols;
#pragma unroll
    for (int k = 0; k < Tile::BK; ++k) {
      A a[Tile::TM], b[Tile::TN];
#pragma unroll
      for (int i = 0; i < Tile::TM; ++i)
        a[i] = static_cast<A>(s.As[k][ty + i * Tile::kThreadRows]);
#pragma unroll
      for (int j = 0; j < Tile::TN; ++j)
        b[j] = static_cast<A>(s.Bs[k][tx + j * Tile::kThreadCols]);
#pragma unroll
      for (int i = 0; i < Tile::TM; ++i)
#pragma unroll
        for (int j = 0; j < Tile::TN; ++j)
          acc.v[i][j] += a[i] * b[j];
    }
  }

  template <typename F> __device__ __forceinline__ static void visit(const Accum &acc, F &&f) {
    const int tx = threadIdx.x % Tile::kThreadCols, ty = threadIdx.x / Tile::kThreadCols;
#pragma unroll
    for (int i = 0; i < Tile::TM; ++i)
#pragma unroll
      for (int j = 0; j < Tile::TN; ++j)
        f(ty + i * Tile::kThreadRows, tx + j * Tile::kThreadCols, acc.v[i][j]);
  }
};

/// What the tensor-core tile maths share: the block's warps split the tile
/// as mma::WarpTiling says, with products of shape Frag (mma::Tf32 or
/// mma::Sixteen); each lane holds FP32 accumulators laid out as PTX's C
/// fragment. `fmaStep` computes step kk of the same fragments with FP32
/// FMAs, for architectures without the instruction (before sm_80).
template <typename T, typename Tile, typename Frag, int Pad> struct WarpMmaMath {
  using A = float;
  using F = Frag;
  using W = mma::WarpTiling<Tile, Frag>;
  using Smem = SmemTiles<T, Tile, Pad>;

  struct Accum {
    float v[W::kTilesM][W::kTilesN][mma::kCRegs];
  };

  __device__ __forceinline__ static void clear(Accum &acc) {
#pragma unroll
    for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < W::kTilesN; ++j)
#pragma unroll
        for (int r = 0; r < mma::kCRegs; ++r)
          acc.v[i][j][r] = 0.f;
  }

  __device__ __forceinline__ static void fmaStep(const Smem &s, Accum &acc, int kk) {
    forEachC(acc, [&](const mma::Element &out, float &v) {
      float sum = v;
#pragma unroll
      for (int k = kk * F::kK; k < (kk + 1) * F::kK; ++k)
        sum += static_cast<float>(s.As[k][out.row]) * static_cast<float>(s.Bs[k][out.col]);
      v = sum;
    });
  }

  template <typename G> __device__ __forceinline__ static void visit(const Accum &acc, G &&f) {
    forEachC(acc, [&](const mma::Element &e, const float &v) { f(e.row, e.col, v); });
  }

private:
  /// g(element of the tile, this lane's accumulator of it) for each of the lane's C registers
  /// (AccumRef: Accum or const Accum).
  template <typename AccumRef, typename G>
  __device__ __forceinline__ static void forEachC(AccumRef &acc, G &&g) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
    for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < W::kTilesN; ++j)
#pragma unroll
        for (int r = 0; r < mma::kCRegs; ++r)
          g(W::cAt(warp, lane, i, j, r), acc.v[i][j][r]);
  }
};

/// TF32 tensor cores (float only): each K step is kSteps products of depth
/// 8 per 16 x 8 piece, the operands rounded to TF32 (to nearest, ties away
/// from zero), FP32 accumulation. The shared tiles are padded by 8, so that
/// the fragment loads (eight rows by four k per warp) meet no bank conflicts.
template <typename Tile>
struct TileMath<float, Tile, MathPath::kTensorTf32> : WarpMmaMath<float, Tile, mma::Tf32, 8> {
  using Base = WarpMmaMath<float, Tile, mma::Tf32, 8>;
  using typename Base::Accum;
  using typename Base::F;
  using typename Base::Smem;
  using typename Base::W;

  __device__ __forceinline__ static void step(const Smem &s, Accum &acc) {
#pragma unroll
    for (int kk = 0; kk < W::kSteps; ++kk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
      std::uint32_t a[W::kTilesM][F::kARegs], b[W::kTilesN][F::kBRegs];
#pragma unroll
      for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
        for (int r = 0; r < F::kARegs; ++r) {
          const mma::Element e = W::aAt(warp, lane, i, r, kk);
          a[i][r] = toTf32(s.As[e.row][e.col]);
        }
#pragma unroll
      for (int j = 0; j < W::kTilesN; ++j)
#pragma unroll
        for (int r = 0; r < F::kBRegs; ++r) {
          const mma::Element e = W::bAt(warp, lane, j, r, kk);
          b[j][r] = toTf32(s.Bs[e.row][e.col]);
        }
#pragma unroll
      for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < W::kTilesN; ++j) {
          float *d = acc.v[i][j];
          asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                       "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                       : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                       : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
                         "r"(b[j][1]));
        }
#else
      Base::fmaStep(s, acc, kk);
#endif
    }
  }

private:
  /// x rounded to TF32 (10 explicit mantissa bits), in a 32-bit register.
  __device__ __forceinline__ static std::uint32_t toTf32(float x) {
    std::uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
    return r;
  }
};

/// 16-bit tensor cores (bfloat16 or float16, as isSixteenBitFloat<T> says):
/// each K step is kSteps products of depth 16 per 16 x 8 piece on the
/// stored 16-bit operands (no rounding: the products are exact in FP32),
/// FP32 accumulation. The shared tiles are padded by 4 elements, so that a
/// warp's fragment loads (8 rows by 4 pairs of k) fall in distinct banks.
template <typename T, typename Tile>
struct TileMath<T, Tile, MathPath::kTensor16> : WarpMmaMath<T, Tile, mma::Sixteen, 4> {
  static_assert(isSixteenBitFloat<T>(), "the 16-bit tensor-core path takes bfloat16 or float16");
  static constexpr bool kBfloat16 = std::numeric_limits<T>::digits == 8;
  using Base = WarpMmaMath<T, Tile, mma::Sixteen, 4>;
  using typename Base::Accum;
  using typename Base::F;
  using typename Base::Smem;
  using typename Base::W;

  __device__ __forceinline__ static void step(const Smem &s, Accum &acc) {
#pragma unroll
    for (int kk = 0; kk < W::kSteps; ++kk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
      const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
      std::uint32_t a[W::kTilesM][F::kARegs], b[W::kTilesN][F::kBRegs];
#pragma unroll
      for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
        for (int r = 0; r < F::kARegs; ++r) {
          const mma::Element lo = W::aAt(warp, lane, i, 2 * r, kk);
          const mma::Element hi = W::aAt(warp, lane, i, 2 * r + 1, kk);
          a[i][r] = pack(s.As[lo.row][lo.col], s.As[hi.row][hi.col]);
        }
#pragma unroll
      for (int j = 0; j < W::kTilesN; ++j)
#pragma unroll
        for (int r = 0; r < F::kBRegs; ++r) {
          const mma::Element lo = W::bAt(warp, lane, j, 2 * r, kk);
          const mma::Element hi = W::bAt(warp, lane, j, 2 * r + 1, kk);
          b[j][r] = pack(s.Bs[lo.row][lo.col], s.Bs[hi.row][hi.col]);
        }
#pragma unroll
      for (int i = 0; i < W::kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < W::kTilesN; ++j) {
          float *d = acc.v[i][j];
          if constexpr (kBfloat16)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
                           "r"(b[j][1]));
          else
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                         : "r"(a[i][0]), "r"(a[i][1]), "r"(a[i][2]), "r"(a[i][3]), "r"(b[j][0]),
                           "r"(b[j][1]));
        }
#else
      Base::fmaStep(s, acc, kk);
#endif
    }
  }

private:
  /// The 16 bits of x.
  __device__ __forceinline__ static std::uint32_t bitsOf(const T &x) {
    std::uint16_t u;
    memcpy(&u, &x, sizeof u);
    return u;
  }
  /// A register of two elements: `lo` in the low half, as the fragments place them.
  __device__ __forceinline__ static std::uint32_t pack(const T &lo, const T &hi) {
    return bitsOf(lo) | (bitsOf(hi) << 16);
  }
};

//===----------------------------------------------------------------------===//
// Forward kernel
//===----------------------------------------------------------------------===//

/// Grid: x = row tiles (upper bound), y = column tiles, z = heads.
/// `onlySegment` >= 0 restricts the launch to that segment's tiles (x then
/// counts from its first tile).
template <typename T, BOp Op, Scatter Mode, typename Tile, MathPath Path, typename Index,
          typename TB, typename TC>
__global__ void __launch_bounds__(Tile::kThreads)
    segmentedGemmKernel(GemmProblem<T, Index, TB, TC> p, const std::int64_t *__restrict__ tileStart,
                        std::int64_t onlySegment) {
  constexpr int BM = Tile::BM, BN = Tile::BN, BK = Tile::BK, NT = Tile::kThreads;
  using S = StageType<T, TB>;
  using Math = TileMath<S, Tile, Path>;
  __shared__ typename Math::Smem smem;
  __shared__ std::int64_t aOffset[BM]; // element offset of each tile row in A, -1 if none
  __shared__ std::int64_t cRow[BM];    // output row of each tile row

  const std::int64_t tile =
      onlySegment >= 0 ? tileStart[onlySegment] + blockIdx.x : static_cast<std::int64_t>(blockIdx.x);
  if (tile >= tileStart[onlySegment >= 0 ? onlySegment + 1 : p.numSegments])
    return;
  const std::int64_t seg =
      onlySegment >= 0 ? onlySegment : findSegment(tileStart, p.numSegments, tile);
  const std::int64_t rowBegin = p.segOffsets[seg] + (tile - tileStart[seg]) * BM;
  const std::int64_t rowEnd = p.segOffsets[seg + 1];
  const std::int64_t head = blockIdx.z, n0 = static_cast<std::int64_t>(blockIdx.y) * BN;
  const std::int64_t K = p.K, N = p.N;
  const TB *__restrict__ B = p.B + seg * p.strideB + head * K * N;

  for (int m = threadIdx.x; m < BM; m += NT) {
    const std::int64_t row = rowBegin + m;
    if (row < rowEnd) {
      const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
      const std::int64_t in = p.gather ? static_cast<std::int64_t>(p.gather[phys]) : phys;
      aOffset[m] = in * p.lda + head * K;
      cRow[m] = scatterIsIndexed(Mode) ? static_cast<std::int64_t>(p.scatter[phys]) : phys;
    } else {
      aOffset[m] = -1;
      cRow[m] = -1;
    }
  }
  __syncthreads();

  typename Math::Accum acc;
  Math::clear(acc);
  for (std::int64_t k0 = 0; k0 < K; k0 += BK) {
    // A tile, gathered: k fastest, so a warp reads contiguous runs of a row.
    for (int i = threadIdx.x; i < BM * BK; i += NT) {
      const int m = i / BK, k = i % BK;
      const std::int64_t off = aOffset[m];
      smem.As[k][m] = (off >= 0 && k0 + k < K) ? static_cast<S>(p.A[off + k0 + k]) : S(0);
    }
    // op(B) tile: read along B's contiguous dimension.
    for (int i = threadIdx.x; i < BK * BN; i += NT) {
      int k, n;
      if constexpr (Op == BOp::kIdentity) {
        k = i / BN;
        n = i % BN;
      } else {
        n = i / BK;
        k = i % BK;
      }
      const bool in = k0 + k < K && n0 + n < N;
      smem.Bs[k][n] = !in ? S(0)
                          : static_cast<S>(Op == BOp::kIdentity ? B[(k0 + k) * N + n0 + n]
                                                                : B[(n0 + n) * K + k0 + k]);
    }
    __syncthreads();
    Math::step(smem, acc);
    __syncthreads();
  }

  using A = typename Math::A;
  Math::visit(acc, [&](int m, int n, A v) {
    const std::int64_t out = cRow[m], col = n0 + n;
    if (out < 0 || col >= N)
      return;
    TC *c = p.C + out * p.ldc + head * N + col;
    if constexpr (Mode == Scatter::kStore)
      *c = static_cast<TC>(v);
    else
      *c = static_cast<TC>(static_cast<A>(*c) + v);
  });
}

/// Bytes of workspace `launchSegmentedGemm` needs: the tile schedule.
template <typename T, Scatter Mode, typename Tile = typename DefaultGemmTile<T>::type,
          typename Index, typename TB, typename TC>
std::size_t segmentedGemmWorkspaceBytes(const GemmProblem<T, Index, TB, TC> &p) {
  return alignBytes((p.numSegments + 1) * sizeof(std::int64_t));
}

/// Runs the segmented GEMM described by `p` (device pointers; see
/// `GemmProblem`) on `stream`: the schedule kernel, then the GEMM kernel (one
/// launch per segment for `Scatter::kAccumulateIndexPerSegment`). `workspace`
/// holds at least `segmentedGemmWorkspaceBytes<T, Mode, Tile>(p)` bytes. No
/// host synchronisation, no device-to-host copy.
template <typename T, BOp Op, Scatter Mode, typename Tile = typename DefaultGemmTile<T>::type,
          MathPath Path = MathPath::kSimt, typename Index, typename TB, typename TC>
cudaError_t launchSegmentedGemm(const GemmProblem<T, Index, TB, TC> &p, void *workspace,
                                std::size_t workspaceBytes, cudaStream_t stream) {
  if (p.numSegments == 0 || p.numRows == 0 || p.N == 0 || p.heads == 0)
    return cudaSuccess;
  if (workspaceBytes < segmentedGemmWorkspaceBytes<T, Mode, Tile>(p))
    return cudaErrorInvalidValue;
  auto *tileStart = static_cast<std::int64_t *>(workspace);
  cudaError_t err = launchUnitOffsets(p.segOffsets, p.numSegments, Tile::BM, tileStart, stream);
  if (err != cudaSuccess)
    return err;
  const dim3 grid(static_cast<unsigned>(maxUnits(p.numRows, p.numSegments, Tile::BM)),
                  static_cast<unsigned>(ceilDiv<std::int64_t>(p.N, Tile::BN)),
                  static_cast<unsigned>(p.heads));
  if constexpr (Mode == Scatter::kAccumulateIndexPerSegment) {
    // No two rows of one segment share an output row: the segments run one launch after
    // another on the stream, so no addition races and the order is fixed.
    for (std::int64_t s = 0; s < p.numSegments; ++s) {
      segmentedGemmKernel<T, Op, Mode, Tile, Path, Index, TB, TC>
          <<<grid, Tile::kThreads, 0, stream>>>(p, tileStart, s);
      if ((err = cudaGetLastError()) != cudaSuccess)
        return err;
    }
    return cudaSuccess;
  }
  segmentedGemmKernel<T, Op, Mode, Tile, Path, Index, TB, TC>
      <<<grid, Tile::kThreads, 0, stream>>>(p, tileStart, -1);
  return cudaGetLastError();
}

/// launchSegmentedGemm with the tile math chosen at run time: for float,
/// TF32 tensor cores when `path` asks for them and SIMT otherwise (TF32 is
/// a float32 setting: double is always computed in double); bfloat16 and
/// float16 always run on 16-bit tensor cores (their products are exact in
/// the FP32 accumulation, as in SIMT). A problem of mixed element types runs
/// as its StageType: float32 (SIMT, or TF32 where `path` asks for it).
template <typename T, BOp Op, Scatter Mode, typename Index, typename TB, typename TC>
cudaError_t launchSegmentedGemm(const GemmProblem<T, Index, TB, TC> &p, void *workspace,
                                std::size_t workspaceBytes, cudaStream_t stream, MathPath path) {
  using S = StageType<T, TB>;
  using Tile = typename DefaultGemmTile<S>::type;
  if constexpr (isSixteenBitFloat<S>()) {
    (void)path;
    return launchSegmentedGemm<T, Op, Mode, Tile, MathPath::kTensor16>(p, workspace, workspaceBytes,
                                                                       stream);
  } else {
    if constexpr (std::is_same_v<S, float>)
      if (path == MathPath::kTensorTf32)
        return launchSegmentedGemm<T, Op, Mode, Tile, MathPath::kTensorTf32>(
            p, workspace, workspaceBytes, stream);
    return launchSegmentedGemm<T, Op, Mode, Tile, MathPath::kSimt>(p, workspace, workspaceBytes,
                                                                   stream);
  }
}

//===----------------------------------------------------------------------===//
// Weight gradient (outer-product form)
//===----------------------------------------------------------------------===//

/// A weight-gradient tile: each block computes a BK x BN tile of dB_s (over
/// K and N) from BR rows at a time; each thread owns TK x TN outputs.
template <int BK_, int BN_, int BR_, int TK_, int TN_> struct WgradTile {
  static constexpr int BK = BK_, BN = BN_, BR = BR_, TK = TK_, TN = TN_;
  static constexpr int kThreadRows = BK / TK, kThreadCols = BN / TN;
  static constexpr int kThreads = kThreadRows * kThreadCols;
  static_assert(BK % TK == 0 && BN % TN == 0, "tile must divide into thread tiles");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps, at most 1024 threads");
};

template <typename T> struct DefaultWgradTile {
  static_assert(isSixteenBitFloat<T>(), "the GEMM takes float, double, bfloat16 or float16");
  using type = WgradTile<64, 64, 32, 4, 4>;
};
template <> struct DefaultWgradTile<float> { using type = WgradTile<64, 64, 16, 4, 4>; };
template <> struct DefaultWgradTile<double> { using type = WgradTile<64, 64, 8, 4, 4>; };

/// Rows per chunk of the weight gradient: a function of the problem only
/// (never of the device), so results are reproducible everywhere. About 1024
/// chunks over all rows, at least 256 rows each.
inline std::int64_t defaultWgradChunkRows(std::int64_t numRows) {
  const std::int64_t rows = ceilDiv<std::int64_t>(numRows, 1024);
  return rows < 256 ? 256 : ceilDiv<std::int64_t>(rows, 64) * 64;
}

/// The weight gradient's tile as a GEMM tile: outputs over K (as rows) and N,
/// depth BR rows; the tile math is then the forward's (TileMath).
template <typename Tile>
using WgradGemmTile = GemmTile<Tile::BK, Tile::BN, Tile::BR, Tile::TK, Tile::TN>;

/// One partial per (chunk, head, K tile, N tile): grid x = chunks (upper
/// bound), y = K tiles x N tiles, z = heads. partials is [chunks, heads, K, N]
/// in AccumType<T>. Each step stages BR rows: As[r][k] = A's gathered row,
/// Bs[r][n] = dC's.
template <typename T, typename Tile, MathPath Path, typename Index, typename TG, typename TD>
__global__ void __launch_bounds__(Tile::kThreads)
    weightGradPartialKernel(WeightGradProblem<T, Index, TG, TD> p,
                            const std::int64_t *__restrict__ chunkStart, std::int64_t chunkRows,
                            AccumType<T> *__restrict__ partials) {
  constexpr int BK = Tile::BK, BN = Tile::BN, BR = Tile::BR, NT = Tile::kThreads;
  using S = StageType<T, TG>;
  using Math = TileMath<S, WgradGemmTile<Tile>, Path>;
  __shared__ typename Math::Smem smem;
  const std::int64_t chunk = blockIdx.x;
  if (chunk >= chunkStart[p.numSegments])
    return;
  const std::int64_t seg = findSegment(chunkStart, p.numSegments, chunk);
  const std::int64_t begin = p.segOffsets[seg] + (chunk - chunkStart[seg]) * chunkRows;
  const std::int64_t segEnd = p.segOffsets[seg + 1];
  const std::int64_t end = begin + chunkRows < segEnd ? begin + chunkRows : segEnd;
  const std::int64_t K = p.K, N = p.N, head = blockIdx.z;
  const std::int64_t nTiles = ceilDiv<std::int64_t>(N, BN);
  const std::int64_t k0 = (blockIdx.y / nTiles) * BK, n0 = (blockIdx.y % nTiles) * BN;

  typename Math::Accum acc;
  Math::clear(acc);
  for (std::int64_t r0 = begin; r0 < end; r0 += BR) {
    for (int i = threadIdx.x; i < BR * BK; i += NT) {
      const int r = i / BK, k = i % BK;
      const std::int64_t row = r0 + r;
      S v = S(0);
      if (row < end && k0 + k < K) {
        const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
        const std::int64_t in = p.gatherA ? static_cast<std::int64_t>(p.gatherA[phys]) : phys;
        v = static_cast<S>(p.A[in * p.lda + head * K + k0 + k]);
      }
      smem.As[r][k] = v;
    }
    for (int i = threadIdx.x; i < BR * BN; i += NT) {
      const int r = i / BN, n = i % BN;
      const std::int64_t row = r0 + r;
      S v = S(0);
      if (row < end && n0 + n < N) {
        const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
        const std::int64_t in = p.gatherC ? static_cast<std::int64_t>(p.gatherC[phys]) : phys;
        v = static_cast<S>(p.dC[in * p.ldc + head * N + n0 + n]);
      }
      smem.Bs[r][n] = v;
    }
    __syncthreads();
    Math::step(smem, acc);
    __syncthreads();
  }

  AccumType<T> *__restrict__ out = partials + (chunk * p.heads + head) * K * N;
  Math::visit(acc, [&](int m, int n, AccumType<T> v) {
    const std::int64_t k = k0 + m, col = n0 + n;
    if (k < K && col < N)
      out[k * N + col] = v;
  });
}

/// dB_s[h] (=|+=) sum of the segment's partials in chunk order, in
/// AccumType<T> and rounded to dB's type once; an empty segment stores 0 (or
/// is left unchanged when adding).
template <typename T, BOp Op, Assign Mode, typename Index, typename TG, typename TD>
__global__ void weightGradReduceKernel(WeightGradProblem<T, Index, TG, TD> p,
                                       const std::int64_t *__restrict__ chunkStart,
                                       const AccumType<T> *__restrict__ partials) {
  using A = AccumType<T>;
  const std::int64_t KN = p.K * p.N, total = p.numSegments * p.heads * KN;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < total; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t kn = i % KN, head = (i / KN) % p.heads, seg = i / (KN * p.heads);
    const std::int64_t c0 = chunkStart[seg], c1 = chunkStart[seg + 1];
    A acc = A(0);
    for (std::int64_t c = c0; c < c1; ++c)
      acc += partials[(c * p.heads + head) * KN + kn];
    const std::int64_t k = kn / p.N, n = kn % p.N;
    TD *d = p.dB + seg * p.strideB + head * KN + (Op == BOp::kIdentity ? k * p.N + n : n * p.K + k);
    if constexpr (Mode == Assign::kAdd)
      *d = static_cast<TD>(static_cast<A>(*d) + acc);
    else
      *d = static_cast<TD>(acc);
  }
}

/// Bytes of workspace `launchSegmentedWeightGrad` needs for `chunkRows`.
template <typename T, typename Index, typename TG, typename TD>
std::size_t segmentedWeightGradWorkspaceBytes(const WeightGradProblem<T, Index, TG, TD> &p,
                                              std::int64_t chunkRows) {
  const std::int64_t chunks = maxUnits(p.numRows, p.numSegments, chunkRows);
  return alignBytes((p.numSegments + 1) * sizeof(std::int64_t)) +
         alignBytes(static_cast<std::size_t>(chunks * p.heads * p.K * p.N) * sizeof(AccumType<T>));
}

/// Runs the weight gradient described by `p` (device pointers) on `stream`,
/// cutting every segment into chunks of `chunkRows` rows (use
/// `defaultWgradChunkRows(p.numRows)`); deterministic for a given chunkRows.
template <typename T, BOp Op, Assign Mode, typename Tile = typename DefaultWgradTile<T>::type,
          MathPath Path = MathPath::kSimt, typename Index, typename TG, typename TD>
cudaError_t launchSegmentedWeightGrad(const WeightGradProblem<T, Index, TG, TD> &p,
                                      std::int64_t chunkRows, void *workspace,
                                      std::size_t workspaceBytes, cudaStream_t stream) {
  if (p.numSegments == 0 || p.K == 0 || p.N == 0 || p.heads == 0)
    return cudaSuccess;
  if (chunkRows <= 0 || workspaceBytes < segmentedWeightGradWorkspaceBytes(p, chunkRows))
    return cudaErrorInvalidValue;
  auto *chunkStart = static_cast<std::int64_t *>(workspace);
  auto *partials = reinterpret_cast<AccumType<T> *>(
      static_cast<char *>(workspace) + alignBytes((p.numSegments + 1) * sizeof(std::int64_t)));
  cudaError_t err = launchUnitOffsets(p.segOffsets, p.numSegments, chunkRows, chunkStart, stream);
  if (err != cudaSuccess)
    return err;
  const std::int64_t chunks = maxUnits(p.numRows, p.numSegments, chunkRows);
  const std::int64_t tiles =
      ceilDiv<std::int64_t>(p.K, Tile::BK) * ceilDiv<std::int64_t>(p.N, Tile::BN);
  if (p.numRows > 0) {
    const dim3 grid(static_cast<unsigned>(chunks), static_cast<unsigned>(tiles),
                    static_cast<unsigned>(p.heads));
    weightGradPartialKernel<T, Tile, Path, Index, TG, TD>
        <<<grid, Tile::kThreads, 0, stream>>>(p, chunkStart, chunkRows, partials);
    if ((err = cudaGetLastError()) != cudaSuccess)
      return err;
  }
  const std::int64_t total = p.numSegments * p.heads * p.K * p.N;
  const std::int64_t blocks = ceilDiv<std::int64_t>(total, 256);
  weightGradReduceKernel<T, Op, Mode, Index, TG, TD>
      <<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), 256, 0, stream>>>(p, chunkStart,
                                                                                   partials);
  return cudaGetLastError();
}

/// launchSegmentedWeightGrad with the tile math chosen at run time, as for
/// launchSegmentedGemm.
template <typename T, BOp Op, Assign Mode, typename Index, typename TG, typename TD>
cudaError_t launchSegmentedWeightGrad(const WeightGradProblem<T, Index, TG, TD> &p,
                                      std::int64_t chunkRows, void *workspace,
                                      std::size_t workspaceBytes, cudaStream_t stream,
                                      MathPath path) {
  using S = StageType<T, TG>;
  using Tile = typename DefaultWgradTile<S>::type;
  if constexpr (isSixteenBitFloat<S>()) {
    (void)path;
    return launchSegmentedWeightGrad<T, Op, Mode, Tile, MathPath::kTensor16>(
        p, chunkRows, workspace, workspaceBytes, stream);
  } else {
    if constexpr (std::is_same_v<S, float>)
      if (path == MathPath::kTensorTf32)
        return launchSegmentedWeightGrad<T, Op, Mode, Tile, MathPath::kTensorTf32>(
            p, chunkRows, workspace, workspaceBytes, stream);
    return launchSegmentedWeightGrad<T, Op, Mode, Tile, MathPath::kSimt>(p, chunkRows, workspace,
                                                                         workspaceBytes, stream);
  }
}

} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_SEGMENTED_GEMM_CUH
