// The backward layers of the examples at the kernel level: `hector-autodiff` then the hectorc
// pipeline. Input gradients are GEMMs with `transpose_b`; weight gradients are top-level
// `hector.weight_grad`s (the GEMM template's outer-product form) whose src/dst gathers stay their
// own operands; reductions into weights are top-level `hector.reduce`s; row-local reductions
// (summing trailing dims) fuse into traversals; gradients summed into source nodes are node
// traversals by `src`.
// RUN: hectorc %examples/rgcn.hector --emit=hector | hector-opt --hector-autodiff --hector-pipeline | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %examples/rgcn.hector --emit=hector | hector-opt --hector-autodiff --hector-pipeline | hector-opt | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %examples/rgat.hector --emit=hector | hector-opt --hector-autodiff --hector-pipeline | FileCheck %s --check-prefix=RGAT
// RUN: hectorc %examples/hgt.hector --emit=hector | hector-opt --hector-autodiff --hector-pipeline | FileCheck %s --check-prefix=HGT
// RUN: hectorc %examples/hgt.hector --emit=hector | hector-opt --hector-autodiff --hector-pipeline | hector-opt | FileCheck %s --check-prefix=HGT

// RGCN-LABEL: hector.layer @rgcn attributes {hector.backward = @rgcn_backward
// RGCN: %[[MSG:[0-9]+]] = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
// RGCN: hector.output "saved.0" %[[MSG]] : !hector.value<edge, [16]>

// RGCN-LABEL: hector.layer @rgcn_backward attributes {hector.forward = @rgcn
// RGCN: %bias = hector.weight "bias" zeros : !hector.weight<none, [16]>
// RGCN-NEXT: %[[DBIAS:[0-9]+]] = hector.reduce %grad.h : !hector.value<node, [16]> -> !hector.weight<none, [16]>
// RGCN-NEXT: %[[DXROOT:[0-9]+]] = hector.gemm %grad.h, %root segment none gather none scatter store transpose_b : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
// RGCN-NEXT: %[[DROOT:[0-9]+]] = hector.weight_grad %x, %grad.h : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.weight<none, [16, 16]>
// RGCN-NEXT: %[[E:[0-9]+]]:2 = hector.traversal edge (%[[G:arg[0-9]+]] = %grad.h, %[[S:arg[0-9]+]] = %saved.0, %[[N:arg[0-9]+]] = %norm) : (!hector.value<node, [16]>, !hector.value<edge, [16]>, !hector.value<edge, []>) -> (!hector.value<edge, []>, !hector.value<edge, [16]>) {
// RGCN-NEXT: %[[GD:[0-9]+]] = hector.dst %[[G]] : !hector.value<node, [16]> -> !hector.value<dst, [16]>
// RGCN-NEXT: %[[P:[0-9]+]] = hector.mul %[[GD]], %[[S]] : !hector.value<dst, [16]>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
// RGCN-NEXT: %[[DNORM:[0-9]+]] = hector.reduce %[[P]] : !hector.value<edge, [16]> -> !hector.value<edge, []>
// RGCN-NEXT: %[[DM:[0-9]+]] = hector.mul %[[GD]], %[[N]] : !hector.value<dst, [16]>, !hector.value<edge, []> -> !hector.value<edge, [16]>
// RGCN-NEXT: hector.yield %[[DNORM]], %[[DM]] : !hector.value<edge, []>, !hector.value<edge, [16]>
// RGCN-NEXT: }
// RGCN-NEXT: %[[DXSRC:[0-9]+]] = hector.gemm %[[E]]#1, %W segment relation gather none scatter store transpose_b : !hector.value<edge, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
// RGCN-NEXT: %[[XS:[0-9]+]] = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
// RGCN-NEXT: %[[DW:[0-9]+]] = hector.weight_grad %[[XS]], %[[E]]#1 : !hector.value<src, [16]>, !hector.value<edge, [16]> -> !hector.weight<relation, [16, 16]>
// RGCN-NEXT: %[[DX:[0-9]+]] = hector.traversal node (%[[A0:arg[0-9]+]] = %[[DXSRC]], %[[A1:arg[0-9]+]] = %[[DXROOT]]) : (!hector.value<edge, [16]>, !hector.value<node, [16]>) -> !hector.value<node, [16]> {
// RGCN-NEXT: %[[AGG:[0-9]+]] = hector.aggregate sum %[[A0]] by src : !hector.value<edge, [16]> -> !hector.value<node, [16]>
// RGCN-NEXT: %[[SUM:[0-9]+]] = hector.add %[[A1]], %[[AGG]] : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
// RGCN-NEXT: hector.yield %[[SUM]] : !hector.value<node, [16]>
// RGCN-NEXT: }
// RGCN-NEXT: hector.output "grad.x" %[[DX]] : !hector.value<node, [16]>
// RGCN-NEXT: hector.output "grad.norm" %[[E]]#0 : !hector.value<edge, []>
// RGCN-NEXT: hector.output "grad.W" %[[DW]] : !hector.weight<relation, [16, 16]>
// RGCN-NEXT: hector.output "grad.root" %[[DROOT]] : !hector.weight<none, [16, 16]>
// RGCN-NEXT: hector.output "grad.bias" %[[DBIAS]] : !hector.weight<none, [16]>
// RGCN-NEXT: }

// RGAT-LABEL: hector.layer @rgat_backward
// RGAT: hector.gemm %{{[0-9]+}}#1, %W segment relation gather none scatter store transpose_b : !hector.value<edge, [4h, 16]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [64]>
// RGAT: %[[XD:[0-9]+]] = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
// RGAT-NEXT: %[[DW1:[0-9]+]] = hector.weight_grad %[[XD]], %{{[0-9]+}}#1 : !hector.value<dst, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
// RGAT-NEXT: %[[DADST:[0-9]+]] = hector.reduce %{{[0-9]+}}#0 : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
// RGAT: %[[DASRC:[0-9]+]] = hector.reduce %{{[0-9]+}}#0 : !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16]>
// RGAT: %[[XS:[0-9]+]] = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
// RGAT-NEXT: %[[DW2:[0-9]+]] = hector.weight_grad %[[XS]], %{{[0-9]+}}#1 : !hector.value<src, [64]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [64, 4h, 16]>
// RGAT-NEXT: %[[DW:[0-9]+]] = hector.weight_add %[[DW1]], %[[DW2]] : !hector.weight<relation, [64, 4h, 16]>
// RGAT: hector.aggregate sum %{{arg[0-9]+}} by src : !hector.value<edge, [64]> -> !hector.value<node, [64]>
// RGAT: hector.aggregate sum %{{arg[0-9]+}} by dst : !hector.value<edge, [64]> -> !hector.value<node, [64]>
// RGAT: hector.output "grad.W" %[[DW]] : !hector.weight<relation, [64, 4h, 16]>
// RGAT-NEXT: hector.output "grad.a_src" %[[DASRC]] : !hector.weight<relation, [4h, 16]>
// RGAT-NEXT: hector.output "grad.a_dst" %[[DADST]] : !hector.weight<relation, [4h, 16]>

// The gradient of HGT's gate is per node type: node rows reduced into `ntype` rows, then the
// per-type elementwise chain rule on T rows at the top level, then into the weight.
// HGT-LABEL: hector.layer @hgt_backward
// HGT: %[[R0:[0-9]+]] = hector.reduce %{{[0-9]+}} : !hector.value<node, [64]> -> !hector.value<ntype, []>
// HGT: %[[SIG:[0-9]+]] = hector.sigmoid %{{[0-9]+}} : !hector.value<ntype, []>
// HGT: %[[NEG:[0-9]+]] = hector.neg %[[R0]] : !hector.value<ntype, []>
// HGT: %[[R1:[0-9]+]] = hector.reduce %{{[0-9]+}} : !hector.value<node, [64]> -> !hector.value<ntype, []>
// HGT: %[[DSKIP:[0-9]+]] = hector.reduce %{{[0-9]+}} : !hector.value<ntype, []> -> !hector.weight<ntype, []>
// HGT: hector.traversal node (%{{arg[0-9]+}} = %grad.h, %{{arg[0-9]+}} = %[[SIG]]) : (!hector.value<node, [64]>, !hector.value<ntype, []>) -> !hector.value<node, [64]>
// HGT: hector.gemm %{{[0-9]+}}, %A segment ntype gather none scatter store transpose_b : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
// HGT: hector.weight_grad %{{[0-9]+}}, %{{[0-9]+}} : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.weight<ntype, [64, 64]>
// HGT: %[[VS:[0-9]+]] = hector.src %saved.2 : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
// HGT-NEXT: hector.weight_grad %[[VS]], %{{[0-9#]+}} : !hector.value<src, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.weight<relation, [4h, 16, 16]>
// HGT: hector.reduce %{{[0-9]+}} : !hector.value<edge, [4h]> -> !hector.weight<relation, [4h]>
// HGT: hector.weight_grad %x, %{{[0-9]+}}#1 : !hector.value<node, [64]>, !hector.value<node, [4h, 16]> -> !hector.weight<ntype, [64, 4h, 16]>
// HGT: hector.output "grad.skip" %[[DSKIP]] : !hector.weight<ntype, []>

// RGCN-NOT: hector.linear
// RGAT-NOT: hector.linear
// HGT-NOT: hector.linear
