//===- Pipeline.cpp - The hectorc pass pipeline ---------------------------===//
//
// One function builds the pipeline hectorc runs; `hector-pipeline` registers the same for
// hector-opt.
//
//===----------------------------------------------------------------------===//
#include "hector/Transforms/Passes.h"

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

void hector::registerHectorPasses() {
  registerHectorTransformsPasses();
  mlir::PassPipelineRegistration<PipelineOptions>(
      "hector-pipeline",
      "The hectorc pipeline: from the inter-operator level to the kernel level",
      [](mlir::OpPassManager &pm, const PipelineOptions &options) {
        buildHectorPipeline(pm, options);
      });
}
