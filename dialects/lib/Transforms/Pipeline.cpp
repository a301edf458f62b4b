//===- Pipeline.cpp - The hectorc pass pipeline ---------------------------===//
//
// One function builds the pipeline hectorc runs (`hector-compile`), another its lowering half
// (`hector-pipeline`); both are registered for hector-opt.
//
//===----------------------------------------------------------------------===//
#include "hector/Transforms/Passes.h"

#include "hector/Autodiff/Passes.h"
#include "hector/Optimize/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace hector {
#define GEN_PASS_REGISTRATION
#include "hector/Transforms/Passes.h.inc"
} // namespace hector

void hector::buildHectorPipeline(mlir::OpPassManager &pm, const PipelineOptions &options) {
  mlir::OpPassManager &layers = pm.nest<LayerOp>();
  layers.addPass(createDecomposeSoftmax());
  // The front end repeats common subexpressions (e.g. HGT's sigmoid(skip)); fuse them once.
  layers.addPass(mlir::createCSEPass());
  if (options.lower)
    layers.addPass(createLowerToKernels());
}

void hector::buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &options) {
  // The optimisation variants of every layer; the runtime picks one per graph.
  VariantsOptions variants;
  variants.reorder = options.reorder;
  variants.compact = options.compact;
  pm.addPass(createVariants(variants));
  // Training: every layer gets a backward layer, lowered and emitted like the forward; calls
  // without gradients run a copy of the forward that saves nothing (fused freely).
  if (options.backward) {
    AutodiffOptions autodiff;
    autodiff.inference = true;
    pm.addPass(createAutodiff(autodiff));
  }
  // The cost model's estimates, for the runtime's choice among the variants.
  pm.nest<LayerOp>().addPass(createAnnotateCost());
  if (!options.lower)
    return;
  PipelineOptions lowering;
  buildHectorPipeline(pm, lowering);
}

void hector::registerHectorPasses() {
  registerHectorTransformsPasses();
  mlir::PassPipelineRegistration<PipelineOptions>(
      "hector-pipeline",
      "The hectorc pipeline: from the inter-operator level to the kernel level",
      [](mlir::OpPassManager &pm, const PipelineOptions &options) {
        buildHectorPipeline(pm, options);
      });
  mlir::PassPipelineRegistration<CompileOptions>(
      "hector-compile",
      "Everything hectorc runs: variants, autodiff, cost estimates and the lowering",
      [](mlir::OpPassManager &pm, const CompileOptions &options) {
        buildCompilePipeline(pm, options);
      });
}
