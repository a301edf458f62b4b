// RUN: hector-opt %s --pass-pipeline='builtin.module(hector.layer(hector-decompose-softmax))' --split-input-file --verify-diagnostics | FileCheck %s

// softmax(s) => ex = exp(s - dst(max(s))); ex / dst(sum(ex)).
// CHECK-LABEL: hector.layer @attention
// CHECK: %[[M:.*]] = hector.aggregate max %[[S:.*]] by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// CHECK-NEXT: %[[MD:.*]] = hector.dst %[[M]] : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
// CHECK-NEXT: %[[D:.*]] = hector.sub %[[S]], %[[MD]] : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
// CHECK-NEXT: %[[EX:.*]] = hector.exp %[[D]] : !hector.value<edge, [4h]>
// CHECK-NEXT: %[[DEN:.*]] = hector.aggregate sum %[[EX]] by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// CHECK-NEXT: %[[DD:.*]] = hector.dst %[[DEN]] : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
// CHECK-NEXT: %[[A:.*]] = hector.div %[[EX]], %[[DD]] : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
// CHECK-NEXT: hector.output "alpha" %[[A]]
// CHECK-NOT: hector.softmax
hector.layer @attention {
  %s = hector.input "s" : !hector.value<edge, [4h]>
  %a = hector.softmax %s : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  hector.output "alpha" %a : !hector.value<edge, [4h]>
}

// -----

// A source-side value is edge-indexed after the shift.
// CHECK-LABEL: hector.layer @source_side
// CHECK: hector.aggregate max %{{.*}} by dst : !hector.value<src, []> -> !hector.value<node, []>
// CHECK: hector.sub %{{.*}}, %{{.*}} : !hector.value<src, []>, !hector.value<dst, []> -> !hector.value<edge, []>
hector.layer @source_side {
  %x = hector.input "x" : !hector.value<node, []>
  %s = hector.src %x : !hector.value<node, []> -> !hector.value<src, []>
  %a = hector.softmax %s : !hector.value<src, []> -> !hector.value<edge, []>
  hector.output "alpha" %a : !hector.value<edge, []>
}

// -----

// A score that depends only on the destination is the same on all of a node's edges: the
// quotient (1 / in-degree) stays in the dst space and is retyped as edge rows.
// CHECK-LABEL: hector.layer @destination_side
// CHECK: hector.sub %{{.*}}, %{{.*}} : !hector.value<dst, []>, !hector.value<dst, []> -> !hector.value<dst, []>
// CHECK: %[[Q:[0-9]+]] = hector.div %{{.*}}, %{{.*}} : !hector.value<dst, []>, !hector.value<dst, []> -> !hector.value<dst, []>
// CHECK-NEXT: %[[A:[0-9]+]] = hector.reduce %[[Q]] : !hector.value<dst, []> -> !hector.value<edge, []>
// CHECK-NEXT: hector.output "alpha" %[[A]]
hector.layer @destination_side {
  %x = hector.input "x" : !hector.value<node, []>
  %s = hector.dst %x : !hector.value<node, []> -> !hector.value<dst, []>
  %a = hector.softmax %s : !hector.value<dst, []> -> !hector.value<edge, []>
  hector.output "alpha" %a : !hector.value<edge, []>
}
