// RUN: hector-opt %s --hector-autodiff -split-input-file -verify-diagnostics

// One case per error of hector-autodiff.

hector.layer @kernel {
  %x = hector.input "x" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<none, [8, 8]>
  // expected-error @+1 {{hector-autodiff: 'hector.gemm' is a kernel-level op: run hector-autodiff before the lowering}}
  %y = hector.gemm %x, %W segment none gather none scatter store : !hector.value<node, [8]>, !hector.weight<none, [8, 8]> -> !hector.value<node, [8]>
  hector.output "y" %y : !hector.value<node, [8]>
}

// -----

hector.layer @twice {
  %x = hector.input "x" : !hector.value<node, [8]>
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+1 {{hector-autodiff: 'hector.gelu_grad' is a backward op: differentiating a backward layer is not supported}}
  %y = hector.gelu_grad %g, %x : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [8]>
  hector.output "y" %y : !hector.value<node, [8]>
}

// -----

hector.layer @transposed {
  %g = hector.input "g" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 8]>
  // expected-error @+1 {{hector-autodiff: 'hector.linear' is a transposed linear, which only backward layers hold: differentiating a backward layer is not supported}}
  %y = hector.linear %g, %W transposed : !hector.value<node, [8]>, !hector.weight<none, [4, 8]> -> !hector.value<node, [4]>
  hector.output "y" %y : !hector.value<node, [4]>
}

// -----

hector.layer @reserved {
  %x = hector.input "x" : !hector.value<node, [8]>
  // expected-error @+1 {{hector-autodiff: output name 'saved.0' is reserved for saved activations}}
  hector.output "saved.0" %x : !hector.value<node, [8]>
}

// -----

hector.layer @weight_space {
  %B = hector.weight "B" zeros : !hector.weight<none, [8]>
  %b = hector.slice %B : !hector.weight<none, [8]> -> !hector.value<none, [8]>
  // expected-error @+1 {{hector-autodiff: output 'b' must be indexed by nodes or edges to be differentiated, got '!hector.value<none, [8]>'}}
  hector.output "b" %b : !hector.value<none, [8]>
}

// -----

// expected-error @+1 {{hector-autodiff: cannot name the derived layer @clash_backward: the symbol exists}}
hector.layer @clash {
  %x = hector.input "x" : !hector.value<node, [8]>
  hector.output "y" %x : !hector.value<node, [8]>
}
// expected-note @+1 {{defined here}}
hector.layer @clash_backward attributes {hector.forward = @other} {
}
hector.layer @other attributes {hector.backward = @clash_backward} {
}

// -----

// A reduction of trailing dimensions has no derivative rule (its adjoint is a broadcast over
// dimensions): the pass fails instead of dropping the gradient of x.
hector.layer @no_rule {
  %x = hector.input "x" : !hector.value<node, [8]>
  // expected-error @+1 {{hector-autodiff: no derivative rule for 'hector.reduce' with operand types '!hector.value<node, [8]>' and result type '!hector.value<node, []>': its operands' gradients cannot be computed}}
  %y = hector.reduce %x : !hector.value<node, [8]> -> !hector.value<node, []>
  hector.output "y" %y : !hector.value<node, []>
}
