// RUN: hector-opt %s -split-input-file -verify-diagnostics

// One case per verifier and parser message of the dialect.

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

hector.layer @l {
  // expected-error @+1 {{dimensions must be positive, got 0}}
  %x = hector.input "x" : !hector.value<node, [0]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{the head dimension of a value must be its first dimension, got [16, 4h]}}
  %x = hector.input "x" : !hector.value<node, [16, 4h]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{at most one dimension may be the head dimension}}
  %W = hector.weight "W" glorot : !hector.weight<none, [4h, 2h]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{unknown index space 'nodes'}}
  %x = hector.input "x" : !hector.value<nodes, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{unknown slicing 'edge'}}
  %W = hector.weight "W" glorot : !hector.weight<edge, [4]>
}

// -----

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

hector.layer @l {
  // expected-note @+1 {{previously defined here}}
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.weight' op duplicate weight name 'x'}}
  %W = hector.weight "x" glorot : !hector.weight<none, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-note @+1 {{previously defined here}}
  hector.output "y" %x : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.output' op duplicate output name 'y'}}
  hector.output "y" %x : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op name must not be empty}}
  %x = hector.input "" : !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.input' op result must be indexed by nodes or edges, got relation}}
  %x = hector.input "x" : !hector.value<relation, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.weight' op name must not be empty}}
  %W = hector.weight "" glorot : !hector.weight<none, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.output' op name must not be empty}}
  hector.output "" %x : !hector.value<node, [4]>
}

// -----

// expected-error @+1 {{'hector.input' op expects parent op 'hector.layer'}}
%x = hector.input "x" : !hector.value<node, [4]>

// -----

//===----------------------------------------------------------------------===//
// Graph access, slicing, compaction
//===----------------------------------------------------------------------===//

hector.layer @l {
  %x = hector.input "x" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.src' op input must be indexed by nodes (node), got edge}}
  // expected-error @+1 {{'hector.src' op failed to infer returned types}}
  %0 = hector.src %x : !hector.value<edge, [4]> -> !hector.value<src, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+2 {{'hector.src' op inferred type(s) '!hector.value<src, [4]>' are incompatible with return type(s) of operation '!hector.value<src, [8]>'}}
  // expected-error @+1 {{'hector.src' op failed to infer returned types}}
  %0 = hector.src %x : !hector.value<node, [4]> -> !hector.value<src, [8]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+2 {{'hector.dst' op inferred type(s) '!hector.value<dst, [4]>' are incompatible with return type(s) of operation '!hector.value<src, [4]>'}}
  // expected-error @+1 {{'hector.dst' op failed to infer returned types}}
  %0 = hector.dst %x : !hector.value<node, [4]> -> !hector.value<src, [4]>
}

// -----

hector.layer @l {
  %W = hector.weight "W" glorot : !hector.weight<relation, [4]>
  // expected-error @+2 {{'hector.slice' op inferred type(s) '!hector.value<relation, [4]>' are incompatible with return type(s) of operation '!hector.value<edge, [4]>'}}
  // expected-error @+1 {{'hector.slice' op failed to infer returned types}}
  %0 = hector.slice %W : !hector.weight<relation, [4]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %W = hector.weight "W" glorot : !hector.weight<none, [4, 2h]>
  // expected-error @+2 {{'hector.slice' op a weight read as a value needs its head dimension first, got [4, 2h]}}
  // expected-error @+1 {{'hector.slice' op failed to infer returned types}}
  %0 = hector.slice %W : !hector.weight<none, [4, 2h]> -> !hector.value<none, [4, 2]>
}

// -----

hector.layer @l {
  %W = hector.weight "W" glorot : !hector.weight<ntype, [4h, 2]>
  // expected-error @+2 {{'hector.slice' op inferred type(s) '!hector.value<ntype, [4h, 2]>' are incompatible with return type(s) of operation '!hector.value<ntype, [4, 2]>'}}
  // expected-error @+1 {{'hector.slice' op failed to infer returned types}}
  %0 = hector.slice %W : !hector.weight<ntype, [4h, 2]> -> !hector.value<ntype, [4, 2]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  // expected-error @+2 {{'hector.unique_gather' op inferred type(s) '!hector.value<unique_dst, [4]>' are incompatible with return type(s) of operation '!hector.value<unique_src, [4]>'}}
  // expected-error @+1 {{'hector.unique_gather' op failed to infer returned types}}
  %0 = hector.unique_gather dst %x : !hector.value<node, [4]> -> !hector.value<unique_src, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.unique_expand' op input must be indexed by unique pairs (unique_src, unique_dst), got edge}}
  // expected-error @+1 {{'hector.unique_expand' op failed to infer returned types}}
  %0 = hector.unique_expand %x : !hector.value<edge, [4]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<unique_src, [4]>
  // expected-error @+2 {{'hector.unique_expand' op inferred type(s) '!hector.value<edge, [4]>' are incompatible with return type(s) of operation '!hector.value<src, [4]>'}}
  // expected-error @+1 {{'hector.unique_expand' op failed to infer returned types}}
  %0 = hector.unique_expand %x : !hector.value<unique_src, [4]> -> !hector.value<src, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [10, 4]>
  // expected-error @+2 {{'hector.src_row' op input must be a relation-sliced or unsliced weight read as a value (relation or none), got node}}
  // expected-error @+1 {{'hector.src_row' op failed to infer returned types}}
  %0 = hector.src_row %x : !hector.value<node, [10, 4]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %W = hector.weight "W" glorot : !hector.weight<relation, [4h, 10, 4]>
  %w = hector.slice %W : !hector.weight<relation, [4h, 10, 4]> -> !hector.value<relation, [4h, 10, 4]>
  // expected-error @+2 {{'hector.src_row' op input must be a table of rows (at least 1 dimension, no head dimension), got [4h, 10, 4]}}
  // expected-error @+1 {{'hector.src_row' op failed to infer returned types}}
  %0 = hector.src_row %w : !hector.value<relation, [4h, 10, 4]> -> !hector.value<edge, [10, 4]>
}

// -----

hector.layer @l {
  %W = hector.weight "W" glorot : !hector.weight<relation, [10, 4]>
  %w = hector.slice %W : !hector.weight<relation, [10, 4]> -> !hector.value<relation, [10, 4]>
  // expected-error @+2 {{'hector.src_row' op inferred type(s) '!hector.value<edge, [4]>' are incompatible with return type(s) of operation '!hector.value<src, [4]>'}}
  // expected-error @+1 {{'hector.src_row' op failed to infer returned types}}
  %0 = hector.src_row %w : !hector.value<relation, [10, 4]> -> !hector.value<src, [4]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.src_row_grad' op grad must be indexed by edges (edge, src, dst), got node}}
  %0 = hector.src_row_grad %g : !hector.value<node, [4]> -> !hector.weight<relation, [10, 4]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [3]>
  // expected-error @+1 {{'hector.src_row_grad' op grad shape [3] must equal the result's row shape [4]}}
  %0 = hector.src_row_grad %g : !hector.value<edge, [3]> -> !hector.weight<relation, [10, 4]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [4]>
  // expected-error @+1 {{'hector.src_row_grad' op result must be a relation-sliced or unsliced weight, got an ntype-sliced one}}
  %0 = hector.src_row_grad %g : !hector.value<edge, [4]> -> !hector.weight<ntype, [10, 4]>
}

// -----

//===----------------------------------------------------------------------===//
// Dense products
//===----------------------------------------------------------------------===//

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+2 {{'hector.linear' op input must be indexed by edges (src, dst, edge, unique_*) when the weight is relation-sliced, got node}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<edge, [64]>
  %W = hector.weight "W" glorot : !hector.weight<ntype, [64, 16]>
  // expected-error @+2 {{'hector.linear' op input must be indexed by nodes (node) when the weight is ntype-sliced, got edge}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<edge, [64]>, !hector.weight<ntype, [64, 16]> -> !hector.value<edge, [16]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [32]>
  %W = hector.weight "W" glorot : !hector.weight<none, [64, 16]>
  // expected-error @+2 {{'hector.linear' op input row [32] does not match the weight [64, 16]: expected [64]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [32]>, !hector.weight<none, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4h, 64, 16]>
  // expected-error @+2 {{'hector.linear' op input row [64] does not match the weight [4h, 64, 16]: expected [4h, 64]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [64]>, !hector.weight<none, [4h, 64, 16]> -> !hector.value<node, [4h, 16]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4h, 16]>
  %W = hector.weight "W" glorot : !hector.weight<none, [4h]>
  // expected-error @+2 {{'hector.linear' op input row [4h, 16] does not match the weight [4h]: a per-head weight needs [Hh, k, ...]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [4h, 16]>, !hector.weight<none, [4h]> -> !hector.value<node, [4h]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, []>
  %W = hector.weight "W" glorot : !hector.weight<none, []>
  // expected-error @+2 {{'hector.linear' op input row [] does not match the weight []: the weight needs at least one dimension}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, []>, !hector.weight<none, []> -> !hector.value<node, []>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<none, [64, 16, 4h]>
  // expected-error @+2 {{'hector.linear' op the weight's head dimension must follow the contracted dimension directly, got [64, 16, 4h]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [64]>, !hector.weight<none, [64, 16, 4h]> -> !hector.value<node, [16, 4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<none, [64, 4h, 16]>
  // expected-error @+2 {{'hector.linear' op inferred type(s) '!hector.value<node, [4h, 16]>' are incompatible with return type(s) of operation '!hector.value<node, [64]>'}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %x, %W : !hector.value<node, [64]>, !hector.weight<none, [64, 4h, 16]> -> !hector.value<node, [64]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [4]>
  %B = hector.weight "B" glorot : !hector.weight<ntype, [4, 8]>
  // expected-error @+2 {{'hector.weight_matmul' op operands must not be sliced differently, got lhs relation and rhs ntype}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, [4]>, !hector.weight<ntype, [4, 8]> -> !hector.weight<relation, [8]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, []>
  %B = hector.weight "B" glorot : !hector.weight<none, [4, 8]>
  // expected-error @+2 {{'hector.weight_matmul' op operands need at least one dimension, got lhs [] and rhs [4, 8]}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, []>, !hector.weight<none, [4, 8]> -> !hector.weight<relation, [8]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [3]>
  %B = hector.weight "B" glorot : !hector.weight<none, [4, 8]>
  // expected-error @+2 {{'hector.weight_matmul' op lhs last dimension 3 must equal rhs first dimension 4}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, [3]>, !hector.weight<none, [4, 8]> -> !hector.weight<relation, [8]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 4h]>
  %B = hector.weight "B" glorot : !hector.weight<none, [4, 8]>
  // expected-error @+2 {{'hector.weight_matmul' op cannot contract a head dimension, got lhs [64, 4h] and rhs [4, 8]}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, [64, 4h]>, !hector.weight<none, [4, 8]> -> !hector.weight<relation, [64, 8]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [2h, 4]>
  %B = hector.weight "B" glorot : !hector.weight<none, [4, 2h]>
  // expected-error @+2 {{'hector.weight_matmul' op at most one operand may have a head dimension, got lhs [2h, 4] and rhs [4, 2h]}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, [2h, 4]>, !hector.weight<none, [4, 2h]> -> !hector.weight<relation, [2h, 2]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [4]>
  %B = hector.weight "B" glorot : !hector.weight<none, [4, 8]>
  // expected-error @+2 {{'hector.weight_matmul' op inferred type(s) '!hector.weight<relation, [8]>' are incompatible with return type(s) of operation '!hector.weight<none, [8]>'}}
  // expected-error @+1 {{'hector.weight_matmul' op failed to infer returned types}}
  %0 = hector.weight_matmul %A, %B : !hector.weight<relation, [4]>, !hector.weight<none, [4, 8]> -> !hector.weight<none, [8]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<edge, [64]>
  %g = hector.input "g" : !hector.value<node, [16]>
  // expected-error @+1 {{'hector.weight_grad' op grad type must be '!hector.value<edge, [16]>', got '!hector.value<node, [16]>'}}
  %0 = hector.weight_grad %x, %g : !hector.value<edge, [64]>, !hector.value<node, [16]> -> !hector.weight<relation, [64, 16]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [64]>
  %g = hector.input "g" : !hector.value<node, [16]>
  // expected-error @+1 {{'hector.weight_grad' op input must be indexed by edges (src, dst, edge, unique_*) when the weight is relation-sliced, got node}}
  %0 = hector.weight_grad %x, %g : !hector.value<node, [64]>, !hector.value<node, [16]> -> !hector.weight<relation, [64, 16]>
}

// -----

//===----------------------------------------------------------------------===//
// Elementwise and reductions
//===----------------------------------------------------------------------===//

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  %b = hector.input "b" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.add' op operands have incompatible index spaces: lhs is node, rhs is edge}}
  // expected-error @+1 {{'hector.add' op failed to infer returned types}}
  %0 = hector.add %a, %b : !hector.value<node, [4]>, !hector.value<edge, [4]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  %b = hector.input "b" : !hector.value<node, [4h, 2]>
  // expected-error @+2 {{'hector.mul' op operand shapes [4] and [4h, 2] do not broadcast (one must be a prefix of the other)}}
  // expected-error @+1 {{'hector.mul' op failed to infer returned types}}
  %0 = hector.mul %a, %b : !hector.value<node, [4]>, !hector.value<node, [4h, 2]> -> !hector.value<node, [4h, 2]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, [4h]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [4h, 2]>
  %b = hector.slice %W : !hector.weight<relation, [4h, 2]> -> !hector.value<relation, [4h, 2]>
  // expected-error @+2 {{'hector.sub' op inferred type(s) '!hector.value<edge, [4h, 2]>' are incompatible with return type(s) of operation '!hector.value<relation, [4h, 2]>'}}
  // expected-error @+1 {{'hector.sub' op failed to infer returned types}}
  %0 = hector.sub %a, %b : !hector.value<edge, [4h]>, !hector.value<relation, [4h, 2]> -> !hector.value<relation, [4h, 2]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.exp' op requires the same type for all operands and results}}
  %0 = "hector.exp"(%a) : (!hector.value<node, [4]>) -> !hector.value<node, [5]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, [4]>
  // expected-error @+1 {{'hector.leaky_relu' op requires the same type for all operands and results}}
  %0 = "hector.leaky_relu"(%a) {slope = 2.0e-01 : f64} : (!hector.value<edge, [4]>) -> !hector.value<node, [4]>
}

// -----

hector.layer @l {
  // expected-error @+1 {{'hector.constant' op result must be a scalar !hector.value<none, []>, got '!hector.value<none, [2]>'}}
  %0 = hector.constant 1.0 : !hector.value<none, [2]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  %b = hector.input "b" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.dot' op operands have incompatible index spaces: lhs is node, rhs is edge}}
  // expected-error @+1 {{'hector.dot' op failed to infer returned types}}
  %0 = hector.dot %a, %b : !hector.value<node, [4]>, !hector.value<edge, [4]> -> !hector.value<edge, []>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, [4h, 8]>
  %b = hector.input "b" : !hector.value<edge, [8]>
  // expected-error @+2 {{'hector.dot' op operand shapes must be equal, got lhs [4h, 8] and rhs [8]}}
  // expected-error @+1 {{'hector.dot' op failed to infer returned types}}
  %0 = hector.dot %a, %b : !hector.value<edge, [4h, 8]>, !hector.value<edge, [8]> -> !hector.value<edge, [4h]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, []>
  // expected-error @+2 {{'hector.dot' op operands need at least one dimension to contract}}
  // expected-error @+1 {{'hector.dot' op failed to infer returned types}}
  %0 = hector.dot %a, %a : !hector.value<edge, []>, !hector.value<edge, []> -> !hector.value<edge, []>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, [4h]>
  // expected-error @+2 {{'hector.dot' op cannot contract the head dimension of [4h]}}
  // expected-error @+1 {{'hector.dot' op failed to infer returned types}}
  %0 = hector.dot %a, %a : !hector.value<edge, [4h]>, !hector.value<edge, [4h]> -> !hector.value<edge, []>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  // expected-error @+2 {{'hector.aggregate' op input must be indexed by edges (src, dst, edge, unique_*), got node}}
  // expected-error @+1 {{'hector.aggregate' op failed to infer returned types}}
  %0 = hector.aggregate sum %a by dst : !hector.value<node, [4]> -> !hector.value<node, [4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.aggregate' op inferred type(s) '!hector.value<node, [4]>' are incompatible with return type(s) of operation '!hector.value<edge, [4]>'}}
  // expected-error @+1 {{'hector.aggregate' op failed to infer returned types}}
  %0 = hector.aggregate max %a by src : !hector.value<edge, [4]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4h]>
  // expected-error @+2 {{'hector.softmax' op input must be indexed by edges (src, dst, edge, unique_*), got node}}
  // expected-error @+1 {{'hector.softmax' op failed to infer returned types}}
  %0 = hector.softmax %a : !hector.value<node, [4h]> -> !hector.value<edge, [4h]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<dst, [4h]>
  // expected-error @+2 {{'hector.softmax' op inferred type(s) '!hector.value<edge, [4h]>' are incompatible with return type(s) of operation '!hector.value<dst, [4h]>'}}
  // expected-error @+1 {{'hector.softmax' op failed to infer returned types}}
  %0 = hector.softmax %a : !hector.value<dst, [4h]> -> !hector.value<dst, [4h]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  // expected-error @+2 {{'hector.concat' op needs at least two inputs, got 1}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a : !hector.value<node, [4]> -> !hector.value<node, [4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  %b = hector.input "b" : !hector.value<edge, [4]>
  // expected-error @+2 {{'hector.concat' op input #1 in edge is incompatible with the index space node of the inputs before it}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a, %b : !hector.value<node, [4]>, !hector.value<edge, [4]> -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, []>
  // expected-error @+2 {{'hector.concat' op input #0 needs at least one dimension}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a, %a : !hector.value<node, []>, !hector.value<node, []> -> !hector.value<node, [2]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4h]>
  // expected-error @+2 {{'hector.concat' op input #0 cannot be concatenated along its head dimension, got [4h]}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a, %a : !hector.value<node, [4h]>, !hector.value<node, [4h]> -> !hector.value<node, [8h]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4h, 2]>
  %b = hector.input "b" : !hector.value<node, [2h, 2]>
  // expected-error @+2 {{'hector.concat' op input #1 shape [2h, 2] must match input #0 shape [4h, 2] in all but the last dimension}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a, %b : !hector.value<node, [4h, 2]>, !hector.value<node, [2h, 2]> -> !hector.value<node, [4h, 4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4]>
  %b = hector.input "b" : !hector.value<node, [3]>
  // expected-error @+2 {{'hector.concat' op inferred type(s) '!hector.value<node, [7]>' are incompatible with return type(s) of operation '!hector.value<node, [8]>'}}
  // expected-error @+1 {{'hector.concat' op failed to infer returned types}}
  %0 = hector.concat %a, %b : !hector.value<node, [4]>, !hector.value<node, [3]> -> !hector.value<node, [8]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [4h, 2]>
  // expected-error @+1 {{'hector.split_heads' op input row must be a vector [n] without heads, got [4h, 2]}}
  %0 = hector.split_heads %a : !hector.value<node, [4h, 2]> -> !hector.value<node, [4h, 2]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.split_heads' op result row must be [Hh, d], got [2, 4]}}
  %0 = hector.split_heads %a : !hector.value<node, [8]> -> !hector.value<node, [2, 4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.split_heads' op result [2h, 3] must have 8 elements like the input}}
  %0 = hector.split_heads %a : !hector.value<node, [8]> -> !hector.value<node, [2h, 3]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.split_heads' op result space must be the input's node, got edge}}
  %0 = hector.split_heads %a : !hector.value<node, [8]> -> !hector.value<edge, [2h, 4]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [8]>
  // expected-error @+2 {{'hector.merge_heads' op input row must be [Hh, d], got [8]}}
  // expected-error @+1 {{'hector.merge_heads' op failed to infer returned types}}
  %0 = hector.merge_heads %a : !hector.value<node, [8]> -> !hector.value<node, [8]>
}

// -----

hector.layer @l {
  %a = hector.input "a" : !hector.value<node, [2h, 4]>
  // expected-error @+2 {{'hector.merge_heads' op inferred type(s) '!hector.value<node, [8]>' are incompatible with return type(s) of operation '!hector.value<node, [6]>'}}
  // expected-error @+1 {{'hector.merge_heads' op failed to infer returned types}}
  %0 = hector.merge_heads %a : !hector.value<node, [2h, 4]> -> !hector.value<node, [6]>
}

// -----

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op segment ntype must be the slicing of b, relation}}
  %0 = hector.gemm %h, %W segment ntype gather src scatter store
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op a must be indexed by nodes (node) when gathered through src, got edge}}
  %0 = hector.gemm %h, %W segment relation gather src scatter store
         : !hector.value<edge, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op a must be indexed by edges (src, dst, edge, unique_*) when the weight is relation-sliced, got node}}
  %0 = hector.gemm %h, %W segment relation gather none scatter store
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [16]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op a row [64] does not match the weight [64, 16]: expected [16]}}
  %0 = hector.gemm %g, %W segment relation gather none scatter store transpose_b
         : !hector.value<edge, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<edge, [64]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op scatter accumulate_dst sums rows of unique_dst pairs, got unique_src rows}}
  %0 = hector.gemm %h, %W segment relation gather unique_src scatter accumulate_dst
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<none, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op scatter accumulate_src of unique pairs needs segment relation (a node has one pair per relation), got segment none}}
  %0 = hector.gemm %h, %W segment none gather unique_src scatter accumulate_src
         : !hector.value<node, [64]>, !hector.weight<none, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %a = hector.input "a" : !hector.value<node, [8]>
  %W = hector.weight "W" glorot : !hector.weight<none, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op acc type '!hector.value<node, [8]>' must equal the result type '!hector.value<node, [16]>'}}
  %0 = hector.gemm %h, %W segment none gather none scatter store plus %a : !hector.value<node, [8]>
         : !hector.value<node, [64]>, !hector.weight<none, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<ntype, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op scatter accumulate_unique needs one row per edge, got node rows}}
  %0 = hector.gemm %h, %W segment ntype gather none scatter accumulate_unique
         : !hector.value<node, [64]>, !hector.weight<ntype, [64, 16]> -> !hector.value<unique_src, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op scatter accumulate_unique needs a unique_src or unique_dst result, got node}}
  %0 = hector.gemm %h, %W segment relation gather src scatter accumulate_unique
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<node, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [64]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 16]>
  // expected-error @+1 {{'hector.gemm' op result type must be '!hector.value<edge, [16]>', got '!hector.value<src, [16]>'}}
  %0 = hector.gemm %h, %W segment relation gather src scatter store
         : !hector.value<node, [64]>, !hector.weight<relation, [64, 16]> -> !hector.value<src, [16]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.traversal' op body has 0 arguments for 1 inputs}}
  %0 = "hector.traversal"(%h) ({
    %c = hector.constant 1.0 : !hector.value<none, []>
    hector.yield %c : !hector.value<none, []>
  }) {kind = 0 : i32} : (!hector.value<node, [4]>) -> !hector.value<none, []>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<node, [4]>
  // expected-error @+1 {{'hector.traversal' op body argument #0 type '!hector.value<node, [8]>' must equal input #0 type '!hector.value<node, [4]>'}}
  %0 = "hector.traversal"(%h) ({
  ^bb0(%a: !hector.value<node, [8]>):
    hector.yield %a : !hector.value<node, [8]>
  }) {kind = 0 : i32} : (!hector.value<node, [4]>) -> !hector.value<node, [8]>
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<unique_dst, [4]>
  %0 = hector.traversal node (%x = %h) : (!hector.value<unique_dst, [4]>) -> !hector.value<node, [4]> {
    // expected-error @+1 {{'hector.reduce' op is not allowed in the body of a 'hector.traversal'}}
    %z = hector.reduce %x : !hector.value<unique_dst, [4]> -> !hector.value<node, [4]>
    hector.yield %z : !hector.value<node, [4]>
  }
}

// -----

// A pair sum (edge rows into unique pairs) needs a node traversal over the pairs.
hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  %0 = hector.traversal edge (%x = %h) : (!hector.value<edge, [4]>) -> !hector.value<unique_dst, [4]> {
    // expected-error @+1 {{'hector.reduce' op sums the edges of unique pairs: it needs a node traversal over the pairs, not an edge traversal}}
    %y = hector.reduce %x : !hector.value<edge, [4]> -> !hector.value<unique_dst, [4]>
    hector.yield %y : !hector.value<unique_dst, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  %0:2 = hector.traversal node (%x = %h) : (!hector.value<edge, [4]>) -> (!hector.value<unique_src, [4]>, !hector.value<unique_dst, [4]>) {
    %y = hector.reduce %x : !hector.value<edge, [4]> -> !hector.value<unique_src, [4]>
    // expected-error @+1 {{'hector.reduce' op sums into '!hector.value<unique_dst, [4]>' rows; a traversal runs over the pairs of one space}}
    %z = hector.reduce %x : !hector.value<edge, [4]> -> !hector.value<unique_dst, [4]>
    hector.yield %y, %z : !hector.value<unique_src, [4]>, !hector.value<unique_dst, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  %0:2 = hector.traversal node (%x = %h) : (!hector.value<edge, [4]>) -> (!hector.value<unique_dst, [4]>, !hector.value<node, [4]>) {
    %y = hector.reduce %x : !hector.value<edge, [4]> -> !hector.value<unique_dst, [4]>
    // expected-error @+1 {{'hector.aggregate' op cannot be in a traversal over unique_dst pairs}}
    %z = hector.aggregate sum %x by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
    hector.yield %y, %z : !hector.value<unique_dst, [4]>, !hector.value<node, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  %u = hector.input "u" : !hector.value<unique_dst, [4]>
  // expected-error @+1 {{'hector.traversal' op over unique_dst pairs: every result must be a pair sum (hector.reduce into unique_dst)}}
  %0:2 = hector.traversal node (%x = %h, %v = %u) : (!hector.value<edge, [4]>, !hector.value<unique_dst, [4]>) -> (!hector.value<unique_dst, [4]>, !hector.value<unique_dst, [4]>) {
    %y = hector.reduce %x : !hector.value<edge, [4]> -> !hector.value<unique_dst, [4]>
    %z = hector.neg %v : !hector.value<unique_dst, [4]>
    hector.yield %y, %z : !hector.value<unique_dst, [4]>, !hector.value<unique_dst, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4h]>
  %0 = hector.traversal edge (%x = %h) : (!hector.value<edge, [4h]>) -> !hector.value<edge, [4h]> {
    // expected-error @+1 {{'hector.softmax' op needs a node traversal, not an edge traversal}}
    %y = hector.softmax %x : !hector.value<edge, [4h]> -> !hector.value<edge, [4h]>
    hector.yield %y : !hector.value<edge, [4h]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  // expected-error @+1 {{'hector.traversal' op yielded types must equal the result types}}
  %0 = hector.traversal node (%x = %h) : (!hector.value<edge, [4]>) -> !hector.value<node, [4]> {
    hector.yield %x : !hector.value<edge, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  // expected-error @+1 {{unknown traversal kind 'vertex'}}
  %0 = hector.traversal vertex (%x = %h) : (!hector.value<edge, [4]>) -> !hector.value<edge, [4]> {
    hector.yield %x : !hector.value<edge, [4]>
  }
}

// -----

hector.layer @l {
  %h = hector.input "h" : !hector.value<edge, [4]>
  // expected-error @+1 {{expected 1 input types, got 2}}
  %0 = hector.traversal edge (%x = %h) : (!hector.value<edge, [4]>, !hector.value<edge, [4]>) -> !hector.value<edge, [4]> {
    hector.yield %x : !hector.value<edge, [4]>
  }
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [8]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [4, 8]>
  // expected-error @+2 {{'hector.linear' op input row [8] does not match the weight [4, 8]: expected [4]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %g, %W : !hector.value<edge, [8]>, !hector.weight<relation, [4, 8]> -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [4]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [4, 8]>
  // expected-error @+2 {{'hector.linear' op input row [4] does not match the weight [4, 8]: expected [8]}}
  // expected-error @+1 {{'hector.linear' op failed to infer returned types}}
  %0 = hector.linear %g, %W transposed : !hector.value<edge, [4]>, !hector.weight<relation, [4, 8]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4]>
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.weight_grad' op grad type must be '!hector.value<node, [8]>', got '!hector.value<node, [4]>'}}
  %0 = hector.weight_grad %x, %x : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.weight<none, [4, 8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.reduce' op cannot sum node rows into relation rows}}
  %0 = hector.reduce %g : !hector.value<node, [8]> -> !hector.value<relation, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [8]>
  // expected-error @+1 {{'hector.reduce' op cannot sum edge rows into ntype rows}}
  %0 = hector.reduce %g : !hector.value<edge, [8]> -> !hector.weight<ntype, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [2h, 4]>
  // expected-error @+1 {{'hector.reduce' op result shape [4] must be a prefix of the input shape [2h, 4]}}
  %0 = hector.reduce %g : !hector.value<edge, [2h, 4]> -> !hector.value<relation, [4]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<edge, [8]>
  // expected-error @+2 {{'hector.aggregate_grad' op grad must be indexed by nodes (node), got edge}}
  // expected-error @+1 {{'hector.aggregate_grad' op failed to infer returned types}}
  %0 = hector.aggregate_grad mean %g by dst : (!hector.value<edge, [8]>) -> !hector.value<dst, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+2 {{'hector.aggregate_grad' op the gradient of a sum is hector.src or hector.dst of the gradient}}
  // expected-error @+1 {{'hector.aggregate_grad' op failed to infer returned types}}
  %0 = hector.aggregate_grad sum %g by dst : (!hector.value<node, [8]>) -> !hector.value<dst, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  %e = hector.input "e" : !hector.value<edge, [8]>
  // expected-error @+1 {{'hector.aggregate_grad' op the gradient of a mean takes no input}}
  %0 = hector.aggregate_grad mean %g, %e by dst : (!hector.value<node, [8]>, !hector.value<edge, [8]>) -> !hector.value<dst, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.aggregate_grad' op the gradient of a max needs the aggregated input}}
  %0 = hector.aggregate_grad max %g by dst : (!hector.value<node, [8]>) -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.aggregate_grad' op input must be indexed by edges (src, dst, edge, unique_*), got node}}
  %0 = hector.aggregate_grad max %g, %g by dst : (!hector.value<node, [8]>, !hector.value<node, [8]>) -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  %e = hector.input "e" : !hector.value<edge, [4]>
  // expected-error @+1 {{'hector.aggregate_grad' op input shape [4] must equal the grad shape [8]}}
  %0 = hector.aggregate_grad max %g, %e by src : (!hector.value<node, [8]>, !hector.value<edge, [4]>) -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+2 {{'hector.aggregate_grad' op inferred type(s) '!hector.value<src, [8]>' are incompatible with return type(s) of operation '!hector.value<dst, [8]>'}}
  // expected-error @+1 {{'hector.aggregate_grad' op failed to infer returned types}}
  %0 = hector.aggregate_grad mean %g by src : (!hector.value<node, [8]>) -> !hector.value<dst, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  %x = hector.input "x" : !hector.value<edge, [8]>
  // expected-error @+2 {{'hector.gelu_grad' op operands have incompatible index spaces: lhs is node, rhs is edge}}
  // expected-error @+1 {{'hector.gelu_grad' op failed to infer returned types}}
  %0 = hector.gelu_grad %g, %x : !hector.value<node, [8]>, !hector.value<edge, [8]> -> !hector.value<edge, [8]>
}

// -----

hector.layer @l {
  %g = hector.input "g" : !hector.value<node, [8]>
  // expected-error @+2 {{'hector.leaky_relu_grad' op inferred type(s) '!hector.value<node, [8]>' are incompatible with return type(s) of operation '!hector.value<node, [4]>'}}
  // expected-error @+1 {{'hector.leaky_relu_grad' op failed to infer returned types}}
  %0 = hector.leaky_relu_grad %g, %g slope 0.0 : !hector.value<node, [8]>, !hector.value<node, [8]> -> !hector.value<node, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [4h]>
  // expected-error @+1 {{'hector.narrow' op input needs a last dimension that is not the head dimension, got [4h]}}
  %0 = hector.narrow %x offset 0 : !hector.value<node, [4h]> -> !hector.value<node, [2h]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.narrow' op result '!hector.value<edge, [4]>' must equal the input '!hector.value<node, [8]>' in all but the last dimension}}
  %0 = hector.narrow %x offset 0 : !hector.value<node, [8]> -> !hector.value<edge, [4]>
}

// -----

hector.layer @l {
  %x = hector.input "x" : !hector.value<node, [8]>
  // expected-error @+1 {{'hector.narrow' op columns [6, 10) are out of range for a last dimension of 8}}
  %0 = hector.narrow %x offset 6 : !hector.value<node, [8]> -> !hector.value<node, [4]>
}

// -----

hector.layer @l {
  %g = hector.weight "g" zeros : !hector.weight<relation, [16, 16]>
  %V = hector.weight "V" glorot : !hector.weight<none, [4, 16, 16]>
  // expected-error @+1 {{'hector.weight_matmul_grad' op grad type must be '!hector.weight<none, [16, 16]>', got '!hector.weight<relation, [16, 16]>'}}
  %0 = hector.weight_matmul_grad lhs %g, %V : !hector.weight<relation, [16, 16]>, !hector.weight<none, [4, 16, 16]> -> !hector.weight<none, [4]>
}

// -----

hector.layer @l {
  %g = hector.weight "g" zeros : !hector.weight<relation, [16, 16]>
  %a = hector.weight "a" glorot : !hector.weight<relation, [4]>
  // expected-error @+1 {{'hector.weight_matmul_grad' op lhs last dimension 4 must equal rhs first dimension 3}}
  %0 = hector.weight_matmul_grad rhs %g, %a : !hector.weight<relation, [16, 16]>, !hector.weight<relation, [4]> -> !hector.weight<none, [3, 16, 16]>
}

// -----

hector.layer @l {
  %a = hector.weight "a" zeros : !hector.weight<relation, [16]>
  %b = hector.weight "b" zeros : !hector.weight<none, [16]>
  // expected-error @+1 {{'hector.weight_add' op requires the same type for all operands and results}}
  %0 = "hector.weight_add"(%a, %b) : (!hector.weight<relation, [16]>, !hector.weight<none, [16]>) -> !hector.weight<relation, [16]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 16]>
  %B = hector.weight "B" glorot : !hector.weight<ntype, [16]>
  // expected-error @+2 {{'hector.weight_dot' op operands must not be sliced differently, got lhs relation and rhs ntype}}
  // expected-error @+1 {{'hector.weight_dot' op failed to infer returned types}}
  %0 = hector.weight_dot %A, %B : !hector.weight<relation, [64, 16]>, !hector.weight<ntype, [16]> -> !hector.weight<relation, [64]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 16]>
  %B = hector.weight "B" glorot : !hector.weight<relation, []>
  // expected-error @+2 {{'hector.weight_dot' op rhs needs at least one dimension to contract}}
  // expected-error @+1 {{'hector.weight_dot' op failed to infer returned types}}
  %0 = hector.weight_dot %A, %B : !hector.weight<relation, [64, 16]>, !hector.weight<relation, []> -> !hector.weight<relation, [64, 16]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 16, 4h]>
  %B = hector.weight "B" glorot : !hector.weight<relation, [16, 4h]>
  // expected-error @+2 {{'hector.weight_dot' op cannot contract a head dimension, got rhs [16, 4h]}}
  // expected-error @+1 {{'hector.weight_dot' op failed to infer returned types}}
  %0 = hector.weight_dot %A, %B : !hector.weight<relation, [64, 16, 4h]>, !hector.weight<relation, [16, 4h]> -> !hector.weight<relation, [64, 16]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 4, 16]>
  %B = hector.weight "B" glorot : !hector.weight<relation, [4h, 16]>
  // expected-error @+2 {{'hector.weight_dot' op rhs shape [4h, 16] must be a suffix of the lhs shape [64, 4, 16]}}
  // expected-error @+1 {{'hector.weight_dot' op failed to infer returned types}}
  %0 = hector.weight_dot %A, %B : !hector.weight<relation, [64, 4, 16]>, !hector.weight<relation, [4h, 16]> -> !hector.weight<relation, [64, 4]>
}

// -----

hector.layer @l {
  %A = hector.weight "A" glorot : !hector.weight<relation, [64, 4h, 16]>
  %B = hector.weight "B" glorot : !hector.weight<none, [4h, 16]>
  // expected-error @+2 {{'hector.weight_dot' op inferred type(s) '!hector.weight<relation, [64, 4h]>' are incompatible with return type(s) of operation '!hector.weight<none, [64, 4h]>'}}
  // expected-error @+1 {{'hector.weight_dot' op failed to infer returned types}}
  %0 = hector.weight_dot %A, %B : !hector.weight<relation, [64, 4h, 16]>, !hector.weight<none, [4h, 16]> -> !hector.weight<none, [64, 4h]>
}

// -----

hector.layer @l {
  %g = hector.weight "g" zeros : !hector.weight<relation, [64, 4h]>
  %a = hector.weight "a" glorot : !hector.weight<none, [4h, 16]>
  // expected-error @+1 {{'hector.weight_dot_grad' op grad type must be '!hector.weight<none, [64, 4h]>', got '!hector.weight<relation, [64, 4h]>'}}
  %0 = hector.weight_dot_grad lhs %g, %a : !hector.weight<relation, [64, 4h]>, !hector.weight<none, [4h, 16]> -> !hector.weight<none, [64, 4h, 16]>
}

// -----

hector.layer @l {
  %g = hector.weight "g" zeros : !hector.weight<relation, [64, 4h]>
  %W = hector.weight "W" glorot : !hector.weight<relation, [64, 4h, 16]>
  // expected-error @+1 {{'hector.weight_dot_grad' op rhs shape [4h, 8] must be a suffix of the lhs shape [64, 4h, 16]}}
  %0 = hector.weight_dot_grad rhs %g, %W : !hector.weight<relation, [64, 4h]>, !hector.weight<relation, [64, 4h, 16]> -> !hector.weight<relation, [4h, 8]>
}

// -----

hector.layer @l {
  %e = hector.input "e" : !hector.value<edge, [4]>
  %0 = hector.traversal node (%x = %e) : (!hector.value<edge, [4]>) -> !hector.value<node, [4]> {
    %a = hector.aggregate sum %x by dst : !hector.value<edge, [4]> -> !hector.value<node, [4]>
    // expected-error @+1 {{'hector.aggregate' op reduces by src, but an earlier aggregate of this traversal reduces by dst; a traversal reduces over one end of the edges}}
    %b = hector.aggregate sum %x by src : !hector.value<edge, [4]> -> !hector.value<node, [4]>
    %c = hector.add %a, %b : !hector.value<node, [4]>, !hector.value<node, [4]> -> !hector.value<node, [4]>
    hector.yield %c : !hector.value<node, [4]>
  }
}

// -----

// The layer relations (hector/Dialect/LayerRelations.h) must name layers of the module.
// expected-error @+1 {{'hector.layer' op 'hector.backward' names @missing, which is not a layer of the module}}
hector.layer @l attributes {hector.backward = @missing} {
}

// -----

// expected-error @+1 {{'hector.layer' op 'hector.forward' must name a layer (@NAME), got "l"}}
hector.layer @l_backward attributes {hector.forward = "l"} {
}

// -----

module {
  module @f {
  }
  // expected-error @+1 {{'hector.layer' op 'hector.inference_of' names @f, which is not a layer of the module}}
  hector.layer @l attributes {hector.inference_of = @f} {
  }
}

// -----

hector.layer @l__reorder attributes {hector.variant_of = @l} {
}
// expected-error @+1 {{'hector.layer' op 'hector.variants' names @l__compact, which is not a layer of the module}}
hector.layer @l attributes {hector.variants = [@l__reorder, @l__compact]} {
}

// -----

// expected-error @+1 {{'hector.layer' op 'hector.variants' must be a list of layers, got @l}}
hector.layer @l attributes {hector.variants = @l} {
}
