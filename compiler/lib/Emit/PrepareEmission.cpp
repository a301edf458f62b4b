//===- PrepareEmission.cpp - Legality and annotations for the emitter -----===//
//
// hector-prepare-emission (Passes.td): checks, with a conversion target, that every layer's
// kernel-level IR is one the templates and the glue can run, then records on the IR what the
// emitter prints from: the kernel kind and name of every top-level op, a traversal's passes
// over the edges, a layer's emission id. The emitter (Plan.cpp and the printers) only reads
// these; it reports an unprepared module and nothing else.
//
//===----------------------------------------------------------------------===//
#include "hector/Emit/Passes.h"

#include "EmitterInternal.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/xxhash.h"

namespace hector {
#define GEN_PASS_DEF_PREPAREEMISSION
#include "hector/Emit/Passes.h.inc"
} // namespace hector

using namespace mlir;
using namespace hector;
using namespace hector::emit;

namespace {

//===----------------------------------------------------------------------===//
// Legality
//===----------------------------------------------------------------------===//

/// Whether `op` is a GEMM or a weight gradient over relation, node-type or unsliced rows (a
/// linear map of weights, such as a projected relation embedding): at most R or T rows, which
/// the glue multiplies with ATen.
bool onWeightRows(Operation *op) {
  auto weightRows = [](Value v) {
    Space space = spaceOf(v);
    return space == Space::Relation || space == Space::NType || space == Space::None;
  };
  if (auto gemm = dyn_cast<GemmOp>(op))
    return gemm.getGather() == GemmGather::None && weightRows(gemm.getA());
  if (auto grad = dyn_cast<WeightGradOp>(op))
    return weightRows(grad.getInput()) && weightRows(grad.getGrad());
  return false;
}

/// Whether a top-level hector.src / hector.dst / hector.unique_gather is read only by weight
/// gradients, which fuse it.
bool isFusedGather(Operation *op) {
  return llvm::all_of(op->getResult(0).getUsers(),
                      [](Operation *user) { return isa<WeightGradOp>(user); });
}

/// The ops a layer of kernel-level IR holds at its top level: its interface, the kernel-level
/// ops, elementwise ops (on weight-space rows: checkGlueOp), and gathers that a weight gradient
/// fuses. The inter-operator ops the lowering replaces (linear, aggregate, softmax, ...) are
/// illegal.
ConversionTarget kernelLevelTarget(MLIRContext &context) {
  ConversionTarget target(context);
  target.addLegalOp<InputOp, WeightOp, SliceOp, OutputOp, GemmOp, TraversalOp, WeightMatmulOp,
                    WeightGradOp, ReduceOp, WeightAddOp, WeightMatmulGradOp, WeightDotOp,
                    WeightDotGradOp, LeakyReluGradOp, GeluGradOp, DotOp, ConcatOp, NarrowOp,
                    SplitHeadsOp, MergeHeadsOp, ConstantOp, AggregateGradOp, SrcRowGradOp>();
  target.addDynamicallyLegalOp<SrcOp, DstOp, UniqueGatherOp>(isFusedGather);
  target.markUnknownOpDynamicallyLegal(
      [](Operation *op) { return op->hasTrait<hector::OpTrait::Elementwise>(); });
  return target;
}

/// Reports an op the kernel-level target rejects.
LogicalResult reportIllegal(Operation &op) {
  if (isa<SrcOp, DstOp, UniqueGatherOp>(op))
    for (Operation *user : op.getResult(0).getUsers())
      if (!isa<WeightGradOp>(user))
        return user->emitError("reads a top-level gather; only hector.weight_grad fuses one "
                               "(lower the layer with --hector-lower-to-kernels)");
  return op.emitError() << "'" << op.getName()
                        << "' is not a kernel-level op: lower the layer first "
                           "(--emit=lowered shows the kernel-level IR)";
}

/// Checks that a layer output is a table the glue returns: node or edge rows, or (a saved
/// activation) unique-pair rows.
LogicalResult checkOutput(OutputOp output) {
  auto value = dyn_cast<ValueType>(output.getValue().getType());
  if (!value)
    return success();
  Space space = value.getSpace();
  bool unique = space == Space::UniqueSrc || space == Space::UniqueDst;
  if (space != Space::Node && space != Space::Edge && space != Space::Src && space != Space::Dst &&
      !(unique && isSavedOutput(output)))
    return output.emitError() << "cannot emit an output indexed by " << stringifySpace(space);
  return success();
}

/// Checks that a traversal's body is printable: the form of its results, then the functor
/// itself, printed once and discarded (its printer reports the op it cannot print).
LogicalResult checkTraversal(TraversalOp op) {
  for (Operation &inner : op.getBodyRegion().front().without_terminator()) {
    if (isa<SoftmaxOp>(inner))
      return inner.emitError("hector.softmax must be decomposed before emission (the pipeline "
                             "runs --hector-decompose-softmax)");
    if (isa<AggregateOp>(inner) && op.getKind() == TraversalKind::Edge)
      return inner.emitError("an edge traversal cannot reduce into nodes");
  }
  if (!pairSpaceOf(op) && !pairSumSpaceOf(op))
    for (Type type : op.getResultTypes()) {
      Space space = cast<ValueType>(type).getSpace();
      bool edge = isEdgeIndexed(space) && space != Space::UniqueSrc && space != Space::UniqueDst;
      if (op.getKind() == TraversalKind::Edge ? !edge : space != Space::Node)
        return op.emitError() << "cannot emit a " << stringifyTraversalKind(op.getKind())
                              << " traversal with a result indexed by " << stringifySpace(space);
    }
  return success(succeeded(printFunctor(op, "check")));
}

/// Checks that a top-level op the glue computes with ATen reads rows it can broadcast: the
/// result's own rows or a single (unsliced) row.
LogicalResult checkGlueOp(Operation *op) {
  if (isa<WeightAddOp, WeightMatmulGradOp, WeightDotOp, WeightDotGradOp, ConstantOp, SrcRowGradOp>(
          op))
    return success();
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (gemm.getSegment() != Slicing::None || gemm.getScatter() != GemmScatter::Store)
      return op->emitError() << "a linear map of values indexed by "
                             << stringifySpace(spaceOf(gemm.getA()))
                             << " needs an unsliced weight and a stored result";
    return success();
  }
  if (auto grad = dyn_cast<WeightGradOp>(op)) {
    if (grad.getResult().getType().getSlicing() != Slicing::None ||
        spaceOf(grad.getInput()) != spaceOf(grad.getGrad()))
      return op->emitError() << "the weight gradient of a linear map of values indexed by "
                             << stringifySpace(spaceOf(grad.getGrad()))
                             << " needs an unsliced weight and operands on the same rows";
    return success();
  }
  if (auto grad = dyn_cast<AggregateGradOp>(op)) {
    if (grad.getKind() == AggregateKind::Max && grad.getInput())
      return success();
    return op->emitError("a mean aggregation's gradient belongs in a traversal (lower the "
                         "layer with --hector-lower-to-kernels)");
  }
  if (auto reduce = dyn_cast<ReduceOp>(op)) {
    Space from = reduce.getInput().getType().getSpace(), to = spaceOf(reduce.getResult());
    if (from == to || to == Space::None)
      return success();
    return op->emitError() << "cannot emit a sum of rows indexed by " << stringifySpace(from)
                           << " into rows indexed by " << stringifySpace(to);
  }
  Space to = spaceOf(op->getResult(0));
  if (isEdgeIndexed(to) || to == Space::Node)
    return op->emitError() << "'" << op->getName() << "' on rows indexed by " << stringifySpace(to)
                           << " belongs in a traversal (lower the layer with "
                              "--hector-lower-to-kernels)";
  for (Value operand : op->getOperands()) {
    Space from = spaceOf(operand);
    if (from != to && from != Space::None)
      return op->emitError() << "cannot broadcast rows indexed by " << stringifySpace(from)
                             << " to rows indexed by " << stringifySpace(to);
  }
  return success();
}

/// What runs the top-level op `op` (legal for the kernel-level target), or an error at the op
/// whose configuration no template instance has. `gathers`: the layer's fused gathers so far.
FailureOr<KernelKind> kernelKindOf(Operation &op,
                                   const llvm::DenseMap<Value, GatherMarker> &gathers) {
  if (onWeightRows(&op)) {
    if (failed(checkGlueOp(&op)))
      return failure();
    return KernelKind::Glue;
  }
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    if (failed(gemmConfig(gemm)))
      return failure();
    return KernelKind::Gemm;
  }
  if (auto traversal = dyn_cast<TraversalOp>(op)) {
    if (failed(checkTraversal(traversal)))
      return failure();
    return KernelKind::Traversal;
  }
  if (isa<WeightMatmulOp>(op))
    return KernelKind::WeightProduct;
  auto reduce = dyn_cast<ReduceOp>(op);
  if (reduce && rowSumConfig(reduce))
    return KernelKind::RowSum;
  if (isa<WeightGradOp>(op) || (reduce && reduceSumsRows(reduce))) {
    if (failed(weightGradConfig(&op, gathers)))
      return failure();
    return KernelKind::WeightGrad;
  }
  if (failed(checkGlueOp(&op)))
    return failure();
  return KernelKind::Glue;
}

//===----------------------------------------------------------------------===//
// Annotations
//===----------------------------------------------------------------------===//

/// The name of the kernel of `op`, the `index`th kernel of layer `layer`: what runs it and its
/// configuration (`rgat_k0_gemm_relation_gsrc_sstore_h4_k64_n16`).
std::string kernelName(StringRef layer, size_t index, Operation *op, KernelKind kind) {
  std::string base = identifier(layer) + "_k" + std::to_string(index) + "_";
  if (kind == KernelKind::Gemm) {
    auto gemm = cast<GemmOp>(op);
    GemmConfig c = *gemmConfig(gemm);
    std::string name = base + "gemm_" + stringifySlicing(gemm.getSegment()).str() + "_g" +
                       stringifyGemmGather(gemm.getGather()).str() + "_s" +
                       stringifyGemmScatter(gemm.getScatter()).str();
    if (gemm.getTransposeB())
      name += "_tb";
    if (gemm.getAcc())
      name += "_acc";
    return name + "_h" + std::to_string(c.heads) + "_k" + std::to_string(c.k) + "_n" +
           std::to_string(c.n);
  }
  if (auto matmul = dyn_cast<WeightMatmulOp>(op)) {
    GemmConfig c = weightProductConfig(matmul);
    RowShape lhs = matmul.getLhs().getType().getShape();
    return base + "wgemm_" + stringifySlicing(matmul.getLhs().getType().getSlicing()).str() + "_" +
           stringifySlicing(matmul.getRhs().getType().getSlicing()).str() + "_m" +
           std::to_string(numElements(lhs.dims.drop_back())) + "_k" + std::to_string(c.k) + "_n" +
           std::to_string(c.n);
  }
  if (isa<WeightGradOp>(op))
    return base + "wgrad";
  if (isa<ReduceOp>(op))
    return base + (kind == KernelKind::RowSum ? "segsum" : "rowsum");
  if (kind != KernelKind::Traversal)
    return base + "glue";
  auto traversal = cast<TraversalOp>(op);
  if (pairSumSpaceOf(traversal))
    return base + "pair_traversal_r" + std::to_string(traversal.getNumResults());
  return base + stringifyTraversalKind(traversal.getKind()).str() + "_traversal_p" +
         std::to_string(passesOf(traversal)) + "_r" + std::to_string(traversal.getNumResults());
}

/// The annotations of one top-level op.
struct Annotation {
  Operation *op;
  KernelKind kind;
  std::string name; ///< empty for a fused gather
};

/// Checks every top-level op of `layer` and decides its annotation; an error at the first op
/// that is not legal or not printable.
FailureOr<SmallVector<Annotation>> annotationsOf(LayerOp layer, const ConversionTarget &target) {
  SmallVector<Annotation> annotations;
  llvm::DenseMap<Value, GatherMarker> gathers;
  size_t kernels = 0;
  for (Operation &op : layer.getBodyRegion().front()) {
    if (!target.isLegal(&op))
      return reportIllegal(op);
    if (isa<InputOp, WeightOp, SliceOp>(op))
      continue;
    if (auto output = dyn_cast<OutputOp>(op)) {
      if (failed(checkOutput(output)))
        return failure();
      continue;
    }
    if (isa<SrcOp, DstOp, UniqueGatherOp>(op)) {
      gathers[op.getResult(0)] = gatherMarkerOf(&op);
      annotations.push_back({&op, KernelKind::FusedGather, ""});
      continue;
    }
    FailureOr<KernelKind> kind = kernelKindOf(op, gathers);
    if (failed(kind))
      return failure();
    annotations.push_back({&op, *kind, kernelName(layer.getSymName(), kernels++, &op, *kind)});
  }
  return annotations;
}

/// Removes what an earlier run recorded on `module`.
void clearAnnotations(ModuleOp module) {
  module.walk([](Operation *op) {
    for (const char *name :
         {kKernelAttrName, kKernelNameAttrName, kPassesAttrName, kEmitIdAttrName})
      op->removeAttr(name);
  });
}

/// The emission id of every layer: its name and a hash of its IR (printed in local scope: the
/// layer is isolated from above, and printing it within the module's scope would number the
/// whole module again for every layer), of the module's and of the target.
llvm::DenseMap<Operation *, std::string> emissionIds(ModuleOp module, bool cuda) {
  std::string moduleText;
  llvm::raw_string_ostream moduleStream(moduleText);
  module->print(moduleStream, OpPrintingFlags().printGenericOpForm());
  moduleText += cuda ? "\ncuda" : "\ncpu";
  std::string moduleHash = llvm::utohexstr(llvm::xxh3_64bits(moduleText));
  llvm::DenseMap<Operation *, std::string> ids;
  for (LayerOp layer : module.getOps<LayerOp>()) {
    std::string text;
    llvm::raw_string_ostream textStream(text);
    layer->print(textStream, OpPrintingFlags().printGenericOpForm().useLocalScope());
    text += "\n" + moduleHash;
    ids[layer] = identifier(layer.getSymName()) + "_" +
                 llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true).substr(0, 8);
  }
  return ids;
}

struct PrepareEmissionPass : public hector::impl::PrepareEmissionBase<PrepareEmissionPass> {
  using PrepareEmissionBase::PrepareEmissionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "cpu" && target != "cuda") {
      module.emitError() << "hector-prepare-emission: unknown target '" << target
                         << "' (expected cpu or cuda)";
      return signalPassFailure();
    }
    clearAnnotations(module);
    ConversionTarget legality = kernelLevelTarget(getContext());
    // Every layer is checked before anything is recorded: the ids hash the IR as lowered.
    llvm::DenseMap<Operation *, SmallVector<Annotation>> annotations;
    for (LayerOp layer : module.getOps<LayerOp>()) {
      FailureOr<SmallVector<Annotation>> layerAnnotations = annotationsOf(layer, legality);
      if (failed(layerAnnotations))
        return signalPassFailure();
      annotations[layer] = std::move(*layerAnnotations);
    }
    llvm::DenseMap<Operation *, std::string> ids = emissionIds(module, target == "cuda");
    Builder builder(&getContext());
    for (LayerOp layer : module.getOps<LayerOp>()) {
      layer->setAttr(kEmitIdAttrName, builder.getStringAttr(ids.lookup(layer)));
      for (const Annotation &a : annotations[layer]) {
        a.op->setAttr(kKernelAttrName, KernelKindAttr::get(&getContext(), a.kind));
        if (!a.name.empty())
          a.op->setAttr(kKernelNameAttrName, builder.getStringAttr(a.name));
        if (auto traversal = dyn_cast<TraversalOp>(a.op))
          traversal->setAttr(kPassesAttrName, builder.getI64IntegerAttr(passesOf(traversal)));
      }
    }
  }
};

} // namespace

void hector::registerHectorEmitPasses() {
  registerPass([] { return createPrepareEmission(); });
}
