//===- hector/cpu/segmented_gemm.h - CPU segmented GEMM template ----------===//
//
// The GEMM template on the CPU: one call covers every relation / node-type
// segment, with the gather of A's rows fused into the loads, the scatter or
// accumulation of C's rows fused into the store, and the weight-gradient
// (outer-product) form. OpenMP over (row tile x column block x head) tasks,
// cache-blocked, with contiguous, restrict-qualified inner loops. Every output
// element is summed in a fixed order, so results do not depend on the number
// of threads. Elements stored as 16-bit types (bfloat16, float16) are computed
// in float (AccumType): B is packed as float, each depth block of A's rows is
// widened to float once, and each result is rounded once when it is stored.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_SEGMENTED_GEMM_H
#define HECTOR_TEMPLATES_CPU_SEGMENTED_GEMM_H

#include "hector/cpu/amx.h"
#include "hector/cpu/parallel.h"
#include "hector/kernel_common.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
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

/// Whether T is a bfloat16 type stored as its 16 bits (c10::BFloat16: a trivially copyable
/// standard-layout class of 2 bytes whose std::numeric_limits give 8 significant bits and
/// float's exponent range). Rows of such a type are rounded with integer operations that the
/// compiler vectorises; T's own conversion, a call per element, is not.
template <typename T> constexpr bool isBfloat16Bits() {
  if constexpr (std::is_class_v<T> && sizeof(T) == 2 && std::is_trivially_copyable_v<T> &&
                std::is_standard_layout_v<T> && std::numeric_limits<T>::is_specialized)
    return std::numeric_limits<T>::digits == 8 && std::numeric_limits<T>::max_exponent == 128;
  else
    return false;
}

/// The bfloat16 bits of `f`, rounded to nearest even; a NaN becomes the quiet NaN 0x7FC0 (as
/// c10::BFloat16 rounds).
inline std::uint16_t bfloat16Bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return (u & 0x7FFFFFFFu) > 0x7F800000u ? std::uint16_t(0x7FC0)
                                         : static_cast<std::uint16_t>(rounded);
}

/// The float of bfloat16 bits `b` (exact).
inline float bfloat16Value(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// c[n] = T(v[n]) (`Add`: T(Acc(c[n]) + v[n])) for n < count: one row of results rounded to T
/// once.
template <bool Add, typename T, typename Acc>
inline void storeRow(T *HECTOR_RESTRICT c, const Acc *HECTOR_RESTRICT v, std::int64_t count) {
  if constexpr (isBfloat16Bits<T>()) {
    static_assert(std::is_same_v<Acc, float>);
    std::uint16_t *HECTOR_RESTRICT bits = reinterpret_cast<std::uint16_t *>(c);
#pragma omp simd
    for (std::int64_t n = 0; n < count; ++n)
      bits[n] = bfloat16Bits(Add ? bfloat16Value(bits[n]) + v[n] : v[n]);
  } else {
#pragma omp simd
    for (std::int64_t n = 0; n < count; ++n)
      c[n] = Add ? T(Acc(c[n]) + v[n]) : T(v[n]);
  }
}

/// Packs op(B)[0:K, n0:n0+nw] into a dense [K, ldp] block of the accumulation type, zero beyond
/// column nw.
template <typename T, BOp Op, typename Acc = AccumType<T>>
inline void packB(const T *HECTOR_RESTRICT b, std::int64_t K, std::int64_t N, std::int64_t n0,
                  std::int64_t nw, Acc *HECTOR_RESTRICT pack, std::int64_t ldp) {
  for (std::int64_t k = 0; k < K; ++k) {
    Acc *HECTOR_RESTRICT dst = pack + k * ldp;
    if constexpr (Op == BOp::kIdentity) {
      const T *HECTOR_RESTRICT src = b + k * N + n0;
#pragma omp simd
      for (std::int64_t n = 0; n < nw; ++n)
        dst[n] = Acc(src[n]);
    } else {
      const T *HECTOR_RESTRICT src = b + n0 * K + k;
      for (std::int64_t n = 0; n < nw; ++n)
        dst[n] = Acc(src[n * K]);
    }
    std::fill(dst + nw, dst + ldp, Acc(0));
  }
}

/// Prefetches every cache line that row[0 : count) touches (a row of a gathered or permuted
/// operand, scattered in memory, that a later step of the kernel reads); a row that does not
/// start on a line touches one line more than its bytes fill.
template <typename T> inline void prefetchRow(const T *row, std::int64_t count) {
  constexpr std::uintptr_t kLine = 64;
  if (count <= 0)
    return;
  const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(row + count);
  for (std::uintptr_t line = reinterpret_cast<std::uintptr_t>(row) & ~(kLine - 1); line < end;
       line += kLine)
    __builtin_prefetch(reinterpret_cast<const void *>(line));
}

// The vector helpers below pass SIMD vectors by value between inline functions of one
// translation unit; no such function crosses a library boundary, so the ABI note GCC gives for
// vectors wider than the target's registers (-Wpsabi) does not apply.
#if defined(__GNUC__) && !defined(__CUDACC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/// The target's SIMD registers, as the compiler was told them (-march): their width in bytes
/// and how many there are. The micro-kernels size their register blocks by both: a block of
/// accumulators that does not fit the register file is spilled to the stack on every FMA.
#if defined(__AVX512F__)
inline constexpr int kVectorBytes = 64, kVectorRegisters = 32;
#elif defined(__AVX__)
inline constexpr int kVectorBytes = 32, kVectorRegisters = 16;
#elif defined(__aarch64__)
inline constexpr int kVectorBytes = 16, kVectorRegisters = 32;
#else
inline constexpr int kVectorBytes = 16, kVectorRegisters = 16;
#endif

/// The SIMD vector of the CPU kernels: one register of the target (16 floats with AVX-512, 8
/// with AVX2, 4 with SSE or NEON), a GCC vector type.
template <typename T> struct Simd {
  static constexpr std::int64_t kLanes = kVectorBytes / sizeof(T);
  typedef T Vec __attribute__((vector_size(kVectorBytes)));
  static Vec load(const T *p) {
    Vec v;
    __builtin_memcpy(&v, p, sizeof(Vec));
    return v;
  }
  static void store(T *p, const Vec &v) { __builtin_memcpy(p, &v, sizeof(Vec)); }
  /// Stores the first `n` lanes of v (n < kLanes).
  static void storePartial(T *p, const Vec &v, std::int64_t n) {
    __builtin_memcpy(p, &v, static_cast<std::size_t>(n) * sizeof(T));
  }
};

/// The widest column group (in vectors) of a micro-kernel's register block: four with 32
/// registers, two with 16.
constexpr int kMaxGroupVectors = kVectorRegisters >= 32 ? 4 : 2;

/// The rows of the micro-kernels' register block for a group of `nv` column vectors: as many
/// independent accumulators (rows x vectors) as keep both FMA pipes busy while the block, the
/// group's B vectors and the broadcast A element fit the register file (32 registers: 4 x 4
/// or 8 x 2; 16 registers: 6 x 2 or 8 x 1).
constexpr int microRows(int nv) {
  if (kVectorRegisters >= 32)
    return nv >= 3 ? 4 : 8;
  return nv >= 2 ? 6 : 8;
}

/// acc[MR rows, NV vectors] (row stride ldc) (=|+=) a[MR rows][k0 : k0+kd] x pack[kd][NV
/// vectors] (row stride ldp), the accumulators in registers for the whole depth. Every element
/// is summed in increasing k, starting from its old value (`first`: from zero), so the result
/// does not depend on the blocking. A's elements (type T) are converted to the accumulation
/// type Acc of the packed block and the accumulators.
template <typename T, int MR, int NV, typename Acc = AccumType<T>>
inline void microKernel(const T *const *aRows, std::int64_t k0, std::int64_t kd,
                        const Acc *HECTOR_RESTRICT pack, std::int64_t ldp, Acc *HECTOR_RESTRICT acc,
                        std::int64_t ldc, bool first) {
  using S = Simd<Acc>;
  using V = typename S::Vec;
  constexpr std::int64_t L = S::kLanes;
  V c[MR][NV];
HECTOR_UNROLL(8)
  for (int i = 0; i < MR; ++i)
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      c[i][j] = first ? V{} : S::load(acc + i * ldc + j * L);
  const T *a[MR];
HECTOR_UNROLL(8)
  for (int i = 0; i < MR; ++i)
    a[i] = aRows[i] + k0;
  for (std::int64_t k = 0; k < kd; ++k) {
    V b[NV];
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      b[j] = S::load(pack + k * ldp + j * L);
HECTOR_UNROLL(8)
    for (int i = 0; i < MR; ++i) {
      const Acc av = Acc(a[i][k]);
HECTOR_UNROLL(4)
      for (int j = 0; j < NV; ++j)
        c[i][j] += av * b[j];
    }
  }
HECTOR_UNROLL(8)
  for (int i = 0; i < MR; ++i)
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      S::store(acc + i * ldc + j * L, c[i][j]);
}

/// The micro-kernel for `rows` < MR rows (the tail of a row tile).
template <typename T, int MR, int NV, typename Acc = AccumType<T>>
inline void microKernelTail(std::int64_t rows, const T *const *aRows, std::int64_t k0,
                            std::int64_t kd, const Acc *pack, std::int64_t ldp, Acc *acc,
                            std::int64_t ldc, bool first) {
  if constexpr (MR > 1) {
    if (rows == MR - 1)
      return microKernel<T, MR - 1, NV>(aRows, k0, kd, pack, ldp, acc, ldc, first);
    return microKernelTail<T, MR - 1, NV>(rows, aRows, k0, kd, pack, ldp, acc, ldc, first);
  }
}

/// Runs the micro-kernels over a [rows, nv vectors] accumulator tile (row stride ldc) for one
/// depth block: column groups of up to four vectors, each over the rows in register blocks.
template <typename T, typename Acc = AccumType<T>>
inline void tileDepthBlock(std::int64_t rows, std::int64_t nv, const T *const *aRows,
                           std::int64_t k0, std::int64_t kd, const Acc *pack, std::int64_t ldp,
                           Acc *acc, std::int64_t ldc, bool first) {
  constexpr std::int64_t L = Simd<Acc>::kLanes;
  auto group = [&](auto nvTag, std::int64_t v0) {
    constexpr int NV = decltype(nvTag)::value;
    constexpr int MR = microRows(NV);
    std::int64_t r = 0;
    for (; r + MR <= rows; r += MR)
      microKernel<T, MR, NV>(aRows + r, k0, kd, pack + v0 * L, ldp, acc + r * ldc + v0 * L, ldc,
                             first);
    if (r < rows)
      microKernelTail<T, MR, NV>(rows - r, aRows + r, k0, kd, pack + v0 * L, ldp,
                                 acc + r * ldc + v0 * L, ldc, first);
  };
  std::int64_t v0 = 0;
  for (; v0 + kMaxGroupVectors <= nv; v0 += kMaxGroupVectors)
    group(std::integral_constant<int, kMaxGroupVectors>{}, v0);
  switch (nv - v0) {
  case 3:
    if constexpr (kMaxGroupVectors > 3)
      group(std::integral_constant<int, 3>{}, v0);
    break;
  case 2:
    if constexpr (kMaxGroupVectors > 2)
      group(std::integral_constant<int, 2>{}, v0);
    break;
  case 1: group(std::integral_constant<int, 1>{}, v0); break;
  default: break;
  }
}

#if HECTOR_CPU_AMX
/// `gemmTiles` for bfloat16 on AMX tiles: B of every non-empty segment and head packed once,
/// in the tiles' pair layout; tasks of up to kAmxRows rows x all N columns x one head, whose
/// gathered rows are copied into a zero-padded bfloat16 block and multiplied in 32 x 32 tile
/// blocks over the whole depth.
template <typename T, BOp Op, typename Index, typename TB, typename TC, typename Store>
void gemmTilesAmx(const GemmProblem<T, Index, TB, TC> &p, Store &&store) {
  static_assert(std::is_same_v<T, TB>, "AMX tiles multiply bfloat16 A and B");
  constexpr std::int64_t kAmxRows = 128;
  const std::int64_t K = p.K, N = p.N, H = p.heads, S = p.numSegments;
  if (N == 0 || H == 0)
    return;
  const std::vector<RowTile> tiles = makeRowTiles(S, p.segOffsets, kAmxRows);
  const std::int64_t numTasks = static_cast<std::int64_t>(tiles.size()) * H;
  if (numTasks == 0)
    return;
  const std::int64_t Kp = amx::roundUp(K, amx::kTileDepth), Np = amx::roundUp(N, 16);
  const std::int64_t packSize = Kp * Np;
  const auto *bBits = reinterpret_cast<const std::uint16_t *>(p.B);
  // Buffers before the parallel regions (an allocation failure stays on the caller's thread).
  std::vector<std::uint16_t> packs(static_cast<std::size_t>(S * H * packSize));
  const int maxThreads = maxThreadCount();
  std::vector<std::uint16_t> aAll(static_cast<std::size_t>(maxThreads * kAmxRows * Kp));
  std::vector<float> accAll(static_cast<std::size_t>(maxThreads * kAmxRows * Np));
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t sh = 0; sh < S * H; ++sh) {
    const std::int64_t s = sh / H, head = sh % H;
    if (p.segOffsets[s + 1] > p.segOffsets[s])
      amx::packB(bBits + s * p.strideB + head * K * N, Op == BOp::kTranspose, K, N, Kp, Np,
                 packs.data() + sh * packSize);
  }
#pragma omp parallel
  {
    const amx::TileScope tileScope;
    const int t = threadIndex();
    std::uint16_t *a = aAll.data() + t * kAmxRows * Kp;
    float *acc = accAll.data() + t * kAmxRows * Np;
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < numTasks; ++task) {
      const std::int64_t head = task % H;
      const RowTile &tile = tiles[task / H];
      const std::int64_t rows = tile.end - tile.begin;
      for (std::int64_t r = 0; r < amx::roundUp(rows, amx::kTileRows); ++r) {
        std::uint16_t *dst = a + r * Kp;
        std::int64_t copied = 0;
        if (r < rows) {
          const std::int64_t row = tile.begin + r;
          const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
          const std::int64_t in = p.gather ? static_cast<std::int64_t>(p.gather[phys]) : phys;
          // An inline copy: a libc call per row of a few hundred bytes costs more than it.
          const auto *HECTOR_RESTRICT src =
              reinterpret_cast<const std::uint16_t *>(p.A + in * p.lda + head * K);
#pragma omp simd
          for (std::int64_t k = 0; k < K; ++k)
            dst[k] = src[k];
          copied = K;
        }
        std::fill(dst + copied, dst + Kp, std::uint16_t(0));
      }
      amx::multiply(rows, Kp, a, Kp, packs.data() + (tile.segment * H + head) * packSize, Np, acc,
                    /*accumulate=*/false);
      for (std::int64_t r = 0; r < rows; ++r)
        store(tile.begin + r, head, std::int64_t(0), N, acc + r * Np);
    }
  }
}
#endif

/// Computes row-aligned results of every tile and hands each finished
/// [rows, nw] block to `store(row, head, n0, nw, accRow)`, `row` the problem's
/// logical row (an index into the segments' rows, before `rows`); `accRow` holds AccumType<T>.
/// bfloat16 A and B run on AMX tiles where they are available and enabled (see amx.h); a B of
/// another type than A (a float B beside 16-bit rows of A) is packed as the accumulation type
/// like any B, so that it keeps its precision.
///
/// op(B) of every non-empty segment and head is packed once, before the row tiles, into
/// zero-padded [K, kCols] column blocks of the accumulation type (the tiles of a segment read
/// the same block from cache rather than each packing its own). Tasks (row tile, column block,
/// head) are handed out in runs of kTaskRun consecutive ones; within a run, the gathered rows
/// of the next task are prefetched while the current one computes.
template <typename T, BOp Op, typename Tile, typename Index, typename TB, typename TC,
          typename Store>
void gemmTiles(const GemmProblem<T, Index, TB, TC> &p, Store &&store) {
#if HECTOR_CPU_AMX
  if constexpr (isBfloat16Bits<T>() && std::is_same_v<T, TB>)
    if (amxEnabled())
      return gemmTilesAmx<T, Op>(p, store);
#endif
  using Acc = AccumType<T>;
  using S = Simd<Acc>;
  constexpr std::int64_t L = S::kLanes;
  constexpr std::int64_t MT = Tile::kRows, NC = Tile::kCols, KD = Tile::kDepth;
  constexpr std::int64_t kTaskRun = 8;
  // The column block in whole vectors (zero-padded in the packed B).
  constexpr std::int64_t NVC = (NC + L - 1) / L, LDP = NVC * L;
  const std::vector<RowTile> tiles = makeRowTiles(p.numSegments, p.segOffsets, MT);
  const std::int64_t numTiles = static_cast<std::int64_t>(tiles.size());
  const std::int64_t colBlocks = ceilDiv<std::int64_t>(p.N, NC);
  const std::int64_t numTasks = numTiles * colBlocks * p.heads;
  if (numTasks == 0)
    return;
  const std::int64_t K = p.K, N = p.N, H = p.heads, SH = p.numSegments * p.heads;
  // Buffers are allocated before the parallel regions: an allocation failure is an exception
  // of the caller's thread, never one inside an OpenMP region.
  const std::int64_t packSize = colBlocks * K * LDP; // one segment and head
  std::vector<Acc> packs(static_cast<std::size_t>(SH * packSize + L));
  const int maxThreads = maxThreadCount();
  std::vector<Acc> accAll(static_cast<std::size_t>(maxThreads * MT * LDP + L));
  // Each depth block of the tile's rows is staged: copied into a dense per-thread block of Acc
  // (exact: the same values in the same order), where A is 16-bit (widened once, with vector
  // conversions, rather than a scalar conversion per broadcast, which costs more than the FMAs
  // it feeds) or its rows are gathered or permuted (one streaming copy keeps many of the
  // scattered rows' cache misses in flight at once; the micro-kernels' broadcasts then hit L1
  // rather than stalling on one row after another: 0.33 -> 0.23 s for a 2.6M-row gathered
  // float32 GEMM of 64 x 64 on 2 AVX2 cores).
  constexpr bool kWiden = !std::is_same_v<T, Acc>;
  const bool scatteredA = p.gather != nullptr || p.rows != nullptr;
  const bool stage = kWiden || scatteredA;
  std::vector<Acc> widenAll(stage ? static_cast<std::size_t>(maxThreads * MT * KD + L) : 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t sh = 0; sh < SH; ++sh) {
    const std::int64_t s = sh / H, head = sh % H;
    if (p.segOffsets[s + 1] == p.segOffsets[s] || K == 0)
      continue;
    const TB *bSeg = p.B + s * p.strideB + head * K * N;
    for (std::int64_t cb = 0; cb < colBlocks; ++cb) {
      const std::int64_t n0 = cb * NC, nw = std::min<std::int64_t>(NC, N - n0);
      packB<TB, Op, Acc>(bSeg, K, N, n0, nw, packs.data() + sh * packSize + cb * K * LDP, LDP);
    }
  }
  // The first row of A that logical row `row` reads (head 0).
  auto rowOfA = [&](std::int64_t row) {
    const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
    const std::int64_t in = p.gather ? static_cast<std::int64_t>(p.gather[phys]) : phys;
    return p.A + in * p.lda;
  };
  // (Rows of A that are neither gathered nor permuted are contiguous: the hardware prefetches
  // them. Prefetching scattered rows of C for the stores gained nothing measurable.)
  auto prefetchTask = [&](std::int64_t task) {
    if (!scatteredA)
      return;
    const std::int64_t head = task % H;
    const RowTile &tile = tiles[task / (H * colBlocks)];
    for (std::int64_t row = tile.begin; row < tile.end; ++row)
      prefetchRow(rowOfA(row) + head * K, K);
  };
#pragma omp parallel
  {
    const int t = threadIndex();
    Acc *HECTOR_RESTRICT acc = accAll.data() + t * MT * LDP;
    Acc *HECTOR_RESTRICT widened = stage ? widenAll.data() + t * MT * KD : nullptr;
    const T *aRows[MT];
    const Acc *wideRows[MT];
    // Runs of kTaskRun consecutive tasks: the next task of a run is known, so its rows can be
    // on their way while this one computes.
#pragma omp for schedule(dynamic, kTaskRun)
    for (std::int64_t task = 0; task < numTasks; ++task) {
      const std::int64_t head = task % H;
      const std::int64_t cb = (task / H) % colBlocks;
      const RowTile &tile = tiles[task / (H * colBlocks)];
      const std::int64_t rows = tile.end - tile.begin;
      const std::int64_t n0 = cb * NC, nw = std::min<std::int64_t>(NC, N - n0);
      const std::int64_t nv = ceilDiv<std::int64_t>(nw, L);
      if (task % kTaskRun == 0)
        prefetchTask(task);
      if ((task + 1) % kTaskRun != 0 && task + 1 < numTasks)
        prefetchTask(task + 1);
      for (std::int64_t r = 0; r < rows; ++r)
        aRows[r] = rowOfA(tile.begin + r) + head * K;
      const Acc *pack = packs.data() + (tile.segment * H + head) * packSize + cb * K * LDP;
      if (K == 0)
        std::fill(acc, acc + rows * LDP, Acc(0));
      for (std::int64_t k0 = 0; k0 < K; k0 += KD) {
        const std::int64_t kd = std::min<std::int64_t>(KD, K - k0);
        if (stage) {
          for (std::int64_t r = 0; r < rows; ++r) {
            const T *HECTOR_RESTRICT src = aRows[r] + k0;
            Acc *HECTOR_RESTRICT dst = widened + r * KD;
#pragma omp simd
            for (std::int64_t k = 0; k < kd; ++k)
              dst[k] = Acc(src[k]);
            wideRows[r] = dst;
          }
          tileDepthBlock<Acc>(rows, nv, wideRows, 0, kd, pack + k0 * LDP, LDP, acc, LDP, k0 == 0);
        } else {
          tileDepthBlock<T>(rows, nv, aRows, k0, kd, pack + k0 * LDP, LDP, acc, LDP, k0 == 0);
        }
      }
      for (std::int64_t r = 0; r < rows; ++r)
        store(tile.begin + r, head, n0, nw, acc + r * LDP);
    }
  }
}

/// The weight-gradient micro-kernel: acc[MK rows of k, NV vectors of n] (row stride ldacc) +=
/// sum_{r < rb} a[r][k] dc[r][n], over packed [rb, lda] / [rb, ldg] blocks, the accumulators
/// in registers; every element sums its rows in increasing order. T: the accumulation type
/// (the packed blocks are converted to it).
template <typename T, int MK, int NV>
inline void wgradKernel(std::int64_t rb, const T *HECTOR_RESTRICT a, std::int64_t lda,
                        const T *HECTOR_RESTRICT g, std::int64_t ldg, T *HECTOR_RESTRICT acc,
                        std::int64_t ldacc) {
  using S = Simd<T>;
  using V = typename S::Vec;
  constexpr std::int64_t L = S::kLanes;
  V c[MK][NV];
HECTOR_UNROLL(8)
  for (int i = 0; i < MK; ++i)
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      c[i][j] = S::load(acc + i * ldacc + j * L);
  for (std::int64_t r = 0; r < rb; ++r) {
    V b[NV];
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      b[j] = S::load(g + r * ldg + j * L);
HECTOR_UNROLL(8)
    for (int i = 0; i < MK; ++i) {
      const T av = a[r * lda + i];
HECTOR_UNROLL(4)
      for (int j = 0; j < NV; ++j)
        c[i][j] += av * b[j];
    }
  }
HECTOR_UNROLL(8)
  for (int i = 0; i < MK; ++i)
HECTOR_UNROLL(4)
    for (int j = 0; j < NV; ++j)
      S::store(acc + i * ldacc + j * L, c[i][j]);
}

/// The weight-gradient kernel for `mk` < MK rows of k.
template <typename T, int MK, int NV>
inline void wgradKernelTail(std::int64_t mk, std::int64_t rb, const T *a, std::int64_t lda,
                            const T *g, std::int64_t ldg, T *acc, std::int64_t ldacc) {
  if constexpr (MK > 1) {
    if (mk == MK - 1)
      return wgradKernel<T, MK - 1, NV>(rb, a, lda, g, ldg, acc, ldacc);
    return wgradKernelTail<T, MK - 1, NV>(mk, rb, a, lda, g, ldg, acc, ldacc);
  }
}

/// The rows of A and dC that row `row` of a weight-gradient problem multiplies, at head `head`.
template <typename T, typename Index, typename TG, typename TD>
inline std::pair<const T *, const TG *> wgradRow(const WeightGradProblem<T, Index, TG, TD> &p,
                                                 std::int64_t row, std::int64_t head) {
  const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
  const std::int64_t ia = p.gatherA ? static_cast<std::int64_t>(p.gatherA[phys]) : phys;
  const std::int64_t ic = p.gatherC ? static_cast<std::int64_t>(p.gatherC[phys]) : phys;
  return {p.A + ia * p.lda + head * p.K, p.dC + ic * p.ldc + head * p.N};
}

#if HECTOR_CPU_AMX
/// One thread's blocks for wgradRowsAmx, in 32-bit units (pairs of bfloat16): the [KA, kRows
/// / 2] first operand (zero beyond K), the [kRows / 2, NP] second operand, A's rows as pairs
/// before the transposition ([kRows / 2, K]) and a zero row of max(K, N) bfloat16.
struct AmxWgradScratch {
  static constexpr std::int64_t kRows = 256; // rows of A and dC per block
  std::uint32_t *aT = nullptr, *gPairs = nullptr, *aPairs = nullptr;
  const std::uint16_t *zeros = nullptr;
  static std::int64_t size(std::int64_t K, std::int64_t N, std::int64_t KA, std::int64_t NP) {
    return KA * kRows / 2 + kRows / 2 * NP + kRows / 2 * K + (K + N + 1) / 2;
  }
  AmxWgradScratch() = default;
  /// Carves `block` (size() units) and zeroes it.
  AmxWgradScratch(std::uint32_t *block, std::int64_t K, std::int64_t N, std::int64_t KA,
                  std::int64_t NP)
      : aT(block), gPairs(aT + KA * kRows / 2), aPairs(gPairs + kRows / 2 * NP),
        zeros(reinterpret_cast<const std::uint16_t *>(aPairs + kRows / 2 * K)) {
    std::fill(block, block + size(K, N, KA, NP), std::uint32_t(0));
  }
};

/// acc[KA, NP] += sum over rows [begin, end) of A[row]^T dC[row] at head `head`, on AMX tiles,
/// kRows rows at a time: rows 2j and 2j + 1 as one 32-bit unit per column (the lower half the
/// even row), dC's straight into the tiles' pair layout, A's into [rows / 2, K] pairs then
/// transposed into the [K, rows / 2] first operand; padding rows read the zero row.
template <typename T, typename Index, typename TG, typename TD>
void wgradRowsAmx(const WeightGradProblem<T, Index, TG, TD> &p, std::int64_t head,
                  std::int64_t begin, std::int64_t end, std::int64_t KA, std::int64_t NP,
                  const AmxWgradScratch &scratch, float *acc) {
  static_assert(std::is_same_v<T, TG>, "AMX tiles multiply bfloat16 A and dC");
  constexpr std::int64_t RB = AmxWgradScratch::kRows;
  const std::int64_t K = p.K, N = p.N;
  std::uint32_t *aT = scratch.aT, *gPairs = scratch.gPairs, *aPairs = scratch.aPairs;
  for (std::int64_t r0 = begin; r0 < end; r0 += RB) {
    const std::int64_t rb = std::min<std::int64_t>(RB, end - r0);
    const std::int64_t rp = ceilDiv<std::int64_t>(rb, amx::kTileDepth) * amx::kTileDepth;
    for (std::int64_t j = 0; j < rp / 2; ++j) {
      const std::uint16_t *a2[2], *g2[2];
      for (int e = 0; e < 2; ++e) {
        if (2 * j + e >= rb) {
          a2[e] = g2[e] = scratch.zeros;
          continue;
        }
        const auto [a, g] = wgradRow(p, r0 + 2 * j + e, head);
        a2[e] = reinterpret_cast<const std::uint16_t *>(a);
        g2[e] = reinterpret_cast<const std::uint16_t *>(g);
      }
      std::uint32_t *HECTOR_RESTRICT ap = aPairs + j * K;
      const std::uint16_t *HECTOR_RESTRICT a0 = a2[0], *HECTOR_RESTRICT a1 = a2[1];
#pragma omp simd
      for (std::int64_t k = 0; k < K; ++k)
        ap[k] = a0[k] | static_cast<std::uint32_t>(a1[k]) << 16;
      std::uint32_t *HECTOR_RESTRICT gp = gPairs + j * NP;
      const std::uint16_t *HECTOR_RESTRICT g0 = g2[0], *HECTOR_RESTRICT g1 = g2[1];
#pragma omp simd
      for (std::int64_t n = 0; n < N; ++n)
        gp[n] = g0[n] | static_cast<std::uint32_t>(g1[n]) << 16;
      std::fill(gp + N, gp + NP, std::uint32_t(0));
    }
    for (std::int64_t k = 0; k < K; ++k) {
      std::uint32_t *HECTOR_RESTRICT dst = aT + k * (RB / 2);
      const std::uint32_t *HECTOR_RESTRICT src = aPairs + k;
      for (std::int64_t j = 0; j < rp / 2; ++j)
        dst[j] = src[j * K];
    }
    amx::multiply(KA, rp, reinterpret_cast<const std::uint16_t *>(aT), RB,
                  reinterpret_cast<const std::uint16_t *>(gPairs), NP, acc,
                  /*accumulate=*/true);
  }
}
#endif

#if defined(__GNUC__) && !defined(__CUDACC__)
#pragma GCC diagnostic pop
#endif

} // namespace detail

/// Segmented GEMM (see `GemmProblem`). `Op` selects op(B), `Mode` the scatter:
/// `kStore` / `kAccumulate` write or add each row's result into its own row of C;
/// `kAccumulateIndexPerSegment` adds each segment's rows straight into C at `scatter`, one
/// segment after another (the index is injective within a segment).
/// A 16-bit C is rounded once per store, so there once per segment that reaches a row.
/// B and C may have other element types than A (see `GemmProblem`), deduced from `p`.
template <typename T, BOp Op, Scatter Mode, typename Tile = GemmTile<T>,
          typename Index = std::int64_t, typename TB = T, typename TC = T>
void segmentedGemm(const GemmProblem<T, Index, TB, TC> &p) {
  using Acc = AccumType<T>;
  if constexpr (Mode == Scatter::kStore || Mode == Scatter::kAccumulate) {
    detail::gemmTiles<T, Op, Tile>(p, [&](std::int64_t row, std::int64_t head, std::int64_t n0,
                                          std::int64_t nw, const Acc *HECTOR_RESTRICT acc) {
      const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
      TC *HECTOR_RESTRICT c = p.C + phys * p.ldc + head * p.N + n0;
      detail::storeRow<Mode == Scatter::kAccumulate>(c, acc, nw);
    });
  } else {
    static_assert(Mode == Scatter::kAccumulateIndexPerSegment);
    // One segment at a time: within it no two rows share an output row.
    for (std::int64_t s = 0; s < p.numSegments; ++s) {
      GemmProblem<T, Index, TB, TC> q = p;
      q.numSegments = 1;
      q.segOffsets = p.segOffsets + s;
      q.B = p.B + s * p.strideB;
      detail::gemmTiles<T, Op, Tile>(q, [&](std::int64_t row, std::int64_t head, std::int64_t n0,
                                            std::int64_t nw, const Acc *HECTOR_RESTRICT acc) {
        const std::int64_t phys = p.rows ? static_cast<std::int64_t>(p.rows[row]) : row;
        TC *HECTOR_RESTRICT c =
            p.C + static_cast<std::int64_t>(p.scatter[phys]) * p.ldc + head * p.N + n0;
        detail::storeRow<true>(c, acc, nw);
      });
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
/// problem alone: deterministic, independent of the thread count. dC and dB may have other
/// element types than A (see `WeightGradProblem`), deduced from `p`.
template <typename T, BOp Op, Assign Mode, typename Tile = GemmTile<T>,
          typename Index = std::int64_t, typename TG = T, typename TD = T>
void segmentedWeightGrad(const WeightGradProblem<T, Index, TG, TD> &p) {
  using Acc = AccumType<T>;
  using S = detail::Simd<Acc>;
  constexpr std::int64_t L = S::kLanes;
  constexpr std::int64_t CR = Tile::kWgradRows;
  constexpr std::int64_t RB = 64; // rows packed per block (two [RB, K/N] blocks stay in L1/L2)
  const std::int64_t K = p.K, N = p.N, KN = K * N, H = p.heads;
  if (p.numSegments == 0 || KN == 0 || H == 0)
    return;
  // Accumulators are [K, NP] with NP = N rounded up to whole vectors (zero-padded columns).
  const std::int64_t NP = ceilDiv<std::int64_t>(N, L) * L, KNP = K * NP;

  // Chunks per segment; partial slots only for segments of several chunks.
  std::vector<std::int64_t> chunkStart(p.numSegments + 1, 0), slotStart(p.numSegments + 1, 0);
  for (std::int64_t s = 0; s < p.numSegments; ++s) {
    const std::int64_t rows = p.segOffsets[s + 1] - p.segOffsets[s];
    const std::int64_t chunks = ceilDiv<std::int64_t>(rows, CR);
    chunkStart[s + 1] = chunkStart[s] + chunks;
    slotStart[s + 1] = slotStart[s] + (chunks > 1 ? chunks : 0);
  }
  const std::int64_t numChunks = chunkStart[p.numSegments];
  std::vector<Acc> partials(static_cast<std::size_t>(slotStart[p.numSegments] * H * KNP));

  auto writeOut = [&](std::int64_t s, std::int64_t head, const Acc *HECTOR_RESTRICT acc) {
    TD *HECTOR_RESTRICT d = p.dB + s * p.strideB + head * KN;
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t n = 0; n < N; ++n) {
        const std::int64_t at = Op == BOp::kIdentity ? k * N + n : n * K + k;
        if constexpr (Mode == Assign::kAdd)
          d[at] = TD(Acc(d[at]) + acc[k * NP + n]);
        else
          d[at] = TD(acc[k * NP + n]);
      }
  };

  // Empty segments: zero when overwriting.
  if constexpr (Mode == Assign::kStore) {
    for (std::int64_t s = 0; s < p.numSegments; ++s)
      if (chunkStart[s + 1] == chunkStart[s])
        for (std::int64_t h = 0; h < H; ++h)
          std::fill(p.dB + s * p.strideB + h * KN, p.dB + s * p.strideB + (h + 1) * KN, TD(0));
  }

  // bfloat16 on AMX tiles (detail::wgradRowsAmx): the accumulator has KA >= K rows (K
  // rounded up to whole tiles, the extra rows stay zero).
#if HECTOR_CPU_AMX
  constexpr bool kAmxTypes = detail::isBfloat16Bits<T>() && std::is_same_v<T, TG>;
  const bool useAmx = kAmxTypes && amxEnabled();
#else
  constexpr bool useAmx = false;
#endif
  const std::int64_t KA = useAmx ? ceilDiv<std::int64_t>(K, 16) * 16 : K, KAP = KA * NP;
  // Per-thread buffers, allocated before the parallel region: the [KA, NP] accumulator and the
  // packed row blocks of A ([RB, K]) and dC ([RB, NP], zero-padded), or the AMX blocks.
  const int maxThreads = maxThreadCount();
  const std::int64_t perThread = KAP + RB * K + RB * NP;
  std::vector<Acc> buffers(static_cast<std::size_t>(maxThreads * perThread));
#if HECTOR_CPU_AMX
  const std::int64_t amxPerThread = useAmx ? detail::AmxWgradScratch::size(K, N, KA, NP) : 0;
  std::vector<std::uint32_t> amxBlocks(static_cast<std::size_t>(maxThreads * amxPerThread));
#endif
  const std::int64_t numTasks = numChunks * H;
  const bool scatteredA = p.gatherA || p.rows, scatteredC = p.gatherC || p.rows;
  // Micro-kernel calls per row block (k blocks of microRows(nv) for each column group), over
  // which the next block's prefetches are spread, at least kPrefetchRowsPerCall rows each.
  constexpr std::int64_t kPrefetchRowsPerCall = 4;
  std::int64_t kernelCalls = 0;
  for (std::int64_t v0 = 0; v0 < NP / L; v0 += detail::kMaxGroupVectors) {
    const auto nv = std::min<std::int64_t>(detail::kMaxGroupVectors, NP / L - v0);
    kernelCalls += ceilDiv<std::int64_t>(K, detail::microRows(static_cast<int>(nv)));
  }
  kernelCalls = std::max<std::int64_t>(kernelCalls, 1);
#pragma omp parallel
  {
    Acc *HECTOR_RESTRICT acc = buffers.data() + threadIndex() * perThread;
    Acc *HECTOR_RESTRICT packA = acc + KAP;
    Acc *HECTOR_RESTRICT packG = packA + RB * K;
#if HECTOR_CPU_AMX
    detail::AmxWgradScratch amxScratch;
    std::optional<amx::TileScope> tileScope;
    if (useAmx) {
      tileScope.emplace();
      amxScratch =
          detail::AmxWgradScratch(amxBlocks.data() + threadIndex() * amxPerThread, K, N, KA, NP);
    }
#endif
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t task = 0; task < numTasks; ++task) {
      const std::int64_t head = task % H, chunk = task / H;
      const std::int64_t s =
          std::upper_bound(chunkStart.begin(), chunkStart.end(), chunk) - chunkStart.begin() - 1;
      const std::int64_t local = chunk - chunkStart[s];
      const std::int64_t begin = p.segOffsets[s] + local * CR;
      const std::int64_t end = std::min<std::int64_t>(p.segOffsets[s + 1], begin + CR);
      std::fill(acc, acc + KAP, Acc(0));
      bool done = false; // by the AMX tiles
#if HECTOR_CPU_AMX
      if constexpr (kAmxTypes)
        if (useAmx) {
          detail::wgradRowsAmx(p, head, begin, end, KA, NP, amxScratch, acc);
          done = true;
        }
#endif
      for (std::int64_t r0 = begin; !done && r0 < end; r0 += RB) {
        const std::int64_t rb = std::min<std::int64_t>(RB, end - r0);
        // The next block's rows (gathered rows are scattered in memory) are on their way while
        // this block computes: a few rows before each micro-kernel call, so that the misses
        // in flight stay within what the core tracks at once (issued all at the start of the
        // block, they stall it: 0.24 -> 0.20 s for a 2.6M-row gathered float32 weight gradient
        // of 64 x 64 on 2 AVX2 cores).
        std::int64_t nextRow = r0 + RB;
        const std::int64_t nextEnd =
            scatteredA || scatteredC ? std::min<std::int64_t>(end, r0 + 2 * RB) : nextRow;
        const std::int64_t perCall = std::max<std::int64_t>(
            kPrefetchRowsPerCall, ceilDiv<std::int64_t>(nextEnd - nextRow, kernelCalls));
        auto prefetchNext = [&] {
          for (const std::int64_t stop = std::min(nextEnd, nextRow + perCall); nextRow < stop;
               ++nextRow) {
            const auto [a, g] = detail::wgradRow(p, nextRow, head);
            if (scatteredA)
              detail::prefetchRow(a, K);
            if (scatteredC)
              detail::prefetchRow(g, N);
          }
        };
        for (std::int64_t r = 0; r < rb; ++r) {
          const auto [a, g] = detail::wgradRow(p, r0 + r, head);
          std::transform(a, a + K, packA + r * K, [](const T &x) { return Acc(x); });
          std::transform(g, g + N, packG + r * NP, [](const TG &x) { return Acc(x); });
          std::fill(packG + r * NP + N, packG + (r + 1) * NP, Acc(0));
        }
        // Register blocks of the [K, NP] accumulator: up to kMaxGroupVectors vectors of n by
        // detail::microRows of k.
        constexpr std::int64_t G = detail::kMaxGroupVectors;
        for (std::int64_t v0 = 0; v0 < NP / L; v0 += G) {
          const std::int64_t nv = std::min<std::int64_t>(G, NP / L - v0);
          auto block = [&](auto nvTag) {
            constexpr int NV = decltype(nvTag)::value;
            constexpr int MK = detail::microRows(NV);
            std::int64_t k = 0;
            for (; k + MK <= K; k += MK) {
              prefetchNext();
              detail::wgradKernel<Acc, MK, NV>(rb, packA + k, K, packG + v0 * L, NP,
                                               acc + k * NP + v0 * L, NP);
            }
            if (k < K) {
              prefetchNext();
              detail::wgradKernelTail<Acc, MK, NV>(K - k, rb, packA + k, K, packG + v0 * L, NP,
                                                   acc + k * NP + v0 * L, NP);
            }
          };
          switch (nv) {
          case 4:
            if constexpr (G >= 4)
              block(std::integral_constant<int, 4>{});
            break;
          case 3:
            if constexpr (G >= 3)
              block(std::integral_constant<int, 3>{});
            break;
          case 2: block(std::integral_constant<int, 2>{}); break;
          default: block(std::integral_constant<int, 1>{}); break;
          }
        }
      }
      const std::int64_t chunks = chunkStart[s + 1] - chunkStart[s];
      if (chunks == 1) {
        writeOut(s, head, acc);
      } else {
        Acc *slot = partials.data() + ((slotStart[s] + local) * H + head) * KNP;
        std::copy(acc, acc + KNP, slot);
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
      const Acc *first = partials.data() + (slotStart[s] * H + head) * KNP;
      std::copy(first, first + KNP, acc);
      for (std::int64_t c = 1; c < chunks; ++c) {
        const Acc *HECTOR_RESTRICT part = partials.data() + ((slotStart[s] + c) * H + head) * KNP;
#pragma omp simd
        for (std::int64_t i = 0; i < KNP; ++i)
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
