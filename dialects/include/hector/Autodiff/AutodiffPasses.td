//===- AutodiffPasses.td - Hector automatic differentiation -*- tablegen -*-===//
//
// Reverse-mode differentiation of Hector layers at the inter-operator level.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_AUTODIFF_AUTODIFFPASSES_TD
#define HECTOR_AUTODIFF_AUTODIFFPASSES_TD

include "mlir/Pass/PassBase.td"

def Autodiff : Pass<"hector-autodiff", "mlir::ModuleOp"> {
  let summary = "Derive a backward layer for every layer (reverse mode)";
  let description = [{
    For every `hector.layer @L` (that is not already a forward or backward layer) adds a layer
    `@L_backward` computing the gradients of all of @L's inputs and weights from the gradients
    of its outputs, and makes @L return the activations the backward reads:

    ```
    hector.layer @L {                          hector.layer @L attributes {hector.backward = @L_backward} {
      %x = hector.input "x"                      %x = hector.input "x"
      %W = hector.weight "W"                     %W = hector.weight "W"
      %z = hector.linear %x, %W                  %z = hector.linear %x, %W
      %y = hector.exp %z                 =>      %y = hector.exp %z
      hector.output "y" %y                       hector.output "y" %y
    }                                            hector.output "saved.0" %z
                                               }
                                               hector.layer @L_backward attributes {hector.forward = @L} {
                                                 %x = hector.input "x"
                                                 %s0 = hector.input "saved.0"
                                                 %dy = hector.input "grad.y"
                                                 %W = hector.weight "W"
                                                 %y = hector.exp %s0
                                                 %dz = hector.mul %dy, %y
                                                 %dx = hector.linear %dz, %W transposed
                                                 %dW = hector.weight_grad %x, %dz
                                                 hector.output "grad.x" %dx
                                                 hector.output "grad.W" %dW
                                               }
    ```

    Saved are the results of `hector.linear`, `hector.dot`, `hector.aggregate` and
    `hector.softmax` the backward reads; every other value it reads (graph access, elementwise,
    head reshapes, concat, slices, weight products, constants) is recomputed from inputs,
    weights and saved values. docs/architecture.md ("Automatic differentiation") gives the
    interface and the derivative rule of every op. Run it before hector-decompose-softmax and
    the lowering.

    With `inference=true` (what hectorc runs) every differentiated layer is first copied as it
    was, for calls that need no gradient: the copy saves nothing, so the lowering fuses it
    freely (RGAT's softmax stays one three-pass traversal):

    ```
    hector.layer @L {...}      =>      hector.layer @L attributes {hector.backward = @L_backward,
                                                                   hector.inference = @L_inference} {...}
                                       hector.layer @L_inference attributes {hector.inference_of = @L} {...}
                                       hector.layer @L_backward attributes {hector.forward = @L} {...}
    ```
  }];
  let options = [
    Option<"inference", "inference", "bool", /*default=*/"false",
           "Also keep an unmodified copy @L_inference of every differentiated layer">,
  ];
}

#endif // HECTOR_AUTODIFF_AUTODIFFPASSES_TD
