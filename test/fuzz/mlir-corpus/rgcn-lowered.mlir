module {
  hector.layer @rgcn attributes {hector.backward = @rgcn_backward, hector.cost = {bytes = array<f64: 3.200000e+02, 2.000000e+02, 0.000000e+00, 0.000000e+00, 1.024000e+03, 0.000000e+00, 1.024000e+03>, flops = array<f64: 5.440000e+02, 5.440000e+02, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference = @rgcn_inference, hector.rewrites = [], hector.variant = "none", hector.variants = [], params = {in = 16 : i64, out = 16 : i64}} {
    %x = hector.input "x" : !hector.value<node, [16]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
    %root = hector.weight "root" glorot : !hector.weight<none, [16, 16]>
    %bias = hector.weight "bias" zeros : !hector.weight<none, [16]>
    %0 = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
    %1 = hector.gemm %x, %root segment none gather none scatter store : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
    %2 = hector.slice %bias : !hector.weight<none, [16]> -> !hector.value<none, [16]>
    %3 = hector.traversal node (%arg0 = %norm, %arg1 = %0, %arg2 = %1, %arg3 = %2) : (!hector.value<edge, []>, !hector.value<edge, [16]>, !hector.value<node, [16]>, !hector.value<none, [16]>) -> !hector.value<node, [16]> {
      %4 = hector.mul %arg0, %arg1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
      %5 = hector.aggregate sum %4 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
      %6 = hector.add %5, %arg2 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
      %7 = hector.add %6, %arg3 : !hector.value<node, [16]>, !hector.value<none, [16]> -> !hector.value<node, [16]>
      hector.yield %7 : !hector.value<node, [16]>
    }
    hector.output "h" %3 : !hector.value<node, [16]>
    hector.output "saved.0" %0 : !hector.value<edge, [16]>
  }
  hector.layer @rgcn_inference attributes {hector.cost = {bytes = array<f64: 3.200000e+02, 2.000000e+02, 0.000000e+00, 0.000000e+00, 1.024000e+03, 0.000000e+00, 1.024000e+03>, flops = array<f64: 5.440000e+02, 5.440000e+02, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 0.000000e+00, 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference_of = @rgcn, params = {in = 16 : i64, out = 16 : i64}} {
    %x = hector.input "x" : !hector.value<node, [16]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
    %root = hector.weight "root" glorot : !hector.weight<none, [16, 16]>
    %bias = hector.weight "bias" zeros : !hector.weight<none, [16]>
    %0 = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
    %1 = hector.gemm %x, %root segment none gather none scatter store : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
    %2 = hector.slice %bias : !hector.weight<none, [16]> -> !hector.value<none, [16]>
    %3 = hector.traversal node (%arg0 = %norm, %arg1 = %0, %arg2 = %1, %arg3 = %2) : (!hector.value<edge, []>, !hector.value<edge, [16]>, !hector.value<node, [16]>, !hector.value<none, [16]>) -> !hector.value<node, [16]> {
      %4 = hector.mul %arg0, %arg1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
      %5 = hector.aggregate sum %4 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
      %6 = hector.add %5, %arg2 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
      %7 = hector.add %6, %arg3 : !hector.value<node, [16]>, !hector.value<none, [16]> -> !hector.value<node, [16]>
      hector.yield %7 : !hector.value<node, [16]>
    }
    hector.output "h" %3 : !hector.value<node, [16]>
  }
  hector.layer @rgcn_backward attributes {hector.cost = {bytes = array<f64: 5.120000e+02, 5.960000e+02, 0.000000e+00, 0.000000e+00, 2.048000e+03, 0.000000e+00, 2.112000e+03>, flops = array<f64: 1.056000e+03, 1.088000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, intermediates = [array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 1.600000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.forward = @rgcn, params = {in = 16 : i64, out = 16 : i64}} {
    %x = hector.input "x" : !hector.value<node, [16]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %saved.0 = hector.input "saved.0" : !hector.value<edge, [16]>
    %grad.h = hector.input "grad.h" : !hector.value<node, [16]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
    %root = hector.weight "root" glorot : !hector.weight<none, [16, 16]>
    %bias = hector.weight "bias" zeros : !hector.weight<none, [16]>
    %0 = hector.reduce %grad.h : !hector.value<node, [16]> -> !hector.weight<none, [16]>
    %1 = hector.gemm %grad.h, %root segment none gather none scatter store transpose_b : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
    %2 = hector.weight_grad %x, %grad.h : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.weight<none, [16, 16]>
    %3:2 = hector.traversal edge (%arg0 = %grad.h, %arg1 = %saved.0, %arg2 = %norm) : (!hector.value<node, [16]>, !hector.value<edge, [16]>, !hector.value<edge, []>) -> (!hector.value<edge, []>, !hector.value<edge, [16]>) {
      %8 = hector.dst %arg0 : !hector.value<node, [16]> -> !hector.value<dst, [16]>
      %9 = hector.mul %8, %arg1 : !hector.value<dst, [16]>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
      %10 = hector.reduce %9 : !hector.value<edge, [16]> -> !hector.value<edge, []>
      %11 = hector.mul %8, %arg2 : !hector.value<dst, [16]>, !hector.value<edge, []> -> !hector.value<edge, [16]>
      hector.yield %10, %11 : !hector.value<edge, []>, !hector.value<edge, [16]>
    }
    %4 = hector.gemm %3#1, %W segment relation gather none scatter store transpose_b : !hector.value<edge, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
    %5 = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
    %6 = hector.weight_grad %5, %3#1 : !hector.value<src, [16]>, !hector.value<edge, [16]> -> !hector.weight<relation, [16, 16]>
    %7 = hector.traversal node (%arg0 = %4, %arg1 = %1) : (!hector.value<edge, [16]>, !hector.value<node, [16]>) -> !hector.value<node, [16]> {
      %8 = hector.aggregate sum %arg0 by src : !hector.value<edge, [16]> -> !hector.value<node, [16]>
      %9 = hector.add %arg1, %8 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
      hector.yield %9 : !hector.value<node, [16]>
    }
    hector.output "grad.x" %7 : !hector.value<node, [16]>
    hector.output "grad.norm" %3#0 : !hector.value<edge, []>
    hector.output "grad.W" %6 : !hector.weight<relation, [16, 16]>
    hector.output "grad.root" %2 : !hector.weight<none, [16, 16]>
    hector.output "grad.bias" %0 : !hector.weight<none, [16]>
  }
}

