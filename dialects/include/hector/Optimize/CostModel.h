//===- CostModel.h - Cost of a layer, and the rewrites it chooses -*- C++ -*-===//
//
// FLOPs and bytes moved of a Hector layer as linear functions of the graph's sizes, the policy
// deciding whether a rewrite pays, the two rewrites as functions, and the report comparing the
// variants (none, reorder, compact, both, both_logits) for given sizes.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_OPTIMIZE_COSTMODEL_H
#define HECTOR_OPTIMIZE_COSTMODEL_H

#include "hector/Dialect/HectorOps.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <optional>
#include <string>

namespace hector {

/// FLOPs one byte moved is worth by default (a CPU's ridge point, roughly).
inline constexpr double kDefaultBalance = 4.0;

/// The sizes of one graph. A unique-pair count of 0 stands for E (every pair has one edge).
struct GraphSizes {
  double nodes = 0;
  double edges = 0;
  double relations = 1;
  double ntypes = 1;
  double uniqueSrc = 0;
  double uniqueDst = 0;
};

/// A quantity linear in the graph's sizes: sum of coefficient x size over the terms below.
class SizeLinear {
public:
  enum Term { Nodes, Edges, UniqueSrc, UniqueDst, Relations, NTypes, One, NumTerms };

  /// `count` rows of the index space `space` (N, E, U_src, U_dst, R, T or 1) times `perRow`.
  static SizeLinear rows(Space space, double perRow);
  /// `count` slices of a weight of `slicing` (R, T or 1) times `perSlice`.
  static SizeLinear slices(Slicing slicing, double perSlice);

  double &operator[](Term term) { return coeff[term]; }
  double operator[](Term term) const { return coeff[term]; }
  SizeLinear &operator+=(const SizeLinear &other);
  SizeLinear operator-(const SizeLinear &other) const;
  /// The value at `sizes`.
  double evaluate(const GraphSizes &sizes) const;
  /// Prints the non-zero terms, e.g. `8192 E + 4096 R`.
  void print(llvm::raw_ostream &os) const;

  std::array<double, NumTerms> coeff{};
};

/// The estimated cost of a layer: FLOPs, bytes moved (float32 elements and int32 indices), and
/// the sizes of the values its kernels materialise.
struct CostEstimate {
  SizeLinear flops;
  SizeLinear bytes;
  /// Elements of every materialised intermediate (one term each).
  llvm::SmallVector<SizeLinear> intermediates;

  /// flops + balance x bytes at `sizes`: the quantity the rewrites minimise.
  double objective(const GraphSizes &sizes, double balance) const;
  /// Elements of the largest materialised intermediate at `sizes`.
  double largestIntermediate(const GraphSizes &sizes) const;
};

/// Estimates the cost of the live ops of `layer` (those some output depends on). The model
/// follows the lowering: linears are GEMMs and gathers (src, dst, unique_gather, unique_expand)
/// are fused into each reader (rows and one index per row, every time), elementwise ops run
/// fused in traversals (nothing moved), and the results of linears, weight products,
/// aggregations, reductions and softmaxes are materialised (written once, read by every
/// reader's rows).
CostEstimate estimateCost(LayerOp layer);

/// When a rewrite is applied.
struct CostPolicy {
  enum Mode {
    /// Every legal site.
    Always,
    /// Sites whose cost never grows with the graph: the difference of the graph-proportional
    /// terms (N, E, U_src, U_dst) is <= 0 for all sizes with U <= E, and < 0 for some.
    /// Per-relation, per-type and constant terms (weight products) are left out.
    NeverGrows,
    /// Sites whose objective drops at `sizes`.
    AtSizes,
    /// Sites whose graph-proportional change is < 0 for some sizes with U <= E: the rewrite
    /// pays on some graph (the runtime then chooses per graph among the variants).
    SomeGraphs,
  };
  Mode mode = NeverGrows;
  GraphSizes sizes;
  double balance = kDefaultBalance;
  /// Also applies, whatever it costs, every site whose result an exponential reads (an
  /// `exp` or `softmax`, through any chain of ops): the logits then come from the layer's
  /// inputs (`x (W a)`), not from its messages, which a 16-bit call can then keep in 16 bits
  /// (the values an exponential reads stay float32: docs/runtime.md, "16-bit layers").
  bool exponentialInputs = false;

  static CostPolicy always() { return {Always, {}, kDefaultBalance}; }
  static CostPolicy neverGrows(double balance = kDefaultBalance) {
    return {NeverGrows, {}, balance};
  }
  static CostPolicy someGraphs(double balance = kDefaultBalance) {
    return {SomeGraphs, {}, balance};
  }
  static CostPolicy atSizes(const GraphSizes &sizes, double balance = kDefaultBalance) {
    return {AtSizes, sizes, balance};
  }
  /// True when going from `before` to `after` pays under this policy.
  bool pays(const CostEstimate &before, const CostEstimate &after) const;
};

/// What a rewrite did, or why a site was left alone: one line each.
struct RewriteLog {
  llvm::SmallVector<std::string> applied;
  llvm::SmallVector<std::string> skipped;
};

/// Linear-operator reordering (hector-reorder-linear) on `layer`, site by site under `policy`.
/// Returns the number of sites rewritten.
unsigned reorderLinear(LayerOp layer, const CostPolicy &policy, RewriteLog *log = nullptr);

/// Compact materialisation (hector-compact-materialize) on `layer`, value by value under
/// `policy`. Returns the number of values compacted.
unsigned compactMaterialize(LayerOp layer, const CostPolicy &policy, RewriteLog *log = nullptr);

/// The ways to compile a layer: as written, reordered, compacted, both, and both with every
/// logit computed from the inputs (CostPolicy::exponentialInputs). The last is built apart from
/// "both" because reordering decides site by site before compaction: a logit site that costs
/// more on uncompacted rows can pay once the rows are compacted (rgat_pyg's source side), and a
/// 16-bit call keeps the messages of such a variant in 16 bits.
enum class Variant { None, Reorder, Compact, Both, BothLogits };
llvm::StringRef stringifyVariant(Variant variant);

/// Whether `variant` reorders and whether it compacts.
bool variantReorders(Variant variant);
bool variantCompacts(Variant variant);

/// Applies the rewrites of `variant` (reordering first) to `layer`: reordering under
/// `reorderPolicy` (with CostPolicy::exponentialInputs for BothLogits), compaction under
/// `compactPolicy`. Returns the number of rewrites.
unsigned applyVariant(LayerOp layer, Variant variant, const CostPolicy &reorderPolicy,
                      const CostPolicy &compactPolicy, RewriteLog *log = nullptr);

/// One variant in an explanation: its rewrites and its estimate at the explained sizes.
struct VariantReport {
  Variant variant = Variant::None;
  RewriteLog log;
  /// The estimate as functions of the sizes (what a runtime evaluates per graph).
  CostEstimate cost;
  double flops = 0, bytes = 0, objective = 0, largest = 0;
};

/// The cost model's comparison of the variants of one layer at given sizes.
struct Explanation {
  std::string layer;
  GraphSizes sizes;
  double balance = kDefaultBalance;
  llvm::SmallVector<VariantReport, 4> variants;
  /// The variant with the lowest objective (the simplest among equals).
  Variant choice = Variant::None;
};

/// Evaluates every variant of `layer` (rewrites chosen at `sizes`) on copies; `layer` is not
/// changed.
Explanation explain(LayerOp layer, const GraphSizes &sizes, double balance = kDefaultBalance);

/// Prints `explanation` as the `hector-explain` pass does.
void printExplanation(const Explanation &explanation, llvm::raw_ostream &os);

/// Graph sizes and a machine balance, as `hectorc --explain` takes them.
struct GraphSizesAndBalance {
  GraphSizes sizes;
  double balance = kDefaultBalance;
};

/// Parses "edges=E nodes=N relations=R ntypes=T unique-src=U unique-dst=U balance=B" (any
/// order, separated by spaces or commas; edges required); sets `error` on failure.
mlir::FailureOr<GraphSizesAndBalance> parseGraphSizes(llvm::StringRef text, std::string &error);

/// For every layer with variants (hector-variants, then hector-autodiff and
/// hector-annotate-cost), prints each variant's estimated training cost (forward + backward)
/// and inference cost at `sizes`, its rewrites, and the variants the runtime would choose.
void printVariantChoice(mlir::ModuleOp module, const GraphSizes &sizes, double balance,
                        llvm::raw_ostream &os);

} // namespace hector

#endif // HECTOR_OPTIMIZE_COSTMODEL_H
