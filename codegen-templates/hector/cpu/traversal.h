//===- hector/cpu/traversal.h - CPU traversal template --------------------===//
//
// The traversal template on the CPU: an edge-parallel map over relation-sorted
// edges, and node-parallel reductions over a CSR (sum / mean / max, edge
// softmax and its backward, fused softmax-weighted aggregation). A node's
// edges are always visited by one thread, in CSR order, so every reduction is
// deterministic and race-free.
//
// Functor conventions (emitted code passes structs or lambdas):
//   edge map      f(const EdgeRef &)                          -> void
//   node reduce   f(const CsrEdge &) -> row accessor; row(c)  -> T
// A row accessor is any callable taking a column index; returning one from
// the per-edge call lets the functor compute row pointers once per edge and
// keeps the per-column loop contiguous.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CPU_TRAVERSAL_H
#define HECTOR_TEMPLATES_CPU_TRAVERSAL_H

#include "hector/common.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hector {
namespace tmpl {
namespace cpu {

/// Edges handled by one task of `edgeMap`.
constexpr std::int64_t kEdgeChunk = 2048;

/// Calls `f(EdgeRef)` once for every relation-sorted edge, in parallel over
/// chunks of consecutive edges. Each chunk finds its first edge's relation by
/// binary search in `relOffsets` and walks on.
template <typename Index, typename F> void edgeMap(const SortedEdges<Index> &g, F &&f) {
  const std::int64_t numChunks = ceilDiv<std::int64_t>(g.numEdges, kEdgeChunk);
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t chunk = 0; chunk < numChunks; ++chunk) {
    const std::int64_t begin = chunk * kEdgeChunk;
    const std::int64_t end = std::min<std::int64_t>(g.numEdges, begin + kEdgeChunk);
    std::int64_t rel =
        std::upper_bound(g.relOffsets, g.relOffsets + g.numRelations + 1, Index(begin)) -
        g.relOffsets - 1;
    for (std::int64_t pos = begin; pos < end; ++pos) {
      while (pos >= static_cast<std::int64_t>(g.relOffsets[rel + 1]))
        ++rel;
      EdgeRef e;
      e.pos = pos;
      e.eid = g.eid ? static_cast<std::int64_t>(g.eid[pos]) : pos;
      e.src = g.src[pos];
      e.dst = g.dst[pos];
      e.rel = rel;
      f(e);
    }
  }
}

/// Node-parallel reduction over a CSR: for every node v and column c < width,
///
///     out[v * ldo + c] (=|+=) R_{entries j of v} f(CsrEdge{edge[j], nbr[j], v})(c)
///
/// with sum, mean (sum / degree) or max; a node without entries yields 0.
/// Entries are combined in CSR order into a thread-local row.
template <Reduce R, Assign A, typename T, typename Index, typename F>
void nodeReduce(const Csr<Index> &g, std::int64_t width, T *out, std::int64_t ldo, F &&f) {
  using Op = ReduceOp<R, T>;
#pragma omp parallel
  {
    std::vector<T> accBuf(width);
    T *HECTOR_RESTRICT acc = accBuf.data();
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t v = 0; v < g.numNodes; ++v) {
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      for (std::int64_t c = 0; c < width; ++c)
        acc[c] = Op::identity();
      for (std::int64_t j = begin; j < end; ++j) {
        const auto row = f(CsrEdge{static_cast<std::int64_t>(g.edge[j]),
                                   static_cast<std::int64_t>(g.nbr[j]), v});
#pragma omp simd
        for (std::int64_t c = 0; c < width; ++c)
          acc[c] = Op::combine(acc[c], row(c));
      }
      T *HECTOR_RESTRICT o = out + v * ldo;
      for (std::int64_t c = 0; c < width; ++c) {
        const T r = Op::finish(acc[c], end - begin);
        if constexpr (A == Assign::kAdd)
          o[c] += r;
        else
          o[c] = r;
      }
    }
  }
}

/// Numerically stable edge softmax over the entries of every CSR node, per
/// head: alpha[e, h] = exp(s[e, h] - m_h) / sum_j exp(s[j, h] - m_h), m_h the
/// node's maximum. `logits` and `alpha` are [E, heads] tables indexed by the
/// CSR's edge rows; a node without entries writes nothing.
template <typename T, typename Index>
void edgeSoftmax(const Csr<Index> &g, std::int64_t heads, const T *logits, T *alpha) {
#pragma omp parallel
  {
    std::vector<T> buf(2 * heads);
    T *HECTOR_RESTRICT mx = buf.data();
    T *HECTOR_RESTRICT sum = buf.data() + heads;
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t v = 0; v < g.numNodes; ++v) {
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      if (begin == end)
        continue;
      for (std::int64_t h = 0; h < heads; ++h) {
        mx[h] = logits[static_cast<std::int64_t>(g.edge[begin]) * heads + h];
        sum[h] = T(0);
      }
      for (std::int64_t j = begin + 1; j < end; ++j) {
        const T *s = logits + static_cast<std::int64_t>(g.edge[j]) * heads;
        for (std::int64_t h = 0; h < heads; ++h)
          mx[h] = std::max(mx[h], s[h]);
      }
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t e = g.edge[j];
        for (std::int64_t h = 0; h < heads; ++h) {
          const T x = std::exp(logits[e * heads + h] - mx[h]);
          alpha[e * heads + h] = x;
          sum[h] += x;
        }
      }
      for (std::int64_t h = 0; h < heads; ++h)
        sum[h] = T(1) / sum[h];
      for (std::int64_t j = begin; j < end; ++j) {
        T *a = alpha + static_cast<std::int64_t>(g.edge[j]) * heads;
        for (std::int64_t h = 0; h < heads; ++h)
          a[h] *= sum[h];
      }
    }
  }
}

/// Backward of `edgeSoftmax`: dS[e, h] = alpha[e, h] * (dAlpha[e, h] -
/// sum_{j of the node} alpha[j, h] * dAlpha[j, h]), overwriting (or adding to,
/// with Assign::kAdd) `dlogits`. Same layout as `edgeSoftmax`.
template <typename T, Assign A = Assign::kStore, typename Index>
void edgeSoftmaxBackward(const Csr<Index> &g, std::int64_t heads, const T *alpha,
                         const T *dalpha, T *dlogits) {
#pragma omp parallel
  {
    std::vector<T> dotBuf(heads);
    T *HECTOR_RESTRICT dot = dotBuf.data();
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t v = 0; v < g.numNodes; ++v) {
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      std::fill(dot, dot + heads, T(0));
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t e = g.edge[j];
        for (std::int64_t h = 0; h < heads; ++h)
          dot[h] += alpha[e * heads + h] * dalpha[e * heads + h];
      }
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t e = g.edge[j];
        for (std::int64_t h = 0; h < heads; ++h) {
          const T d = alpha[e * heads + h] * (dalpha[e * heads + h] - dot[h]);
          if constexpr (A == Assign::kAdd)
            dlogits[e * heads + h] += d;
          else
            dlogits[e * heads + h] = d;
        }
      }
    }
  }
}

/// Fused softmax-weighted aggregation, one pass over each node's entries:
///
///     out[v, h, c] (=|+=) sum_e softmax_e(logits[., h]) * msg(e)(h * width + c)
///
/// with an online softmax (running maximum and rescaled sums; exact up to
/// rounding). `logits` is [E, heads] by edge row; `msg(CsrEdge)` returns a
/// row accessor over heads * width columns. A node without entries yields 0.
/// When `alphaOut` is given, the normalised weights are also written ([E,
/// heads], second pass over the entries).
template <typename T, Assign A = Assign::kStore, typename Index, typename F>
void softmaxAggregate(const Csr<Index> &g, std::int64_t heads, std::int64_t width,
                      const T *logits, F &&msg, T *out, std::int64_t ldo,
                      T *alphaOut = nullptr) {
  const std::int64_t cols = heads * width;
#pragma omp parallel
  {
    std::vector<T> buf(cols + 2 * heads);
    T *HECTOR_RESTRICT acc = buf.data();
    T *HECTOR_RESTRICT mx = buf.data() + cols;
    T *HECTOR_RESTRICT sum = mx + heads;
#pragma omp for schedule(dynamic, 64)
    for (std::int64_t v = 0; v < g.numNodes; ++v) {
      const std::int64_t begin = g.rowPtr[v], end = g.rowPtr[v + 1];
      std::fill(acc, acc + cols, T(0));
      for (std::int64_t j = begin; j < end; ++j) {
        const std::int64_t e = g.edge[j];
        const auto row = msg(CsrEdge{e, static_cast<std::int64_t>(g.nbr[j]), v});
        for (std::int64_t h = 0; h < heads; ++h) {
          const T x = logits[e * heads + h];
          T w, scale;
          if (j == begin) {
            mx[h] = x;
            sum[h] = T(1);
            w = T(1);
            scale = T(0);
          } else if (x > mx[h]) {
            scale = std::exp(mx[h] - x);
            mx[h] = x;
            sum[h] = sum[h] * scale + T(1);
            w = T(1);
          } else {
            scale = T(1);
            w = std::exp(x - mx[h]);
            sum[h] += w;
          }
          T *HECTOR_RESTRICT a = acc + h * width;
          const std::int64_t off = h * width;
#pragma omp simd
          for (std::int64_t c = 0; c < width; ++c)
            a[c] = a[c] * scale + w * row(off + c);
        }
      }
      T *HECTOR_RESTRICT o = out + v * ldo;
      for (std::int64_t h = 0; h < heads && begin < end; ++h) {
        const T inv = T(1) / sum[h];
        for (std::int64_t c = 0; c < width; ++c)
          acc[h * width + c] *= inv;
      }
      for (std::int64_t c = 0; c < cols; ++c) {
        if constexpr (A == Assign::kAdd)
          o[c] += acc[c];
        else
          o[c] = acc[c];
      }
      if (alphaOut) {
        for (std::int64_t j = begin; j < end; ++j) {
          const std::int64_t e = g.edge[j];
          for (std::int64_t h = 0; h < heads; ++h)
            alphaOut[e * heads + h] = std::exp(logits[e * heads + h] - mx[h]) / sum[h];
        }
      }
    }
  }
}

/// Segmented row sum: for every segment s and column c < width,
///
///     out[s * width + c] = sum_{j in [segOffsets[s], segOffsets[s+1])} in[row(j) * width + c]
///
/// with row(j) = rows[j], or j when `rows` is null (contiguous segments). An empty segment
/// yields 0. Sums edges into their unique (node, relation) pairs and pairs into their nodes;
/// each segment is summed by one thread in order, so the result is deterministic.
template <typename T, typename Index>
void segmentedRowSum(std::int64_t numSegments, const Index *segOffsets, const Index *rows,
                     const T *in, std::int64_t width, T *out) {
#pragma omp parallel for schedule(dynamic, 256)
  for (std::int64_t s = 0; s < numSegments; ++s) {
    T *HECTOR_RESTRICT o = out + s * width;
    std::fill(o, o + width, T(0));
    for (std::int64_t j = segOffsets[s]; j < segOffsets[s + 1]; ++j) {
      const std::int64_t r = rows ? static_cast<std::int64_t>(rows[j]) : j;
      const T *HECTOR_RESTRICT x = in + r * width;
#pragma omp simd
      for (std::int64_t c = 0; c < width; ++c)
        o[c] += x[c];
    }
  }
}

} // namespace cpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CPU_TRAVERSAL_H
