module {
  hector.layer @hgt attributes {params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, out = 64 : i64}} {
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
    %0 = hector.linear %x, %Wk : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %1 = hector.slice %bk : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %2 = hector.add %0, %1 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %3 = hector.linear %x, %Wq : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %4 = hector.slice %bq : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %5 = hector.add %3, %4 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %6 = hector.linear %x, %Wv : !hector.value<node, [64]>, !hector.weight<ntype, [64, 4h, 16]> -> !hector.value<node, [4h, 16]>
    %7 = hector.slice %bv : !hector.weight<ntype, [4h, 16]> -> !hector.value<ntype, [4h, 16]>
    %8 = hector.add %6, %7 : !hector.value<node, [4h, 16]>, !hector.value<ntype, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %9 = hector.src %2 : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
    %10 = hector.linear %9, %W_att : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %11 = hector.dst %5 : !hector.value<node, [4h, 16]> -> !hector.value<dst, [4h, 16]>
    %12 = hector.dot %10, %11 : !hector.value<edge, [4h, 16]>, !hector.value<dst, [4h, 16]> -> !hector.value<edge, [4h]>
    %13 = hector.slice %mu : !hector.weight<relation, [4h]> -> !hector.value<relation, [4h]>
    %14 = hector.mul %12, %13 : !hector.value<edge, [4h]>, !hector.value<relation, [4h]> -> !hector.value<edge, [4h]>
    %15 = hector.constant 4.000000e+00 : !hector.value<none, []>
    %16 = hector.div %14, %15 : !hector.value<edge, [4h]>, !hector.value<none, []> -> !hector.value<edge, [4h]>
    %17 = hector.softmax %16 : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    %18 = hector.src %8 : !hector.value<node, [4h, 16]> -> !hector.value<src, [4h, 16]>
    %19 = hector.linear %18, %W_msg : !hector.value<src, [4h, 16]>, !hector.weight<relation, [4h, 16, 16]> -> !hector.value<edge, [4h, 16]>
    %20 = hector.mul %17, %19 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
    %21 = hector.aggregate sum %20 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %22 = hector.merge_heads %21 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
    %23 = hector.gelu %22 : !hector.value<node, [64]>
    %24 = hector.linear %23, %A : !hector.value<node, [64]>, !hector.weight<ntype, [64, 64]> -> !hector.value<node, [64]>
    %25 = hector.slice %bA : !hector.weight<ntype, [64]> -> !hector.value<ntype, [64]>
    %26 = hector.add %24, %25 : !hector.value<node, [64]>, !hector.value<ntype, [64]> -> !hector.value<node, [64]>
    %27 = hector.slice %skip : !hector.weight<ntype, []> -> !hector.value<ntype, []>
    %28 = hector.sigmoid %27 : !hector.value<ntype, []>
    %29 = hector.mul %28, %26 : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
    %30 = hector.sigmoid %27 : !hector.value<ntype, []>
    %31 = hector.constant 1.000000e+00 : !hector.value<none, []>
    %32 = hector.sub %31, %30 : !hector.value<none, []>, !hector.value<ntype, []> -> !hector.value<ntype, []>
    %33 = hector.mul %32, %x : !hector.value<ntype, []>, !hector.value<node, [64]> -> !hector.value<node, [64]>
    %34 = hector.add %29, %33 : !hector.value<node, [64]>, !hector.value<node, [64]> -> !hector.value<node, [64]>
    hector.output "h" %34 : !hector.value<node, [64]>
  }
}

