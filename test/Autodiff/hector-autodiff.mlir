// RUN: hector-opt %s --hector-autodiff | FileCheck %s
// RUN: hector-opt %s --hector-autodiff | hector-opt | FileCheck %s

// One layer per group of derivative rules; the CHECK lines hold the whole backward layer.

// src/dst: the adjoint of a gather is a sum over the edges by the same end; sum by src: src(dy).
// CHECK-LABEL: hector.layer @gather attributes {hector.backward = @gather_backward
// CHECK-LABEL: hector.layer @gather_backward attributes {hector.forward = @gather
// CHECK-NEXT: %grad.h = hector.input "grad.h" : !hector.value<node, [8]>
// CHECK-NEXT: %[[GATHER_0:[0-9]+]] = hector.src %grad.h : !hector.value<node, [8]> -> !hector.value<src, [8]>
// CHECK-NEXT: %[[GATHER_1:[0-9]+]] = hector.aggregate sum %[[GATHER_0]] by dst : !hector.value<src, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[GATHER_2:[0-9]+]] = hector.aggregate sum %[[GATHER_0]] by src : !hector.value<src, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[GATHER_3:[0-9]+]] = hector.add %[[GATHER_1]], %[[GATHER_2]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[GATHER_3]] : !hector.value<node, [8]>
// CHECK-NEXT: }
hector.layer @gather {
  %x = hector.input "x" : !hector.value<node, [8]>
  %s = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %d = hector.dst %x : !hector.value<node, [8]> -> !hector.value<dst, [8]>
  %e = hector.add %s, %d : !hector.value<src, [8]>, !hector.value<dst, [8]> -> !hector.value<edge, [8]>
  %h = hector.aggregate sum %e by src : !hector.value<edge, [8]> -> !hector.value<node, [8]>
  hector.output "h" %h : !hector.value<node, [8]>
}

// linear: dx = dy . W^T (transposed), dW = weight_grad(x, dy), for relation-, ntype- and
// unsliced weights; a src-space gradient stays src through an unsliced linear.
// CHECK-LABEL: hector.layer @linear attributes {hector.backward = @linear_backward
// CHECK-LABEL: hector.layer @linear_backward attributes {hector.forward = @linear
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.a = hector.input "grad.a" : !hector.value<node, [2h, 4]>
// CHECK-NEXT: %grad.t = hector.input "grad.t" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.v = hector.input "grad.v" : !hector.value<node, [8]>
// CHECK-NEXT: %Wr = hector.weight "Wr" glorot : !hector.weight<relation, [8, 2h, 4]>
// CHECK-NEXT: %Wt = hector.weight "Wt" glorot : !hector.weight<ntype, [8, 8]>
// CHECK-NEXT: %Wn = hector.weight "Wn" glorot : !hector.weight<none, [8, 8]>
// CHECK-NEXT: %[[LINEAR_0:[0-9]+]] = hector.src %grad.v : !hector.value<node, [8]> -> !hector.value<src, [8]>
// CHECK-NEXT: %[[LINEAR_1:[0-9]+]] = hector.linear %[[LINEAR_0]], %Wn transposed : !hector.value<src, [8]>, !hector.weight<none, [8, 8]> -> !hector.value<src, [8]>
// CHECK-NEXT: %[[LINEAR_2:[0-9]+]] = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
// CHECK-NEXT: %[[LINEAR_3:[0-9]+]] = hector.weight_grad %[[LINEAR_2]], %[[LINEAR_0]] : !hector.value<src, [8]>, !hector.value<src, [8]> -> !hector.weight<none, [8, 8]>
// CHECK-NEXT: %[[LINEAR_4:[0-9]+]] = hector.linear %grad.t, %Wt transposed : !hector.value<node, [8]>, !hector.weight<ntype, [8, 8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[LINEAR_5:[0-9]+]] = hector.weight_grad %x, %grad.t : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.weight<ntype, [8, 8]>
// CHECK-NEXT: %[[LINEAR_6:[0-9]+]] = hector.dst %grad.a : !hector.value<node, [2h, 4]> -> !hector.value<dst, [2h, 4]>
// CHECK-NEXT: %[[LINEAR_7:[0-9]+]] = hector.linear %[[LINEAR_6]], %Wr transposed : !hector.value<dst, [2h, 4]>, !hector.weight<relation, [8, 2h, 4]> -> !hector.value<edge, [8]>
// CHECK-NEXT: %[[LINEAR_8:[0-9]+]] = hector.add %[[LINEAR_1]], %[[LINEAR_7]] : !hector.value<src, [8]>, !hector.value<edge, [8]> -> !hector.value<edge, [8]>
// CHECK-NEXT: %[[LINEAR_9:[0-9]+]] = hector.weight_grad %[[LINEAR_2]], %[[LINEAR_6]] : !hector.value<src, [8]>, !hector.value<dst, [2h, 4]> -> !hector.weight<relation, [8, 2h, 4]>
// CHECK-NEXT: %[[LINEAR_10:[0-9]+]] = hector.aggregate sum %[[LINEAR_8]] by src : !hector.value<edge, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[LINEAR_11:[0-9]+]] = hector.add %[[LINEAR_4]], %[[LINEAR_10]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[LINEAR_11]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.Wr" %[[LINEAR_9]] : !hector.weight<relation, [8, 2h, 4]>
// CHECK-NEXT: hector.output "grad.Wt" %[[LINEAR_5]] : !hector.weight<ntype, [8, 8]>
// CHECK-NEXT: hector.output "grad.Wn" %[[LINEAR_3]] : !hector.weight<none, [8, 8]>
// CHECK-NEXT: }
hector.layer @linear {
  %x = hector.input "x" : !hector.value<node, [8]>
  %Wr = hector.weight "Wr" glorot : !hector.weight<relation, [8, 2h, 4]>
  %Wt = hector.weight "Wt" glorot : !hector.weight<ntype, [8, 8]>
  %Wn = hector.weight "Wn" glorot : !hector.weight<none, [8, 8]>
  %s = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %z = hector.linear %s, %Wr : !hector.value<src, [8]>, !hector.weight<relation, [8, 2h, 4]> -> !hector.value<edge, [2h, 4]>
  %a = hector.aggregate sum %z by dst : !hector.value<edge, [2h, 4]> -> !hector.value<node, [2h, 4]>
  %t = hector.linear %x, %Wt : !hector.value<node, [8]>, !hector.weight<ntype, [8, 8]> -> !hector.value<node, [8]>
  %u = hector.linear %s, %Wn : !hector.value<src, [8]>, !hector.weight<none, [8, 8]> -> !hector.value<src, [8]>
  %v = hector.aggregate sum %u by src : !hector.value<src, [8]> -> !hector.value<node, [8]>
  hector.output "a" %a : !hector.value<node, [2h, 4]>
  hector.output "t" %t : !hector.value<node, [8]>
  hector.output "v" %v : !hector.value<node, [8]>
}

// weight_matmul (basis decomposition): both operands through weight_matmul_grad.
// CHECK-LABEL: hector.layer @bases attributes {hector.backward = @bases_backward
// CHECK-LABEL: hector.layer @bases_backward attributes {hector.forward = @bases
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.z = hector.input "grad.z" : !hector.value<edge, [8]>
// CHECK-NEXT: %comp = hector.weight "comp" glorot : !hector.weight<relation, [3]>
// CHECK-NEXT: %V = hector.weight "V" glorot : !hector.weight<none, [3, 8, 8]>
// CHECK-NEXT: %[[BASES_0:[0-9]+]] = hector.weight_matmul %comp, %V : !hector.weight<relation, [3]>, !hector.weight<none, [3, 8, 8]> -> !hector.weight<relation, [8, 8]>
// CHECK-NEXT: %[[BASES_1:[0-9]+]] = hector.linear %grad.z, %[[BASES_0]] transposed : !hector.value<edge, [8]>, !hector.weight<relation, [8, 8]> -> !hector.value<edge, [8]>
// CHECK-NEXT: %[[BASES_2:[0-9]+]] = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
// CHECK-NEXT: %[[BASES_3:[0-9]+]] = hector.weight_grad %[[BASES_2]], %grad.z : !hector.value<src, [8]>, !hector.value<edge, [8]> -> !hector.weight<relation, [8, 8]>
// CHECK-NEXT: %[[BASES_4:[0-9]+]] = hector.aggregate sum %[[BASES_1]] by src : !hector.value<edge, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BASES_5:[0-9]+]] = hector.weight_matmul_grad lhs %[[BASES_3]], %V : !hector.weight<relation, [8, 8]>, !hector.weight<none, [3, 8, 8]> -> !hector.weight<relation, [3]>
// CHECK-NEXT: %[[BASES_6:[0-9]+]] = hector.weight_matmul_grad rhs %[[BASES_3]], %comp : !hector.weight<relation, [8, 8]>, !hector.weight<relation, [3]> -> !hector.weight<none, [3, 8, 8]>
// CHECK-NEXT: hector.output "grad.x" %[[BASES_4]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.comp" %[[BASES_5]] : !hector.weight<relation, [3]>
// CHECK-NEXT: hector.output "grad.V" %[[BASES_6]] : !hector.weight<none, [3, 8, 8]>
// CHECK-NEXT: }
hector.layer @bases {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.weight "comp" glorot : !hector.weight<relation, [3]>
  %V = hector.weight "V" glorot : !hector.weight<none, [3, 8, 8]>
  %W = hector.weight_matmul %c, %V : !hector.weight<relation, [3]>, !hector.weight<none, [3, 8, 8]> -> !hector.weight<relation, [8, 8]>
  %s = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %z = hector.linear %s, %W : !hector.value<src, [8]>, !hector.weight<relation, [8, 8]> -> !hector.value<edge, [8]>
  hector.output "z" %z : !hector.value<edge, [8]>
}

// dot: d lhs = dy * rhs, d rhs = dy * lhs, each summed into its operand's rows (relation-sliced
// attention vector: reduce into the weight); the rule reads the input e, nothing is saved.
// CHECK-LABEL: hector.layer @dot attributes {hector.backward = @dot_backward
// CHECK-LABEL: hector.layer @dot_backward attributes {hector.forward = @dot
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [2h, 4]>
// CHECK-NEXT: %e = hector.input "e" : !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %grad.y = hector.input "grad.y" : !hector.value<edge, [2h]>
// CHECK-NEXT: %A = hector.weight "A" glorot : !hector.weight<relation, [2h, 4]>
// CHECK-NEXT: %[[DOT_0:[0-9]+]] = hector.mul %grad.y, %e : !hector.value<edge, [2h]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %[[DOT_1:[0-9]+]] = hector.dst %x : !hector.value<node, [2h, 4]> -> !hector.value<dst, [2h, 4]>
// CHECK-NEXT: %[[DOT_2:[0-9]+]] = hector.mul %grad.y, %[[DOT_1]] : !hector.value<edge, [2h]>, !hector.value<dst, [2h, 4]> -> !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %[[DOT_3:[0-9]+]] = hector.aggregate sum %[[DOT_0]] by dst : !hector.value<edge, [2h, 4]> -> !hector.value<node, [2h, 4]>
// CHECK-NEXT: %[[DOT_4:[0-9]+]] = hector.mul %grad.y, %e : !hector.value<edge, [2h]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %[[DOT_5:[0-9]+]] = hector.slice %A : !hector.weight<relation, [2h, 4]> -> !hector.value<relation, [2h, 4]>
// CHECK-NEXT: %[[DOT_6:[0-9]+]] = hector.mul %grad.y, %[[DOT_5]] : !hector.value<edge, [2h]>, !hector.value<relation, [2h, 4]> -> !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %[[DOT_7:[0-9]+]] = hector.add %[[DOT_2]], %[[DOT_6]] : !hector.value<edge, [2h, 4]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h, 4]>
// CHECK-NEXT: %[[DOT_8:[0-9]+]] = hector.reduce %[[DOT_4]] : !hector.value<edge, [2h, 4]> -> !hector.weight<relation, [2h, 4]>
// CHECK-NEXT: hector.output "grad.x" %[[DOT_3]] : !hector.value<node, [2h, 4]>
// CHECK-NEXT: hector.output "grad.e" %[[DOT_7]] : !hector.value<edge, [2h, 4]>
// CHECK-NEXT: hector.output "grad.A" %[[DOT_8]] : !hector.weight<relation, [2h, 4]>
// CHECK-NEXT: }
hector.layer @dot {
  %x = hector.input "x" : !hector.value<node, [2h, 4]>
  %e = hector.input "e" : !hector.value<edge, [2h, 4]>
  %A = hector.weight "A" glorot : !hector.weight<relation, [2h, 4]>
  %a = hector.slice %A : !hector.weight<relation, [2h, 4]> -> !hector.value<relation, [2h, 4]>
  %s = hector.dot %a, %e : !hector.value<relation, [2h, 4]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h]>
  %d = hector.dst %x : !hector.value<node, [2h, 4]> -> !hector.value<dst, [2h, 4]>
  %t = hector.dot %d, %e : !hector.value<dst, [2h, 4]>, !hector.value<edge, [2h, 4]> -> !hector.value<edge, [2h]>
  %y = hector.add %s, %t : !hector.value<edge, [2h]>, !hector.value<edge, [2h]> -> !hector.value<edge, [2h]>
  hector.output "y" %y : !hector.value<edge, [2h]>
}

// add/sub/mul/div with space and prefix broadcasting: gradients summed over the broadcast rows
// (none, ntype) and trailing dims ([8] -> []); constants get no gradient; the cheap chain is
// recomputed, nothing saved.
// CHECK-LABEL: hector.layer @binary attributes {hector.backward = @binary_backward
// CHECK-LABEL: hector.layer @binary_backward attributes {hector.forward = @binary
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %n = hector.input "n" : !hector.value<node, []>
// CHECK-NEXT: %grad.t = hector.input "grad.t" : !hector.value<node, [8]>
// CHECK-NEXT: %b = hector.weight "b" zeros : !hector.weight<none, [8]>
// CHECK-NEXT: %g = hector.weight "g" ones : !hector.weight<ntype, []>
// CHECK-NEXT: %[[BINARY_0:[0-9]+]] = hector.constant 2.000000e+00 : !hector.value<none, []>
// CHECK-NEXT: %[[BINARY_1:[0-9]+]] = hector.mul %grad.t, %[[BINARY_0]] : !hector.value<node, [8]>, !hector.value<none, []> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_2:[0-9]+]] = hector.div %[[BINARY_1]], %n : !hector.value<node, [8]>, !hector.value<node, []> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_3:[0-9]+]] = hector.slice %g : !hector.weight<ntype, []> -> !hector.value<ntype, []>
// CHECK-NEXT: %[[BINARY_4:[0-9]+]] = hector.slice %b : !hector.weight<none, [8]> -> !hector.value<none, [8]>
// CHECK-NEXT: %[[BINARY_5:[0-9]+]] = hector.add %x, %[[BINARY_4]] : !hector.value<node, [8]>, !hector.value<none, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_6:[0-9]+]] = hector.sub %[[BINARY_5]], %n : !hector.value<node, [8]>, !hector.value<node, []> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_7:[0-9]+]] = hector.mul %[[BINARY_3]], %[[BINARY_6]] : !hector.value<ntype, []>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_8:[0-9]+]] = hector.div %[[BINARY_7]], %n : !hector.value<node, [8]>, !hector.value<node, []> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_9:[0-9]+]] = hector.mul %[[BINARY_2]], %[[BINARY_8]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_10:[0-9]+]] = hector.reduce %[[BINARY_9]] : !hector.value<node, [8]> -> !hector.value<node, []>
// CHECK-NEXT: %[[BINARY_11:[0-9]+]] = hector.neg %[[BINARY_10]] : !hector.value<node, []>
// CHECK-NEXT: %[[BINARY_12:[0-9]+]] = hector.mul %[[BINARY_2]], %[[BINARY_6]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_13:[0-9]+]] = hector.mul %[[BINARY_2]], %[[BINARY_3]] : !hector.value<node, [8]>, !hector.value<ntype, []> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[BINARY_14:[0-9]+]] = hector.reduce %[[BINARY_13]] : !hector.value<node, [8]> -> !hector.value<node, []>
// CHECK-NEXT: %[[BINARY_15:[0-9]+]] = hector.neg %[[BINARY_14]] : !hector.value<node, []>
// CHECK-NEXT: %[[BINARY_16:[0-9]+]] = hector.add %[[BINARY_11]], %[[BINARY_15]] : !hector.value<node, []>, !hector.value<node, []> -> !hector.value<node, []>
// CHECK-NEXT: %[[BINARY_17:[0-9]+]] = hector.reduce %[[BINARY_12]] : !hector.value<node, [8]> -> !hector.weight<ntype, []>
// CHECK-NEXT: %[[BINARY_18:[0-9]+]] = hector.reduce %[[BINARY_13]] : !hector.value<node, [8]> -> !hector.weight<none, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[BINARY_13]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.n" %[[BINARY_16]] : !hector.value<node, []>
// CHECK-NEXT: hector.output "grad.b" %[[BINARY_18]] : !hector.weight<none, [8]>
// CHECK-NEXT: hector.output "grad.g" %[[BINARY_17]] : !hector.weight<ntype, []>
// CHECK-NEXT: }
hector.layer @binary {
  %x = hector.input "x" : !hector.value<node, [8]>
  %n = hector.input "n" : !hector.value<node, []>
  %b = hector.weight "b" zeros : !hector.weight<none, [8]>
  %g = hector.weight "g" ones : !hector.weight<ntype, []>
  %bs = hector.slice %b : !hector.weight<none, [8]> -> !hector.value<none, [8]>
  %gs = hector.slice %g : !hector.weight<ntype, []> -> !hector.value<ntype, []>
  %c = hector.constant 2.0 : !hector.value<none, []>
  %p = hector.add %x, %bs : !hector.value<node, [8]>, !hector.value<none, [8]> -> !hector.value<node, [8]>
  %q = hector.sub %p, %n : !hector.value<node, [8]>, !hector.value<node, []> -> !hector.value<node, [8]>
  %r = hector.mul %gs, %q : !hector.value<ntype, []>, !hector.value<node, [8]> -> !hector.value<node, [8]>
  %s = hector.div %r, %n : !hector.value<node, [8]>, !hector.value<node, []> -> !hector.value<node, [8]>
  %t = hector.mul %s, %c : !hector.value<node, [8]>, !hector.value<none, []> -> !hector.value<node, [8]>
  hector.output "t" %t : !hector.value<node, [8]>
}

// neg/exp/relu/tanh/sigmoid/gelu/leaky_relu: recomputed from x, derivatives from the results
// (exp, tanh, sigmoid) or the inputs (relu, gelu, leaky_relu).
// CHECK-LABEL: hector.layer @unary attributes {hector.backward = @unary_backward
// CHECK-LABEL: hector.layer @unary_backward attributes {hector.forward = @unary
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.g = hector.input "grad.g" : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_0:[0-9]+]] = hector.neg %x : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_1:[0-9]+]] = hector.exp %[[UNARY_0]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_2:[0-9]+]] = hector.relu %[[UNARY_1]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_3:[0-9]+]] = hector.tanh %[[UNARY_2]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_4:[0-9]+]] = hector.sigmoid %[[UNARY_3]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_5:[0-9]+]] = hector.gelu %[[UNARY_4]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_6:[0-9]+]] = hector.leaky_relu_grad %grad.g, %[[UNARY_5]] slope 1.000000e-01 : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_7:[0-9]+]] = hector.gelu_grad %[[UNARY_6]], %[[UNARY_4]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_8:[0-9]+]] = hector.constant 1.000000e+00 : !hector.value<none, []>
// CHECK-NEXT: %[[UNARY_9:[0-9]+]] = hector.sub %[[UNARY_8]], %[[UNARY_4]] : !hector.value<none, []>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_10:[0-9]+]] = hector.mul %[[UNARY_4]], %[[UNARY_9]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_11:[0-9]+]] = hector.mul %[[UNARY_7]], %[[UNARY_10]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_12:[0-9]+]] = hector.mul %[[UNARY_3]], %[[UNARY_3]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_13:[0-9]+]] = hector.constant 1.000000e+00 : !hector.value<none, []>
// CHECK-NEXT: %[[UNARY_14:[0-9]+]] = hector.sub %[[UNARY_13]], %[[UNARY_12]] : !hector.value<none, []>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_15:[0-9]+]] = hector.mul %[[UNARY_11]], %[[UNARY_14]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_16:[0-9]+]] = hector.leaky_relu_grad %[[UNARY_15]], %[[UNARY_1]] slope 0.000000e+00 : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_17:[0-9]+]] = hector.mul %[[UNARY_16]], %[[UNARY_1]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[UNARY_18:[0-9]+]] = hector.neg %[[UNARY_17]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[UNARY_18]] : !hector.value<node, [8]>
// CHECK-NEXT: }
hector.layer @unary {
  %x = hector.input "x" : !hector.value<node, [8]>
  %a = hector.neg %x : !hector.value<node, [8]>
  %b = hector.exp %a : !hector.value<node, [8]>
  %c = hector.relu %b : !hector.value<node, [8]>
  %d = hector.tanh %c : !hector.value<node, [8]>
  %e = hector.sigmoid %d : !hector.value<node, [8]>
  %f = hector.gelu %e : !hector.value<node, [8]>
  %g = hector.leaky_relu %f slope 1.000000e-01 : !hector.value<node, [8]>
  hector.output "g" %g : !hector.value<node, [8]>
}

// softplus: dx = dy * sigmoid(x), from the input.
// CHECK-LABEL: hector.layer @softplus attributes {hector.backward = @softplus_backward
// CHECK-LABEL: hector.layer @softplus_backward attributes {hector.forward = @softplus
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.y = hector.input "grad.y" : !hector.value<node, [8]>
// CHECK-NEXT: %[[SOFTPLUS_0:[0-9]+]] = hector.sigmoid %x : !hector.value<node, [8]>
// CHECK-NEXT: %[[SOFTPLUS_1:[0-9]+]] = hector.mul %grad.y, %[[SOFTPLUS_0]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[SOFTPLUS_1]] : !hector.value<node, [8]>
// CHECK-NEXT: }
hector.layer @softplus {
  %x = hector.input "x" : !hector.value<node, [8]>
  %y = hector.softplus %x : !hector.value<node, [8]>
  hector.output "y" %y : !hector.value<node, [8]>
}

// aggregate mean and max (max recomputes its argmax from the input); gradients summed.
// CHECK-LABEL: hector.layer @reductions attributes {hector.backward = @reductions_backward
// CHECK-LABEL: hector.layer @reductions_backward attributes {hector.forward = @reductions
// CHECK-NEXT: %e = hector.input "e" : !hector.value<edge, [8]>
// CHECK-NEXT: %grad.m = hector.input "grad.m" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.x = hector.input "grad.x" : !hector.value<node, [8]>
// CHECK-NEXT: %[[REDUCTIONS_0:[0-9]+]] = hector.aggregate_grad max %grad.x, %e by src : (!hector.value<node, [8]>, !hector.value<edge, [8]>) -> !hector.value<edge, [8]>
// CHECK-NEXT: %[[REDUCTIONS_1:[0-9]+]] = hector.aggregate_grad mean %grad.m by dst : (!hector.value<node, [8]>) -> !hector.value<dst, [8]>
// CHECK-NEXT: %[[REDUCTIONS_2:[0-9]+]] = hector.add %[[REDUCTIONS_0]], %[[REDUCTIONS_1]] : !hector.value<edge, [8]>, !hector.value<dst, [8]> -> !hector.value<edge, [8]>
// CHECK-NEXT: hector.output "grad.e" %[[REDUCTIONS_2]] : !hector.value<edge, [8]>
// CHECK-NEXT: }
hector.layer @reductions {
  %e = hector.input "e" : !hector.value<edge, [8]>
  %m = hector.aggregate mean %e by dst : !hector.value<edge, [8]> -> !hector.value<node, [8]>
  %x = hector.aggregate max %e by src : !hector.value<edge, [8]> -> !hector.value<node, [8]>
  hector.output "m" %m : !hector.value<node, [8]>
  hector.output "x" %x : !hector.value<node, [8]>
}

// softmax: ds = alpha * (dalpha - dst(sum_dst(alpha * dalpha))); alpha is saved (it is also an
// output: the same value is returned twice).
// CHECK-LABEL: hector.layer @softmax attributes {hector.backward = @softmax_backward
// CHECK: hector.output "saved.0" %{{[0-9]+}} : !hector.value<edge, [2h]>
// CHECK-LABEL: hector.layer @softmax_backward attributes {hector.forward = @softmax
// CHECK-NEXT: %saved.0 = hector.input "saved.0" : !hector.value<edge, [2h]>
// CHECK-NEXT: %grad.a = hector.input "grad.a" : !hector.value<edge, [2h]>
// CHECK-NEXT: %[[SOFTMAX_0:[0-9]+]] = hector.mul %saved.0, %grad.a : !hector.value<edge, [2h]>, !hector.value<edge, [2h]> -> !hector.value<edge, [2h]>
// CHECK-NEXT: %[[SOFTMAX_1:[0-9]+]] = hector.aggregate sum %[[SOFTMAX_0]] by dst : !hector.value<edge, [2h]> -> !hector.value<node, [2h]>
// CHECK-NEXT: %[[SOFTMAX_2:[0-9]+]] = hector.dst %[[SOFTMAX_1]] : !hector.value<node, [2h]> -> !hector.value<dst, [2h]>
// CHECK-NEXT: %[[SOFTMAX_3:[0-9]+]] = hector.sub %grad.a, %[[SOFTMAX_2]] : !hector.value<edge, [2h]>, !hector.value<dst, [2h]> -> !hector.value<edge, [2h]>
// CHECK-NEXT: %[[SOFTMAX_4:[0-9]+]] = hector.mul %saved.0, %[[SOFTMAX_3]] : !hector.value<edge, [2h]>, !hector.value<edge, [2h]> -> !hector.value<edge, [2h]>
// CHECK-NEXT: hector.output "grad.s" %[[SOFTMAX_4]] : !hector.value<edge, [2h]>
// CHECK-NEXT: }
hector.layer @softmax {
  %s = hector.input "s" : !hector.value<edge, [2h]>
  %a = hector.softmax %s : !hector.value<edge, [2h]> -> !hector.value<edge, [2h]>
  hector.output "a" %a : !hector.value<edge, [2h]>
}

// concat -> narrow per operand (the none-space bias summed over nodes); split/merge heads swap.
// CHECK-LABEL: hector.layer @shapes attributes {hector.backward = @shapes_backward
// CHECK-LABEL: hector.layer @shapes_backward attributes {hector.forward = @shapes
// CHECK-NEXT: %grad.m = hector.input "grad.m" : !hector.value<node, [12]>
// CHECK-NEXT: %B = hector.weight "B" zeros : !hector.weight<none, [4]>
// CHECK-NEXT: %[[SHAPES_0:[0-9]+]] = hector.split_heads %grad.m : !hector.value<node, [12]> -> !hector.value<node, [3h, 4]>
// CHECK-NEXT: %[[SHAPES_1:[0-9]+]] = hector.merge_heads %[[SHAPES_0]] : !hector.value<node, [3h, 4]> -> !hector.value<node, [12]>
// CHECK-NEXT: %[[SHAPES_2:[0-9]+]] = hector.narrow %[[SHAPES_1]] offset 0 : !hector.value<node, [12]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[SHAPES_3:[0-9]+]] = hector.narrow %[[SHAPES_1]] offset 8 : !hector.value<node, [12]> -> !hector.value<node, [4]>
// CHECK-NEXT: %[[SHAPES_4:[0-9]+]] = hector.reduce %[[SHAPES_3]] : !hector.value<node, [4]> -> !hector.weight<none, [4]>
// CHECK-NEXT: hector.output "grad.x" %[[SHAPES_2]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.B" %[[SHAPES_4]] : !hector.weight<none, [4]>
// CHECK-NEXT: }
hector.layer @shapes {
  %x = hector.input "x" : !hector.value<node, [8]>
  %B = hector.weight "B" zeros : !hector.weight<none, [4]>
  %b = hector.slice %B : !hector.weight<none, [4]> -> !hector.value<none, [4]>
  %c = hector.concat %x, %b : !hector.value<node, [8]>, !hector.value<none, [4]> -> !hector.value<node, [12]>
  %s = hector.split_heads %c : !hector.value<node, [12]> -> !hector.value<node, [3h, 4]>
  %m = hector.merge_heads %s : !hector.value<node, [3h, 4]> -> !hector.value<node, [12]>
  hector.output "m" %m : !hector.value<node, [12]>
}

// compaction: unique_expand -> sum of the edges of each pair; unique_gather -> sum of each
// node's pairs.
// CHECK-LABEL: hector.layer @compact attributes {hector.backward = @compact_backward
// CHECK-LABEL: hector.layer @compact_backward attributes {hector.forward = @compact
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.h = hector.input "grad.h" : !hector.value<node, [4]>
// CHECK-NEXT: %W = hector.weight "W" glorot : !hector.weight<relation, [8, 4]>
// CHECK-NEXT: %[[COMPACT_0:[0-9]+]] = hector.dst %grad.h : !hector.value<node, [4]> -> !hector.value<dst, [4]>
// CHECK-NEXT: %[[COMPACT_1:[0-9]+]] = hector.reduce %[[COMPACT_0]] : !hector.value<dst, [4]> -> !hector.value<unique_src, [4]>
// CHECK-NEXT: %[[COMPACT_2:[0-9]+]] = hector.linear %[[COMPACT_1]], %W transposed : !hector.value<unique_src, [4]>, !hector.weight<relation, [8, 4]> -> !hector.value<unique_src, [8]>
// CHECK-NEXT: %[[COMPACT_3:[0-9]+]] = hector.unique_gather src %x : !hector.value<node, [8]> -> !hector.value<unique_src, [8]>
// CHECK-NEXT: %[[COMPACT_4:[0-9]+]] = hector.weight_grad %[[COMPACT_3]], %[[COMPACT_1]] : !hector.value<unique_src, [8]>, !hector.value<unique_src, [4]> -> !hector.weight<relation, [8, 4]>
// CHECK-NEXT: %[[COMPACT_5:[0-9]+]] = hector.reduce %[[COMPACT_2]] : !hector.value<unique_src, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[COMPACT_5]] : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.W" %[[COMPACT_4]] : !hector.weight<relation, [8, 4]>
// CHECK-NEXT: }
hector.layer @compact {
  %x = hector.input "x" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 4]>
  %u = hector.unique_gather src %x : !hector.value<node, [8]> -> !hector.value<unique_src, [8]>
  %z = hector.linear %u, %W : !hector.value<unique_src, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<unique_src, [4]>
  %e = hector.unique_expand %z : !hector.value<unique_src, [4]> -> !hector.value<edge, [4]>
  %h = hector.aggregate sum %e by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
  hector.output "h" %h : !hector.value<node, [4]>
}

// a value used twice (mul x, x; an output read by another output): contributions summed.
// CHECK-LABEL: hector.layer @reuse attributes {hector.backward = @reuse_backward
// CHECK-LABEL: hector.layer @reuse_backward attributes {hector.forward = @reuse
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.y = hector.input "grad.y" : !hector.value<node, [8]>
// CHECK-NEXT: %grad.z = hector.input "grad.z" : !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_0:[0-9]+]] = hector.mul %x, %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_1:[0-9]+]] = hector.exp %[[REUSE_0]] : !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_2:[0-9]+]] = hector.mul %grad.z, %[[REUSE_1]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_3:[0-9]+]] = hector.add %grad.y, %[[REUSE_2]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_4:[0-9]+]] = hector.mul %[[REUSE_3]], %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_5:[0-9]+]] = hector.mul %[[REUSE_3]], %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: %[[REUSE_6:[0-9]+]] = hector.add %[[REUSE_4]], %[[REUSE_5]] : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
// CHECK-NEXT: hector.output "grad.x" %[[REUSE_6]] : !hector.value<node, [8]>
// CHECK-NEXT: }
hector.layer @reuse {
  %x = hector.input "x" : !hector.value<node, [8]>
  %y = hector.mul %x, %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
  %z = hector.exp %y : !hector.value<node, [8]>
  hector.output "y" %y : !hector.value<node, [8]>
  hector.output "z" %z : !hector.value<node, [8]>
}

