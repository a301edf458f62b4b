//===- Passes.h - Hector transformation passes ------------------*- C++ -*-===//
//
// The passes declared in Passes.td and the one function that builds the whole pipeline (also
// registered as `hector-pipeline`, so hector-opt runs exactly what hectorc runs).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TRANSFORMS_PASSES_H
#define HECTOR_TRANSFORMS_PASSES_H

#include "hector/Dialect/HectorOps.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#include "hector/Transforms/Passes.h.inc"

/// Options of the whole pipeline, shared by hectorc and `hector-opt --hector-pipeline`. Switches
/// of the optimisation passes run before the lowering belong here.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  /// Stop before lowering to the kernel level (the optimised inter-operator IR).
  Option<bool> lower{*this, "lower", llvm::cl::desc("Lower to the kernel level"),
                     llvm::cl::init(true)};
};

/// Adds the pipeline from the inter-operator level to the kernel level to `pm` (which runs on a
/// builtin module): softmax decomposition, then the lowering onto the two templates.
void buildHectorPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers every Hector pass and the `hector-pipeline` pipeline with the global registry.
void registerHectorPasses();

} // namespace hector

#endif // HECTOR_TRANSFORMS_PASSES_H
