// RUN: hector-opt %s --hector-autodiff | FileCheck %s
// RUN: hector-opt %s --hector-autodiff | hector-opt | FileCheck %s
// RUN: hectorc %examples/rgat.hector | hector-opt --hector-reorder-linear --hector-autodiff | FileCheck %s --check-prefix=RGAT

// The ops the optimisation passes introduce into forward layers: hector.weight_dot (linear
// reordering of an attention dot product) and hector.reduce (reordering of a sum aggregation
// through unique pairs).

// weight_dot: dA = weight_dot_grad lhs dC, B; dB = weight_dot_grad rhs dC, A, summed over the
// relations for the unsliced B.
// CHECK-LABEL: hector.layer @weight_dot attributes {hector.backward = @weight_dot_backward
// CHECK-LABEL: hector.layer @weight_dot_backward attributes {hector.forward = @weight_dot
// CHECK-NEXT: %x = hector.input "x" : !hector.value<node, [64]>
// CHECK-NEXT: %grad.h = hector.input "grad.h" : !hector.value<node, [4h]>
// CHECK-NEXT: %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
// CHECK-NEXT: %a = hector.weight "a" glorot : !hector.weight<none, [4h, 16]>
// CHECK-NEXT: %[[WD_0:[0-9]+]] = hector.dst %grad.h : !hector.value<node, [4h]> -> !hector.value<dst, [4h]>
// CHECK-NEXT: %[[WD_1:[0-9]+]] = hector.weight_dot %W, %a : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<none, [4h, 16]> -> !hector.weight<relation, [64, 4h]>
// CHECK-NEXT: %[[WD_2:[0-9]+]] = hector.linear %[[WD_0]], %[[WD_1]] transposed : !hector.value<dst, [4h]>, !hector.weight<relation, [64, 4h]> -> !hector.value<edge, [64]>
// CHECK-NEXT: %[[WD_3:[0-9]+]] = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
// CHECK-NEXT: %[[WD_4:[0-9]+]] = hector.weight_grad %[[WD_3]], %[[WD_0]] : !hector.value<src, [64]>, !hector.value<dst, [4h]> -> !hector.weight<relation, [64, 4h]>
// CHECK-NEXT: %[[WD_5:[0-9]+]] = hector.aggregate sum %[[WD_2]] by src : !hector.value<edge, [64]> -> !hector.value<node, [64]>
// CHECK-NEXT: %[[WD_6:[0-9]+]] = hector.weight_dot_grad lhs %[[WD_4]], %a : !hector.weight<relation, [64, 4h]>, !hector.weight<none, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
// CHECK-NEXT: %[[WD_7:[0-9]+]] = hector.weight_dot_grad rhs %[[WD_4]], %W : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.weight<none, [4h, 16]>
// CHECK-NEXT: hector.output "grad.x" %[[WD_5]] : !hector.value<node, [64]>
// CHECK-NEXT: hector.output "grad.W" %[[WD_6]] : !hector.weight<relation, [64, 4h, 16]>
// CHECK-NEXT: hector.output "grad.a" %[[WD_7]] : !hector.weight<none, [4h, 16]>
// CHECK-NEXT: }
hector.layer @weight_dot {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  %a = hector.weight "a" glorot : !hector.weight<none, [4h, 16]>
  %P = hector.weight_dot %W, %a : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<none, [4h, 16]> -> !hector.weight<relation, [64, 4h]>
  %s = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
  %l = hector.linear %s, %P : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h]> -> !hector.value<edge, [4h]>
  %h = hector.aggregate sum %l by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
  hector.output "h" %h : !hector.value<node, [4h]>
}

// reduce in a forward layer: edges summed into unique dst pairs read back by unique_expand;
// unique dst pairs summed into nodes read back by unique_gather dst.
// CHECK-LABEL: hector.layer @reduce attributes {hector.backward = @reduce_backward
// CHECK: hector.output "h" %{{[0-9]+}} : !hector.value<node, [8]>
// CHECK-NEXT: hector.output "saved.0" %{{[0-9]+}} : !hector.value<unique_dst, [16]>
// CHECK-LABEL: hector.layer @reduce_backward attributes {hector.forward = @reduce
// CHECK-NEXT: %saved.0 = hector.input "saved.0" : !hector.value<unique_dst, [16]>
// CHECK-NEXT: %grad.h = hector.input "grad.h" : !hector.value<node, [8]>
// CHECK-NEXT: %W = hector.weight "W" glorot : !hector.weight<relation, [16, 8]>
// CHECK-NEXT: %[[RD_0:[0-9]+]] = hector.unique_gather dst %grad.h : !hector.value<node, [8]> -> !hector.value<unique_dst, [8]>
// CHECK-NEXT: %[[RD_1:[0-9]+]] = hector.linear %[[RD_0]], %W transposed : !hector.value<unique_dst, [8]>, !hector.weight<relation, [16, 8]> -> !hector.value<unique_dst, [16]>
// CHECK-NEXT: %[[RD_2:[0-9]+]] = hector.weight_grad %saved.0, %[[RD_0]] : !hector.value<unique_dst, [16]>, !hector.value<unique_dst, [8]> -> !hector.weight<relation, [16, 8]>
// CHECK-NEXT: %[[RD_3:[0-9]+]] = hector.unique_expand %[[RD_1]] : !hector.value<unique_dst, [16]> -> !hector.value<edge, [16]>
// CHECK-NEXT: %[[RD_4:[0-9]+]] = hector.aggregate sum %[[RD_3]] by src : !hector.value<edge, [16]> -> !hector.value<node, [16]>
// CHECK-NEXT: hector.output "grad.x" %[[RD_4]] : !hector.value<node, [16]>
// CHECK-NEXT: hector.output "grad.W" %[[RD_2]] : !hector.weight<relation, [16, 8]>
// CHECK-NEXT: }
hector.layer @reduce {
  %x = hector.input "x" : !hector.value<node, [16]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [16, 8]>
  %s = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
  %u = hector.reduce %s : !hector.value<src, [16]> -> !hector.value<unique_dst, [16]>
  %p = hector.linear %u, %W : !hector.value<unique_dst, [16]>, !hector.weight<relation, [16, 8]> -> !hector.value<unique_dst, [8]>
  %h = hector.reduce %p : !hector.value<unique_dst, [8]> -> !hector.value<node, [8]>
  hector.output "h" %h : !hector.value<node, [8]>
}

// RGAT after linear reordering: the attention vectors reach the layer through weight_dot, and
// their gradients (and W's, which also has a path through weight_dot) are outputs.
// RGAT-LABEL: hector.layer @rgat_backward
// RGAT: hector.weight_dot_grad lhs %{{[0-9]+}}, %a_dst : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
// RGAT: hector.weight_dot_grad rhs %{{[0-9]+}}, %W : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.weight<relation, [4h, 16]>
// RGAT: hector.output "grad.x" %{{[0-9]+}} : !hector.value<node, [64]>
// RGAT-NEXT: hector.output "grad.W" %{{[0-9]+}} : !hector.weight<relation, [64, 4h, 16]>
// RGAT-NEXT: hector.output "grad.a_src" %{{[0-9]+}} : !hector.weight<relation, [4h, 16]>
// RGAT-NEXT: hector.output "grad.a_dst" %{{[0-9]+}} : !hector.weight<relation, [4h, 16]>
