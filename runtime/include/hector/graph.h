//===- hector/graph.h - Validated relational graph, preprocessed -*- C++ -*-===//
//
// hector::Graph turns a user's edge list (src, dst, etype [, ntype]) into every index structure the
// compiled kernels read: relation-sorted edges, CSR by destination and by source, the per-relation
// unique (node, relation) maps, node-type segments and the degree norms. Works on CPU and CUDA
// tensors alike (built from ATen operators only).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hector {

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
};

/// A validated relational graph and its preprocessing. All index tensors are int64 on the device
/// of the input; all per-edge tensors except src()/dst()/etype() are in *relation-sorted* order
/// (edges sorted stably by relation, then destination, then the user's edge id), which is the edge
/// numbering every kernel uses. edgePerm() maps back to the user's order.
///
/// A Graph is a cheap value: copies share the tensors.
class Graph {
public:
  /// Validates the edge list and builds every structure. Throws c10::TypeError (Python TypeError)
  /// for a non-integer tensor and c10::ValueError (Python ValueError) for any other bad input,
  /// naming the tensor and the first bad position, e.g.
  /// "hector.Graph: dst[17] = 9001 is out of range [0, 8285)".
  static Graph build(const at::Tensor &src, const at::Tensor &dst, const at::Tensor &etype,
                     const GraphOptions &options = {});

  /// The names of tensors(), in order; the Python properties carry the same names.
  static const std::vector<std::string> &tensorNames();
  /// The names of sizes(), in order: num_nodes, num_edges, num_relations, num_ntypes, has_ntype.
  static const std::vector<std::string> &sizeNames();
  /// Reassembles a Graph from tensors() and sizes() (e.g. handed over from Python); checks the
  /// number of tensors, their dtypes and leading sizes, not their contents.
  static Graph fromTensors(std::vector<at::Tensor> tensors, std::vector<int64_t> sizes);

  /// Every tensor, in tensorNames() order.
  std::vector<at::Tensor> tensors() const;
  /// The counts, in sizeNames() order.
  std::vector<int64_t> sizes() const;

  /// The same graph with every tensor on `device` (this graph when already there).
  Graph to(at::Device device, bool nonBlocking = false) const;
  /// The device of every tensor.
  at::Device device() const { return src_.device(); }

  int64_t numNodes() const { return numNodes_; }
  int64_t numEdges() const { return numEdges_; }
  int64_t numRelations() const { return numRelations_; }
  int64_t numNtypes() const { return numNtypes_; }
  /// Whether node types were given (otherwise every node has type 0 and numNtypes() is 1).
  bool hasNtype() const { return hasNtype_; }
  /// Number of unique (source node, relation) pairs: U_src.
  int64_t numUniqueSrc() const { return uniqueSrc_.size(0); }
  /// Number of unique (destination node, relation) pairs: U_dst.
  int64_t numUniqueDst() const { return uniqueDst_.size(0); }

  /// @name The user's edge list (user edge order), as int64.
  /// @{
  const at::Tensor &src() const { return src_; }
  const at::Tensor &dst() const { return dst_; }
  const at::Tensor &etype() const { return etype_; }
  /// @}

  /// @name Relation-sorted edges.
  /// @{
  /// [R+1]: the edges of relation r are the sorted positions relPtr[r] .. relPtr[r+1].
  const at::Tensor &relPtr() const { return relPtr_; }
  /// [E]: sorted position -> user edge id (sorted data = user data[edgePerm]).
  const at::Tensor &edgePerm() const { return edgePerm_; }
  /// [E]: user edge id -> sorted position (user data = sorted data[edgePermInv]).
  const at::Tensor &edgePermInv() const { return edgePermInv_; }
  const at::Tensor &sortedSrc() const { return sortedSrc_; }
  const at::Tensor &sortedDst() const { return sortedDst_; }
  const at::Tensor &sortedEtype() const { return sortedEtype_; }
  /// @}

  /// @name CSR by destination (incoming edges), rows ordered by sorted edge id.
  /// @{
  /// [N+1]: the incoming edges of node i are inEid[inPtr[i] .. inPtr[i+1]].
  const at::Tensor &inPtr() const { return inPtr_; }
  /// [E]: relation-sorted edge ids grouped by destination.
  const at::Tensor &inEid() const { return inEid_; }
  /// [E]: the source node of each inEid entry.
  const at::Tensor &inSrc() const { return inSrc_; }
  /// @}

  /// @name CSR by source (outgoing edges), rows ordered by sorted edge id.
  /// @{
  const at::Tensor &outPtr() const { return outPtr_; }
  const at::Tensor &outEid() const { return outEid_; }
  /// [E]: the destination node of each outEid entry.
  const at::Tensor &outDst() const { return outDst_; }
  /// @}

  /// @name Unique (node, relation) pairs, sorted by relation then node.
  /// @{
  /// [R+1]: relation r's unique source nodes are uniqueSrc[uniqueSrcPtr[r] .. uniqueSrcPtr[r+1]].
  const at::Tensor &uniqueSrcPtr() const { return uniqueSrcPtr_; }
  /// [U_src]: the node of every unique (source, relation) pair.
  const at::Tensor &uniqueSrc() const { return uniqueSrc_; }
  /// [E]: per sorted edge, the index of its (source, relation) pair in uniqueSrc.
  const at::Tensor &uniqueSrcInv() const { return uniqueSrcInv_; }
  const at::Tensor &uniqueDstPtr() const { return uniqueDstPtr_; }
  const at::Tensor &uniqueDst() const { return uniqueDst_; }
  const at::Tensor &uniqueDstInv() const { return uniqueDstInv_; }
  /// [U_src+1]: the edges of unique source pair u are uniqueSrcEdges[uniqueSrcEdgePtr[u] ..
  /// uniqueSrcEdgePtr[u+1]].
  const at::Tensor &uniqueSrcEdgePtr() const { return uniqueSrcEdgePtr_; }
  /// [E]: sorted edge ids grouped by unique source pair (ascending within a pair).
  const at::Tensor &uniqueSrcEdges() const { return uniqueSrcEdges_; }
  /// [U_dst+1]: the edges of unique destination pair u are the sorted positions
  /// uniqueDstEdgePtr[u] .. uniqueDstEdgePtr[u+1] (contiguous: edges are sorted by relation,
  /// then destination).
  const at::Tensor &uniqueDstEdgePtr() const { return uniqueDstEdgePtr_; }
  /// [N+1]: the unique source pairs of node i are uniqueSrcByNode[uniqueSrcNodePtr[i] ..
  /// uniqueSrcNodePtr[i+1]] (ascending, i.e. by relation).
  const at::Tensor &uniqueSrcNodePtr() const { return uniqueSrcNodePtr_; }
  const at::Tensor &uniqueSrcByNode() const { return uniqueSrcByNode_; }
  /// The same for the unique destination pairs.
  const at::Tensor &uniqueDstNodePtr() const { return uniqueDstNodePtr_; }
  const at::Tensor &uniqueDstByNode() const { return uniqueDstByNode_; }
  /// @}

  /// @name Node types.
  /// @{
  /// [N]: the type of every node (zeros without ntype).
  const at::Tensor &ntype() const { return ntype_; }
  /// [T+1]: the nodes of type t are ntypePerm[ntypePtr[t] .. ntypePtr[t+1]].
  const at::Tensor &ntypePtr() const { return ntypePtr_; }
  /// [N]: type-sorted position -> node id (stable: ascending node id within a type).
  const at::Tensor &ntypePerm() const { return ntypePerm_; }
  /// [N]: node id -> type-sorted position.
  const at::Tensor &ntypePermInv() const { return ntypePermInv_; }
  /// @}

  /// @name Degree norms (float64, per sorted edge).
  /// @{
  /// 1 / |N_r(i)|: one over the number of incoming edges of the edge's relation at its destination
  /// (PyG RGCNConv's aggr="mean").
  const at::Tensor &normRelation() const { return normRelation_; }
  /// 1 / in-degree of the edge's destination.
  const at::Tensor &normIn() const { return normIn_; }
  /// @}

  /// {0, N, 0, E, 0, U_src, 0, U_dst} (int64, on the graph's device): the row ranges of the
  /// four row spaces, which kernels read on the device. Made once per graph (and per to()), so
  /// that a call on a CUDA graph never copies from the host.
  const at::Tensor &ranges() const { return ranges_; }

private:
  Graph() = default;

  int64_t numNodes_ = 0, numEdges_ = 0, numRelations_ = 0, numNtypes_ = 1;
  bool hasNtype_ = false;
  at::Tensor src_, dst_, etype_;
  at::Tensor relPtr_, edgePerm_, edgePermInv_, sortedSrc_, sortedDst_, sortedEtype_;
  at::Tensor inPtr_, inEid_, inSrc_, outPtr_, outEid_, outDst_;
  at::Tensor uniqueSrcPtr_, uniqueSrc_, uniqueSrcInv_, uniqueDstPtr_, uniqueDst_, uniqueDstInv_;
  at::Tensor ntype_, ntypePtr_, ntypePerm_, ntypePermInv_;
  at::Tensor normRelation_, normIn_;
  at::Tensor uniqueSrcEdgePtr_, uniqueSrcEdges_, uniqueDstEdgePtr_;
  at::Tensor uniqueSrcNodePtr_, uniqueSrcByNode_, uniqueDstNodePtr_, uniqueDstByNode_;
  at::Tensor ranges_;

  /// Pointers to every tensor member, in tensorNames() order.
  std::vector<at::Tensor *> members();
};

} // namespace hector
