// RUN: hector-opt %s --split-input-file --pass-pipeline='builtin.module(hector.layer(hector-compact-materialize{edges=100000 nodes=10000 relations=20 unique-src=10000 unique-dst=20000}))' | FileCheck %s
// RUN: hector-opt %s --split-input-file --pass-pipeline='builtin.module(hector.layer(hector-compact-materialize))' | FileCheck %s --check-prefix=NOSIZES
// RUN: hector-opt %s --split-input-file --pass-pipeline='builtin.module(hector.layer(hector-compact-materialize{edges=100000 nodes=10000 relations=20 unique-src=100000 unique-dst=100000}))' | FileCheck %s --check-prefix=NODUP

// Without sizes nothing is compacted (E/U is a property of the graph); when every pair has one
// edge the indirection only adds work.
// NOSIZES-NOT: hector.unique_gather
// NODUP-NOT: hector.unique_gather

// RGCN: the message W_r x_j depends on (source, relation): one GEMM row per unique pair; the
// per-edge norm is applied after the expansion.

// CHECK-LABEL: hector.layer @rgcn
// CHECK:      %[[U:.*]] = hector.unique_gather src %x : !hector.value<node, [16]> -> !hector.value<unique_src, [16]>
// CHECK-NEXT: %[[M:.*]] = hector.linear %[[U]], %W : !hector.value<unique_src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<unique_src, [16]>
// CHECK-NEXT: %[[E:.*]] = hector.unique_expand %[[M]] : !hector.value<unique_src, [16]> -> !hector.value<edge, [16]>
// CHECK-NEXT: hector.mul %norm, %[[E]]
hector.layer @rgcn {
  %x = hector.input "x" : !hector.value<node, [16]>
  %norm = hector.input "norm" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
  %0 = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %1 = hector.linear %0, %W : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
  %2 = hector.mul %norm, %1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
  %3 = hector.aggregate sum %2 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
  hector.output "h" %3 : !hector.value<node, [16]>
}

// -----

// RGAT: z_j = x_j W_r and a_src . z_j on unique (source, relation) rows; x_i W_r and
// a_dst . (x_i W_r) on unique (destination, relation) rows; the softmax and the weighted sum
// stay per edge.

// CHECK-LABEL: hector.layer @rgat
// CHECK:      %[[US:.*]] = hector.unique_gather src %x
// CHECK-NEXT: %[[Z:.*]] = hector.linear %[[US]], %W : {{.*}} -> !hector.value<unique_src, [4h, 16]>
// CHECK-NEXT: %[[ZE:.*]] = hector.unique_expand %[[Z]] : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
// CHECK-NEXT: hector.slice %a_src
// CHECK-NEXT: %[[SS:.*]] = hector.dot %{{.*}}, %[[Z]] : {{.*}} -> !hector.value<unique_src, [4h]>
// CHECK-NEXT: %[[SSE:.*]] = hector.unique_expand %[[SS]]
// CHECK-NEXT: hector.slice %a_dst
// CHECK-NEXT: %[[UD:.*]] = hector.unique_gather dst %x
// CHECK-NEXT: %[[ZD:.*]] = hector.linear %[[UD]], %W : {{.*}} -> !hector.value<unique_dst, [4h, 16]>
// CHECK-NEXT: %[[SD:.*]] = hector.dot %{{.*}}, %[[ZD]] : {{.*}} -> !hector.value<unique_dst, [4h]>
// CHECK-NEXT: %[[SDE:.*]] = hector.unique_expand %[[SD]] : !hector.value<unique_dst, [4h]> -> !hector.value<edge, [4h]>
// CHECK-NEXT: hector.add %[[SSE]], %[[SDE]]
// CHECK:      hector.softmax
// CHECK-NEXT: hector.mul %{{.*}}, %[[ZE]]
hector.layer @rgat {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
  %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
  %0 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %1 = hector.linear %0, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
  %2 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
  %3 = hector.dot %2, %1 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
  %4 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
  %5 = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  %6 = hector.linear %5, %W : !hector.value<dst, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
  %7 = hector.dot %4, %6 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
  %8 = hector.add %3, %7 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  %9 = hector.leaky_relu %8 slope 2.000000e-01 : !hector.value<edge, [4h]>
  %10 = hector.softmax %9 : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  %11 = hector.mul %10, %1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %12 = hector.aggregate sum %11 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
  %13 = hector.merge_heads %12 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
  hector.output "h" %13 : !hector.value<node, [64]>
}

// -----

// HGT: k_j W_att[r] and v_j W_msg[r] on unique source pairs; the attention dot with q_i mixes
// both ends and stays per edge.

// CHECK-LABEL: hector.layer @hgt
// CHECK:      %[[UK:.*]] = hector.unique_gather src %k
// CHECK-NEXT: %[[KW:.*]] = hector.linear %[[UK]], %W_att : {{.*}} -> !hector.value<unique_src, [4h, 16]>
// CHECK-NEXT: %[[KE:.*]] = hector.unique_expand %[[KW]]
// CHECK-NEXT: %[[QD:.*]] = hector.dst %q
// CHECK-NEXT: hector.dot %[[KE]], %[[QD]] : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
// CHECK:      %[[UV:.*]] = hector.unique_gather src %v
// CHECK-NEXT: %[[VW:.*]] = hector.linear %[[UV]], %W_msg : {{.*}} -> !hector.value<unique_src, [4h, 16]>
// CHECK-NEXT: %[[VE:.*]] = hector.unique_expand %[[VW]]
// CHECK-NEXT: hector.mul %{{.*}}, %[[VE]]
hector.layer @hgt {
  %k = hector.input "k" : !hector.value<node, [4h, 16]>
  %q = hector.input "q" : !hector.value<node, [4h, 16]>
  %v = hector.input "v" : !hector.value<node, [4h, 16]>
  %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
  %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
  %0 = hector.src %k : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
  %1 = hector.linear %0, %W_att : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
  %2 = hector.dst %q : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
  %3 = hector.dot %1, %2 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
  %4 = hector.softmax %3 : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  %5 = hector.src %v : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
  %6 = hector.linear %5, %W_msg : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
  %7 = hector.mul %4, %6 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %8 = hector.aggregate sum %7 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
  hector.output "h" %8 : !hector.value<node, [4h, 16]>
}

// -----

// Elementwise functions of (source, relation) values and relation slices are compacted with
// them; edge data, or a value of the source node alone, are not.

// CHECK-LABEL: hector.layer @chains
// CHECK:      %[[B:.*]] = hector.slice %b
// CHECK-NEXT: %[[U:.*]] = hector.unique_gather src %x
// CHECK-NEXT: %[[L:.*]] = hector.linear %[[U]], %W : {{.*}} -> !hector.value<unique_src, [64]>
// CHECK-NEXT: %[[A:.*]] = hector.add %[[L]], %[[B]] : !hector.value<unique_src, [64]>, !hector.value<relation, [64]> -> !hector.value<unique_src, [64]>
// CHECK-NEXT: %[[T:.*]] = hector.tanh %[[A]] : !hector.value<unique_src, [64]>
// CHECK-NEXT: %[[E:.*]] = hector.unique_expand %[[T]]
// CHECK-NEXT: hector.mul %w, %[[E]]
// CHECK:      hector.relu %{{.*}} : !hector.value<src, [64]>
// CHECK-NOT:  hector.unique_gather
hector.layer @chains {
  %x = hector.input "x" : !hector.value<node, [64]>
  %w = hector.input "w" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 64]>
  %b = hector.weight "b" zeros : !hector.weight<relation, [64]>
  %0 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %1 = hector.linear %0, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 64]> -> !hector.value<edge, [64]>
  %2 = hector.slice %b : !hector.weight<relation, [64]> -> !hector.value<relation, [64]>
  %3 = hector.add %1, %2 : !hector.value<edge, [64]>, !hector.value<relation, [64]> -> !hector.value<edge, [64]>
  %4 = hector.tanh %3 : !hector.value<edge, [64]>
  %5 = hector.mul %w, %4 : !hector.value<edge, []>, !hector.value<edge, [64]> -> !hector.value<edge, [64]>
  %6 = hector.relu %0 : !hector.value<src, [64]>
  %7 = hector.add %5, %6 : !hector.value<edge, [64]>, !hector.value<src, [64]> -> !hector.value<edge, [64]>
  %8 = hector.aggregate sum %7 by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
  hector.output "h" %8 : !hector.value<node, [64]>
}
