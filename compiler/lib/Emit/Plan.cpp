//===- Plan.cpp - The plan of a module's layers ---------------------------===//
//
// Plans every layer of a module from what hector-prepare-emission recorded (PrepareEmission.cpp:
// the kernel kind and name of each top-level op, the layer's emission id): the glue's tensor
// names; the graph structures the printed code reads; the points where the glue releases
// intermediates and the memory a call holds; the namespaces of the layers a layer names
// (backward, inference, variants).
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "hector/Dialect/LayerRelations.h"
#include "hector/Emit/Emitter.h"
#include "hector/Emit/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace mlir;

namespace hector {
namespace emit {

//===----------------------------------------------------------------------===//
// Values of the plan
//===----------------------------------------------------------------------===//

bool isSavedOutput(OutputOp output) { return output.getName().starts_with("saved."); }
bool isSavedInput(InputOp input) { return input.getName().starts_with("saved."); }

Space spaceOf(Value v) {
  if (auto value = dyn_cast<ValueType>(v.getType()))
    return value.getSpace();
  return sliceSpace(cast<WeightType>(v.getType()).getSlicing());
}

ArrayRef<int64_t> dimsOf(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return value.getDims();
  return cast<WeightType>(type).getDims();
}

std::optional<Space> pairSpaceOf(TraversalOp op) {
  if (op.getKind() != TraversalKind::Edge || op.getNumResults() == 0)
    return std::nullopt;
  Space first = cast<ValueType>(op.getResult(0).getType()).getSpace();
  if (first != Space::UniqueSrc && first != Space::UniqueDst)
    return std::nullopt;
  for (Type type : op.getResultTypes())
    if (cast<ValueType>(type).getSpace() != first)
      return std::nullopt;
  return first;
}

std::optional<Space> pairSumSpaceOf(TraversalOp op) {
  if (op.getKind() != TraversalKind::Node)
    return std::nullopt;
  for (Operation &inner : op.getBodyRegion().front())
    if (auto reduce = dyn_cast<ReduceOp>(inner); reduce && reduce.isPairSum())
      return cast<ValueType>(reduce.getResult().getType()).getSpace();
  return std::nullopt;
}

/// The value whose storage `v` reads: the table of a fused gather, the weight of a slice.
static Value storedValue(const LayerPlan &plan, Value v) {
  auto marker = plan.gathers.find(v);
  if (marker != plan.gathers.end())
    v = marker->second.table;
  if (auto slice = v.getDefiningOp<SliceOp>())
    v = slice.getInput();
  return v;
}

bool isWide(const LayerPlan &plan, Value v) { return plan.wide.contains(storedValue(plan, v)); }

std::string elementTypeOf(const LayerPlan &plan, Value v) {
  return isWide(plan, v) ? "::hector::tmpl::AccumType<T>" : "T";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

int recordedPassesOf(TraversalOp op) {
  return static_cast<int>(op->getAttrOfType<IntegerAttr>(kPassesAttrName).getInt());
}

GatherMarker gatherMarkerOf(Operation *op) {
  Value table = op->getOperand(op->getNumOperands() - 1);
  if (isa<SrcOp>(op))
    return {table, "g.sortedSrc"};
  if (isa<DstOp>(op))
    return {table, "g.sortedDst"};
  return {table,
          cast<UniqueGatherOp>(op).getSide() == EdgeEnd::Src ? "g.uniqueSrc" : "g.uniqueDst"};
}

/// Plans one layer from the annotations of hector-prepare-emission: the tensors of its inputs,
/// weights and outputs, the fused gathers, and a kernel (its kind, name and result tensors) for
/// every other top-level op; an error when the layer was not prepared.
static FailureOr<LayerPlan> planLayer(LayerOp layer) {
  auto notPrepared = [](Operation *op) {
    return op->emitError("the kernel-level IR is not prepared for emission (hectorc runs "
                         "--hector-prepare-emission before it emits)");
  };
  LayerPlan plan;
  plan.layer = layer;
  auto id = layer->getAttrOfType<StringAttr>(kEmitIdAttrName);
  if (!id)
    return notPrepared(layer);
  plan.id = id.str();
  for (Operation &op : layer.getBodyRegion().front()) {
    if (auto input = dyn_cast<InputOp>(op)) {
      plan.tensors[input.getResult()] = "in" + std::to_string(plan.inputs.size());
      plan.inputs.push_back(input);
      continue;
    }
    if (auto weight = dyn_cast<WeightOp>(op)) {
      plan.tensors[weight.getResult()] = "w" + std::to_string(plan.weights.size());
      plan.weights.push_back(weight);
      continue;
    }
    if (auto slice = dyn_cast<SliceOp>(op)) {
      plan.tensors[slice.getResult()] = plan.tensors.lookup(slice.getInput());
      continue;
    }
    if (auto output = dyn_cast<OutputOp>(op)) {
      plan.outputs.push_back(output);
      continue;
    }
    auto kind = op.getAttrOfType<KernelKindAttr>(kKernelAttrName);
    if (!kind)
      return notPrepared(&op);
    if (kind.getValue() == KernelKind::FusedGather) {
      // A gather at the top level is fused into the weight gradients that read it.
      GatherMarker marker = gatherMarkerOf(&op);
      plan.tensors[op.getResult(0)] = plan.tensors.lookup(marker.table);
      plan.gathers[op.getResult(0)] = std::move(marker);
      continue;
    }
    auto name = op.getAttrOfType<StringAttr>(kKernelNameAttrName);
    if (!name || (isa<TraversalOp>(op) && !op.getAttrOfType<IntegerAttr>(kPassesAttrName)))
      return notPrepared(&op);
    size_t index = plan.kernels.size();
    for (auto [i, result] : llvm::enumerate(op.getResults()))
      plan.tensors[result] = "t" + std::to_string(index) + "_" + std::to_string(i);
    plan.kernels.push_back({&op, name.str(), kind.getValue()});
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// What a call reads and holds
//===----------------------------------------------------------------------===//

/// The graph structures that emitted code reads: every GraphView array `g.<field>` and graph
/// accessor `graph.<field>()` it names, and the arrays of the GraphView views it builds.
static graph_schema::GraphStructureMask structuresNamedIn(StringRef text) {
  using graph_schema::GraphStructure;
  using graph_schema::maskOf;
  graph_schema::GraphStructureMask mask = 0;
  // `g.<field>` not followed by more of an identifier, or `graph.<field>()`.
  auto named = [&](const std::string &field) {
    std::string member = "g." + field;
    for (size_t at = text.find(member); at != StringRef::npos; at = text.find(member, at + 1)) {
      bool before = at > 0 && (llvm::isAlnum(text[at - 1]) || text[at - 1] == '_');
      size_t end = at + member.size();
      bool after = end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_');
      if (!before && !after)
        return true;
    }
    return text.contains("graph." + field + "()");
  };
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    if (named(graph_schema::graphStructures()[k].field))
      mask |= graph_schema::GraphStructureMask(1) << k;
  auto view = [&](StringRef call, std::initializer_list<GraphStructure> reads) {
    if (text.contains(call))
      for (GraphStructure r : reads)
        mask |= maskOf(r);
  };
  view("g.edges()",
       {GraphStructure::in_ptr, GraphStructure::sorted_src, GraphStructure::sorted_etype});
  view("g.inCsr()", {GraphStructure::in_ptr, GraphStructure::sorted_src});
  view("g.outCsr()", {GraphStructure::out_ptr, GraphStructure::out_pos, GraphStructure::out_dst});
  view("g.inPairCsr()", {GraphStructure::in_ptr, GraphStructure::sorted_src,
                         GraphStructure::unique_dst_run_ptr, GraphStructure::unique_dst_run});
  view("g.outPairCsr()", {GraphStructure::out_ptr, GraphStructure::out_pos, GraphStructure::out_dst,
                          GraphStructure::unique_src_run_ptr, GraphStructure::unique_src_run});
  view("g.inRuns()", {GraphStructure::in_ptr, GraphStructure::unique_dst_run_ptr,
                      GraphStructure::unique_dst_run});
  view("g.outRuns()", {GraphStructure::out_ptr, GraphStructure::out_pos,
                       GraphStructure::unique_src_run_ptr, GraphStructure::unique_src_run});
  view("g.uniqueSrcPairs()", {GraphStructure::unique_src_ptr, GraphStructure::unique_src});
  view("g.uniqueDstPairs()", {GraphStructure::unique_dst_ptr, GraphStructure::unique_dst});
  view("graph.sortEdgeData(", {GraphStructure::edge_perm});
  view("graph.unsortEdgeData(", {GraphStructure::edge_perm});
  return mask;
}

/// Fills plan.structures: what the CPU kernels and the glue of the layer read (the CUDA
/// kernels read the same arrays), and the pair counts of the spaces its tensors have.
static void computeStructures(LayerPlan &plan) {
  using graph_schema::GraphStructure;
  using graph_schema::maskOf;
  std::string text;
  llvm::raw_string_ostream os(text);
  (void)printKernels(plan, /*cuda=*/false, os);
  for (const Kernel &kernel : plan.kernels)
    if (kernel.kind == KernelKind::Glue)
      printGlueOp(plan, kernel, os);
  graph_schema::GraphStructureMask mask = structuresNamedIn(text);
  // Edge data in the user's order is sorted on the way in and out.
  for (InputOp input : plan.inputs)
    if (!input.getResult().use_empty() && !isSavedInput(input) &&
        input.getResult().getType().getSpace() != Space::Node)
      mask |= maskOf(GraphStructure::edge_perm);
  for (OutputOp output : plan.outputs)
    if (auto value = dyn_cast<ValueType>(output.getValue().getType()))
      if (value.getSpace() != Space::Node && !isSavedOutput(output))
        mask |= maskOf(GraphStructure::edge_perm);
  // Tensors with a row per unique pair need the pair count.
  auto countOf = [&](Type type) {
    if (auto value = dyn_cast<ValueType>(type)) {
      if (value.getSpace() == Space::UniqueSrc)
        mask |= maskOf(GraphStructure::unique_src_range);
      if (value.getSpace() == Space::UniqueDst)
        mask |= maskOf(GraphStructure::unique_dst_range);
    }
  };
  for (InputOp input : plan.inputs)
    countOf(input.getResult().getType());
  for (const Kernel &kernel : plan.kernels)
    for (Type type : kernel.op->getResultTypes())
      countOf(type);
  plan.structures = mask;
}

SmallVector<Value> readsOf(const LayerPlan &plan, const Kernel &kernel) {
  SmallVector<Value> reads;
  if (kernel.kind == KernelKind::WeightGrad) {
    WeightGradConfig c = *weightGradConfig(kernel.op, plan);
    if (c.a)
      reads.push_back(c.a);
    reads.push_back(c.c);
    return reads;
  }
  if (kernel.kind == KernelKind::RowSum) {
    reads.push_back(cast<ReduceOp>(kernel.op).getInput());
    return reads;
  }
  for (Value operand : kernel.op->getOperands())
    reads.push_back(operand);
  return reads;
}

std::map<size_t, SmallVector<Value>> releasePlan(const LayerPlan &plan) {
  llvm::DenseSet<Value> outputValues;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    outputValues.insert(OutputOp(plan.outputs[o]).getValue());
  llvm::MapVector<Value, size_t> lastRead;
  for (auto [k, kernel] : llvm::enumerate(plan.kernels))
    for (Value read : readsOf(plan, kernel)) {
      auto marker = plan.gathers.find(read);
      lastRead[marker != plan.gathers.end() ? marker->second.table : read] = k;
    }
  std::map<size_t, SmallVector<Value>> release;
  for (auto &[value, k] : lastRead) {
    Operation *def = value.getDefiningOp();
    if (!def || outputValues.contains(value) || isa<InputOp, WeightOp, SliceOp>(def))
      continue;
    std::string name = plan.tensors.lookup(value);
    if (!name.empty() && name[0] == 't')
      release[k].push_back(value);
  }
  return release;
}

/// Fills plan.inPlace: a traversal with one result, over the nodes or over the edges (not over
/// unique pairs), writes it into the buffer of an operand of the same type whose last reader it
/// is, when the body reads that operand only at the traversal's own row: every op that reads it,
/// or a value computed from it, yields rows of the traversal's own space (node rows in a node
/// traversal, edge rows in an edge traversal) and is no graph access (a src or dst of a node
/// value computed from the operand reads it at another node). The functor computes the row in
/// local arrays and stores it last (FunctorPrinter::writeResults), and exactly one thread
/// computes each row on the CPU and on CUDA, so no row is read after it is overwritten.
static void computeInPlace(LayerPlan &plan) {
  std::map<size_t, SmallVector<Value>> release = releasePlan(plan);
  for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
    auto traversal = dyn_cast<TraversalOp>(kernel.op);
    if (kernel.kind != KernelKind::Traversal || !traversal || traversal->getNumResults() != 1)
      continue;
    const bool overNodes = traversal.getKind() == TraversalKind::Node;
    if (overNodes ? pairSumSpaceOf(traversal).has_value() : pairSpaceOf(traversal).has_value())
      continue;
    const Space own = overNodes ? Space::Node : Space::Edge;
    auto result = dyn_cast<ValueType>(traversal->getResult(0).getType());
    if (!result || result.getSpace() != own)
      continue;
    // Whether every value computed from `arg` in the body stays a row of the own space.
    auto staysOwnRow = [&](BlockArgument arg) {
      SmallVector<Value> work{arg};
      llvm::DenseSet<Operation *> seen;
      while (!work.empty()) {
        Value v = work.pop_back_val();
        for (Operation *user : v.getUsers()) {
          if (isa<YieldOp>(user) || !seen.insert(user).second)
            continue;
          if (isa<SrcOp, DstOp, SrcRowOp, UniqueGatherOp, UniqueExpandOp>(user))
            return false;
          for (Value r : user->getResults()) {
            auto value = dyn_cast<ValueType>(r.getType());
            if (!value || value.getSpace() != own)
              return false;
            work.push_back(r);
          }
        }
      }
      return true;
    };
    auto readsOnlyOwnRow = [&](Value operand) {
      for (BlockArgument arg : traversal.getBodyRegion().getArguments())
        if (traversal->getOperand(arg.getArgNumber()) == operand && !staysOwnRow(arg))
          return false;
      return true;
    };
    for (Value operand : release[k])
      if (operand.getType() == result && !plan.gathers.count(operand) &&
          isWide(plan, operand) == isWide(plan, traversal->getResult(0)) &&
          readsOnlyOwnRow(operand)) {
        plan.inPlace[traversal] = operand;
        break;
      }
  }
}

/// The elements of a tensor of `type` as coefficients of N, E, U_src, U_dst, R, T, 1.
static std::array<double, 7> elementsOf(Type type) {
  std::array<double, 7> c{};
  if (auto value = dyn_cast<ValueType>(type)) {
    double row = static_cast<double>(numElements(value.getDims()));
    switch (value.getSpace()) {
    case Space::Node:
      c[0] = row;
      break;
    case Space::Src:
    case Space::Dst:
    case Space::Edge:
      c[1] = row;
      break;
    case Space::UniqueSrc:
      c[2] = row;
      break;
    case Space::UniqueDst:
      c[3] = row;
      break;
    case Space::Relation:
      c[4] = row;
      break;
    case Space::NType:
      c[5] = row;
      break;
    case Space::None:
      c[6] = row;
      break;
    }
    return c;
  }
  auto weight = cast<WeightType>(type);
  double slice = static_cast<double>(numElements(weight.getDims()));
  c[weight.getSlicing() == Slicing::Relation ? 4
    : weight.getSlicing() == Slicing::NType  ? 5
                                             : 6] = slice;
  return c;
}

/// Fills plan.memory and plan.outputElements (and their wide parts) by walking the glue's
/// allocations and releases: the sorted copies of edge inputs, every kernel's results (and a
/// reduction's pre-summed input, and a weight gradient's per-chunk partials, which are in the
/// accumulation type), the unsorted copies of edge outputs.
static void computeMemory(LayerPlan &plan) {
  using Terms = std::array<double, 7>;
  Terms live{}, liveWide{};
  auto add = [](Terms &to, const Terms &c, double sign = 1) {
    for (int i = 0; i < 7; ++i)
      to[i] += sign * c[i];
  };
  // Adds (or removes) a tensor of `type`, wide or not, to the live elements.
  auto hold = [&](Type type, bool wide, double sign = 1) {
    add(live, elementsOf(type), sign);
    if (wide)
      add(liveWide, elementsOf(type), sign);
  };
  for (InputOp input : plan.inputs)
    if (!input.getResult().use_empty() && !isSavedInput(input) &&
        input.getResult().getType().getSpace() != Space::Node)
      hold(input.getResult().getType(), isWide(plan, input.getResult()));
  std::map<size_t, SmallVector<Value>> release = releasePlan(plan);
  plan.memory.clear();
  plan.wideMemory.clear();
  for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
    Terms temporary{}, temporaryWide{};
    // A GEMM with an accumulator writes into the accumulator's buffer, which lives on as its
    // result (it is not released after the GEMM).
    // So does a node traversal that writes into an operand's buffer (plan.inPlace).
    auto gemm = dyn_cast<GemmOp>(kernel.op);
    Value reused = gemm ? gemm.getAcc() : plan.inPlace.lookup(kernel.op);
    if (!reused)
      for (Value result : kernel.op->getResults())
        hold(result.getType(), isWide(plan, result));
    if (kernel.kind == KernelKind::WeightGrad) {
      WeightGradConfig c = *weightGradConfig(kernel.op, plan);
      Terms rows = elementsOf(c.c.getType());
      double perRow = static_cast<double>(numElements(dimsOf(c.c.getType())));
      // One [K, N] partial per 2048 rows of a segment (cpu::segmentedWeightGrad), and the
      // pre-summed rows of n elements of a reduction.
      for (int i = 0; i < 7; ++i) {
        double count = rows[i] / std::max(perRow, 1.0);
        double partials = count * (c.heads * c.k * c.n) / 2048.0;
        double presum = c.presum ? count * c.n : 0;
        temporary[i] += partials + presum;
        temporaryWide[i] += partials + (isWide(plan, c.c) ? presum : 0);
      }
    }
    Terms point = live, pointWide = liveWide;
    add(point, temporary);
    add(pointWide, temporaryWide);
    plan.memory.push_back(point);
    plan.wideMemory.push_back(pointWide);
    for (Value value : release[k])
      if (value != reused)
        hold(value.getType(), isWide(plan, value), -1);
  }
  plan.outputElements = {};
  plan.wideOutputElements = {};
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    OutputOp output = plan.outputs[o];
    Value v = output.getValue();
    add(plan.outputElements, elementsOf(v.getType()));
    if (isWide(plan, v))
      add(plan.wideOutputElements, elementsOf(v.getType()));
    auto value = dyn_cast<ValueType>(v.getType());
    if (value && value.getSpace() != Space::Node && !isSavedOutput(output))
      hold(v.getType(), isWide(plan, v)); // the unsorted copy
  }
  plan.memory.push_back(live);
  plan.wideMemory.push_back(liveWide);
}

/// Fills plan.traffic and plan.wideTraffic: the elements of every kernel's operands (as the
/// kernel reads them: a fused gather's rows per edge, a weight once per slice) and results.
static void computeTraffic(LayerPlan &plan) {
  plan.traffic = {};
  plan.wideTraffic = {};
  auto count = [&](Value v) {
    std::array<double, 7> elements = elementsOf(v.getType());
    bool wide = isWide(plan, v);
    for (int i = 0; i < 7; ++i) {
      plan.traffic[i] += elements[i];
      if (wide)
        plan.wideTraffic[i] += elements[i];
    }
  };
  for (const Kernel &kernel : plan.kernels) {
    for (Value read : readsOf(plan, kernel))
      count(read);
    for (Value result : kernel.op->getResults())
      count(result);
  }
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Storage of 16-bit calls
//===----------------------------------------------------------------------===//

/// Adds to `wide` the top-level values `seeds` are computed from, themselves included: through
/// every op, into a traversal's body (a result is computed from the value its body yields, a
/// block argument is the traversal's operand) and out of it. Values inside bodies are visited
/// but only top-level ones matter to the plan.
static void addAncestors(llvm::DenseSet<Value> &wide, SmallVector<Value> seeds) {
  llvm::DenseSet<Value> seen;
  while (!seeds.empty()) {
    Value v = seeds.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (auto traversal = dyn_cast<TraversalOp>(arg.getOwner()->getParentOp()))
        seeds.push_back(traversal->getOperand(arg.getArgNumber()));
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (!isa<TraversalOp>(def->getParentOp()))
      wide.insert(v);
    if (auto traversal = dyn_cast<TraversalOp>(def)) {
      auto yield = cast<YieldOp>(traversal.getBodyRegion().front().getTerminator());
      seeds.push_back(yield->getOperand(cast<OpResult>(v).getResultNumber()));
      continue;
    }
    for (Value operand : def->getOperands())
      seeds.push_back(operand);
  }
}

/// Adds to `wide` the top-level values computed from `seeds` (not the seeds themselves): the
/// results of every op that reads one, through a traversal's body to the results whose yielded
/// values depend on it.
static void addDescendants(llvm::DenseSet<Value> &wide, SmallVector<Value> seeds) {
  llvm::DenseSet<Value> seen;
  while (!seeds.empty()) {
    Value v = seeds.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (auto traversal = dyn_cast<TraversalOp>(user)) {
        seeds.push_back(traversal.getBodyRegion().getArgument(use.getOperandNumber()));
        continue;
      }
      if (auto yield = dyn_cast<YieldOp>(user)) {
        Value result = yield->getParentOp()->getResult(use.getOperandNumber());
        wide.insert(result);
        seeds.push_back(result);
        continue;
      }
      for (Value result : user->getResults()) {
        if (!isa<TraversalOp>(user->getParentOp()))
          wide.insert(result);
        seeds.push_back(result);
      }
    }
  }
}

/// The values of `layer` an exponential reads, directly or through any chain of ops
/// (LayerPlan::wide).
static llvm::DenseSet<Value> exponentialInputs(LayerOp layer) {
  llvm::DenseSet<Value> wide;
  SmallVector<Value> seeds;
  layer->walk([&](Operation *op) {
    if (isa<ExpOp, SoftmaxOp>(op))
      seeds.push_back(op->getOperand(0));
  });
  addAncestors(wide, std::move(seeds));
  return wide;
}

/// Whether a row (or weight slice) of `type` holds one value per head or fewer: a scalar, a single
/// element, or only a head dimension (`[Hh]`): in a softmax layer, the logits, attention
/// weights, their maxima and sums, and the gradients of all these.
static bool isPerHeadRow(Type type) {
  RowShape shape =
      isa<ValueType>(type) ? cast<ValueType>(type).getShape() : cast<WeightType>(type).getShape();
  return shape.dims.size() == 0 || numElements(shape.dims) == 1 ||
         (shape.dims.size() == 1 && shape.headAxis == 0);
}

/// Whether `layer` computes an exponential (an exp, or a softmax before its lowering).
static bool computesExponential(LayerOp layer) {
  return layer
      ->walk([](Operation *op) {
        return isa<ExpOp, SoftmaxOp>(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The pairs of values that a kernel of `plan` reads and writes in one buffer type, so that
/// they need one storage: a run sum's input and result (the template sums rows of one type), a
/// GEMM's accumulator and result (the GEMM adds into the accumulator's buffer).
static SmallVector<std::pair<Value, Value>> oneStoragePairs(const LayerPlan &plan) {
  SmallVector<std::pair<Value, Value>> pairs;
  for (const Kernel &kernel : plan.kernels) {
    if (kernel.kind == KernelKind::RowSum)
      pairs.push_back({cast<ReduceOp>(kernel.op).getInput(), kernel.op->getResult(0)});
    if (auto gemm = dyn_cast<GemmOp>(kernel.op); gemm && gemm.getAcc())
      pairs.push_back({gemm.getAcc(), gemm.getResult()});
  }
  return pairs;
}

/// Makes wide the 16-bit member of every pair of oneStoragePairs that meets a wide one (in the
/// backward of rgat_pyg's compacted variants, the logits' share of a source row's gradient is
/// wide and the messages' share, which the GEMM adds to it, was not). Returns whether anything
/// changed.
static bool widenSharedBuffers(LayerPlan &plan) {
  bool changed = false;
  for (auto [a, b] : oneStoragePairs(plan))
    if (isWide(plan, a) != isWide(plan, b)) {
      plan.wide.insert(storedValue(plan, isWide(plan, a) ? b : a));
      changed = true;
    }
  return changed;
}

/// Fills LayerPlan::wide for every layer: the values an exponential reads, and, in a layer that
/// computes one or in the backward of such a layer, every value with a row per head or less
/// (isPerHeadRow: H values an edge, against H x d of the rows they weigh; a gradient of the
/// logits is a difference of nearly equal terms, alpha (g - sum alpha g), which 16-bit terms
/// would leave with few correct bits). Then, until nothing changes: made consistent between a
/// forward layer and its backward (an activation saved by one and read by the other is wide in
/// both, with what the forward computes it from), and one storage for the two sides of every
/// buffer a kernel sums into (widenSharedBuffers), so that every kernel holds its operands.
static void planStorage(std::vector<LayerPlan> &plans) {
  llvm::StringMap<LayerPlan *> bySymbol;
  llvm::StringMap<bool> exponential;
  for (LayerPlan &plan : plans) {
    bySymbol[plan.layer.getSymName()] = &plan;
    exponential[plan.layer.getSymName()] = computesExponential(plan.layer);
  }
  for (LayerPlan &plan : plans) {
    plan.wide = exponentialInputs(plan.layer);
    bool softmax = exponential.lookup(plan.layer.getSymName());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kForwardAttrName))
      softmax |= exponential.lookup(ref.getValue());
    if (!softmax)
      continue;
    SmallVector<Value> perHead;
    for (InputOp input : plan.inputs)
      perHead.push_back(input.getResult());
    for (WeightOp weight : plan.weights)
      perHead.push_back(weight.getResult());
    for (const Kernel &kernel : plan.kernels)
      for (Value result : kernel.op->getResults())
        perHead.push_back(result);
    SmallVector<Value> computedPerHead;
    for (Value v : perHead)
      if (isPerHeadRow(v.getType())) {
        plan.wide.insert(v);
        if (!isa<InputOp, WeightOp>(v.getDefiningOp()))
          computedPerHead.push_back(v);
      }
    // In the backward of a softmax layer, what the gradients of the logits flow into: the
    // gradients of the values the logits are computed from (a bias of the keys of HGT, whose
    // gradient is an exact zero summed from the logits' gradients, keeps float precision); and
    // what they are computed from: the messages and output gradients whose products the
    // attention weights' gradients are (g_alpha = g_h . m), of which the logits' gradients
    // alpha (g_alpha - sum alpha g_alpha) keep only a difference that, with logits in the
    // hundreds, is far below the terms (16-bit messages left HGT's input gradient 3% off).
    if (plan.layer->getAttrOfType<FlatSymbolRefAttr>(kForwardAttrName)) {
      addAncestors(plan.wide, computedPerHead);
      addDescendants(plan.wide, std::move(computedPerHead));
    }
  }
  auto savedValues = [](LayerPlan &plan) {
    llvm::StringMap<Value> values;
    for (InputOp input : plan.inputs)
      if (isSavedInput(input))
        values[input.getName()] = input.getResult();
    for (OutputOp output : plan.outputs)
      if (isSavedOutput(output))
        values[output.getName()] = output.getValue();
    return values;
  };
  // Until nothing changes (the wide sets only grow): saved activations made consistent, then
  // buffers that a kernel sums into given one storage.
  for (bool changed = true; changed;) {
    for (LayerPlan &forward : plans) {
      auto ref = forward.layer->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName);
      LayerPlan *backward = ref ? bySymbol.lookup(ref.getValue()) : nullptr;
      if (!backward)
        continue;
      llvm::StringMap<Value> fromForward = savedValues(forward),
                             intoBackward = savedValues(*backward);
      // What the backward needs wide, the forward computes wide (and what it is computed
      // from); what the forward stores wide, the backward reads as it is.
      SmallVector<Value> seeds;
      for (auto &[name, value] : intoBackward)
        if (backward->wide.contains(value) && fromForward.count(name))
          seeds.push_back(fromForward.lookup(name));
      addAncestors(forward.wide, std::move(seeds));
      for (auto &[name, value] : fromForward)
        if (isWide(forward, value) && intoBackward.count(name))
          backward->wide.insert(intoBackward.lookup(name));
    }
    changed = false;
    for (LayerPlan &plan : plans)
      changed |= widenSharedBuffers(plan);
  }
}

FailureOr<std::vector<LayerPlan>> planModule(ModuleOp module, StringRef entryName) {
  std::vector<LayerPlan> plans;
  for (LayerOp layer : module.getOps<LayerOp>()) {
    FailureOr<LayerPlan> plan = planLayer(layer);
    if (failed(plan))
      return failure();
    plans.push_back(std::move(*plan));
  }
  if (plans.empty())
    return module.emitError("the module holds no hector.layer to emit");
  planStorage(plans);
  for (LayerPlan &plan : plans) {
    computeStructures(plan);
    computeInPlace(plan);
    computeMemory(plan);
    computeTraffic(plan);
  }
  FailureOr<LayerOp> entry = selectEntryLayer(module, entryName);
  if (failed(entry))
    return failure();
  // Each layer's namespace by symbol name.
  llvm::StringMap<std::string> ids;
  for (LayerPlan &plan : plans)
    ids[plan.layer.getSymName()] = "hector_" + plan.id;
  for (LayerPlan &plan : plans) {
    plan.entry = plan.layer == *entry;
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName))
      plan.backwardOf = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kForwardAttrName)) {
      plan.forwardOf = ids.lookup(ref.getValue());
    }
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kInferenceAttrName))
      plan.inference = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kInferenceOfAttrName))
      plan.inferenceOf = ids.lookup(ref.getValue());
    if (auto name = plan.layer->getAttrOfType<StringAttr>(kVariantAttrName))
      plan.variant = name.getValue().str();
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kVariantOfAttrName))
      plan.variantOf = ids.lookup(ref.getValue());
    if (auto list = plan.layer->getAttrOfType<ArrayAttr>(kVariantsAttrName))
      for (Attribute item : list)
        if (auto ref = dyn_cast<FlatSymbolRefAttr>(item))
          plan.variants.push_back(ids.lookup(ref.getValue()));
  }
  return plans;
}

} // namespace emit
} // namespace hector
