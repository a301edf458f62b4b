//===- cpu_gemm_test.cpp - Tests of the CPU segmented GEMM template -------===//
//
// Every scatter mode, both layouts of B, heads, gathers with duplicates, empty
// and single-row segments, K and N not multiples of the tiles, checked against
// a long-double triple loop; the weight gradient against its reference and
// against the adjoint identity with the forward; determinism across thread
// counts.
//
//===----------------------------------------------------------------------===//
#include "hector/cpu/segmented_gemm.h"
#include "test_util.h"

#include <catch2/catch.hpp>
#include <omp.h>

#include <cstring>
#include <numeric>
#include <string>

using namespace hector::tmpl;
using namespace hector::tmpl::cpu;
using namespace hector::tmpl::testing;

namespace {

/// Small tiles, so that even small problems cross tile boundaries.
template <typename T> struct TinyTile {
  static constexpr int kRows = 4;
  static constexpr int kCols = 8;
  static constexpr int kDepth = 16;
  static constexpr int kWgradRows = 5;
};

/// Tiles that are not whole multiples of the register micro-kernel (4 x 16): every tile has
/// full micro-tiles and edge rows and columns, and the depth is cut into blocks.
template <typename T> struct RaggedTile {
  static constexpr int kRows = 6;
  static constexpr int kCols = 36;
  static constexpr int kDepth = 16;
  static constexpr int kWgradRows = 7;
};

/// Segment layouts: empty segments first, in the middle and last; a single
/// row; a segment larger than a tile.
const std::vector<std::vector<I64>> kSegmentLayouts = {
    {0, 1, 0, 37, 5, 0}, {1}, {0, 0}, {70}, {3, 0, 0, 129, 1}};

/// The GemmProblem of packed rows: segments `off`, heads x K (A) and heads x N (C) elements a
/// row, one [heads, K, N] B per segment, A's rows gathered and C's scattered where given.
template <typename T, typename TB, typename TC>
GemmProblem<T, I64, TB, TC>
denseGemmProblem(const std::vector<I64> &off, I64 K, I64 N, I64 heads, const std::vector<T> &A,
                 const std::vector<I64> *gather, const std::vector<TB> &B, std::vector<TC> &C,
                 const std::vector<I64> *scatter) {
  GemmProblem<T, I64, TB, TC> p;
  p.numSegments = static_cast<I64>(off.size()) - 1;
  p.segOffsets = off.data();
  p.numRows = off.back();
  p.K = K;
  p.N = N;
  p.heads = heads;
  p.A = A.data();
  p.lda = heads * K;
  p.gather = gather ? gather->data() : nullptr;
  p.B = B.data();
  p.strideB = heads * K * N;
  p.C = C.data();
  p.ldc = heads * N;
  p.scatter = scatter ? scatter->data() : nullptr;
  return p;
}

template <typename T, BOp Op, Scatter Mode, typename Tile>
void checkGemm(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, bool gather,
               std::mt19937_64 &rng) {
  const std::vector<I64> off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back();
  const I64 aRows = gather ? 7 : rows; // few distinct rows: many duplicates
  I64 largest = 0; // of the segments
  for (I64 size : sizes)
    largest = std::max(largest, size);
  const I64 outRows = scatterIsIndexed(Mode) ? largest + 2 : rows;
  auto A = randomVector<T>(std::max<I64>(1, aRows) * heads * K, rng);
  auto B = randomVector<T>(std::max<I64>(1, S) * heads * K * N, rng);
  auto C = randomVector<T>(outRows * heads * N, rng);
  const auto C0 = C;
  std::vector<I64> gidx = randomIndex(rows, std::max<I64>(1, aRows), rng);
  const std::vector<I64> sidx =
      scatterIsIndexed(Mode) ? injectivePerSegment(off, outRows, rng) : std::vector<I64>();

  const auto p = denseGemmProblem(off, K, N, heads, A, gather ? &gidx : nullptr, B, C,
                                  scatterIsIndexed(Mode) ? &sidx : nullptr);
  segmentedGemm<T, Op, Mode, Tile>(p);

  const auto rowsRef = referenceGemmRows(p, Op == BOp::kTranspose);
  const I64 width = heads * N;
  std::vector<long double> want(C0.begin(), C0.end());
  for (I64 r = 0; r < rows; ++r)
    for (I64 c = 0; c < width; ++c) {
      const long double v = rowsRef[r * width + c];
      switch (Mode) {
      case Scatter::kStore: want[r * width + c] = v; break;
      case Scatter::kAccumulate: want[r * width + c] += v; break;
      case Scatter::kAccumulateIndexPerSegment:
        want[sidx[r] * width + c] += v;
        break;
      }
    }
  INFO("K=" << K << " N=" << N << " heads=" << heads << " gather=" << gather
            << " segments=" << S << " rows=" << rows);
  // A 16-bit C accumulated segment after segment is rounded once per segment, each time at the
  // magnitude of the partial sum, which later segments may cancel: relative to the largest.
  const bool perSegment = sizeof(T) == 2 && scatterIsIndexed(Mode);
  const double roundings = perSegment ? static_cast<double>(S) : 1;
  double floor = 1;
  if (perSegment)
    for (long double w : want)
      floor = std::max(floor, static_cast<double>(std::fabs(w)));
  CHECK(maxRelError(C, want, floor) < sumTolerance<T>(1 + rows / 8.0) * roundings);
}

/// Bf16 without std::numeric_limits: the templates round it with its own conversion.
struct PlainBf16 : Bf16 {
  using Bf16::Bf16;
};

template <typename T, BOp Op, Scatter Mode> void sweepGemm() {
  std::mt19937_64 rng(1234 + static_cast<int>(Mode) * 7 + static_cast<int>(Op));
  for (const auto &sizes : kSegmentLayouts)
    for (I64 K : {1, 3, 17, 64, 65})
      for (I64 N : {1, 3, 17, 65})
        for (bool gather : {false, true}) {
          checkGemm<T, Op, Mode, TinyTile<T>>(sizes, K, N, 1, gather, rng);
          checkGemm<T, Op, Mode, RaggedTile<T>>(sizes, K, N, 1, gather, rng);
          checkGemm<T, Op, Mode, GemmTile<T>>(sizes, K, N, 1, gather, rng);
        }
  // Per-head (batched) variant.
  for (I64 heads : {2, 3})
    checkGemm<T, Op, Mode, TinyTile<T>>({5, 0, 19}, 17, 9, heads, true, rng);
}

} // namespace

TEMPLATE_TEST_CASE("segmented GEMM: every scatter mode and layout", "[cpu][gemm]", float, double,
                   Bf16) {
  using T = TestType;
  SECTION("store") { sweepGemm<T, BOp::kIdentity, Scatter::kStore>(); }
  SECTION("accumulate") { sweepGemm<T, BOp::kIdentity, Scatter::kAccumulate>(); }
  SECTION("accumulate into an index injective per segment") {
    sweepGemm<T, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment>();
  }
  SECTION("transposed B") {
    sweepGemm<T, BOp::kTranspose, Scatter::kStore>();
    sweepGemm<T, BOp::kTranspose, Scatter::kAccumulate>();
    sweepGemm<T, BOp::kTranspose, Scatter::kAccumulateIndexPerSegment>();
  }
}

TEMPLATE_TEST_CASE("segmented GEMM: accumulation into shared rows is deterministic",
                   "[cpu][gemm]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(99);
  // 40 segments all accumulating into the same 64 output rows, each segment's index injective
  // (a node's pairs of one relation): the sums must not depend on the thread count.
  std::vector<I64> sizes(40);
  for (auto &s : sizes)
    s = std::uniform_int_distribution<I64>(0, 60)(rng);
  const auto off = offsetsFromSizes(sizes);
  const I64 rows = off.back(), K = 33, N = 20, outRows = 64;
  auto A = randomVector<T>(rows * K, rng);
  auto B = randomVector<T>(sizes.size() * K * N, rng);
  const std::vector<I64> sidx = injectivePerSegment(off, outRows, rng);
  std::vector<T> first;
  for (int threads : {1, 2, 3, 4}) {
    std::vector<T> C(outRows * N, T(0));
    GemmProblem<T, I64> p;
    p.numSegments = static_cast<I64>(sizes.size());
    p.segOffsets = off.data();
    p.numRows = rows;
    p.K = K;
    p.N = N;
    p.A = A.data();
    p.lda = K;
    p.B = B.data();
    p.strideB = K * N;
    p.C = C.data();
    p.ldc = N;
    p.scatter = sidx.data();
    omp_set_num_threads(threads);
    segmentedGemm<T, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment>(p);
    if (first.empty()) {
      first = C;
      const auto ref = referenceGemmRows(p, false);
      std::vector<long double> want(outRows * N, 0.0L);
      for (I64 r = 0; r < rows; ++r)
        for (I64 n = 0; n < N; ++n)
          want[sidx[r] * N + n] += ref[r * N + n];
      CHECK(maxRelError(C, want) < tolerance<T>() * rows);
    } else {
      CHECK(std::memcmp(first.data(), C.data(), C.size() * sizeof(T)) == 0);
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEMPLATE_TEST_CASE("segmented GEMM and weight gradient: segment rows through a permutation, "
                   "32-bit indices",
                   "[cpu][gemm]", float, double) {
  // Rows grouped by segment are a permutation of rows stored in another order (edges grouped by
  // relation while stored by destination): A is gathered and C written at the physical row.
  using T = TestType;
  using I32 = std::int32_t;
  std::mt19937_64 rng(11);
  for (const auto &sizes : kSegmentLayouts)
    for (I64 N : {1, 17, 64, 70}) {
      const auto off64 = offsetsFromSizes(sizes);
      const I64 S = static_cast<I64>(sizes.size()), rows = off64.back(), K = 19, aRows = 9;
      std::vector<I32> off(off64.begin(), off64.end()), perm(rows), gather(rows);
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (auto &g : gather)
        g = static_cast<I32>(std::uniform_int_distribution<I64>(0, aRows - 1)(rng));
      auto A = randomVector<T>(aRows * K, rng);
      auto B = randomVector<T>(std::max<I64>(1, S) * K * N, rng);
      std::vector<T> C(std::max<I64>(1, rows) * N, T(7));
      GemmProblem<T, I32> p;
      p.numSegments = S;
      p.segOffsets = off.data();
      p.numRows = rows;
      p.K = K;
      p.N = N;
      p.A = A.data();
      p.lda = K;
      p.rows = perm.data();
      p.gather = gather.data();
      p.B = B.data();
      p.strideB = K * N;
      p.C = C.data();
      p.ldc = N;
      segmentedGemm<T, BOp::kIdentity, Scatter::kStore, GemmTile<T>, I32>(p);
      std::vector<long double> want(C.size(), 7.0L);
      for (I64 s = 0; s < S; ++s)
        for (I64 j = off64[s]; j < off64[s + 1]; ++j)
          for (I64 n = 0; n < N; ++n) {
            long double acc = 0;
            for (I64 k = 0; k < K; ++k)
              acc += static_cast<long double>(A[gather[perm[j]] * K + k]) * B[s * K * N + k * N + n];
            want[perm[j] * N + n] = acc;
          }
      INFO("N=" << N << " rows=" << rows);
      CHECK(maxRelError(C, want) < tolerance<T>() * (1 + K / 8.0));

      // The weight gradient over the same rows: dB_s = sum_j A[gather[perm[j]]]^T C[perm[j]].
      std::vector<T> dB(std::max<I64>(1, S) * K * N, T(0));
      WeightGradProblem<T, I32> w;
      w.numSegments = S;
      w.segOffsets = off.data();
      w.numRows = rows;
      w.K = K;
      w.N = N;
      w.A = A.data();
      w.lda = K;
      w.rows = perm.data();
      w.gatherA = gather.data();
      w.dC = C.data();
      w.ldc = N;
      w.dB = dB.data();
      w.strideB = K * N;
      segmentedWeightGrad<T, BOp::kIdentity, Assign::kStore, GemmTile<T>, I32>(w);
      std::vector<long double> wantB(dB.size(), 0.0L);
      for (I64 s = 0; s < S; ++s)
        for (I64 j = off64[s]; j < off64[s + 1]; ++j)
          for (I64 k = 0; k < K; ++k)
            for (I64 n = 0; n < N; ++n)
              wantB[s * K * N + k * N + n] +=
                  static_cast<long double>(A[gather[perm[j]] * K + k]) * C[perm[j] * N + n];
      CHECK(maxRelError(dB, wantB) < tolerance<T>() * (1 + rows / 8.0));
    }
}

namespace {

template <typename T, BOp Op, Assign Mode, typename Tile>
void checkWeightGrad(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, bool gather,
                     std::mt19937_64 &rng) {
  const auto off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back();
  const I64 aRows = gather ? 11 : rows, cRows = gather ? 6 : rows;
  auto A = randomVector<T>(std::max<I64>(1, aRows) * heads * K, rng);
  auto dC = randomVector<T>(std::max<I64>(1, cRows) * heads * N, rng);
  auto ga = randomIndex(rows, std::max<I64>(1, aRows), rng);
  auto gc = randomIndex(rows, std::max<I64>(1, cRows), rng);
  const I64 KN = K * N;
  auto dB = randomVector<T>(S * heads * KN, rng);
  const auto dB0 = dB;

  WeightGradProblem<T, I64> p;
  p.numSegments = S;
  p.segOffsets = off.data();
  p.numRows = rows;
  p.K = K;
  p.N = N;
  p.heads = heads;
  p.A = A.data();
  p.lda = heads * K;
  p.gatherA = gather ? ga.data() : nullptr;
  p.dC = dC.data();
  p.ldc = heads * N;
  p.gatherC = gather ? gc.data() : nullptr;
  p.dB = dB.data();
  p.strideB = heads * KN;
  segmentedWeightGrad<T, Op, Mode, Tile>(p);

  const auto ref = referenceWeightGrad(p);
  std::vector<long double> want(S * heads * KN);
  for (I64 sh = 0; sh < S * heads; ++sh)
    for (I64 k = 0; k < K; ++k)
      for (I64 n = 0; n < N; ++n) {
        const I64 at = sh * KN + (Op == BOp::kIdentity ? k * N + n : n * K + k);
        want[at] = ref[sh * KN + k * N + n] +
                   (Mode == Assign::kAdd ? static_cast<long double>(dB0[at]) : 0.0L);
      }
  INFO("K=" << K << " N=" << N << " heads=" << heads << " gather=" << gather
            << " rows=" << rows);
  CHECK(maxRelError(dB, want) < sumTolerance<T>(1 + rows / 8.0));
}

} // namespace

TEMPLATE_TEST_CASE("segmented weight gradient: outer-product form", "[cpu][gemm][grad]", float,
                   double, Bf16) {
  using T = TestType;
  std::mt19937_64 rng(77);
  for (const auto &sizes : kSegmentLayouts)
    for (I64 K : {1, 3, 17, 65})
      for (I64 N : {1, 17, 64})
        for (bool gather : {false, true}) {
          checkWeightGrad<T, BOp::kIdentity, Assign::kStore, TinyTile<T>>(sizes, K, N, 1, gather,
                                                                           rng);
          checkWeightGrad<T, BOp::kIdentity, Assign::kStore, GemmTile<T>>(sizes, K, N, 1, gather,
                                                                           rng);
        }
  checkWeightGrad<T, BOp::kTranspose, Assign::kStore, TinyTile<T>>({3, 0, 12}, 5, 7, 2, true,
                                                                    rng);
  checkWeightGrad<T, BOp::kIdentity, Assign::kAdd, TinyTile<T>>({3, 0, 12}, 5, 7, 3, true, rng);
  checkWeightGrad<T, BOp::kTranspose, Assign::kAdd, GemmTile<T>>({0, 5000, 1}, 9, 4, 1, true,
                                                                  rng);
}

TEST_CASE("segmented weight gradient: adjoint of the forward GEMM", "[cpu][gemm][grad]") {
  // For L(B) = sum_rows <dC[row], gather(A)[row] x B_s>, dL/dB_s = A_s^T dC_s, so
  // sum_s <dB_s, B_s> must equal <dC, C> with C the forward result.
  using T = double;
  std::mt19937_64 rng(3);
  const std::vector<I64> sizes = {0, 3000, 17, 0, 5};
  const auto off = offsetsFromSizes(sizes);
  const I64 S = 5, rows = off.back(), K = 19, N = 23, H = 2;
  auto A = randomVector<T>(50 * H * K, rng);
  auto B = randomVector<T>(S * H * K * N, rng);
  auto dC = randomVector<T>(rows * H * N, rng);
  auto gidx = randomIndex(rows, 50, rng);
  std::vector<T> C(rows * H * N), dB(S * H * K * N);

  GemmProblem<T, I64> f;
  f.numSegments = S;
  f.segOffsets = off.data();
  f.numRows = rows;
  f.K = K;
  f.N = N;
  f.heads = H;
  f.A = A.data();
  f.lda = H * K;
  f.gather = gidx.data();
  f.B = B.data();
  f.strideB = H * K * N;
  f.C = C.data();
  f.ldc = H * N;
  segmentedGemm<T, BOp::kIdentity, Scatter::kStore>(f);

  WeightGradProblem<T, I64> g;
  g.numSegments = S;
  g.segOffsets = off.data();
  g.numRows = rows;
  g.K = K;
  g.N = N;
  g.heads = H;
  g.A = A.data();
  g.lda = H * K;
  g.gatherA = gidx.data();
  g.dC = dC.data();
  g.ldc = H * N;
  g.dB = dB.data();
  g.strideB = H * K * N;
  segmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(g);

  long double lhs = 0, rhs = 0;
  for (std::size_t i = 0; i < dB.size(); ++i)
    lhs += static_cast<long double>(dB[i]) * B[i];
  for (std::size_t i = 0; i < C.size(); ++i)
    rhs += static_cast<long double>(dC[i]) * C[i];
  CHECK(std::fabs(static_cast<double>(lhs - rhs)) <= 1e-11 * std::fabs(static_cast<double>(rhs)));

  // Input gradient through the transposed layout: dA = dC x B_s^T per row (the emitted
  // backward sums such rows into the gathered nodes in a traversal; here the test does);
  // <dA, A> must equal <dC, C> as well.
  std::vector<T> dRows(rows * H * K), dA(50 * H * K, T(0));
  GemmProblem<T, I64> b;
  b.numSegments = S;
  b.segOffsets = off.data();
  b.numRows = rows;
  b.K = N;
  b.N = K;
  b.heads = H;
  b.A = dC.data();
  b.lda = H * N;
  b.B = B.data();
  b.strideB = H * K * N;
  b.C = dRows.data();
  b.ldc = H * K;
  segmentedGemm<T, BOp::kTranspose, Scatter::kStore>(b);
  for (I64 r = 0; r < rows; ++r)
    for (I64 c = 0; c < H * K; ++c)
      dA[gidx[r] * H * K + c] += dRows[r * H * K + c];
  long double adj = 0;
  for (std::size_t i = 0; i < dA.size(); ++i)
    adj += static_cast<long double>(dA[i]) * A[i];
  CHECK(std::fabs(static_cast<double>(adj - rhs)) <= 1e-11 * std::fabs(static_cast<double>(rhs)));
}

TEST_CASE("segmented weight gradient: deterministic across thread counts", "[cpu][gemm][grad]") {
  using T = float;
  std::mt19937_64 rng(8);
  const std::vector<I64> sizes = {9000, 3, 4500};
  const auto off = offsetsFromSizes(sizes);
  const I64 rows = off.back(), K = 16, N = 8;
  auto A = randomVector<T>(rows * K, rng);
  auto dC = randomVector<T>(rows * N, rng);
  std::vector<T> first;
  for (int threads : {1, 2, 4}) {
    std::vector<T> dB(3 * K * N);
    WeightGradProblem<T, I64> p;
    p.numSegments = 3;
    p.segOffsets = off.data();
    p.numRows = rows;
    p.K = K;
    p.N = N;
    p.A = A.data();
    p.lda = K;
    p.dC = dC.data();
    p.ldc = N;
    p.dB = dB.data();
    p.strideB = K * N;
    omp_set_num_threads(threads);
    segmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(p);
    if (first.empty())
      first = dB;
    else
      CHECK(std::memcmp(first.data(), dB.data(), dB.size() * sizeof(T)) == 0);
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST_CASE("segmented GEMM: vectorised bfloat16 rounding equals the element type's own",
          "[cpu][gemm]") {
  STATIC_REQUIRE(detail::isBfloat16Bits<Bf16>());
  STATIC_REQUIRE(!detail::isBfloat16Bits<PlainBf16>());
  STATIC_REQUIRE(!detail::isBfloat16Bits<float>());
  // Ties (an exact half of the last bit, odd and even), carries into the exponent, the largest
  // finite values, infinities, subnormals, zeros and random values.
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               1.00390625f,
                               1.01171875f,
                               -1.00390625f,
                               3.3895314e38f,
                               -3.4e38f,
                               1e-40f,
                               -1e-45f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  std::mt19937_64 rng(99);
  std::uniform_int_distribution<std::uint32_t> bitsOf;
  for (int i = 0; i < 4000; ++i) {
    std::uint32_t u = bitsOf(rng);
    if ((u & 0x7F800000u) == 0x7F800000u)
      u &= ~0x40000000u; // keep NaNs out of this list
    float f;
    std::memcpy(&f, &u, sizeof f);
    values.push_back(f);
  }
  const I64 n = static_cast<I64>(values.size());
  std::vector<float> addends(values.rbegin(), values.rend());
  for (bool add : {false, true}) {
    std::vector<Bf16> fast(values.begin(), values.end());
    std::vector<PlainBf16> plain(values.begin(), values.end());
    if (add) {
      detail::storeRow<true>(fast.data(), addends.data(), n);
      detail::storeRow<true>(plain.data(), addends.data(), n);
    } else {
      detail::storeRow<false>(fast.data(), values.data(), n);
      detail::storeRow<false>(plain.data(), values.data(), n);
    }
    for (I64 i = 0; i < n; ++i) {
      INFO("add=" << add << " value " << values[i] << " + " << addends[i]);
      const float sum = add ? float(Bf16(values[i])) + addends[i] : values[i];
      if (std::isnan(sum))
        CHECK(fast[i].bits == 0x7FC0); // +inf + -inf: the quiet NaN, as c10::BFloat16 gives
      else
        CHECK(fast[i].bits == plain[i].bits);
    }
  }
  // NaN in: the quiet NaN out.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Bf16 one(1.0f);
  detail::storeRow<false>(&one, &nan, 1);
  CHECK(one.bits == 0x7FC0);
}

namespace {

/// Runs `body` with the AMX kernels switched on or off, restoring the default afterwards.
template <typename F> void withAmx(bool enabled, F &&body) {
  setAmxEnabled(enabled);
  body();
  setAmxEnabled(true);
}

} // namespace

TEST_CASE("segmented GEMM: AMX bfloat16 tiles agree with the reference and the vector kernels",
          "[cpu][gemm][amx]") {
  if (!amxAvailable()) {
    WARN("AMX kernels not run: " << (amxCompiled() ? "this CPU or kernel does not offer AMX-BF16"
                                                   : "not compiled for a target with AMX-BF16"));
    return;
  }
  setAmxEnabled(true); // whatever HECTOR_CPU_AMX says
  REQUIRE(amxEnabled());
  using T = Bf16;
  std::mt19937_64 rng(2026);
  // Depths and widths around the tiles' 32 (k) and 16 (n), rows around 16, 32 and the 128-row
  // tasks, empty segments, gathers with duplicates, heads; the forward in every mode and
  // layout, the weight gradient in both.
  for (const auto &sizes : std::vector<std::vector<I64>>{{0, 1, 15, 0, 33, 300}, {129}, {16, 17}})
    for (I64 K : {1, 31, 32, 33, 64, 100})
      for (I64 N : {1, 16, 17, 33, 64})
        for (bool gather : {false, true}) {
          checkGemm<T, BOp::kIdentity, Scatter::kStore, GemmTile<T>>(sizes, K, N, 1, gather, rng);
          checkGemm<T, BOp::kTranspose, Scatter::kAccumulate, GemmTile<T>>(sizes, K, N, 1, gather,
                                                                           rng);
          checkGemm<T, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment, GemmTile<T>>(
              sizes, K, N, 2, gather, rng);
          checkWeightGrad<T, BOp::kIdentity, Assign::kStore, GemmTile<T>>(sizes, K, N, 1, gather,
                                                                          rng);
          checkWeightGrad<T, BOp::kTranspose, Assign::kAdd, GemmTile<T>>(sizes, K, N, 2, gather,
                                                                         rng);
        }

  // A realistic shape: both paths agree to bfloat16 resolution, and the AMX results do not
  // depend on the thread count.
  const std::vector<I64> sizes = {20000, 0, 7, 13000};
  const auto off = offsetsFromSizes(sizes);
  const I64 S = 4, rows = off.back(), K = 64, N = 64, nodes = 5000;
  auto A = randomVector<T>(nodes * K, rng);
  auto B = randomVector<T>(S * K * N, rng);
  auto dC = randomVector<T>(rows * N, rng);
  const auto gidx = randomIndex(rows, nodes, rng);
  auto forward = [&] {
    std::vector<T> C(rows * N);
    GemmProblem<T, I64> p;
    p.numSegments = S;
    p.segOffsets = off.data();
    p.numRows = rows;
    p.K = K;
    p.N = N;
    p.A = A.data();
    p.lda = K;
    p.gather = gidx.data();
    p.B = B.data();
    p.strideB = K * N;
    p.C = C.data();
    p.ldc = N;
    segmentedGemm<T, BOp::kIdentity, Scatter::kStore>(p);
    return C;
  };
  auto wgrad = [&] {
    std::vector<T> dB(S * K * N);
    WeightGradProblem<T, I64> p;
    p.numSegments = S;
    p.segOffsets = off.data();
    p.numRows = rows;
    p.K = K;
    p.N = N;
    p.A = A.data();
    p.lda = K;
    p.gatherA = gidx.data();
    p.dC = dC.data();
    p.ldc = N;
    p.dB = dB.data();
    p.strideB = K * N;
    segmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(p);
    return dB;
  };
  std::vector<T> cVector, dbVector;
  withAmx(false, [&] {
    cVector = forward();
    dbVector = wgrad();
  });
  const std::vector<T> cAmx = forward(), dbAmx = wgrad();
  std::vector<long double> cWant(cVector.begin(), cVector.end());
  std::vector<long double> dbWant(dbVector.begin(), dbVector.end());
  // Both round a float sum of the same exact products (in different orders) to bfloat16 once:
  // each is within half a unit of the last place of the exact sum (plus float's summation
  // error), so they differ by at most one unit.
  CHECK(maxRelError(cAmx, cWant) <= 2 * tolerance<T>());
  CHECK(maxRelError(dbAmx, dbWant) <= 2 * tolerance<T>());
  for (int threads : {1, 3}) {
    omp_set_num_threads(threads);
    const std::vector<T> c = forward(), db = wgrad();
    CHECK(std::memcmp(c.data(), cAmx.data(), c.size() * sizeof(T)) == 0);
    CHECK(std::memcmp(db.data(), dbAmx.data(), db.size() * sizeof(T)) == 0);
  }
  omp_set_num_threads(omp_get_num_procs());
}

namespace {

/// The forward error bound of a float sum of `terms` products (each rounded once, then added
/// one after another): gamma_n = n u / (1 - n u), u = 2^-24, times the sum of their magnitudes.
double floatSumBound(I64 terms) {
  const double nu = static_cast<double>(terms + 1) * std::ldexp(1.0, -24);
  return nu / (1 - nu);
}

/// Checks results stored as TC against an exact reference: within the float summation bound of
/// every element (`absSums` plus |the old value| for an accumulation) and, where TC is 16-bit,
/// the rounding to it (`roundings` of them, each at `scale`).
template <typename TC>
void checkMixedResult(const std::vector<TC> &got, const std::vector<long double> &want,
                      const std::vector<long double> &absSums, I64 terms, double roundings,
                      double scale) {
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = static_cast<double>(want[i]);
    double bound = 2 * floatSumBound(terms) * static_cast<double>(absSums[i]) + 1e-30;
    if (sizeof(TC) == 2)
      bound += roundings * std::ldexp(1.0, -8) * std::max(std::fabs(w), scale);
    const double err = std::fabs(static_cast<double>(got[i]) - w);
    worst = std::max(worst, err / bound);
    bad += err > bound;
  }
  INFO("worst error / bound = " << worst);
  CHECK(bad == 0);
}

/// A segmented GEMM of A (T) by B (TB) into C (TC), the values of B scaled by `scaleB` so that
/// results reach the hundreds (attention logits): every result within float's summation error
/// of the exact product of the stored values, rounded once more where C is 16-bit.
template <typename T, typename TB, typename TC, BOp Op, Scatter Mode, typename Tile>
void checkMixedGemm(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, bool gather,
                    double scaleB, std::mt19937_64 &rng) {
  const std::vector<I64> off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back();
  const I64 aRows = gather ? 7 : rows;
  I64 largest = 0;
  for (I64 size : sizes)
    largest = std::max(largest, size);
  const I64 outRows = scatterIsIndexed(Mode) ? largest + 2 : rows;
  auto A = randomVector<T>(std::max<I64>(1, aRows) * heads * K, rng);
  auto B = randomVector<TB>(std::max<I64>(1, S) * heads * K * N, rng, -scaleB, scaleB);
  auto C = randomVector<TC>(outRows * heads * N, rng, -scaleB, scaleB);
  const auto C0 = C;
  const std::vector<I64> gidx = randomIndex(rows, std::max<I64>(1, aRows), rng);
  const std::vector<I64> sidx =
      scatterIsIndexed(Mode) ? injectivePerSegment(off, outRows, rng) : std::vector<I64>();
  const auto p = denseGemmProblem(off, K, N, heads, A, gather ? &gidx : nullptr, B, C,
                                  scatterIsIndexed(Mode) ? &sidx : nullptr);
  segmentedGemm<T, Op, Mode, Tile>(p);

  std::vector<long double> abs;
  const auto ref = referenceGemmRows(p, Op == BOp::kTranspose, &abs);
  const I64 width = heads * N;
  std::vector<long double> want(C0.begin(), C0.end()), wantAbs(C0.size(), 0.0L);
  if (Mode != Scatter::kStore)
    for (std::size_t i = 0; i < C0.size(); ++i)
      wantAbs[i] = std::fabs(static_cast<long double>(C0[i]));
  for (I64 r = 0; r < rows; ++r)
    for (I64 c = 0; c < width; ++c) {
      const I64 out = (Mode == Scatter::kAccumulateIndexPerSegment ? sidx[r] : r) * width + c;
      want[out] = Mode == Scatter::kStore ? ref[r * width + c] : want[out] + ref[r * width + c];
      wantAbs[out] += abs[r * width + c];
    }
  // A 16-bit C accumulated segment after segment is rounded once per segment, at the magnitude
  // of the partial sums (bounded by the sum of magnitudes).
  const bool perSegment = scatterIsIndexed(Mode);
  double scale = 0;
  if (perSegment)
    for (long double a : wantAbs)
      scale = std::max(scale, static_cast<double>(a));
  INFO("K=" << K << " N=" << N << " heads=" << heads << " gather=" << gather << " segments=" << S
            << " rows=" << rows);
  checkMixedResult(C, want, wantAbs, K * (perSegment ? S : 1) + 1,
                   perSegment ? static_cast<double>(S) : 1, scale);
}

template <typename T, typename TG, typename TD, BOp Op, Assign Mode, typename Tile>
void checkMixedWeightGrad(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, bool gather,
                          double scaleG, std::mt19937_64 &rng) {
  const auto off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back();
  const I64 aRows = gather ? 11 : rows, cRows = gather ? 6 : rows, KN = K * N;
  auto A = randomVector<T>(std::max<I64>(1, aRows) * heads * K, rng);
  auto dC = randomVector<TG>(std::max<I64>(1, cRows) * heads * N, rng, -scaleG, scaleG);
  const auto ga = randomIndex(rows, std::max<I64>(1, aRows), rng);
  const auto gc = randomIndex(rows, std::max<I64>(1, cRows), rng);
  auto dB = randomVector<TD>(S * heads * KN, rng);
  const auto dB0 = dB;
  WeightGradProblem<T, I64, TG, TD> p;
  p.numSegments = S;
  p.segOffsets = off.data();
  p.numRows = rows;
  p.K = K;
  p.N = N;
  p.heads = heads;
  p.A = A.data();
  p.lda = heads * K;
  p.gatherA = gather ? ga.data() : nullptr;
  p.dC = dC.data();
  p.ldc = heads * N;
  p.gatherC = gather ? gc.data() : nullptr;
  p.dB = dB.data();
  p.strideB = heads * KN;
  segmentedWeightGrad<T, Op, Mode, Tile>(p);

  std::vector<long double> abs;
  const auto ref = referenceWeightGrad(p, &abs);
  std::vector<long double> want(dB.size()), wantAbs(dB.size());
  for (I64 sh = 0; sh < S * heads; ++sh)
    for (I64 k = 0; k < K; ++k)
      for (I64 n = 0; n < N; ++n) {
        const I64 at = sh * KN + (Op == BOp::kIdentity ? k * N + n : n * K + k);
        const long double old = Mode == Assign::kAdd ? static_cast<long double>(dB0[at]) : 0.0L;
        want[at] = ref[sh * KN + k * N + n] + old;
        wantAbs[at] = abs[sh * KN + k * N + n] + std::fabs(old);
      }
  INFO("K=" << K << " N=" << N << " heads=" << heads << " gather=" << gather << " rows=" << rows);
  I64 largest = 0;
  for (I64 size : sizes)
    largest = std::max(largest, size);
  checkMixedResult(dB, want, wantAbs, largest + 1, 1, 0);
}

template <typename T, typename TB, typename TC> void sweepMixed(double scale) {
  std::mt19937_64 rng(4321);
  for (const auto &sizes : kSegmentLayouts)
    for (I64 K : {1, 17, 64, 65})
      for (I64 N : {1, 4, 17, 65})
        for (bool gather : {false, true}) {
          checkMixedGemm<T, TB, TC, BOp::kIdentity, Scatter::kStore, TinyTile<T>>(
              sizes, K, N, 1, gather, scale, rng);
          checkMixedGemm<T, TB, TC, BOp::kIdentity, Scatter::kStore, GemmTile<T>>(
              sizes, K, N, 1, gather, scale, rng);
          checkMixedGemm<T, TB, TC, BOp::kTranspose, Scatter::kAccumulate, RaggedTile<T>>(
              sizes, K, N, 1, gather, scale, rng);
          checkMixedGemm<T, TB, TC, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment,
                         GemmTile<T>>(sizes, K, N, 2, gather, scale, rng);
          checkMixedWeightGrad<T, TB, TC, BOp::kIdentity, Assign::kStore, TinyTile<T>>(
              sizes, K, N, 1, gather, scale, rng);
          checkMixedWeightGrad<T, TB, TC, BOp::kTranspose, Assign::kAdd, GemmTile<T>>(
              sizes, K, N, 2, gather, scale, rng);
        }
}

} // namespace

TEST_CASE("segmented GEMM and weight gradient: operands of their own element types",
          "[cpu][gemm][mixed]") {
  // 16-bit rows of A beside a float32 B (the second operand of a weight gradient) keep float
  // precision in a float32 result: a logit of a few hundred computed from bfloat16 features
  // and a float32 weight is not rounded to 8 bits on the way. The bounds are float's, so a B
  // or C rounded to 16 bits anywhere fails them.
  SECTION("bfloat16 A, float32 B and C") { sweepMixed<Bf16, float, float>(30); }
  SECTION("bfloat16 A without vectorised rounding, float32 B and C") {
    sweepMixed<PlainBf16, float, float>(30);
  }
  SECTION("bfloat16 A, float32 B, bfloat16 C") { sweepMixed<Bf16, float, Bf16>(1); }
  SECTION("float32 A, bfloat16 B, float32 C") { sweepMixed<float, Bf16, float>(30); }
  SECTION("bfloat16 A and B, float32 C") { sweepMixed<Bf16, Bf16, float>(30); }
}
