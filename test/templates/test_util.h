//===- test_util.h - Shared helpers of the kernel-template tests ----------===//
//
// Random problems (segments, gathers, graphs) and straightforward reference
// implementations, used by the Catch2 CPU tests and by the CUDA check program.
// No test framework here.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEST_TEMPLATES_TEST_UTIL_H
#define HECTOR_TEST_TEMPLATES_TEST_UTIL_H

#include "hector/kernel_common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace hector {
namespace tmpl {
namespace testing {

using I64 = std::int64_t;

/// A bfloat16 element for the template tests (the templates take any class type that converts
/// to and from float; the emitted code uses c10::BFloat16): the upper 16 bits of a float,
/// rounded to nearest even.
struct Bf16 {
  std::uint16_t bits = 0;
  Bf16() = default;
  Bf16(float f) { // NOLINT(google-explicit-constructor): converts like c10::BFloat16
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    bits = static_cast<std::uint16_t>(u >> 16);
  }
  operator float() const { // NOLINT(google-explicit-constructor)
    const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
};

} // namespace testing
} // namespace tmpl
} // namespace hector

/// Bf16 says it is a bfloat16 (8 significant bits, float's exponents), as c10::BFloat16 does,
/// so that the CPU templates round its rows with their vectorised bit operations
/// (cpu::detail::isBfloat16Bits), the path of the emitted code.
namespace std {
template <> class numeric_limits<hector::tmpl::testing::Bf16> {
public:
  static constexpr bool is_specialized = true;
  static constexpr int digits = 8;
  static constexpr int max_exponent = 128;
};
} // namespace std

namespace hector {
namespace tmpl {
namespace testing {

/// The tolerance of a result in T relative to an exact reference: float and double sums;
/// bfloat16 results are float sums rounded once to 8 significant bits (2^-9 relative).
template <typename T> double tolerance() {
  return sizeof(T) == 2 ? 1.0 / 256 : sizeof(T) == 4 ? 2e-5 : 1e-12;
}

/// The tolerance of a sum of `terms`-proportional length: float and double errors grow with it;
/// a bfloat16 result, summed in float, is rounded once whatever its length (a sum kept in
/// bfloat16 would exceed this).
template <typename T> double sumTolerance(double terms) {
  return sizeof(T) == 2 ? tolerance<T>() : tolerance<T>() * terms;
}

/// Segment offsets from a list of segment sizes.
inline std::vector<I64> offsetsFromSizes(const std::vector<I64> &sizes) {
  std::vector<I64> off(sizes.size() + 1, 0);
  for (std::size_t s = 0; s < sizes.size(); ++s)
    off[s + 1] = off[s] + sizes[s];
  return off;
}

template <typename T> std::vector<T> randomVector(std::size_t n, std::mt19937_64 &rng,
                                                  double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = static_cast<T>(dist(rng));
  return v;
}

inline std::vector<I64> randomIndex(std::size_t n, I64 range, std::mt19937_64 &rng) {
  std::uniform_int_distribution<I64> dist(0, range - 1);
  std::vector<I64> v(n);
  for (auto &x : v)
    x = dist(rng);
  return v;
}

/// An output row for every row of the segments `off`, injective within each segment (a node's
/// unique pairs of one relation) and shared across them: each segment's rows go to distinct
/// rows of a shuffled [0, outRows) (outRows at least the largest segment).
inline std::vector<I64> injectivePerSegment(const std::vector<I64> &off, I64 outRows,
                                            std::mt19937_64 &rng) {
  std::vector<I64> idx(static_cast<std::size_t>(off.back())),
      perm(static_cast<std::size_t>(outRows));
  for (std::size_t s = 0; s + 1 < off.size(); ++s) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (I64 r = off[s]; r < off[s + 1]; ++r)
      idx[r] = perm[r - off[s]];
  }
  return idx;
}

/// Reference segmented GEMM in long double: returns the row-aligned results
/// [rows, heads * N] (before any scatter); `absSums`, when given, receives sum_k |a_k b_k| of
/// every result, the scale of its rounding error.
template <typename T, typename TB, typename TC>
std::vector<long double> referenceGemmRows(const GemmProblem<T, I64, TB, TC> &p, bool transB,
                                           std::vector<long double> *absSums = nullptr) {
  const I64 rows = p.segOffsets[p.numSegments] - p.segOffsets[0];
  const I64 width = p.heads * p.N;
  std::vector<long double> out(rows * width, 0.0L);
  if (absSums)
    absSums->assign(out.size(), 0.0L);
  for (I64 s = 0; s < p.numSegments; ++s)
    for (I64 row = p.segOffsets[s]; row < p.segOffsets[s + 1]; ++row) {
      const I64 in = p.gather ? p.gather[row] : row;
      for (I64 h = 0; h < p.heads; ++h)
        for (I64 n = 0; n < p.N; ++n) {
          long double acc = 0, abs = 0;
          for (I64 k = 0; k < p.K; ++k) {
            const TB b = transB ? p.B[s * p.strideB + h * p.K * p.N + n * p.K + k]
                                : p.B[s * p.strideB + h * p.K * p.N + k * p.N + n];
            const long double term = static_cast<long double>(p.A[in * p.lda + h * p.K + k]) * b;
            acc += term;
            abs += std::fabs(term);
          }
          const I64 at = (row - p.segOffsets[0]) * width + h * p.N + n;
          out[at] = acc;
          if (absSums)
            (*absSums)[at] = abs;
        }
    }
  return out;
}

/// Reference weight gradient in long double: [numSegments, heads, K, N]
/// (always [K, N] per head, whatever the stored layout); `absSums` as referenceGemmRows'.
template <typename T, typename TG, typename TD>
std::vector<long double> referenceWeightGrad(const WeightGradProblem<T, I64, TG, TD> &p,
                                             std::vector<long double> *absSums = nullptr) {
  const I64 KN = p.K * p.N;
  std::vector<long double> out(p.numSegments * p.heads * KN, 0.0L);
  if (absSums)
    absSums->assign(out.size(), 0.0L);
  for (I64 s = 0; s < p.numSegments; ++s)
    for (I64 row = p.segOffsets[s]; row < p.segOffsets[s + 1]; ++row) {
      const I64 ia = p.gatherA ? p.gatherA[row] : row;
      const I64 ic = p.gatherC ? p.gatherC[row] : row;
      for (I64 h = 0; h < p.heads; ++h)
        for (I64 k = 0; k < p.K; ++k)
          for (I64 n = 0; n < p.N; ++n) {
            const long double term = static_cast<long double>(p.A[ia * p.lda + h * p.K + k]) *
                                     p.dC[ic * p.ldc + h * p.N + n];
            out[(s * p.heads + h) * KN + k * p.N + n] += term;
            if (absSums)
              (*absSums)[(s * p.heads + h) * KN + k * p.N + n] += std::fabs(term);
          }
    }
  return out;
}

/// A random multigraph in the layout of hector::Graph, built here by plain sorts (the oracle
/// of the runtime's counting sorts lives in the Python tests): edges in internal order (by
/// destination, then relation, then user edge id), the CSR by source (by relation, then
/// position within a node) and the unique pairs of both ends, numbered by relation, then node.
/// Node `numNodes - 1` (and every node not drawn) may be isolated; when `isolated` is set,
/// nodes [0, numNodes/4) receive no edges at all; the last relation has no edge.
struct Graph {
  I64 numNodes = 0, numEdges = 0, numRelations = 0;
  std::vector<I64> src, dst, rel;    // by user edge id
  std::vector<I64> perm;             // position -> user edge id
  std::vector<I64> inPtr, sortedSrc, sortedDst, sortedRel; // by position
  std::vector<I64> outPtr, outPos, outDst;                 // CSR by source (outDst: by CSR entry)
  /// Unique pairs of each end: node of every pair, relation offsets, every position's pair.
  std::vector<I64> srcPairNode, srcPairPtr, srcPairInv, dstPairNode, dstPairPtr, dstPairInv;
  /// The pairs as runs of each CSR, in CSR order: entry offsets and every run's pair.
  std::vector<I64> srcRunPtr, srcRun, dstRunPtr, dstRun;

  EdgeRows<I64> edges() const {
    EdgeRows<I64> r;
    r.numRows = numEdges;
    r.numGroups = numNodes;
    r.groupPtr = inPtr.data();
    r.src = sortedSrc.data();
    r.rel = sortedRel.data();
    r.eid = perm.data();
    return r;
  }
  EdgeRows<I64> pairs(bool srcSide) const {
    EdgeRows<I64> r;
    r.numRows = static_cast<I64>((srcSide ? srcPairNode : dstPairNode).size());
    r.numGroups = numRelations;
    r.groupPtr = (srcSide ? srcPairPtr : dstPairPtr).data();
    r.groupIsNode = false;
    r.node = (srcSide ? srcPairNode : dstPairNode).data();
    return r;
  }
  Csr<I64> inCsr() const { return {numNodes, numEdges, inPtr.data(), nullptr, sortedSrc.data()}; }
  Csr<I64> outCsr() const {
    return {numNodes, numEdges, outPtr.data(), outPos.data(), outDst.data()};
  }
  /// The CSR of one end with its runs (the unique pairs of that end).
  Csr<I64> pairCsr(bool srcSide) const {
    Csr<I64> c = srcSide ? outCsr() : inCsr();
    const std::vector<I64> &run = srcSide ? srcRun : dstRun;
    c.numRuns = static_cast<I64>(run.size());
    c.runPtr = (srcSide ? srcRunPtr : dstRunPtr).data();
    c.runPair = run.data();
    return c;
  }
};

/// The runs of a CSR (entries grouped by relation within each node), in CSR order.
inline void csrRuns(const Graph &g, const Csr<I64> &csr, const std::vector<I64> &inv,
                    std::vector<I64> &runPtr, std::vector<I64> &run) {
  runPtr.clear();
  run.clear();
  for (I64 v = 0; v < g.numNodes; ++v)
    for (I64 j = csr.rowPtr[v]; j < csr.rowPtr[v + 1]; ++j)
      if (j == csr.rowPtr[v] || g.sortedRel[csr.edgeAt(j)] != g.sortedRel[csr.edgeAt(j - 1)]) {
        runPtr.push_back(j);
        run.push_back(inv[csr.edgeAt(j)]);
      }
  runPtr.push_back(g.numEdges);
}

/// The unique (node, relation) pairs of a CSR's entries: numbered by relation, then node.
inline void uniquePairs(const Graph &g, const std::vector<I64> &nodeOf, std::vector<I64> &node,
                        std::vector<I64> &ptr, std::vector<I64> &inv) {
  std::vector<std::pair<I64, I64>> keys; // (relation, node) per position
  for (I64 p = 0; p < g.numEdges; ++p)
    keys.push_back({g.sortedRel[p], nodeOf[p]});
  std::vector<std::pair<I64, I64>> unique = keys;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  node.clear();
  ptr.assign(g.numRelations + 1, 0);
  for (const auto &k : unique) {
    node.push_back(k.second);
    ++ptr[k.first + 1];
  }
  for (I64 r = 0; r < g.numRelations; ++r)
    ptr[r + 1] += ptr[r];
  inv.resize(g.numEdges);
  for (I64 p = 0; p < g.numEdges; ++p)
    inv[p] = std::lower_bound(unique.begin(), unique.end(), keys[p]) - unique.begin();
}

inline Graph randomGraph(I64 numNodes, I64 numEdges, I64 numRelations, std::mt19937_64 &rng,
                         bool isolated = true) {
  Graph g;
  g.numNodes = numNodes;
  g.numEdges = numEdges;
  g.numRelations = numRelations;
  const I64 lo = isolated ? numNodes / 4 : 0;
  std::uniform_int_distribution<I64> any(0, numNodes - 1), target(lo, numNodes - 1),
      relDist(0, std::max<I64>(0, numRelations - 2)); // the last relation stays empty
  for (I64 e = 0; e < numEdges; ++e) {
    g.src.push_back(any(rng));
    g.dst.push_back(target(rng));
    g.rel.push_back(numRelations > 1 ? relDist(rng) : 0);
  }
  g.perm.resize(numEdges);
  std::iota(g.perm.begin(), g.perm.end(), 0);
  std::stable_sort(g.perm.begin(), g.perm.end(), [&](I64 a, I64 b) {
    return std::make_pair(g.dst[a], g.rel[a]) < std::make_pair(g.dst[b], g.rel[b]);
  });
  for (I64 p = 0; p < numEdges; ++p) {
    g.sortedSrc.push_back(g.src[g.perm[p]]);
    g.sortedDst.push_back(g.dst[g.perm[p]]);
    g.sortedRel.push_back(g.rel[g.perm[p]]);
  }
  auto pointer = [&](const std::vector<I64> &keys) {
    std::vector<I64> ptr(numNodes + 1, 0);
    for (I64 k : keys)
      ++ptr[k + 1];
    for (I64 v = 0; v < numNodes; ++v)
      ptr[v + 1] += ptr[v];
    return ptr;
  };
  g.inPtr = pointer(g.sortedDst);
  g.outPtr = pointer(g.sortedSrc);
  g.outPos.resize(numEdges);
  std::iota(g.outPos.begin(), g.outPos.end(), 0);
  std::stable_sort(g.outPos.begin(), g.outPos.end(), [&](I64 a, I64 b) {
    return std::make_pair(g.sortedSrc[a], g.sortedRel[a]) <
           std::make_pair(g.sortedSrc[b], g.sortedRel[b]);
  });
  for (I64 p : g.outPos)
    g.outDst.push_back(g.sortedDst[p]);
  uniquePairs(g, g.sortedSrc, g.srcPairNode, g.srcPairPtr, g.srcPairInv);
  uniquePairs(g, g.sortedDst, g.dstPairNode, g.dstPairPtr, g.dstPairInv);
  csrRuns(g, g.outCsr(), g.srcPairInv, g.srcRunPtr, g.srcRun);
  csrRuns(g, g.inCsr(), g.dstPairInv, g.dstRunPtr, g.dstRun);
  return g;
}

/// Two-pass reference edge softmax in long double ([E, heads] by position).
template <typename T>
std::vector<long double> referenceSoftmax(const Graph &g, I64 heads, const std::vector<T> &s) {
  std::vector<long double> alpha(g.numEdges * heads, 0.0L);
  for (I64 v = 0; v < g.numNodes; ++v)
    for (I64 h = 0; h < heads; ++h) {
      long double mx = -INFINITY, sum = 0;
      for (I64 p = g.inPtr[v]; p < g.inPtr[v + 1]; ++p)
        mx = std::max<long double>(mx, s[p * heads + h]);
      for (I64 p = g.inPtr[v]; p < g.inPtr[v + 1]; ++p)
        sum += std::exp(static_cast<long double>(s[p * heads + h]) - mx);
      for (I64 p = g.inPtr[v]; p < g.inPtr[v + 1]; ++p)
        alpha[p * heads + h] = std::exp(static_cast<long double>(s[p * heads + h]) - mx) / sum;
    }
  return alpha;
}

/// Largest |got - want| / max(|want|, floor) over two arrays.
template <typename A, typename B>
double maxRelError(const A &got, const B &want, double floor = 1.0) {
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double w = static_cast<double>(want[i]);
    const double d = std::fabs(static_cast<double>(got[i]) - w);
    worst = std::max(worst, d / std::max(std::fabs(w), floor));
  }
  return worst;
}

} // namespace testing
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEST_TEMPLATES_TEST_UTIL_H
