//===- hector/graph.h - Validated relational graph, preprocessed -*- C++ -*-===//
//
// hector::Graph turns a user's edge list (src, dst, etype [, ntype]) into the index structures
// the compiled kernels read (codegen-templates/hector/emit/graph_schema.h lists them). Edges are
// renumbered in an internal order (by destination, then relation, then user edge id); indices
// are int32 whenever the graph's counts allow (int64 otherwise, or on request). Only the base
// structures (the CSR by destination) are built with the graph; every other group is built on
// first use, so a graph holds what the layers that run on it read and nothing more.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/emit/graph_schema.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hector {

using graph_schema::GraphGroup;
using graph_schema::GraphStructure;
using graph_schema::GraphStructureMask;

/// What Graph::build needs beyond the edge list. Every count is inferred when absent.
struct GraphOptions {
  /// Number of nodes N; default: ntype's length when given, else max(src, dst) + 1 (0 for no edge).
  std::optional<int64_t> numNodes;
  /// Node type of every node ([N], integer); default: one node type.
  std::optional<at::Tensor> ntype;
  /// Number of relations R; default: max(etype) + 1 (0 for no edge).
  std::optional<int64_t> numRelations;
  /// Number of node types T; default: max(ntype) + 1 (1 without ntype).
  std::optional<int64_t> numNtypes;
  /// Also require every relation to join one source node type to one destination node type (the
  /// canonical edge types of a heterogeneous graph).
  bool checkRelationTypes = false;
  /// The dtype of every index structure: at::kInt or at::kLong; default: int32 when N and E are
  /// below 2^31, else int64.
  std::optional<at::ScalarType> indexDtype;
};

/// A validated relational graph and its preprocessing. Index tensors have the graph's index
/// dtype (indexDtype()) and live on the graph's device; per-edge tensors are in the internal
/// order, which every kernel uses; edgePerm() maps back to the user's order.
///
/// A Graph is a cheap handle: copies share the structures, and a structure built through one
/// copy is there for all. Building is thread-safe. The structures are immutable: an in-place
/// write into one (through a tensor a property returned) is detected by checkUnchanged().
class Graph {
public:
  /// Validates the edge list and builds the base structures. Throws c10::TypeError (Python
  /// TypeError) for a non-integer tensor and c10::ValueError (Python ValueError) for any other
  /// bad input, naming the tensor and the first bad position, e.g.
  /// "hector.Graph: dst[17] = 9001 is out of range [0, 8285)". Inputs on a CUDA device are
  /// preprocessed on the host and the structures moved to that device.
  static Graph build(const at::Tensor &src, const at::Tensor &dst, const at::Tensor &etype,
                     const GraphOptions &options = {});

  /// The names of tensors(), in order (graph_schema.h); the Python properties carry them.
  static const std::vector<std::string> &tensorNames();
  /// The names of sizes(), in order: num_nodes, num_edges, num_relations, num_ntypes,
  /// has_ntype, num_unique_src (-1 while unknown), num_unique_dst, index_bits (32 or 64),
  /// built (a GraphStructureMask).
  static const std::vector<std::string> &sizeNames();
  /// Reassembles a Graph from tensors() and sizes() (e.g. handed to a compiled operator): the
  /// structures `built` marks, checked for dtype, device and length. Such a graph builds
  /// nothing; asking it for a missing structure throws.
  static Graph fromTensors(std::vector<at::Tensor> tensors, std::vector<int64_t> sizes);

  /// Every structure in tensorNames() order; one not built is an empty tensor.
  std::vector<at::Tensor> tensors() const;
  /// The counts, in sizeNames() order.
  std::vector<int64_t> sizes() const;

  /// Builds the groups of every structure in `mask` that is not built yet.
  void require(GraphStructureMask mask) const;
  /// Whether a structure is built.
  bool has(GraphStructure s) const;
  /// The structures built so far.
  GraphStructureMask built() const;
  /// A structure, built on first use (a graph from fromTensors throws instead).
  at::Tensor tensor(GraphStructure s) const;
  /// Throws c10::ValueError naming the structure when one of `mask` that is built was written
  /// in place since it was built (its version counter moved).
  void checkUnchanged(GraphStructureMask mask) const;
  /// Bytes held by the built structures.
  int64_t nbytes() const;
  /// Bytes that require(mask) would add: the whole groups of the structures not built yet.
  int64_t bytesToBuild(GraphStructureMask mask) const;

  /// The same graph with every built structure on `device` (this graph when already there).
  /// Structures built later are made on the host and moved.
  Graph to(at::Device device, bool nonBlocking = false) const;
  /// The device of every tensor.
  at::Device device() const;
  /// at::kInt or at::kLong.
  at::ScalarType indexDtype() const;

  int64_t numNodes() const;
  int64_t numEdges() const;
  int64_t numRelations() const;
  int64_t numNtypes() const;
  /// Whether node types were given (otherwise every node has type 0 and numNtypes() is 1).
  bool hasNtype() const;
  /// Number of unique (source node, relation) pairs: U_src (counted when the graph was built,
  /// or by building the unique source pairs).
  int64_t numUniqueSrc() const;
  /// Number of unique (destination node, relation) pairs: U_dst.
  int64_t numUniqueDst() const;

  /// @name Structures by name (each built on first use; see graph_schema.h).
  /// @{
#define HECTOR_GRAPH_ACCESSOR(name, field, group, length)                                          \
  at::Tensor field() const { return tensor(GraphStructure::name); }
  HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_ACCESSOR)
#undef HECTOR_GRAPH_ACCESSOR
  /// @}

  /// The degree norm of every edge, in `dtype`: "relation" 1 / |N_r(i)| (the number of
  /// incoming edges of the edge's relation at its destination, duplicates counted: PyG
  /// RGCNConv's aggr="mean"), or "in" 1 / in-degree(i). In the user's edge order, or the
  /// internal one with userOrder false. Computed on each call, not kept.
  at::Tensor edgeNorm(const std::string &kind, at::ScalarType dtype, bool userOrder = true) const;
  /// The user's edge list (user order, int64): src, dst, etype. Computed on each call.
  std::vector<at::Tensor> userEdges() const;
  /// Edge data in the user's order -> internal order (along dim 0), and back.
  at::Tensor sortEdgeData(const at::Tensor &data) const;
  at::Tensor unsortEdgeData(const at::Tensor &data) const;

  struct State;

private:
  Graph() = default;
  std::shared_ptr<State> s_;
};

} // namespace hector
