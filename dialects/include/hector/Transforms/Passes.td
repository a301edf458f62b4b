//===- Passes.td - Hector transformation passes ------------*- tablegen -*-===//
//
// The passes from the inter-operator level of the Hector dialect to its kernel level. Each
// description shows its rewrite as `before => after`.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TRANSFORMS_PASSES_TD
#define HECTOR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def DecomposeSoftmax : Pass<"hector-decompose-softmax", "hector::LayerOp"> {
  let summary = "Rewrite edge softmax into max, exp, sum and divide";
  let description = [{
    Replaces every `hector.softmax` by its numerically stable definition over the incoming
    edges of each destination node:

    ```
    a = softmax(s)
      =>
    m   = aggregate max(s) by dst
    ex  = exp(s - dst(m))
    den = aggregate sum(ex) by dst
    a   = ex / dst(den)
    ```

    A node without incoming edges has no edge to normalise, so no special case is needed; the
    aggregates give it zeros. The lowering fuses the three reductions into one node traversal.
  }];
}

def LowerToKernels : Pass<"hector-lower-to-kernels", "hector::LayerOp"> {
  let summary = "Lower inter-operator ops onto the GEMM and traversal templates";
  let description = [{
    Turns the compute ops of a layer into kernel-level instances:

    ```
    z = linear(src(x), W_rel)            =>  z = gemm x, W segment relation gather src scatter store
    k = linear(x, W_ntype)               =>  k = gemm x, W segment ntype gather none scatter store
    y = linear(e, W_none)                =>  y = gemm e, W segment none gather none scatter store
    s = leaky_relu(dot(a, z) + ...)      =>  s = traversal edge (...) { ... yield }
    h = sum(norm * z) + r + b            =>  h = traversal node (...) { aggregate ...; add ...; yield }
    ```

    A value is materialised (a result of a top-level op) when it is a GEMM operand or result,
    a layer output, an edge value that several kernels or several passes over the edges read
    and whose recomputation needs an inner product, or a node value holding a reduction that is
    read through the other end of an edge or by more than one kernel. Every other value is
    fused into the traversal that reads it (recomputed there). A GEMM operand read through an
    edge end or a unique pair (`src(x)`, `dst(x)`, `unique_gather`) becomes the GEMM's gather
    of the node table `x`. Weights, slices and weight products (`hector.weight_matmul`, an
    instance of the GEMM template over the weight slices) stay at the top level. No value of
    E x in x out elements is ever created.
  }];
}

#endif // HECTOR_TRANSFORMS_PASSES_TD
