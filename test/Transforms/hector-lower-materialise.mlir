// What --hector-lower-to-kernels stores rather than recomputes in every reader. A traversal's
// functor evaluates a node value read through an edge end once per edge, so a node value holding
// exp / tanh / sigmoid / GELU is stored (N rows once instead of E rows per reader); a cheap one is
// recomputed. An edge value that sums a row (a row-local reduce over trailing dims, as costly as a
// dot) read by two kernels is stored too.
// RUN: hector-opt --pass-pipeline='builtin.module(hector.layer(hector-lower-to-kernels))' %s | FileCheck %s

// CHECK-LABEL: hector.layer @transcendental_node
// CHECK:      %[[G:[0-9]+]] = hector.traversal node (%{{arg[0-9]+}} = %x) : (!hector.value<node, [8]>) -> !hector.value<node, [8]> {
// CHECK-NEXT:   hector.gelu
// CHECK-NEXT:   hector.yield
// CHECK:      hector.traversal edge (%{{arg[0-9]+}} = %[[G]], %{{arg[0-9]+}} = %c)
// CHECK-NOT:    hector.gelu
// CHECK:        hector.yield
hector.layer @transcendental_node {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, [8]>
  %0 = hector.gelu %x : !hector.value<node, [8]>
  %1 = hector.dst %0 : !hector.value<node, [8]> -> !hector.value<dst, [8]>
  %2 = hector.mul %1, %c : !hector.value<dst, [8]>, !hector.value<edge, [8]> -> !hector.value<edge, [8]>
  hector.output "e" %2 : !hector.value<edge, [8]>
}

// CHECK-LABEL: hector.layer @cheap_node
// CHECK:      hector.traversal edge (%{{arg[0-9]+}} = %x, %{{arg[0-9]+}} = %c)
// CHECK-NEXT:   hector.mul
// CHECK-NEXT:   hector.dst
hector.layer @cheap_node {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, [8]>
  %0 = hector.mul %x, %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
  %1 = hector.dst %0 : !hector.value<node, [8]> -> !hector.value<dst, [8]>
  %2 = hector.mul %1, %c : !hector.value<dst, [8]>, !hector.value<edge, [8]> -> !hector.value<edge, [8]>
  hector.output "e" %2 : !hector.value<edge, [8]>
}

// The row sum s feeds a node aggregate and an edge output: stored once, read by both kernels.
// CHECK-LABEL: hector.layer @row_sum_read_twice
// CHECK:      %[[S:[0-9]+]] = hector.traversal edge (%{{arg[0-9]+}} = %x, %{{arg[0-9]+}} = %c) : (!hector.value<node, [2h, 4]>, !hector.value<edge, [2h, 4]>) -> !hector.value<edge, [2h]> {
// CHECK:        hector.reduce %{{[0-9]+}} : !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h]>
// CHECK:      hector.traversal node (%{{arg[0-9]+}} = %[[S]]) : (!hector.value<edge, [2h]>) -> !hector.value<node, [2h]> {
// CHECK:      hector.traversal edge (%{{arg[0-9]+}} = %{{[0-9]+}}, %{{arg[0-9]+}} = %[[S]])
hector.layer @row_sum_read_twice {
  %x = hector.input "x" : !hector.value<node, [2h, 4]>
  %c = hector.input "c" : !hector.value<edge, [2h, 4]>
  %0 = hector.src %x : !hector.value<node, [2h, 4]> -> !hector.value<src, [2h, 4]>
  %1 = hector.mul %0, %c : !hector.value<src, [2h, 4]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h, 4]>
  %s = hector.reduce %1 : !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h]>
  %n = hector.aggregate sum %s by dst : !hector.value<edge, [2h]> -> !hector.value<node, [2h]>
  %d = hector.dst %n : !hector.value<node, [2h]> -> !hector.value<dst, [2h]>
  %e = hector.sub %s, %d : !hector.value<edge, [2h]>, !hector.value<dst, [2h]> -> !hector.value<edge, [2h]>
  hector.output "e" %e : !hector.value<edge, [2h]>
}

// A stored compacted value is computed by an edge traversal over its pairs, never in the same
// traversal as per-edge rows (here the independent edge output w).
// CHECK-LABEL: hector.layer @pairs_apart
// The row sum s is stored in its pairs' rows (U, not E), then read through unique_expand.
// CHECK-DAG:  hector.traversal edge (%{{arg[0-9]+}} = %c) : (!hector.value<edge, [2h]>) -> !hector.value<edge, [2h]> {
// CHECK-DAG:  %[[S:[0-9]+]] = hector.traversal edge (%{{arg[0-9]+}} = %u, %{{arg[0-9]+}} = %v) : (!hector.value<unique_src, [2h, 4]>, !hector.value<unique_src, [2h, 4]>) -> !hector.value<unique_src, [2h]> {
// CHECK:      hector.traversal node (%{{arg[0-9]+}} = %[[S]]) : (!hector.value<unique_src, [2h]>) -> !hector.value<node, [2h]> {
// CHECK:      hector.traversal edge (%{{arg[0-9]+}} = %[[S]], %{{arg[0-9]+}} = %{{[0-9]+}})
hector.layer @pairs_apart {
  %u = hector.input "u" : !hector.value<unique_src, [2h, 4]>
  %v = hector.input "v" : !hector.value<unique_src, [2h, 4]>
  %c = hector.input "c" : !hector.value<edge, [2h]>
  %m = hector.mul %u, %v : !hector.value<unique_src, [2h, 4]>, !hector.value<unique_src, [2h, 4]> -> !hector.value<unique_src, [2h, 4]>
  %s = hector.reduce %m : !hector.value<unique_src, [2h, 4]> -> !hector.value<unique_src, [2h]>
  %w = hector.mul %c, %c : !hector.value<edge, [2h]>, !hector.value<edge, [2h]> -> !hector.value<edge, [2h]>
  hector.output "w" %w : !hector.value<edge, [2h]>
  %e = hector.unique_expand %s : !hector.value<unique_src, [2h]> -> !hector.value<edge, [2h]>
  %a = hector.aggregate sum %e by dst : !hector.value<edge, [2h]> -> !hector.value<node, [2h]>
  %d = hector.dst %a : !hector.value<node, [2h]> -> !hector.value<dst, [2h]>
  %r = hector.sub %e, %d : !hector.value<edge, [2h]>, !hector.value<dst, [2h]> -> !hector.value<edge, [2h]>
  hector.output "r" %r : !hector.value<edge, [2h]>
}

// -----

// An aggregate by dst read through dst inside an aggregate by src (the backward of a node value
// that sums over its in-edges and is read at both ends): the traversal reduces by src, the end
// of its outermost aggregate, so the inner aggregate is stored by a traversal of its own.
// CHECK-LABEL: hector.layer @nested_ends
// CHECK: %[[A:[0-9]+]] = hector.traversal node (%{{.*}} = %e)
// CHECK-NEXT: hector.aggregate sum %{{.*}} by dst
// CHECK-NEXT: hector.yield
// CHECK: hector.traversal node (%[[ARG:.*]] = %[[A]], %{{.*}} = %e)
// CHECK-NEXT: hector.dst %[[ARG]]
// CHECK-NOT: by dst
// CHECK: hector.aggregate sum %{{.*}} by src
hector.layer @nested_ends {
  %e = hector.input "e" : !hector.value<edge, [4]>
  %a = hector.aggregate sum %e by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
  %d = hector.dst %a : !hector.value<node, [4]> -> !hector.value<dst, [4]>
  %m = hector.add %e, %d : !hector.value<edge, [4]>, !hector.value<dst, [4]> -> !hector.value<edge, [4]>
  %h = hector.aggregate sum %m by src : !hector.value<edge, [4]> -> !hector.value<node, [4]>
  hector.output "h" %h : !hector.value<node, [4]>
}

// -----

// A weight-space value that a top-level op reads (here the input of a linear map of weights, a
// projected relation embedding) is computed at the top level, by the glue; one that only
// traversals read (exp) is recomputed inside them from its few rows.
// CHECK-LABEL: hector.layer @weight_rows
// CHECK: %[[S:[0-9]+]] = hector.slice %r
// CHECK-NEXT: %[[T:[0-9]+]] = hector.tanh %[[S]]
// CHECK-NEXT: %[[P:[0-9]+]] = hector.gemm %[[T]], %W segment none gather none scatter store : !hector.value<relation, [4]>
// CHECK-NEXT: hector.traversal edge (%{{.*}} = %x, %{{.*}} = %[[P]], %{{.*}} = %[[S]])
// CHECK: hector.exp
hector.layer @weight_rows {
  %x = hector.input "x" : !hector.value<node, [4]>
  %r = hector.weight "r" glorot : !hector.weight<relation, [4]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 4]>
  %s = hector.slice %r : !hector.weight<relation, [4]> -> !hector.value<relation, [4]>
  %t = hector.tanh %s : !hector.value<relation, [4]>
  %p = hector.linear %t, %W : !hector.value<relation, [4]>, !hector.weight<none, [4, 4]> -> !hector.value<relation, [4]>
  %xs = hector.src %x : !hector.value<node, [4]> -> !hector.value<src, [4]>
  %e = hector.exp %s : !hector.value<relation, [4]>
  %m = hector.mul %xs, %p : !hector.value<src, [4]>, !hector.value<relation, [4]> -> !hector.value<edge, [4]>
  %n = hector.mul %m, %e : !hector.value<edge, [4]>, !hector.value<relation, [4]> -> !hector.value<edge, [4]>
  hector.output "n" %n : !hector.value<edge, [4]>
}
