module {
  hector.layer @hgt attributes {hector.backward = @hgt_backward, hector.cost = {bytes = array<f64: 4.096000e+03, 1.836000e+03, 0.000000e+00, 0.000000e+00, 8.192000e+03, 6.553600e+04, 0.000000e+00>, flops = array<f64: 3.328000e+04, 4.376000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00, 3.000000e+00, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference = @hgt_inference, hector.rewrites = [], hector.variant = "none", hector.variants = [@hgt__compact], params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.gemm %x, %Wk segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %2 = hector.gemm %x, %Wq segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %3 = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %4 = hector.gemm %x, %Wv segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %5 = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %6:3 = hector.traversal node (%arg0 = %0, %arg1 = %1, %arg2 = %2, %arg3 = %3, %arg4 = %4, %arg5 = %5) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
      %21 = hector.add %arg0, %arg1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %22 = hector.add %arg2, %arg3 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %23 = hector.add %arg4, %arg5 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %21, %22, %23 : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>
    }
    %7 = hector.gemm %6#0, %W_att segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %8 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %9 = hector.traversal edge (%arg0 = %6#1, %arg1 = %7) : (!hector.value<node, [4h, 16]>, !hector.value<edge, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %21 = hector.dst %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %22 = hector.dot %arg1, %21 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
      hector.yield %22 : !hector.value<edge, [4h]>
    }
    %10 = hector.traversal node (%arg0 = %9, %arg1 = %8) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>) -> !hector.value<node, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.aggregate max %23 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %24 : !hector.value<node, [4h]>
    }
    %11 = hector.traversal node (%arg0 = %9, %arg1 = %8, %arg2 = %10) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h]>) -> !hector.value<node, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
    }
      %26 = hector.exp %25 : !hector.value<edge, [4h]>
      %27 = hector.aggregate sum %26 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %27 : !hector.value<node, [4h]>
    }
    %12 = hector.gemm %6#2, %W_msg segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %13 = hector.traversal edge (%arg0 = %9, %arg1 = %8, %arg2 = %10, %arg3 = %11) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h]>, !hector.value<node, [4h]>) -> !hector.value<edge, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %25 = hector.sub %23, %24 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %26 = hector.exp %25 : !hector.value<edge, [4h]>
      %27 = hector.dst %arg3 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %28 = hector.div %26, %27 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %28 : !hector.value<edge, [4h]>
    }
    %14 = hector.traversal node (%arg0 = %13, %arg1 = %12) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [4h, 16]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %22 = hector.aggregate sum %21 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %22 : !hector.value<node, [4h, 16]>
    }
    %15 = hector.traversal node (%arg0 = %14) : (!hector.value<node, [4h, 16]>) -> !hector.value<node, [64]> {
      %21 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %22 = hector.gelu %21 : !hector.value<node, [64]>
      hector.yield %22 : !hector.value<node, [64]>
    }
    %16 = hector.gemm %15, %A segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %17 = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
    %18 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %19 = hector.traversal node (%arg0 = %16, %arg1 = %17) : (!hector.value<node, [64]>, !hector.value<ntype, [64]>) -> !hector.value<node, [64]> {
      %21 = hector.add %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, [64]> -> !hector.value<node, [64]>
      hector.yield %21 : !hector.value<node, [64]>
    }
    %20 = hector.traversal node (%arg0 = %18, %arg1 = %19, %arg2 = %x) : (!hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %21 = hector.sigmoid %arg0 : !hector.value<ntype, []>
      %22 = hector.mul %21, %arg1 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %23 = hector.constant 1.000000e+00 : !hector.value<none, []>
      %24 = hector.sub %23, %21 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
      %25 = hector.mul %24, %arg2 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %26 = hector.add %22, %25 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %26 : !hector.value<node, [64]>
    }
    hector.output "h" %20 : !hector.value<node, [64]>
    hector.output "saved.0" %6#0 : !hector.value<node, [4h, 16]>
    hector.output "saved.1" %6#1 : !hector.value<node, [4h, 16]>
    hector.output "saved.2" %6#2 : !hector.value<node, [4h, 16]>
    hector.output "saved.3" %7 : !hector.value<edge, [4h, 16]>
    hector.output "saved.4" %9 : !hector.value<edge, [4h]>
    hector.output "saved.5" %13 : !hector.value<edge, [4h]>
    hector.output "saved.6" %12 : !hector.value<edge, [4h, 16]>
    hector.output "saved.7" %14 : !hector.value<node, [4h, 16]>
    hector.output "saved.8" %19 : !hector.value<node, [64]>
  }
  hector.layer @hgt_inference attributes {hector.cost = {bytes = array<f64: 4.096000e+03, 1.836000e+03, 0.000000e+00, 0.000000e+00, 8.192000e+03, 6.553600e+04, 0.000000e+00>, flops = array<f64: 3.328000e+04, 4.376000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00, 3.000000e+00, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference_of = @hgt, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.gemm %x, %Wk segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %2 = hector.gemm %x, %Wq segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %3 = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %4 = hector.gemm %x, %Wv segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %5 = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %6:2 = hector.traversal node (%arg0 = %0, %arg1 = %1, %arg2 = %4, %arg3 = %5) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
      %16 = hector.add %arg0, %arg1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %17 = hector.add %arg2, %arg3 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %16, %17 : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>
    }
    %7 = hector.gemm %6#0, %W_att segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %8 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %9 = hector.gemm %6#1, %W_msg segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %10 = hector.traversal edge (%arg0 = %2, %arg1 = %3, %arg2 = %7, %arg3 = %8) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h]>) -> !hector.value<edge, [4h]> {
      %16 = hector.add %arg0, %arg1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %17 = hector.dst %16 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %18 = hector.dot %arg2, %17 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
      %19 = hector.mul %18, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %20 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %21 = hector.div %19, %20 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      hector.yield %21 : !hector.value<edge, [4h]>
    }
    %11 = hector.traversal node (%arg0 = %10, %arg1 = %9) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [64]> {
      %16 = hector.aggregate max %arg0 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %17 = hector.dst %16 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %18 = hector.sub %arg0, %17 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %19 = hector.exp %18 : !hector.value<edge, [4h]>
      %20 = hector.aggregate sum %19 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %21 = hector.dst %20 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %22 = hector.div %19, %21 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %23 = hector.mul %22, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %24 = hector.aggregate sum %23 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %25 = hector.merge_heads %24 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %26 = hector.gelu %25 : !hector.value<node, [64]>
      hector.yield %26 : !hector.value<node, [64]>
    }
    %12 = hector.gemm %11, %A segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %13 = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
    %14 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %15 = hector.traversal node (%arg0 = %14, %arg1 = %12, %arg2 = %13, %arg3 = %x) : (!hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<ntype, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %16 = hector.add %arg1, %arg2 : !hector.value<node, [64]>, !hector.value<ntype, [64]> -> !hector.value<node, [64]>
      %17 = hector.sigmoid %arg0 : !hector.value<ntype, []>
      %18 = hector.mul %17, %16 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %19 = hector.constant 1.000000e+00 : !hector.value<none, []>
      %20 = hector.sub %19, %17 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
      %21 = hector.mul %20, %arg3 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %22 = hector.add %18, %21 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %22 : !hector.value<node, [64]>
    }
    hector.output "h" %15 : !hector.value<node, [64]>
  }
  hector.layer @hgt_backward attributes {hector.cost = {bytes = array<f64: 1.025600e+04, 4.536000e+03, 0.000000e+00, 0.000000e+00, 1.640000e+04, 1.321240e+05, 0.000000e+00>, flops = array<f64: 6.649600e+04, 8.736000e+03, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.200000e+01, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.forward = @hgt, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %saved.0 = hector.input "saved.0" : !hector.value<node, [4h, 16]>
    %saved.1 = hector.input "saved.1" : !hector.value<node, [4h, 16]>
    %saved.2 = hector.input "saved.2" : !hector.value<node, [4h, 16]>
    %saved.3 = hector.input "saved.3" : !hector.value<edge, [4h, 16]>
    %saved.4 = hector.input "saved.4" : !hector.value<edge, [4h]>
    %saved.5 = hector.input "saved.5" : !hector.value<edge, [4h]>
    %saved.6 = hector.input "saved.6" : !hector.value<edge, [4h, 16]>
    %saved.7 = hector.input "saved.7" : !hector.value<node, [4h, 16]>
    %saved.8 = hector.input "saved.8" : !hector.value<node, [64]>
    %grad.h = hector.input "grad.h" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.traversal node (%arg0 = %grad.h, %arg1 = %x) : (!hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %44 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %44 : !hector.value<node, [64]>
    }
    %1 = hector.reduce %0 : !hector.value<node, [64]> -> !hector.value<ntype, []>
    %2 = hector.constant 1.000000e+00 : !hector.value<none, []>
    %3 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %4 = hector.sigmoid %3 : !hector.value<ntype, []>
    %5 = hector.sub %2, %4 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %6 = hector.neg %1 : !hector.value<ntype, []>
    %7 = hector.mul %4, %5 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %8 = hector.mul %6, %7 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %9 = hector.traversal node (%arg0 = %grad.h, %arg1 = %saved.8) : (!hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %44 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %44 : !hector.value<node, [64]>
    }
    %10 = hector.reduce %9 : !hector.value<node, [64]> -> !hector.value<ntype, []>
    %11 = hector.mul %10, %7 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %12 = hector.add %8, %11 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %13 = hector.reduce %12 : !hector.value<ntype, []> -> !hector.weight<ntype, []>
    %14 = hector.traversal node (%arg0 = %grad.h, %arg1 = %4) : (!hector.value<node, [64]>, !hector.value<ntype, []>) -> !hector.value<node, [64]> {
      %44 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, []> -> !hector.value<node, [64]>
      hector.yield %44 : !hector.value<node, [64]>
    }
    %15 = hector.reduce %14 : !hector.value<node, [64]> -> !hector.weight<ntype, [64]>
    %16 = hector.gemm %14, %A segment ntype gather none scatter store transpose_b : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %17 = hector.traversal node (%arg0 = %saved.7) : (!hector.value<node, [4h, 16]>) -> !hector.value<node, [64]> {
      %44 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %45 = hector.gelu %44 : !hector.value<node, [64]>
      hector.yield %45 : !hector.value<node, [64]>
    }
    %18 = hector.weight_grad %17, %14 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.weight<ntype, [64, 64]>
    %19 = hector.traversal node (%arg0 = %saved.7, %arg1 = %16) : (!hector.value<node, [4h, 16]>, !hector.value<node, [64]>) -> !hector.value<node, [4h, 16]> {
      %44 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %45 = hector.gelu_grad %arg1, %44 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %46 = hector.split_heads %45 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      hector.yield %46 : !hector.value<node, [4h, 16]>
    }
    %20:2 = hector.traversal edge (%arg0 = %19, %arg1 = %saved.6, %arg2 = %saved.5) : (!hector.value<node, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<edge, [4h]>) -> (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) {
      %44 = hector.dst %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %45 = hector.mul %44, %arg1 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %46 = hector.reduce %45 : !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      %47 = hector.mul %44, %arg2 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h, 16]>
      hector.yield %46, %47 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>
    }
    %21 = hector.gemm %20#1, %W_msg segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %22 = hector.src %saved.2 : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
    %23 = hector.weight_grad %22, %20#1 : !hector.value<src, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
    %24 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %25 = hector.traversal node (%arg0 = %saved.5, %arg1 = %20#0) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %44 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %45 = hector.aggregate sum %44 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %45 : !hector.value<node, [4h]>
    }
    %26 = hector.traversal edge (%arg0 = %25, %arg1 = %20#0, %arg2 = %saved.5, %arg3 = %saved.4) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<edge, [4h]> {
      %44 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %45 = hector.sub %arg1, %44 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %46 = hector.mul %arg2, %45 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %47 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %48 = hector.div %46, %47 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %49 = hector.mul %48, %arg3 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %49 : !hector.value<edge, [4h]>
    }
    %27 = hector.reduce %26 : !hector.value<edge, [4h]> -> !hector.weight<relation, [4h]>
    %28 = hector.traversal edge (%arg0 = %25, %arg1 = %20#0, %arg2 = %saved.5, %arg3 = %24, %arg4 = %saved.1) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h, 16]>) -> !hector.value<edge, [4h, 16]> {
      %44 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %45 = hector.sub %arg1, %44 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %46 = hector.mul %arg2, %45 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %47 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %48 = hector.div %46, %47 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %49 = hector.mul %48, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %50 = hector.dst %arg4 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %51 = hector.mul %49, %50 : !hector.value<edge, [4h]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      hector.yield %51 : !hector.value<edge, [4h, 16]>
    }
    %29 = hector.gemm %28, %W_att segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %30 = hector.src %saved.0 : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
    %31 = hector.weight_grad %30, %28 : !hector.value<src, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
    %32:2 = hector.traversal node (%arg0 = %21, %arg1 = %29) : (!hector.value<edge, [4h, 16]>, !hector.value<edge, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
      %44 = hector.aggregate sum %arg0 by src : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %45 = hector.aggregate sum %arg1 by src : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %44, %45 : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>
    }
    %33 = hector.reduce %32#0 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %34 = hector.gemm %32#0, %Wv segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %35 = hector.weight_grad %x, %32#0 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %36 = hector.traversal node (%arg0 = %25, %arg1 = %20#0, %arg2 = %saved.5, %arg3 = %24, %arg4 = %saved.3) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [4h, 16]> {
      %44 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %45 = hector.sub %arg1, %44 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %46 = hector.mul %arg2, %45 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %47 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %48 = hector.div %46, %47 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %49 = hector.mul %48, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %50 = hector.mul %49, %arg4 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %51 = hector.aggregate sum %50 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %51 : !hector.value<node, [4h, 16]>
    }
    %37 = hector.reduce %36 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %38 = hector.gemm %36, %Wq segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %39 = hector.weight_grad %x, %36 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %40 = hector.reduce %32#1 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %41 = hector.gemm %32#1, %Wk segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %42 = hector.weight_grad %x, %32#1 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %43 = hector.traversal node (%arg0 = %grad.h, %arg1 = %5, %arg2 = %34, %arg3 = %38, %arg4 = %41) : (!hector.value<node, [64]>, !hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %44 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, []> -> !hector.value<node, [64]>
      %45 = hector.add %44, %arg2 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %46 = hector.add %45, %arg3 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %47 = hector.add %46, %arg4 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %47 : !hector.value<node, [64]>
    }
    hector.output "grad.x" %43 : !hector.value<node, [64]>
    hector.output "grad.Wk" %42 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bk" %40 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.Wq" %39 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bq" %37 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.Wv" %35 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bv" %33 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.W_att" %31 : !hector.weight<relation, [4h, 16, 16]>
    hector.output "grad.W_msg" %23 : !hector.weight<relation, [4h, 16, 16]>
    hector.output "grad.mu" %27 : !hector.weight<relation, [4h]>
    hector.output "grad.A" %18 : !hector.weight<ntype, [64, 64]>
    hector.output "grad.bA" %15 : !hector.weight<ntype, [64]>
    hector.output "grad.skip" %13 : !hector.weight<ntype, []>
  }
  hector.layer @hgt__compact attributes {hector.backward = @hgt__compact_backward, hector.cost = {bytes = array<f64: 4.096000e+03, 8.120000e+02, 1.032000e+03, 0.000000e+00, 8.192000e+03, 6.553600e+04, 0.000000e+00>, flops = array<f64: 3.328000e+04, 2.800000e+02, 4.096000e+03, 0.000000e+00, 0.000000e+00, 3.000000e+00, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference = @hgt__compact_inference, hector.rewrites = ["applies 'hector.linear' (line 35): on unique_src rows (2 ops), read through unique_expand", "applies 'hector.linear' (line 37): on unique_src rows (2 ops), read through unique_expand"], hector.variant = "compact", hector.variant_of = @hgt, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.gemm %x, %Wk segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %2 = hector.gemm %x, %Wq segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %3 = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %4 = hector.gemm %x, %Wv segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %5 = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %6:3 = hector.traversal node (%arg0 = %0, %arg1 = %1, %arg2 = %2, %arg3 = %3, %arg4 = %4, %arg5 = %5) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
      %21 = hector.add %arg0, %arg1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %22 = hector.add %arg2, %arg3 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %23 = hector.add %arg4, %arg5 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %21, %22, %23 : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>
    }
    %7 = hector.gemm %6#0, %W_att segment relation gather unique_src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %8 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %9 = hector.traversal edge (%arg0 = %7, %arg1 = %6#1) : (!hector.value<unique_src, [4h, 16]>, !hector.value<node, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %21 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %22 = hector.dst %arg1 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %23 = hector.dot %21, %22 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
      hector.yield %23 : !hector.value<edge, [4h]>
    }
    %10 = hector.traversal node (%arg0 = %9, %arg1 = %8) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>) -> !hector.value<node, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.aggregate max %23 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %24 : !hector.value<node, [4h]>
    }
    %11 = hector.traversal node (%arg0 = %9, %arg1 = %8, %arg2 = %10) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h]>) -> !hector.value<node, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %25 = hector.sub %23, %24 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %26 = hector.exp %25 : !hector.value<edge, [4h]>
      %27 = hector.aggregate sum %26 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %27 : !hector.value<node, [4h]>
    }
    %12 = hector.gemm %6#2, %W_msg segment relation gather unique_src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %13 = hector.traversal edge (%arg0 = %9, %arg1 = %8, %arg2 = %10, %arg3 = %11) : (!hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h]>, !hector.value<node, [4h]>) -> !hector.value<edge, [4h]> {
      %21 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %22 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %23 = hector.div %21, %22 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %24 = hector.dst %arg2 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %25 = hector.sub %23, %24 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %26 = hector.exp %25 : !hector.value<edge, [4h]>
      %27 = hector.dst %arg3 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %28 = hector.div %26, %27 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %28 : !hector.value<edge, [4h]>
    }
    %14 = hector.traversal node (%arg0 = %12, %arg1 = %13) : (!hector.value<unique_src, [4h, 16]>, !hector.value<edge, [4h]>) -> !hector.value<node, [4h, 16]> {
      %21 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %22 = hector.mul %arg1, %21 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %23 = hector.aggregate sum %22 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %23 : !hector.value<node, [4h, 16]>
    }
    %15 = hector.traversal node (%arg0 = %14) : (!hector.value<node, [4h, 16]>) -> !hector.value<node, [64]> {
      %21 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %22 = hector.gelu %21 : !hector.value<node, [64]>
      hector.yield %22 : !hector.value<node, [64]>
    }
    %16 = hector.gemm %15, %A segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %17 = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
    %18 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %19 = hector.traversal node (%arg0 = %16, %arg1 = %17) : (!hector.value<node, [64]>, !hector.value<ntype, [64]>) -> !hector.value<node, [64]> {
      %21 = hector.add %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, [64]> -> !hector.value<node, [64]>
      hector.yield %21 : !hector.value<node, [64]>
    }
    %20 = hector.traversal node (%arg0 = %18, %arg1 = %19, %arg2 = %x) : (!hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %21 = hector.sigmoid %arg0 : !hector.value<ntype, []>
      %22 = hector.mul %21, %arg1 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %23 = hector.constant 1.000000e+00 : !hector.value<none, []>
      %24 = hector.sub %23, %21 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
      %25 = hector.mul %24, %arg2 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %26 = hector.add %22, %25 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %26 : !hector.value<node, [64]>
    }
    hector.output "h" %20 : !hector.value<node, [64]>
    hector.output "saved.0" %6#0 : !hector.value<node, [4h, 16]>
    hector.output "saved.1" %6#1 : !hector.value<node, [4h, 16]>
    hector.output "saved.2" %6#2 : !hector.value<node, [4h, 16]>
    hector.output "saved.3" %7 : !hector.value<unique_src, [4h, 16]>
    hector.output "saved.4" %9 : !hector.value<edge, [4h]>
    hector.output "saved.5" %13 : !hector.value<edge, [4h]>
    hector.output "saved.6" %12 : !hector.value<unique_src, [4h, 16]>
    hector.output "saved.7" %14 : !hector.value<node, [4h, 16]>
    hector.output "saved.8" %19 : !hector.value<node, [64]>
  }
  hector.layer @hgt__compact_inference attributes {hector.cost = {bytes = array<f64: 4.096000e+03, 8.120000e+02, 1.032000e+03, 0.000000e+00, 8.192000e+03, 6.553600e+04, 0.000000e+00>, flops = array<f64: 3.328000e+04, 2.800000e+02, 4.096000e+03, 0.000000e+00, 0.000000e+00, 3.000000e+00, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.inference_of = @hgt__compact, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.gemm %x, %Wk segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %2 = hector.gemm %x, %Wq segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %3 = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %4 = hector.gemm %x, %Wv segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %5 = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %6:2 = hector.traversal node (%arg0 = %0, %arg1 = %1, %arg2 = %4, %arg3 = %5) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
      %16 = hector.add %arg0, %arg1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %17 = hector.add %arg2, %arg3 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %16, %17 : !hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>
    }
    %7 = hector.gemm %6#0, %W_att segment relation gather unique_src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %8 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %9 = hector.gemm %6#1, %W_msg segment relation gather unique_src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %10 = hector.traversal edge (%arg0 = %7, %arg1 = %2, %arg2 = %3, %arg3 = %8) : (!hector.value<unique_src, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<relation, [4h]>) -> !hector.value<edge, [4h]> {
      %16 = hector.add %arg1, %arg2 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %17 = hector.unique_expand %arg0 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %18 = hector.dst %16 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %19 = hector.dot %17, %18 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
      %20 = hector.mul %19, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %21 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %22 = hector.div %20, %21 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      hector.yield %22 : !hector.value<edge, [4h]>
    }
    %11 = hector.traversal node (%arg0 = %10, %arg1 = %9) : (!hector.value<edge, [4h]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<node, [64]> {
      %16 = hector.aggregate max %arg0 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %17 = hector.dst %16 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %18 = hector.sub %arg0, %17 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %19 = hector.exp %18 : !hector.value<edge, [4h]>
      %20 = hector.aggregate sum %19 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      %21 = hector.dst %20 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %22 = hector.div %19, %21 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %23 = hector.unique_expand %arg1 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %24 = hector.mul %22, %23 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %25 = hector.aggregate sum %24 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      %26 = hector.merge_heads %25 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %27 = hector.gelu %26 : !hector.value<node, [64]>
      hector.yield %27 : !hector.value<node, [64]>
    }
    %12 = hector.gemm %11, %A segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %13 = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
    %14 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %15 = hector.traversal node (%arg0 = %14, %arg1 = %12, %arg2 = %13, %arg3 = %x) : (!hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<ntype, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %16 = hector.add %arg1, %arg2 : !hector.value<node, [64]>, !hector.value<ntype, [64]> -> !hector.value<node, [64]>
      %17 = hector.sigmoid %arg0 : !hector.value<ntype, []>
      %18 = hector.mul %17, %16 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %19 = hector.constant 1.000000e+00 : !hector.value<none, []>
      %20 = hector.sub %19, %17 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
      %21 = hector.mul %20, %arg3 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %22 = hector.add %18, %21 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %22 : !hector.value<node, [64]>
    }
    hector.output "h" %15 : !hector.value<node, [64]>
  }
  hector.layer @hgt__compact_backward attributes {hector.cost = {bytes = array<f64: 1.025600e+04, 1.464000e+03, 3.080000e+03, 0.000000e+00, 1.640000e+04, 1.321240e+05, 0.000000e+00>, flops = array<f64: 6.649600e+04, 5.440000e+02, 8.320000e+03, 0.000000e+00, 0.000000e+00, 1.200000e+01, 0.000000e+00>, intermediates = [array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 4.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 0.000000e+00, 0.000000e+00, 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, array<f64: 6.400000e+01, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>]}, hector.forward = @hgt__compact, params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %saved.0 = hector.input "saved.0" : !hector.value<node, [4h, 16]>
    %saved.1 = hector.input "saved.1" : !hector.value<node, [4h, 16]>
    %saved.2 = hector.input "saved.2" : !hector.value<node, [4h, 16]>
    %saved.3 = hector.input "saved.3" : !hector.value<unique_src, [4h, 16]>
    %saved.4 = hector.input "saved.4" : !hector.value<edge, [4h]>
    %saved.5 = hector.input "saved.5" : !hector.value<edge, [4h]>
    %saved.6 = hector.input "saved.6" : !hector.value<unique_src, [4h, 16]>
    %saved.7 = hector.input "saved.7" : !hector.value<node, [4h, 16]>
    %saved.8 = hector.input "saved.8" : !hector.value<node, [64]>
    %grad.h = hector.input "grad.h" : !hector.value<node, [64]>
    %Wk = hector.weight "Wk" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bk = hector.weight "bk" zeros : !hector.weight<ntype, [4h, 16]>
    %Wq = hector.weight "Wq" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bq = hector.weight "bq" zeros : !hector.weight<ntype, [4h, 16]>
    %Wv = hector.weight "Wv" glorot : !hector.weight<ntype, [64, 4h, 16]>
    %bv = hector.weight "bv" zeros : !hector.weight<ntype, [4h, 16]>
    %W_att = hector.weight "W_att" glorot : !hector.weight<relation, [4h, 16, 16]>
    %W_msg = hector.weight "W_msg" glorot : !hector.weight<relation, [4h, 16, 16]>
    %mu = hector.weight "mu" ones : !hector.weight<relation, [4h]>
    %A = hector.weight "A" glorot : !hector.weight<ntype, [64, 64]>
    %bA = hector.weight "bA" zeros : !hector.weight<ntype, [64]>
    %skip = hector.weight "skip" ones : !hector.weight<ntype, []>
    %0 = hector.traversal node (%arg0 = %grad.h, %arg1 = %x) : (!hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %46 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %46 : !hector.value<node, [64]>
    }
    %1 = hector.reduce %0 : !hector.value<node, [64]> -> !hector.value<ntype, []>
    %2 = hector.constant 1.000000e+00 : !hector.value<none, []>
    %3 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %4 = hector.sigmoid %3 : !hector.value<ntype, []>
    %5 = hector.sub %2, %4 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %6 = hector.neg %1 : !hector.value<ntype, []>
    %7 = hector.mul %4, %5 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %8 = hector.mul %6, %7 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %9 = hector.traversal node (%arg0 = %grad.h, %arg1 = %saved.8) : (!hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %46 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %46 : !hector.value<node, [64]>
    }
    %10 = hector.reduce %9 : !hector.value<node, [64]> -> !hector.value<ntype, []>
    %11 = hector.mul %10, %7 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %12 = hector.add %8, %11 : !hector.value<ntype, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %13 = hector.reduce %12 : !hector.value<ntype, []> -> !hector.weight<ntype, []>
    %14 = hector.traversal node (%arg0 = %grad.h, %arg1 = %4) : (!hector.value<node, [64]>, !hector.value<ntype, []>) -> !hector.value<node, [64]> {
      %46 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, []> -> !hector.value<node, [64]>
      hector.yield %46 : !hector.value<node, [64]>
      %25 = hector.sub %23, %24 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
    %15 = hector.reduce %14 : !hector.value<node, [64]> -> !hector.weight<ntype, [64]>
    %16 = hector.gemm %14, %A segment ntype gather none scatter store transpose_b : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %17 = hector.traversal node (%arg0 = %saved.7) : (!hector.value<node, [4h, 16]>) -> !hector.value<node, [64]> {
      %46 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %47 = hector.gelu %46 : !hector.value<node, [64]>
      hector.yield %47 : !hector.value<node, [64]>
    }
    %18 = hector.weight_grad %17, %14 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.weight<ntype, [64, 64]>
    %19 = hector.traversal node (%arg0 = %saved.7, %arg1 = %16) : (!hector.value<node, [4h, 16]>, !hector.value<node, [64]>) -> !hector.value<node, [4h, 16]> {
      %46 = hector.merge_heads %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
      %47 = hector.gelu_grad %arg1, %46 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %48 = hector.split_heads %47 : !hector.value<node, [64]> -> !hector.value<node, [4h, 16]>
      hector.yield %48 : !hector.value<node, [4h, 16]>
    }
    %20 = hector.traversal node (%arg0 = %19, %arg1 = %saved.5) : (!hector.value<node, [4h, 16]>, !hector.value<edge, [4h]>) -> !hector.value<unique_src, [4h, 16]> {
      %46 = hector.dst %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %47 = hector.mul %46, %arg1 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h, 16]>
      %48 = hector.reduce %47 : !hector.value<edge, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      hector.yield %48 : !hector.value<unique_src, [4h, 16]>
    }
    %21 = hector.gemm %20, %W_msg segment relation gather none scatter store transpose_b : !hector.value<unique_src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %22 = hector.unique_gather src %saved.2 : !hector.value<node, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
    %23 = hector.weight_grad %22, %20 : !hector.value<unique_src, [4h, 16]>, !hector.value<unique_src, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
    %24 = hector.reduce %21 : !hector.value<unique_src, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %25 = hector.traversal edge (%arg0 = %19, %arg1 = %saved.6) : (!hector.value<node, [4h, 16]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<edge, [4h]> {
      %46 = hector.dst %arg0 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %47 = hector.unique_expand %arg1 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %48 = hector.mul %46, %47 : !hector.value<dst, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %49 = hector.reduce %48 : !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
      hector.yield %49 : !hector.value<edge, [4h]>
    }
    %26 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %27 = hector.traversal node (%arg0 = %saved.5, %arg1 = %25) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<node, [4h]> {
      %46 = hector.mul %arg0, %arg1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %47 = hector.aggregate sum %46 by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
      hector.yield %47 : !hector.value<node, [4h]>
    }
    %28 = hector.traversal edge (%arg0 = %27, %arg1 = %25, %arg2 = %saved.5, %arg3 = %saved.4) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>) -> !hector.value<edge, [4h]> {
      %46 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %47 = hector.sub %arg1, %46 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %48 = hector.mul %arg2, %47 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %49 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %50 = hector.div %48, %49 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %51 = hector.mul %50, %arg3 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      hector.yield %51 : !hector.value<edge, [4h]>
    }
    %29 = hector.reduce %28 : !hector.value<edge, [4h]> -> !hector.weight<relation, [4h]>
    %30 = hector.traversal node (%arg0 = %27, %arg1 = %25, %arg2 = %saved.5, %arg3 = %26, %arg4 = %saved.1) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<node, [4h, 16]>) -> !hector.value<unique_src, [4h, 16]> {
      %46 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %47 = hector.sub %arg1, %46 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %48 = hector.mul %arg2, %47 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %49 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %50 = hector.div %48, %49 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %51 = hector.mul %50, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %52 = hector.dst %arg4 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
      %53 = hector.mul %51, %52 : !hector.value<edge, [4h]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %54 = hector.reduce %53 : !hector.value<edge, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
      hector.yield %54 : !hector.value<unique_src, [4h, 16]>
    }
    %31 = hector.gemm %30, %W_att segment relation gather none scatter store transpose_b : !hector.value<unique_src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<unique_src, [4h, 16]>
    %32 = hector.unique_gather src %saved.0 : !hector.value<node, [4h, 16]> -> !hector.value<unique_src, [4h, 16]>
    %33 = hector.weight_grad %32, %30 : !hector.value<unique_src, [4h, 16]>, !hector.value<unique_src, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
    %34 = hector.reduce %31 : !hector.value<unique_src, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %35 = hector.reduce %24 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %36 = hector.gemm %24, %Wv segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %37 = hector.weight_grad %x, %24 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %38 = hector.traversal node (%arg0 = %27, %arg1 = %25, %arg2 = %saved.5, %arg3 = %26, %arg4 = %saved.3) : (!hector.value<node, [4h]>, !hector.value<edge, [4h]>, !hector.value<edge, [4h]>, !hector.value<relation, [4h]>, !hector.value<unique_src, [4h, 16]>) -> !hector.value<node, [4h, 16]> {
      %46 = hector.dst %arg0 : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
      %47 = hector.sub %arg1, %46 : !hector.value<edge, [4h]>, !hector.value<dst, [4h]> -> !hector.value<edge, [4h]>
      %48 = hector.mul %arg2, %47 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
      %49 = hector.constant 4.000000e+00 : !hector.value<none, []>
      %50 = hector.div %48, %49 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
      %51 = hector.mul %50, %arg3 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
      %52 = hector.unique_expand %arg4 : !hector.value<unique_src, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %53 = hector.mul %51, %52 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
      %54 = hector.aggregate sum %53 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
      hector.yield %54 : !hector.value<node, [4h, 16]>
    }
    %39 = hector.reduce %38 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %40 = hector.gemm %38, %Wq segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %41 = hector.weight_grad %x, %38 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %42 = hector.reduce %34 : !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [4h, 16]>
    %43 = hector.gemm %34, %Wk segment ntype gather none scatter store transpose_b : !hector.value<node, [4h, 16]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [64]>
    %44 = hector.weight_grad %x, %34 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
    %45 = hector.traversal node (%arg0 = %grad.h, %arg1 = %5, %arg2 = %36, %arg3 = %40, %arg4 = %43) : (!hector.value<node, [64]>, !hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<node, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
      %46 = hector.mul %arg0, %arg1 : !hector.value<node, [64]>, !hector.value<ntype, []> -> !hector.value<node, [64]>
      %47 = hector.add %46, %arg2 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %48 = hector.add %47, %arg3 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      %49 = hector.add %48, %arg4 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
      hector.yield %49 : !hector.value<node, [64]>
    }
    hector.output "grad.x" %45 : !hector.value<node, [64]>
    hector.output "grad.Wk" %44 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bk" %42 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.Wq" %41 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bq" %39 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.Wv" %37 : !hector.weight<ntype, [64, 4h, 16]>
    hector.output "grad.bv" %35 : !hector.weight<ntype, [4h, 16]>
    hector.output "grad.W_att" %33 : !hector.weight<relation, [4h, 16, 16]>
    hector.output "grad.W_msg" %23 : !hector.weight<relation, [4h, 16, 16]>
    hector.output "grad.mu" %29 : !hector.weight<relation, [4h]>
    hector.output "grad.A" %18 : !hector.weight<ntype, [64, 64]>
    hector.output "grad.bA" %15 : !hector.weight<ntype, [64]>
    hector.output "grad.skip" %13 : !hector.weight<ntype, []>
  }
}

