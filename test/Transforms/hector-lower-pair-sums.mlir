// Pair sums (hector.reduce of edge rows into unique_src / unique_dst rows) under
// --hector-lower-to-kernels: a pair sum of rows computed in a traversal becomes the root of a node
// traversal over the pairs, so the per-edge rows are never stored; a pair sum of a stored value
// stays a top-level reduce (the segmented row sum).
// RUN: hector-opt --pass-pipeline='builtin.module(hector.layer(hector-lower-to-kernels))' %s | FileCheck %s
// RUN: hectorc -x mlir --emit=cpp --no-backward --no-reorder --no-compact %s | FileCheck %s --check-prefix=CPP

// Two pair sums into the same pairs share one traversal, which computes the edge row once; the
// unique_dst sum is then an ordinary compacted value (an edge traversal over the pairs, a GEMM).
// CHECK-LABEL: hector.layer @two_sums
// CHECK:      %[[S:[0-9]+]]:2 = hector.traversal node (%{{arg[0-9]+}} = %x, %{{arg[0-9]+}} = %c) : (!hector.value<node, [8]>, !hector.value<edge, []>) -> (!hector.value<unique_dst, [8]>, !hector.value<unique_dst, [8]>) {
// CHECK-NEXT:   hector.src
// CHECK-NEXT:   %[[M:[0-9]+]] = hector.mul
// CHECK-NEXT:   hector.reduce %[[M]] : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
// CHECK-NEXT:   %[[E:[0-9]+]] = hector.exp %[[M]]
// CHECK-NEXT:   hector.reduce %[[E]] : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
// CHECK-NEXT:   hector.yield
// CHECK:      hector.traversal edge (%{{arg[0-9]+}} = %[[S]]#0, %{{arg[0-9]+}} = %[[S]]#1)
// The per-relation products are summed into their nodes by the GEMM itself (accumulate_dst):
// the [U_dst, 8] products are never stored.
// CHECK:      hector.gemm %{{[0-9]+}}, %W segment relation gather none scatter accumulate_dst : !hector.value<unique_dst, [8]>, !hector.weight<relation, [8, 8]> -> !hector.value<node, [8]>
// CHECK-NOT:  hector.reduce
// CHECK:      hector.output
// CPP-LABEL: // two_sums_k0_pair_traversal_r2
// CPP:       const std::int64_t e = ce.edge, v = ce.node, rel = etype[e], src = ce.nbr, dst = ce.csrNode;
// CPP:       ::hector::emit::cpu::pairTraversal(g.inPairCsr(), f);
hector.layer @two_sums {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 8]>
  %0 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %1 = hector.mul %c, %0 : !hector.value<edge, []>, !hector.value<src, [8]> -> !hector.value<edge, [8]>
  %2 = hector.reduce %1 : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
  %3 = hector.exp %1 : !hector.value<edge, [8]>
  %4 = hector.reduce %3 : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
  %5 = hector.add %2, %4 : !hector.value<unique_dst, [8]>, !hector.value<unique_dst, [8]> -> !hector.value<unique_dst, [8]>
  %6 = hector.linear %5, %W : !hector.value<unique_dst, [8]>, !hector.weight<relation, [8, 8]> -> !hector.value<unique_dst, [8]>
  %7 = hector.reduce %6 : !hector.value<unique_dst, [8]> -> !hector.value<node, [8]>
  hector.output "h" %7 : !hector.value<node, [8]>
}

// A GEMM result is stored anyway: its pair sum stays the segmented row sum.
// CHECK-LABEL: hector.layer @stored
// CHECK:      %[[G:[0-9]+]] = hector.gemm %x, %W segment relation gather src scatter store
// CHECK-NEXT: hector.reduce %[[G]] : !hector.value<edge, [8]> -> !hector.value<unique_src, [8]>
// CPP-LABEL: // stored_k1_segsum
hector.layer @stored {
  %x = hector.input "x" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 8]>
  %0 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %1 = hector.linear %0, %W : !hector.value<src, [8]>, !hector.weight<relation, [8, 8]> -> !hector.value<edge, [8]>
  %2 = hector.reduce %1 : !hector.value<edge, [8]> -> !hector.value<unique_src, [8]>
  hector.output "saved.0" %2 : !hector.value<unique_src, [8]>
  %3 = hector.aggregate sum %1 by dst : !hector.value<edge, [8]> -> !hector.value<node, [8]>
  hector.output "h" %3 : !hector.value<node, [8]>
}

// A node aggregate read through an edge end is not in registers of a traversal over pairs: it is
// stored by a node traversal first. The unique_src pairs' members are read through their edge list.
// CHECK-LABEL: hector.layer @aggregate_inside
// CHECK:      %[[A:[0-9]+]] = hector.traversal node (%{{arg[0-9]+}} = %c) : (!hector.value<edge, [4]>) -> !hector.value<node, [4]> {
// CHECK:        hector.aggregate max
// CHECK:      hector.traversal node (%{{arg[0-9]+}} = %[[A]], %{{arg[0-9]+}} = %c) : (!hector.value<node, [4]>, !hector.value<edge, [4]>) -> !hector.value<unique_src, [4]> {
// CHECK:        hector.dst
// CHECK:        hector.reduce %{{[0-9]+}} : !hector.value<edge, [4]> -> !hector.value<unique_src, [4]>
// CPP-LABEL: // aggregate_inside_k1_pair_traversal_r1
// CPP:       ::hector::emit::cpu::pairTraversal(g.outPairCsr(), f);
hector.layer @aggregate_inside {
  %c = hector.input "c" : !hector.value<edge, [4]>
  %0 = hector.aggregate max %c by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
  %1 = hector.dst %0 : !hector.value<node, [4]> -> !hector.value<dst, [4]>
  %2 = hector.sub %c, %1 : !hector.value<edge, [4]>, !hector.value<dst, [4]> -> !hector.value<edge, [4]>
  %3 = hector.reduce %2 : !hector.value<edge, [4]> -> !hector.value<unique_src, [4]>
  hector.output "saved.0" %3 : !hector.value<unique_src, [4]>
}
