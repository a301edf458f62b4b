//===- functors.h - Functors shared by the CPU and CUDA template checks ---===//
//
// Host-and-device functors of the shapes emitted code instantiates the
// traversal templates with: an attention-logit edge map and a weighted
// source-row message.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEST_TEMPLATES_FUNCTORS_H
#define HECTOR_TEST_TEMPLATES_FUNCTORS_H

#include "hector/common.h"

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
      out[e.eid * heads + h] = acc;
    }
  }
};

/// Message c * x[nbr, :], c = norm[edge] (RGCN's normalised source row).
template <typename T> struct ScaledNeighbourRow {
  const T *x;
  const T *norm;
  std::int64_t width;

  struct Row {
    const T *row;
    T scale;
    HECTOR_HD T operator()(std::int64_t c) const { return scale * row[c]; }
  };
  HECTOR_HD Row operator()(const CsrEdge &e) const { return Row{x + e.nbr * width, norm[e.edge]}; }
};

/// Message z[nbr, :] (the aggregated value of attention).
template <typename T> struct NeighbourRow {
  const T *z;
  std::int64_t width;

  struct Row {
    const T *row;
    HECTOR_HD T operator()(std::int64_t c) const { return row[c]; }
  };
  HECTOR_HD Row operator()(const CsrEdge &e) const { return Row{z + e.nbr * width}; }
};

} // namespace testing
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEST_TEMPLATES_FUNCTORS_H
