module {
  hector.layer @rgcn attributes {params = {in = 16 : i64, out = 16 : i64}} {
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
  hector.layer @rgcn_aifb attributes {params = {classes = 4 : i64, hidden = 16 : i64, in = 16 : i64}} {
    %x = hector.input "x" : !hector.value<node, [16]>
    %norm = hector.input "norm" : !hector.value<edge, []>
    %conv1.W = hector.weight "conv1.W" glorot : !hector.weight<relation, [16, 16]>
    %conv1.root = hector.weight "conv1.root" glorot : !hector.weight<none, [16, 16]>
    %conv1.bias = hector.weight "conv1.bias" zeros : !hector.weight<none, [16]>
    %conv2.W = hector.weight "conv2.W" glorot : !hector.weight<relation, [16, 4]>
    %conv2.root = hector.weight "conv2.root" glorot : !hector.weight<none, [16, 4]>
    %conv2.bias = hector.weight "conv2.bias" zeros : !hector.weight<none, [4]>
    %0 = hector.src %x : !hector.value<node, [16]> -> !hector.value<src, [16]>
    %1 = hector.linear %0, %conv1.W : !hector.value<src, [16]>, !hector.weight<relation, [16, 16]> -> !hector.value<edge, [16]>
    %2 = hector.mul %norm, %1 : !hector.value<edge, []>, !hector.value<edge, [16]> -> !hector.value<edge, [16]>
    %3 = hector.aggregate sum %2 by dst : !hector.value<edge, [16]> -> !hector.value<node, [16]>
    %4 = hector.linear %x, %conv1.root : !hector.value<node, [16]>, !hector.weight<none, [16, 16]> -> !hector.value<node, [16]>
    %5 = hector.add %3, %4 : !hector.value<node, [16]>, !hector.value<node, [16]> -> !hector.value<node, [16]>
    %6 = hector.slice %conv1.bias : !hector.weight<none, [16]> -> !hector.value<none, [16]>
    %7 = hector.add %5, %6 : !hector.value<node, [16]>, !hector.value<none, [16]> -> !hector.value<node, [16]>
    %8 = hector.relu %7 : !hector.value<node, [16]>
    %9 = hector.src %8 : !hector.value<node, [16]> -> !hector.value<src, [16]>
    %10 = hector.linear %9, %conv2.W : !hector.value<src, [16]>, !hector.weight<relation, [16, 4]> -> !hector.value<edge, [4]>
    %11 = hector.mul %norm, %10 : !hector.value<edge, []>, !hector.value<edge, [4]> -> !hector.value<edge, [4]>
    %12 = hector.aggregate sum %11 by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
    %13 = hector.linear %8, %conv2.root : !hector.value<node, [16]>, !hector.weight<none, [16, 4]> -> !hector.value<node, [4]>
    %14 = hector.add %12, %13 : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
    %15 = hector.slice %conv2.bias : !hector.weight<none, [4]> -> !hector.value<none, [4]>
    %16 = hector.add %14, %15 : !hector.value<node, [4]>, !hector.value<none, [4]> -> !hector.value<node, [4]>
    hector.output "y" %16 : !hector.value<node, [4]>
  }
}

