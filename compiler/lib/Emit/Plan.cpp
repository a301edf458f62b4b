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
      if (operand.getType() == result && !plan.gathers.count(operand) && readsOnlyOwnRow(operand)) {
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

/// Fills plan.memory and plan.outputElements by walking the glue's allocations and releases:
/// the sorted copies of edge inputs, every kernel's results (and a reduction's pre-summed
/// input, and a weight gradient's per-chunk partials), the unsorted copies of edge outputs.
static void computeMemory(LayerPlan &plan) {
  std::array<double, 7> live{};
  auto add = [](std::array<double, 7> &to, const std::array<double, 7> &c, double sign = 1) {
    for (int i = 0; i < 7; ++i)
      to[i] += sign * c[i];
  };
  for (InputOp input : plan.inputs)
    if (!input.getResult().use_empty() && !isSavedInput(input) &&
        input.getResult().getType().getSpace() != Space::Node)
      add(live, elementsOf(input.getResult().getType()));
  std::map<size_t, SmallVector<Value>> release = releasePlan(plan);
  plan.memory.clear();
  for (auto [k, kernel] : llvm::enumerate(plan.kernels)) {
    std::array<double, 7> temporary{};
    // A GEMM with an accumulator writes into the accumulator's buffer, which lives on as its
    // result (it is not released after the GEMM).
    // So does a node traversal that writes into an operand's buffer (plan.inPlace).
    auto gemm = dyn_cast<GemmOp>(kernel.op);
    Value reused = gemm ? gemm.getAcc() : plan.inPlace.lookup(kernel.op);
    if (!reused)
      for (Type type : kernel.op->getResultTypes())
        add(live, elementsOf(type));
    if (kernel.kind == KernelKind::WeightGrad) {
      WeightGradConfig c = *weightGradConfig(kernel.op, plan);
      std::array<double, 7> rows = elementsOf(c.c.getType());
      double perRow = static_cast<double>(numElements(dimsOf(c.c.getType())));
      // One [K, N] partial per 2048 rows of a segment (cpu::segmentedWeightGrad), and the
      // pre-summed rows of n elements of a reduction.
      for (int i = 0; i < 7; ++i) {
        double count = rows[i] / std::max(perRow, 1.0);
        temporary[i] += count * (c.heads * c.k * c.n) / 2048.0 + (c.presum ? count * c.n : 0);
      }
    }
    std::array<double, 7> point = live;
    add(point, temporary);
    plan.memory.push_back(point);
    for (Value value : release[k])
      if (value != reused)
        add(live, elementsOf(value.getType()), -1);
  }
  plan.outputElements = {};
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    OutputOp output = plan.outputs[o];
    add(plan.outputElements, elementsOf(output.getValue().getType()));
    auto value = dyn_cast<ValueType>(output.getValue().getType());
    if (value && value.getSpace() != Space::Node && !isSavedOutput(output))
      add(live, elementsOf(output.getValue().getType())); // the unsorted copy
  }
  plan.memory.push_back(live);
}

//===----------------------------------------------------------------------===//
// The module
//===----------------------------------------------------------------------===//

/// Whether `layer` computes an exponential (an exp, or a softmax before its lowering): its
/// logits are rounded by 16-bit storage to 8 significant bits, which moves an exponential of a
/// logit in the hundreds by tens of percent.
static bool computesExponential(LayerOp layer) {
  return layer
      ->walk([](Operation *op) {
        return isa<ExpOp, SoftmaxOp>(op) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
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
  for (LayerPlan &plan : plans) {
    computeStructures(plan);
    computeInPlace(plan);
    computeMemory(plan);
  }
  FailureOr<LayerOp> entry = selectEntryLayer(module, entryName);
  if (failed(entry))
    return failure();
  // Each layer's namespace, and whether it computes an exponential, by symbol name.
  llvm::StringMap<std::string> ids;
  llvm::StringMap<bool> exponential;
  for (LayerPlan &plan : plans) {
    ids[plan.layer.getSymName()] = "hector_" + plan.id;
    exponential[plan.layer.getSymName()] = computesExponential(plan.layer);
  }
  for (LayerPlan &plan : plans) {
    plan.entry = plan.layer == *entry;
    // 16-bit storage: not for a layer with an exponential, nor for the backward of one (it
    // reads the forward's saved logits or attention weights).
    plan.sixteenBitStorage = !exponential.lookup(plan.layer.getSymName());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kBackwardAttrName))
      plan.backwardOf = ids.lookup(ref.getValue());
    if (auto ref = plan.layer->getAttrOfType<FlatSymbolRefAttr>(kForwardAttrName)) {
      plan.forwardOf = ids.lookup(ref.getValue());
      plan.sixteenBitStorage &= !exponential.lookup(ref.getValue());
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
