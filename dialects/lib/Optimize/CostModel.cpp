//===- CostModel.cpp - Cost of a layer, and the variants' report ----------===//
//
// FLOPs and bytes moved of every live op as linear functions of the graph's sizes, the policy
// deciding whether a rewrite pays, the driver of the rewrite sites, and the explanation
// comparing the four variants.
//
//===----------------------------------------------------------------------===//
#include "Sites.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"

#include <algorithm>

using namespace mlir;
using namespace hector;

//===----------------------------------------------------------------------===//
// SizeLinear
//===----------------------------------------------------------------------===//

SizeLinear SizeLinear::rows(Space space, double perRow) {
  SizeLinear result;
  switch (space) {
  case Space::Node:
    result[Nodes] = perRow;
    break;
  case Space::Src:
  case Space::Dst:
  case Space::Edge:
    result[Edges] = perRow;
    break;
  case Space::UniqueSrc:
    result[UniqueSrc] = perRow;
    break;
  case Space::UniqueDst:
    result[UniqueDst] = perRow;
    break;
  case Space::Relation:
    result[Relations] = perRow;
    break;
  case Space::NType:
    result[NTypes] = perRow;
    break;
  case Space::None:
    result[One] = perRow;
    break;
  }
  return result;
}

SizeLinear SizeLinear::slices(Slicing slicing, double perSlice) {
  return rows(sliceSpace(slicing), perSlice);
}

SizeLinear &SizeLinear::operator+=(const SizeLinear &other) {
  for (int i = 0; i < NumTerms; ++i)
    coeff[i] += other.coeff[i];
  return *this;
}

SizeLinear SizeLinear::operator-(const SizeLinear &other) const {
  SizeLinear result = *this;
  for (int i = 0; i < NumTerms; ++i)
    result.coeff[i] -= other.coeff[i];
  return result;
}

double SizeLinear::evaluate(const GraphSizes &sizes) const {
  double uniqueSrc = sizes.uniqueSrc > 0 ? sizes.uniqueSrc : sizes.edges;
  double uniqueDst = sizes.uniqueDst > 0 ? sizes.uniqueDst : sizes.edges;
  return coeff[Nodes] * sizes.nodes + coeff[Edges] * sizes.edges + coeff[UniqueSrc] * uniqueSrc +
         coeff[UniqueDst] * uniqueDst + coeff[Relations] * sizes.relations +
         coeff[NTypes] * sizes.ntypes + coeff[One];
}

void SizeLinear::print(raw_ostream &os) const {
  static const char *const names[NumTerms] = {"N", "E", "U_src", "U_dst", "R", "T", ""};
  bool first = true;
  for (int i = 0; i < NumTerms; ++i) {
    if (coeff[i] == 0)
      continue;
    if (!first)
      os << " + ";
    os << llvm::format("%.0f", coeff[i]);
    if (*names[i])
      os << ' ' << names[i];
    first = false;
  }
  if (first)
    os << '0';
}

//===----------------------------------------------------------------------===//
// Estimates
//===----------------------------------------------------------------------===//

/// Bytes of one element (float32) and of one index (int32).
static constexpr double kElementBytes = 4, kIndexBytes = 4;

/// Elements of one row of a value or one slice of a weight.
static double numel(Type type) {
  RowShape shape = isa<ValueType>(type) ? cast<ValueType>(type).getShape()
                                        : cast<WeightType>(type).getShape();
  double n = 1;
  for (int64_t dim : shape.dims)
    n *= static_cast<double>(dim);
  return n;
}

/// Rows of a value, or slices of a weight, as a size term times `per`.
static SizeLinear count(Type type, double per) {
  if (auto value = dyn_cast<ValueType>(type))
    return SizeLinear::rows(value.getSpace(), per);
  return SizeLinear::slices(cast<WeightType>(type).getSlicing(), per);
}

static Space spaceOf(Value value) { return cast<ValueType>(value.getType()).getSpace(); }

/// True for values in relation, ntype or none space and for weights: read once per slice.
static bool isWeightLike(Value value) {
  auto type = dyn_cast<ValueType>(value.getType());
  if (!type)
    return true;
  Space space = type.getSpace();
  return space == Space::Relation || space == Space::NType || space == Space::None;
}

/// Whether `user` reads `value` as a kernel operand that the lowering materialises: a GEMM's
/// input, a weight gradient's operand, or the input of a reduction across rows (each is its own
/// kernel; only a plain gather of a table is fused into it). A pair sum's input is computed in
/// the node traversal over the pairs that sums it.
static bool readAsKernelOperand(Operation *user, Value value) {
  if (auto linear = dyn_cast<LinearOp>(user))
    return linear.getInput() == value;
  if (isa<WeightGradOp>(user))
    return true;
  if (auto reduce = dyn_cast<ReduceOp>(user))
    return !reduce.isRowLocal() && !reduce.isPairSum();
  return false;
}

/// Ops whose results the lowering writes to memory: GEMMs, weight products, reductions, and
/// any other value a GEMM, a weight gradient or a reduction across rows reads (gathers aside).
static bool isMaterialising(Operation *op) {
  if (isa<LinearOp, WeightMatmulOp, WeightDotOp, AggregateOp, ReduceOp, SoftmaxOp, WeightGradOp>(
          op))
    return true;
  if (op->getNumResults() != 1 || isa<InputOp, WeightOp, ConstantOp, SliceOp, SrcOp, DstOp,
                                      UniqueGatherOp, UniqueExpandOp>(op))
    return false;
  Value result = op->getResult(0);
  return llvm::any_of(result.getUsers(),
                      [&](Operation *user) { return readAsKernelOperand(user, result); });
}

/// The space of the rows an op iterates over: its input's for GEMMs and reductions, the edges
/// for per-edge gathers, its result's otherwise.
static Space iterationSpace(Operation *op) {
  if (isa<LinearOp, AggregateOp, ReduceOp, SoftmaxOp, WeightGradOp>(op))
    return spaceOf(op->getOperand(0));
  if (isa<SrcOp, DstOp, UniqueExpandOp>(op))
    return Space::Edge;
  if (auto gather = dyn_cast<UniqueGatherOp>(op))
    return gather.getSide() == EdgeEnd::Src ? Space::UniqueSrc : Space::UniqueDst;
  return spaceOf(op->getResult(0));
}

CostEstimate hector::estimateCost(LayerOp layer) {
  // The live ops: those some output depends on.
  llvm::DenseSet<Operation *> live;
  for (Operation &op : llvm::reverse(*layer.getBody())) {
    bool used = isa<OutputOp>(op) || llvm::any_of(op.getUsers(), [&](Operation *user) {
                  return live.contains(user);
                });
    if (used)
      live.insert(&op);
  }

  CostEstimate cost;
  for (Operation &op : *layer.getBody()) {
    if (!live.contains(&op) || isa<InputOp, WeightOp, OutputOp, ConstantOp, SliceOp, SrcOp, DstOp,
                                   UniqueGatherOp, UniqueExpandOp>(op))
      continue;
    bool weightOp = isa<WeightMatmulOp, WeightDotOp, WeightMatmulGradOp, WeightAddOp>(op);
    Space rows = weightOp ? Space::None : iterationSpace(&op);

    // Reads: weight-like operands once per slice; materialised values once per iterated row.
    for (Value operand : op.getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (weightOp || isWeightLike(operand)) {
        if (def && (isa<WeightOp>(def) || isMaterialising(def)))
          cost.bytes += count(operand.getType(), numel(operand.getType()) * kElementBytes);
        continue;
      }
      if (isa<InputOp>(def) || isMaterialising(def))
        cost.bytes += SizeLinear::rows(rows, numel(operand.getType()) * kElementBytes);
      // A gather is fused into each reader: its rows and one index per row, every time.
      else if (isa<SrcOp, DstOp, UniqueExpandOp, UniqueGatherOp>(def))
        cost.bytes +=
            SizeLinear::rows(rows, numel(operand.getType()) * kElementBytes + kIndexBytes);
    }
    // Writes.
    if (isMaterialising(&op)) {
      Type type = op.getResult(0).getType();
      cost.bytes += count(type, numel(type) * kElementBytes);
      if (!isa<WeightType>(type))
        cost.intermediates.push_back(count(type, numel(type)));
    }

    // FLOPs.
    llvm::TypeSwitch<Operation *>(&op)
        .Case([&](LinearOp linear) {
          cost.flops += SizeLinear::rows(rows, 2 * numel(linear.getWeight().getType()));
        })
        .Case([&](WeightGradOp grad) {
          cost.flops += SizeLinear::rows(rows, 2 * numel(grad.getResult().getType()));
        })
        .Case([&](WeightMatmulOp matmul) {
          double k = static_cast<double>(matmul.getRhs().getType().getShape().dims.front());
          Type type = matmul.getResult().getType();
          cost.flops += count(type, 2 * numel(type) * k);
        })
        .Case([&](WeightDotOp dot) {
          cost.flops += count(dot.getResult().getType(), 2 * numel(dot.getLhs().getType()));
        })
        .Case([&](DotOp dot) {
          cost.flops += SizeLinear::rows(rows, 2 * numel(dot.getLhs().getType()));
        })
        .Case([&](SoftmaxOp softmax) {
          cost.flops += SizeLinear::rows(rows, 4 * numel(softmax.getInput().getType()));
        })
        .Case<AggregateOp, ReduceOp>([&](Operation *reduction) {
          cost.flops += SizeLinear::rows(rows, numel(reduction->getOperand(0).getType()));
        })
        .Case<SrcOp, DstOp, UniqueGatherOp, UniqueExpandOp, SplitHeadsOp, MergeHeadsOp,
              ConcatOp, NarrowOp>([](Operation *) {})
        .Default([&](Operation *other) {
          // Elementwise: one operation per result element.
          if (other->getNumResults() == 1)
            cost.flops += count(other->getResult(0).getType(),
                                numel(other->getResult(0).getType()));
        });
  }
  return cost;
}

double CostEstimate::objective(const GraphSizes &sizes, double balance) const {
  return flops.evaluate(sizes) + balance * bytes.evaluate(sizes);
}

double CostEstimate::largestIntermediate(const GraphSizes &sizes) const {
  double largest = 0;
  for (const SizeLinear &value : intermediates)
    largest = std::max(largest, value.evaluate(sizes));
  return largest;
}

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

bool CostPolicy::pays(const CostEstimate &before, const CostEstimate &after) const {
  switch (mode) {
  case Always:
    return true;
  case AtSizes: {
    double old = before.objective(sizes, balance), now = after.objective(sizes, balance);
    return now < old * (1 - 1e-9);
  }
  case NeverGrows:
  case SomeGraphs: {
    // The graph-proportional part of the objective's change, on the extreme rays of
    // {N, E >= 0, 0 <= U_src, U_dst <= E}: nodes alone, and edges with each unique count
    // either 0 or E. Weight terms (R, T, 1) are left out.
    SizeLinear delta = after.flops - before.flops;
    SizeLinear bytes = after.bytes - before.bytes;
    for (int i = 0; i < SizeLinear::NumTerms; ++i)
      delta.coeff[i] += balance * bytes.coeff[i];
    // A unique count of 0 means E in GraphSizes; use a tiny positive count for "no pairs".
    constexpr double none = 1e-12;
    GraphSizes rays[] = {{1, 0, 0, 0, none, none},  {0, 1, 0, 0, none, none},
                         {0, 1, 0, 0, 1, none},     {0, 1, 0, 0, none, 1},
                         {0, 1, 0, 0, 1, 1}};
    auto graphPart = [&](const GraphSizes &ray) {
      SizeLinear graph = delta;
      graph[SizeLinear::Relations] = graph[SizeLinear::NTypes] = graph[SizeLinear::One] = 0;
      return graph.evaluate(ray);
    };
    bool drops = false, grows = false;
    for (const GraphSizes &ray : rays) {
      double change = graphPart(ray);
      grows |= change > 1e-6;
      drops |= change < -1e-6;
    }
    return mode == SomeGraphs ? drops : drops && !grows;
  }
  }
  llvm_unreachable("unknown cost policy");
}

//===----------------------------------------------------------------------===//
// Sites
//===----------------------------------------------------------------------===//

void hector::eraseDeadOps(LayerOp layer) {
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*layer.getBody())))
    if (op.use_empty() && isPure(&op))
      op.erase();
}

/// "'hector.dot' (line 12)" for a site in a log.
static std::string describeSite(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << '\'' << op->getName() << '\'';
  if (auto loc = op->getLoc()->findInstanceOf<FileLineColLoc>())
    os << " (line " << loc.getLine() << ')';
  return text;
}

/// Whether an exponential (an `exp` or a `softmax`) reads a result of `op`, through any chain
/// of top-level ops of its layer.
static bool feedsExponential(Operation *op) {
  SmallVector<Operation *> work = {op};
  llvm::DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *current = work.pop_back_val();
    if (isa<ExpOp, SoftmaxOp>(current))
      return true;
    for (Operation *user : current->getUsers())
      if (seen.insert(user).second)
        work.push_back(user);
  }
  return false;
}

LogicalResult SitePattern::matchAndRewrite(Operation *op, PatternRewriter &rewriter) const {
  if (failed(check(op, rewriter)))
    return failure();
  // A site an exponential reads, under CostPolicy::exponentialInputs, is applied whether it
  // pays or not (and says so when it does not).
  const bool paying = policy.mode == CostPolicy::Always || pays(op);
  if (!paying && !(policy.exponentialInputs && feedsExponential(op)))
    return rewriter.notifyMatchFailure(op, "the estimated cost does not drop");
  std::string site = describeSite(op);
  std::string what = apply(op, rewriter);
  if (log)
    log->applied.push_back(site + ": " + what +
                           (paying ? "" : " (the logits from the inputs, at a cost)"));
  return success();
}

bool SitePattern::pays(Operation *op) const {
  auto layer = op->getParentOfType<LayerOp>();
  unsigned index = 0;
  for (Operation &other : *layer.getBody()) {
    if (&other == op)
      break;
    ++index;
  }
  LayerOp before = layer.clone(), after = layer.clone();
  Operation *copy = &*std::next(after.getBody()->begin(), index);
  PatternRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(copy);
  bool result = false;
  if (succeeded(check(copy, rewriter))) {
    apply(copy, rewriter);
    eraseDeadOps(before);
    eraseDeadOps(after);
    result = policy.pays(estimateCost(before), estimateCost(after));
  }
  before.erase();
  after.erase();
  return result;
}

namespace {
/// Records the reason a pattern gave for leaving a site alone.
struct ReasonListener : public RewriterBase::Listener {
  void notifyMatchFailure(Location loc,
                          function_ref<void(Diagnostic &)> reasonCallback) override {
    Diagnostic diag(loc, DiagnosticSeverity::Remark);
    reasonCallback(diag);
    reason = diag.str();
  }
  std::string reason;
};
} // namespace

unsigned hector::applySites(LayerOp layer, RewritePatternSet &patterns, RewriteLog *log) {
  ReasonListener listener;
  PatternRewriter rewriter(layer.getContext());
  rewriter.setListener(&listener);
  unsigned rewrites = 0;
  SmallVector<std::string> skipped;
  for (bool changed = true; changed;) {
    changed = false;
    skipped.clear();
    SmallVector<Operation *> ops = llvm::map_to_vector(*layer.getBody(), [](Operation &op) {
      return &op;
    });
    for (Operation *op : ops) {
      for (const std::unique_ptr<RewritePattern> &pattern : patterns.getNativePatterns()) {
        if (pattern->getRootKind() != op->getName())
          continue;
        listener.reason.clear();
        rewriter.setInsertionPoint(op);
        if (succeeded(pattern->matchAndRewrite(op, rewriter))) {
          changed = true;
          break;
        }
        if (!listener.reason.empty())
          skipped.push_back(describeSite(op) + ": " + listener.reason);
      }
      if (changed)
        break;
    }
    if (changed) {
      ++rewrites;
      eraseDeadOps(layer);
    }
  }
  if (log)
    log->skipped.append(skipped.begin(), skipped.end());
  return rewrites;
}

//===----------------------------------------------------------------------===//
// Variants and explanations
//===----------------------------------------------------------------------===//

StringRef hector::stringifyVariant(Variant variant) {
  switch (variant) {
  case Variant::None:
    return "none";
  case Variant::Reorder:
    return "reorder";
  case Variant::Compact:
    return "compact";
  case Variant::Both:
    return "both";
  case Variant::BothLogits:
    return "both_logits";
  }
  llvm_unreachable("unknown variant");
}

bool hector::variantReorders(Variant variant) {
  return variant != Variant::None && variant != Variant::Compact;
}

bool hector::variantCompacts(Variant variant) {
  return variant != Variant::None && variant != Variant::Reorder;
}

unsigned hector::applyVariant(LayerOp layer, Variant variant, const CostPolicy &reorderPolicy,
                              const CostPolicy &compactPolicy, RewriteLog *log) {
  unsigned applied = 0;
  if (variantReorders(variant)) {
    CostPolicy policy = reorderPolicy;
    policy.exponentialInputs = variant == Variant::BothLogits;
    applied += reorderLinear(layer, policy, log);
  }
  if (variantCompacts(variant))
    applied += compactMaterialize(layer, compactPolicy, log);
  return applied;
}

Explanation hector::explain(LayerOp layer, const GraphSizes &sizes, double balance) {
  Explanation result;
  result.layer = layer.getSymName().str();
  result.sizes = sizes;
  result.balance = balance;
  CostPolicy policy = CostPolicy::atSizes(sizes, balance);
  for (Variant variant :
       {Variant::None, Variant::Reorder, Variant::Compact, Variant::Both, Variant::BothLogits}) {
    LayerOp copy = layer.clone();
    VariantReport report;
    report.variant = variant;
    applyVariant(copy, variant, policy, policy, &report.log);
    eraseDeadOps(copy);
    report.cost = estimateCost(copy);
    copy.erase();
    report.flops = report.cost.flops.evaluate(sizes);
    report.bytes = report.cost.bytes.evaluate(sizes);
    report.objective = report.cost.objective(sizes, balance);
    report.largest = report.cost.largestIntermediate(sizes);
    result.variants.push_back(std::move(report));
  }
  // The lowest objective; among equals (within 1e-9) the first, i.e. the simplest.
  const VariantReport *best = &result.variants.front();
  for (const VariantReport &report : result.variants)
    if (report.objective < best->objective * (1 - 1e-9))
      best = &report;
  result.choice = best->variant;
  return result;
}

void hector::printExplanation(const Explanation &explanation, raw_ostream &os) {
  const GraphSizes &s = explanation.sizes;
  os << "layer @" << explanation.layer << ": N=" << llvm::format("%.0f", s.nodes)
     << " E=" << llvm::format("%.0f", s.edges) << " R=" << llvm::format("%.0f", s.relations)
     << " T=" << llvm::format("%.0f", s.ntypes)
     << " U_src=" << llvm::format("%.0f", s.uniqueSrc > 0 ? s.uniqueSrc : s.edges)
     << " U_dst=" << llvm::format("%.0f", s.uniqueDst > 0 ? s.uniqueDst : s.edges)
     << " balance=" << llvm::format("%g", explanation.balance) << " flop/byte\n";
  double base = explanation.variants.front().objective;
  for (const VariantReport &report : explanation.variants) {
    os << "  " << stringifyVariant(report.variant) << ": flops=" << llvm::format("%.4g", report.flops)
       << " bytes=" << llvm::format("%.4g", report.bytes)
       << " largest=" << llvm::format("%.4g", report.largest)
       << " cost=" << llvm::format("%.4g", report.objective);
    if (report.variant != Variant::None && base > 0)
      os << " (" << llvm::format("%.2f", base / report.objective) << "x)";
    os << '\n';
    os << "    flops = ";
    report.cost.flops.print(os);
    os << "\n    bytes = ";
    report.cost.bytes.print(os);
    os << '\n';
    for (const std::string &line : report.log.applied)
      os << "    applies " << line << '\n';
    for (const std::string &line : report.log.skipped)
      os << "    skips " << line << '\n';
  }
  os << "  choice: " << stringifyVariant(explanation.choice) << '\n';
}
