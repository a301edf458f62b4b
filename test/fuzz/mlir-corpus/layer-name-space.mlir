module {
  hector.layer @"a b" attributes {params = {in = 16 : i64, out = 16 : i64}} {
    %x = hector.input "x" : !hector.value<node, [16]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %W = hector.weight "W" glorot : !hector.weight<relation, [16, 16]>
    %root = hector.weight "root" glorot : !hector.weight<none, [16, 16]>
    %bias = hector.weight "bias" zeros : !hector.weight<none, [16]>
    %0 = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
    %1 = hector.linear %0, %W : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
    %2 = hector.mul %norm, %1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
    %3 = hector.aggregate sum %2 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
    %4 = hector.linear %x, %root : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
    %5 = hector.add %3, %4 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
    %6 = hector.slice %bias : !hector.weight<none, [16]> -> !hector.value<none, [16]>
    %7 = hector.add %5, %6 : !hector.value<node, [16]>, !hector.value<none, [16]> -> !hector.value<node, [16]>
    hector.output "h" %7 : !hector.value<node, [16]>
  }
}

