//===- SpaceRules.h - The index-space algebra of values, MLIR-free -*- C++ -*-===//
//
// The rules that give a value's rows their index space: which spaces are read per edge, the
// join of two operands' spaces, the space of a weight read as a value, the space of a linear
// map's result and the slicing of a weight product. One definition for the front end's checks
// (hector::frontend::Space and Slicing) and the dialect's type rules (hector::Space and Slicing
// of HectorAttrs.td): the two enums have the same enumerators, and the rules are templates over
// them, so that the front end (and its fuzz target) stays free of MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_SPACERULES_H
#define HECTOR_DIALECT_SPACERULES_H

#include <optional>

namespace hector {
namespace spaces {

/// Rows addressed by a node or by its type.
template <typename S> constexpr bool isNodeFamily(S s) { return s == S::Node || s == S::NType; }

/// Rows of unique (node, relation) pairs.
template <typename S> constexpr bool isUnique(S s) {
  return s == S::UniqueSrc || s == S::UniqueDst;
}

/// Rows read once per edge: src, dst, edge and the unique pairs (not the relation rows, which
/// each edge reads through its relation).
template <typename S> constexpr bool isPerEdge(S s) {
  return s == S::Src || s == S::Dst || s == S::Edge || isUnique(s);
}

/// The space of an elementwise op's result over operands in `a` and `b`: none broadcasts to
/// anything; node-family spaces join into node; relation rows join unique pairs into those
/// pairs; other edge-indexed spaces (relation included) join into edge. Node and edge rows
/// do not join.
template <typename S> std::optional<S> join(S a, S b) {
  if (a == b)
    return a;
  if (a == S::None)
    return b;
  if (b == S::None)
    return a;
  if (isNodeFamily(a) && isNodeFamily(b))
    return S::Node;
  if (isNodeFamily(a) || isNodeFamily(b))
    return std::nullopt;
  if (a == S::Relation && isUnique(b))
    return b;
  if (b == S::Relation && isUnique(a))
    return a;
  return S::Edge;
}

/// The space of a weight with `slicing` read as a value: relation-sliced rows are read by each
/// edge's relation, ntype-sliced ones by each node's type, an unsliced weight is one row.
template <typename S, typename L> constexpr S sliceSpace(L slicing) {
  return slicing == L::Relation ? S::Relation : slicing == L::NType ? S::NType : S::None;
}

/// The space of a linear map's result for an operand in `space` and a weight with `slicing`:
/// relation-sliced weights need per-edge rows (unique pairs stay pairs, the rest become edge
/// rows), ntype-sliced ones node rows; an unsliced weight keeps the space. std::nullopt where
/// the operand's rows cannot select a slice.
template <typename S, typename L> std::optional<S> linearSpace(S space, L slicing) {
  if (slicing == L::Relation) {
    if (!isPerEdge(space))
      return std::nullopt;
    return isUnique(space) ? space : S::Edge;
  }
  if (slicing == L::NType)
    return space == S::Node ? std::optional<S>(S::Node) : std::nullopt;
  return space;
}

/// The space of a source node's row of a weight read as a value (featureless input,
/// `src_row(W)`): a relation-sliced weight's row of the edge's relation is per edge, an unsliced
/// weight's row depends on the source only. std::nullopt for other tables (ntype-sliced ones).
template <typename S, typename L> std::optional<S> srcRowSpace(L slicing) {
  if (slicing == L::Relation)
    return S::Edge;
  if (slicing == L::None)
    return S::Src;
  return std::nullopt;
}

/// The slicing of the product of weights sliced `a` and `b`: at most one sliced, or both the
/// same way.
template <typename L> std::optional<L> productSlicing(L a, L b) {
  if (b == L::None)
    return a;
  if (a != L::None && a != b)
    return std::nullopt;
  return b;
}

} // namespace spaces
} // namespace hector

#endif // HECTOR_DIALECT_SPACERULES_H
