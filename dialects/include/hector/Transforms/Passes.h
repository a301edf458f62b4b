//===- Passes.h - Hector transformation passes ------------------*- C++ -*-===//
//
// The passes declared in Passes.td and the functions that build the pipelines: `hector-compile`,
// everything hectorc runs (variants, autodiff, cost, lowering), and `hector-pipeline`, its
// lowering half. Both are registered, so hector-opt runs exactly what hectorc runs.
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

/// Options of the lowering pipeline, `hector-opt --hector-pipeline`.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  /// Stop before lowering to the kernel level (the optimised inter-operator IR).
  Option<bool> lower{*this, "lower", llvm::cl::desc("Lower to the kernel level"),
                     llvm::cl::init(true)};
};

/// Adds the pipeline from the inter-operator level to the kernel level to `pm` (which runs on a
/// builtin module): softmax decomposition, then the lowering onto the two templates.
void buildHectorPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Options of the whole pipeline, shared by hectorc and `hector-opt --hector-compile`.
struct CompileOptions : public mlir::PassPipelineOptions<CompileOptions> {
  /// Add the reordered / compacted variants of every layer (hector-variants).
  Option<bool> reorder{*this, "reorder", llvm::cl::desc("Add the linear-reordered variants"),
                       llvm::cl::init(true)};
  Option<bool> compact{*this, "compact", llvm::cl::desc("Add the compact-materialised variants"),
                       llvm::cl::init(true)};
  /// Derive a backward layer and an inference copy of every layer (hector-autodiff).
  Option<bool> backward{*this, "backward",
                        llvm::cl::desc("Derive the backward layers and inference copies"),
                        llvm::cl::init(true)};
  /// Stop after the cost estimates, before softmax decomposition and the lowering.
  Option<bool> lower{*this, "lower", llvm::cl::desc("Lower to the kernel level"),
                     llvm::cl::init(true)};
};

/// Adds everything hectorc runs on a module to `pm` (which runs on a builtin module):
/// hector-variants, hector-autodiff{inference=true}, hector-annotate-cost, then (with `lower`)
/// the lowering pipeline. Each stage leaves alone the layers an earlier run already derived,
/// so dialect text printed at any point of the pipeline can be compiled again.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &options);

/// Registers every Hector transformation pass and the `hector-pipeline` and `hector-compile`
/// pipelines with the global registry.
void registerHectorPasses();

} // namespace hector

#endif // HECTOR_TRANSFORMS_PASSES_H
