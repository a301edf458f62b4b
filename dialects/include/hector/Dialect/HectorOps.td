//===- HectorOps.td - Hector dialect operations ------------*- tablegen -*-===//
//
// Structure (layer, input, weight, output), graph access and compaction, compute ops of the
// inter-operator level, and the two kernel-level templates (gemm, traversal).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTOROPS_TD
#define HECTOR_DIALECT_HECTOROPS_TD

include "hector/Dialect/HectorTypes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

/// Marks the ops that may appear in the body of a `hector.traversal`.
def Hector_TraversalBody : NativeOpTrait<"TraversalBody"> {
  let cppNamespace = "::hector::OpTrait";
}

/// Marks the row-wise elementwise ops of the layer language (arithmetic and activations): each
/// element of the result is a function of the same element of its operands. The passes read
/// it: reordering moves no linear map across such an op, compaction recomputes it per unique
/// pair, autodiff recomputes it rather than saving its result.
def Hector_Elementwise : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::hector::OpTrait";
}

/// Marks the elementwise ops that cost far more than a load per element (exp, tanh, ...): the
/// lowering stores their results rather than computing them again in a second pass.
def Hector_Transcendental : NativeOpTrait<"Transcendental"> {
  let cppNamespace = "::hector::OpTrait";
}

/// Marks the elementwise functions of one operand that are named by their mnemonic: a model
/// file calls `tanh(x)` (compiler/include/hector/Frontend/UnaryFunctions.def), a kernel
/// `::hector::emit::ops::tanh<T>(x)` (codegen-templates/hector/emit/graph_view.h) and the glue
/// `at::tanh(x)`.
def Hector_UnaryFunction : NativeOpTrait<"UnaryFunction"> {
  let cppNamespace = "::hector::OpTrait";
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Hector_LayerOp : Hector_Op<"layer", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>, IsolatedFromAbove, NoTerminator,
    SingleBlock]> {
  let summary = "one compiled layer (or model)";
  let description = [{
    A layer holds, in one block without terminator, the dataflow of one relational GNN layer:
    its run-time inputs (`hector.input`), its weights (`hector.weight`), the computation, and its
    named results (`hector.output`). `params` records the values the layer's parameters were
    bound to. Input and weight names are unique among the layer's inputs and weights; output names
    are unique among its outputs. Names are data and follow hector/Dialect/Names.h: the layer's
    name is an identifier, tensor names are identifiers or digit runs joined by dots (`conv1.W`,
    `saved.0`, `grad.x`).

    The attributes that relate layers (hector/Dialect/LayerRelations.h: `hector.backward`,
    `hector.forward`, `hector.inference`, `hector.inference_of`, `hector.variant_of`, each
    `@LAYER`, and `hector.variants`, a list of them) must name layers of the module.

    Example:

    ```mlir
    hector.layer @rgcn attributes {params = {in = 64 : i64, out = 16 : i64}} {
      %x = hector.input "x" : !hector.value<node, [64]>
      %W = hector.weight "W" glorot : !hector.weight<ntype, [64, 16]>
      %y = hector.linear %x, %W : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]>
             -> !hector.value<node, [16]>
      hector.output "y" %y : !hector.value<node, [16]>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, OptionalAttr<DictionaryAttr>:$params);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $bodyRegion";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::DictionaryAttr":$params)>
  ];
}

def Hector_InputOp : Hector_Op<"input", [
    HasParent<"LayerOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a named run-time input of a layer";
  let description = [{
    Node features or edge data passed to the layer at run time. The result is indexed by nodes
    or by edges (`node`, `edge`; a backward layer's saved activations may also be `src`, `dst`,
    `unique_src` or `unique_dst`).

    Example:

    ```mlir
    %x = hector.input "x" : !hector.value<node, [64]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = "$name attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Hector_WeightOp : Hector_Op<"weight", [
    HasParent<"LayerOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "a named learned weight of a layer";
  let description = [{
    A weight the layer learns, with its initialiser (`glorot`, `zeros`, `ones`, `uniform`,
    `normal`). Its type says how it is sliced and the shape of one slice.

    Example:

    ```mlir
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %b = hector.weight "b" zeros : !hector.weight<none, [16]>
    ```
  }];
  let arguments = (ins StrAttr:$name, Hector_WeightInitAttr:$init);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = "$name $init attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def Hector_OutputOp : Hector_Op<"output", [HasParent<"LayerOp">]> {
  let summary = "a named result of a layer";
  let description = [{
    Marks a value as a result of the layer under the given name. A weight-typed result is the
    gradient of a weight (in a backward layer).

    Example:

    ```mlir
    hector.output "h" %h : !hector.value<node, [16]>
    hector.output "grad.W" %dW : !hector.weight<relation, [64, 16]>
    ```
  }];
  let arguments = (ins StrAttr:$name, AnyTypeOf<[Hector_ValueType, Hector_WeightType]>:$value);
  let assemblyFormat = "$name $value attr-dict `:` qualified(type($value))";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Graph access, slicing and compaction
//===----------------------------------------------------------------------===//

/// A pure op with one value-or-weight operand and one result, printed with both types. Most
/// infer their result type (InferTypeOpAdaptor, inferReturnTypes in HectorOps.cpp); the others
/// have a verifier.
class Hector_ConvertOp<string mnemonic, Type inputType, Type resultType,
                       list<Trait> traits = []>
    : Hector_Op<mnemonic, !listconcat([Pure], traits)> {
  let arguments = (ins inputType:$input);
  let results = (outs resultType:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
}

def Hector_SrcOp : Hector_ConvertOp<"src", Hector_ValueType, Hector_ValueType,
                                    [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "read the source node's row on every edge";
  let description = [{
    Gathers a node-indexed value through every edge's source node. The result is in the `src`
    space: edge-indexed, but known to depend only on the source node.

    Example:

    ```mlir
    %hs = hector.src %h : !hector.value<node, [64]> -> !hector.value<src, [64]>
    ```
  }];
}

def Hector_DstOp : Hector_ConvertOp<"dst", Hector_ValueType, Hector_ValueType,
                                    [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "read the destination node's row on every edge";
  let description = [{
    Gathers a node-indexed value through every edge's destination node. The result is in the
    `dst` space: edge-indexed, but known to depend only on the destination node.

    Example:

    ```mlir
    %hd = hector.dst %h : !hector.value<node, [64]> -> !hector.value<dst, [64]>
    ```
  }];
}

def Hector_SliceOp : Hector_ConvertOp<"slice", Hector_WeightType, Hector_ValueType,
                                      [InferTypeOpAdaptor]> {
  let summary = "use a weight as a value";
  let description = [{
    Reads a weight as a value of the same row shape: a relation-sliced weight becomes a
    `relation`-indexed value (read by each edge's relation), an ntype-sliced one an `ntype`-indexed
    value (read by each node's type), an unsliced one a `none` value (one broadcast row). The head
    dimension, if any, must be the first dimension.

    Example:

    ```mlir
    %a = hector.slice %A : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    ```
  }];
}

def Hector_UniqueGatherOp : Hector_Op<"unique_gather", [
    Pure, Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "gather node rows into unique (node, relation) pairs";
  let description = [{
    Compact materialisation: one row per unique (source node, relation) pair (`side src`, result
    `unique_src`) or unique (destination node, relation) pair (`side dst`, result `unique_dst`),
    holding the node's row.

    Example:

    ```mlir
    %u = hector.unique_gather src %h : !hector.value<node, [64]> -> !hector.value<unique_src, [64]>
    ```
  }];
  let arguments = (ins Hector_EdgeEndAttr:$side, Hector_ValueType:$input);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $side $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
}

def Hector_UniqueExpandOp : Hector_ConvertOp<"unique_expand", Hector_ValueType, Hector_ValueType,
                                             [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "read a unique-pair row on every edge";
  let description = [{
    Compact materialisation: reads the row of each edge's unique (node, relation) pair through the
    per-edge inverse index. The input is `unique_src` or `unique_dst`; the result is `edge`.

    Example:

    ```mlir
    %m = hector.unique_expand %u : !hector.value<unique_src, [16]> -> !hector.value<edge, [16]>
    ```
  }];
}

def Hector_SrcRowOp : Hector_ConvertOp<"src_row", Hector_ValueType, Hector_ValueType,
                                       [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "read the row of a weight slice indexed by every edge's source node";
  let description = [{
    Featureless input (a node's input is its own row of a weight, PyG's `x=None`): on every
    edge, row `src` of the input, a weight read as a value (`hector.slice`) whose slices are
    tables of `n` rows. A `relation` input gives each edge row `src` of its relation's table
    (the result is `edge`-indexed); a `none` input row `src` of the one table (`src`). The
    result's shape is the input's without its first dimension; the table has no head dimension.
    Source ids must be below `n`: the emitted code checks the graph's node count.

    Example:

    ```mlir
    %m = hector.src_row %w : !hector.value<relation, [8285, 16]> -> !hector.value<edge, [16]>
    ```
  }];
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferSrcRow(location, adaptor.getInput(), inferred);
    }
  }];
}

def Hector_SrcRowGradOp : Hector_Op<"src_row_grad", [Pure]> {
  let summary = "the weight gradient of hector.src_row";
  let description = [{
    The backward of `hector.src_row` of a weight's slice: row `src` of the edge's slice (of
    the one table of an unsliced weight) receives the sum of the gradient rows of the edges
    from `src`; every other row is zero. `grad` is indexed by edges (`edge`, `src` or `dst`),
    with the result's shape without its first dimension.

    Example:

    ```mlir
    %dW = hector.src_row_grad %dm : !hector.value<edge, [16]> -> !hector.weight<relation, [8285, 16]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$grad);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    $grad attr-dict `:` qualified(type($grad)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Dense products
//===----------------------------------------------------------------------===//

def Hector_LinearOp : Hector_Op<"linear", [Pure, InferTypeOpAdaptor]> {
  let summary = "typed linear: each row times the weight slice of its relation or node type";
  let description = [{
    Contracts the last dimension of each input row with the first dimension of the weight slice
    the row selects: by the edge's relation for a relation-sliced weight (the input must be
    indexed by edges: `src`, `dst`, `edge`, `unique_*`), by the node's type for an ntype-sliced
    weight (the input must be `node`), or the single slice of an unsliced weight (any space).
    Shapes: `[k] . [k, m...] -> [m...]`, where a head dimension of the weight right after `k`
    becomes the result's head dimension; per head, `[Hh, k] . [Hh, k, m...] -> [Hh, m...]`.
    A relation-sliced linear of `src`, `dst` or `edge` rows is `edge`-indexed; of `unique_*` rows
    stays in that space; an ntype-sliced one is `node`; an unsliced one keeps the input's space.

    `transposed` multiplies by the transpose of the slice instead (the input gradient of a
    linear): `[m...] . [k, m...]^T -> [k]`, per head `[Hh, m...] . [Hh, k, m...]^T -> [Hh, k]`;
    the spaces are as above.

    Example:

    ```mlir
    %z = hector.linear %hs, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h, 16]>
           -> !hector.value<edge, [4h, 16]>
    %dx = hector.linear %dz, %W transposed
            : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]>
            -> !hector.value<edge, [64]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input, Hector_WeightType:$weight,
                       UnitAttr:$transposed);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $input `,` $weight (`transposed` $transposed^)? attr-dict
      `:` qualified(type($input)) `,` qualified(type($weight)) `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferLinear(location, adaptor, inferred);
    }
  }];
}

def Hector_WeightMatmulOp : Hector_Op<"weight_matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "weight-by-weight product";
  let description = [{
    Contracts the last dimension of `lhs` with the first dimension of `rhs`, slice by slice. At
    most one operand is sliced, or both are sliced the same way; the result has that slicing.
    Neither contracted dimension may be a head dimension, and at most one operand has one.
    Used for basis decomposition (`a_r . V`) and introduced by linear-operator reordering
    (`W_r a_r`).

    Example:

    ```mlir
    %W = hector.weight_matmul %a, %V : !hector.weight<relation, [4]>, !hector.weight<none, [4, 64, 16]>
           -> !hector.weight<relation, [64, 16]>
    ```
  }];
  let arguments = (ins Hector_WeightType:$lhs, Hector_WeightType:$rhs);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))
      `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferWeightMatmul(location, adaptor, inferred);
    }
  }];
}

def Hector_WeightDotOp : Hector_Op<"weight_dot", [Pure, InferTypeOpAdaptor]> {
  let summary = "weight-by-vector inner product over the last dimension, per head";
  let description = [{
    Contracts the last dimension of `lhs` with the last dimension of `rhs`, slice by slice,
    where `rhs`'s shape `[s..., d]` is a suffix of `lhs`'s shape `[p..., s..., d]` (head
    dimension included): `result[p..., s...] = sum_d lhs[p..., s..., d] * rhs[s..., d]`. The
    dimensions `s...` (a head dimension among them) are matched, not contracted; the contracted
    dimension cannot be a head dimension. Slicing as `hector.weight_matmul`. Introduced by
    linear-operator reordering: `dot(a_r, x W_r) = x (W_r a_r)` for a per-head `W_r`
    (`[in, Hh, d]` with `a_r` `[Hh, d]` gives `[in, Hh]`).

    Example:

    ```mlir
    %P = hector.weight_dot %W, %a : !hector.weight<relation, [64, 4h, 16]>,
           !hector.weight<relation, [4h, 16]> -> !hector.weight<relation, [64, 4h]>
    ```
  }];
  let arguments = (ins Hector_WeightType:$lhs, Hector_WeightType:$rhs);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))
      `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
}

def Hector_WeightGradOp : Hector_Op<"weight_grad", [Pure]> {
  let summary = "weight gradient of a linear: per-slice reduction of x^T dy";
  let description = [{
    The backward of `hector.linear`: for every slice of the result weight, the sum over the rows
    that select it of the outer product of the input row and the output-gradient row. `grad` must
    have the type of `hector.linear %input, W` for a weight `W` of the result type, except that
    rows per edge may be in any of `src`, `dst` and `edge`.

    Example:

    ```mlir
    %dW = hector.weight_grad %hs, %dz : !hector.value<src, [64]>, !hector.value<edge, [16]>
            -> !hector.weight<relation, [64, 16]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input, Hector_ValueType:$grad);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` qualified(type($input)) `,` qualified(type($grad))
      `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise and reductions
//===----------------------------------------------------------------------===//

/// Binary elementwise op with space join and prefix broadcasting of row shapes.
class Hector_BinaryOp<string mnemonic, string what>
    : Hector_Op<mnemonic, [Pure, Hector_TraversalBody, Hector_Elementwise, InferTypeOpAdaptor]> {
  let arguments = (ins Hector_ValueType:$lhs, Hector_ValueType:$rhs);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))
      `->` qualified(type($result))
  }];
  // The result type is inferred (inferElementwiseBinary); the verifier checks that the declared
  // one equals it.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferElementwiseBinary(getOperationName(), location, adaptor.getLhs(),
                                              adaptor.getRhs(), inferred);
    }
  }];
  let summary = "elementwise " # what;
  let description = [{
    Elementwise }] # what # [{ of two values. The result space is the join of the operands'
    spaces (equal spaces stay; `none` joins anything; `ntype` with `node` is `node`; `relation`
    with `unique_src`/`unique_dst` is the latter; any other mix of edge-indexed spaces is `edge`;
    node-indexed with edge-indexed is an error). Row shapes broadcast by prefix: the shorter shape
    must be a prefix of the longer one, head dimension included (`[]` broadcasts to anything,
    `[Hh]` to `[Hh, d]`).

    Example:

    ```mlir
    %s = hector.}] # mnemonic # [{ %a, %b : !hector.value<src, [4h]>, !hector.value<dst, [4h]>
           -> !hector.value<edge, [4h]>
    ```
  }];
}

def Hector_AddOp : Hector_BinaryOp<"add", "sum">;
def Hector_SubOp : Hector_BinaryOp<"sub", "difference">;
def Hector_MulOp : Hector_BinaryOp<"mul", "product">;
def Hector_DivOp : Hector_BinaryOp<"div", "quotient">;

/// Unary elementwise op: the result has the operand's type (inferred from the trait).
class Hector_UnaryOp<string mnemonic, string what, list<Trait> traits = []>
    : Hector_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType, InferTypeOpInterface,
                                       Hector_TraversalBody, Hector_Elementwise], traits)> {
  let summary = "elementwise " # what;
  let description = [{
    Elementwise }] # what # [{ of a value; the result has the operand's type.

    Example:

    ```mlir
    %r = hector.}] # mnemonic # [{ %a : !hector.value<edge, [4h, 16]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = "$input attr-dict `:` qualified(type($input))";
}

def Hector_NegOp : Hector_UnaryOp<"neg", "negation">;

/// An elementwise function of one operand (see Hector_UnaryFunction).
class Hector_UnaryFunctionOp<string mnemonic, string what, list<Trait> traits = []>
    : Hector_UnaryOp<mnemonic, what, !listconcat([Hector_UnaryFunction], traits)>;

def Hector_ExpOp : Hector_UnaryFunctionOp<"exp", "exponential", [Hector_Transcendental]>;
def Hector_ReluOp : Hector_UnaryFunctionOp<"relu", "ReLU">;
def Hector_TanhOp : Hector_UnaryFunctionOp<"tanh", "hyperbolic tangent", [Hector_Transcendental]>;
def Hector_SigmoidOp : Hector_UnaryFunctionOp<"sigmoid", "logistic sigmoid",
                                              [Hector_Transcendental]>;
def Hector_GeluOp : Hector_UnaryFunctionOp<"gelu", "GELU (exact, erf-based)",
                                           [Hector_Transcendental]>;
def Hector_SoftplusOp : Hector_UnaryFunctionOp<"softplus", "softplus, log(1 + exp(x))",
                                               [Hector_Transcendental]>;

def Hector_LeakyReluOp : Hector_Op<"leaky_relu", [
    Pure, SameOperandsAndResultType, InferTypeOpInterface, Hector_TraversalBody,
    Hector_Elementwise]> {
  let summary = "elementwise leaky ReLU";
  let description = [{
    `x` where `x >= 0`, `slope * x` elsewhere; the result has the operand's type.

    Example:

    ```mlir
    %s = hector.leaky_relu %a slope 2.000000e-01 : !hector.value<edge, [4h]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input, F64Attr:$slope);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = "$input `slope` $slope attr-dict `:` qualified(type($input))";
}

def Hector_ConstantOp : Hector_Op<"constant", [
    Pure, ConstantLike, Hector_TraversalBody]> {
  let summary = "a scalar constant";
  let description = [{
    A single scalar row (`!hector.value<none, []>`) broadcast to any space and shape.

    Example:

    ```mlir
    %c = hector.constant 1.000000e+00 : !hector.value<none, []>
    ```
  }];
  let arguments = (ins F64Attr:$value);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = "$value attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Hector_DotOp : Hector_Op<"dot", [Pure, Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "inner product over the last dimension";
  let description = [{
    Contracts the last dimension of two rows of equal shape: `[d] . [d] -> []`,
    `[Hh, d] . [Hh, d] -> [Hh]`. The head dimension cannot be contracted. The result space is
    the join of the operands' spaces.

    Example:

    ```mlir
    %s = hector.dot %a, %z : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>
           -> !hector.value<edge, [4h]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$lhs, Hector_ValueType:$rhs);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` qualified(type($lhs)) `,` qualified(type($rhs))
      `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferDot(location, adaptor, inferred);
    }
  }];
}

def Hector_AggregateOp : Hector_Op<"aggregate", [Pure, Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "reduce edge rows into nodes";
  let description = [{
    Reduces (`sum`, `mean` or `max`) the rows of an edge-indexed value (`src`, `dst`, `edge`,
    `unique_*`) into nodes: `by dst` over the incoming edges of each node, `by src` over its
    outgoing edges (used by the backward pass). A node without such edges gets zeros. The result
    is node-indexed, with the input's row shape.

    Example:

    ```mlir
    %h = hector.aggregate sum %m by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
    ```
  }];
  let arguments = (ins Hector_AggregateKindAttr:$kind, Hector_ValueType:$input,
                       Hector_EdgeEndAttr:$by);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $kind $input `by` $by attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
}

def Hector_SoftmaxOp : Hector_ConvertOp<"softmax", Hector_ValueType, Hector_ValueType,
                                        [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "edge softmax over the incoming edges of each destination";
  let description = [{
    For every destination node, the softmax of the rows of its incoming edges, per element
    (per head for `[Hh]` rows), computed with the per-destination maximum subtracted. The input
    is edge-indexed (`src`, `dst`, `edge`, `unique_*`); the result is `edge` with the same row
    shape.

    Example:

    ```mlir
    %a = hector.softmax %s : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    ```
  }];
}

def Hector_ConcatOp : Hector_Op<"concat", [Pure, Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "concatenate along the last dimension";
  let description = [{
    Concatenates two or more values along the last dimension of their rows. All other dimensions
    (and the head dimension) must agree, and the last one cannot be the head dimension. The
    result space is the join of the operands' spaces.

    Example:

    ```mlir
    %c = hector.concat %a, %b : !hector.value<node, [16]>, !hector.value<node, [8]>
           -> !hector.value<node, [24]>
    ```
  }];
  let arguments = (ins Variadic<Hector_ValueType>:$inputs);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` qualified(type($inputs)) `->` qualified(type($result))
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks the declared one equals it.
}

def Hector_SplitHeadsOp : Hector_ConvertOp<"split_heads", Hector_ValueType, Hector_ValueType,
                                           [Hector_TraversalBody]> {
  let summary = "split a vector row into heads";
  let description = [{
    Reshapes `[H*d]` rows into `[Hh, d]`; the number of heads is the result type's head
    dimension. The space is unchanged.

    Example:

    ```mlir
    %s = hector.split_heads %x : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
    ```
  }];
  // The number of heads is the result type's choice: verified, not inferred.
  let hasVerifier = 1;
}

def Hector_MergeHeadsOp : Hector_ConvertOp<"merge_heads", Hector_ValueType, Hector_ValueType,
                                           [Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "merge the heads of a row into one vector";
  let description = [{
    Reshapes `[Hh, d]` rows into `[H*d]` (heads concatenated). The space is unchanged.

    Example:

    ```mlir
    %m = hector.merge_heads %x : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Backward (produced by hector-autodiff)
//===----------------------------------------------------------------------===//

def Hector_ReduceOp : Hector_Op<"reduce", [Pure]> {
  let summary = "sum rows into a coarser index space (the adjoint of broadcasting and slicing)";
  let description = [{
    Sums every row of the input into the row of the result space it belongs to, and sums away
    the trailing dimensions the result shape lacks (the result shape is a prefix of the input
    shape, head dimension included). Where the rows belong:

    | input                                | result       | rows summed per result row       |
    |--------------------------------------|--------------|----------------------------------|
    | any                                  | same space   | none (only trailing dims summed) |
    | `src`, `dst`                         | `edge`       | none (forgets the edge end)      |
    | any                                  | `none`       | all rows                         |
    | `node`                               | `ntype`      | the nodes of each type           |
    | `src`, `dst`, `edge`, `unique_*`     | `relation`   | the rows of each relation        |
    | `src`, `dst`, `edge`                 | `unique_src`/`unique_dst` | the edges of each unique pair |
    | `unique_src` / `unique_dst`          | `node`       | the pairs of each source / destination node |

    A weight result `!hector.weight<S, D>` is the value result `sliceSpace(S)` retyped as the
    weight (the adjoint of `hector.slice`).

    Example:

    ```mlir
    %da = hector.reduce %g : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input);
  let results = (outs AnyTypeOf<[Hector_ValueType, Hector_WeightType]>:$result);
  let assemblyFormat = [{
    $input attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether every result row is computed from the input row of the same index (a value
    /// result in the input's space, or `src`/`dst` rows into `edge`): only trailing dimensions
    /// are summed, so the op may live in a traversal body.
    bool isRowLocal();
    /// Whether this sums the member edges of every unique pair (`src`, `dst` or `edge` rows
    /// into `unique_src` or `unique_dst` rows, no trailing dimension summed): a node traversal
    /// over the pairs may hold it (the pair's sum kept in registers).
    bool isPairSum();
  }];
}

def Hector_AggregateGradOp : Hector_Op<"aggregate_grad", [
    Pure, Hector_TraversalBody, InferTypeOpAdaptor]> {
  let summary = "gradient of a mean or max aggregation with respect to its edge rows";
  let description = [{
    Given the gradient `grad` of `y = aggregate KIND x by END` (node rows), the gradient with
    respect to x per edge e with node n = END(e):

    - `mean`: `grad[n] / deg_END(n)` (no operand `x`); the result is `src`/`dst` (it depends on
      the node only).
    - `max`: `grad[n]` on the first edge of n, in the order of n's CSR (incoming edges for
      `by dst`, outgoing for `by src`), whose row element equals the maximum, 0 on every other
      edge, per element; `x` is the aggregated input (its maximum is recomputed). The result is
      `edge`.

    The gradient of a sum is `hector.src`/`hector.dst` of `grad`.

    Example:

    ```mlir
    %de = hector.aggregate_grad max %dy, %e by dst
            : (!hector.value<node, [16]>, !hector.value<edge, [16]>) -> !hector.value<edge, [16]>
    ```
  }];
  let arguments = (ins Hector_AggregateKindAttr:$kind, Hector_ValueType:$grad,
                       Optional<Hector_ValueType>:$input, Hector_EdgeEndAttr:$by);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $kind $grad (`,` $input^)? `by` $by attr-dict `:` functional-type(operands, results)
  }];
  // The result type is inferred (HectorOps.cpp); the verifier checks `input` against the kind.
  let hasVerifier = 1;
}

/// Gradient of an elementwise activation: `grad * f'(input)`, with space join and prefix
/// broadcasting as the binary elementwise ops.
class Hector_ActivationGradOp<string mnemonic, string what, dag extraArgs, string extraFormat,
                              list<Trait> traits = []>
    : Hector_Op<mnemonic, !listconcat([Pure, Hector_TraversalBody, InferTypeOpAdaptor], traits)> {
  let arguments = !con((ins Hector_ValueType:$grad, Hector_ValueType:$input), extraArgs);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = "$grad `,` $input " # extraFormat # [{ attr-dict `:`
    qualified(type($grad)) `,` qualified(type($input)) `->` qualified(type($result))
  }];
  // As the binary ops: the result type is inferred from (grad, input).
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::hector::inferElementwiseBinary(getOperationName(), location, adaptor.getGrad(),
                                              adaptor.getInput(), inferred);
    }
  }];
  let summary = "gradient of " # what;
}

def Hector_LeakyReluGradOp : Hector_ActivationGradOp<"leaky_relu_grad", "leaky ReLU and ReLU",
    (ins F64Attr:$slope), "`slope` $slope"> {
  let description = [{
    `grad` where `input > 0`, `slope * grad` elsewhere (ReLU: slope 0; at 0 the derivative is
    `slope`, as in PyTorch).

    Example:

    ```mlir
    %dx = hector.leaky_relu_grad %dy, %x slope 2.000000e-01
            : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    ```
  }];
}

def Hector_GeluGradOp : Hector_ActivationGradOp<"gelu_grad", "exact (erf-based) GELU", (ins), "",
                                                [Hector_Transcendental]> {
  let description = [{
    `grad * (Phi(input) + input * phi(input))`, with `Phi(x) = (1 + erf(x / sqrt(2))) / 2` and
    `phi(x) = exp(-x^2 / 2) / sqrt(2 pi)`.

    Example:

    ```mlir
    %dx = hector.gelu_grad %dy, %x
            : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
    ```
  }];
}

def Hector_NarrowOp : Hector_Op<"narrow", [Pure, Hector_TraversalBody]> {
  let summary = "a range of the last dimension (the adjoint of concat)";
  let description = [{
    Takes the columns `[offset, offset + m)` of the last dimension of every row, where `m` is the
    result's last dimension; all other dimensions and the space are unchanged. The last
    dimension cannot be the head dimension.

    Example:

    ```mlir
    %b = hector.narrow %c offset 16 : !hector.value<node, [24]> -> !hector.value<node, [8]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$input, I64Attr:$offset);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $input `offset` $offset attr-dict `:` qualified(type($input)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Hector_WeightMatmulGradOp : Hector_Op<"weight_matmul_grad", [Pure]> {
  let summary = "gradient of a weight-by-weight product with respect to one operand";
  let description = [{
    For `C = weight_matmul A, B` (A `[a..., k]`, B `[k, b...]`, C `[a..., b...]`) and the
    gradient `grad` of C:

    - `lhs` (`other` is B): `dA[a..., k] = sum_{b...} grad[a..., b...] B[k, b...]`
    - `rhs` (`other` is A): `dB[k, b...] = sum_{a...} A[a..., k] grad[a..., b...]`

    slice by slice; where the result is unsliced but `grad` is sliced, the slices' products are
    summed. The result type must be such that the forward product of it and `other` (in
    operand order) has `grad`'s type.

    Example:

    ```mlir
    %dcomp = hector.weight_matmul_grad lhs %dW, %V
               : !hector.weight<relation, [16, 16]>, !hector.weight<none, [4, 16, 16]>
               -> !hector.weight<relation, [4]>
    ```
  }];
  let arguments = (ins UnitAttr:$rhs, Hector_WeightType:$grad, Hector_WeightType:$other);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    (`rhs` $rhs^) : (`lhs`)? $grad `,` $other attr-dict
      `:` qualified(type($grad)) `,` qualified(type($other)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Hector_WeightDotGradOp : Hector_Op<"weight_dot_grad", [Pure]> {
  let summary = "gradient of a weight-by-vector inner product with respect to one operand";
  let description = [{
    For `C = weight_dot A, B` (A `[p..., s..., d]`, B `[s..., d]`, C `[p..., s...]`) and the
    gradient `grad` of C:

    - `lhs` (`other` is B): `dA[p..., s..., d] = grad[p..., s...] B[s..., d]`
    - `rhs` (`other` is A): `dB[s..., d] = sum_{p...} grad[p..., s...] A[p..., s..., d]`

    slice by slice; where the result is unsliced but `grad` is sliced, the slices' products are
    summed. The result type must be such that the forward product of it and `other` (in
    operand order) has `grad`'s type.

    Example:

    ```mlir
    %da = hector.weight_dot_grad rhs %dP, %W
            : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]>
            -> !hector.weight<relation, [4h, 16]>
    ```
  }];
  let arguments = (ins UnitAttr:$rhs, Hector_WeightType:$grad, Hector_WeightType:$other);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = [{
    (`rhs` $rhs^) : (`lhs`)? $grad `,` $other attr-dict
      `:` qualified(type($grad)) `,` qualified(type($other)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Hector_WeightAddOp : Hector_Op<"weight_add", [
    Pure, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "sum of two weights of the same type (accumulates weight gradients)";
  let description = [{
    Slice by slice sum of two weights of one type.

    Example:

    ```mlir
    %dW = hector.weight_add %dW0, %dW1 : !hector.weight<relation, [64, 16]>
    ```
  }];
  let arguments = (ins Hector_WeightType:$lhs, Hector_WeightType:$rhs);
  let results = (outs Hector_WeightType:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` qualified(type($result))";
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

def Hector_GemmOp : Hector_Op<"gemm", [Pure]> {
  let summary = "segmented GEMM with fused gather and scatter";
  let description = [{
    One instance of the GEMM template: for every segment of rows (one per relation, per node
    type, or a single one; `segment` must be `b`'s slicing), `C[rows] = gather(A)[rows] x B_seg`
    (`x B_seg^T` with `transpose_b`).

    - `gather`: `none` reads A's rows as they are; `src`/`dst` read a node-indexed A through
      every edge's source/destination; `unique_src`/`unique_dst` through the unique
      (node, relation) pairs.
    - `scatter`: `store` writes one row per iterated row (the result space is that of the
      equivalent `hector.linear`); `accumulate_dst`/`accumulate_src` sum edge rows into their
      destination/source nodes (result `node`); `accumulate_unique` sums edge rows into their
      unique (node, relation) pairs (result `unique_src` or `unique_dst`). On rows of unique
      pairs (`unique_dst`/`unique_src` rows, `segment relation`), `accumulate_dst` and
      `accumulate_src` sum each pair's row into its node: a node has at most one pair per
      relation, so the rows of one segment never meet in C, and the template adds them without
      a workspace, segment after segment (deterministic).
    - `plus %acc` (same type as the result): C starts from `acc` instead of zeros (or, for
      `store`, the product is added to it): `C = acc + product`. The lowering fuses an
      addition into the GEMM this way when `acc` has no other reader, so the sum is written
      into `acc`'s buffer (the glue reuses it) instead of a new one.
    - Shapes follow `hector.linear`; with `transpose_b` the roles of the weight's first and
      remaining dimensions swap: `[m...] . [k, m...]^T -> [k]`, `[Hh, m...] . [Hh, k, m...]^T ->
      [Hh, k]`.

    Example:

    ```mlir
    %c = hector.gemm %h, %W segment relation gather src scatter accumulate_dst
           : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
    ```
  }];
  let arguments = (ins Hector_ValueType:$a, Hector_WeightType:$b,
                       Hector_SlicingAttr:$segment, Hector_GemmGatherAttr:$gather,
                       Hector_GemmScatterAttr:$scatter, UnitAttr:$transpose_b,
                       Optional<Hector_ValueType>:$acc);
  let results = (outs Hector_ValueType:$result);
  let assemblyFormat = [{
    $a `,` $b `segment` $segment `gather` $gather `scatter` $scatter
      (`transpose_b` $transpose_b^)? (`plus` $acc^ `:` qualified(type($acc)))? attr-dict
      `:` qualified(type($a)) `,` qualified(type($b)) `->` qualified(type($result))
  }];
  let hasVerifier = 1;
}

def Hector_TraversalOp : Hector_Op<"traversal", [
    RecursiveMemoryEffects, SingleBlock, IsolatedFromAbove]> {
  let summary = "a fused region of elementwise ops and reductions";
  let description = [{
    One instance of the traversal template: edge-parallel over relation-sorted edges
    (`edge`), or node-parallel over the incoming edges of each destination node (`node`, with
    reductions in registers). The body's block arguments are the rows of the operands, bound in
    order and of the same types; the body holds only graph-access, elementwise, dot, concat,
    head, aggregate and softmax ops (softmax only in node traversals) and ends with
    `hector.yield`, whose operands become the results. The aggregates of one traversal all
    reduce over the same end of the edges.

    A node traversal whose results are all `unique_src` (or all `unique_dst`) rows runs over
    those unique pairs instead of the nodes: each pair's member edges are visited in turn, and
    the body's `hector.reduce` ops into that pair space (pair sums) accumulate in registers,
    as aggregates do over a node's edges. Such a traversal holds no `hector.aggregate`, and
    only pair sums produce its results.

    Example:

    ```mlir
    %a, %h = hector.traversal node (%s = %score, %m = %msg)
        : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>)
        -> (!hector.value<edge, [4h]>, !hector.value<node, [4h, 16]>) {
      %p = hector.softmax %s : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %w = hector.mul %p, %m : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>
             -> !hector.value<edge, [4h, 16]>
      %r = hector.aggregate sum %w by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %p, %r : !hector.value<edge, [4h]>, !hector.value<node, [4h, 16]>
    }
    ```
  }];
  let arguments = (ins Hector_TraversalKindAttr:$kind, Variadic<Hector_ValueType>:$inputs);
  let results = (outs Variadic<Hector_ValueType>:$results);
  let regions = (region SizedRegion<1>:$bodyRegion);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
}

def Hector_YieldOp : Hector_Op<"yield", [
    Pure, Terminator, HasParent<"TraversalOp">]> {
  let summary = "the results of a traversal body";
  let description = [{
    Ends the body of a `hector.traversal`; its operands become the traversal's results.

    Example:

    ```mlir
    hector.yield %p, %r : !hector.value<edge, [4h]>, !hector.value<node, [4h, 16]>
    ```
  }];
  let arguments = (ins Variadic<Hector_ValueType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` qualified(type($values)))?";
}

#endif // HECTOR_DIALECT_HECTOROPS_TD
