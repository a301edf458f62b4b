// RUN: hector-opt %s | hector-opt | FileCheck %s
// RUN: hector-opt %s --mlir-print-op-generic | hector-opt | FileCheck %s

// Every op and type of the dialect survives printing and parsing.

// CHECK-LABEL: hector.layer @structure attributes {params = {heads = 4 : i64, slope = 2.000000e-01 : f64}} {
// CHECK:   %x = hector.input "x" : !hector.value<node, [64]>
// CHECK:   %norm = hector.input "norm" : !hector.value<edge, []>
// CHECK:   %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
// CHECK:   %b = hector.weight "b" zeros : !hector.weight<none, [16]>
// CHECK:   %T = hector.weight "T" normal : !hector.weight<ntype, [4h, 16, 16]>
// CHECK:   %u = hector.weight "u" uniform : !hector.weight<none, []>
// CHECK:   %o = hector.weight "o" ones : !hector.weight<ntype, [64]>
// CHECK:   hector.output "y" %x : !hector.value<node, [64]>
// CHECK: }
hector.layer @structure attributes {params = {heads = 4 : i64, slope = 0.2 : f64}} {
  %x = hector.input "x" : !hector.value<node, [64]>
  %n = hector.input "norm" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  %b = hector.weight "b" zeros : !hector.weight<none, [16]>
  %T = hector.weight "T" normal : !hector.weight<ntype, [4h, 16, 16]>
  %u = hector.weight "u" uniform : !hector.weight<none, []>
  %o = hector.weight "o" ones : !hector.weight<ntype, [64]>
  hector.output "y" %x : !hector.value<node, [64]>
}

// CHECK-LABEL: hector.layer @empty {
// CHECK-NEXT: }
hector.layer @empty {
}

// CHECK-LABEL: hector.layer @graph
hector.layer @graph {
  %h = hector.input "h" : !hector.value<node, [64]>
  %A = hector.weight "A" glorot : !hector.weight<relation, [4h, 16]>
  // CHECK: hector.src %h : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %hs = hector.src %h : !hector.value<node, [64]> -> !hector.value<src, [64]>
  // CHECK: hector.dst %h : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  %hd = hector.dst %h : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  // CHECK: hector.slice %A : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
  %a = hector.slice %A : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
  // CHECK: hector.unique_gather src %h : !hector.value<node, [64]> -> !hector.value<unique_src, [64]>
  %us = hector.unique_gather src %h : !hector.value<node, [64]> -> !hector.value<unique_src, [64]>
  // CHECK: hector.unique_gather dst %h : !hector.value<node, [64]> -> !hector.value<unique_dst, [64]>
  %ud = hector.unique_gather dst %h : !hector.value<node, [64]> -> !hector.value<unique_dst, [64]>
  // CHECK: hector.unique_expand %{{.*}} : !hector.value<unique_src, [64]> -> !hector.value<edge, [64]>
  %e = hector.unique_expand %us : !hector.value<unique_src, [64]> -> !hector.value<edge, [64]>
  %T = hector.weight "T" glorot : !hector.weight<relation, [100, 8]>
  %t = hector.slice %T : !hector.weight<relation, [100, 8]> -> !hector.value<relation, [100, 8]>
  // CHECK: hector.src_row %{{.*}} : !hector.value<relation, [100, 8]> -> !hector.value<edge, [8]>
  %row = hector.src_row %t : !hector.value<relation, [100, 8]> -> !hector.value<edge, [8]>
  // CHECK: hector.src_row_grad %{{.*}} : !hector.value<edge, [8]> -> !hector.weight<relation, [100, 8]>
  %dT = hector.src_row_grad %row : !hector.value<edge, [8]> -> !hector.weight<relation, [100, 8]>
  %U = hector.weight "U" glorot : !hector.weight<none, [100]>
  %u = hector.slice %U : !hector.weight<none, [100]> -> !hector.value<none, [100]>
  // CHECK: hector.src_row %{{.*}} : !hector.value<none, [100]> -> !hector.value<src, []>
  %urow = hector.src_row %u : !hector.value<none, [100]> -> !hector.value<src, []>
  // CHECK: hector.aggregate sum %{{.*}} by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
  %s = hector.aggregate sum %e by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
  // CHECK: hector.aggregate mean %{{.*}} by src : !hector.value<dst, [64]> -> !hector.value<node, [64]>
  %m = hector.aggregate mean %hd by src : !hector.value<dst, [64]> -> !hector.value<node, [64]>
  // CHECK: hector.aggregate max %{{.*}} by dst : !hector.value<unique_src, [64]> -> !hector.value<node, [64]>
  %x = hector.aggregate max %us by dst : !hector.value<unique_src, [64]> -> !hector.value<node, [64]>
  hector.output "s" %s : !hector.value<node, [64]>
}

// CHECK-LABEL: hector.layer @products
hector.layer @products {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  %K = hector.weight "K" glorot : !hector.weight<ntype, [64, 16]>
  %M = hector.weight "M" glorot : !hector.weight<relation, [4h, 16, 16]>
  %c = hector.weight "c" glorot : !hector.weight<relation, [4]>
  %V = hector.weight "V" glorot : !hector.weight<none, [4, 64, 16]>
  %a = hector.weight "a" glorot : !hector.weight<relation, [16]>
  %att = hector.weight "att" glorot : !hector.weight<relation, [4h, 16]>
  %hs = hector.src %h : !hector.value<node, [64]> -> !hector.value<src, [64]>
  // CHECK: hector.linear %{{.*}}, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
  %z = hector.linear %hs, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h, 16]>
         -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.linear %h, %K : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]> -> !hector.value<node, [16]>
  %k = hector.linear %h, %K : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]>
         -> !hector.value<node, [16]>
  // CHECK: hector.linear %{{.*}}, %M : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
  %zm = hector.linear %z, %M : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]>
          -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.weight_matmul %c, %V : !hector.weight<relation, [4]>, !hector.weight<none, [4, 64, 16]> -> !hector.weight<relation, [64, 16]>
  %Wb = hector.weight_matmul %c, %V : !hector.weight<relation, [4]>, !hector.weight<none, [4, 64, 16]>
          -> !hector.weight<relation, [64, 16]>
  // CHECK: hector.weight_matmul %{{.*}}, %a : !hector.weight<relation, [64, 16]>, !hector.weight<relation, [16]> -> !hector.weight<relation, [64]>
  %Wa = hector.weight_matmul %Wb, %a : !hector.weight<relation, [64, 16]>, !hector.weight<relation, [16]>
          -> !hector.weight<relation, [64]>
  // CHECK: hector.weight_dot %W, %{{.*}} : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<relation, [4h, 16]> -> !hector.weight<relation, [64, 4h]>
  %Ws = hector.weight_dot %W, %att : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<relation, [4h, 16]>
          -> !hector.weight<relation, [64, 4h]>
  // CHECK: hector.weight_dot %{{.*}}, %a : !hector.weight<relation, [64, 16]>, !hector.weight<relation, [16]> -> !hector.weight<relation, [64]>
  %Wv = hector.weight_dot %Wb, %a : !hector.weight<relation, [64, 16]>, !hector.weight<relation, [16]>
          -> !hector.weight<relation, [64]>
  // CHECK: hector.dot %{{.*}}, %{{.*}} : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
  %d = hector.dot %z, %zm : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>
         -> !hector.value<edge, [4h]>
  %e = hector.linear %hs, %Wb : !hector.value<src, [64]>, !hector.weight<relation, [64, 16]>
         -> !hector.value<edge, [16]>
  // CHECK: hector.weight_grad %{{.*}}, %{{.*}} : !hector.value<src, [64]>, !hector.value<edge, [16]> -> !hector.weight<relation, [64, 16]>
  %dW = hector.weight_grad %hs, %e : !hector.value<src, [64]>, !hector.value<edge, [16]>
          -> !hector.weight<relation, [64, 16]>
  // CHECK: hector.weight_grad %{{.*}}, %{{.*}} : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
  %dM = hector.weight_grad %z, %zm : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>
          -> !hector.weight<relation, [4h, 16, 16]>
  hector.output "k" %k : !hector.value<node, [16]>
}

// CHECK-LABEL: hector.layer @elementwise
hector.layer @elementwise {
  %h = hector.input "h" : !hector.value<node, [4h, 16]>
  %w = hector.input "w" : !hector.value<edge, []>
  %T = hector.weight "T" glorot : !hector.weight<ntype, [4h]>
  %hs = hector.src %h : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
  %hd = hector.dst %h : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
  %t = hector.slice %T : !hector.weight<ntype, [4h]> -> !hector.value<ntype, [4h]>
  // CHECK: hector.add %{{.*}}, %{{.*}} : !hector.value<src, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %0 = hector.add %hs, %hd : !hector.value<src, [4h, 16]>, !hector.value<dst, [4h, 16]>
         -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.sub %{{.*}}, %w : !hector.value<edge, [4h, 16]>, !hector.value<edge, []> -> !hector.value<edge, [4h, 16]>
  %1 = hector.sub %0, %w : !hector.value<edge, [4h, 16]>, !hector.value<edge, []>
         -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.mul %{{.*}}, %h : !hector.value<ntype, [4h]>, !hector.value<node, [4h, 16]> -> !hector.value<node, [4h, 16]>
  %2 = hector.mul %t, %h : !hector.value<ntype, [4h]>, !hector.value<node, [4h, 16]>
         -> !hector.value<node, [4h, 16]>
  // CHECK: %[[C:.*]] = hector.constant 5.000000e-01 : !hector.value<none, []>
  %c = hector.constant 0.5 : !hector.value<none, []>
  // CHECK: hector.div %{{.*}}, %[[C]] : !hector.value<node, [4h, 16]>, !hector.value<none, []> -> !hector.value<node, [4h, 16]>
  %3 = hector.div %2, %c : !hector.value<node, [4h, 16]>, !hector.value<none, []>
         -> !hector.value<node, [4h, 16]>
  // CHECK: hector.neg %{{.*}} : !hector.value<node, [4h, 16]>
  %4 = hector.neg %3 : !hector.value<node, [4h, 16]>
  // CHECK: hector.exp %{{.*}} : !hector.value<node, [4h, 16]>
  %5 = hector.exp %4 : !hector.value<node, [4h, 16]>
  // CHECK: hector.relu %{{.*}} : !hector.value<node, [4h, 16]>
  %6 = hector.relu %5 : !hector.value<node, [4h, 16]>
  // CHECK: hector.tanh %{{.*}} : !hector.value<node, [4h, 16]>
  %7 = hector.tanh %6 : !hector.value<node, [4h, 16]>
  // CHECK: hector.sigmoid %{{.*}} : !hector.value<node, [4h, 16]>
  %8 = hector.sigmoid %7 : !hector.value<node, [4h, 16]>
  // CHECK: hector.gelu %{{.*}} : !hector.value<node, [4h, 16]>
  %9 = hector.gelu %8 : !hector.value<node, [4h, 16]>
  // CHECK: hector.softplus %{{.*}} : !hector.value<node, [4h, 16]>
  %sp = hector.softplus %9 : !hector.value<node, [4h, 16]>
  // CHECK: hector.leaky_relu %{{.*}} slope 2.000000e-01 : !hector.value<edge, [4h, 16]>
  %10 = hector.leaky_relu %1 slope 0.2 : !hector.value<edge, [4h, 16]>
  // CHECK: hector.softmax %{{.*}} : !hector.value<src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  %11 = hector.softmax %hs : !hector.value<src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.merge_heads %{{.*}} : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
  %12 = hector.merge_heads %9 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
  // CHECK: hector.split_heads %{{.*}} : !hector.value<node, [64]> -> !hector.value<node, [2h, 32]>
  %13 = hector.split_heads %12 : !hector.value<node, [64]> -> !hector.value<node, [2h, 32]>
  %U = hector.weight "U" glorot : !hector.weight<ntype, [4h, 8]>
  %u = hector.slice %U : !hector.weight<ntype, [4h, 8]> -> !hector.value<ntype, [4h, 8]>
  // CHECK: hector.concat %{{.*}}, %{{.*}}, %{{.*}} : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 8]> -> !hector.value<node, [4h, 40]>
  %14 = hector.concat %9, %3, %u : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>,
          !hector.value<ntype, [4h, 8]> -> !hector.value<node, [4h, 40]>
  hector.output "out" %14 : !hector.value<node, [4h, 40]>
}

// CHECK-LABEL: hector.layer @kernels
hector.layer @kernels {
  %h = hector.input "h" : !hector.value<node, [64]>
  %g = hector.input "g" : !hector.value<edge, [16]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  %H = hector.weight "H" glorot : !hector.weight<relation, [4h, 16, 8]>
  %N = hector.weight "N" glorot : !hector.weight<none, [64, 16]>
  %K = hector.weight "K" glorot : !hector.weight<ntype, [64, 16]>
  // CHECK: hector.gemm %h, %W segment relation gather src scatter accumulate_dst : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
  %0 = hector.gemm %h, %W segment relation gather src scatter accumulate_dst
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
  // CHECK: hector.gemm %h, %W segment relation gather unique_src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<unique_src, [16]>
  %1 = hector.gemm %h, %W segment relation gather unique_src scatter store
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<unique_src, [16]>
  // CHECK: hector.gemm %g, %W segment relation gather none scatter accumulate_unique transpose_b : !hector.value<edge, [16]>, !hector.weight<relation, [64, 16]> -> !hector.value<unique_dst, [64]>
  %2 = hector.gemm %g, %W segment relation gather none scatter accumulate_unique transpose_b
         : !hector.value<edge, [16]>, !hector.weight<relation, [64, 16]> -> !hector.value<unique_dst, [64]>
  // CHECK: hector.gemm %g, %W segment relation gather none scatter accumulate_src transpose_b : !hector.value<edge, [16]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [64]>
  %3 = hector.gemm %g, %W segment relation gather none scatter accumulate_src transpose_b
         : !hector.value<edge, [16]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [64]>
  // CHECK: hector.gemm %h, %N segment none gather dst scatter store : !hector.value<node, [64]>, !hector.weight<none, [64, 16]> -> !hector.value<dst, [16]>
  %4 = hector.gemm %h, %N segment none gather dst scatter store
         : !hector.value<node, [64]>, !hector.weight<none, [64, 16]> -> !hector.value<dst, [16]>
  // CHECK: hector.gemm %h, %K segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]> -> !hector.value<node, [16]>
  %5 = hector.gemm %h, %K segment ntype gather none scatter store
         : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]> -> !hector.value<node, [16]>
  %6 = hector.split_heads %g : !hector.value<edge, [16]> -> !hector.value<edge, [4h, 4]>
  %e = hector.input "e" : !hector.value<edge, [64]>
  %hh = hector.split_heads %e : !hector.value<edge, [64]> -> !hector.value<edge, [4h, 16]>
  // CHECK: hector.gemm %{{.*}}, %H segment relation gather none scatter store : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 8]> -> !hector.value<edge, [4h, 8]>
  %7 = hector.gemm %hh, %H segment relation gather none scatter store
         : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 8]> -> !hector.value<edge, [4h, 8]>
  // CHECK: hector.gemm %{{.*}}, %H segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 8]>, !hector.weight<relation, [4h, 16, 8]> -> !hector.value<edge, [4h, 16]>
  %8 = hector.gemm %7, %H segment relation gather none scatter store transpose_b
         : !hector.value<edge, [4h, 8]>, !hector.weight<relation, [4h, 16, 8]> -> !hector.value<edge, [4h, 16]>

  // CHECK: %{{.*}}:2 = hector.traversal node (%[[S:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 8]>) -> (!hector.value<edge, [4h]>, !hector.value<node, [4h, 8]>) {
  // CHECK-NEXT:   %[[P:.*]] = hector.softmax %[[S]] : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
  // CHECK-NEXT:   %[[W:.*]] = hector.mul %[[P]], %[[M]] : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 8]> -> !hector.value<edge, [4h, 8]>
  // CHECK-NEXT:   %[[R:.*]] = hector.aggregate sum %[[W]] by dst : !hector.value<edge, [4h, 8]> -> !hector.value<node, [4h, 8]>
  // CHECK-NEXT:   hector.yield %[[P]], %[[R]] : !hector.value<edge, [4h]>, !hector.value<node, [4h, 8]>
  // CHECK-NEXT: }
  %s = hector.dot %7, %7 : !hector.value<edge, [4h, 8]>, !hector.value<edge, [4h, 8]> -> !hector.value<edge, [4h]>
  %a, %r = hector.traversal node (%sa = %s, %ma = %7)
      : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 8]>)
      -> (!hector.value<edge, [4h]>, !hector.value<node, [4h, 8]>) {
    %p = hector.softmax %sa : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    %w = hector.mul %p, %ma : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 8]>
           -> !hector.value<edge, [4h, 8]>
    %q = hector.aggregate sum %w by dst : !hector.value<edge, [4h, 8]> -> !hector.value<node, [4h, 8]>
    hector.yield %p, %q : !hector.value<edge, [4h]>, !hector.value<node, [4h, 8]>
  }
  // CHECK: hector.traversal edge (%{{.*}} = %h) : (!hector.value<node, [64]>) -> !hector.value<src, [64]> {
  // CHECK:   hector.src
  // CHECK:   hector.constant
  // CHECK:   hector.mul
  // CHECK:   hector.leaky_relu
  // CHECK:   hector.yield
  %t = hector.traversal edge (%x = %h) : (!hector.value<node, [64]>) -> !hector.value<src, [64]> {
    %xs = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
    %two = hector.constant 2.0 : !hector.value<none, []>
    %y = hector.mul %xs, %two : !hector.value<src, [64]>, !hector.value<none, []> -> !hector.value<src, [64]>
    %z = hector.leaky_relu %y slope 0.01 : !hector.value<src, [64]>
    hector.yield %z : !hector.value<src, [64]>
  }
  hector.output "r" %r : !hector.value<node, [4h, 8]>
}

// CHECK-LABEL: hector.layer @backward
hector.layer @backward {
  // CHECK: hector.input "saved.0" : !hector.value<src, [16]>
  %s = hector.input "saved.0" : !hector.value<src, [16]>
  %u = hector.input "saved.1" : !hector.value<unique_dst, [16]>
  %g = hector.input "grad.h" : !hector.value<node, [16]>
  %ge = hector.input "grad.e" : !hector.value<edge, [4h, 16]>
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  %c = hector.weight "comp" glorot : !hector.weight<relation, [4]>
  %V = hector.weight "V" glorot : !hector.weight<none, [4, 16, 16]>
  %dW0 = hector.weight "dW0" zeros : !hector.weight<relation, [16, 16]>
  // CHECK: hector.linear %grad.e, %W transposed : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [64]>
  %dx = hector.linear %ge, %W transposed : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [64]>
  // CHECK: hector.weight_grad %{{.*}}, %grad.e : !hector.value<dst, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
  %xd = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
  %dW = hector.weight_grad %xd, %ge : !hector.value<dst, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
  // CHECK: hector.reduce %grad.e : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h]>
  %da = hector.reduce %ge : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h]>
  // CHECK: hector.reduce %saved.0 : !hector.value<src, [16]> -> !hector.value<unique_src, [16]>
  %r1 = hector.reduce %s : !hector.value<src, [16]> -> !hector.value<unique_src, [16]>
  // CHECK: hector.reduce %saved.1 : !hector.value<unique_dst, [16]> -> !hector.value<node, [16]>
  %r2 = hector.reduce %u : !hector.value<unique_dst, [16]> -> !hector.value<node, [16]>
  // CHECK: hector.reduce %grad.h : !hector.value<node, [16]> -> !hector.value<ntype, []>
  %r3 = hector.reduce %g : !hector.value<node, [16]> -> !hector.value<ntype, []>
  // CHECK: hector.reduce %saved.0 : !hector.value<src, [16]> -> !hector.value<edge, [16]>
  %r4 = hector.reduce %s : !hector.value<src, [16]> -> !hector.value<edge, [16]>
  // CHECK: hector.aggregate_grad mean %grad.h by dst : (!hector.value<node, [16]>) -> !hector.value<dst, [16]>
  %m = hector.aggregate_grad mean %g by dst : (!hector.value<node, [16]>) -> !hector.value<dst, [16]>
  // CHECK: hector.aggregate_grad max %grad.h, %saved.0 by src : (!hector.value<node, [16]>, !hector.value<src, [16]>) -> !hector.value<edge, [16]>
  %mx = hector.aggregate_grad max %g, %s by src : (!hector.value<node, [16]>, !hector.value<src, [16]>) -> !hector.value<edge, [16]>
  // CHECK: hector.leaky_relu_grad %{{.*}}, %saved.0 slope 2.000000e-01 : !hector.value<edge, [16]>, !hector.value<src, [16]> -> !hector.value<edge, [16]>
  %lr = hector.leaky_relu_grad %mx, %s slope 0.2 : !hector.value<edge, [16]>, !hector.value<src, [16]> -> !hector.value<edge, [16]>
  // CHECK: hector.gelu_grad %grad.h, %grad.h : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
  %gg = hector.gelu_grad %g, %g : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
  // CHECK: hector.narrow %grad.h offset 4 : !hector.value<node, [16]> -> !hector.value<node, [8]>
  %n = hector.narrow %g offset 4 : !hector.value<node, [16]> -> !hector.value<node, [8]>
  // CHECK: hector.weight_matmul_grad lhs %dW0, %V : !hector.weight<relation, [16, 16]>, !hector.weight<none, [4, 16, 16]> -> !hector.weight<relation, [4]>
  %dc = hector.weight_matmul_grad lhs %dW0, %V : !hector.weight<relation, [16, 16]>, !hector.weight<none, [4, 16, 16]> -> !hector.weight<relation, [4]>
  // CHECK: hector.weight_matmul_grad rhs %dW0, %comp : !hector.weight<relation, [16, 16]>, !hector.weight<relation, [4]> -> !hector.weight<none, [4, 16, 16]>
  %dV = hector.weight_matmul_grad rhs %dW0, %c : !hector.weight<relation, [16, 16]>, !hector.weight<relation, [4]> -> !hector.weight<none, [4, 16, 16]>
  %dP = hector.weight "dP" zeros : !hector.weight<relation, [64, 4h]>
  %att = hector.weight "att" glorot : !hector.weight<none, [4h, 16]>
  // CHECK: hector.weight_dot_grad lhs %dP, %att : !hector.weight<relation, [64, 4h]>, !hector.weight<none, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
  %dWd = hector.weight_dot_grad lhs %dP, %att : !hector.weight<relation, [64, 4h]>, !hector.weight<none, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
  // CHECK: hector.weight_dot_grad rhs %dP, %W : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.weight<none, [4h, 16]>
  %datt = hector.weight_dot_grad rhs %dP, %W : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.weight<none, [4h, 16]>
  // CHECK: hector.weight_add %{{.*}}, %{{.*}} : !hector.weight<relation, [64, 4h, 16]>
  %dW2 = hector.weight_add %dW, %dW : !hector.weight<relation, [64, 4h, 16]>
  // CHECK: hector.output "grad.W" %{{.*}} : !hector.weight<relation, [64, 4h, 16]>
  hector.output "grad.W" %dW2 : !hector.weight<relation, [64, 4h, 16]>
}

// A row-local reduction (trailing dims only, or src/dst rows into edge rows) may live in a
// traversal body.
// CHECK-LABEL: hector.layer @row_local_reduce
hector.layer @row_local_reduce {
  %g = hector.input "g" : !hector.value<node, [16]>
  %e = hector.input "e" : !hector.value<edge, [16]>
  // CHECK: hector.traversal edge
  %0 = hector.traversal edge (%ga = %g, %ea = %e) : (!hector.value<node, [16]>, !hector.value<edge, [16]>) -> !hector.value<edge, []> {
    %d = hector.dst %ga : !hector.value<node, [16]> -> !hector.value<dst, [16]>
    // CHECK: hector.reduce %{{.*}} : !hector.value<dst, [16]> -> !hector.value<edge, [16]>
    %de = hector.reduce %d : !hector.value<dst, [16]> -> !hector.value<edge, [16]>
    %p = hector.mul %de, %ea : !hector.value<edge, [16]>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
    // CHECK: hector.reduce %{{.*}} : !hector.value<edge, [16]> -> !hector.value<edge, []>
    %r = hector.reduce %p : !hector.value<edge, [16]> -> !hector.value<edge, []>
    hector.yield %r : !hector.value<edge, []>
  }
  hector.output "r" %0 : !hector.value<edge, []>
}
