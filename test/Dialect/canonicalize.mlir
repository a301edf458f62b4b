// RUN: hector-opt %s --canonicalize --cse | FileCheck %s

// Unused inputs and weights stay (they are the layer's interface); dead compute goes away; equal
// constants and pure ops merge.

// CHECK-LABEL: hector.layer @dead
// CHECK-NEXT:    %[[C:.*]] = hector.constant 2.000000e+00 : !hector.value<none, []>
// CHECK-NEXT:    %x = hector.input "x" : !hector.value<node, [4]>
// CHECK-NEXT:    %unused = hector.input "unused" : !hector.value<edge, []>
// CHECK-NEXT:    %W = hector.weight "W" glorot : !hector.weight<none, [4, 4]>
// CHECK-NEXT:    %[[A:.*]] = hector.mul %x, %[[C]]
// CHECK-NEXT:    %[[B:.*]] = hector.add %[[A]], %[[A]]
// CHECK-NEXT:    hector.output "y" %[[B]] : !hector.value<node, [4]>
// CHECK-NEXT:  }
hector.layer @dead {
  %x = hector.input "x" : !hector.value<node, [4]>
  %unused = hector.input "unused" : !hector.value<edge, []>
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 4]>
  %dead = hector.linear %x, %W : !hector.value<node, [4]>, !hector.weight<none, [4, 4]>
            -> !hector.value<node, [4]>
  %c1 = hector.constant 2.0 : !hector.value<none, []>
  %c2 = hector.constant 2.0 : !hector.value<none, []>
  %a = hector.mul %x, %c1 : !hector.value<node, [4]>, !hector.value<none, []> -> !hector.value<node, [4]>
  %b = hector.mul %x, %c2 : !hector.value<node, [4]>, !hector.value<none, []> -> !hector.value<node, [4]>
  %y = hector.add %a, %b : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
  hector.output "y" %y : !hector.value<node, [4]>
}
