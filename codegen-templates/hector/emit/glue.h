//===- hector/emit/glue.h - LibTorch side of an emitted layer -------------===//
//
// What every emitted model.cpp needs around its kernels: the GraphView of a hector::Graph,
// the allocation of kernel results (on the CPU from the runtime's tensor pool), argument
// validation with messages naming the bad tensor, CUDA error checks, the glue ops that are
// fixed ATen code (the gradients of a max aggregation and of src_row), and the
// registration of a library's operator namespaces. Emitted code only binds their parameters.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_GLUE_H
#define HECTOR_EMIT_GLUE_H

#include "hector/emit/graph_view.h"
#include "hector/graph.h"
#include "hector/tensor_pool.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <limits>
#include <memory>
#include <optional>
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

/// Whether a float32 call on CUDA may compute its GEMMs on TF32 tensor cores: PyTorch's own
/// switch for matrix products (torch.backends.cuda.matmul.allow_tf32, or
/// torch.set_float32_matmul_precision("high" or "medium")), read at every call.
inline bool tf32Matmul() { return at::globalContext().allowTF32CuBLAS(); }

/// True for the 16-bit floating-point dtypes (bfloat16, float16).
inline bool isHalfPrecision(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

/// The 16-bit dtype of a call (bfloat16 or float16), or std::nullopt when no defined tensor
/// among `inputs` and `weights` has one. In a 16-bit call every other defined tensor must be
/// float32 (an RGCN norm, an activation a backward layer saved); anything else (float64, the
/// other 16-bit dtype, an integer dtype) is a TypeError naming the tensor, before any kernel
/// runs. `inputNames` / `weightNames` name the tensors as `op` reports them.
inline std::optional<at::ScalarType>
halfPrecisionCall(at::TensorList inputs, at::TensorList weights, const std::string &op,
                  const std::vector<std::string> &inputNames,
                  const std::vector<std::string> &weightNames) {
  std::optional<at::ScalarType> half;
  std::string first;
  auto scan = [&](at::TensorList tensors, const std::vector<std::string> &names, const char *kind) {
    for (std::size_t i = 0; i < tensors.size() && !half; ++i)
      if (tensors[i].defined() && isHalfPrecision(tensors[i].scalar_type())) {
        half = tensors[i].scalar_type();
        first = std::string(kind) + " '" + (i < names.size() ? names[i] : "?") + "'";
      }
  };
  scan(inputs, inputNames, "input");
  scan(weights, weightNames, "weight");
  if (!half)
    return std::nullopt;
  auto check = [&](at::TensorList tensors, const std::vector<std::string> &names,
                   const char *kind) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i].defined())
        continue;
      const at::ScalarType t = tensors[i].scalar_type();
      TORCH_CHECK_TYPE(t == *half || t == at::kFloat, op, ".forward: ", kind, " '",
                       i < names.size() ? names[i] : "?", "' has dtype ", t, " but ", first, " is ",
                       *half, ": a ", *half, " call takes ", *half,
                       " tensors and float32 ones (computed in float32), nothing else");
    }
  };
  check(inputs, inputNames, "input");
  check(weights, weightNames, "weight");
  return half;
}

/// The dtype of the gradient of `t` in a 16-bit call: t's own (float32 or the 16-bit dtype);
/// `half` where t is undefined.
inline at::ScalarType gradientDtype(const at::Tensor &t, at::ScalarType half) {
  return t.defined() ? t.scalar_type() : half;
}

inline at::Tensor newTensor(at::IntArrayRef shape, const at::TensorOptions &opts);

/// `t` in `dtype`: t itself when it has it, else a contiguous converted copy whose storage, on
/// the CPU, comes from the tensor pool (the conversions of a 16-bit call are as large as its
/// inputs and results, and fresh pages would be zeroed by the system on every call).
inline at::Tensor toDtype(const at::Tensor &t, at::ScalarType dtype) {
  if (!t.defined() || t.scalar_type() == dtype)
    return t;
  return newTensor(t.sizes(), t.options().dtype(dtype)).copy_(t);
}

/// The dtype of a wide tensor (softmax logits and what they are computed from) in a call of
/// `dtype`: float32 in a 16-bit call, `dtype` itself otherwise.
inline at::ScalarType wideDtype(at::ScalarType dtype) {
  return isHalfPrecision(dtype) ? at::kFloat : dtype;
}

/// `tensors` in the storage of a 16-bit call of dtype `half`: float32 where `wide` says so
/// (exactly, from a 16-bit tensor), `half` otherwise (rounding a float32 tensor, as
/// torch.autocast does).
inline std::vector<at::Tensor> toStorage(at::TensorList tensors, at::ScalarType half,
                                         const std::vector<bool> &wide) {
  std::vector<at::Tensor> out;
  out.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    out.push_back(toDtype(tensors[i], i < wide.size() && wide[i] ? at::kFloat : half));
  return out;
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

/// A kernel result of `shape`, uninitialised: on the CPU from the runtime's tensor pool (large
/// blocks reused from call to call instead of mapped and zeroed by the system each time),
/// elsewhere from PyTorch's allocator.
inline at::Tensor newTensor(at::IntArrayRef shape, const at::TensorOptions &opts) {
  return opts.device().is_cpu() ? ::hector::pooledEmpty(shape, opts) : at::empty(shape, opts);
}

/// newTensor filled with zeros (the result of a GEMM that scatters with additions).
inline at::Tensor newZeros(at::IntArrayRef shape, const at::TensorOptions &opts) {
  return newTensor(shape, opts).zero_();
}

/// Throws a RuntimeError naming the kernel when a CUDA launch failed.
inline void checkLaunch(const char *error, const char *kernel) {
  TORCH_CHECK(error == nullptr, "hector: CUDA kernel ", kernel, " failed: ", error);
}

/// The gradient of y = aggregate max x over the edges of each node (`node`: every edge's node
/// at the aggregation's end, in internal edge order): per node n and element c, g[n][c] goes to
/// the edge of n with the smallest internal position whose x equals the maximum; every other
/// edge gets 0. Max and min reductions do not depend on the order of their operands, so this is
/// deterministic on every device. `g`: [N, k] elements, `x`: [E, k]; the result is [E, k].
inline at::Tensor maxAggregateGrad(const at::Tensor &g, const at::Tensor &x, const at::Tensor &node,
                                   std::int64_t numNodes, std::int64_t k) {
  const std::int64_t E = node.size(0);
  const at::TensorOptions opts = x.options();
  const at::TensorOptions longOpts = opts.dtype(at::kLong);
  const at::Tensor edgeNode = node.to(at::kLong).unsqueeze(1).expand({E, k});
  const at::Tensor xs = x.reshape({E, k});
  const at::Tensor gs = g.reshape({numNodes, k});
  const at::Tensor mx = at::full({numNodes, k}, -std::numeric_limits<double>::infinity(), opts)
                            .scatter_reduce(0, edgeNode, xs, "amax", /*include_self=*/true);
  const at::Tensor eid = at::arange(E, longOpts).unsqueeze(1).expand({E, k});
  const at::Tensor candidate =
      at::where(xs == mx.gather(0, edgeNode), eid, at::full({}, E, longOpts));
  const at::Tensor first = at::full({numNodes, k}, E, longOpts)
                               .scatter_reduce(0, edgeNode, candidate, "amin",
                                               /*include_self=*/true);
  return at::where(first.gather(0, edgeNode) == eid, gs.gather(0, edgeNode), at::zeros({}, opts));
}

/// The gradient of src_row(W): row `src` of the edge's slice (`etype` defined: W is sliced per
/// relation, `rows` rows a slice) or of the one table of a zero weight of `shape` receives the
/// edge's gradient row (`grad`, E rows of k elements). index_add_ in the internal edge order:
/// deterministic on the CPU; on CUDA it adds with atomics, so float sums may differ in the last
/// bits from run to run.
inline at::Tensor srcRowGrad(const at::Tensor &grad, const at::Tensor &src, const at::Tensor &etype,
                             std::int64_t rows, std::int64_t k, at::IntArrayRef shape) {
  at::Tensor index = src.to(at::kLong);
  if (etype.defined())
    index = etype.to(at::kLong) * rows + index;
  at::Tensor dw = at::zeros(shape, grad.options());
  dw.view({-1, k}).index_add_(0, index, grad.reshape({src.size(0), k}));
  return dw;
}

/// One layer of a library: its operator namespace, and the functions that define its operators
/// and implement them (emitted beside its glue).
struct LayerRegistration {
  const char *ns;
  void (*define)(torch::Library &);
  void (*implement)(torch::Library &);
};

/// Registers the operators of every layer of a library, as one static object of its model.cpp:
/// the CPU implementations, and the CUDA ones where the library has CUDA kernels and was built
/// with them. A namespace that is already registered (the same layer loaded twice) is skipped
/// whole; hector.load and hector::loadLibrary report it. The libraries are released in reverse
/// order when the object is destroyed (at unload).
class LibraryRegistration {
public:
  LibraryRegistration(std::initializer_list<LayerRegistration> layers, bool cudaKernels) {
    for (const LayerRegistration &layer : layers)
      add(layer, cudaKernels);
  }
  ~LibraryRegistration() {
    while (!libraries.empty())
      libraries.pop_back();
  }
  LibraryRegistration(const LibraryRegistration &) = delete;
  LibraryRegistration &operator=(const LibraryRegistration &) = delete;

private:
  std::vector<std::unique_ptr<torch::Library>> libraries;

  void add(const LayerRegistration &registration, bool cudaKernels) {
    std::vector<std::unique_ptr<torch::Library>> layer;
    try {
      layer.push_back(std::make_unique<torch::Library>(torch::Library::DEF, registration.ns,
                                                       std::nullopt, __FILE__, __LINE__));
      registration.define(*layer.back());
      layer.push_back(std::make_unique<torch::Library>(torch::Library::IMPL, registration.ns,
                                                       c10::DispatchKey::CPU, __FILE__, __LINE__));
      registration.implement(*layer.back());
#ifdef HECTOR_WITH_CUDA
      if (cudaKernels) {
        layer.push_back(std::make_unique<torch::Library>(
            torch::Library::IMPL, registration.ns, c10::DispatchKey::CUDA, __FILE__, __LINE__));
        registration.implement(*layer.back());
      }
#else
      (void)cudaKernels;
#endif
    } catch (const std::exception &) {
      while (!layer.empty())
        layer.pop_back();
      return;
    }
    for (auto &library : layer)
      libraries.push_back(std::move(library));
  }
};

} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_GLUE_H
