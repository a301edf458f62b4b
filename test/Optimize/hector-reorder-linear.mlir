// RUN: hector-opt %s --split-input-file --pass-pipeline='builtin.module(hector.layer(hector-reorder-linear))' | FileCheck %s
// RUN: hector-opt %s --split-input-file --pass-pipeline='builtin.module(hector.layer(hector-reorder-linear{edges=100000 nodes=10000 relations=20 unique-dst=10000}))' | FileCheck %s --check-prefix=SIZES

// RGAT (Hector's variant): the destination side's (h_i W_r) . a_dst becomes h_i . (W_r a_dst),
// so h_i W_r is never computed. The source side's z_j is still needed for the message, so
// h_j . (W_r a_src) would add a GEMM for a dot: its cost grows and it stays.

// CHECK-LABEL: hector.layer @rgat
// CHECK:      %[[XS:.*]] = hector.src %x
// CHECK-NEXT: %[[Z:.*]] = hector.linear %[[XS]], %W : {{.*}} -> !hector.value<edge, [4h, 16]>
// CHECK-NEXT: %[[AS:.*]] = hector.slice %a_src
// CHECK-NEXT: %[[SS:.*]] = hector.dot %[[AS]], %[[Z]]
// CHECK-NEXT: %[[XD:.*]] = hector.dst %x
// CHECK-NEXT: %[[P:.*]] = hector.weight_dot %W, %a_dst : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<relation, [4h, 16]> -> !hector.weight<relation, [64, 4h]>
// CHECK-NEXT: %[[SD:.*]] = hector.linear %[[XD]], %[[P]] : !hector.value<dst, [64]>, !hector.weight<relation, [64, 4h]> -> !hector.value<edge, [4h]>
// CHECK-NEXT: hector.add %[[SS]], %[[SD]]
// CHECK-NOT:  hector.linear
// CHECK:      hector.output "h"
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

// Attention logits alone (z_j unused elsewhere): both sides become weight products, and a
// vector attention without heads uses hector.weight_matmul.

// CHECK-LABEL: hector.layer @attention_only
// CHECK-DAG:  %[[PS:.*]] = hector.weight_matmul %W, %a_src : !hector.weight<relation, [64, 16]>, !hector.weight<relation, [16]> -> !hector.weight<relation, [64]>
// CHECK-DAG:  hector.linear %{{.*}}, %[[PS]] : !hector.value<src, [64]>, !hector.weight<relation, [64]> -> !hector.value<edge, []>
// CHECK-DAG:  %[[PD:.*]] = hector.weight_matmul %W, %a_dst
// CHECK-DAG:  hector.linear %{{.*}}, %[[PD]] : !hector.value<dst, [64]>, !hector.weight<relation, [64]> -> !hector.value<edge, []>
// CHECK-NOT:  hector.dot
hector.layer @attention_only {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [16]>
  %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [16]>
  %0 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %1 = hector.linear %0, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [16]>
  %2 = hector.slice %a_src : !hector.weight<relation, [16]> -> !hector.value<relation, [16]>
  %3 = hector.dot %1, %2 : !hector.value<edge, [16]>, !hector.value<relation, [16]> -> !hector.value<edge, []>
  %4 = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  %5 = hector.linear %4, %W : !hector.value<dst, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [16]>
  %6 = hector.slice %a_dst : !hector.weight<relation, [16]> -> !hector.value<relation, [16]>
  %7 = hector.dot %6, %5 : !hector.value<relation, [16]>, !hector.value<edge, [16]> -> !hector.value<edge, []>
  %8 = hector.add %3, %7 : !hector.value<edge, []>, !hector.value<edge, []> -> !hector.value<edge, []>
  hector.output "s" %8 : !hector.value<edge, []>
}

// -----

// RGAT as PyG (shared q, k): linear(linear(x_i, W_r), q) => linear(x_i, W_r q) on the
// destination side; the source side's x_j W_r is the message and stays.

// CHECK-LABEL: hector.layer @rgat_pyg
// CHECK:      %[[OJ:.*]] = hector.linear %{{.*}}, %W : !hector.value<src, [64]>
// CHECK:      %[[Q:.*]] = hector.weight_matmul %W, %q : !hector.weight<relation, [64, 64]>, !hector.weight<none, [64, 4h]> -> !hector.weight<relation, [64, 4h]>
// CHECK-NEXT: hector.linear %{{.*}}, %[[Q]] : !hector.value<dst, [64]>, !hector.weight<relation, [64, 4h]> -> !hector.value<edge, [4h]>
// CHECK-NEXT: hector.linear %[[OJ]], %k
hector.layer @rgat_pyg {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 64]>
  %q = hector.weight "q" glorot : !hector.weight<none, [64, 4h]>
  %k = hector.weight "k" glorot : !hector.weight<none, [64, 4h]>
  %0 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %1 = hector.linear %0, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 64]> -> !hector.value<edge, [64]>
  %2 = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  %3 = hector.linear %2, %W : !hector.value<dst, [64]>, !hector.weight<relation, [64, 64]> -> !hector.value<edge, [64]>
  %4 = hector.linear %3, %q : !hector.value<edge, [64]>, !hector.weight<none, [64, 4h]> -> !hector.value<edge, [4h]>
  %5 = hector.linear %1, %k : !hector.value<edge, [64]>, !hector.weight<none, [64, 4h]> -> !hector.value<edge, [4h]>
  %6 = hector.add %4, %5 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  %7 = hector.softmax %6 : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  %8 = hector.split_heads %1 : !hector.value<edge, [64]> -> !hector.value<edge, [4h, 16]>
  %9 = hector.mul %7, %8 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %10 = hector.aggregate sum %9 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
  %11 = hector.merge_heads %10 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
  hector.output "h" %11 : !hector.value<node, [64]>
}

// -----

// HGT with unsliced projections and one head, in = 8 <= d = 16: (h_j K) W_att[r] =>
// h_j (K W_att[r]) and (h_j V) W_msg[r] => h_j (V W_msg[r]); k_j and v_j are never computed.

// CHECK-LABEL: hector.layer @hgt_narrow
// CHECK-DAG:  %[[KW:.*]] = hector.weight_matmul %K, %W_att : !hector.weight<none, [8, 16]>, !hector.weight<relation, [16, 16]> -> !hector.weight<relation, [8, 16]>
// CHECK-DAG:  hector.linear %{{.*}}, %[[KW]] : !hector.value<src, [8]>, !hector.weight<relation, [8, 16]> -> !hector.value<edge, [16]>
// CHECK-DAG:  %[[VW:.*]] = hector.weight_matmul %V, %W_msg
// CHECK-DAG:  hector.linear %{{.*}}, %[[VW]] : !hector.value<src, [8]>
// CHECK-NOT:  hector.linear %x, %K
// CHECK-NOT:  hector.linear %x, %V
hector.layer @hgt_narrow {
  %x = hector.input "x" : !hector.value<node, [8]>
  %K = hector.weight "K" glorot : !hector.weight<none, [8, 16]>
  %Q = hector.weight "Q" glorot : !hector.weight<none, [8, 16]>
  %V = hector.weight "V" glorot : !hector.weight<none, [8, 16]>
  %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [16, 16]>
  %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [16, 16]>
  %k = hector.linear %x, %K : !hector.value<node, [8]>, !hector.weight<none, [8, 16]> -> !hector.value<node, [16]>
  %q = hector.linear %x, %Q : !hector.value<node, [8]>, !hector.weight<none, [8, 16]> -> !hector.value<node, [16]>
  %v = hector.linear %x, %V : !hector.value<node, [8]>, !hector.weight<none, [8, 16]> -> !hector.value<node, [16]>
  %ks = hector.src %k : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %kw = hector.linear %ks, %W_att : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
  %qd = hector.dst %q : !hector.value<node, [16]> -> !hector.value<dst, [16]>
  %att = hector.dot %kw, %qd : !hector.value<edge, [16]>, !hector.value<dst, [16]> -> !hector.value<edge, []>
  %alpha = hector.softmax %att : !hector.value<edge, []> -> !hector.value<edge, []>
  %vs = hector.src %v : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %msg = hector.linear %vs, %W_msg : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
  %m = hector.mul %alpha, %msg : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
  %h = hector.aggregate sum %m by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
  hector.output "h" %h : !hector.value<node, [16]>
}

// -----

// The same with in = 64 > d = 16: the per-edge GEMM would widen from d x d to in x d, so the
// cost grows and nothing changes.

// CHECK-LABEL: hector.layer @hgt_wide
// CHECK-NOT:  hector.weight_matmul
// CHECK:      %[[K:.*]] = hector.linear %x, %K
// CHECK-NEXT: %[[KS:.*]] = hector.src %[[K]]
// CHECK-NEXT: hector.linear %[[KS]], %W_att
hector.layer @hgt_wide {
  %x = hector.input "x" : !hector.value<node, [64]>
  %K = hector.weight "K" glorot : !hector.weight<none, [64, 16]>
  %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [16, 16]>
  %k = hector.linear %x, %K : !hector.value<node, [64]>, !hector.weight<none, [64, 16]> -> !hector.value<node, [16]>
  %ks = hector.src %k : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %kw = hector.linear %ks, %W_att : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
  %h = hector.aggregate sum %kw by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
  hector.output "h" %h : !hector.value<node, [16]>
}

// -----

// HGT as in examples/hgt.hector: the projections are per node type and biased (k = x K_t + b_t),
// and per head (K [in, Hh, d] with W_att [Hh, d, d] is no weight product of the dialect). Nothing
// changes.

// CHECK-LABEL: hector.layer @hgt
// CHECK-NOT:  hector.weight_matmul
// CHECK-NOT:  hector.weight_dot
// CHECK:      hector.linear %{{.*}}, %W_att
// CHECK:      hector.linear %{{.*}}, %W_msg
hector.layer @hgt {
  %x = hector.input "x" : !hector.value<node, [16]>
  %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [16, 4h, 16]>
  %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
  %Wv = hector.weight "Wv" glorot : !hector.weight<none, [16, 4h, 16]>
  %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
  %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
  %0 = hector.linear %x, %Wk : !hector.value<node, [16]>, !hector.weight<ntype, [16, 4h, 16]> -> !hector.value<node, [4h, 16]>
  %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
  %k = hector.add %0, %1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
  %ks = hector.src %k : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
  %kw = hector.linear %ks, %W_att : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
  %v = hector.linear %x, %Wv : !hector.value<node, [16]>, !hector.weight<none, [16, 4h, 16]> -> !hector.value<node, [4h, 16]>
  %vs = hector.src %v : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
  %msg = hector.linear %vs, %W_msg : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
  %m = hector.mul %kw, %msg : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %h = hector.aggregate sum %m by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
  hector.output "h" %h : !hector.value<node, [4h, 16]>
}

// -----

// RGCN: sum_e norm_e W_r x_j = W_r (sum_e norm_e x_j) per (destination, relation) pair. Without
// sizes it stays (when every pair has one edge, the transform is not saved); with 10 edges per
// pair it pays.

// CHECK-LABEL: hector.layer @rgcn
// CHECK-NOT:  hector.reduce
// CHECK:      hector.aggregate sum

// SIZES-LABEL: hector.layer @rgcn
// SIZES:      %[[XS:.*]] = hector.src %x
// SIZES:      %[[M:.*]] = hector.mul %norm, %[[XS]] : !hector.value<edge, []>, !hector.value<src, [16]> -> !hector.value<edge, [16]>
// SIZES-NEXT: %[[U:.*]] = hector.reduce %[[M]] : !hector.value<edge, [16]> -> !hector.value<unique_dst, [16]>
// SIZES-NEXT: %[[Y:.*]] = hector.linear %[[U]], %W : !hector.value<unique_dst, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<unique_dst, [16]>
// SIZES-NEXT: %[[H:.*]] = hector.reduce %[[Y]] : !hector.value<unique_dst, [16]> -> !hector.value<node, [16]>
// SIZES-NEXT: hector.linear %x, %root
// SIZES-NEXT: hector.add %[[H]]
hector.layer @rgcn {
  %x = hector.input "x" : !hector.value<node, [16]>
  %norm = hector.input "norm" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
  %root = hector.weight "root" glorot : !hector.weight<none, [16, 16]>
  %0 = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %1 = hector.linear %0, %W : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
  %2 = hector.mul %norm, %1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
  %3 = hector.aggregate sum %2 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
  %4 = hector.linear %x, %root : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
  %5 = hector.add %3, %4 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
  hector.output "h" %5 : !hector.value<node, [16]>
}

// -----

// An unsliced weight: sum_e x_j W = (sum_e x_j) W, aggregated into nodes directly. It moves
// the GEMM from E rows to N rows, so without sizes it stays (a graph may have more nodes than
// edges); with 10 edges per node it pays.

// CHECK-LABEL: hector.layer @sum_then_transform
// CHECK:      hector.linear %{{.*}}, %W : !hector.value<src, [8]>

// SIZES-LABEL: hector.layer @sum_then_transform
// SIZES:      %[[S:.*]] = hector.aggregate sum %{{.*}} by dst : !hector.value<src, [8]> -> !hector.value<node, [8]>
// SIZES-NEXT: hector.linear %[[S]], %W : !hector.value<node, [8]>, !hector.weight<none, [8, 64]> -> !hector.value<node, [64]>
hector.layer @sum_then_transform {
  %x = hector.input "x" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<none, [8, 64]>
  %0 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %1 = hector.linear %0, %W : !hector.value<src, [8]>, !hector.weight<none, [8, 64]> -> !hector.value<src, [64]>
  %2 = hector.aggregate sum %1 by dst : !hector.value<src, [64]> -> !hector.value<node, [64]>
  hector.output "h" %2 : !hector.value<node, [64]>
}

// -----

// Never across a non-linearity: a ReLU between the linear and the attention dot, or between
// the linear and the sum.

// CHECK-LABEL: hector.layer @nonlinear
// CHECK-NOT:  hector.weight_matmul
// CHECK-NOT:  hector.reduce
// CHECK:      hector.dot
// CHECK:      hector.aggregate sum
// SIZES-LABEL: hector.layer @nonlinear
// SIZES-NOT:  hector.weight_matmul
// SIZES-NOT:  hector.reduce
hector.layer @nonlinear {
  %x = hector.input "x" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 64]>
  %a = hector.weight "a" glorot : !hector.weight<relation, [64]>
  %0 = hector.dst %x : !hector.value<node, [8]> -> !hector.value<dst, [8]>
  %1 = hector.linear %0, %W : !hector.value<dst, [8]>, !hector.weight<relation, [8, 64]> -> !hector.value<edge, [64]>
  %2 = hector.relu %1 : !hector.value<edge, [64]>
  %3 = hector.slice %a : !hector.weight<relation, [64]> -> !hector.value<relation, [64]>
  %4 = hector.dot %3, %2 : !hector.value<relation, [64]>, !hector.value<edge, [64]> -> !hector.value<edge, []>
  %5 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %6 = hector.linear %5, %W : !hector.value<src, [8]>, !hector.weight<relation, [8, 64]> -> !hector.value<edge, [64]>
  %7 = hector.tanh %6 : !hector.value<edge, [64]>
  %8 = hector.aggregate sum %7 by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
  hector.output "s" %4 : !hector.value<edge, []>
  hector.output "h" %8 : !hector.value<node, [64]>
}

// -----

// A shape that forbids it: a per-head weight [Hh, k, m] (W_r a_r would contract per head over
// m with k kept, which no weight product of the dialect expresses).

// CHECK-LABEL: hector.layer @per_head
// CHECK-NOT:  hector.weight_dot
// CHECK:      hector.dot
hector.layer @per_head {
  %x = hector.input "x" : !hector.value<node, [4h, 16]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [4h, 16, 8]>
  %a = hector.weight "a" glorot : !hector.weight<relation, [4h, 8]>
  %0 = hector.dst %x : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
  %1 = hector.linear %0, %W : !hector.value<dst, [4h, 16]>, !hector.weight<relation, [4h, 16, 8]> -> !hector.value<edge, [4h, 8]>
  %2 = hector.slice %a : !hector.weight<relation, [4h, 8]> -> !hector.value<relation, [4h, 8]>
  %3 = hector.dot %2, %1 : !hector.value<relation, [4h, 8]>, !hector.value<edge, [4h, 8]> -> !hector.value<edge, [4h]>
  hector.output "s" %3 : !hector.value<edge, [4h]>
}

