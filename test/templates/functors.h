//===- functors.h - Functors shared by the CPU and CUDA template checks ---===//
//
// Host-and-device functors of the shapes emitted code instantiates the
// traversal templates with: an attention-logit edge map, and node-traversal
// functors (a multi-pass softmax aggregation, a weighted sum).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEST_TEMPLATES_FUNCTORS_H
#define HECTOR_TEST_TEMPLATES_FUNCTORS_H

#include "hector/kernel_common.h"
#include "hector/emit/graph_view.h"

#include <cstdint>

namespace hector {
namespace tmpl {
namespace testing {

/// out[eid, h] = <x[src, h, :], w[rel, h, :]> + y[dst, h]: per-edge
/// attention logits from per-relation vectors (the reordered RGAT form).
template <typename T> struct AttentionLogit {
  const T *x;
  const T *w;
  const T *y;
  T *out;
  std::int64_t heads;
  std::int64_t dim;

  HECTOR_HD void operator()(const EdgeRef &e) const {
    for (std::int64_t h = 0; h < heads; ++h) {
      const T *xr = x + (e.src * heads + h) * dim;
      const T *wr = w + (e.rel * heads + h) * dim;
      T acc = y[e.dst * heads + h];
      for (std::int64_t d = 0; d < dim; ++d)
        acc += xr[d] * wr[d];
      out[e.pos * heads + h] = acc;
    }
  }
};

/// A softmax-weighted aggregation in the emitted node-traversal protocol
/// (hector/emit/node_traversal.h): pass 0 the maximum logit, pass 1 the sum of
/// exp(s - max), pass 2 the weighted sum of the neighbours' rows; per head.
template <typename T, int H, int D> struct SoftmaxAggregate {
  const T *logits; // [E, H] by position
  const T *z;      // [N, H * D]
  T *out;          // [N, H * D]
  struct State {
    T mx[H], sum[H], acc[H * D];
  };
  HECTOR_HD void begin(State &s, std::int64_t) const {
    for (int h = 0; h < H; ++h) {
      s.mx[h] = ReduceOp<Reduce::kMax, T>::identity();
      s.sum[h] = T(0);
    }
    for (int i = 0; i < H * D; ++i)
      s.acc[i] = T(0);
  }
  HECTOR_HD void edge(State &s, int pass, const CsrEdge &e) const {
    const T *l = logits + e.edge * H;
    for (int h = 0; h < H; ++h) {
      if (pass == 0)
        s.mx[h] = l[h] > s.mx[h] ? l[h] : s.mx[h];
      else if (pass == 1)
        s.sum[h] += emit::ops::exp<T>(l[h] - s.mx[h]);
      else
        for (int d = 0; d < D; ++d)
          s.acc[h * D + d] +=
              emit::ops::exp<T>(l[h] - s.mx[h]) / s.sum[h] * z[e.nbr * H * D + h * D + d];
    }
  }
  /// Adds the accumulators of pass `pass` of another lane's state (CUDA traversals).
  HECTOR_HD void combine(State &s, const State &o, int pass) const {
    for (int h = 0; h < H; ++h) {
      if (pass == 0)
        s.mx[h] = o.mx[h] > s.mx[h] ? o.mx[h] : s.mx[h];
      else if (pass == 1)
        s.sum[h] += o.sum[h];
    }
    if (pass == 2)
      for (int i = 0; i < H * D; ++i)
        s.acc[i] += o.acc[i];
  }
  HECTOR_HD void endPass(State &, int, std::int64_t, std::int64_t) const {}
  HECTOR_HD void finish(const State &s, std::int64_t v, std::int64_t) const {
    for (int i = 0; i < H * D; ++i)
      out[v * H * D + i] = s.acc[i];
  }
};

/// The sum over a node's (or a unique pair's) edges of w[edge] * x[nbr], and
/// the degree, in the same protocol.
template <typename T, int D> struct WeightedSum {
  const T *w, *x;
  T *out;
  std::int64_t *degree;
  struct State {
    T acc[D];
  };
  HECTOR_HD void begin(State &s, std::int64_t) const {
    for (int d = 0; d < D; ++d)
      s.acc[d] = T(0);
  }
  HECTOR_HD void edge(State &s, int, const CsrEdge &e) const {
    for (int d = 0; d < D; ++d)
      s.acc[d] += w[e.edge] * x[e.nbr * D + d];
  }
  HECTOR_HD void combine(State &s, const State &o, int) const {
    for (int d = 0; d < D; ++d)
      s.acc[d] += o.acc[d];
  }
  HECTOR_HD void endPass(State &, int, std::int64_t, std::int64_t) const {}
  HECTOR_HD void finish(const State &s, std::int64_t row, std::int64_t deg) const {
    for (int d = 0; d < D; ++d)
      out[row * D + d] = s.acc[d];
    degree[row] = deg;
  }
};

} // namespace testing
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEST_TEMPLATES_FUNCTORS_H
