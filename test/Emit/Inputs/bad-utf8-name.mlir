module {
  hector.layer @rgcn attributes {params = {in = 4 : i64, out = 3 : i64}} {
    %x = hector.input "\FFx" : !hector.value<node, [4]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %W = hector.weight "W" glorot : !hector.weight<relation, [4, 3]>
    %root = hector.weight "root" glorot : !hector.weight<none, [4, 3]>
    %bias = hector.weight "bias" zeros : !hector.weight<none, [3]>
    %0 = hector.src %x : !hector.value<node, [4]> -> !hector.value<src, [4]>
    %1 = hector.linear %0, %W : !hector.value<src, [4]>, !hector.weight<relation, [4, 3]> -> !hector.value<edge, [3]>
    %2 = hector.mul %norm, %1 : !hector.value<edge, []>, !hector.value<edge, [3]> -> !hector.value<edge, [3]>
    %3 = hector.aggregate sum %2 by dst : !hector.value<edge, [3]> -> !hector.value<node, [3]>
    %4 = hector.linear %x, %root : !hector.value<node, [4]>, !hector.weight<none, [4, 3]> -> !hector.value<node, [3]>
    %5 = hector.add %3, %4 : !hector.value<node, [3]>, !hector.value<node, [3]> -> !hector.value<node, [3]>
    %6 = hector.slice %bias : !hector.weight<none, [3]> -> !hector.value<none, [3]>
    %7 = hector.add %5, %6 : !hector.value<node, [3]>, !hector.value<none, [3]> -> !hector.value<node, [3]>
    hector.output "h" %7 : !hector.value<node, [3]>
  }
}

