//===- hector/model.h - Compiled layers from C++ ----------------*- C++ -*-===//
//
// The C++ side of `hector.load`: loads a library built by hectorc, reads the manifests of the
// layers it registers, and wraps a layer as a torch::nn::Module whose parameters are the layer's
// weights (initialised as PyG initialises its layers) and whose forward runs the compiled kernels.
//
//   auto layers = hector::loadLibrary("rgcn.so");
//   auto layer = std::make_shared<hector::CompiledLayer>(layers.front(), graph.numRelations());
//   std::vector<at::Tensor> out = layer->forward(graph, {x, norm});
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/emit/manifest_schema.h"
#include "hector/graph.h"

#include <torch/nn/module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hector {

// TensorDecl and LayerManifest, the manifest as the emitter writes it and the runtime reads it,
// are declared in hector/emit/manifest_schema.h.

/// The variant of `layer` (the layer as loaded) that runs on `graph`: `request` "auto" (or
/// empty) chooses with the cost model, the cheapest estimated cost at the graph's sizes
/// (forward + backward when `training`, the inference copy otherwise; the first among
/// equals, i.e. the simplest); "none", "reorder", "compact", "both" or "both_logits" picks one (a
/// c10::ValueError when the library does not carry it). With request "auto" the environment
/// variable HECTOR_VARIANT, when set, is the request. Among the variants whose estimated peak
/// (estimatePeakBytes, for elements of `elementBytes`) fits the memory budget; in a 16-bit call
/// (elementBytes 2) each variant's bytes are weighed by the share of its traffic in 2-byte
/// elements, so a variant that computes in float32 storage pays for it.
const LayerManifest &chooseVariant(const LayerManifest &layer, const Graph &graph, bool training,
                                   const std::string &request = "auto",
                                   int64_t elementBytes = 4);

/// The estimated peak of the memory one call of `layer` (a variant) allocates on `graph`, in
/// bytes: the graph structures it would build, and the tensors its kernels hold (forward and
/// backward when `training`: the forward's outputs and the output gradients live through the
/// backward), for elements of `elementBytes` bytes (a 16-bit call of a layer without
/// LayerManifest::sixteenBitStorage stores float32 elements: 4).
double estimatePeakBytes(const LayerManifest &layer, const Graph &graph, bool training,
                         int64_t elementBytes);

/// The memory budget of calls on `device`, in bytes: chooseVariant picks the fastest variant
/// whose estimated peak fits it. The one set with setMemoryBudget, else `fraction` (default
/// 0.9) of the memory available now: on the CPU the least of the system's available memory
/// and the room left under the process's address-space and cgroup limits; on CUDA the device's
/// free memory and what the caching allocator holds unused.
int64_t memoryBudget(const at::Device &device);
/// Sets the budget of every device to `bytes` (std::nullopt: the default again) and the
/// default's fraction of the available memory.
void setMemoryBudget(std::optional<int64_t> bytes, double fraction = 0.9);
/// The memory available now on `device`, in bytes (see memoryBudget); -1 when unknown.
int64_t availableMemory(const at::Device &device);

/// chooseVariant, and builds the graph structures the chosen variant's kernels read (with
/// those of its backward layer when `training`, else of its inference copy), so that the call
/// that follows builds nothing. Calls do this themselves; it separates the one-time cost.
const LayerManifest &prepareLayer(const LayerManifest &layer, const Graph &graph, bool training,
                                  const std::string &request = "auto", int64_t elementBytes = 4);

/// The cost model's comparison of the variants of `layer` on `graph`: per variant the
/// estimated training (forward + backward) and inference costs, the largest intermediate, the
/// rewrites, and the choice for training and for inference, for float32 calls (the last line)
/// and for 16-bit ones.
std::string explainVariants(const LayerManifest &layer, const Graph &graph);

/// The manifest of the layer registered under the torch operator namespace `ns` (parsed once).
/// Throws std::runtime_error when no such layer is loaded.
const LayerManifest &manifestOf(const std::string &ns);

/// Runs a compiled layer as one differentiable operation: a torch::autograd::Function whose
/// backward runs the layer's backward kernels (derived by the compiler). The activations the
/// backward layer reads are kept in hector::currentActivationStore(). Returns the layer's
/// outputs (not the saved activations); when no input or weight requires grad, or grad mode is
/// off, nothing is saved and the layer's inference copy runs (the fused forward kernels). Backward
/// through the result with create_graph=True (double backward) raises a c10::Error. `inputs` in
/// manifest order, edge data in the user's edge order; `weights` in manifest order. `variant`
/// chooses among the layer's optimisation variants (see chooseVariant; all give the same results up
/// to rounding).
std::vector<at::Tensor> applyLayer(const LayerManifest &layer, const Graph &graph,
                                   const std::vector<at::Tensor> &inputs,
                                   const std::vector<at::Tensor> &weights,
                                   const std::string &variant = "auto");

/// Parses the manifest JSON of the layer registered in operator namespace `ns`
/// (hector/emit/manifest_json.h); throws std::runtime_error naming what is wrong (malformed
/// JSON, a missing or mistyped field, another format).
LayerManifest parseManifest(const std::string &ns, const std::string &json);

/// Checks, without mapping it, that `path` is a library hectorc built for this runtime: an ELF
/// shared object of this machine whose headers and segments lie inside the file, with the
/// hectorc ABI marker (its `.hector_abi` section) of this runtime's ABI. Returns "" if it is,
/// else a message saying what is wrong (empty, truncated, not ELF, foreign, another ABI).
/// loadLibrary and hector.load call it before dlopen, which would fault on a truncated file.
std::string checkLibraryFile(const std::string &path);

/// Loads a library built by hectorc and returns the manifests of the layers it registers (the
/// entry layer first; backward layers and inference copies are internal and not listed). Throws std::runtime_error when the file cannot be loaded or registers no
/// layer. Loading the same path again returns the same manifests.
std::vector<LayerManifest> loadLibrary(const std::string &path);

/// A compiled layer as a module: `parameters()`, `named_parameters()` (weights of sub-layers keep
/// their `conv1.W` names), `to()`, optimisers and serialisation work as for any module.
class CompiledLayer : public torch::nn::Module {
public:
  /// Creates the layer's weights: relation-sliced ones as [numRelations, dims...], ntype-sliced
  /// ones as [numNtypes, dims...], with `options` (dtype, device).
  CompiledLayer(LayerManifest manifest, int64_t numRelations, int64_t numNtypes = 1,
                const at::TensorOptions &options = at::TensorOptions().dtype(at::kFloat));

  /// Runs the layer on `graph`; `inputs` in declaration order (edge data in the user's edge
  /// order). Returns the outputs in declaration order, differentiable with respect to the
  /// inputs and the weights (see applyLayer). Wrong counts, shapes, dtypes or devices
  /// throw c10::Error naming the tensor.
  std::vector<at::Tensor> forward(const Graph &graph, const std::vector<at::Tensor> &inputs);

  /// The weights in manifest order.
  std::vector<at::Tensor> weights() const;
  /// Which optimisation variant forward() runs: "auto" (the cost model's choice per graph, the
  /// default), "none", "reorder", "compact", "both" or "both_logits" (see
  /// chooseVariant).
  std::string variant = "auto";
  const LayerManifest &manifest() const { return manifest_; }
  int64_t numRelations() const { return numRelations_; }
  int64_t numNtypes() const { return numNtypes_; }

private:
  LayerManifest manifest_;
  int64_t numRelations_;
  int64_t numNtypes_;
  std::vector<at::Tensor> weights_;
};

} // namespace hector
