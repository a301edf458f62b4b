// GEMMs that write into one buffer under --hector-lower-to-kernels: the sum of a GEMM's rows of
// unique pairs into their nodes becomes the GEMM's accumulate_dst / accumulate_src scatter, and
// the sum of two GEMMs that nothing else reads becomes one GEMM `plus` the other (the product
// added into the other's buffer). Where a GEMM has another reader, or the sum broadcasts, the
// addition stays a traversal.
// RUN: hector-opt --pass-pipeline='builtin.module(hector.layer(hector-lower-to-kernels))' %s | FileCheck %s
// RUN: hectorc -x mlir --emit=cpp --no-backward --no-reorder --no-compact %s | FileCheck %s --check-prefix=CPP

// RGCN reordered: sum over relations of W_r (pair sums), plus the root term, plus the bias.
// CHECK-LABEL: hector.layer @reordered
// CHECK:      %[[P:[0-9]+]] = hector.traversal node
// CHECK:      %[[S:[0-9]+]] = hector.gemm %[[P]], %W segment relation gather none scatter accumulate_dst : !hector.value<unique_dst, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<node, [4]>
// CHECK-NEXT: %[[T:[0-9]+]] = hector.gemm %x, %root segment none gather none scatter store plus %[[S]] : !hector.value<node, [4]> : !hector.value<node, [8]>, !hector.weight<none, [8, 4]> -> !hector.value<node, [4]>
// CHECK-NOT:  hector.reduce
// CHECK:      hector.traversal node (%{{arg[0-9]+}} = %[[T]], %{{arg[0-9]+}} = %{{[0-9]+}})
// CHECK-NEXT:   hector.add
// CHECK-NEXT:   hector.yield
// The sum is zero-initialised, then the root product is added into its buffer (no new tensor).
// CPP-LABEL: // reordered_k1_gemm_relation_gnone_saccumulate_dst_h1_k8_n4
// CPP:       p.scatter = g.uniqueDst;
// CPP-NEXT:  return p;
// CPP:       segmentedGemm<T, ::hector::tmpl::BOp::kIdentity, ::hector::tmpl::Scatter::kAccumulateIndexPerSegment>
// CPP-LABEL: // reordered_k2_gemm_none_gnone_sstore_acc_h1_k8_n4
// CPP:       segmentedGemm<T, ::hector::tmpl::BOp::kIdentity, ::hector::tmpl::Scatter::kAccumulate>
// CPP:       t1_0 = ::hector::emit::newZeros(
// CPP:       t2_0 = t1_0;
hector.layer @reordered {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 4]>
  %root = hector.weight "root" glorot : !hector.weight<none, [8, 4]>
  %bias = hector.weight "bias" zeros : !hector.weight<none, [4]>
  %0 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %1 = hector.mul %c, %0 : !hector.value<edge, []>, !hector.value<src, [8]> -> !hector.value<edge, [8]>
  %2 = hector.reduce %1 : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
  %3 = hector.linear %2, %W : !hector.value<unique_dst, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<unique_dst, [4]>
  %4 = hector.reduce %3 : !hector.value<unique_dst, [4]> -> !hector.value<node, [4]>
  %5 = hector.linear %x, %root : !hector.value<node, [8]>, !hector.weight<none, [8, 4]> -> !hector.value<node, [4]>
  %6 = hector.add %4, %5 : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
  %7 = hector.slice %bias : !hector.weight<none, [4]> -> !hector.value<none, [4]>
  %8 = hector.add %6, %7 : !hector.value<node, [4]>, !hector.value<none, [4]> -> !hector.value<node, [4]>
  hector.output "h" %8 : !hector.value<node, [4]>
}

// Source pairs go into their source nodes.
// CHECK-LABEL: hector.layer @source_pairs
// CHECK:      hector.gemm %{{[0-9]+}}, %W segment relation gather none scatter accumulate_src : !hector.value<unique_src, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<node, [4]>
// CHECK-NOT:  hector.reduce
hector.layer @source_pairs {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 4]>
  %0 = hector.dst %x : !hector.value<node, [8]> -> !hector.value<dst, [8]>
  %1 = hector.mul %c, %0 : !hector.value<edge, []>, !hector.value<dst, [8]> -> !hector.value<edge, [8]>
  %2 = hector.reduce %1 : !hector.value<edge, [8]> -> !hector.value<unique_src, [8]>
  %3 = hector.linear %2, %W : !hector.value<unique_src, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<unique_src, [4]>
  %4 = hector.reduce %3 : !hector.value<unique_src, [4]> -> !hector.value<node, [4]>
  hector.output "h" %4 : !hector.value<node, [4]>
}

// The products have another reader: they stay stored, and so does their sum's reduce; the root
// product is read twice: no accumulator.
// CHECK-LABEL: hector.layer @other_readers
// CHECK:      hector.gemm %{{[0-9]+}}, %W segment relation gather none scatter store
// CHECK:      hector.reduce %{{[0-9]+}} : !hector.value<unique_dst, [4]> -> !hector.value<node, [4]>
// CHECK-NOT:  plus
// CHECK:      hector.output "q"
hector.layer @other_readers {
  %x = hector.input "x" : !hector.value<node, [8]>
  %c = hector.input "c" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<relation, [8, 4]>
  %root = hector.weight "root" glorot : !hector.weight<none, [8, 4]>
  %0 = hector.src %x : !hector.value<node, [8]> -> !hector.value<src, [8]>
  %1 = hector.mul %c, %0 : !hector.value<edge, []>, !hector.value<src, [8]> -> !hector.value<edge, [8]>
  %2 = hector.reduce %1 : !hector.value<edge, [8]> -> !hector.value<unique_dst, [8]>
  %3 = hector.linear %2, %W : !hector.value<unique_dst, [8]>, !hector.weight<relation, [8, 4]> -> !hector.value<unique_dst, [4]>
  %4 = hector.reduce %3 : !hector.value<unique_dst, [4]> -> !hector.value<node, [4]>
  %5 = hector.linear %x, %root : !hector.value<node, [8]>, !hector.weight<none, [8, 4]> -> !hector.value<node, [4]>
  %6 = hector.add %4, %5 : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
  %7 = hector.mul %6, %5 : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
  %8 = hector.exp %3 : !hector.value<unique_dst, [4]>
  %9 = hector.reduce %8 : !hector.value<unique_dst, [4]> -> !hector.value<node, [4]>
  hector.output "h" %7 : !hector.value<node, [4]>
  hector.output "q" %9 : !hector.value<node, [4]>
}
