//===- Passes.h - Passes of the emitter -------------------------*- C++ -*-===//
//
// hector-prepare-emission (Passes.td): the legality check of kernel-level IR and the
// annotations the read-only emitter prints from, and their attribute names.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_PASSES_H
#define HECTOR_EMIT_PASSES_H

#include "hector/Dialect/HectorOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include <memory>

namespace hector {

#define GEN_PASS_DECL
#include "hector/Emit/Passes.h.inc"

/// What runs a top-level op (#hector<kernel ...>, a KernelKindAttr).
inline constexpr const char *kKernelAttrName = "hector.kernel";
/// A kernel's name in the emitted sources and the manifest (a string).
inline constexpr const char *kKernelNameAttrName = "hector.kernel_name";
/// A traversal's passes over each node's edges (an i64; 0 for an edge traversal).
inline constexpr const char *kPassesAttrName = "hector.passes";
/// A layer's C++ and operator namespace without its `hector_` prefix (a string).
inline constexpr const char *kEmitIdAttrName = "hector.emit_id";

/// Registers hector-prepare-emission with the global registry.
void registerHectorEmitPasses();

} // namespace hector

#endif // HECTOR_EMIT_PASSES_H
