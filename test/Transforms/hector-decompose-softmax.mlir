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

hector.layer @destination_side {
  %x = hector.input "x" : !hector.value<node, []>
  %s = hector.dst %x : !hector.value<node, []> -> !hector.value<dst, []>
  // expected-error @+1 {{softmax of a value that depends only on the destination node is not supported}}
  %a = hector.softmax %s : !hector.value<dst, []> -> !hector.value<edge, []>
  hector.output "alpha" %a : !hector.value<edge, []>
}
