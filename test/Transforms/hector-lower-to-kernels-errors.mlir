// RUN: hector-opt %s --pass-pipeline='builtin.module(hector.layer(hector-lower-to-kernels))' --split-input-file --verify-diagnostics | FileCheck %s

// A unique_gather read by anything but a GEMM is fused into the traversal that reads it: a read
// of the node row (here, per edge through unique_expand: the edge's source row).
// CHECK-LABEL: hector.layer @l
// CHECK: %[[T:[0-9]+]] = hector.traversal edge (%[[A:.*]] = %x)
// CHECK-NEXT: %[[U:[0-9]+]] = hector.unique_gather src %[[A]]
// CHECK-NEXT: %[[E:[0-9]+]] = hector.unique_expand %[[U]]
// CHECK-NEXT: hector.yield %[[E]]
// CHECK: hector.output "e" %[[T]]
hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  %u = hector.unique_gather src %x : !hector.value<node, [4]> -> !hector.value<unique_src, [4]>
  %e = hector.unique_expand %u : !hector.value<unique_src, [4]> -> !hector.value<edge, [4]>
  hector.output "e" %e : !hector.value<edge, [4]>
}

// -----

// A weight gradient gathers its node rows itself (a private unique_gather before it); an unread
// unique_gather disappears.
// CHECK-LABEL: hector.layer @g
hector.layer @g {
  %x = hector.input "x" : !hector.value<node, [4]>
  %dy = hector.input "dy" : !hector.value<unique_src, [8]>
  %unused = hector.unique_gather dst %x : !hector.value<node, [4]> -> !hector.value<unique_dst, [4]>
  %u = hector.unique_gather src %x : !hector.value<node, [4]> -> !hector.value<unique_src, [4]>
  %dW = hector.weight_grad %u, %dy : !hector.value<unique_src, [4]>, !hector.value<unique_src, [8]> -> !hector.weight<relation, [4, 8]>
  hector.output "grad.W" %dW : !hector.weight<relation, [4, 8]>
}
// CHECK-NOT: unique_gather dst
// CHECK: %[[U:[0-9]+]] = hector.unique_gather src %x
// CHECK-NEXT: hector.weight_grad %[[U]], %dy
