//===- Passes.cpp - The optimisation passes -------------------------------===//
//
// hector-reorder-linear, hector-compact-materialize and hector-explain: the options become a
// cost policy (sizes given: improve at those sizes; none: never grow), and the work is done by
// the functions of CostModel.h.
//
//===----------------------------------------------------------------------===//
#include "hector/Optimize/CostModel.h"
#include "hector/Optimize/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace hector {
#define GEN_PASS_DEF_REORDERLINEAR
#define GEN_PASS_DEF_COMPACTMATERIALIZE
#define GEN_PASS_DEF_EXPLAIN
#include "hector/Optimize/OptimizePasses.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {

/// The cost options every pass of OptimizePasses.td takes.
struct CostOptions {
  StringRef argument;
  int64_t edges, nodes, relations, ntypes, uniqueSrc, uniqueDst;
  double balance;
};

/// The options of a pass declared with Hector_CostOptions.
template <typename PassT>
CostOptions optionsOf(PassT &pass) {
  return {pass.getArgument(), pass.edges,     pass.nodes,     pass.relations,
          pass.ntypes,        pass.uniqueSrc, pass.uniqueDst, pass.balance};
}

/// The sizes of a pass's options, or an error at the layer when they are inconsistent.
FailureOr<std::optional<GraphSizes>> sizesOf(const CostOptions &pass, LayerOp layer) {
  int64_t values[] = {pass.edges, pass.nodes, pass.relations, pass.ntypes, pass.uniqueSrc,
                      pass.uniqueDst};
  if (llvm::any_of(values, [](int64_t v) { return v < 0; }) || pass.balance < 0)
    return layer.emitError() << pass.argument << ": sizes and balance must not be negative";
  if (pass.uniqueSrc > pass.edges || pass.uniqueDst > pass.edges)
    return layer.emitError() << pass.argument
                             << ": unique-src and unique-dst cannot exceed edges ("
                             << pass.edges << ")";
  if (pass.edges == 0) {
    if (pass.nodes || pass.uniqueSrc || pass.uniqueDst)
      return layer.emitError() << pass.argument
                               << ": give edges= with the other sizes";
    return std::optional<GraphSizes>();
  }
  GraphSizes sizes;
  sizes.edges = static_cast<double>(pass.edges);
  sizes.nodes = static_cast<double>(pass.nodes);
  sizes.relations = static_cast<double>(pass.relations);
  sizes.ntypes = static_cast<double>(pass.ntypes);
  sizes.uniqueSrc = static_cast<double>(pass.uniqueSrc);
  sizes.uniqueDst = static_cast<double>(pass.uniqueDst);
  return std::optional<GraphSizes>(sizes);
}

/// The policy of a pass: improve at the given sizes, or never grow when none are given.
FailureOr<CostPolicy> policyOf(const CostOptions &pass, LayerOp layer) {
  FailureOr<std::optional<GraphSizes>> sizes = sizesOf(pass, layer);
  if (failed(sizes))
    return failure();
  if (*sizes)
    return CostPolicy::atSizes(**sizes, pass.balance);
  return CostPolicy::neverGrows(pass.balance);
}

struct ReorderLinearPass : public hector::impl::ReorderLinearBase<ReorderLinearPass> {
  using ReorderLinearBase::ReorderLinearBase;
  friend CostOptions optionsOf<>(ReorderLinearPass &);
  void runOnOperation() override {
    FailureOr<CostPolicy> policy = policyOf(optionsOf(*this), getOperation());
    if (failed(policy))
      return signalPassFailure();
    reorderLinear(getOperation(), *policy);
  }
};

struct CompactMaterializePass
    : public hector::impl::CompactMaterializeBase<CompactMaterializePass> {
  using CompactMaterializeBase::CompactMaterializeBase;
  friend CostOptions optionsOf<>(CompactMaterializePass &);
  void runOnOperation() override {
    FailureOr<CostPolicy> policy = policyOf(optionsOf(*this), getOperation());
    if (failed(policy))
      return signalPassFailure();
    compactMaterialize(getOperation(), *policy);
  }
};

struct ExplainPass : public hector::impl::ExplainBase<ExplainPass> {
  using ExplainBase::ExplainBase;
  friend CostOptions optionsOf<>(ExplainPass &);
  void runOnOperation() override {
    LayerOp layer = getOperation();
    FailureOr<std::optional<GraphSizes>> sizes = sizesOf(optionsOf(*this), layer);
    if (failed(sizes))
      return signalPassFailure();
    if (!*sizes) {
      layer.emitError() << getArgument() << ": needs the graph's sizes (edges=, nodes=, ...)";
      return signalPassFailure();
    }
    printExplanation(explain(layer, **sizes, balance), llvm::outs());
    markAllAnalysesPreserved();
  }
};

} // namespace
