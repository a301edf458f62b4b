//===- Passes.td - Passes of the emitter --------------------*- tablegen -*-===//
//
// The step between the kernel-level IR and the read-only emitter.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_PASSES_TD
#define HECTOR_EMIT_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrepareEmission : Pass<"hector-prepare-emission", "mlir::ModuleOp"> {
  let summary = "Check that kernel-level IR is printable and record every kernel-level decision";
  let description = [{
    Runs after the lowering (`hector-compile`), before the emitter prints anything. It checks
    legality with a conversion target: every top-level op of every `hector.layer` must be one
    the templates or the glue run (`hector.gemm`, `hector.traversal`, `hector.weight_matmul`,
    `hector.weight_grad`, `hector.reduce`, the weight-space ops, elementwise ops on weight-space
    rows), a top-level gather (`hector.src`, `hector.dst`, `hector.unique_gather`) may only be
    read by `hector.weight_grad`, and each op's configuration must be one the templates have (a
    GEMM's rows and scatter, a weight gradient's segments, a traversal body the functor printer
    can print). An op that is not is reported at its location and nothing is annotated.

    Then it records what the emitter prints from, so that the emitter only reads:

    ```
    %g = hector.gemm ...       => %g = hector.gemm ... {hector.kernel = #hector<kernel gemm>,
                                        hector.kernel_name = "rgcn_k0_gemm_relation_gsrc_..."}
    %t = hector.traversal node => ... {hector.kernel = #hector<kernel traversal>,
                                       hector.kernel_name = "rgcn_k2_node_traversal_p1_r1",
                                       hector.passes = 1 : i64}
    %s = hector.src %x         => ... {hector.kernel = #hector<kernel fused_gather>}
    hector.layer @rgcn         => hector.layer @rgcn attributes {hector.emit_id = "rgcn_3f2a9c1d"}
    ```

    The kernel kind (`#hector<kernel ...>`: gemm, weight_product, traversal, weight_grad,
    row_sum, glue, fused_gather) says what runs the op; a traversal's passes are the passes
    over each node's edges its aggregates need; a layer's emission id is its C++ and operator
    namespace: its name and a hash of its IR, of the whole module's and of the target, taken
    before any annotation. Running the pass again replaces its annotations.
  }];
  let options = [
    Option<"target", "target", "std::string", /*default=*/"\"cuda\"",
           "The target the emission ids hash: cpu or cuda">,
  ];
}

#endif // HECTOR_EMIT_PASSES_TD
