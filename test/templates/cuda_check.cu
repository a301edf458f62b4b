//===- cuda_check.cu - Runs the CUDA templates against the CPU ones -------===//
//
// A standalone program (CUDA runtime only) for a GPU machine: runs every CUDA
// kernel template on random problems with the awkward cases (empty segments,
// duplicate gathers, many segments accumulating into few rows, isolated
// nodes, logits near 1e4), compares with the CPU template, checks that the
// deterministic paths are bitwise reproducible, and prints one line per
// check: name, max relative error (or error over its bound), PASS/FAIL. Exit
// status 0 when all pass.
//
//   nvcc -std=c++17 -O2 -arch=sm_90 -Icodegen-templates -Xcompiler -fopenmp
//        test/templates/cuda_check.cu -lcublas -o cuda_check && ./cuda_check
//
// float and double run every template: the segmented GEMM (every scatter mode, both layouts
// of B, three tiles) and its weight gradient in SIMT, and for float on TF32 tensor cores
// (against a bound on TF32's rounding), and the traversals. bfloat16 and float16
// (cuda_sixteen.h's DevBf16 and DevHalf) run the GEMM and the weight gradient on 16-bit tensor
// cores, the same problems on three tiles, against a reference in double from the 16-bit
// operands' values and a bound on the FP32 sums and the rounding to 16 bits (sixteenBitStore),
// and beside float32 operands (16-bit A, float32 B and C; checkMixed), on SIMT and TF32.
//
// Then it times the segmented GEMM (SIMT; TF32 tensor cores for float; 16-bit tensor cores for
// bfloat16 and float16) beside cuBLAS at the same shape in the same arithmetic, for information.
//
//===----------------------------------------------------------------------===//
#include "cuda_sixteen.h"
#include "functors.h"
#include "hector/cpu/segmented_gemm.h"
#include "hector/cpu/traversal.h"
#include "hector/cuda/segmented_gemm.cuh"
#include "hector/cuda/traversal.cuh"
#include "hector/emit/node_traversal.cuh"
#include "hector/emit/node_traversal.h"
#include "test_util.h"

#include <cublas_v2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

using namespace hector::tmpl;
using namespace hector::tmpl::testing;

namespace {

int failures = 0;

void checkCuda(cudaError_t err, const char *what) {
  if (err != cudaSuccess) {
    std::printf("CUDA error in %s: %s\n", what, cudaGetErrorString(err));
    std::exit(2);
  }
}

/// A device copy of a host vector (or an uninitialised buffer).
template <typename T> struct DeviceBuffer {
  T *ptr = nullptr;
  std::size_t n = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : n(count) {
    checkCuda(cudaMalloc(&ptr, std::max<std::size_t>(1, n) * sizeof(T)), "cudaMalloc");
  }
  explicit DeviceBuffer(const std::vector<T> &v) : DeviceBuffer(v.size()) {
    checkCuda(cudaMemcpy(ptr, v.data(), n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
  std::vector<T> download() const {
    std::vector<T> v(n);
    checkCuda(cudaMemcpy(v.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
    return v;
  }
};

/// bfloat16 or float16 (DevBf16, DevHalf): computed on 16-bit tensor cores, checked against a
/// reference in double.
template <typename T> constexpr bool kSixteen = gpu::isSixteenBitFloat<T>();

/// The element type of a reference result: T for float and double (the CPU template in T),
/// double for the 16-bit types.
template <typename T> using RefType = std::conditional_t<kSixteen<T>, double, T>;

template <typename T> double tolerance() { return sizeof(T) == 4 ? 1e-4 : 1e-10; }
template <typename T> const char *typeName() {
  if constexpr (kSixteen<T>)
    return std::numeric_limits<T>::digits == 8 ? "bf16" : "f16";
  else
    return sizeof(T) == 4 ? "f32" : "f64";
}

void report(const std::string &name, double err, double tol) {
  const bool ok = err <= tol;
  failures += ok ? 0 : 1;
  std::printf("%-64s max_rel_err=%.3e  %s\n", name.c_str(), err, ok ? "PASS" : "FAIL");
}

void reportExact(const std::string &name, bool same) {
  failures += same ? 0 : 1;
  std::printf("%-64s %-24s %s\n", name.c_str(), same ? "bitwise equal" : "DIFFERS",
              same ? "PASS" : "FAIL");
}

template <typename T> bool bitwiseEqual(const std::vector<T> &a, const std::vector<T> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <typename T> std::vector<T> magnitudes(std::vector<T> v) {
  for (T &x : v)
    x = std::fabs(x);
  return v;
}

/// The bound of a TF32 result, from `magnitudes` (the reference computed on |A|, |B| and |C|):
/// rounding both operands to TF32 (10 explicit mantissa bits, to nearest) moves each product by
/// at most 2^-10 of its magnitude, and the FP32 sums add far less at these depths, so every
/// element must be within 2^-9 of the same sum over the magnitudes.
template <typename T> std::vector<T> tf32Bound(std::vector<T> magnitudes) {
  for (T &x : magnitudes)
    x = std::ldexp(x, -9);
  return magnitudes;
}

/// The bound on an n-deep FP32 sum of exact products (the 16-bit tensor-core path): within
/// fp32SumError(n) times the sum of the products' magnitudes, M, of the exact sum, where
/// fp32SumError(n) = 17 ceil(n / 16) 2^-23. This holds whichever way the hardware adds:
///  - one FP32 addition at a time, rounded in any direction (truncation included, unit 2^-23):
///    Higham's gamma_n = n 2^-23 / (1 - n 2^-23) <= (n + 1) 2^-23 <= 17 ceil(n / 16) 2^-23
///    (for n below 2^11);
///  - a tensor core that adds each step's 16 products to its accumulator at once, aligning the
///    17 addends to the largest and truncating (PTX does not say how mma.sync adds): each
///    addend loses under one unit in the last place of the largest, at most 2^-23 M, and the
///    sum's rounding as much again, so each of the ceil(n / 16) steps adds under 17 2^-23 M.
double fp32SumError(I64 n) { return 17.0 * static_cast<double>(ceilDiv<I64>(n, 16)) * 0x1p-23; }

/// The bound on a 16-bit result after one more store into it. The check of the 16-bit
/// tensor-core path (bfloat16: p = 8 significant bits, float16: p = 11): products of 16-bit
/// values are exact in FP32 (2p <= 24 bits), so the errors are the FP32 sums' and the roundings
/// to T; `want` is the exact result, computed in double from the operands' values (its own
/// error is far below the bound). A store computes v, the FP32 sum of the products P
/// (|v - P| <= sumError = fp32SumError(depth) M), and x = v (store) or x = float(c) + v (adding
/// to the current element c, a 16-bit value exact in float, rounded to nearest in FP32: within
/// 2^-24 |c + v|), and rounds it once to T, to nearest: |T(x) - x| <= 2^-p |x| + eta, where eta
/// is half the least subnormal of T (2^-25 for float16; 2^-134 for bfloat16). With `err` the
/// bound on |c - want_before| (0 for a store, or before the first addition) and
/// D = err + sumError:
///     |c + v - want| <= D,  |x| <= (1 + 2^-24) (|want| + D),
///     |T(x) - want| <= 2^-p |x| + eta + 2^-24 |c + v| + D <= u (|want| + D) + D + eta
/// with u = 2^-p + 2^-23 (>= 2^-p (1 + 2^-24) + 2^-24). A result stored once is thus within
/// 2^-p |want| (2^-8 for bfloat16, 2^-11 for float16) plus (1 + u) fp32SumError(depth) M +
/// 2^-23 |want| + eta, a small multiple of 2^-23 of the magnitudes (|want| <= |C| + M). Where
/// several launches add to one row (Scatter::kAccumulateIndexPerSegment: one per segment, each
/// rounding to T), the bound is carried from store to store.
template <typename T> double sixteenBitStore(double err, double sumError, double want) {
  constexpr int p = std::numeric_limits<T>::digits;
  const double u = std::ldexp(1.0, -p) + 0x1p-23;
  const double eta = std::ldexp(1.0, 2 - std::numeric_limits<T>::max_exponent - p);
  const double d = err + sumError;
  return u * (std::fabs(want) + d) + d + eta;
}

/// The worst ratio of |got - want| to `bound`, an absolute bound per element (at most 1 passes).
template <typename T, typename R>
double boundRatio(const std::vector<T> &got, const std::vector<R> &want,
                  const std::vector<R> &bound) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(want[i]));
    worst = std::max(worst, d / (static_cast<double>(bound[i]) + 1e-30));
  }
  return worst;
}

/// Reports a GEMM or weight-gradient result of `rows` rows: SIMT results against the CPU
/// template's tolerance, tensor-core ones against their rounding bound (`bound`: tf32Bound,
/// or sixteenBitStore's per element).
template <typename T, typename R>
void reportProduct(const char *name, gpu::MathPath path, const std::vector<T> &got,
                   const std::vector<R> &want, const std::vector<R> &bound, I64 rows) {
  if (path == gpu::MathPath::kSimt)
    report(name, maxRelError(got, want), tolerance<T>() * (1 + rows / 64.0));
  else
    report(std::string(name) + " (error/bound)", boundRatio(got, want, bound), 1.0);
}

const char *pathName(gpu::MathPath path) {
  return path == gpu::MathPath::kTensorTf32 ? " tf32"
         : path == gpu::MathPath::kTensor16 ? " tc16"
                                            : "";
}

/// 16-bit values in double (exactly).
template <typename T> std::vector<double> toDouble(const std::vector<T> &v) {
  std::vector<double> d(v.size());
  std::transform(v.begin(), v.end(), d.begin(),
                 [](const T &x) { return static_cast<double>(static_cast<float>(x)); });
  return d;
}

//===----------------------------------------------------------------------===//
// Segmented GEMM
//===----------------------------------------------------------------------===//

/// The reference of the 16-bit GEMM `p` (host pointers; A, B and C the operands behind them,
/// C before the launch): `want`, the result in double from the operands' values (the CPU
/// template in double, one segment at a time), and `bound` on the error of the 16-bit result
/// (sixteenBitStore on each store of each segment into its rows).
template <typename T, BOp Op, Scatter Mode>
void sixteenBitGemmReference(const GemmProblem<T, I64> &p, const std::vector<T> &A,
                             const std::vector<T> &B, const std::vector<T> &C,
                             std::vector<double> &want, std::vector<double> &bound) {
  const std::vector<double> a = toDouble(A), b = toDouble(B), absA = magnitudes(a),
                            absB = magnitudes(b);
  want = toDouble(C);
  bound.assign(C.size(), 0.0);
  std::vector<double> mag(C.size());
  GemmProblem<double, I64> q;
  q.numSegments = 1;
  q.K = p.K;
  q.N = p.N;
  q.heads = p.heads;
  q.lda = p.lda;
  q.rows = p.rows;
  q.gather = p.gather;
  q.strideB = p.strideB;
  q.ldc = p.ldc;
  q.scatter = p.scatter;
  const double sumError = fp32SumError(p.K);
  for (I64 s = 0; s < p.numSegments; ++s) {
    const I64 begin = p.segOffsets[s], end = p.segOffsets[s + 1];
    if (begin == end)
      continue;
    q.segOffsets = p.segOffsets + s;
    q.numRows = end - begin;
    q.A = a.data();
    q.B = b.data() + s * p.strideB;
    q.C = want.data();
    cpu::segmentedGemm<double, Op, Mode>(q);
    std::fill(mag.begin(), mag.end(), 0.0); // this segment's sums over the magnitudes
    q.A = absA.data();
    q.B = absB.data() + s * p.strideB;
    q.C = mag.data();
    cpu::segmentedGemm<double, Op, Mode>(q);
    for (I64 row = begin; row < end; ++row) {
      const I64 phys = p.rows ? p.rows[row] : row;
      const I64 out = scatterIsIndexed(Mode) ? p.scatter[phys] : phys;
      for (I64 i = out * p.ldc; i < out * p.ldc + p.heads * p.N; ++i)
        bound[i] = sixteenBitStore<T>(bound[i], sumError * mag[i], want[i]);
    }
  }
}

template <typename T, BOp Op, Scatter Mode, typename Tile,
          gpu::MathPath Path = gpu::MathPath::kSimt>
void checkGemm(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, std::mt19937_64 &rng,
               const char *tileName) {
  const auto off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back();
  const I64 aRows = 97, width = heads * N;
  I64 largest = 0; // of the segments
  for (I64 size : sizes)
    largest = std::max(largest, size);
  const I64 outRows = scatterIsIndexed(Mode) ? largest + 3 : rows;
  auto A = randomVector<T>(aRows * heads * K, rng);
  auto B = randomVector<T>(S * heads * K * N, rng);
  auto C = randomVector<T>(outRows * width, rng);
  auto gidx = randomIndex(rows, aRows, rng);
  const std::vector<I64> sidx = scatterIsIndexed(Mode)
                                    ? injectivePerSegment(off, outRows, rng)
                                    : std::vector<I64>(static_cast<std::size_t>(rows), 0);

  GemmProblem<T, I64> p;
  p.numSegments = S;
  p.segOffsets = off.data();
  p.numRows = rows;
  p.K = K;
  p.N = N;
  p.heads = heads;
  p.A = A.data();
  p.lda = heads * K;
  p.gather = gidx.data();
  p.B = B.data();
  p.strideB = heads * K * N;
  p.ldc = width;
  p.scatter = sidx.data();
  std::vector<RefType<T>> want, bound; // bound: of a tensor-core result's error
  if constexpr (kSixteen<T>) {
    sixteenBitGemmReference<T, Op, Mode>(p, A, B, C, want, bound);
  } else {
    want = C;
    p.C = want.data();
    cpu::segmentedGemm<T, Op, Mode>(p);
    if (Path != gpu::MathPath::kSimt) { // the same product over magnitudes
      GemmProblem<T, I64> q = p;
      const auto absA = magnitudes(A), absB = magnitudes(B);
      bound = magnitudes(C);
      q.A = absA.data();
      q.B = absB.data();
      q.C = bound.data();
      cpu::segmentedGemm<T, Op, Mode>(q);
      bound = tf32Bound(std::move(bound));
    }
  }

  DeviceBuffer<I64> dOff(off), dG(gidx), dS(sidx);
  DeviceBuffer<T> dA(A), dB(B), dC(C);
  GemmProblem<T, I64> d = p;
  d.segOffsets = dOff.ptr;
  d.A = dA.ptr;
  d.gather = dG.ptr;
  d.B = dB.ptr;
  d.C = dC.ptr;
  d.scatter = dS.ptr;
  const std::size_t bytes = gpu::segmentedGemmWorkspaceBytes<T, Mode, Tile>(d);
  DeviceBuffer<char> ws(bytes);
  checkCuda(gpu::launchSegmentedGemm<T, Op, Mode, Tile, Path>(d, ws.ptr, bytes, nullptr), "gemm");
  checkCuda(cudaDeviceSynchronize(), "gemm sync");
  const auto got = dC.download();
  char name[160];
  std::snprintf(name, sizeof name, "gemm%s %s op=%d scatter=%d tile=%s K=%lld N=%lld H=%lld",
                pathName(Path), typeName<T>(), static_cast<int>(Op), static_cast<int>(Mode),
                tileName, static_cast<long long>(K), static_cast<long long>(N),
                static_cast<long long>(heads));
  reportProduct(name, Path, got, want, bound, rows);

  if (Mode == Scatter::kAccumulateIndexPerSegment) { // bitwise reproducible
    DeviceBuffer<T> dC2(C);
    d.C = dC2.ptr;
    // A 16-bit rerun on the default tile goes through the run-time choice of the math, which
    // must be the same kernel whatever it is asked.
    constexpr bool runTime =
        kSixteen<T> && std::is_same_v<Tile, typename gpu::DefaultGemmTile<T>::type>;
    if constexpr (runTime)
      checkCuda(
          gpu::launchSegmentedGemm<T, Op, Mode>(d, ws.ptr, bytes, nullptr, gpu::MathPath::kSimt),
          "gemm");
    else
      checkCuda(gpu::launchSegmentedGemm<T, Op, Mode, Tile, Path>(d, ws.ptr, bytes, nullptr),
                "gemm");
    checkCuda(cudaDeviceSynchronize(), "gemm sync");
    reportExact(std::string(name) + (runTime ? " rerun (run-time path)" : " rerun"),
                bitwiseEqual(got, dC2.download()));
  }
}

template <typename T, BOp Op, typename Tile, gpu::MathPath Path = gpu::MathPath::kSimt>
void gemmModes(std::mt19937_64 &rng, const char *tn) {
  const std::vector<I64> sizes = {0, 1, 300, 0, 64, 65, 1000, 0};
  for (I64 K : {1, 17, 65})
    for (I64 N : {3, 64, 65}) {
      checkGemm<T, Op, Scatter::kStore, Tile, Path>(sizes, K, N, 1, rng, tn);
      checkGemm<T, Op, Scatter::kAccumulateIndexPerSegment, Tile, Path>(sizes, K, N, 1, rng, tn);
    }
  checkGemm<T, Op, Scatter::kAccumulate, Tile, Path>(sizes, 33, 40, 2, rng, tn);
  checkGemm<T, Op, Scatter::kAccumulateIndexPerSegment, Tile, Path>(sizes, 65, 64, 1, rng, tn);
  checkGemm<T, Op, Scatter::kAccumulateIndexPerSegment, Tile, Path>(sizes, 33, 40, 2, rng, tn);
}

/// The reference of the 16-bit weight gradient `p` (host pointers; A, dC and dB the operands
/// behind them, dB before the launch) cut into chunks of `chunkRows`: `want` in double (the CPU
/// template in double) and `bound` on the error of the 16-bit result. Each element is stored
/// once (sixteenBitStore) from two FP32 sums: each chunk's partial, chunkRows deep (within
/// fp32SumError(chunkRows) M_chunk), then the partials in chunk order in the reduction, at most
/// `chunks` of them, their magnitudes within (1 + fp32SumError(chunkRows)) M, rounded to nearest
/// (gamma_chunks for 2^-24 times that, below fp32SumError(chunks) M). In all, within
/// (fp32SumError(chunkRows) + fp32SumError(chunks)) M.
template <typename T, BOp Op, Assign Mode>
void sixteenBitWeightGradReference(const WeightGradProblem<T, I64> &p, I64 chunkRows,
                                   const std::vector<T> &A, const std::vector<T> &dC,
                                   const std::vector<T> &dB, std::vector<double> &want,
                                   std::vector<double> &bound) {
  const std::vector<double> a = toDouble(A), g = toDouble(dC), absA = magnitudes(a),
                            absG = magnitudes(g);
  want = toDouble(dB);
  std::vector<double> mag(dB.size(), 0.0);
  WeightGradProblem<double, I64> q;
  q.numSegments = p.numSegments;
  q.segOffsets = p.segOffsets;
  q.numRows = p.numRows;
  q.K = p.K;
  q.N = p.N;
  q.heads = p.heads;
  q.lda = p.lda;
  q.rows = p.rows;
  q.gatherA = p.gatherA;
  q.ldc = p.ldc;
  q.gatherC = p.gatherC;
  q.strideB = p.strideB;
  q.A = a.data();
  q.dC = g.data();
  q.dB = want.data();
  cpu::segmentedWeightGrad<double, Op, Mode>(q);
  q.A = absA.data();
  q.dC = absG.data();
  q.dB = mag.data(); // zeros: the sums over the magnitudes, added or stored
  cpu::segmentedWeightGrad<double, Op, Mode>(q);
  I64 chunks = 1;
  for (I64 s = 0; s < p.numSegments; ++s)
    chunks = std::max(chunks, ceilDiv<I64>(p.segOffsets[s + 1] - p.segOffsets[s], chunkRows));
  const double sumError = fp32SumError(chunkRows) + fp32SumError(chunks);
  bound.resize(want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    bound[i] = sixteenBitStore<T>(0.0, sumError * mag[i], want[i]);
}

template <typename T, BOp Op, Assign Mode, gpu::MathPath Path = gpu::MathPath::kSimt>
void checkWeightGrad(const std::vector<I64> &sizes, I64 K, I64 N, I64 heads, I64 chunkRows,
                     std::mt19937_64 &rng) {
  const auto off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back(), KN = K * N;
  auto A = randomVector<T>(50 * heads * K, rng);
  auto dC = randomVector<T>(rows * heads * N, rng);
  auto ga = randomIndex(rows, 50, rng);
  auto dB0 = randomVector<T>(S * heads * KN, rng);
  WeightGradProblem<T, I64> p;
  p.numSegments = S;
  p.segOffsets = off.data();
  p.numRows = rows;
  p.K = K;
  p.N = N;
  p.heads = heads;
  p.A = A.data();
  p.lda = heads * K;
  p.gatherA = ga.data();
  p.dC = dC.data();
  p.ldc = heads * N;
  p.strideB = heads * KN;
  std::vector<RefType<T>> want, bound; // bound: of a tensor-core result's error
  if constexpr (kSixteen<T>) {
    sixteenBitWeightGradReference<T, Op, Mode>(p, chunkRows, A, dC, dB0, want, bound);
  } else {
    want = dB0;
    p.dB = want.data();
    cpu::segmentedWeightGrad<T, Op, Mode>(p);
    if (Path != gpu::MathPath::kSimt) { // the same sums over magnitudes
      WeightGradProblem<T, I64> q = p;
      const auto absA = magnitudes(A), absDC = magnitudes(dC);
      bound = magnitudes(dB0);
      q.A = absA.data();
      q.dC = absDC.data();
      q.dB = bound.data();
      cpu::segmentedWeightGrad<T, Op, Mode>(q);
      bound = tf32Bound(std::move(bound));
    }
  }

  DeviceBuffer<I64> dOff(off), dGa(ga);
  DeviceBuffer<T> dA(A), dDC(dC), dDB(dB0), dDB2(dB0);
  WeightGradProblem<T, I64> d = p;
  d.segOffsets = dOff.ptr;
  d.A = dA.ptr;
  d.gatherA = dGa.ptr;
  d.dC = dDC.ptr;
  d.dB = dDB.ptr;
  const std::size_t bytes = gpu::segmentedWeightGradWorkspaceBytes(d, chunkRows);
  DeviceBuffer<char> ws(bytes);
  using Tile = typename gpu::DefaultWgradTile<T>::type;
  checkCuda(
      gpu::launchSegmentedWeightGrad<T, Op, Mode, Tile, Path>(d, chunkRows, ws.ptr, bytes, nullptr),
      "wgrad");
  d.dB = dDB2.ptr;
  // A 16-bit rerun goes through the run-time choice of the math: the same kernel, whatever it
  // is asked.
  if constexpr (kSixteen<T>)
    checkCuda(gpu::launchSegmentedWeightGrad<T, Op, Mode>(d, chunkRows, ws.ptr, bytes, nullptr,
                                                          gpu::MathPath::kSimt),
              "wgrad");
  else
    checkCuda(gpu::launchSegmentedWeightGrad<T, Op, Mode, Tile, Path>(d, chunkRows, ws.ptr, bytes,
                                                                      nullptr),
              "wgrad");
  checkCuda(cudaDeviceSynchronize(), "wgrad sync");
  const auto got = dDB.download(), again = dDB2.download();
  char name[160];
  std::snprintf(name, sizeof name, "weight grad%s %s op=%d add=%d K=%lld N=%lld H=%lld chunk=%lld",
                pathName(Path), typeName<T>(), static_cast<int>(Op), static_cast<int>(Mode),
                static_cast<long long>(K), static_cast<long long>(N), static_cast<long long>(heads),
                static_cast<long long>(chunkRows));
  reportProduct(name, Path, got, want, bound, rows);
  reportExact(std::string(name) + (kSixteen<T> ? " rerun (run-time path)" : " rerun"),
              bitwiseEqual(got, again));
}

//===----------------------------------------------------------------------===//
// Traversals
//===----------------------------------------------------------------------===//

struct DeviceGraph {
  DeviceBuffer<I64> perm, inPtr, src, outDst, rel, outPtr, outPos, srcPairNode, srcPairPtr,
      dstPairNode, dstPairPtr, srcRunPtr, srcRun, dstRunPtr, dstRun;
  const Graph &g;
  explicit DeviceGraph(const Graph &graph)
      : perm(graph.perm), inPtr(graph.inPtr), src(graph.sortedSrc), outDst(graph.outDst),
        rel(graph.sortedRel), outPtr(graph.outPtr), outPos(graph.outPos),
        srcPairNode(graph.srcPairNode), srcPairPtr(graph.srcPairPtr),
        dstPairNode(graph.dstPairNode), dstPairPtr(graph.dstPairPtr), srcRunPtr(graph.srcRunPtr),
        srcRun(graph.srcRun), dstRunPtr(graph.dstRunPtr), dstRun(graph.dstRun), g(graph) {}
  EdgeRows<I64> edges() const {
    EdgeRows<I64> r = g.edges();
    r.groupPtr = inPtr.ptr;
    r.src = src.ptr;
    r.rel = rel.ptr;
    r.eid = perm.ptr;
    return r;
  }
  EdgeRows<I64> pairs(bool srcSide) const {
    EdgeRows<I64> r = g.pairs(srcSide);
    r.groupPtr = srcSide ? srcPairPtr.ptr : dstPairPtr.ptr;
    r.node = srcSide ? srcPairNode.ptr : dstPairNode.ptr;
    return r;
  }
  Csr<I64> inCsr() const { return {g.numNodes, g.numEdges, inPtr.ptr, nullptr, src.ptr}; }
  Csr<I64> outCsr() const { return {g.numNodes, g.numEdges, outPtr.ptr, outPos.ptr, outDst.ptr}; }
  Csr<I64> pairCsr(bool srcSide) const {
    Csr<I64> c = srcSide ? outCsr() : inCsr();
    c.numRuns = static_cast<I64>((srcSide ? g.srcRun : g.dstRun).size());
    c.runPtr = srcSide ? srcRunPtr.ptr : dstRunPtr.ptr;
    c.runPair = srcSide ? srcRun.ptr : dstRun.ptr;
    return c;
  }
};

template <typename T> void checkTraversals(std::mt19937_64 &rng) {
  const Graph g = randomGraph(5000, 60000, 9, rng);
  const DeviceGraph dg(g);
  const std::string t = typeName<T>();
  constexpr I64 H = 2, D = 24;

  { // edge map: attention logits, over the edges and over both ends' unique pairs
    auto x = randomVector<T>(g.numNodes * H * D, rng),
         w = randomVector<T>(g.numRelations * H * D, rng), y = randomVector<T>(g.numNodes * H, rng);
    DeviceBuffer<T> dx(x), dw(w), dy(y);
    for (int rows = 0; rows < 3; ++rows) {
      const EdgeRows<I64> host = rows == 0 ? g.edges() : g.pairs(rows == 1);
      const EdgeRows<I64> dev = rows == 0 ? dg.edges() : dg.pairs(rows == 1);
      std::vector<T> want(host.numRows * H);
      cpu::edgeMap(host, AttentionLogit<T>{x.data(), w.data(), y.data(), want.data(), H, D});
      DeviceBuffer<T> dout(host.numRows * H);
      checkCuda(gpu::launchEdgeMap(dev, AttentionLogit<T>{dx.ptr, dw.ptr, dy.ptr, dout.ptr, H, D},
                                   nullptr),
                "edge map");
      checkCuda(cudaDeviceSynchronize(), "edge map sync");
      const char *what[] = {"edges", "source pairs", "destination pairs"};
      report(std::string("edge map over ") + what[rows] + " (attention logits) " + t,
             maxRelError(dout.download(), want), tolerance<T>());
    }
  }

  { // node traversal: three-pass softmax aggregation on logits near 1e4
    auto s = randomVector<T>(g.numEdges * H, rng, 1e4 - 20, 1e4 + 20);
    auto z = randomVector<T>(g.numNodes * H * D, rng);
    std::vector<T> want(g.numNodes * H * D);
    hector::emit::cpu::nodeTraversal<3>(g.inCsr(),
                                        SoftmaxAggregate<T, H, D>{s.data(), z.data(), want.data()});
    DeviceBuffer<T> dS(s), dZ(z), dOut(g.numNodes * H * D), dOut2(g.numNodes * H * D);
    checkCuda(hector::emit::gpu::launchNodeTraversal<3>(
                  dg.inCsr(), SoftmaxAggregate<T, H, D>{dS.ptr, dZ.ptr, dOut.ptr}, nullptr),
              "node traversal");
    checkCuda(hector::emit::gpu::launchNodeTraversal<3>(
                  dg.inCsr(), SoftmaxAggregate<T, H, D>{dS.ptr, dZ.ptr, dOut2.ptr}, nullptr),
              "node traversal");
    checkCuda(cudaDeviceSynchronize(), "node traversal sync");
    const auto got = dOut.download(), again = dOut2.download();
    report("node traversal (softmax aggregation, logits ~1e4) " + t, maxRelError(got, want),
           tolerance<T>() * 10);
    reportExact("node traversal rerun " + t, bitwiseEqual(got, again));
  }

  for (bool srcSide : {true, false}) { // pair traversal and run sums over unique pairs
    constexpr int W = 16;
    const I64 U = static_cast<I64>((srcSide ? g.srcPairNode : g.dstPairNode).size());
    const Csr<I64> hc = g.pairCsr(srcSide), dc = dg.pairCsr(srcSide);
    auto w = randomVector<T>(g.numEdges, rng), x = randomVector<T>(g.numNodes * W, rng);
    std::vector<T> want(U * W);
    std::vector<std::int64_t> degree(U);
    hector::emit::cpu::pairTraversal(
        hc, WeightedSum<T, W>{w.data(), x.data(), want.data(), degree.data()});
    DeviceBuffer<T> dw(w), dx(x), dOut(U * W);
    DeviceBuffer<std::int64_t> dDegree(U);
    checkCuda(hector::emit::gpu::launchPairTraversal(
                  dc, WeightedSum<T, W>{dw.ptr, dx.ptr, dOut.ptr, dDegree.ptr}, nullptr),
              "pair traversal");
    checkCuda(cudaDeviceSynchronize(), "pair traversal sync");
    const std::string side = srcSide ? "source" : "destination";
    report("pair traversal (" + side + " pairs) " + t, maxRelError(dOut.download(), want),
           tolerance<T>());
    reportExact("pair traversal degrees (" + side + " pairs)", dDegree.download() == degree);

    auto edgeRows = randomVector<T>(g.numEdges * W, rng), pairRows = randomVector<T>(U * W, rng);
    std::vector<T> wantPairs(U * W), wantNodes(g.numNodes * W);
    cpu::runSum<T, I64>(hc, edgeRows.data(), W, wantPairs.data(), false);
    cpu::runSum<T, I64>(hc, pairRows.data(), W, wantNodes.data(), true);
    DeviceBuffer<T> dEdgeRows(edgeRows), dPairRows(pairRows), dPairs(U * W), dNodes(g.numNodes * W);
    checkCuda(gpu::launchRunSum<T, I64>(dc, dEdgeRows.ptr, W, dPairs.ptr, false, nullptr),
              "run sum");
    checkCuda(gpu::launchRunSum<T, I64>(dc, dPairRows.ptr, W, dNodes.ptr, true, nullptr),
              "run sum");
    checkCuda(cudaDeviceSynchronize(), "run sum sync");
    report("run sum edges into " + side + " pairs " + t, maxRelError(dPairs.download(), wantPairs),
           tolerance<T>());
    report("run sum " + side + " pairs into nodes " + t, maxRelError(dNodes.download(), wantNodes),
           tolerance<T>());
  }
}

//===----------------------------------------------------------------------===//
// Timing (informational)
//===----------------------------------------------------------------------===//

/// Milliseconds per call of `launch` (a warm-up, then the mean of 20 calls on the stream).
template <typename F> float millisecondsPerCall(F &&launch) {
  checkCuda(launch(), "warm-up");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int i = 0; i < 20; ++i)
    launch();
  cudaEventRecord(stop);
  checkCuda(cudaEventSynchronize(stop), "timing");
  checkCuda(cudaGetLastError(), "timed launches");
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 20;
}

/// The cuBLAS element type of T.
template <typename T> cudaDataType cudaTypeOf() {
  if constexpr (kSixteen<T>)
    return std::numeric_limits<T>::digits == 8 ? CUDA_R_16BF : CUDA_R_16F;
  else
    return sizeof(T) == 4 ? CUDA_R_32F : CUDA_R_64F;
}

/// The segmented GEMM at a realistic shape (50 segments of 20,000 rows, 64 x 64), with A's rows
/// gathered and without, beside cuBLAS on the same ungathered shape (a strided batch of the 50
/// products) in the same arithmetic: FP32 or FP64 for SIMT, TF32 tensor cores for kTensorTf32,
/// and for bfloat16 and float16 (kTensor16) 16-bit operands and output with FP32 compute.
template <typename T, gpu::MathPath Path = gpu::MathPath::kSimt>
void timeGemm(std::mt19937_64 &rng, cublasHandle_t handle) {
  const I64 S = 50, per = 20000, K = 64, N = 64, rows = S * per;
  std::vector<I64> sizes(S, per);
  const auto off = offsetsFromSizes(sizes);
  auto A = randomVector<T>(rows * K, rng);
  auto B = randomVector<T>(S * K * N, rng);
  auto gidx = randomIndex(rows, 100000, rng);
  DeviceBuffer<I64> dOff(off), dG(gidx);
  DeviceBuffer<T> dA(A), dB(B), dC(rows * N);
  GemmProblem<T, I64> d;
  d.numSegments = S;
  d.segOffsets = dOff.ptr;
  d.numRows = rows;
  d.K = K;
  d.N = N;
  d.A = dA.ptr;
  d.lda = K;
  d.gather = dG.ptr;
  d.B = dB.ptr;
  d.strideB = K * N;
  d.C = dC.ptr;
  d.ldc = N;
  const std::size_t bytes = gpu::segmentedGemmWorkspaceBytes<T, Scatter::kStore>(d);
  DeviceBuffer<char> ws(bytes);
  auto ours = [&] {
    return gpu::launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore>(d, ws.ptr, bytes, nullptr,
                                                                        Path);
  };
  const double flop = 2.0 * rows * K * N;
  const float gathered = millisecondsPerCall(ours);
  d.gather = nullptr;
  const float dense = millisecondsPerCall(ours);
  // Row-major C_s = A_s B_s is column-major C_s^T = B_s^T A_s^T.
  const cudaDataType type = cudaTypeOf<T>();
  const cublasComputeType_t compute = sizeof(T) == 8 ? CUBLAS_COMPUTE_64F
                                      : Path == gpu::MathPath::kTensorTf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  const AccumType<T> one = 1, zero = 0; // the scalars are in the compute type
  auto cublas = [&] {
    const cublasStatus_t st = cublasGemmStridedBatchedEx(
        handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(N), static_cast<int>(per),
        static_cast<int>(K), &one, dB.ptr, type, static_cast<int>(N), K * N, dA.ptr, type,
        static_cast<int>(K), per * K, &zero, dC.ptr, type, static_cast<int>(N), per * N,
        static_cast<int>(S), compute, CUBLAS_GEMM_DEFAULT);
    return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
  };
  const float reference = millisecondsPerCall(cublas);
  std::printf("timing: gemm%s %s, %lld rows x 64 x 64, 50 segments: gathered %.3f ms (%.1f "
              "GFLOP/s), ungathered %.3f ms (%.1f GFLOP/s); cuBLAS strided batch %.3f ms (%.1f "
              "GFLOP/s); ours/cuBLAS %.2f gathered, %.2f ungathered\n",
              pathName(Path), typeName<T>(), static_cast<long long>(rows), gathered,
              flop / gathered / 1e6, dense, flop / dense / 1e6, reference, flop / reference / 1e6,
              reference / gathered, reference / dense);
}

/// Operands of their own element types (16-bit rows of A beside a float32 B, dC and result, as
/// 16-bit storage for the attention logits needs): the GEMM (store, with a gather) and the
/// weight gradient, through the run-time choice of the math, against a double reference of the
/// stored values. Products of a 16-bit and a float32 value are not exact in FP32, so the bound
/// is the FP32 summation's over one more term (fp32SumError(depth + 1) times the products'
/// magnitudes M; the chunked weight gradient sums at most rows + chunks terms per element), plus
/// TF32's rounding of B (tf32Bound: 2^-9 M) when the path asks for it. A B or result rounded to
/// 16 bits anywhere exceeds it.
template <typename T, BOp Op, gpu::MathPath Path> void checkMixed(std::mt19937_64 &rng) {
  const std::vector<I64> sizes = {0, 1, 300, 0, 65, 1000};
  const auto off = offsetsFromSizes(sizes);
  const I64 S = static_cast<I64>(sizes.size()), rows = off.back(), aRows = 97;
  const double tf32 = Path == gpu::MathPath::kTensorTf32 ? 0x1p-9 : 0.0;
  const std::pair<I64, I64> shapes[] = {{65, 4}, {64, 64}, {17, 65}};
  for (const auto &shape : shapes) {
    const I64 K = shape.first, N = shape.second;
    const auto A = randomVector<T>(aRows * K, rng);
    const auto B = randomVector<float>(S * K * N, rng, -30.0, 30.0); // logits in the hundreds
    const auto gidx = randomIndex(rows, aRows, rng);
    auto bAt = [&](I64 s, I64 k, I64 n) {
      return static_cast<double>(Op == BOp::kIdentity ? B[s * K * N + k * N + n]
                                                      : B[s * K * N + n * K + k]);
    };
    std::vector<double> want(rows * N, 0.0), bound(rows * N, 0.0);
    for (I64 s = 0; s < S; ++s)
      for (I64 r = off[s]; r < off[s + 1]; ++r)
        for (I64 n = 0; n < N; ++n) {
          double sum = 0, mag = 0;
          for (I64 k = 0; k < K; ++k) {
            const double t =
                static_cast<double>(static_cast<float>(A[gidx[r] * K + k])) * bAt(s, k, n);
            sum += t;
            mag += std::fabs(t);
          }
          want[r * N + n] = sum;
          bound[r * N + n] = (fp32SumError(K + 1) + tf32) * mag;
        }
    GemmProblem<T, I64, float, float> p;
    p.numSegments = S;
    p.numRows = rows;
    p.K = K;
    p.N = N;
    p.lda = K;
    p.strideB = K * N;
    p.ldc = N;
    DeviceBuffer<I64> dOff(off), dG(gidx);
    DeviceBuffer<T> dA(A);
    DeviceBuffer<float> dB(B), dC(std::vector<float>(rows * N, 0.0f));
    p.segOffsets = dOff.ptr;
    p.A = dA.ptr;
    p.gather = dG.ptr;
    p.B = dB.ptr;
    p.C = dC.ptr;
    const std::size_t bytes = gpu::segmentedGemmWorkspaceBytes<T, Scatter::kStore>(p);
    DeviceBuffer<char> ws(bytes);
    checkCuda(gpu::launchSegmentedGemm<T, Op, Scatter::kStore>(p, ws.ptr, bytes, nullptr, Path),
              "mixed gemm");
    checkCuda(cudaDeviceSynchronize(), "mixed gemm sync");
    char name[160];
    std::snprintf(name, sizeof name,
                  "gemm mixed%s %s x f32 -> f32 op=%d K=%lld N=%lld (error/bound)", pathName(Path),
                  typeName<T>(), static_cast<int>(Op), static_cast<long long>(K),
                  static_cast<long long>(N));
    report(name, boundRatio(dC.download(), want, bound), 1.0);

    // The weight gradient of the same rows: dB_s = sum_r A[gidx[r]]^T dC[r], dC float32.
    const auto G = randomVector<float>(rows * N, rng, -30.0, 30.0);
    const I64 chunkRows = 256, KN = K * N;
    std::vector<double> wantB(S * KN, 0.0), magB(S * KN, 0.0);
    for (I64 s = 0; s < S; ++s)
      for (I64 r = off[s]; r < off[s + 1]; ++r)
        for (I64 k = 0; k < K; ++k)
          for (I64 n = 0; n < N; ++n) {
            const double t = static_cast<double>(static_cast<float>(A[gidx[r] * K + k])) *
                             static_cast<double>(G[r * N + n]);
            wantB[s * KN + k * N + n] += t;
            magB[s * KN + k * N + n] += std::fabs(t);
          }
    std::vector<double> wantStored(S * KN), boundB(S * KN);
    for (I64 s = 0; s < S; ++s) {
      const I64 terms = sizes[s] + ceilDiv<I64>(sizes[s], chunkRows) + 1;
      for (I64 k = 0; k < K; ++k)
        for (I64 n = 0; n < N; ++n) {
          const I64 at = s * KN + (Op == BOp::kIdentity ? k * N + n : n * K + k);
          wantStored[at] = wantB[s * KN + k * N + n];
          boundB[at] = (fp32SumError(terms) + tf32) * magB[s * KN + k * N + n];
        }
    }
    WeightGradProblem<T, I64, float, float> w;
    w.numSegments = S;
    w.numRows = rows;
    w.K = K;
    w.N = N;
    w.lda = K;
    w.ldc = N;
    w.strideB = KN;
    DeviceBuffer<float> dG2(G), dDB(std::vector<float>(S * KN, 7.0f));
    w.segOffsets = dOff.ptr;
    w.A = dA.ptr;
    w.gatherA = dG.ptr;
    w.dC = dG2.ptr;
    w.dB = dDB.ptr;
    const std::size_t wbytes = gpu::segmentedWeightGradWorkspaceBytes(w, chunkRows);
    DeviceBuffer<char> wws(wbytes);
    checkCuda(gpu::launchSegmentedWeightGrad<T, Op, Assign::kStore>(w, chunkRows, wws.ptr, wbytes,
                                                                    nullptr, Path),
              "mixed wgrad");
    checkCuda(cudaDeviceSynchronize(), "mixed wgrad sync");
    std::snprintf(name, sizeof name,
                  "weight grad mixed%s %s x f32 -> f32 op=%d K=%lld N=%lld (error/bound)",
                  pathName(Path), typeName<T>(), static_cast<int>(Op), static_cast<long long>(K),
                  static_cast<long long>(N));
    report(name, boundRatio(dDB.download(), wantStored, boundB), 1.0);
  }
}

/// float and double: every template, SIMT and (float) TF32; then the GEMM's timings.
template <typename T> void runAll(std::mt19937_64 &rng, cublasHandle_t handle) {
  gemmModes<T, BOp::kIdentity, typename gpu::DefaultGemmTile<T>::type>(rng, "default");
  gemmModes<T, BOp::kTranspose, typename gpu::DefaultGemmTile<T>::type>(rng, "default");
  gemmModes<T, BOp::kIdentity, gpu::GemmTile<32, 32, 8, 2, 2>>(rng, "32x32x8/2x2");
  gemmModes<T, BOp::kTranspose, gpu::GemmTile<128, 64, 8, 8, 4>>(rng, "128x64x8/8x4");
  const std::vector<I64> sizes = {0, 5, 3000, 0, 1, 700};
  checkWeightGrad<T, BOp::kIdentity, Assign::kStore>(sizes, 17, 65, 1, 256, rng);
  checkWeightGrad<T, BOp::kTranspose, Assign::kAdd>(sizes, 64, 33, 2, 64, rng);
  checkWeightGrad<T, BOp::kIdentity, Assign::kAdd>(sizes, 3, 1, 1, gpu::defaultWgradChunkRows(3706),
                                                   rng);
  if constexpr (std::is_same_v<T, float>) {
    using gpu::MathPath;
    gemmModes<T, BOp::kIdentity, typename gpu::DefaultGemmTile<T>::type, MathPath::kTensorTf32>(
        rng, "default");
    gemmModes<T, BOp::kTranspose, typename gpu::DefaultGemmTile<T>::type, MathPath::kTensorTf32>(
        rng, "default");
    gemmModes<T, BOp::kIdentity, gpu::GemmTile<32, 32, 8, 2, 2>, MathPath::kTensorTf32>(
        rng, "32x32x8/2x2");
    gemmModes<T, BOp::kTranspose, gpu::GemmTile<128, 64, 8, 8, 4>, MathPath::kTensorTf32>(
        rng, "128x64x8/8x4");
    checkWeightGrad<T, BOp::kIdentity, Assign::kStore, MathPath::kTensorTf32>(sizes, 17, 65, 1, 256,
                                                                              rng);
    checkWeightGrad<T, BOp::kTranspose, Assign::kAdd, MathPath::kTensorTf32>(sizes, 64, 33, 2, 64,
                                                                             rng);
  }
  checkTraversals<T>(rng);
  timeGemm<T>(rng, handle);
  if constexpr (std::is_same_v<T, float>)
    timeGemm<T, gpu::MathPath::kTensorTf32>(rng, handle);
}

/// bfloat16 or float16 on 16-bit tensor cores: the GEMM problems of float and double (every
/// scatter mode, both layouts of B) on the default 16-bit tile and two others of depth 16, the
/// weight gradient (stored and added, both layouts); beside float32 operands (checkMixed); then
/// the GEMM's timing.
template <typename T> void runSixteen(std::mt19937_64 &rng, cublasHandle_t handle) {
  constexpr gpu::MathPath P = gpu::MathPath::kTensor16;
  using Tile = typename gpu::DefaultGemmTile<T>::type;
  gemmModes<T, BOp::kIdentity, Tile, P>(rng, "default");
  gemmModes<T, BOp::kTranspose, Tile, P>(rng, "default");
  gemmModes<T, BOp::kIdentity, gpu::GemmTile<32, 32, 16, 2, 2>, P>(rng, "32x32x16/2x2");
  gemmModes<T, BOp::kTranspose, gpu::GemmTile<128, 64, 16, 8, 4>, P>(rng, "128x64x16/8x4");
  const std::vector<I64> sizes = {0, 5, 3000, 0, 1, 700};
  checkWeightGrad<T, BOp::kIdentity, Assign::kStore, P>(sizes, 17, 65, 1, 256, rng);
  checkWeightGrad<T, BOp::kTranspose, Assign::kAdd, P>(sizes, 64, 33, 2, 64, rng);
  checkWeightGrad<T, BOp::kIdentity, Assign::kAdd, P>(sizes, 3, 1, 1,
                                                      gpu::defaultWgradChunkRows(3706), rng);
  checkWeightGrad<T, BOp::kTranspose, Assign::kStore, P>(sizes, 40, 64, 2, 256, rng);
  checkMixed<T, BOp::kIdentity, gpu::MathPath::kSimt>(rng);
  checkMixed<T, BOp::kTranspose, gpu::MathPath::kSimt>(rng);
  checkMixed<T, BOp::kIdentity, gpu::MathPath::kTensorTf32>(rng);
  timeGemm<T, P>(rng, handle);
}

} // namespace

int main() {
  int device = 0;
  cudaDeviceProp prop;
  checkCuda(cudaGetDevice(&device), "cudaGetDevice");
  checkCuda(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  std::printf("device: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    std::printf("cublasCreate failed\n");
    std::exit(2);
  }
  std::mt19937_64 rng(2024);
  runAll<float>(rng, handle);
  runAll<double>(rng, handle);
  runSixteen<DevBf16>(rng, handle);
  runSixteen<DevHalf>(rng, handle);
  cublasDestroy(handle);
  std::printf("%s: %d check(s) failed\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
