//===- cpu_traversal_test.cpp - Tests of the CPU traversal templates ------===//
//
// The edge map over edges (grouped by destination) and over unique pairs (grouped by
// relation); the emitted node traversal's protocol: a three-pass softmax-weighted aggregation
// on logits that overflow a naive softmax, with isolated nodes, and a sum over the CSR by
// source; the pair traversal and the run sums over the unique pairs of both ends; the
// fixed-order dot and sum; determinism across thread counts. Every result is checked against
// a long-double loop over the graph built by plain sorts in test_util.h.
//
//===----------------------------------------------------------------------===//
#include "functors.h"
#include "hector/cpu/traversal.h"
#include "hector/emit/graph_view.h"
#include "hector/emit/node_traversal.h"
#include "test_util.h"

#include <catch2/catch.hpp>
#include <omp.h>

#include <cstring>

using namespace hector::tmpl;
using namespace hector::tmpl::cpu;
using namespace hector::tmpl::testing;
namespace emit = hector::emit;

namespace {} // namespace

TEST_CASE("edge map: every edge once, with its relation, ids and endpoints", "[cpu][traversal]") {
  std::mt19937_64 rng(11);
  for (I64 E : {0, 1, 5000}) {
    const Graph g = randomGraph(300, E, 7, rng);
    std::vector<int> seen(E, 0);
    std::vector<I64> relOf(E, -1), posOf(E, -1);
    bool endpointsOk = true;
    edgeMap(g.edges(), [&](const EdgeRef &e) {
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

namespace {
/// An edge-map functor with a prefetch(): records, per position, the row prefetch() saw and
/// whether it came before the row's call.
struct PrefetchRecorder {
  std::vector<EdgeRef> *prefetched;
  std::vector<int> *prefetchCount, *calledAfterPrefetch, *calls;
  void prefetch(const EdgeRef &e) const {
    (*prefetched)[e.pos] = e;
    (*prefetchCount)[e.pos] += 1;
  }
  void operator()(const EdgeRef &e) const {
    (*calls)[e.pos] += 1;
    const EdgeRef &p = (*prefetched)[e.pos];
    (*calledAfterPrefetch)[e.pos] = (*prefetchCount)[e.pos] == 1 && p.eid == e.eid &&
                                    p.src == e.src && p.dst == e.dst && p.rel == e.rel;
  }
};
} // namespace

TEST_CASE("edge map with prefetch: every row prefetched once, before its call, as called",
          "[cpu][traversal]") {
  std::mt19937_64 rng(13);
  // Edge counts below the look-ahead, across a chunk boundary and over several chunks; 300
  // nodes leave some isolated (empty groups) at the small counts.
  for (I64 E : {I64(0), I64(3), I64(5000), 3 * kEdgeChunk + 17}) {
    const Graph g = randomGraph(300, E, 7, rng);
    for (int side = 0; side < 3; ++side) {
      const EdgeRows<I64> rows = side == 0 ? g.edges() : g.pairs(side == 1);
      const std::size_t n = static_cast<std::size_t>(rows.numRows);
      std::vector<EdgeRef> prefetched(n);
      std::vector<int> prefetchCount(n, 0), after(n, 0), calls(n, 0);
      edgeMap(rows, PrefetchRecorder{&prefetched, &prefetchCount, &after, &calls});
      CHECK(std::all_of(calls.begin(), calls.end(), [](int c) { return c == 1; }));
      CHECK(std::all_of(after.begin(), after.end(), [](int a) { return a == 1; }));
    }
  }
}

TEST_CASE("edge map over unique pairs: every pair once, its node and relation",
          "[cpu][traversal]") {
  std::mt19937_64 rng(12);
  const Graph g = randomGraph(300, 4000, 7, rng);
  for (bool srcSide : {true, false}) {
    const std::vector<I64> &node = srcSide ? g.srcPairNode : g.dstPairNode;
    const std::vector<I64> &ptr = srcSide ? g.srcPairPtr : g.dstPairPtr;
    std::vector<int> seen(node.size(), 0);
    bool ok = true;
    edgeMap(g.pairs(srcSide), [&](const EdgeRef &e) {
      seen[e.pos] += 1;
      const I64 rel = std::upper_bound(ptr.begin(), ptr.end(), e.pos) - ptr.begin() - 1;
      ok &= e.src == node[e.pos] && e.dst == node[e.pos] && e.rel == rel;
    });
    CHECK(ok);
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEMPLATE_TEST_CASE("node traversal: three-pass softmax aggregation, stable on large logits",
                   "[cpu][traversal]", float, double) {
  using T = TestType;
  constexpr int H = 2, D = 3;
  std::mt19937_64 rng(13);
  const Graph g = randomGraph(200, 3000, 4, rng);
  auto s = randomVector<T>(g.numEdges * H, rng, -5, 5);
  for (I64 p = 0; p < g.numEdges; p += 7)
    s[p * H] += T(1e4); // exp would overflow without the maximum
  auto z = randomVector<T>(g.numNodes * H * D, rng);
  std::vector<T> out(g.numNodes * H * D, T(-9));
  emit::cpu::nodeTraversal<3>(g.inCsr(), SoftmaxAggregate<T, H, D>{s.data(), z.data(), out.data()});
  const auto alpha = referenceSoftmax(g, H, s);
  std::vector<long double> want(out.size(), 0.0L);
  for (I64 v = 0; v < g.numNodes; ++v)
    for (I64 p = g.inPtr[v]; p < g.inPtr[v + 1]; ++p)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d)
          want[v * H * D + h * D + d] += alpha[p * H + h] * z[g.sortedSrc[p] * H * D + h * D + d];
  CHECK(maxRelError(out, want) < tolerance<T>() * 20);
  // Isolated nodes (no incoming edge) yield 0.
  for (I64 v = 0; v < g.numNodes / 4; ++v)
    CHECK(out[v * H * D] == T(0));
}

TEMPLATE_TEST_CASE("node traversal over the CSR by source", "[cpu][traversal]", float, double) {
  using T = TestType;
  constexpr int D = 5;
  std::mt19937_64 rng(14);
  const Graph g = randomGraph(150, 2500, 5, rng, /*isolated=*/false);
  auto w = randomVector<T>(g.numEdges, rng);
  auto x = randomVector<T>(g.numNodes * D, rng);
  std::vector<T> out(g.numNodes * D);
  std::vector<std::int64_t> degree(g.numNodes);
  emit::cpu::nodeTraversal<1>(g.outCsr(),
                              WeightedSum<T, D>{w.data(), x.data(), out.data(), degree.data()});
  std::vector<long double> want(out.size(), 0.0L);
  std::vector<std::int64_t> wantDegree(g.numNodes, 0);
  for (I64 p = 0; p < g.numEdges; ++p) {
    ++wantDegree[g.sortedSrc[p]];
    for (int d = 0; d < D; ++d)
      want[g.sortedSrc[p] * D + d] += w[p] * x[g.sortedDst[p] * D + d];
  }
  CHECK(maxRelError(out, want) < tolerance<T>() * 10);
  CHECK(degree == wantDegree);
}

TEMPLATE_TEST_CASE("pair traversal: a unique pair's edges, both ends", "[cpu][traversal]", float,
                   double) {
  using T = TestType;
  constexpr int D = 4;
  std::mt19937_64 rng(15);
  const Graph g = randomGraph(120, 3000, 6, rng);
  auto w = randomVector<T>(g.numEdges, rng);
  auto x = randomVector<T>(g.numNodes * D, rng);
  for (bool srcSide : {true, false}) {
    const std::vector<I64> &inv = srcSide ? g.srcPairInv : g.dstPairInv;
    const I64 U = static_cast<I64>((srcSide ? g.srcPairNode : g.dstPairNode).size());
    std::vector<T> out(U * D, T(-9));
    std::vector<std::int64_t> degree(U, -1);
    emit::cpu::pairTraversal(g.pairCsr(srcSide),
                             WeightedSum<T, D>{w.data(), x.data(), out.data(), degree.data()});
    std::vector<long double> want(U * D, 0.0L);
    std::vector<std::int64_t> wantDegree(U, 0);
    for (I64 p = 0; p < g.numEdges; ++p) {
      ++wantDegree[inv[p]];
      const I64 other = srcSide ? g.sortedDst[p] : g.sortedSrc[p];
      for (int d = 0; d < D; ++d)
        want[inv[p] * D + d] += w[p] * x[other * D + d];
    }
    INFO("source pairs: " << srcSide);
    CHECK(maxRelError(out, want) < tolerance<T>() * 10);
    CHECK(degree == wantDegree);
  }
}

TEMPLATE_TEST_CASE("run sums: edges into unique pairs and pairs into nodes", "[cpu][traversal]",
                   float, double, Bf16) {
  using T = TestType;
  std::mt19937_64 rng(16);
  const Graph g = randomGraph(200, 4000, 5, rng);
  for (I64 width : {1, 7, 64})
    for (bool srcSide : {true, false}) {
      const std::vector<I64> &inv = srcSide ? g.srcPairInv : g.dstPairInv;
      const std::vector<I64> &node = srcSide ? g.srcPairNode : g.dstPairNode;
      const I64 U = static_cast<I64>(node.size());
      const Csr<I64> csr = g.pairCsr(srcSide);
      auto edgeRows = randomVector<T>(g.numEdges * width, rng);
      std::vector<T> pairs(U * width, T(-9));
      runSum<T, I64>(csr, edgeRows.data(), width, pairs.data(), /*toNodes=*/false);
      std::vector<long double> wantPairs(U * width, 0.0L);
      for (I64 p = 0; p < g.numEdges; ++p)
        for (I64 c = 0; c < width; ++c)
          wantPairs[inv[p] * width + c] += edgeRows[p * width + c];
      auto pairRows = randomVector<T>(U * width, rng);
      std::vector<T> nodes(g.numNodes * width, T(-9));
      runSum<T, I64>(csr, pairRows.data(), width, nodes.data(), /*toNodes=*/true);
      std::vector<long double> wantNodes(g.numNodes * width, 0.0L);
      for (I64 u = 0; u < U; ++u)
        for (I64 c = 0; c < width; ++c)
          wantNodes[node[u] * width + c] += pairRows[u * width + c];
      INFO("width " << width << ", source pairs: " << srcSide);
      CHECK(maxRelError(pairs, wantPairs) < sumTolerance<T>(10));
      CHECK(maxRelError(nodes, wantNodes) < sumTolerance<T>(10));
    }
}

TEMPLATE_TEST_CASE("fixed-order dot and sum", "[cpu][traversal]", float, double) {
  using T = TestType;
  std::mt19937_64 rng(17);
  auto a = randomVector<T>(80, rng), b = randomVector<T>(80, rng);
  auto check = [&](auto width) {
    constexpr int D = decltype(width)::value;
    long double dot = 0, sum = 0;
    for (int k = 0; k < D; ++k) {
      dot += static_cast<long double>(a[k]) * b[k];
      sum += a[k];
    }
    INFO("D = " << D);
    CHECK(std::fabs(static_cast<double>(emit::ops::dot<T, D>(a.data(), b.data()) - dot)) <
          tolerance<T>() * D);
    CHECK(std::fabs(static_cast<double>(emit::ops::sum<T, D>(a.data()) - sum)) <
          tolerance<T>() * D);
  };
  check(std::integral_constant<int, 1>{});
  check(std::integral_constant<int, 7>{});
  check(std::integral_constant<int, 16>{});
  check(std::integral_constant<int, 17>{});
  check(std::integral_constant<int, 64>{});
  check(std::integral_constant<int, 79>{});
}

TEST_CASE("traversals are deterministic across thread counts", "[cpu][traversal]") {
  using T = float;
  constexpr int H = 2, D = 8;
  std::mt19937_64 rng(18);
  const Graph g = randomGraph(500, 20000, 6, rng);
  auto s = randomVector<T>(g.numEdges * H, rng, -5, 5);
  auto z = randomVector<T>(g.numNodes * H * D, rng);
  auto w = randomVector<T>(g.numEdges, rng);
  const I64 U = static_cast<I64>(g.srcPairNode.size());
  std::vector<T> firstNodes, firstPairs, firstSums;
  for (int threads : {1, 2, 4}) {
    omp_set_num_threads(threads);
    std::vector<T> nodes(g.numNodes * H * D), pairs(U * D), sums(g.numNodes * H * D);
    std::vector<std::int64_t> degree(U);
    emit::cpu::nodeTraversal<3>(g.inCsr(),
                                SoftmaxAggregate<T, H, D>{s.data(), z.data(), nodes.data()});
    emit::cpu::pairTraversal(g.pairCsr(true),
                             WeightedSum<T, D>{w.data(), z.data(), pairs.data(), degree.data()});
    std::vector<T> pairRows(U * H * D, T(1.5));
    runSum<T, I64>(g.pairCsr(true), pairRows.data(), H * D, sums.data(), true);
    if (firstNodes.empty()) {
      firstNodes = nodes;
      firstPairs = pairs;
      firstSums = sums;
    } else {
      CHECK(std::memcmp(firstNodes.data(), nodes.data(), nodes.size() * sizeof(T)) == 0);
      CHECK(std::memcmp(firstPairs.data(), pairs.data(), pairs.size() * sizeof(T)) == 0);
      CHECK(std::memcmp(firstSums.data(), sums.data(), sums.size() * sizeof(T)) == 0);
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}
