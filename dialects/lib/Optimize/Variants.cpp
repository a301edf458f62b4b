//===- Variants.cpp - A layer's optimisation variants and their costs ------===//
//
// hector-variants clones every forward layer into its reordered, compacted and doubly
// optimised variants (dropping those that change nothing); hector-annotate-cost records the
// cost model's estimate of a layer as an attribute, for the runtime's per-graph choice.
//
//===----------------------------------------------------------------------===//
#include "Sites.h"
#include "hector/Optimize/CostModel.h"
#include "hector/Optimize/Passes.h"

#include "hector/Autodiff/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>

namespace hector {
#define GEN_PASS_DEF_VARIANTS
#define GEN_PASS_DEF_ANNOTATECOST
#include "hector/Optimize/OptimizePasses.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;

namespace {

/// Whether `layer` was derived by hector-autodiff or hector-variants, or already differentiated
/// (a variant of it would have no backward layer).
bool isDerived(LayerOp layer) {
  return layer->hasAttr(kForwardAttrName) || layer->hasAttr(kInferenceOfAttrName) ||
         layer->hasAttr(kVariantOfAttrName) || layer->hasAttr(kBackwardAttrName);
}

/// The body of `layer` in generic form, for comparing variants.
std::string bodyText(LayerOp layer) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // One printer state for the layer (isolated from above): printing each op on its own would
  // number the values of the whole module again for every op, quadratic in the module's size.
  AsmState state(layer, OpPrintingFlags().printGenericOpForm());
  for (Operation &op : layer.getBodyRegion().front())
    op.print(os, state);
  return text;
}

ArrayAttr logAttr(Builder &b, const RewriteLog &log) {
  SmallVector<Attribute> lines;
  for (const std::string &line : log.applied)
    lines.push_back(b.getStringAttr("applies " + line));
  for (const std::string &line : log.skipped)
    lines.push_back(b.getStringAttr("skips " + line));
  return b.getArrayAttr(lines);
}

/// The variants of one forward layer, built apart from the module (see VariantsPass).
struct LayerVariants {
  struct Built {
    Variant variant;
    LayerOp copy;
    RewriteLog log;
  };
  SmallVector<Built> built;
  /// The sites that reordering skipped, recorded on the layer itself.
  RewriteLog baseLog;
};

/// Builds the variants of `layer` as detached layers, dropping those that change nothing or
/// repeat an earlier one. Reads only `layer`, so layers are processed in parallel.
LayerVariants buildVariants(LayerOp layer, bool reorder, bool compact) {
  // The sizes are not known in advance: reordering takes the sites that pay on some graph
  // (never one that costs more on every graph); compaction takes every legal value. Whether
  // they pay on a graph is the runtime's choice among the variants.
  CostPolicy reorderPolicy = CostPolicy::someGraphs();
  CostPolicy compactPolicy = CostPolicy::always();
  LayerVariants result;
  SmallVector<std::string> seen = {bodyText(layer)};
  // BothLogits takes every logit site whatever it costs on its own (applyVariant); the runtime
  // weighs the variant as a whole.
  for (Variant variant : {Variant::Reorder, Variant::Compact, Variant::Both, Variant::BothLogits}) {
    if ((variantReorders(variant) && !reorder) || (variantCompacts(variant) && !compact))
      continue;
    LayerOp copy = layer.clone();
    RewriteLog log;
    unsigned applied = applyVariant(copy, variant, reorderPolicy, compactPolicy, &log);
    eraseDeadOps(copy);
    std::string text = bodyText(copy);
    if (variant == Variant::Reorder)
      result.baseLog.skipped.append(log.skipped.begin(), log.skipped.end());
    if (applied == 0 || llvm::is_contained(seen, text)) {
      copy->destroy();
      continue;
    }
    seen.push_back(std::move(text));
    result.built.push_back({variant, copy, std::move(log)});
  }
  return result;
}

struct VariantsPass : public hector::impl::VariantsBase<VariantsPass> {
  using VariantsBase::VariantsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<LayerOp> layers;
    for (LayerOp layer : module.getOps<LayerOp>())
      if (!isDerived(layer) && !layer->hasAttr(kVariantsAttrName))
        layers.push_back(layer);
    // The rewrites of each layer only read and clone that layer: they run in parallel (on the
    // context's threads) into detached layers. Naming and inserting them into the module
    // stays serial, in the module's order, so the output does not depend on the threads.
    std::vector<LayerVariants> variants(layers.size());
    parallelFor(&getContext(), 0, layers.size(),
                [&](size_t i) { variants[i] = buildVariants(layers[i], reorder, compact); });
    // One symbol table for the whole pass, kept up to date as variants are added: building it
    // per layer made the pass quadratic in the number of layers.
    SymbolTable symbols(module);
    bool clash = false;
    for (auto [layer, built] : llvm::zip(layers, variants)) {
      Builder b(layer.getContext());
      std::string base = layer.getSymName().str();
      SmallVector<Attribute> refs;
      Operation *insertAfter = layer;
      for (LayerVariants::Built &variant : built.built) {
        LayerOp copy = variant.copy;
        std::string name = base + "__" + stringifyVariant(variant.variant).str();
        if (clash || symbols.lookup(name)) {
          if (!clash)
            layer.emitError() << "hector-variants: the module already has a layer @" << name;
          clash = true;
          copy->destroy();
          continue;
        }
        copy.setSymName(name);
        copy->setAttr(kVariantAttrName, b.getStringAttr(stringifyVariant(variant.variant)));
        copy->setAttr(kVariantOfAttrName, FlatSymbolRefAttr::get(layer.getSymNameAttr()));
        copy->setAttr(kRewritesAttrName, logAttr(b, variant.log));
        symbols.insert(copy, std::next(Block::iterator(insertAfter)));
        insertAfter = copy;
        refs.push_back(FlatSymbolRefAttr::get(copy.getSymNameAttr()));
      }
      layer->setAttr(kVariantAttrName, b.getStringAttr("none"));
      layer->setAttr(kVariantsAttrName, b.getArrayAttr(refs));
      layer->setAttr(kRewritesAttrName, logAttr(b, built.baseLog));
    }
    if (clash)
      signalPassFailure();
  }
};

DenseF64ArrayAttr coefficients(Builder &b, const SizeLinear &value) {
  return b.getDenseF64ArrayAttr(ArrayRef<double>(value.coeff.data(), value.coeff.size()));
}

struct AnnotateCostPass : public hector::impl::AnnotateCostBase<AnnotateCostPass> {
  using AnnotateCostBase::AnnotateCostBase;

  void runOnOperation() override {
    LayerOp layer = getOperation();
    // An estimate made by an earlier run stays: it was made before the lowering.
    if (layer->hasAttr(kCostAttrName))
      return markAllAnalysesPreserved();
    CostEstimate cost = estimateCost(layer);
    Builder b(layer.getContext());
    SmallVector<Attribute> intermediates;
    for (const SizeLinear &value : cost.intermediates)
      intermediates.push_back(coefficients(b, value));
    layer->setAttr(
        kCostAttrName,
        b.getDictionaryAttr({b.getNamedAttr("flops", coefficients(b, cost.flops)),
                             b.getNamedAttr("bytes", coefficients(b, cost.bytes)),
                             b.getNamedAttr("intermediates", b.getArrayAttr(intermediates))}));
    markAllAnalysesPreserved();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// The choice among compiled variants
//===----------------------------------------------------------------------===//

namespace {

/// The objective (flops + balance x bytes) of the `hector.cost` of `layer` at `sizes`, with
/// its flops and bytes; std::nullopt without an estimate.
struct Evaluated {
  double flops = 0, bytes = 0, objective = 0, largest = 0;
};

std::optional<Evaluated> evaluateCost(LayerOp layer, const GraphSizes &sizes, double balance) {
  auto dict = layer ? layer->getAttrOfType<DictionaryAttr>(kCostAttrName) : DictionaryAttr();
  if (!dict)
    return std::nullopt;
  auto linear = [&](Attribute attr) {
    SizeLinear value;
    if (auto array = dyn_cast_or_null<DenseF64ArrayAttr>(attr))
      for (auto [i, c] : llvm::enumerate(array.asArrayRef()))
        if (i < value.coeff.size())
          value.coeff[i] = c;
    return value;
  };
  Evaluated e;
  e.flops = linear(dict.get("flops")).evaluate(sizes);
  e.bytes = linear(dict.get("bytes")).evaluate(sizes);
  e.objective = e.flops + balance * e.bytes;
  if (auto list = dyn_cast_or_null<ArrayAttr>(dict.get("intermediates")))
    for (Attribute item : list)
      e.largest = std::max(e.largest, linear(item).evaluate(sizes));
  return e;
}

LayerOp lookupLayer(ModuleOp module, Attribute ref) {
  auto symbol = dyn_cast_or_null<FlatSymbolRefAttr>(ref);
  return symbol ? dyn_cast_or_null<LayerOp>(SymbolTable::lookupSymbolIn(module, symbol.getAttr()))
                : LayerOp();
}

} // namespace

FailureOr<GraphSizesAndBalance> hector::parseGraphSizes(StringRef text, std::string &error) {
  GraphSizesAndBalance result;
  SmallVector<StringRef> items;
  SmallVector<StringRef> pieces;
  text.split(pieces, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef piece : pieces) {
    SmallVector<StringRef> parts;
    piece.split(parts, ',', -1, /*KeepEmpty=*/false);
    items.append(parts.begin(), parts.end());
  }
  bool haveEdges = false;
  for (StringRef item : items) {
    auto [key, value] = item.split('=');
    double number = 0;
    if (!item.contains('=') || value.trim().getAsDouble(number) || !(number >= 0)) {
      error = ("malformed size '" + item + "': expected NAME=NUMBER (NUMBER >= 0)").str();
      return failure();
    }
    key = key.trim();
    if (key == "edges") {
      result.sizes.edges = number;
      haveEdges = true;
    } else if (key == "nodes") {
      result.sizes.nodes = number;
    } else if (key == "relations") {
      result.sizes.relations = number;
    } else if (key == "ntypes") {
      result.sizes.ntypes = number;
    } else if (key == "unique-src") {
      result.sizes.uniqueSrc = number;
    } else if (key == "unique-dst") {
      result.sizes.uniqueDst = number;
    } else if (key == "balance") {
      result.balance = number;
    } else {
      error = ("unknown size '" + key +
               "' (expected edges, nodes, relations, ntypes, unique-src, unique-dst, balance)")
                  .str();
      return failure();
    }
  }
  if (!haveEdges) {
    error = "the sizes need edges=E";
    return failure();
  }
  if (result.sizes.uniqueSrc > result.sizes.edges || result.sizes.uniqueDst > result.sizes.edges) {
    error = "unique-src and unique-dst cannot exceed edges";
    return failure();
  }
  return result;
}

void hector::printVariantChoice(ModuleOp module, const GraphSizes &sizes, double balance,
                                raw_ostream &os) {
  for (LayerOp layer : module.getOps<LayerOp>()) {
    if (!layer->hasAttr(kVariantsAttrName))
      continue;
    SmallVector<LayerOp> variants = {layer};
    for (Attribute ref : layer->getAttrOfType<ArrayAttr>(kVariantsAttrName))
      if (LayerOp variant = lookupLayer(module, ref))
        variants.push_back(variant);
    os << "layer @" << layer.getSymName() << ": N=" << llvm::format("%.0f", sizes.nodes)
       << " E=" << llvm::format("%.0f", sizes.edges)
       << " R=" << llvm::format("%.0f", sizes.relations)
       << " T=" << llvm::format("%.0f", sizes.ntypes)
       << " U_src=" << llvm::format("%.0f", sizes.uniqueSrc > 0 ? sizes.uniqueSrc : sizes.edges)
       << " U_dst=" << llvm::format("%.0f", sizes.uniqueDst > 0 ? sizes.uniqueDst : sizes.edges)
       << " balance=" << llvm::format("%g", balance) << " flop/byte\n";
    struct Row {
      std::string name;
      double train, inference, largest;
    };
    SmallVector<Row> rows;
    for (LayerOp variant : variants) {
      std::optional<Evaluated> forward = evaluateCost(variant, sizes, balance);
      std::optional<Evaluated> backward =
          evaluateCost(lookupLayer(module, variant->getAttr(kBackwardAttrName)), sizes, balance);
      std::optional<Evaluated> inference =
          evaluateCost(lookupLayer(module, variant->getAttr(kInferenceAttrName)), sizes, balance);
      if (!forward)
        continue;
      Row row;
      row.name = variant->getAttrOfType<StringAttr>(kVariantAttrName).getValue().str();
      row.train = forward->objective + (backward ? backward->objective : 0);
      row.inference = inference ? inference->objective : forward->objective;
      row.largest = forward->largest;
      double base = rows.empty() ? 0 : rows.front().train;
      os << "  " << row.name << ": train=" << llvm::format("%.4g", row.train)
         << " inference=" << llvm::format("%.4g", row.inference)
         << " largest=" << llvm::format("%.4g", row.largest);
      if (!rows.empty() && row.train > 0)
        os << " (train " << llvm::format("%.2f", base / row.train) << "x)";
      os << "\n    forward: flops=" << llvm::format("%.4g", forward->flops)
         << " bytes=" << llvm::format("%.4g", forward->bytes) << "\n";
      if (auto lines = variant->getAttrOfType<ArrayAttr>(kRewritesAttrName))
        for (Attribute line : lines)
          os << "    " << cast<StringAttr>(line).getValue() << "\n";
      rows.push_back(row);
    }
    // The lowest objective; the first (simplest) among equals, as the runtime chooses.
    auto best = [&](double Row::*field) {
      const Row *choice = &rows.front();
      for (const Row &row : rows)
        if (row.*field < choice->*field * (1 - 1e-9))
          choice = &row;
      return choice->name;
    };
    if (!rows.empty())
      os << "  choice: training " << best(&Row::train) << ", inference " << best(&Row::inference)
         << "\n";
  }
}
