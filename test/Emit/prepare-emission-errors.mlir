// hector-prepare-emission's legality walk: kernel-level IR that no template or glue op runs is
// reported at the op, and nothing is annotated.
// RUN: hector-opt %s --hector-prepare-emission=target=cpu --split-input-file --verify-diagnostics
// RUN: not hector-opt %s --split-input-file --hector-prepare-emission=target=gpu 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: hector-prepare-emission: unknown target 'gpu' (expected cpu or cuda)

// An inter-operator op the lowering replaces.
hector.layer @linear {
  %x = hector.input "x" : !hector.value<node, [4]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 4]>
  // expected-error @+1 {{'hector.linear' is not a kernel-level op: lower the layer first}}
  %y = hector.linear %x, %W : !hector.value<node, [4]>, !hector.weight<none, [4, 4]> -> !hector.value<node, [4]>
  hector.output "y" %y : !hector.value<node, [4]>
}

// -----

// A top-level gather is fused only into a weight gradient.
hector.layer @gather {
  %x = hector.input "x" : !hector.value<node, [4]>
  %s = hector.src %x : !hector.value<node, [4]> -> !hector.value<src, [4]>
  // expected-error @+1 {{reads a top-level gather; only hector.weight_grad fuses one}}
  %t = hector.traversal edge (%a = %s) : (!hector.value<src, [4]>) -> !hector.value<src, [4]> {
    %n = hector.neg %a : !hector.value<src, [4]>
    hector.yield %n : !hector.value<src, [4]>
  }
  hector.output "t" %t : !hector.value<src, [4]>
}

// -----

// Elementwise work on node rows at the top level.
hector.layer @toplevel {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.neg' on rows indexed by node belongs in a traversal}}
  %n = hector.neg %x : !hector.value<node, [4]>
  hector.output "n" %n : !hector.value<node, [4]>
}

// -----

// Softmax is decomposed before emission.
hector.layer @softmax {
  %s = hector.input "s" : !hector.value<edge, []>
  %t = hector.traversal node (%a = %s) : (!hector.value<edge, []>) -> !hector.value<node, []> {
    // expected-error @+1 {{hector.softmax must be decomposed before emission}}
    %p = hector.softmax %a : !hector.value<edge, []> -> !hector.value<edge, []>
    %r = hector.aggregate sum %p by dst : !hector.value<edge, []> -> !hector.value<node, []>
    hector.yield %r : !hector.value<node, []>
  }
  hector.output "p" %t : !hector.value<node, []>
}

// -----

// A GEMM scatter the templates have no kernel for.
hector.layer @scatter {
  %x = hector.input "x" : !hector.value<node, [4]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [4, 4]>
  // expected-error @+1 {{the emitter has no kernel for scatter accumulate_dst of src rows}}
  %y = hector.gemm %x, %W segment relation gather src scatter accumulate_dst : !hector.value<node, [4]>, !hector.weight<relation, [4, 4]> -> !hector.value<node, [4]>
  hector.output "y" %y : !hector.value<node, [4]>
}

// -----

// An output the glue cannot return.
hector.layer @output {
  %x = hector.input "x" : !hector.value<node, [4]>
  %r = hector.reduce %x : !hector.value<node, [4]> -> !hector.value<none, [4]>
  // expected-error @+1 {{cannot emit an output indexed by none}}
  hector.output "r" %r : !hector.value<none, [4]>
}
