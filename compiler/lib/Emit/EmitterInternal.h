//===- EmitterInternal.h - What the emitter's files share -------*- C++ -*-===//
//
// The plan of a layer (its kernels, their template configurations, the glue's tensor names) and
// the functions the files of the emitter call across: the spellings of emitted C++, the
// planning, the configurations, the functor, kernel, glue and manifest printers. Internal to
// HectorEmit.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_EMITTERINTERNAL_H
#define HECTOR_EMIT_EMITTERINTERNAL_H

#include "hector/Dialect/HectorOps.h"
#include "hector/emit/graph_schema.h"
#include "hector/emit/manifest_schema.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hector {
namespace emit {

//===----------------------------------------------------------------------===//
// The layer plan
//===----------------------------------------------------------------------===//

/// The configuration of one instance of the segmented GEMM template.
struct GemmConfig {
  int64_t heads = 1, k = 0, n = 0;
  bool transposeB = false;
  int64_t strideB = 0;
  /// GraphView expressions (on `g`).
  std::string numSegments, segOffsets, numRows, rows = "nullptr", gather = "nullptr";
  std::string scatterMode = "kStore", scatter = "nullptr";
  /// Weight products read their segment offsets and gather from the kernel's aux arrays.
  bool weightProduct = false;
};

/// A top-level op of a layer and what runs it: its kernel name and kind (KernelKind, the
/// dialect's enum: hector-prepare-emission records both on the op).
struct Kernel {
  mlir::Operation *op;
  std::string name;
  KernelKind kind;
};

/// A top-level hector.src / hector.dst / hector.unique_gather: the operand of a weight gradient
/// read through a gather that the kernel fuses.
struct GatherMarker {
  mlir::Value table;  ///< the node table read
  std::string gather; ///< the GraphView index array
};

/// The plan of one layer: its inputs, weights and outputs, a kernel for every other top-level
/// op, the glue's tensor names, and what the manifest says about a call.
struct LayerPlan {
  LayerOp layer;
  /// The layer's C++ and operator-namespace identifier: its name and a hash of its kernel-level IR,
  /// so that one layer compiled with other parameters loads into the same process.
  std::string id;
  /// Whether this is the library's entry layer (`--entry`, default: the last layer).
  bool entry = false;
  llvm::SmallVector<InputOp> inputs;
  llvm::SmallVector<WeightOp> weights;
  llvm::SmallVector<OutputOp> outputs;
  llvm::SmallVector<Kernel> kernels;
  /// The glue's tensor variable of every top-level value.
  llvm::DenseMap<mlir::Value, std::string> tensors;
  /// Top-level gathers, fused into the weight gradients that read them.
  llvm::DenseMap<mlir::Value, GatherMarker> gathers;
  /// Node traversals that write their result into the buffer of an operand no later kernel
  /// reads (the traversal op, the operand): no new tensor, and one less at the peak.
  llvm::DenseMap<mlir::Operation *, mlir::Value> inPlace;
  /// The namespace of the backward layer (for a forward layer with one) or of the forward layer
  /// (for a backward layer); filled in by planModule.
  std::string backwardOf, forwardOf;
  /// The namespace of a forward layer's inference copy, or of the layer an inference copy
  /// copies.
  std::string inference, inferenceOf;
  /// A call with bfloat16 or float16 tensors runs the kernels on 16-bit storage: every tensor
  /// in the call's 16-bit dtype except these, which are float32, every sum and product in float.
  /// The top-level values (inputs, weights, kernel results) stored as float32 in a 16-bit call
  /// (AccumType<T> in the kernels; T itself for float32 and float64 calls): those an exponential
  /// reads, directly or through any chain of ops (softmax logits, their maxima, the products
  /// and weights they are computed from), whose rounding to 8 significant bits would move an
  /// exponential of a logit in the hundreds by tens of percent; per-head rows of a softmax
  /// layer and their gradients; the activations a forward saves for a backward that reads them
  /// so, and the reverse; and the other side of a buffer a kernel sums a wide value into
  /// (planStorage).
  llvm::DenseSet<mlir::Value> wide;
  /// Optimisation variants (hector-variants): the layer as written lists its variants'
  /// namespaces; a variant names the layer's.
  std::string variant, variantOf;
  std::vector<std::string> variants;
  /// The graph structures the layer's kernels and glue read (graph_schema.h), written to the
  /// manifest: the runtime builds them before a call.
  graph_schema::GraphStructureMask structures = 0;
  /// The memory of a call, in elements, as coefficients of N, E, U_src, U_dst, R, T, 1: the
  /// tensors the glue holds at each of its allocation points, and the outputs it returns
  /// (written to the manifest for the runtime's memory estimate).
  std::vector<std::array<double, kNumCostTerms>> memory;
  std::array<double, kNumCostTerms> outputElements{};
  /// The part of `memory` and `outputElements` in wide values (float32 in a 16-bit call).
  std::vector<std::array<double, kNumCostTerms>> wideMemory;
  std::array<double, kNumCostTerms> wideOutputElements{};
  /// The elements the kernels of a call read and write (each kernel's operands, gathered rows
  /// counted per edge, and results), and their part in wide values: the runtime weighs the
  /// cost model's bytes of a 16-bit call by the share of 2-byte traffic (variants.cpp).
  std::array<double, kNumCostTerms> traffic{}, wideTraffic{};
};

/// Plans every layer of `module`, which hector-prepare-emission annotated (an error at the first
/// op it did not). Each layer's operator namespace is its emission id, which hashes its own IR,
/// the whole module's and the target: libraries that differ in any layer (another variant,
/// another backward) or in their target never share a namespace, so they load into one process
/// side by side.
mlir::FailureOr<std::vector<LayerPlan>> planModule(mlir::ModuleOp module,
                                                   llvm::StringRef entryName);

/// The table and the GraphView index array of a top-level hector.src, hector.dst or
/// hector.unique_gather (a gather a weight gradient fuses).
GatherMarker gatherMarkerOf(mlir::Operation *op);

/// Whether `output` is an activation saved for the backward layer (kept in the graph's
/// internal edge order: it only travels from the forward to the backward kernels).
bool isSavedOutput(OutputOp output);
/// Whether `input` is an activation the forward layer saved (see isSavedOutput).
bool isSavedInput(InputOp input);

/// The space of a top-level value or weight operand (a weight counts as its slices' space).
Space spaceOf(mlir::Value v);

/// The dimensions of a row of a top-level value, or of a slice of a weight.
llvm::ArrayRef<int64_t> dimsOf(mlir::Type type);

/// The unique-pair space an edge traversal runs over instead of the edges (every result in
/// unique_src rows, or every result in unique_dst rows: compacted values), or std::nullopt.
std::optional<Space> pairSpaceOf(TraversalOp op);

/// The unique-pair space a node traversal runs over instead of the nodes (its body sums edge
/// rows into those pairs: hector.reduce ops that are pair sums), or std::nullopt.
std::optional<Space> pairSumSpaceOf(TraversalOp op);

/// The top-level values kernel `k` reads (a weight gradient's resolved operands).
llvm::SmallVector<mlir::Value> readsOf(const LayerPlan &plan, const Kernel &kernel);

/// The intermediates the glue releases after each kernel: those whose last reader it is
/// (outputs, inputs, weights and their aliases are never released).
std::map<size_t, llvm::SmallVector<mlir::Value>> releasePlan(const LayerPlan &plan);

/// Whether `v` (a top-level value, a slice of a weight, or a fused gather of a table) is stored
/// as float32 in a 16-bit call (LayerPlan::wide).
bool isWide(const LayerPlan &plan, mlir::Value v);

/// The kernels' element type of `v`'s storage: "T", or "::hector::tmpl::AccumType<T>" (isWide).
std::string elementTypeOf(const LayerPlan &plan, mlir::Value v);

//===----------------------------------------------------------------------===//
// Template configurations
//===----------------------------------------------------------------------===//

/// The per-head GEMM shape of a weight as a linear map's operand: heads (the weight's leading
/// head dimension, or 1), K and N (N x K when transposed).
struct LinearShape {
  int64_t heads = 1, k = 0, n = 0;
};

/// The configuration of one instance of the weight-gradient (outer-product) form of the GEMM
/// template: per segment s, dB[s] = sum over its rows r of A[gatherA(r)]^T dC[gatherC(r)].
/// A hector.reduce into coarser rows is the same with A a single 1 (K = 1, lda = 0).
struct WeightGradConfig {
  int64_t heads = 1, k = 0, n = 0;
  std::string numSegments, segOffsets, numRows, rows = "nullptr", gatherA = "nullptr",
                                                gatherC = "nullptr";
  /// The tensors read: A (or empty for a reduction: the glue's `one`) and dC.
  mlir::Value a, c;
  /// A reduction that also sums trailing dimensions: dC is the input summed down to `n` first.
  bool presum = false;
};

/// The configuration of a sum over unique pairs (a run sum of the traversal template): the
/// pairs are the (node, relation) runs of a CSR with runs (`csr`); `toNodes` sums pairs into
/// their nodes, else edges into their pairs.
struct RowSumConfig {
  std::string csr;
  bool toNodes = false;
  /// Elements per output row.
  int64_t width = 0;
  /// The input row has more elements (trailing dimensions to sum first).
  bool presum = false;
};

/// The per-head GEMM shape of `weight` as a linear map's operand (transposed: N x K).
LinearShape linearShape(WeightType weight, bool transposed);

/// The GEMM configuration of `op`, or an error at its location.
mlir::FailureOr<GemmConfig> gemmConfig(GemmOp op);

/// The GEMM configuration of a weight product: per slice `C_s = A_s x B_s`, A_s viewed as
/// [M, K], B_s as [K, N] (row-major weights, any head dimension included).
GemmConfig weightProductConfig(WeightMatmulOp op);

/// The GEMM configuration of a planned GEMM or weight-product kernel.
GemmConfig configOf(const Kernel &kernel);

/// The weight-gradient configuration of a hector.weight_grad, or of a hector.reduce that sums
/// rows, or an error at `op`. A gathered operand is read through its fused gather in `gathers`.
mlir::FailureOr<WeightGradConfig>
weightGradConfig(mlir::Operation *op, const llvm::DenseMap<mlir::Value, GatherMarker> &gathers);
/// The weight-gradient configuration of a planned kernel (with the plan's fused gathers).
inline mlir::FailureOr<WeightGradConfig> weightGradConfig(mlir::Operation *op,
                                                          const LayerPlan &plan) {
  return weightGradConfig(op, plan.gathers);
}

/// Whether a top-level hector.reduce sums rows (a weight-gradient kernel) rather than only
/// trailing dimensions of each row (glue).
bool reduceSumsRows(ReduceOp op);

/// The run sum of a hector.reduce from edge rows into unique pairs, or from unique pairs into
/// nodes; std::nullopt for any other reduce.
std::optional<RowSumConfig> rowSumConfig(ReduceOp op);

//===----------------------------------------------------------------------===//
// Spellings
//===----------------------------------------------------------------------===//

/// The number of elements of a row of dimensions `dims`.
int64_t numElements(llvm::ArrayRef<int64_t> dims);

/// A C++ identifier for a name of the model (layer, input, weight): other characters become '_'.
std::string identifier(llvm::StringRef name);

/// A floating-point literal that round-trips.
std::string literal(double value);

/// Rows of a table in `space`, as an expression on the hector::Graph `graph` of the glue.
std::string graphRows(Space space);

/// The leading dimension of a weight of the given slicing (glue expression; empty for none).
std::string sliceCount(Slicing slicing);

/// `{rows, d0, d1, ...}` for at::empty.
std::string shapeList(llvm::StringRef rows, llvm::ArrayRef<int64_t> dims);

//===----------------------------------------------------------------------===//
// Printers
//===----------------------------------------------------------------------===//

/// A traversal's functor, printed once: its text (with its index members declared) and the
/// members its body reads.
struct Functor {
  std::string text;
  llvm::SmallVector<std::pair<const char *, const char *>> members;
  int passes = 0;
  EdgeEnd by = EdgeEnd::Dst;
  std::optional<Space> pairSums;
};

/// Prints the functor `name`_f of `traversal` with every operand and result of element type T,
/// or reports at the op it cannot print (hector-prepare-emission's check).
mlir::FailureOr<Functor> printFunctor(TraversalOp traversal, llvm::StringRef name);
/// Prints the functor `name`_f of `traversal`, or reports at the op it cannot print. Each operand
/// and result is read and written as `elementTypeOf` its value in `plan`.
mlir::FailureOr<Functor> printFunctor(const LayerPlan &plan, TraversalOp traversal,
                                      llvm::StringRef name);

/// Passes over the edges of each node of a node traversal (0 for an edge traversal), as the
/// functor printer plans them (hector-prepare-emission records it as `hector.passes`).
int passesOf(TraversalOp op);
/// The passes hector-prepare-emission recorded on a traversal (planLayer checks they are there).
int recordedPassesOf(TraversalOp op);

/// Prints the kernels of one layer for the CPU (`cuda` false) or CUDA: function templates over
/// the element type T and the index type I.
mlir::LogicalResult printKernels(LayerPlan &plan, bool cuda, llvm::raw_ostream &os);

/// Prints the declarations (in model.cpp) or explicit instantiations (in model_cuda.cu) of a
/// layer's CUDA kernels, for float and double and both index types (the 64-bit ones under
/// HECTOR_INDEX64).
void printCudaSignatures(LayerPlan &plan, bool instantiate, llvm::raw_ostream &os);

/// Prints the ATen code of a glue op: work on weights, on the R or T rows of relations and node
/// types, or a sum of trailing dimensions. Deterministic (no atomics) on the CPU and CUDA.
void printGlueOp(LayerPlan &plan, const Kernel &kernel, llvm::raw_ostream &os);

/// Prints the glue of one layer: validation, tensors, kernel calls, outputs, registration.
void printGlue(LayerPlan &plan, bool cuda, llvm::raw_ostream &os);

/// Prints the registration of every layer's operators when the library is loaded, and
/// `hector_library_namespaces()`, the namespaces it registers. A namespace already registered in
/// the process (the same library loaded from another file) makes PyTorch throw; the static
/// initialiser catches that, leaves that layer unregistered (undoing its partial registration)
/// and lets the loader report it, where TORCH_LIBRARY would end the process.
void printRegistration(const std::vector<LayerPlan> &plans, bool cuda, llvm::raw_ostream &os);

/// The manifest of one layer as JSON text (manifest.json, and the glue's `kManifest`;
/// hector/emit/manifest_json.h writes it). Bytes that are not UTF-8 (which verified IR never
/// holds in a name, but an attribute may) become U+FFFD instead of throwing.
std::string manifestOf(LayerPlan &plan, bool cuda);

} // namespace emit
} // namespace hector

#endif // HECTOR_EMIT_EMITTERINTERNAL_H
