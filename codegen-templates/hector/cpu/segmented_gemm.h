//===- hector/cpu/segmented_gemm.h - CPU segmented GEMM template ----------===//
//
// The GEMM template on the CPU: one call covers every relation / node-type
// segment, with the gather of A's rows fused into the loads, the scatter or
// accumulation of C's rows fused into the store, and the weight-gradient
// (outer-product) form. OpenMP over (row tile x column block x head) tasks,
// cache-blocked, with contiguous, restrict-qualified inner loops. Every output
// element is summed in a fixed order, so results do not depend on the number
// of threads.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_SEGMENTED_GEMM_H
#define HECTOR_TEMPLATES_CPU_SEGMENTED_GEMM_H

#include "hector/common.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace hector {
namespace tmpl {
namespace cpu {

/// Blocking of the CPU GEMM template. `kRows` rows of A share one packed
/// [kDepth, kCols] block of op(B), accumulating into a [kRows, kCols] tile;
/// the weight gradient sums `kWgradRows` rows per partial (a fixed number, so
/// the reduction order does not depend on the thread count).
template <typename T> struct GemmTile {
  static constexpr int kRows = 32;
  static constexpr int kCols = 64;
  static constexpr int kDepth = 128;
  static constexpr int kWgradRows = 2048;
};

namespace detail {

/// A task of the forward GEMM: one row tile of one segment.
struct RowTile {
  std::int64_t segment;
  std::int64_t begin;
  std::int64_t end;
};

/// Splits every segment's rows into tiles of `tileRows` rows (empty segments
/// yield no tile), so tasks are proportional to the rows of each segment.
template <typename Index>
std::vector<RowTile> makeRowTiles(std::int64_t numSegments, const Index *off,
                                  std::int64_t tileRows) {
  std::vector<RowTile> tiles;
  for (std::int64_t s = 0; s < numSegments; ++s) {
    const std::int64_t b = off[s], e = off[s + 1];
    for (std::int64_t r = b; r < e; r += tileRows)
      tiles.push_back({s, r, std::min(e, r + tileRows)});
  }
  return tiles;
}

/// Packs op(B)[k0:k0+kd, n0:n0+nw] into a dense [kd, ldp] block.
template <typename T, BOp Op>
inline void packB(const T *HECTOR_RESTRICT b, std::int64_t K, std::int64_t N, std::int64_t k0,
                  std::int64_t kd, std::int64_t n0, std::int64_t nw, T *HECTOR_RESTRICT pack,
                  std::int64_t ldp) {
  for (std::int64_t k = 0; k < kd; ++k) {
    T *HECTOR_RESTRICT dst = pack + k * ldp;
    if constexpr (Op == BOp::kIdentity) {
      const T *HECTOR_RESTRICT src = b + (k0 + k) * N + n0;
#pragma omp simd
      for (std::int64_t n = 0; n < nw; ++n)
        dst[n] = src[n];
    } else {
      const T *HECTOR_RESTRICT src = b + n0 * K + (k0 + k);
      for (std::int64_t n = 0; n < nw; ++n)
        dst[n] = src[n * K];
    }
  }
}

/// Rows and columns of the register-blocked micro-kernel of the forward GEMM.
constexpr std::int64_t kMicroRows = 4;
constexpr std::int64_t kMicroCols = 16;
static_assert(kMicroRows == 4, "the micro-kernel unrolls four rows");

/// c[kMicroRows, kMicroCols] (row stride NC) += a[rows, k0:k0+kd] x pack[kd, kMicroCols] (row
/// stride NC), with the accumulators in registers for the whole depth. Every element is summed
/// in increasing k, as the plain loop sums it, so results do not depend on the blocking.
template <typename T, std::int64_t NC, std::int64_t Cols = kMicroCols>
inline void microKernelImpl(const T *const *aRows, std::int64_t k0, std::int64_t kd,
                            const T *HECTOR_RESTRICT pack, T *HECTOR_RESTRICT c) {
  T reg[kMicroRows][Cols];
  for (std::int64_t i = 0; i < kMicroRows; ++i)
#pragma omp simd
    for (std::int64_t j = 0; j < Cols; ++j)
      reg[i][j] = c[i * NC + j];
  const T *HECTOR_RESTRICT a0 = aRows[0] + k0;
  const T *HECTOR_RESTRICT a1 = aRows[1] + k0;
  const T *HECTOR_RESTRICT a2 = aRows[2] + k0;
  const T *HECTOR_RESTRICT a3 = aRows[3] + k0;
  for (std::int64_t k = 0; k < kd; ++k) {
    const T *HECTOR_RESTRICT bk = pack + k * NC;
    const T v0 = a0[k], v1 = a1[k], v2 = a2[k], v3 = a3[k];
#pragma omp simd
    for (std::int64_t j = 0; j < Cols; ++j) {
      const T b = bk[j];
      reg[0][j] += v0 * b;
      reg[1][j] += v1 * b;
      reg[2][j] += v2 * b;
      reg[3][j] += v3 * b;
    }
  }
  for (std::int64_t i = 0; i < kMicroRows; ++i)
#pragma omp simd
    for (std::int64_t j = 0; j < Cols; ++j)
      c[i * NC + j] = reg[i][j];
}

/// Computes row-aligned results of every tile and hands each finished
/// [rows, nw] block to `store(row, head, n0, nw, accRow)`.
template <typename T, BOp Op, typename Tile, typename Index, typename Store>
void gemmTiles(const GemmProblem<T, Index> &p, Store &&store) {
  constexpr std::int64_t MR = Tile::kRows, NC = Tile::kCols, KD = Tile::kDepth;
  const std::vector<RowTile> tiles = makeRowTiles(p.numSegments, p.segOffsets, MR);
  const std::int64_t numTiles = static_cast<std::int64_t>(tiles.size());
  const std::int64_t colBlocks = ceilDiv<std::int64_t>(p.N, NC);
  const std::int64_t numTasks = numTiles * colBlocks * p.heads;
  if (numTasks == 0)
    return;
  const std::int64_t K = p.K, N = p.N;
#pragma omp parallel
  {
    std::vector<T> accBuf(MR * NC);
    std::vector<T> packBuf(KD * NC);
    T *HECTOR_RESTRICT acc = accBuf.data();
    T *HECTOR_RESTRICT pack = packBuf.data();
    const T *aRows[MR];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < numTasks; ++task) {
      const std::int64_t head = task % p.heads;
      const std::int64_t cb = (task / p.heads) % colBlocks;
      const RowTile &tile = tiles[task / (p.heads * colBlocks)];
      const std::int64_t rows = tile.end - tile.begin;
      const std::int64_t n0 = cb * NC, nw = std::min<std::int64_t>(NC, N - n0);
      const T *bSeg = p.B + tile.segment * p.strideB + head * K * N;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t row = tile.begin + r;
        const std::int64_t in = p.gather ? static_cast<std::int64_t>(p.gather[row]) : row;
        aRows[r] = p.A + in * p.lda + head * K;
      }
      std::fill(acc, acc + rows * NC, T(0));
      for (std::int64_t k0 = 0; k0 < K; k0 += KD) {
        const std::int64_t kd = std::min<std::int64_t>(KD, K - k0);
        packB<T, Op>(bSeg, K, N, k0, kd, n0, nw, pack, NC);
        const std::int64_t fullRows = rows - rows % kMicroRows;
        // Full micro-tiles of 16 columns, then of 8 and 4 (narrow products, such as RGAT's
        // per-head weight products of 4 columns); fullCols columns in all.
        std::int64_t fullCols = nw - nw % kMicroCols;
        const bool cols8 = nw - fullCols >= 8;
        const std::int64_t at8 = fullCols;
        fullCols += cols8 ? 8 : 0;
        const bool cols4 = nw - fullCols >= 4;
        const std::int64_t at4 = fullCols;
        fullCols += cols4 ? 4 : 0;
        for (std::int64_t r = 0; r < fullRows; r += kMicroRows) {
          for (std::int64_t n = 0; n < at8; n += kMicroCols)
            microKernelImpl<T, NC>(aRows + r, k0, kd, pack + n, acc + r * NC + n);
          if (cols8)
            microKernelImpl<T, NC, 8>(aRows + r, k0, kd, pack + at8, acc + r * NC + at8);
          if (cols4)
            microKernelImpl<T, NC, 4>(aRows + r, k0, kd, pack + at4, acc + r * NC + at4);
        }
        // The edges of the tile: rows below a full micro-tile, columns right of one.
        for (std::int64_t r = 0; r < rows; ++r) {
          const std::int64_t nBegin = r < fullRows ? fullCols : 0;
          if (nBegin == nw)
            continue;
          const T *HECTOR_RESTRICT a = aRows[r] + k0;
          T *HECTOR_RESTRICT c = acc + r * NC;
          for (std::int64_t k = 0; k < kd; ++k) {
            const T av = a[k];
            const T *HECTOR_RESTRICT bk = pack + k * NC;
#pragma omp simd
            for (std::int64_t n = nBegin; n < nw; ++n)
              c[n] += av * bk[n];
          }
        }
      }
      for (std::int64_t r = 0; r < rows; ++r)
        store(tile.begin + r, head, n0, nw, acc + r * NC);
    }
  }
}

} // namespace detail

/// Builds the inverse of a scatter index as a CSR over output rows: the rows
/// r in [rowBegin, rowEnd) with idx[r] == o are rows[ptr[o] .. ptr[o+1]),
/// in increasing order (a stable counting sort). `ptr` has numOut + 1 entries,
/// `rows` rowEnd - rowBegin.
template <typename Index>
void buildScatterCsr(const Index *idx, std::int64_t rowBegin, std::int64_t rowEnd,
                     std::int64_t numOut, Index *ptr, Index *rows) {
  std::fill(ptr, ptr + numOut + 1, Index(0));
  for (std::int64_t r = rowBegin; r < rowEnd; ++r)
    ++ptr[idx[r] + 1];
  for (std::int64_t o = 0; o < numOut; ++o)
    ptr[o + 1] += ptr[o];
  std::vector<Index> fill(ptr, ptr + numOut);
  for (std::int64_t r = rowBegin; r < rowEnd; ++r)
    rows[fill[idx[r]]++] = static_cast<Index>(r);
}

/// Segmented GEMM (see `GemmProblem`). `Op` selects op(B), `Mode` the
/// scatter; `Scatter::kAtomicAccumulateIndex` is treated as the deterministic
/// `kAccumulateIndex` on the CPU.
///
/// `kAccumulateIndex` computes the row-aligned results into a workspace, then
/// every output row (owned by one thread) adds its rows in increasing row
/// order through the inverse index (`scatterPtr`/`scatterRows`, built here
/// when absent): deterministic, race-free, independent of the thread count.
template <typename T, BOp Op, Scatter Mode, typename Tile = GemmTile<T>,
          typename Index = std::int64_t>
void segmentedGemm(const GemmProblem<T, Index> &p) {
  const std::int64_t width = p.heads * p.N;
  if constexpr (Mode == Scatter::kStore || Mode == Scatter::kAccumulate ||
                Mode == Scatter::kStoreIndex) {
    detail::gemmTiles<T, Op, Tile>(
        p, [&](std::int64_t row, std::int64_t head, std::int64_t n0, std::int64_t nw,
               const T *HECTOR_RESTRICT acc) {
          const std::int64_t out =
              Mode == Scatter::kStoreIndex ? static_cast<std::int64_t>(p.scatter[row]) : row;
          T *HECTOR_RESTRICT c = p.C + out * p.ldc + head * p.N + n0;
          if constexpr (Mode == Scatter::kAccumulate) {
#pragma omp simd
            for (std::int64_t n = 0; n < nw; ++n)
              c[n] += acc[n];
          } else {
#pragma omp simd
            for (std::int64_t n = 0; n < nw; ++n)
              c[n] = acc[n];
          }
        });
  } else {
    if (p.numSegments == 0)
      return;
    const std::int64_t base = p.segOffsets[0];
    const std::int64_t rowsTotal = p.segOffsets[p.numSegments] - base;
    if (rowsTotal == 0 || width == 0)
      return;
    std::vector<T> work(static_cast<std::size_t>(rowsTotal * width));
    detail::gemmTiles<T, Op, Tile>(
        p, [&](std::int64_t row, std::int64_t head, std::int64_t n0, std::int64_t nw,
               const T *HECTOR_RESTRICT acc) {
          T *HECTOR_RESTRICT w = work.data() + (row - base) * width + head * p.N + n0;
#pragma omp simd
          for (std::int64_t n = 0; n < nw; ++n)
            w[n] = acc[n];
        });
    std::vector<Index> ptrBuf, rowsBuf;
    const Index *ptr = p.scatterPtr, *rows = p.scatterRows;
    if (!ptr || !rows) {
      ptrBuf.resize(p.numOutRows + 1);
      rowsBuf.resize(rowsTotal);
      buildScatterCsr(p.scatter, base, base + rowsTotal, p.numOutRows, ptrBuf.data(),
                      rowsBuf.data());
      ptr = ptrBuf.data();
      rows = rowsBuf.data();
    }
    const T *HECTOR_RESTRICT ws = work.data();
#pragma omp parallel for schedule(dynamic, 64)
    for (std::int64_t o = 0; o < p.numOutRows; ++o) {
      T *HECTOR_RESTRICT c = p.C + o * p.ldc;
      for (std::int64_t j = ptr[o]; j < ptr[o + 1]; ++j) {
        const T *HECTOR_RESTRICT w = ws + (static_cast<std::int64_t>(rows[j]) - base) * width;
#pragma omp simd
        for (std::int64_t n = 0; n < width; ++n)
          c[n] += w[n];
      }
    }
  }
}

/// Weight gradient of a segmented GEMM (see `WeightGradProblem`), with `Op`
/// the forward operand's layout and `Mode` whether dB is overwritten or added
/// to.
///
/// Each segment's rows are cut into chunks of exactly Tile::kWgradRows rows;
/// tasks (segment, chunk, head) run in parallel, each summing its rows in
/// order into a cache-blocked [K, N] accumulator; the partials of a segment
/// are then added in chunk order. The order of every sum is a function of the
/// problem alone: deterministic, independent of the thread count.
template <typename T, BOp Op, Assign Mode, typename Tile = GemmTile<T>,
          typename Index = std::int64_t>
void segmentedWeightGrad(const WeightGradProblem<T, Index> &p) {
  constexpr std::int64_t CR = Tile::kWgradRows;
  constexpr std::int64_t RB = 64, KB = 32, NB = 128; // L1 blocking of the updates
  const std::int64_t K = p.K, N = p.N, KN = K * N, H = p.heads;
  if (p.numSegments == 0 || KN == 0 || H == 0)
    return;

  // Chunks per segment; partial slots only for segments of several chunks.
  std::vector<std::int64_t> chunkStart(p.numSegments + 1, 0), slotStart(p.numSegments + 1, 0);
  for (std::int64_t s = 0; s < p.numSegments; ++s) {
    const std::int64_t rows = p.segOffsets[s + 1] - p.segOffsets[s];
    const std::int64_t chunks = ceilDiv<std::int64_t>(rows, CR);
    chunkStart[s + 1] = chunkStart[s] + chunks;
    slotStart[s + 1] = slotStart[s] + (chunks > 1 ? chunks : 0);
  }
  const std::int64_t numChunks = chunkStart[p.numSegments];
  std::vector<T> partials(static_cast<std::size_t>(slotStart[p.numSegments] * H * KN));

  auto writeOut = [&](std::int64_t s, std::int64_t head, const T *HECTOR_RESTRICT acc) {
    T *HECTOR_RESTRICT d = p.dB + s * p.strideB + head * KN;
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t at = Op == BOp::kIdentity ? k * N + n : n * K + k;
        if constexpr (Mode == Assign::kAdd)
          d[at] += acc[k * N + n];
        else
          d[at] = acc[k * N + n];
      }
  };

  // Empty segments: zero when overwriting.
  if constexpr (Mode == Assign::kStore) {
    for (std::int64_t s = 0; s < p.numSegments; ++s)
      if (chunkStart[s + 1] == chunkStart[s])
        for (std::int64_t h = 0; h < H; ++h)
          std::fill(p.dB + s * p.strideB + h * KN, p.dB + s * p.strideB + (h + 1) * KN, T(0));
  }

  const std::int64_t numTasks = numChunks * H;
#pragma omp parallel
  {
    std::vector<T> accBuf(KN);
    T *HECTOR_RESTRICT acc = accBuf.data();
    const T *aRows[RB];
    const T *gRows[RB];
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < numTasks; ++task) {
      const std::int64_t head = task % H, chunk = task / H;
      const std::int64_t s =
          std::upper_bound(chunkStart.begin(), chunkStart.end(), chunk) - chunkStart.begin() - 1;
      const std::int64_t local = chunk - chunkStart[s];
      const std::int64_t begin = p.segOffsets[s] + local * CR;
      const std::int64_t end = std::min<std::int64_t>(p.segOffsets[s + 1], begin + CR);
      std::fill(acc, acc + KN, T(0));
      for (std::int64_t r0 = begin; r0 < end; r0 += RB) {
        const std::int64_t rb = std::min<std::int64_t>(RB, end - r0);
        for (std::int64_t r = 0; r < rb; ++r) {
          const std::int64_t row = r0 + r;
          const std::int64_t ia = p.gatherA ? static_cast<std::int64_t>(p.gatherA[row]) : row;
          const std::int64_t ic = p.gatherC ? static_cast<std::int64_t>(p.gatherC[row]) : row;
          aRows[r] = p.A + ia * p.lda + head * K;
          gRows[r] = p.dC + ic * p.ldc + head * N;
        }
        for (std::int64_t k0 = 0; k0 < K; k0 += KB) {
          const std::int64_t kb = std::min<std::int64_t>(KB, K - k0);
          for (std::int64_t n0 = 0; n0 < N; n0 += NB) {
            const std::int64_t nb = std::min<std::int64_t>(NB, N - n0);
            for (std::int64_t r = 0; r < rb; ++r) {
              const T *HECTOR_RESTRICT a = aRows[r] + k0;
              const T *HECTOR_RESTRICT g = gRows[r] + n0;
              for (std::int64_t k = 0; k < kb; ++k) {
                const T av = a[k];
                T *HECTOR_RESTRICT c = acc + (k0 + k) * N + n0;
#pragma omp simd
                for (std::int64_t n = 0; n < nb; ++n)
                  c[n] += av * g[n];
              }
            }
          }
        }
      }
      const std::int64_t chunks = chunkStart[s + 1] - chunkStart[s];
      if (chunks == 1) {
        writeOut(s, head, acc);
      } else {
        T *slot = partials.data() + ((slotStart[s] + local) * H + head) * KN;
        std::copy(acc, acc + KN, slot);
      }
    }

    // Fixed-order reduction of the partials of multi-chunk segments.
    const std::int64_t numMulti = p.numSegments * H;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t t = 0; t < numMulti; ++t) {
      const std::int64_t s = t / H, head = t % H;
      const std::int64_t chunks = slotStart[s + 1] - slotStart[s];
      if (chunks == 0)
        continue;
      const T *first = partials.data() + (slotStart[s] * H + head) * KN;
      std::copy(first, first + KN, acc);
      for (std::int64_t c = 1; c < chunks; ++c) {
        const T *HECTOR_RESTRICT part = partials.data() + ((slotStart[s] + c) * H + head) * KN;
#pragma omp simd
        for (std::int64_t i = 0; i < KN; ++i)
          acc[i] += part[i];
      }
      writeOut(s, head, acc);
    }
  }
}

} // namespace cpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CPU_SEGMENTED_GEMM_H
