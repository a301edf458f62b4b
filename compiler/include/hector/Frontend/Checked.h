//===- Checked.h - The checked, flattened form of a layer -------*- C++ -*-===//
//
// The contract between the front end (lexer, parser, sema; plain C++17, no MLIR) and MLIR
// generation. Sema turns every layer of a file into a CheckedLayer: parameters bound, sub-layer
// calls inlined (their weights prefixed "inst."), every value typed with its index space, shape
// and head axis, in SSA order. MLIRGen maps each Instr to exactly one Hector dialect op; it never
// has to diagnose anything a user wrote.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_FRONTEND_CHECKED_H
#define HECTOR_FRONTEND_CHECKED_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hector {
namespace frontend {

/// A position in a model file (1-based line and column).
struct SourceLoc {
  std::string file;
  unsigned line = 0;
  unsigned col = 0;
};

/// The index space a value's rows live in (docs/architecture.md, "Index spaces").
enum class Space { Node, Src, Dst, Edge, UniqueSrc, UniqueDst, Relation, NType, None };

/// How a weight is sliced: one slice per relation, per node type, or a single tensor.
enum class Slicing { None, Relation, NType };

/// A row shape; at most one dimension is the head dimension (headAxis, or -1).
struct Shape {
  std::vector<int64_t> dims;
  int headAxis = -1;
  bool operator==(const Shape &o) const { return dims == o.dims && headAxis == o.headAxis; }
  bool operator!=(const Shape &o) const { return !(*this == o); }
};

/// One operation of a checked layer; one Hector dialect op each.
enum class OpKind {
  Input,        // name; result: value type (space Node or Edge)
  Weight,       // name, init; result: weight type (slicing, shape)
  WeightMatmul, // operands: weight, weight; result: weight
  Src,          // operand: node value -> Src
  Dst,          // operand: node value -> Dst
  Slice,        // operand: weight -> value (Relation / NType / None space)
  SrcRow,       // operand: Slice of a weight [n, d...] -> the source's row [d...] (Edge / Src)
  Linear,       // operands: value, weight
  Dot,          // operands: value, value
  Add, Sub, Mul, Div,
  Neg,
#define HECTOR_UNARY_FUNCTION(kind, spelling) kind,
#include "hector/Frontend/UnaryFunctions.def"
  LeakyRelu,    // number = slope
  Constant,     // number = value; result space None, shape []
  Aggregate,    // aggregate = sum|mean|max; operand: edge-indexed value; result space Node
  Softmax,      // operand: edge-indexed value; result space Edge
  Concat,       // operands: 2 or more values
  SplitHeads,   // heads = H
  MergeHeads,
  Output,       // name; operand: value
};

enum class AggregateKind { Sum, Mean, Max };

struct Instr {
  OpKind kind;
  std::vector<int> operands; ///< indices of earlier Instrs in CheckedLayer::instrs
  // Result type (unused for Output). For weights: isWeight, slicing, shape.
  bool isWeight = false;
  Space space = Space::None;
  Slicing slicing = Slicing::None;
  Shape shape;
  // Attributes, by kind.
  std::string name;             ///< Input, Weight, Output
  std::string init;             ///< Weight: "glorot", "zeros", "ones", "uniform", "normal"
  double number = 0.0;          ///< Constant value, LeakyRelu slope
  AggregateKind aggregate = AggregateKind::Sum;
  int64_t heads = 0;            ///< SplitHeads
  SourceLoc loc;                ///< where the user wrote it
  /// The name the user gave the value this instr defines (`edge z = ...;` names its root instr
  /// `z`; sub-layer values are prefixed like their weights), or empty. A naming hint only.
  std::string valueName;
};

/// A layer after sema: parameters bound, sub-layers inlined, SSA order.
struct CheckedLayer {
  std::string name;
  SourceLoc loc;
  std::map<std::string, double> params; ///< every parameter with its bound value
  std::vector<Instr> instrs;
};

/// Everything a model file defines, in file order.
struct CheckedModule {
  std::vector<CheckedLayer> layers;
};

} // namespace frontend
} // namespace hector

#endif // HECTOR_FRONTEND_CHECKED_H
