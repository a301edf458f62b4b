//===- cpu_traversal_test.cpp - Tests of the CPU traversal template -------===//
//
// Edge map over relation-sorted edges, node reductions (sum, mean, max) with
// isolated nodes, edge softmax on logits that overflow a naive softmax, its
// backward by finite differences, the fused softmax-weighted aggregation
// against the two-pass reference, and the segmented row sum.
//
//===----------------------------------------------------------------------===//
#include "hector/cpu/traversal.h"
#include "test_util.h"

#include <catch2/catch.hpp>
#include <omp.h>

#include <cstring>

using namespace hector::tmpl;
using namespace hector::tmpl::cpu;
using namespace hector::tmpl::testing;

namespace {
template <typename T> double tolerance() { return sizeof(T) == 4 ? 2e-5 : 1e-12; }
} // namespace

TEST_CASE("edge map: every edge once, with its relation, ids and endpoints", "[cpu][traversal]") {
  std::mt19937_64 rng(11);
  for (I64 E : {0, 1, 5000}) {
    const Graph g = randomGraph(300, E, 7, rng);
    std::vector<int> seen(E, 0);
    std::vector<I64> relOf(E, -1), posOf(E, -1);
    bool endpointsOk = true;
    edgeMap(g.sorted(), [&](const EdgeRef &e) {
      seen[e.eid] += 1; // each eid is visited by exactly one thread
      relOf[e.eid] = e.rel;
      posOf[e.eid] = e.pos;
      if (e.src != g.src[e.eid] || e.dst != g.dst[e.eid])
        endpointsOk = false;
    });
    CHECK(endpointsOk);
    for (I64 e = 0; e < E; ++e) {
      CHECK(seen[e] == 1);
      CHECK(relOf[e] == g.rel[e]);
      CHECK(g.perm[posOf[e]] == e);
    }
  }
}

TEMPLATE_TEST_CASE("node reduce: sum, mean and max over incoming edges", "[cpu][traversal]",
                   float, double) {
  using T = TestType;
  std::mt19937_64 rng(12);
  const Graph g = randomGraph(200, 3000, 4, rng);
  for (I64 width : {1, 3, 17, 65}) {
    auto x = randomVector<T>(g.numNodes * width, rng);
    auto w = randomVector<T>(g.numEdges, rng);
    // message: norm-weighted source row, the RGCN pattern
    auto message = [&](const CsrEdge &e) {
      const T *row = x.data() + e.nbr * width;
      const T c = w[e.edge];
      return [=](I64 col) { return c * row[col]; };
    };
    std::vector<long double> sum(g.numNodes * width, 0.0L), mx(g.numNodes * width, -INFINITY);
    for (I64 v = 0; v < g.numNodes; ++v)
      for (I64 j = g.rowPtr[v]; j < g.rowPtr[v + 1]; ++j)
        for (I64 c = 0; c < width; ++c) {
          const long double m = static_cast<long double>(w[g.csrEdge[j]]) * x[g.csrNbr[j] * width + c];
          sum[v * width + c] += m;
          mx[v * width + c] = std::max(mx[v * width + c], m);
        }
    std::vector<long double> mean(sum), mxWant(mx);
    for (I64 v = 0; v < g.numNodes; ++v) {
      const I64 deg = g.rowPtr[v + 1] - g.rowPtr[v];
      for (I64 c = 0; c < width; ++c) {
        mean[v * width + c] = deg ? sum[v * width + c] / deg : 0.0L;
        if (!deg)
          mxWant[v * width + c] = 0;
      }
    }
    std::vector<T> out(g.numNodes * width, T(7));
    nodeReduce<Reduce::kSum, Assign::kStore>(g.csr(), width, out.data(), width, message);
    CHECK(maxRelError(out, sum) < tolerance<T>() * 8);
    nodeReduce<Reduce::kMean, Assign::kStore>(g.csr(), width, out.data(), width, message);
    CHECK(maxRelError(out, mean) < tolerance<T>() * 8);
    nodeReduce<Reduce::kMax, Assign::kStore>(g.csr(), width, out.data(), width, message);
    CHECK(maxRelError(out, mxWant) < tolerance<T>()); // products rounded in T
    // kAdd on top of the max
    nodeReduce<Reduce::kSum, Assign::kAdd>(g.csr(), width, out.data(), width, message);
    for (std::size_t i = 0; i < sum.size(); ++i)
      sum[i] += mxWant[i];
    CHECK(maxRelError(out, sum) < tolerance<T>() * 8);
    // isolated nodes [0, N/4) are exactly zero after a store
    nodeReduce<Reduce::kMean, Assign::kStore>(g.csr(), width, out.data(), width, message);
    for (I64 i = 0; i < (g.numNodes / 4) * width; ++i)
      CHECK(out[i] == T(0));
  }
}

TEMPLATE_TEST_CASE("edge softmax: stable on large logits, zero in-degree", "[cpu][traversal]",
                   float, double) {
  using T = TestType;
  std::mt19937_64 rng(13);
  const Graph g = randomGraph(150, 2000, 3, rng);
  for (I64 heads : {1, 4}) {
    // Logits around 1e4 with a spread: exp overflows without the max shift.
    auto s = randomVector<T>(g.numEdges * heads, rng, 1e4 - 20, 1e4 + 20);
    std::vector<T> alpha(g.numEdges * heads, T(-1));
    edgeSoftmax(g.csr(), heads, s.data(), alpha.data());
    const auto want = referenceSoftmax(g, heads, s);
    CHECK(maxRelError(alpha, want, 1e-30) < tolerance<T>() * 50);
    for (I64 v = 0; v < g.numNodes; ++v)
      for (I64 h = 0; h < heads; ++h) {
        if (g.rowPtr[v] == g.rowPtr[v + 1])
          continue;
        long double total = 0;
        for (I64 j = g.rowPtr[v]; j < g.rowPtr[v + 1]; ++j)
          total += alpha[g.csrEdge[j] * heads + h];
        CHECK(std::fabs(static_cast<double>(total) - 1.0) < tolerance<T>() * 10);
      }
    // Very negative logits too (naive exp underflows to 0/0).
    for (auto &x : s)
      x = -x;
    edgeSoftmax(g.csr(), heads, s.data(), alpha.data());
    CHECK(maxRelError(alpha, referenceSoftmax(g, heads, s), 1e-30) < tolerance<T>() * 50);
  }
}

TEST_CASE("edge softmax backward: finite differences and the closed form",
          "[cpu][traversal][grad]") {
  using T = double;
  std::mt19937_64 rng(14);
  const Graph g = randomGraph(40, 300, 3, rng);
  const I64 H = 2, EH = g.numEdges * H;
  auto s = randomVector<T>(EH, rng, -3, 3);
  auto w = randomVector<T>(EH, rng); // L = sum w * alpha, so dAlpha = w
  std::vector<T> alpha(EH), ds(EH, T(5));
  edgeSoftmax(g.csr(), H, s.data(), alpha.data());
  edgeSoftmaxBackward(g.csr(), H, alpha.data(), w.data(), ds.data());

  auto loss = [&](const std::vector<T> &logits) {
    std::vector<T> a(EH);
    edgeSoftmax(g.csr(), H, logits.data(), a.data());
    long double l = 0;
    for (I64 i = 0; i < EH; ++i)
      l += static_cast<long double>(w[i]) * a[i];
    return l;
  };
  double worst = 0;
  const T eps = 1e-6;
  for (I64 i = 0; i < EH; i += 7) {
    auto plus = s, minus = s;
    plus[i] += eps;
    minus[i] -= eps;
    const double fd = static_cast<double>((loss(plus) - loss(minus)) / (2 * eps));
    worst = std::max(worst, std::fabs(fd - ds[i]));
  }
  CHECK(worst < 1e-8);

  // kAdd adds onto the existing gradient.
  std::vector<T> ds2(EH, T(1));
  edgeSoftmaxBackward<T, Assign::kAdd>(g.csr(), H, alpha.data(), w.data(), ds2.data());
  for (I64 i = 0; i < EH; ++i)
    CHECK(ds2[i] == Approx(ds[i] + 1).epsilon(1e-14));
}

TEMPLATE_TEST_CASE("softmax aggregation: fused online pass equals the two-pass form",
                   "[cpu][traversal]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(15);
  const Graph g = randomGraph(120, 1500, 5, rng);
  for (I64 heads : {1, 3})
    for (I64 width : {1, 17, 64}) {
      // Increasing logits along each node's edge list exercise the rescaling.
      auto s = randomVector<T>(g.numEdges * heads, rng, 1e4 - 30, 1e4 + 30);
      auto z = randomVector<T>(g.numNodes * heads * width, rng);
      const I64 cols = heads * width;
      std::vector<T> out(g.numNodes * cols, T(3)), alpha(g.numEdges * heads);
      softmaxAggregate(
          g.csr(), heads, width, s.data(),
          [&](const CsrEdge &e) {
            const T *row = z.data() + e.nbr * cols;
            return [=](I64 c) { return row[c]; };
          },
          out.data(), cols, alpha.data());
      const auto a = referenceSoftmax(g, heads, s);
      std::vector<long double> want(g.numNodes * cols, 0.0L);
      for (I64 v = 0; v < g.numNodes; ++v)
        for (I64 j = g.rowPtr[v]; j < g.rowPtr[v + 1]; ++j)
          for (I64 h = 0; h < heads; ++h)
            for (I64 c = 0; c < width; ++c)
              want[v * cols + h * width + c] +=
                  a[g.csrEdge[j] * heads + h] * z[g.csrNbr[j] * cols + h * width + c];
      INFO("heads=" << heads << " width=" << width);
      CHECK(maxRelError(out, want) < tolerance<T>() * 10);
      CHECK(maxRelError(alpha, a, 1e-30) < tolerance<T>() * 50);
    }
}

TEST_CASE("traversals are deterministic across thread counts", "[cpu][traversal]") {
  using T = float;
  std::mt19937_64 rng(16);
  const Graph g = randomGraph(500, 20000, 6, rng);
  auto s = randomVector<T>(g.numEdges * 2, rng, -5, 5);
  auto z = randomVector<T>(g.numNodes * 2 * 8, rng);
  std::vector<T> first;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    std::vector<T> out(g.numNodes * 16);
    softmaxAggregate(
        g.csr(), 2, 8, s.data(),
        [&](const CsrEdge &e) {
          const T *row = z.data() + e.nbr * 16;
          return [=](I64 c) { return row[c]; };
        },
        out.data(), 16);
    if (first.empty())
      first = out;
    else
      CHECK(std::memcmp(first.data(), out.data(), out.size() * sizeof(T)) == 0);
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEMPLATE_TEST_CASE("segmented row sum: contiguous and gathered segments, empty ones",
                   "[cpu][traversal]", float, double) {
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<I64> length(0, 9);
  std::uniform_real_distribution<double> value(-1, 1);
  for (I64 width : {1, 7, 64}) {
    // Segment lengths 0..9 (some empty), over rows that a permutation scatters.
    const I64 numSegments = 200;
    std::vector<I64> offsets(numSegments + 1, 0);
    for (I64 s = 0; s < numSegments; ++s)
      offsets[s + 1] = offsets[s] + length(rng);
    const I64 rows = offsets[numSegments];
    std::vector<I64> perm(rows);
    for (I64 r = 0; r < rows; ++r)
      perm[r] = r;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<TestType> in(rows * width);
    for (TestType &v : in)
      v = static_cast<TestType>(value(rng));
    for (bool gathered : {false, true}) {
      std::vector<TestType> out(numSegments * width, TestType(-7));
      segmentedRowSum<TestType, I64>(numSegments, offsets.data(),
                                     gathered ? perm.data() : nullptr, in.data(), width,
                                     out.data());
      bool ok = true;
      for (I64 s = 0; s < numSegments; ++s)
        for (I64 c = 0; c < width; ++c) {
          double expected = 0;
          for (I64 j = offsets[s]; j < offsets[s + 1]; ++j)
            expected += in[(gathered ? perm[j] : j) * width + c];
          ok &= std::abs(out[s * width + c] - expected) <= tolerance<TestType>() * 10;
        }
      CHECK(ok);
    }
  }
}
