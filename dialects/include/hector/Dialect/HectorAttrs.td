//===- HectorAttrs.td - Hector enum attributes -------------*- tablegen -*-===//
//
// Index spaces, weight slicings, initialisers and the modes of the aggregation, gather/scatter
// and traversal ops. Each is an integer enum attribute printed as its bare keyword inside ops
// (e.g. `hector.aggregate sum %e by dst`). The kernel kind is a dialect attribute of its own
// (`#hector<kernel gemm>`): hector-prepare-emission attaches it to the ops of kernel-level IR.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTORATTRS_TD
#define HECTOR_DIALECT_HECTORATTRS_TD

include "hector/Dialect/HectorDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Hector_SpaceAttr : I32EnumAttr<"Space", "index space of a value's rows", [
    I32EnumAttrCase<"Node", 0, "node">,
    I32EnumAttrCase<"Src", 1, "src">,
    I32EnumAttrCase<"Dst", 2, "dst">,
    I32EnumAttrCase<"Edge", 3, "edge">,
    I32EnumAttrCase<"UniqueSrc", 4, "unique_src">,
    I32EnumAttrCase<"UniqueDst", 5, "unique_dst">,
    I32EnumAttrCase<"Relation", 6, "relation">,
    I32EnumAttrCase<"NType", 7, "ntype">,
    I32EnumAttrCase<"None", 8, "none">]> {
  let cppNamespace = "::hector";
}

def Hector_SlicingAttr : I32EnumAttr<"Slicing", "how a weight is sliced", [
    I32EnumAttrCase<"Relation", 0, "relation">,
    I32EnumAttrCase<"NType", 1, "ntype">,
    I32EnumAttrCase<"None", 2, "none">]> {
  let cppNamespace = "::hector";
}

def Hector_AggregateKindAttr : I32EnumAttr<"AggregateKind", "reduction of edge rows into nodes", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Mean", 1, "mean">,
    I32EnumAttrCase<"Max", 2, "max">]> {
  let cppNamespace = "::hector";
}

def Hector_EdgeEndAttr : I32EnumAttr<"EdgeEnd", "one end of an edge", [
    I32EnumAttrCase<"Src", 0, "src">,
    I32EnumAttrCase<"Dst", 1, "dst">]> {
  let cppNamespace = "::hector";
}

def Hector_WeightInitAttr : I32EnumAttr<"WeightInit", "initialiser of a learned weight", [
    I32EnumAttrCase<"Glorot", 0, "glorot">,
    I32EnumAttrCase<"Zeros", 1, "zeros">,
    I32EnumAttrCase<"Ones", 2, "ones">,
    I32EnumAttrCase<"Uniform", 3, "uniform">,
    I32EnumAttrCase<"Normal", 4, "normal">]> {
  let cppNamespace = "::hector";
}

def Hector_GemmGatherAttr : I32EnumAttr<"GemmGather", "how a GEMM reads the rows of A", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Src", 1, "src">,
    I32EnumAttrCase<"Dst", 2, "dst">,
    I32EnumAttrCase<"UniqueSrc", 3, "unique_src">,
    I32EnumAttrCase<"UniqueDst", 4, "unique_dst">]> {
  let cppNamespace = "::hector";
}

def Hector_GemmScatterAttr : I32EnumAttr<"GemmScatter", "how a GEMM writes the rows of C", [
    I32EnumAttrCase<"Store", 0, "store">,
    I32EnumAttrCase<"AccumulateDst", 1, "accumulate_dst">,
    I32EnumAttrCase<"AccumulateSrc", 2, "accumulate_src">,
    I32EnumAttrCase<"AccumulateUnique", 3, "accumulate_unique">]> {
  let cppNamespace = "::hector";
}

def Hector_TraversalKindAttr : I32EnumAttr<"TraversalKind", "parallelisation of a traversal", [
    I32EnumAttrCase<"Edge", 0, "edge">,
    I32EnumAttrCase<"Node", 1, "node">]> {
  let cppNamespace = "::hector";
}

def Hector_KernelKind : I32EnumAttr<"KernelKind",
    "what runs a top-level op of the kernel-level IR", [
    // hector.gemm: the segmented GEMM template.
    I32EnumAttrCase<"Gemm", 0, "gemm">,
    // hector.weight_matmul: the GEMM template over the weight slices.
    I32EnumAttrCase<"WeightProduct", 1, "weight_product">,
    // hector.traversal: an edge, node or pair traversal.
    I32EnumAttrCase<"Traversal", 2, "traversal">,
    // hector.weight_grad, and hector.reduce into coarser rows: the GEMM template's
    // outer-product (weight-gradient) form.
    I32EnumAttrCase<"WeightGrad", 3, "weight_grad">,
    // hector.reduce from edges into unique pairs, or from unique pairs into nodes: the
    // traversal template's segmented row sum.
    I32EnumAttrCase<"RowSum", 4, "row_sum">,
    // O(weights) or O(slices) work done with ATen in the glue: weight-space products and their
    // gradients, reductions that keep the rows, elementwise ops on relation, ntype or unsliced
    // rows.
    I32EnumAttrCase<"Glue", 5, "glue">,
    // hector.src, hector.dst or hector.unique_gather at the top level: no kernel of its own, a
    // gather fused into the weight gradients that read it.
    I32EnumAttrCase<"FusedGather", 6, "fused_gather">]> {
  let cppNamespace = "::hector";
  let genSpecializedAttr = 0;
}

def Hector_KernelKindAttr : EnumAttr<Hector_Dialect, Hector_KernelKind, "kernel"> {
  let summary = "what runs a top-level op of the kernel-level IR (hector-prepare-emission)";
}

#endif // HECTOR_DIALECT_HECTORATTRS_TD
