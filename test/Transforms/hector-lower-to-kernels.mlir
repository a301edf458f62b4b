// The kernel-level IR of the examples: which values are materialised (results of top-level
// ops) and how the compute ops are grouped into GEMM and traversal instances.
// RUN: hectorc %examples/rgcn.hector | hector-opt --pass-pipeline='builtin.module(hector.layer(hector-decompose-softmax,hector-lower-to-kernels))' | FileCheck %s --check-prefix=RGCN
// RUN: hectorc %examples/rgat.hector --emit=lowered --no-backward --no-reorder --no-compact | FileCheck %s --check-prefix=RGAT
// RUN: hectorc %examples/hgt.hector --emit=lowered --no-backward --no-reorder --no-compact | FileCheck %s --check-prefix=HGT
// RUN: hectorc %examples/rgat.hector | hector-opt --hector-pipeline | FileCheck %s --check-prefix=RGAT

// RGCN-LABEL: hector.layer @rgcn attributes {{.*}}params = {in = 16 : i64, out = 16 : i64}} {
// RGCN: %{{[0-9#]+}} = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
// RGCN: %{{[0-9#]+}} = hector.gemm %x, %root segment none gather none scatter store : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
// RGCN: %{{[0-9#]+}} = hector.slice %bias : !hector.weight<none, [16]> -> !hector.value<none, [16]>
// RGCN: %{{[0-9#]+}} = hector.traversal node (%{{arg[0-9]+}} = %norm, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<edge, []>, !hector.value<edge, [16]>, !hector.value<node, [16]>, !hector.value<none, [16]>) -> !hector.value<node, [16]> {
// RGCN: %{{[0-9#]+}} = hector.aggregate sum %{{[0-9#]+}} by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
// RGCN: hector.output "h" %{{[0-9#]+}} : !hector.value<node, [16]>

// RGAT-LABEL: hector.layer @rgat attributes {{.*}}params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
// RGAT: %{{[0-9#]+}} = hector.gemm %x, %W segment relation gather src scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
// RGAT: %{{[0-9#]+}} = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
// RGAT: %{{[0-9#]+}} = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
// RGAT: %{{[0-9#]+}} = hector.gemm %x, %W segment relation gather dst scatter store : !hector.value<node, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
// RGAT: %{{[0-9#]+}} = hector.traversal edge (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]>) -> !hector.value<edge, [4h]> {
// RGAT: %{{[0-9#]+}} = hector.traversal node (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [64]> {
// RGAT: %{{[0-9#]+}} = hector.aggregate max %{{arg[0-9]+}} by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// RGAT: %{{[0-9#]+}} = hector.aggregate sum %{{[0-9#]+}} by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// RGAT: %{{[0-9#]+}} = hector.aggregate sum %{{[0-9#]+}} by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
// RGAT: hector.output "h" %{{[0-9#]+}} : !hector.value<node, [64]>

// HGT-LABEL: hector.layer @hgt attributes {{.*}}params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
// HGT: %{{[0-9#]+}} = hector.gemm %x, %Wk segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.gemm %x, %Wq segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.gemm %x, %Wv segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
// HGT: %{{[0-9#]+}}:2 = hector.traversal node (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>) -> (!hector.value<node, [4h, 16]>, !hector.value<node, [4h, 16]>) {
// HGT: %{{[0-9#]+}} = hector.gemm %{{[0-9#]+}}, %W_att segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
// HGT: %{{[0-9#]+}} = hector.gemm %{{[0-9#]+}}, %W_msg segment relation gather src scatter store : !hector.value<node, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.traversal edge (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]>, !hector.value<edge, [4h, 16]>, !hector.value<relation, [4h]>) -> !hector.value<edge, [4h]> {
// HGT: %{{[0-9#]+}} = hector.traversal node (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}) : (!hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]>) -> !hector.value<node, [64]> {
// HGT: %{{[0-9#]+}} = hector.aggregate max %{{arg[0-9]+}} by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// HGT: %{{[0-9#]+}} = hector.aggregate sum %{{[0-9#]+}} by dst : !hector.value<edge, [4h]> -> !hector.value<node, [4h]>
// HGT: %{{[0-9#]+}} = hector.aggregate sum %{{[0-9#]+}} by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
// HGT: %{{[0-9#]+}} = hector.gemm %{{[0-9#]+}}, %A segment ntype gather none scatter store : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
// HGT: %{{[0-9#]+}} = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
// HGT: %{{[0-9#]+}} = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
// HGT: %{{[0-9#]+}} = hector.traversal node (%{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %{{[0-9#]+}}, %{{arg[0-9]+}} = %x) : (!hector.value<ntype, []>, !hector.value<node, [64]>, !hector.value<ntype, [64]>, !hector.value<node, [64]>) -> !hector.value<node, [64]> {
// HGT: hector.output "h" %{{[0-9#]+}} : !hector.value<node, [64]>

// RGAT-NOT: hector.linear
// RGAT-NOT: hector.softmax
// HGT-NOT: hector.linear
