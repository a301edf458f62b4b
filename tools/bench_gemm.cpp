//===- bench_gemm.cpp - The CPU GEMM template's rate at one layer's shapes -===//
//
// Times the three segmented GEMM instances of a layer's training step, as the emitted code
// runs them, in float32 and bfloat16 (bfloat16 on AMX tiles where compiled and available, and
// on the vector kernels), and prints one JSON object per line:
//
//   forward        C[rows, N]  = A[gather(rows), K] x W_s[K, N]        (Scatter::kStore)
//   input_grad     dX[rows, K] = dC[rows, N] x W_s[N, K]^T             (BOp::kTranspose)
//   weight_grad    dW_s[K, N]  = sum_rows A[gather(row)]^T dC[row]
//
// Built with -march=native (target hector-bench-gemm); tools/bench_precision.py runs it beside
// torch.mm at the same shapes.
//
//   hector-bench-gemm ROWS K N [SEGMENTS] [NODES] [REPEATS]
//
//===----------------------------------------------------------------------===//
#include "hector/cpu/segmented_gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <random>
#include <string>
#include <vector>

namespace {

/// bfloat16 as its 16 bits, rounded to nearest even from float (as c10::BFloat16).
struct Bf16 {
  std::uint16_t bits = 0;
  Bf16() = default;
  Bf16(float f) { // NOLINT(google-explicit-constructor): converts like c10::BFloat16
    bits = hector::tmpl::cpu::detail::bfloat16Bits(f);
  }
  operator float() const { return hector::tmpl::cpu::detail::bfloat16Value(bits); }
};

} // namespace

namespace std {
template <> class numeric_limits<Bf16> {
public:
  static constexpr bool is_specialized = true;
  static constexpr int digits = 8;
  static constexpr int max_exponent = 128;
};
} // namespace std

namespace {

using I64 = std::int64_t;
using namespace hector::tmpl;

struct Shape {
  I64 rows, K, N, segments, nodes;
};

/// Allocates on 64-byte boundaries, as PyTorch's CPU allocator does for every tensor: a row of
/// 64 floats then fills 4 cache lines, not 5 (a gathered GEMM's rate depends on it).
template <typename T> struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U> Aligned64(const Aligned64<U> &) {} // NOLINT(google-explicit-constructor)
  T *allocate(std::size_t n) {
    const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    if (void *p = std::aligned_alloc(64, bytes))
      return static_cast<T *>(p);
    throw std::bad_alloc();
  }
  void deallocate(T *p, std::size_t) { std::free(p); }
  template <typename U> bool operator==(const Aligned64<U> &) const { return true; }
  template <typename U> bool operator!=(const Aligned64<U> &) const { return false; }
};
template <typename T> using Buffer = std::vector<T, Aligned64<T>>;

template <typename F> double medianSeconds(int repeats, F &&run) {
  run(); // warm-up: page faults, first-touch
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template <typename T>
void benchDtype(const Shape &s, int repeats, const char *dtype, const char *path) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](Buffer<T> &v) {
    for (auto &x : v)
      x = T(u(rng));
  };
  Buffer<T> X(s.nodes * s.K), W(s.segments * s.K * s.N), C(s.rows * s.N), dX(s.rows * s.K),
      dW(s.segments * s.K * s.N);
  fill(X);
  fill(W);
  fill(C);
  std::vector<I64> off(s.segments + 1), gather(s.rows);
  for (I64 i = 0; i <= s.segments; ++i)
    off[i] = s.rows * i / s.segments;
  std::uniform_int_distribution<I64> node(0, s.nodes - 1);
  for (auto &g : gather)
    g = node(rng);

  GemmProblem<T, I64> f;
  f.numSegments = s.segments;
  f.segOffsets = off.data();
  f.numRows = s.rows;
  f.K = s.K;
  f.N = s.N;
  f.A = X.data();
  f.lda = s.K;
  f.gather = gather.data();
  f.B = W.data();
  f.strideB = s.K * s.N;
  f.C = C.data();
  f.ldc = s.N;

  GemmProblem<T, I64> b = f;
  b.K = s.N;
  b.N = s.K;
  b.A = C.data();
  b.lda = s.N;
  b.gather = nullptr;
  b.C = dX.data();
  b.ldc = s.K;

  WeightGradProblem<T, I64> g;
  g.numSegments = s.segments;
  g.segOffsets = off.data();
  g.numRows = s.rows;
  g.K = s.K;
  g.N = s.N;
  g.A = X.data();
  g.lda = s.K;
  g.gatherA = gather.data();
  g.dC = C.data();
  g.ldc = s.N;
  g.dB = dW.data();
  g.strideB = s.K * s.N;

  const double flops = 2.0 * s.rows * s.K * s.N;
  auto report = [&](const char *op, double seconds) {
    std::printf(
        "{\"op\": \"%s\", \"dtype\": \"%s\", \"path\": \"%s\", \"rows\": %lld, \"K\": %lld, "
        "\"N\": %lld, \"segments\": %lld, \"seconds\": %.6g, \"gflops\": %.4g}\n",
        op, dtype, path, static_cast<long long>(s.rows), static_cast<long long>(s.K),
        static_cast<long long>(s.N), static_cast<long long>(s.segments), seconds,
        flops / seconds / 1e9);
    std::fflush(stdout);
  };
  report("forward", medianSeconds(repeats, [&] {
           cpu::segmentedGemm<T, BOp::kIdentity, Scatter::kStore>(f);
         }));
  report("input_grad", medianSeconds(repeats, [&] {
           cpu::segmentedGemm<T, BOp::kTranspose, Scatter::kStore>(b);
         }));
  report("weight_grad", medianSeconds(repeats, [&] {
           cpu::segmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(g);
         }));
}

I64 argOr(int argc, char **argv, int i, I64 fallback) {
  return argc > i ? std::strtoll(argv[i], nullptr, 10) : fallback;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROWS K N [SEGMENTS] [NODES] [REPEATS]\n", argv[0]);
    return 2;
  }
  Shape s{argOr(argc, argv, 1, 0), argOr(argc, argv, 2, 0), argOr(argc, argv, 3, 0),
          argOr(argc, argv, 4, 8), 0};
  s.nodes = argOr(argc, argv, 5, std::max<I64>(1, s.rows / 10));
  const int repeats = static_cast<int>(argOr(argc, argv, 6, 5));
  if (s.rows <= 0 || s.K <= 0 || s.N <= 0 || s.segments <= 0 || s.nodes <= 0 || repeats <= 0) {
    std::fprintf(stderr, "%s: every size must be positive\n", argv[0]);
    return 2;
  }
  benchDtype<float>(s, repeats, "float32", "vector");
  if (cpu::amxAvailable()) {
    cpu::setAmxEnabled(true);
    benchDtype<Bf16>(s, repeats, "bfloat16", "amx");
  }
  cpu::setAmxEnabled(false);
  benchDtype<Bf16>(s, repeats, "bfloat16", "vector");
  return 0;
}
