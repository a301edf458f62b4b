//===- hector/emit/manifest_schema.h - A compiled layer's manifest --------===//
//
// The manifest of one compiled layer: the interface the runtime calls it by (its inputs,
// weights and outputs), the layers it names (backward, inference copy, variants), the cost
// model's estimate, the memory of a call and the graph structures its kernels read. The emitter
// fills a LayerManifest and writes it (manifest_json.h); the runtime reads it back into the
// same struct. Dependency-free: C++17 for the host compiler and the compiler, which links no
// LibTorch.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_MANIFEST_SCHEMA_H
#define HECTOR_EMIT_MANIFEST_SCHEMA_H

#include "hector/emit/graph_schema.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hector {

/// The library ABI: the manifest's "format" and the number in the `.hector_abi` marker of a
/// library hectorc builds. The emitter writes it; the runtime loads only libraries of its own.
constexpr int kLibraryAbi = 3;
/// The section of a library hectorc builds that holds the ABI marker, and the marker's text
/// before the ABI number ("hectorc library abi 3"): the runtime reads it before dlopen.
constexpr char kAbiSection[] = ".hector_abi";
constexpr char kAbiPrefix[] = "hectorc library abi ";

/// The terms the cost and memory coefficients multiply, in order.
constexpr int kNumCostTerms = 7;
inline const char *const *costTerms() {
  static const char *const terms[kNumCostTerms] = {"N", "E", "U_src", "U_dst", "R", "T", "1"};
  return terms;
}

/// An integer or float parameter of the layer (`params = {in = 16 : i64}`).
struct LayerParam {
  std::string name;
  bool integer = true; ///< an integer (intValue) rather than a float
  int64_t intValue = 0;
  double value = 0; ///< the value as a double (also for an integer)
};

/// An input, weight or output of a compiled layer.
struct TensorDecl {
  std::string name;
  /// The rows of an input or output: node, edge, unique_src, unique_dst, or weight (an output
  /// that is a weight's gradient). Empty for a weight.
  std::string space;
  /// How a weight (or a weight-gradient output) is sliced: relation, ntype or none.
  std::string slicing;
  std::vector<int64_t> dims;
  int64_t headAxis = -1;
  /// A weight's initialiser: glorot, zeros, ones, uniform or normal.
  std::string init;
  /// An output of a forward layer that its backward layer reads (an activation saved for
  /// backward: not returned to the caller).
  bool saved = false;
  /// Whether a backward layer's kernels read this input (unread ones may be undefined).
  bool used = true;
  /// Edge rows in the graph's internal (relation-sorted) order rather than the user's.
  bool internalOrder = false;
};

/// The interface of one compiled layer (docs/architecture.md, "The emitted library and its ABI").
struct LayerManifest {
  std::string layer;  ///< the layer's name in the model file
  std::string ns;     ///< its torch operator namespace (known to the runtime, not written)
  bool entry = false; ///< whether it is the library's entry layer
  std::vector<LayerParam> params;
  std::vector<TensorDecl> inputs, weights, outputs;
  /// Training: a forward layer's backward layer namespace (empty when built with
  /// --no-backward), or a backward layer's forward layer namespace.
  std::string backward, forward;
  /// A forward layer's inference copy (runs calls that need no gradient: it saves nothing, so
  /// its kernels are fused freely), or the layer an inference copy copies.
  std::string inference, inferenceOf;
  /// Optimisation variants (docs/architecture.md, "Optimisations"): this layer's variant
  /// ("none" for the layer as written, "reorder", "compact", "both"), the namespaces of the
  /// layer's other variants (on the layer as written), or the namespace of the layer a variant
  /// belongs to.
  std::string variant, variantOf;
  std::vector<std::string> variants;
  /// The rewrites the variant applied and skipped ("applies ..." / "skips ...").
  std::vector<std::string> rewrites;
  /// The cost model's estimate: coefficients of costTerms() (absent when !hasCost).
  bool hasCost = false;
  std::vector<double> flops, bytes;
  std::vector<std::vector<double>> intermediates;
  /// The memory of a call in elements (coefficients of costTerms()): what the layer holds at
  /// each allocation point, and the outputs it returns.
  std::vector<std::vector<double>> memoryPoints;
  std::vector<double> memoryOutputs;
  /// The part of memoryPoints and memoryOutputs in tensors that a 16-bit call stores as float32
  /// (the wide values: softmax logits and what they are computed from; zeros where absent).
  std::vector<std::vector<double>> wideMemoryPoints;
  std::vector<double> wideMemoryOutputs;
  /// The elements a call's kernels read and write (coefficients of costTerms()), and their
  /// part in wide values; empty in a library built before they were recorded. The runtime
  /// weighs the cost model's bytes of a 16-bit call by the share of 2-byte elements in them.
  std::vector<double> trafficElements, wideTrafficElements;
  /// The graph structures the layer's kernels read (built before a call).
  graph_schema::GraphStructureMask structures = 0;
  /// Whether the library carries the layer's CUDA kernels.
  bool cuda = false;
  /// Whether a call with bfloat16 or float16 tensors, on the CPU or CUDA, runs the kernels on
  /// 16-bit storage (every tensor of the call in its 16-bit dtype, sums and products in float);
  /// otherwise such a call is computed on float32 conversions (docs/runtime.md, "16-bit
  /// layers").
  bool sixteenBitStorage = false;

  /// Whether the layer is one the user calls: not a backward layer, an inference copy or a
  /// variant (those run through the layer they belong to).
  bool userFacing() const { return forward.empty() && inferenceOf.empty() && variantOf.empty(); }
};

} // namespace hector

#endif // HECTOR_EMIT_MANIFEST_SCHEMA_H
