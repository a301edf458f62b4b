// RUN: hector-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(hector.layer(hector-explain))'
// RUN: not hector-opt %s --pass-pipeline='builtin.module(hector.layer(hector-compact-materialize{edges=10 unique-src=11}))' 2>&1 | FileCheck %s --check-prefix=UNIQUE
// RUN: not hector-opt %s --pass-pipeline='builtin.module(hector.layer(hector-reorder-linear{nodes=10}))' 2>&1 | FileCheck %s --check-prefix=NODES

// UNIQUE: hector-compact-materialize: unique-src and unique-dst cannot exceed edges (10)
// NODES: hector-reorder-linear: give edges= with the other sizes

// expected-error @+1 {{hector-explain: needs the graph's sizes (edges=, nodes=, ...)}}
hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [8]>
  hector.output "y" %x : !hector.value<node, [8]>
}
