// RUN: hector-opt %s --hector-autodiff=inference=true | FileCheck %s
// RUN: hector-opt %s --hector-autodiff=inference=true | hector-opt --hector-autodiff=inference=true | FileCheck %s --check-prefix=TWICE

// With inference=true the layer is copied before it learns to return saved activations: the copy
// computes the outputs alone, and neither the copy nor the derived layers are differentiated
// again.

// CHECK-LABEL: hector.layer @L attributes {hector.backward = @L_backward, hector.inference = @L_inference}
// CHECK: hector.output "y"
// CHECK: hector.output "saved.0"
// CHECK-LABEL: hector.layer @L_inference attributes {hector.inference_of = @L}
// CHECK: %[[Z:.*]] = hector.linear
// CHECK: %[[Y:.*]] = hector.exp %[[Z]]
// CHECK-NEXT: hector.output "y" %[[Y]]
// CHECK-NEXT: }
// CHECK-LABEL: hector.layer @L_backward attributes {hector.forward = @L}
// CHECK: hector.output "grad.W"

// TWICE-COUNT-3: hector.layer
// TWICE-NOT: hector.layer
hector.layer @L {
  %x = hector.input "x" : !hector.value<node, [4]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 4]>
  %z = hector.linear %x, %W : !hector.value<node, [4]>, !hector.weight<none, [4, 4]> -> !hector.value<node, [4]>
  %y = hector.exp %z : !hector.value<node, [4]>
  hector.output "y" %y : !hector.value<node, [4]>
}
