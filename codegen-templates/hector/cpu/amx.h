//===- hector/cpu/amx.h - AMX bfloat16 tiles of the CPU GEMM template -----===//
//
// The bfloat16 GEMMs of the CPU template on Intel AMX (AMX-TILE, AMX-BF16): eight tile
// registers of 16 rows x 64 bytes, TDPBF16PS multiplying a [16, 32] bfloat16 tile by a
// [32, 16] one (stored as 16 rows of k-pairs, "VNNI" layout) into a [16, 16] float tile.
// Products are exact in float and summed in float; the order of the sums is fixed by the
// problem's shape (never by the thread count), so results are deterministic. Like the
// instruction, the kernels treat denormal bfloat16 inputs and float results as zero.
//
// Compiled only for a target with AMX (the emitted libraries are built with -march=native
// unless `--portable`); at run time the kernels are used when the CPU has the units, Linux
// grants the process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM), and neither the
// environment (HECTOR_CPU_AMX=0) nor `setAmxEnabled(false)` turns them off. Otherwise the
// template's AVX-512/AVX2 path runs.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_AMX_H
#define HECTOR_TEMPLATES_CPU_AMX_H

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__CUDACC__)
#define HECTOR_CPU_AMX 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#else
#define HECTOR_CPU_AMX 0
#endif

namespace hector {
namespace tmpl {
namespace cpu {

namespace detail {
/// -1: not decided yet (read HECTOR_CPU_AMX on first use); 0: off; 1: on where available.
inline std::atomic<int> &amxSwitch() {
  static std::atomic<int> state{-1};
  return state;
}
} // namespace detail

/// Whether this translation unit was compiled with the AMX kernels.
constexpr bool amxCompiled() { return HECTOR_CPU_AMX != 0; }

/// Whether the AMX kernels can run here: compiled in, the CPU has AMX-TILE and AMX-BF16, and
/// the kernel granted the process the tile data state (asked once, on the first call).
inline bool amxAvailable() {
#if HECTOR_CPU_AMX
  static const bool available = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
      return false;
    const bool bf16 = (edx >> 22) & 1u, tile = (edx >> 24) & 1u;
    if (!bf16 || !tile)
      return false;
    // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA: Linux enables the 8 KiB tile state only for
    // processes that ask; a kernel that refuses (or predates 5.16) leaves AMX off.
    constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return available;
#else
  return false;
#endif
}

/// Turns the AMX kernels on (where available) or off for the rest of the process; the
/// default comes from the environment: HECTOR_CPU_AMX=0 turns them off.
inline void setAmxEnabled(bool enabled) { detail::amxSwitch().store(enabled ? 1 : 0); }

/// Whether the bfloat16 GEMMs run on AMX tiles now.
inline bool amxEnabled() {
  int state = detail::amxSwitch().load(std::memory_order_relaxed);
  if (state < 0) {
    const char *env = std::getenv("HECTOR_CPU_AMX");
    state = env && std::strcmp(env, "0") == 0 ? 0 : 1;
    int expected = -1;
    detail::amxSwitch().compare_exchange_strong(expected, state);
    state = detail::amxSwitch().load(std::memory_order_relaxed);
  }
  return state == 1 && amxAvailable();
}

namespace amx {

/// Rows and bfloat16 columns of every tile the kernels use; k and n are padded to these.
constexpr std::int64_t kTileRows = 16;
constexpr std::int64_t kTileDepth = 32;

constexpr std::int64_t roundUp(std::int64_t x, std::int64_t m) { return (x + m - 1) / m * m; }

/// op(B) ([K, N]) of one segment and head as [Kp / 2, Np, 2] bfloat16 bits (k-pairs
/// interleaved per column, the layout of TDPBF16PS's second operand), zero beyond K and N.
/// `transposed`: B is stored [N, K].
inline void packB(const std::uint16_t *b, bool transposed, std::int64_t K, std::int64_t N,
                  std::int64_t Kp, std::int64_t Np, std::uint16_t *pack) {
  for (std::int64_t kk = 0; kk < Kp / 2; ++kk) {
    std::uint16_t *dst = pack + kk * Np * 2;
    for (std::int64_t n = 0; n < Np; ++n)
      for (std::int64_t e = 0; e < 2; ++e) {
        const std::int64_t k = 2 * kk + e;
        dst[2 * n + e] =
            k < K && n < N ? (transposed ? b[n * K + k] : b[k * N + n]) : std::uint16_t(0);
      }
  }
}

#if HECTOR_CPU_AMX

/// The tile configuration: palette 1, all eight tiles 16 rows x 64 bytes. Tiles 0-3 hold
/// float results, 4-5 the first operand, 6-7 the second.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t startRow = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
  TileConfig() {
    for (int t = 0; t < 8; ++t) {
      colsb[t] = 64;
      rows[t] = kTileRows;
    }
  }
};

/// Loads the configuration for the calling thread and releases the tiles on exit (tile
/// state is per thread: one scope per thread of a parallel region).
struct TileScope {
  TileScope() {
    static const TileConfig config;
    _tile_loadconfig(&config);
  }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope &) = delete;
  TileScope &operator=(const TileScope &) = delete;
};

/// c[M, Np] (row stride Np floats; `accumulate`: +=, else =) a[M, D] x b: a in bfloat16 bits
/// with row stride lda, its rows padded with zero rows to a multiple of 16; b the [D / 2, Np, 2]
/// pair layout; D a multiple of 32 and Np of 16. Blocks of 32 x 32 results in the four result
/// tiles, over the whole depth D in steps of 32. The forward GEMM is a x B with a the task's
/// gathered rows; the weight gradient A^T x dC with a the transposed rows of A (M = K) and D
/// rows of dC.
inline void multiply(std::int64_t M, std::int64_t D, const std::uint16_t *a, std::int64_t lda,
                     const std::uint16_t *b, std::int64_t Np, float *c, bool accumulate) {
  const std::int64_t aStride = lda * 2, bStride = Np * 4, cStride = Np * 4;
  for (std::int64_t m0 = 0; m0 < M; m0 += 2 * kTileRows) {
    const bool two = M - m0 > kTileRows;
    const std::uint16_t *a0 = a + m0 * lda, *a1 = a0 + kTileRows * lda;
    for (std::int64_t n0 = 0; n0 < Np; n0 += 32) {
      const bool wide = Np - n0 > 16;
      float *c0 = c + m0 * Np + n0, *c1 = c0 + kTileRows * Np;
      if (accumulate) {
        _tile_loadd(0, c0, cStride);
        if (wide)
          _tile_loadd(1, c0 + 16, cStride);
        if (two) {
          _tile_loadd(2, c1, cStride);
          if (wide)
            _tile_loadd(3, c1 + 16, cStride);
        }
      } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      for (std::int64_t d0 = 0; d0 < D; d0 += kTileDepth) {
        const std::uint16_t *bd = b + d0 * Np + n0 * 2;
        _tile_loadd(4, a0 + d0, aStride);
        _tile_loadd(6, bd, bStride);
        _tile_dpbf16ps(0, 4, 6);
        if (wide) {
          _tile_loadd(7, bd + 32, bStride);
          _tile_dpbf16ps(1, 4, 7);
        }
        if (two) {
          _tile_loadd(5, a1 + d0, aStride);
          _tile_dpbf16ps(2, 5, 6);
          if (wide)
            _tile_dpbf16ps(3, 5, 7);
        }
      }
      _tile_stored(0, c0, cStride);
      if (wide)
        _tile_stored(1, c0 + 16, cStride);
      if (two) {
        _tile_stored(2, c1, cStride);
        if (wide)
          _tile_stored(3, c1 + 16, cStride);
      }
    }
  }
}

#endif // HECTOR_CPU_AMX

} // namespace amx
} // namespace cpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CPU_AMX_H
