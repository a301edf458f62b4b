module {
  hector.layer @rgat attributes {hector.backward = @rgat_backward, hector.cost = {bytes = array<f64: 5.120000e+02, 1.832000e+03, 0.000000e+00, 0.000000e+00, 3.276800e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 0.000000e+00, 1.679200e+04, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference = @rgat_inference, hector.rewrites = [], hector.variant = "none", hector.variants = [@rgat__compact], params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %4 = hector.traversal edge (%arg0 = %1, %arg1 = %0, %arg2 = %2, %arg3 = %3) : (!hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>) -> !hector.value<edge, [4h]> {
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %1 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %2 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3 = hector.gemm %x, %W segment relation gather dst scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
      %9 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      %10 = hector.dot %arg2, %arg3 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      %11 = hector.add %9, %10 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %11 : !hector.value<edge, [4h]>
    }
    %5 = hector.traversal node (%arg0 = %4) : (!hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %9 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %10 = hector.aggregate max %9 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %10 : !hector.value<node, [4h]>
    }
    %6 = hector.traversal node (%arg0 = %4, %arg1 = %5) : (!hector.value<edge, [4h]>, !hector.value<node, [4h]>) -> !hector.value<node, [4h]> {
      %9 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %10 = hector.dst %arg1 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %11 = hector.sub %9, %10 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %12 = hector.exp %11 : !hector.value<edge, [4h]>
      %13 = hector.aggregate sum %12 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %13 : !hector.value<node, [4h]>
    }
    %7 = hector.traversal edge (%arg0 = %4, %arg1 = %5, %arg2 = %6) : (!hector.value<edge, [4h]>, !hector.value<node, [4h]>, !hector.value<node, [4h]>) -> !hector.value<edge, [4h]> {
      %9 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %10 = hector.dst %arg1 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %11 = hector.sub %9, %10 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %12 = hector.exp %11 : !hector.value<edge, [4h]>
      %13 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %14 = hector.div %12, %13 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %14 : !hector.value<edge, [4h]>
    }
      %12 = hector.dst %arg1 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %9 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %10 = hector.aggregate sum %9 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %11 = hector.merge_heads %10 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      hector.yield %11 : !hector.value<node, [64]>
    }
    hector.output "h" %8 : !hector.value<node, [64]>
    hector.output "saved.0" %0 : !hector.value<edge, [4h, 16]>
    hector.output "saved.1" %3 : !hector.value<edge, [4h, 16]>
    hector.output "saved.2" %4 : !hector.value<edge, [4h]>
    hector.output "saved.3" %7 : !hector.value<edge, [4h]>
  }
  hector.layer @rgat_inference attributes {hector.cost = {bytes = array<f64: 5.120000e+02, 1.832000e+03, 0.000000e+00, 0.000000e+00, 3.276800e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 0.000000e+00, 1.679200e+04, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference_of = @rgat, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %1 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %2 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3 = hector.gemm %x, %W segment relation gather dst scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %4 = hector.traversal edge (%arg0 = %1, %arg1 = %0, %arg2 = %2, %arg3 = %3) : (!hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %6 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      %7 = hector.dot %arg2, %arg3 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      %8 = hector.add %6, %7 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %9 = hector.leaky_relu %8 slope 2.000000e-01 : !hector.value<edge, [4h]>
      hector.yield %9 : !hector.value<edge, [4h]>
    }
    %5 = hector.traversal node (%arg0 = %4, %arg1 = %0) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [64]> {
      %6 = hector.aggregate max %arg0 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %7 = hector.dst %6 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %8 = hector.sub %arg0, %7 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %9 = hector.exp %8 : !hector.value<edge, [4h]>
      %10 = hector.aggregate sum %9 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %11 = hector.dst %10 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %12 = hector.div %9, %11 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %13 = hector.mul %12, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %14 = hector.aggregate sum %13 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %15 = hector.merge_heads %14 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      hector.yield %15 : !hector.value<node, [64]>
    }
    hector.output "h" %5 : !hector.value<node, [64]>
  }
  hector.layer @rgat_backward attributes {hector.cost = {bytes = array<f64: 1.296000e+03, 5.524000e+03, 0.000000e+00, 0.000000e+00, 9.881600e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 6.400000e+01, 3.355600e+04, 0.000000e+00, 0.000000e+00, 4.096000e+03, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.forward = @rgat, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %saved.0 = hector.input "saved.0" : !hector.value<edge, [4h, 16]>
    %saved.1 = hector.input "saved.1" : !hector.value<edge, [4h, 16]>
    %saved.2 = hector.input "saved.2" : !hector.value<edge, [4h]>
    %saved.3 = hector.input "saved.3" : !hector.value<edge, [4h]>
    %grad.h = hector.input "grad.h" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.traversal edge (%arg0 = %grad.h, %arg1 = %saved.0) : (!hector.value<node, [64]>, !hector.value<edge, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %17 = hector.split_heads %arg0 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      %18 = hector.dst %17 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %19 = hector.mul %18, %arg1 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %20 = hector.reduce %19 : !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      hector.yield %20 : !hector.value<edge, [4h]>
    }
    %1 = hector.traversal node (%arg0 = %saved.3, %arg1 = %0) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %17 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %18 = hector.aggregate sum %17 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %18 : !hector.value<node, [4h]>
    }
    %2 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3:2 = hector.traversal edge (%arg0 = %1, %arg1 = %0, %arg2 = %saved.3, %arg3 = %saved.2, %arg4 = %saved.1, %arg5 = %2) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h, 16]>) -> (!hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>) {
      %17 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %18 = hector.sub %arg1, %17 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %19 = hector.mul %arg2, %18 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %20 = hector.leaky_relu_grad %19, %arg3 slope 2.000000e-01 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %21 = hector.mul %20, %arg4 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %22 = hector.mul %20, %arg5 : !hector.value<edge, [4h]>, !hector.value<relation, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      hector.yield %21, %22 : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>
    }
    %4 = hector.gemm %3#1, %W segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [64]>
    %5 = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
    %6 = hector.weight_grad %5, %3#1 : !hector.value<dst, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
    %7 = hector.reduce %3#0 : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
    %8 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %9:2 = hector.traversal edge (%arg0 = %1, %arg1 = %0, %arg2 = %saved.3, %arg3 = %saved.2, %arg4 = %saved.0, %arg5 = %grad.h, %arg6 = %8) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>, !hector.value<node, [64]>, !hector.value<relation, [4h, 16]>) -> (!hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>) {
      %17 = hector.split_heads %arg5 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      %18 = hector.dst %17 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %19 = hector.mul %18, %arg2 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h, 16]>
      %20 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %21 = hector.sub %arg1, %20 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.mul %arg2, %21 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %23 = hector.leaky_relu_grad %22, %arg3 slope 2.000000e-01 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %24 = hector.mul %23, %arg4 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %25 = hector.mul %23, %arg6 : !hector.value<edge, [4h]>, !hector.value<relation, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %26 = hector.add %19, %25 : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      hector.yield %24, %26 : !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>
    }
    %10 = hector.reduce %9#0 : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
    %11 = hector.gemm %9#1, %W segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [64]>
    %12 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
    %13 = hector.weight_grad %12, %9#1 : !hector.value<src, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
    %14 = hector.weight_add %6, %13 : !hector.weight<relation, [64, 4h, 16]>
    %15 = hector.traversal node (%arg0 = %11) : (!hector.value<edge, [64]>) -> !hector.value<node, [64]> {
      %17 = hector.aggregate sum %arg0 by src : !hector.value<edge, [64]> -> !hector.value<node, [64]>
      hector.yield %17 : !hector.value<node, [64]>
    }
    %16 = hector.traversal node (%arg0 = %4, %arg1 = %15) : (!hector.value<edge, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %17 = hector.aggregate sum %arg0 by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
      %18 = hector.add %17, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %18 : !hector.value<node, [64]>
    }
    hector.output "grad.x" %16 : !hector.value<node, [64]>
    hector.output "grad.W" %14 : !hector.weight<relation, [64, 4h, 16]>
    hector.output "grad.a_src" %10 : !hector.weight<relation, [4h, 16]>
    hector.output "grad.a_dst" %7 : !hector.weight<relation, [4h, 16]>
  }
  hector.layer @rgat__compact attributes {hector.backward = @rgat__compact_backward, hector.cost = {bytes = array<f64: 5.120000e+02, 3.320000e+02, 7.720000e+02, 7.720000e+02, 3.276800e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 0.000000e+00, 1.520000e+02, 8.320000e+03, 8.320000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference = @rgat__compact_inference, hector.rewrites = ["applies 'hector.linear' (line 16): on unique_src rows (2 ops), read through unique_expand", "applies 'hector.dot' (line 17): on unique_src rows (2 ops), read through unique_expand", "applies 'hector.dot' (line 17): on unique_dst rows (3 ops), read through unique_expand"], hector.variant = "compact", hector.variant_of = @rgat, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.gemm %x, %W segment relation gather unique_src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_src, [4h, 16]>
    %1 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %2 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3 = hector.gemm %x, %W segment relation gather unique_dst scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_dst, [4h, 16]>
    %4 = hector.traversal edge (%arg0 = %1, %arg1 = %0) : (!hector.value<relation, [4h, 16]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<unique_src, [4h]> {
      %11 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<unique_src, [4h, 16]> -> !hector.value<unique_src, [4h]>
      hector.yield %11 : !hector.value<unique_src, [4h]>
    }
    %5 = hector.traversal edge (%arg0 = %2, %arg1 = %3) : (!hector.value<relation, [4h, 16]>, !hector.value<unique_dst, [4h, 16]>) -> !hector.value<unique_dst, [4h]> {
      %11 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<unique_dst, [4h, 16]> -> !hector.value<unique_dst, [4h]>
      hector.yield %11 : !hector.value<unique_dst, [4h]>
    }
    %6 = hector.traversal edge (%arg0 = %4, %arg1 = %5) : (!hector.value<unique_src, [4h]>, !hector.value<unique_dst, [4h]>) -> !hector.value<edge, [4h]> {
      %11 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h]> -> !hector.value<edge, [4h]>
      %12 = hector.unique_expand %arg1 : !hector.value<unique_dst, [4h]> -> !hector.value<edge, [4h]>
      %13 = hector.add %11, %12 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %13 : !hector.value<edge, [4h]>
    }
    %7 = hector.traversal node (%arg0 = %6) : (!hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %11 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %12 = hector.aggregate max %11 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %12 : !hector.value<node, [4h]>
    }
    %8 = hector.traversal node (%arg0 = %6, %arg1 = %7) : (!hector.value<edge, [4h]>, !hector.value<node, [4h]>) -> !hector.value<node, [4h]> {
      %11 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
    %8 = hector.traversal node (%arg0 = %7, %arg1 = %0) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [64]> {
      %13 = hector.sub %11, %12 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %14 = hector.exp %13 : !hector.value<edge, [4h]>
      %15 = hector.aggregate sum %14 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %15 : !hector.value<node, [4h]>
    }
    %9 = hector.traversal edge (%arg0 = %6, %arg1 = %7, %arg2 = %8) : (!hector.value<edge, [4h]>, !hector.value<node, [4h]>, !hector.value<node, [4h]>) -> !hector.value<edge, [4h]> {
      %11 = hector.leaky_relu %arg0 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %12 = hector.dst %arg1 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %13 = hector.sub %11, %12 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %14 = hector.exp %13 : !hector.value<edge, [4h]>
      %15 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %16 = hector.div %14, %15 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %16 : !hector.value<edge, [4h]>
    }
    %10 = hector.traversal node (%arg0 = %0, %arg1 = %9) : (!hector.value<unique_src, [4h, 16]>, !hector.value<edge, [4h]>) -> !hector.value<node, [64]> {
      %11 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %12 = hector.mul %arg1, %11 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %13 = hector.aggregate sum %12 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %14 = hector.merge_heads %13 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      hector.yield %14 : !hector.value<node, [64]>
    }
    hector.output "h" %10 : !hector.value<node, [64]>
    hector.output "saved.0" %0 : !hector.value<unique_src, [4h, 16]>
    hector.output "saved.1" %3 : !hector.value<unique_dst, [4h, 16]>
    hector.output "saved.2" %6 : !hector.value<edge, [4h]>
    hector.output "saved.3" %9 : !hector.value<edge, [4h]>
  }
  hector.layer @rgat__compact_inference attributes {hector.cost = {bytes = array<f64: 5.120000e+02, 3.320000e+02, 7.720000e+02, 7.720000e+02, 3.276800e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 0.000000e+00, 1.520000e+02, 8.320000e+03, 8.320000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference_of = @rgat__compact, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.gemm %x, %W segment relation gather unique_src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_src, [4h, 16]>
    %1 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %2 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3 = hector.gemm %x, %W segment relation gather unique_dst scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_dst, [4h, 16]>
    %4 = hector.traversal edge (%arg0 = %1, %arg1 = %0) : (!hector.value<relation, [4h, 16]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<unique_src, [4h]> {
      %7 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<unique_src, [4h, 16]> -> !hector.value<unique_src, [4h]>
      hector.yield %7 : !hector.value<unique_src, [4h]>
    }
    %5 = hector.traversal edge (%arg0 = %2, %arg1 = %3) : (!hector.value<relation, [4h, 16]>, !hector.value<unique_dst, [4h, 16]>) -> !hector.value<unique_dst, [4h]> {
      %7 = hector.dot %arg0, %arg1 : !hector.value<relation, [4h, 16]>, !hector.value<unique_dst, [4h, 16]> -> !hector.value<unique_dst, [4h]>
      hector.yield %7 : !hector.value<unique_dst, [4h]>
    }
    %6 = hector.traversal node (%arg0 = %4, %arg1 = %5, %arg2 = %0) : (!hector.value<unique_src, [4h]>, !hector.value<unique_dst, [4h]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<node, [64]> {
      %7 = hector.unique_expand %arg2 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %8 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h]> -> !hector.value<edge, [4h]>
      %9 = hector.unique_expand %arg1 : !hector.value<unique_dst, [4h]> -> !hector.value<edge, [4h]>
      %10 = hector.add %8, %9 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %11 = hector.leaky_relu %10 slope 2.000000e-01 : !hector.value<edge, [4h]>
      %12 = hector.aggregate max %11 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %13 = hector.dst %12 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %14 = hector.sub %11, %13 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %15 = hector.exp %14 : !hector.value<edge, [4h]>
      %16 = hector.aggregate sum %15 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %17 = hector.dst %16 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %18 = hector.div %15, %17 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %19 = hector.mul %18, %7 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %20 = hector.aggregate sum %19 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %21 = hector.merge_heads %20 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      hector.yield %21 : !hector.value<node, [64]>
    }
    hector.output "h" %6 : !hector.value<node, [64]>
  }
  hector.layer @rgat__compact_backward attributes {hector.cost = {bytes = array<f64: 1.296000e+03, 9.120000e+02, 2.868000e+03, 2.356000e+03, 9.881600e+04, 0.000000e+00, 0.000000e+00>, flops = array<f64: 6.400000e+01, 2.840000e+02, 1.670400e+04, 1.664000e+04, 4.096000e+03, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.forward = @rgat__compact, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %saved.0 = hector.input "saved.0" : !hector.value<unique_src, [4h, 16]>
    %saved.1 = hector.input "saved.1" : !hector.value<unique_dst, [4h, 16]>
    %saved.2 = hector.input "saved.2" : !hector.value<edge, [4h]>
    %saved.3 = hector.input "saved.3" : !hector.value<edge, [4h]>
    %grad.h = hector.input "grad.h" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.traversal edge (%arg0 = %grad.h, %arg1 = %saved.0) : (!hector.value<node, [64]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %22 = hector.split_heads %arg0 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      %23 = hector.dst %22 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %24 = hector.unique_expand %arg1 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %25 = hector.mul %23, %24 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %26 = hector.reduce %25 : !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      hector.yield %26 : !hector.value<edge, [4h]>
    }
    %1 = hector.traversal node (%arg0 = %saved.3, %arg1 = %0) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %22 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %23 = hector.aggregate sum %22 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %23 : !hector.value<node, [4h]>
    }
    %2 = hector.traversal node (%arg0 = %1, %arg1 = %0, %arg2 = %saved.3, %arg3 = %saved.2) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<unique_dst, [4h]> {
      %22 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %23 = hector.sub %arg1, %22 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %24 = hector.mul %arg2, %23 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %25 = hector.leaky_relu_grad %24, %arg3 slope 2.000000e-01 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %26 = hector.reduce %25 : !hector.value<edge, [4h]> -> !hector.value<unique_dst, [4h]>
      hector.yield %26 : !hector.value<unique_dst, [4h]>
    }
    %3 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %4:2 = hector.traversal edge (%arg0 = %2, %arg1 = %saved.1, %arg2 = %3) : (!hector.value<unique_dst, [4h]>, !hector.value<unique_dst, [4h, 16]>, !hector.value<relation, [4h, 16]>) -> (!hector.value<unique_dst, [4h, 16]>, !hector.value<unique_dst, [4h, 16]>) {
      %22 = hector.mul %arg0, %arg1 : !hector.value<unique_dst, [4h]>, !hector.value<unique_dst, [4h, 16]> -> !hector.value<unique_dst, [4h, 16]>
      %23 = hector.mul %arg0, %arg2 : !hector.value<unique_dst, [4h]>, !hector.value<relation, [4h, 16]> -> !hector.value<unique_dst, [4h, 16]>
      hector.yield %22, %23 : !hector.value<unique_dst, [4h, 16]>, !hector.value<unique_dst, [4h, 16]>
    }
    %5 = hector.gemm %4#1, %W segment relation gather none scatter store transpose_b : !hector.value<unique_dst, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_dst, [64]>
    %6 = hector.unique_gather dst %x : !hector.value<node, [64]> -> !hector.value<unique_dst, [64]>
    %7 = hector.weight_grad %6, %4#1 : !hector.value<unique_dst, [64]>, !hector.value<unique_dst, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
    %8 = hector.reduce %5 : !hector.value<unique_dst, [64]> -> !hector.value<node, [64]>
    %9 = hector.reduce %4#0 : !hector.value<unique_dst, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
    %10 = hector.traversal node (%arg0 = %1, %arg1 = %0, %arg2 = %saved.3, %arg3 = %saved.2) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<unique_src, [4h]> {
      %22 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %23 = hector.sub %arg1, %22 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %24 = hector.mul %arg2, %23 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %25 = hector.leaky_relu_grad %24, %arg3 slope 2.000000e-01 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %26 = hector.reduce %25 : !hector.value<edge, [4h]> -> !hector.value<unique_src, [4h]>
      hector.yield %26 : !hector.value<unique_src, [4h]>
    }
    %11 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %12 = hector.traversal edge (%arg0 = %10, %arg1 = %saved.0) : (!hector.value<unique_src, [4h]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<unique_src, [4h, 16]> {
      %22 = hector.mul %arg0, %arg1 : !hector.value<unique_src, [4h]>, !hector.value<unique_src, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      hector.yield %22 : !hector.value<unique_src, [4h, 16]>
    }
    %13 = hector.reduce %12 : !hector.valum<unique_src, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
    %14 = hector.traversal node (%arg0 = %grad.h, %arg1 = %saved.3) : (!hector.value<node, [64]>, !hector.value<edge, [4h]>) -> !hector.value<unique_src, [4h, 16]> {
      %22 = hector.split_heads %arg0 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      %23 = hector.dst %22 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %24 = hector.mul %23, %arg1 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h, 16]>
      %25 = hector.reduce %24 : !hector.value<edge, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      hector.yield %25 : !hector.value<unique_src, [4h, 16]>
    }
    %15 = hector.traversal edge (%arg0 = %10, %arg1 = %11, %arg2 = %14) : (!hector.value<unique_src, [4h]>, !hector.value<relation, [4h, 16]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<unique_src, [4h, 16]> {
      %22 = hector.mul %arg0, %arg1 : !hector.value<unique_src, [4h]>, !hector.value<relation, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      %23 = hector.add %22, %arg2 : !hector.value<unique_src, [4h, 16]>, !hector.value<unique_src, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      hector.yield %23 : !hector.value<unique_src, [4h, 16]>
    }
    %16 = hector.gemm %15, %W segment relation gather none scatter store transpose_b : !hector.value<unique_src, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<unique_src, [64]>
    %17 = hector.unique_gather src %x : !hector.value<node, [64]> -> !hector.value<unique_src, [64]>
    %18 = hector.weight_grad %17, %15 : !hector.value<unique_src, [64]>, !hector.value<unique_src, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
    %19 = hector.weight_add %7, %18 : !hector.weight<relation, [64, 4h, 16]>
    %20 = hector.reduce %16 : !hector.value<unique_src, [64]> -> !hector.value<node, [64]>
    %21 = hector.traversal node (%arg0 = %8, %arg1 = %20) : (!hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %22 = hector.add %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %22 : !hector.value<node, [64]>
    }
    hector.output "grad.x" %21 : !hector.value<node, [64]>
    hector.output "grad.W" %19 : !hector.weight<relation, [64, 4h, 16]>
    hector.output "grad.a_src" %13 : !hector.weight<relation, [4h, 16]>
    hector.output "grad.a_dst" %9 : !hector.weight<relation, [4h, 16]>
  }
}

