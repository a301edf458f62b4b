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

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace hector {
namespace emit {

/// The graph's pointers; `ranges` holds {0, N, 0, E, 0, U_src, 0, U_dst} (int64, on the
/// graph's device) and must outlive the view.
inline GraphView makeGraphView(const Graph &g, const at::Tensor &ranges) {
  auto p = [](const at::Tensor &t) { return t.data_ptr<std::int64_t>(); };
  GraphView v;
  v.numNodes = g.numNodes();
  v.numEdges = g.numEdges();
  v.numRelations = g.numRelations();
  v.numNtypes = g.numNtypes();
  v.numUniqueSrc = g.numUniqueSrc();
  v.numUniqueDst = g.numUniqueDst();
  v.relPtr = p(g.relPtr());
  v.sortedSrc = p(g.sortedSrc());
  v.sortedDst = p(g.sortedDst());
  v.sortedEtype = p(g.sortedEtype());
  v.inPtr = p(g.inPtr());
  v.inEid = p(g.inEid());
  v.inSrc = p(g.inSrc());
  v.outPtr = p(g.outPtr());
  v.outEid = p(g.outEid());
  v.outDst = p(g.outDst());
  v.uniqueSrcPtr = p(g.uniqueSrcPtr());
  v.uniqueSrc = p(g.uniqueSrc());
  v.uniqueSrcInv = p(g.uniqueSrcInv());
  v.uniqueDstPtr = p(g.uniqueDstPtr());
  v.uniqueDst = p(g.uniqueDst());
  v.uniqueDstInv = p(g.uniqueDstInv());
  v.ntype = p(g.ntype());
  v.ntypePtr = p(g.ntypePtr());
  v.ntypePerm = p(g.ntypePerm());
  v.uniqueSrcEdgePtr = p(g.uniqueSrcEdgePtr());
  v.uniqueSrcEdges = p(g.uniqueSrcEdges());
  v.uniqueDstEdgePtr = p(g.uniqueDstEdgePtr());
  v.uniqueSrcNodePtr = p(g.uniqueSrcNodePtr());
  v.uniqueSrcByNode = p(g.uniqueSrcByNode());
  v.uniqueDstNodePtr = p(g.uniqueDstNodePtr());
  v.uniqueDstByNode = p(g.uniqueDstByNode());
  const std::int64_t *r = p(ranges);
  v.nodeRange = r;
  v.edgeRange = r + 2;
  v.uniqueSrcRange = r + 4;
  v.uniqueDstRange = r + 6;
  return v;
}

/// {0, N, 0, E, 0, U_src, 0, U_dst} on the graph's device, made when the graph was (no copy
/// from the host per call, which would stall the host on a CUDA graph).
inline const at::Tensor &graphRanges(const Graph &g) { return g.ranges(); }

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
