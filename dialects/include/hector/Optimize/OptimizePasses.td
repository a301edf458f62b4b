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

#endif // HECTOR_OPTIMIZE_OPTIMIZEPASSES_TD
