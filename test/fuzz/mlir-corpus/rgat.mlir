module {
  hector.layer @rgat attributes {params = {H = 4 : i64, d = 16 : i64, in = 64 : i64, slope = 2.000000e-01 : f64}} {
    %x = hector.input "x" : !hector.value<node, [64]>
    %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
    %a_src = hector.weight "a_src" glorot : !hector.weight<relation, [4h, 16]>
    %a_dst = hector.weight "a_dst" glorot : !hector.weight<relation, [4h, 16]>
    %0 = hector.src %x : !hector.value<node, [64]> -> !hector.value<src, [64]>
    %1 = hector.linear %0, %W : !hector.value<src, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %2 = hector.slice %a_src : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %3 = hector.dot %2, %1 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
    %4 = hector.slice %a_dst : !hector.weight<relation, [4h, 16]> -> !hector.value<relation, [4h, 16]>
    %5 = hector.dst %x : !hector.value<node, [64]> -> !hector.value<dst, [64]>
    %6 = hector.linear %5, %W : !hector.value<dst, [64]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.value<edge, [4h, 16]>
    %7 = hector.dot %4, %6 : !hector.value<relation, [4h, 16]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h]>
    %8 = hector.add %3, %7 : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    %9 = hector.leaky_relu %8 slope 2.000000e-01 : !hector.value<edge, [4h]>
    %10 = hector.softmax %9 : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    %11 = hector.mul %10, %1 : !hector.value<edge, [4h]>, !hector.value<edge, [4h, 16]> -> !hector.value<edge, [4h, 16]>
    %12 = hector.aggregate sum %11 by dst : !hector.value<edge, [4h, 16]> -> !hector.value<node, [4h, 16]>
    %13 = hector.merge_heads %12 : !hector.value<node, [4h, 16]> -> !hector.value<node, [64]>
    hector.output "h" %13 : !hector.value<node, [64]>
  }
}

