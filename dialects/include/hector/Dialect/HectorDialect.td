//===- HectorDialect.td - The Hector dialect ---------------*- tablegen -*-===//
//
// The dialect definition and the base classes of its ops.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTORDIALECT_TD
#define HECTOR_DIALECT_HECTORDIALECT_TD

include "mlir/IR/OpBase.td"

def Hector_Dialect : Dialect {
  let name = "hector";
  let cppNamespace = "::hector";
  let summary = "Relational graph neural network layers at the inter-operator and kernel levels";
  let description = [{
    The Hector dialect describes one relational GNN layer as a dataflow of tables of rows. Every
    value lives in an *index space* (per node, per edge, per edge but depending only on its source
    or destination node, per unique (node, relation) pair, per relation, per node type, or a single
    broadcast row) that is part of its type, together with the shape of one row and an optional
    head dimension. Weights are sliced per relation, per node type, or not at all.

    The inter-operator level (`hector.linear`, `hector.aggregate`, `hector.softmax`, ...) is what
    the front end produces and what the reordering and compaction passes rewrite. The kernel level
    (`hector.gemm`, `hector.traversal`) mirrors the two code templates that the emitter
    instantiates.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Registers the types (defined beside their storage in HectorTypes.cpp).
    void registerTypes();
    /// Registers the attributes (the kernel kind; HectorTypes.cpp).
    void registerAttributes();
  }];
}

/// Base class of every Hector op.
class Hector_Op<string mnemonic, list<Trait> traits = []>
    : Op<Hector_Dialect, mnemonic, traits>;

#endif // HECTOR_DIALECT_HECTORDIALECT_TD
