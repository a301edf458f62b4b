//===- Passes.h - Hector optimisations --------------------------*- C++ -*-===//
//
// The optimisation passes (OptimizePasses.td: createReorderLinear(), createCompactMaterialize(),
// createExplain() and registerHectorOptimizePasses()).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_OPTIMIZE_PASSES_H
#define HECTOR_OPTIMIZE_PASSES_H

#include "hector/Dialect/HectorOps.h"
#include "hector/Dialect/LayerRelations.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#define GEN_PASS_REGISTRATION
#include "hector/Optimize/OptimizePasses.h.inc"

} // namespace hector

#endif // HECTOR_OPTIMIZE_PASSES_H
