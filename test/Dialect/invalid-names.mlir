// RUN: hector-opt %s -split-input-file -verify-diagnostics

// Names are data (hector/Dialect/Names.h): layer names are identifiers; input, weight and output
// names are identifiers or digit runs joined by single dots. Everything else is refused, so
// that no name can reach the emitted C++ as code (the emitter escapes them besides).

// The names the compiler itself produces are accepted.
hector.layer @rgcn_backward {
  %x = hector.input "x" : !hector.value<node, [4]>
  %s = hector.input "saved.0" : !hector.value<node, [4]>
  %g = hector.input "grad.h" : !hector.value<node, [4]>
  %W = hector.weight "conv1.W" glorot : !hector.weight<none, [4, 4]>
  %_ = hector.weight "_9.conv_2._" zeros : !hector.weight<none, [4]>
  hector.output "grad.conv1.W" %W : !hector.weight<none, [4, 4]>
  hector.output "saved.12" %x : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op name '" + std::to_string(std::system("touch F")) + "' is not identifiers ([A-Za-z_][A-Za-z0-9_]*) or digit runs joined by single dots}}
  %x = hector.input "\" + std::to_string(std::system(\"touch F\")) + \"" : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op name 'a\x0ab' is not identifiers}}
  %x = hector.input "a\0Ab" : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.weight' op name '\xff' is not identifiers}}
  %W = hector.weight "\FF" glorot : !hector.weight<none, [4, 4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.weight' op name 'conv1..W' is not identifiers}}
  %W = hector.weight "conv1..W" glorot : !hector.weight<none, [4, 4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.output' op name 'h.' is not identifiers}}
  hector.output "h." %x : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.output' op name '.h' is not identifiers}}
  hector.output ".h" %x : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op name '9x' is not identifiers}}
  %x = hector.input "9x" : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op name 'x\x5c' is not identifiers}}
  %x = hector.input "x\\" : !hector.value<node, [4]>
}

// -----

// expected-error @+1 {{'hector.layer' op layer name 'a b' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)}}
hector.layer @"a b" {
}

// -----

// expected-error @+1 {{'hector.layer' op layer name 'conv1.W' is not an identifier}}
hector.layer @"conv1.W" {
}
