//===- OptimizePasses.td - Hector optimisations ------------*- tablegen -*-===//
//
// Linear-operator reordering and compact materialisation, each applied site by site where the
// cost model says it pays, and the cost model's report.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_OPTIMIZE_OPTIMIZEPASSES_TD
#define HECTOR_OPTIMIZE_OPTIMIZEPASSES_TD

include "mlir/Pass/PassBase.td"

/// The graph sizes and machine balance every cost-driven pass takes.
class Hector_CostOptions {
  list<Option> options = [
    Option<"edges", "edges", "int64_t", "0", "number of edges E (0: sizes not given)">,
    Option<"nodes", "nodes", "int64_t", "0", "number of nodes N">,
    Option<"relations", "relations", "int64_t", "1", "number of relations R">,
    Option<"ntypes", "ntypes", "int64_t", "1", "number of node types T">,
    Option<"uniqueSrc", "unique-src", "int64_t", "0",
           "unique (source, relation) pairs U_src (0: E)">,
    Option<"uniqueDst", "unique-dst", "int64_t", "0",
           "unique (destination, relation) pairs U_dst (0: E)">,
    Option<"balance", "balance", "double", "4.0",
           "flops one byte moved costs (the machine's flop/byte ridge point)">
  ];
}

def ReorderLinear : Pass<"hector-reorder-linear", "hector::LayerOp">, Hector_CostOptions {
  let summary = "Reassociate chains of linear operators into weight products";
  let description = [{
    Applies associativity wherever it is legal and the cost model says it does not cost more
    (docs/architecture.md, "Optimisations"). The sites, with `x` edge rows (`src(h)`,
    `dst(h)`, ...) and `W_r` a relation-sliced (or unsliced) weight:

    ```
    dot(slice(a), linear(x, W))          =>  linear(x, weight_dot(W, a))       (x W_r) . a_r
                                              (weight_matmul when W has no heads)
    linear(linear(x, A), B)              =>  linear(x, weight_matmul(A, B))    (x A) B
    linear(src(linear(h, K)), W)         =>  linear(src(h), weight_matmul(K, W))   (K unsliced)
    aggregate sum (c * linear(src(h), W)) by dst
        =>  reduce(linear(reduce(c * src(h) -> unique_dst), W) -> node)     W relation-sliced
        =>  linear(aggregate sum (c * src(h)) by dst, W)                     W unsliced
    ```

    `c` is an optional per-edge scalar (`[]` rows). Nothing is moved across a non-linearity
    (a bias, an activation, a softmax): each site needs the linear's result to feed the product
    directly, and to have no other use when removing it is what pays. With `edges=` (and the
    other sizes) a site is rewritten only when the estimated cost at those sizes drops; without,
    only when it never grows with the graph (see the cost model).
  }];
}

def CompactMaterialize : Pass<"hector-compact-materialize", "hector::LayerOp">,
                         Hector_CostOptions {
  let summary = "Compute edge values that depend on one end and the relation once per unique pair";
  let description = [{
    An edge value that depends only on (source node, relation) — built from `src(h)`,
    relation slices and constants by linears and elementwise ops — is computed on the unique
    (source, relation) pairs and read per edge through the pair's inverse index; the same on the
    destination side:

    ```
    %z = linear(src(%h), %W)              =>  %u = unique_gather src %h
    ... uses of %z on edges                   %zu = linear(%u, %W)           (unique_src rows)
                                              %z = unique_expand %zu         (edge rows)
    ```

    Rows drop from E to U <= min(E, N R). Because E/U is a property of the graph, compaction
    applies only when sizes are given (`edges=`, `unique-src=`, `unique-dst=`, ...) and the
    estimate drops. Run it before hector-autodiff: the backward then sums gradients per unique
    row (the rules of `unique_gather` / `unique_expand`).
  }];
}

def Explain : Pass<"hector-explain", "hector::LayerOp">, Hector_CostOptions {
  let summary = "Print the cost model's choice among the optimisation variants";
  let description = [{
    For every layer, prints to standard output which rewrites each variant (none, reorder,
    compact, both) applies at the given sizes, the estimated FLOPs, bytes moved and largest
    intermediate of each, and the variant the cost model chooses. The IR is not changed.
  }];
}

def Variants : Pass<"hector-variants", "mlir::ModuleOp"> {
  let summary = "Add each layer's optimisation variants, for the runtime to choose per graph";
  let description = [{
    Whether compaction pays depends on E/U, which only the graph knows; so the compiled
    library carries the alternatives and the runtime picks one per graph with the cost model
    (docs/architecture.md, "Optimisations"). For every forward layer `@L` (not one derived by
    hector-autodiff, not already a variant):

    ```
    hector.layer @L { ... }
      =>
    hector.layer @L {hector.variant = "none", hector.variants = [@L__reorder, ..., @L__both_logits]}
    hector.layer @L__reorder {hector.variant = "reorder", hector.variant_of = @L}   reorder sites
                                                                that pay on some graph
    hector.layer @L__compact {hector.variant = "compact", hector.variant_of = @L}   every legal
                                                                compaction
    hector.layer @L__both    {hector.variant = "both", hector.variant_of = @L}      both
    hector.layer @L__both_logits {hector.variant = "both_logits", ...}   both, and every
                                                    reordering an exponential reads
    ```

    `both_logits` computes every softmax logit from the layer's inputs (`x (W a)`), whatever
    that site costs on its own: reordering decides site by site before compaction, and such a
    site can pay on compacted rows (rgat_pyg's source side); and where no logit is computed from
    the messages, a 16-bit call keeps them in 16 bits (docs/runtime.md, "16-bit layers").

    A variant whose rewrites change nothing, or that equals an earlier one, is left out. A layer
    that already has variants, is one, or was differentiated or derived by hector-autodiff is
    left alone (its variants would have no backward layers). Every
    layer records the rewrites it applied and skipped (`hector.rewrites`). Run before
    hector-autodiff: each variant gets its own backward layer and inference copy.
  }];
  let options = [
    Option<"reorder", "reorder", "bool", "true", "add the reordered variants">,
    Option<"compact", "compact", "bool", "true", "add the compacted variants">
  ];
}

def AnnotateCost : Pass<"hector-annotate-cost", "hector::LayerOp"> {
  let summary = "Record the cost model's estimate of a layer for the runtime";
  let description = [{
    Attaches the estimate of the cost model (FLOPs, bytes moved and the elements of every
    materialised intermediate, each a linear function of N, E, U_src, U_dst, R, T and 1) as
    `hector.cost`; the emitter writes it into the manifest, where the runtime evaluates it at a
    graph's sizes to choose among a layer's variants:

    ```
    hector.layer @L { ... }
      =>
    hector.layer @L {hector.cost = {bytes = array<f64: ...>, flops = array<f64: ...>,
                                    intermediates = [array<f64: ...>, ...]}} { ... }
    ```

    Run it on the inter-operator IR (before hector-lower-to-kernels), after hector-autodiff so
    that backward layers and inference copies are estimated too. A layer that already has an
    estimate keeps it (it was made before the lowering), so the pass can run again on lowered
    IR.
  }];
}

#endif // HECTOR_OPTIMIZE_OPTIMIZEPASSES_TD
