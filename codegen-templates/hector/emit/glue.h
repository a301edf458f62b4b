//===- hector/emit/glue.h - LibTorch side of an emitted layer -------------===//
//
// What every emitted model.cpp needs around its kernels: the GraphView of a hector::Graph,
// argument validation with messages naming the bad tensor, and CUDA error checks.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_GLUE_H
#define HECTOR_EMIT_GLUE_H

#include "hector/emit/graph_view.h"
#include "hector/graph.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace hector {
namespace emit {

/// The graph's pointers for the kernels of a layer, with indices of type I (the graph's index
/// dtype); a structure not built is null. Throws c10::ValueError naming `who` when one of
/// `needed` (the layer's structures) is missing or was written in place.
template <typename I>
GraphView<I> makeGraphView(const Graph &g, graph_schema::GraphStructureMask needed,
                           const char *who) {
  TORCH_CHECK(g.indexDtype() == c10::CppTypeToScalarType<I>::value, who,
              ": the graph's index dtype changed (internal error)");
  const graph_schema::GraphStructureMask built = g.built();
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    TORCH_CHECK_VALUE(!(needed >> k & 1) || (built >> k & 1), who, ": the graph lacks ",
                      graph_schema::graphStructures()[k].name,
                      " (graphs are prepared by hector::applyLayer / hector.layer_apply)");
  g.checkUnchanged(needed);
  const std::vector<at::Tensor> t = g.tensors();
  GraphView<I> v;
  v.numNodes = g.numNodes();
  v.numEdges = g.numEdges();
  v.numRelations = g.numRelations();
  v.numNtypes = g.numNtypes();
  v.numUniqueSrc = std::max<std::int64_t>(g.sizes()[5], 0);
  v.numUniqueDst = g.numUniqueDst();
  int k = 0;
#define HECTOR_GRAPH_VIEW_SET(name, field, group, length)                                      \
  v.field = (built >> k & 1) ? t[k].template data_ptr<I>() : nullptr;                          \
  ++k;
  HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_VIEW_SET)
#undef HECTOR_GRAPH_VIEW_SET
  return v;
}

/// Formats a shape as `[N=7, 16]` (leading dimension labelled) or `[16]`.
inline std::string formatShape(const std::string &label, const std::vector<std::int64_t> &dims) {
  std::ostringstream os;
  os << '[';
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i)
      os << ", ";
    if (i == 0 && !label.empty())
      os << label << '=';
    os << dims[i];
  }
  os << ']';
  return os.str();
}

/// Checks one argument tensor: dtype (float32 or float64, equal to `dtype`), device and shape
/// (`label` names the leading dimension, empty for none). Throws TypeError / ValueError naming
/// `what` (e.g. "hector_rgcn.forward: weight 'W'").
inline void checkArgument(const at::Tensor &t, const std::string &what, at::ScalarType dtype,
                          at::Device device, const std::string &label,
                          const std::vector<std::int64_t> &dims) {
  TORCH_CHECK_TYPE(t.defined(), what, " is undefined");
  TORCH_CHECK_TYPE(t.scalar_type() == dtype, what, " must have dtype ", dtype,
                   " like the first input, got ", t.scalar_type());
  TORCH_CHECK_VALUE(t.device() == device, what, " must be on ", device,
                    " like the first input, got ", t.device());
  std::vector<std::int64_t> actual(t.sizes().begin(), t.sizes().end());
  TORCH_CHECK_VALUE(actual == dims, what, " must have shape ", formatShape(label, dims),
                    ", got ", formatShape("", actual));
}

/// `t` viewed as rows of `inner` (a leading dimension of t.numel() / prod(inner) rows).
inline at::Tensor rowView(const at::Tensor &t, std::vector<std::int64_t> inner) {
  std::int64_t m = 1;
  for (std::int64_t d : inner)
    m *= d;
  inner.insert(inner.begin(), m == 0 ? 0 : t.numel() / m);
  return t.reshape(inner);
}

/// `t` (rows of `m` elements: one row, or `rows` rows) as [rows, n], every element repeated
/// n / m times: the dialect's broadcasting of a single row and of a shape prefix.
inline at::Tensor broadcastRows(const at::Tensor &t, std::int64_t m, std::int64_t rows,
                                std::int64_t n) {
  at::Tensor v = rowView(t, {m});
  if (v.size(0) != rows)
    v = v.expand({rows, m});
  if (n != m)
    v = v.unsqueeze(2).expand({rows, m, n / m}).reshape({rows, n});
  return v;
}

/// Throws a RuntimeError naming the kernel when a CUDA launch failed.
inline void checkLaunch(const char *error, const char *kernel) {
  TORCH_CHECK(error == nullptr, "hector: CUDA kernel ", kernel, " failed: ", error);
}

} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_GLUE_H
