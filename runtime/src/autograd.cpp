//===- autograd.cpp - Compiled layers as differentiable operations --------===//
//
// A compiled layer and the backward layer the compiler derived for it, joined into one
// torch::autograd::Function:
//
//   forward:  runs the layer's `forward` operator, whose outputs are the layer's outputs
//             followed by the activations its backward layer reads ("saved.N", edge rows in
//             the graph's internal order); keeps what the backward layer reads (saved
//             activations, forward inputs, weights) in the current ActivationStore.
//   backward: loads them back, runs the backward layer's `forward` operator on them and the
//             output gradients, and returns its "grad.<name>" outputs as the gradients of the
//             inputs and weights.
//
// The saved handles are released when autograd frees the node's buffers (after a backward
// without retain_graph, as PyTorch frees its own saved tensors) or when the graph is destroyed.
// Also implements the `hector::layer_apply` operator that Python's CompiledLayer calls, and its
// kernel under torch.autocast (the lower-precision list, as `linear`).
//
//===----------------------------------------------------------------------===//
#include "hector/activation_store.h"
#include "graph_ops.h"
#include "hector/graph_holder.h"
#include "hector/model.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hector {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Runs the `forward` operator of the layer `ns`; `needed` is a mask of the outputs to compute
/// (bit o for output o, bit 63 for all from 63 on; -1: all): the kernels that only serve other
/// outputs are skipped, and those outputs are undefined.
std::vector<at::Tensor> callForward(const std::string &ns, const Graph &graph,
                                    const std::vector<at::Tensor> &inputs,
                                    const std::vector<at::Tensor> &weights, int64_t needed = -1) {
  static const auto lookup = [](const std::string &qualified) {
    return c10::Dispatcher::singleton().findSchemaOrThrow(qualified.c_str(), "");
  };
  c10::OperatorHandle op = lookup(ns + "::forward");
  c10::Stack stack;
  stack.emplace_back(graph.tensors());
  stack.emplace_back(graph.sizes());
  stack.emplace_back(inputs);
  stack.emplace_back(weights);
  stack.emplace_back(needed);
  op.callBoxed(&stack);
  return stack.at(0).toTensorVector();
}

/// What one forward saved for backward: handles in the activation store, released exactly once
/// (when autograd frees the node's buffers, or with the node).
struct SavedActivations : torch::CustomClassHolder {
  std::shared_ptr<ActivationStore> store;
  /// Per backward-layer input: a handle, or -1 for a gradient input or an unread input.
  std::vector<ActivationHandle> inputs;
  std::vector<ActivationHandle> weights;
  bool released = false;

  void release() {
    if (released)
      return;
    released = true;
    for (ActivationHandle h : inputs)
      if (h >= 0)
        store->release(h);
    for (ActivationHandle h : weights)
      store->release(h);
  }
  ~SavedActivations() override {
    try {
      release();
    } catch (...) {
      // A store that fails to release must not take the process down from a destructor.
    }
  }
};

/// The non-tensor arguments of one application.
struct Call {
  const LayerManifest *layer;
  const Graph *graph;
};

int64_t indexOf(const std::vector<TensorDecl> &decls, const std::string &name) {
  for (size_t i = 0; i < decls.size(); ++i)
    if (decls[i].name == name)
      return static_cast<int64_t>(i);
  return -1;
}

class LayerFunction : public torch::autograd::Function<LayerFunction> {
public:
  static variable_list forward(AutogradContext *ctx, Call call, at::TensorList inputs,
                               at::TensorList weights) {
    DeferStoreWarnings defer; // No Python warning handler in an operator call.
    const LayerManifest &layer = *call.layer;
    const LayerManifest &bwd = manifestOf(layer.backward);
    std::vector<at::Tensor> all = callForward(layer.ns, *call.graph, inputs.vec(), weights.vec());
    TORCH_CHECK(all.size() == layer.outputs.size(), layer.layer, ": the library returned ",
                all.size(), " outputs, its manifest declares ", layer.outputs.size());

    auto saved = c10::make_intrusive<SavedActivations>();
    saved->store = currentActivationStore();
    for (const TensorDecl &in : bwd.inputs) {
      ActivationHandle handle = -1;
      if (in.used && in.name.rfind("grad.", 0) != 0) {
        at::Tensor t;
        if (int64_t i = indexOf(layer.outputs, in.name); i >= 0 && layer.outputs[i].saved)
          t = all[i];
        else if (int64_t j = indexOf(layer.inputs, in.name); j >= 0)
          t = inputs[j];
        TORCH_CHECK(t.defined(), layer.layer, ": the backward layer reads '", in.name,
                    "', which the forward layer neither takes nor saves");
        handle = saved->store->save(t, layer.layer + ": " + in.name);
      }
      saved->inputs.push_back(handle);
    }
    for (size_t i = 0; i < weights.size(); ++i)
      saved->weights.push_back(saved->store->save(
          weights[i], layer.layer + ": weight " + layer.weights[i].name, /*spillable=*/false));

    ctx->saved_data["activations"] =
        at::IValue::make_capsule(c10::intrusive_ptr<torch::CustomClassHolder>(saved));
    // The graph (its backward layer's structures were built before the call).
    ctx->saved_data["graph"] = at::IValue::make_capsule(
        c10::intrusive_ptr<torch::CustomClassHolder>(c10::make_intrusive<GraphHolder>(*call.graph)));
    ctx->saved_data["layer"] = layer.ns;

    variable_list outputs;
    for (size_t i = 0; i < all.size(); ++i)
      if (!layer.outputs[i].saved)
        outputs.push_back(all[i]);
    return outputs;
  }

  static variable_list backward(AutogradContext *ctx, variable_list gradOutputs) {
    DeferStoreWarnings defer;
    const LayerManifest &layer = manifestOf(ctx->saved_data["layer"].toStringRef());
    TORCH_CHECK(!at::GradMode::is_enabled(), layer.layer,
                ": double backward (backward with create_graph=True) through a compiled Hector "
                "layer is not supported; the compiler derives first-order gradients only");
    auto saved = c10::static_intrusive_pointer_cast<SavedActivations>(
        ctx->saved_data["activations"].toCapsule());
    TORCH_CHECK(!saved->released, layer.layer,
                ": trying to backward through the graph a second time (or to read its saved "
                "activations after they were freed); specify retain_graph=True the first time");
    const LayerManifest &bwd = manifestOf(layer.backward);
    const Graph graph = c10::static_intrusive_pointer_cast<GraphHolder>(
                            ctx->saved_data["graph"].toCapsule())
                            ->graph;
    graph.checkUnchanged(bwd.structures);

    // The layer's outputs that are not saved activations, in order: gradOutputs' indices.
    std::vector<std::string> returned;
    for (const TensorDecl &out : layer.outputs)
      if (!out.saved)
        returned.push_back(out.name);

    std::vector<at::Tensor> inputs;
    for (size_t i = 0; i < bwd.inputs.size(); ++i) {
      const TensorDecl &in = bwd.inputs[i];
      if (!in.used) {
        inputs.emplace_back();
      } else if (in.name.rfind("grad.", 0) == 0) {
        std::string of = in.name.substr(5);
        size_t k = std::find(returned.begin(), returned.end(), of) - returned.begin();
        TORCH_CHECK(k < gradOutputs.size(), layer.layer, ": no output named '", of, "'");
        inputs.push_back(gradOutputs[k].contiguous());
      } else {
        inputs.push_back(saved->store->load(saved->inputs[i]));
      }
    }
    std::vector<at::Tensor> weights;
    for (ActivationHandle h : saved->weights)
      weights.push_back(saved->store->load(h));
    // Only the gradients autograd asks for: the kernels that serve only the others (the
    // gradient of an edge input such as a norm that does not require grad) are skipped.
    uint64_t needed = 0;
    for (size_t i = 0; i < bwd.outputs.size(); ++i) {
      std::string of = bwd.outputs[i].name.substr(5); // "grad.<name>"
      bool wanted = true;
      // needs_input_grad counts the tensor arguments only: the inputs, then the weights.
      if (int64_t j = indexOf(layer.inputs, of); j >= 0)
        wanted = ctx->needs_input_grad(j);
      else if (int64_t w = indexOf(layer.weights, of); w >= 0)
        wanted = ctx->needs_input_grad(layer.inputs.size() + w);
      if (wanted)
        needed |= uint64_t(1) << std::min<size_t>(i, 63);
    }
    std::vector<at::Tensor> grads =
        callForward(bwd.ns, graph, inputs, weights, static_cast<int64_t>(needed));

    // One gradient per forward argument: the Call (none), every input, every weight.
    variable_list result(1 + layer.inputs.size() + layer.weights.size());
    for (size_t i = 0; i < bwd.outputs.size(); ++i) {
      std::string of = bwd.outputs[i].name.substr(5); // "grad.<name>"
      if (int64_t j = indexOf(layer.inputs, of); j >= 0)
        result[1 + j] = grads[i];
      else if (int64_t w = indexOf(layer.weights, of); w >= 0)
        result[1 + layer.inputs.size() + w] = grads[i];
    }
    return result;
  }
};

} // namespace
} // namespace hector

// Frees the saved activations when autograd frees the node's buffers (after a backward that did
// not retain the graph), as it frees the tensors of its own nodes.
template <>
void torch::autograd::CppNode<hector::LayerFunction>::release_variables() {
  std::lock_guard<std::mutex> lock(mutex_);
  ctx_.saved_variables_.clear();
  ctx_.has_freed_buffers_ = true;
  auto it = ctx_.saved_data.find("activations");
  if (it != ctx_.saved_data.end())
    c10::static_intrusive_pointer_cast<hector::SavedActivations>(it->second.toCapsule())->release();
}

namespace hector {

namespace {

/// Runs `layer` (the chosen variant): its inference copy, or the autograd function.
std::vector<at::Tensor> runLayer(const LayerManifest &layer, const Graph &graph,
                                 const std::vector<at::Tensor> &inputs,
                                 const std::vector<at::Tensor> &weights, bool needsGrad) {
  if (!needsGrad || layer.backward.empty()) {
    TORCH_CHECK(!needsGrad, layer.layer,
                ": this library was built without backward layers (hectorc --no-backward); "
                "run it under torch.no_grad(), or rebuild it to train");
    if (!layer.inference.empty())
      return callForward(layer.inference, graph, inputs, weights); // saves nothing
    std::vector<at::Tensor> all = callForward(layer.ns, graph, inputs, weights);
    std::vector<at::Tensor> outputs;
    for (size_t i = 0; i < all.size() && i < layer.outputs.size(); ++i)
      if (!layer.outputs[i].saved)
        outputs.push_back(all[i]);
    return outputs;
  }
  for (size_t i = 0; i < inputs.size(); ++i)
    TORCH_CHECK_TYPE(inputs[i].defined(), layer.layer, ": input ", i, " is undefined");
  return LayerFunction::apply(Call{&layer, &graph}, at::TensorList(inputs),
                              at::TensorList(weights));
}

/// Throws c10::OutOfMemoryError (Python torch.OutOfMemoryError, a RuntimeError) for an
/// allocation that failed inside a call of `layer`, with the layer, the variant and the
/// estimate. The call's tensors are freed as the exception unwinds; the process goes on.
[[noreturn]] void throwOutOfMemory(const LayerManifest &layer, const Graph &graph, bool training,
                                   int64_t elementBytes, const std::string &cause) {
  const double estimate = estimatePeakBytes(layer, graph, training, elementBytes);
  auto mib = [](double bytes) {
    char text[48];
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1024.0 * 1024.0));
    return std::string(text);
  };
  TORCH_CHECK_WITH(OutOfMemoryError, false, layer.layer, ": out of memory in ",
                   training ? "a training" : "an inference", " call of variant '",
                   layer.variant.empty() ? std::string("none") : layer.variant, "' on ",
                   graph.device().str(), " (N=", graph.numNodes(), ", E=", graph.numEdges(),
                   "; estimated peak ", mib(estimate), ", memory budget ",
                   mib(static_cast<double>(memoryBudget(graph.device()))),
                   "); nothing of the call is kept. Cause: ", cause);
}

} // namespace

const LayerManifest &prepareLayer(const LayerManifest &requested, const Graph &graph,
                                  bool training, const std::string &variant,
                                  int64_t elementBytes) {
  const LayerManifest &layer = chooseVariant(requested, graph, training, variant, elementBytes);
  // The forward and backward layers' structures, or the inference copy's.
  GraphStructureMask structures = layer.structures;
  if (training && !layer.backward.empty())
    structures |= manifestOf(layer.backward).structures;
  else if (!layer.inference.empty())
    structures |= manifestOf(layer.inference).structures;
  graph.require(structures);
  graph.checkUnchanged(structures);
  return layer;
}

std::vector<at::Tensor> applyLayer(const LayerManifest &requested, const Graph &graph,
                                   const std::vector<at::Tensor> &inputs,
                                   const std::vector<at::Tensor> &weights,
                                   const std::string &variant) {
  bool needsGrad = false;
  if (at::GradMode::is_enabled()) {
    for (const at::Tensor &t : inputs)
      needsGrad |= t.defined() && t.requires_grad();
    for (const at::Tensor &t : weights)
      needsGrad |= t.defined() && t.requires_grad();
  }
  // The optimisation variant for this graph (all take the same inputs and weights) that fits
  // the memory budget, with the graph structures its kernels read.
  // The call's element size: the first floating input's (the glue's call dtype; a 16-bit
  // input with float32 master weights makes a 16-bit call), else the first weight's.
  const int64_t elementBytes = [&]() -> int64_t {
    for (const std::vector<at::Tensor> *list : {&inputs, &weights})
      for (const at::Tensor &t : *list)
        if (t.defined() && t.is_floating_point())
          return static_cast<int64_t>(t.element_size());
    return 4;
  }();
  const LayerManifest &layer = prepareLayer(requested, graph, needsGrad, variant, elementBytes);
  try {
    return runLayer(layer, graph, inputs, weights, needsGrad);
  } catch (const std::bad_alloc &) {
    throwOutOfMemory(layer, graph, needsGrad, elementBytes, "std::bad_alloc");
  } catch (const c10::OutOfMemoryError &e) {
    throwOutOfMemory(layer, graph, needsGrad, elementBytes, e.what_without_backtrace());
  } catch (const c10::Error &e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("can't allocate memory") != std::string::npos ||
        what.find("not enough memory") != std::string::npos)
      throwOutOfMemory(layer, graph, needsGrad, elementBytes, what);
    throw;
  }
}

std::vector<at::Tensor> layerApplyOp(const std::string &ns,
                                     const c10::intrusive_ptr<GraphHolder> &graph,
                                     std::vector<at::Tensor> inputs,
                                     std::vector<at::Tensor> weights,
                                     const std::string &variant) {
  const LayerManifest *layer = nullptr;
  try {
    layer = &manifestOf(ns);
  } catch (const std::runtime_error &e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  return applyLayer(*layer, graphOf(graph), inputs, weights, variant);
}

/// hector::layer_apply under torch.autocast: on autocast's lower-precision list, as `linear`
/// and `matmul` are. Floating inputs and weights other than float64 are cast to the autocast
/// dtype of the device (bfloat16 or float16; weights that are leaves requiring grad through
/// autocast's cache, so a weight is cast once per autocast region and its gradient reaches the
/// float32 master weight), float64 stays float64 (PyTorch's `is_eligible`), and the layer runs
/// its 16-bit form: float32 arithmetic inside, outputs and input gradients in the autocast
/// dtype. The glue's ATen calls run without autocast, which would otherwise give them other
/// dtypes than the kernels'.
template <c10::DeviceType Device>
std::vector<at::Tensor>
layerApplyAutocast(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                   std::vector<at::Tensor> inputs, std::vector<at::Tensor> weights,
                   const std::string &variant) {
  c10::impl::ExcludeDispatchKeyGuard noAutocast(
      at::autocast::get_autocast_dispatch_key_from_device_type(Device));
  const at::ScalarType lower = at::autocast::get_lower_precision_fp_from_device_type(Device);
  auto cast = [&](std::vector<at::Tensor> &tensors) {
    for (at::Tensor &t : tensors)
      if (t.defined())
        t = at::autocast::cached_cast(lower, t, Device);
  };
  cast(inputs);
  cast(weights);
  return layerApplyOp(ns, graph, std::move(inputs), std::move(weights), variant);
}

template std::vector<at::Tensor> layerApplyAutocast<c10::DeviceType::CPU>(
    const std::string &, const c10::intrusive_ptr<GraphHolder> &, std::vector<at::Tensor>,
    std::vector<at::Tensor>, const std::string &);
template std::vector<at::Tensor> layerApplyAutocast<c10::DeviceType::CUDA>(
    const std::string &, const c10::intrusive_ptr<GraphHolder> &, std::vector<at::Tensor>,
    std::vector<at::Tensor>, const std::string &);

std::string layerPrepareOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                           bool training, const std::string &variant) {
  const LayerManifest *layer = nullptr;
  try {
    layer = &manifestOf(ns);
  } catch (const std::runtime_error &e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
  const LayerManifest &chosen = prepareLayer(*layer, graphOf(graph), training, variant);
  return chosen.variant.empty() ? "none" : chosen.variant;
}

} // namespace hector
