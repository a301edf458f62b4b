//===- hector/emit/graph_schema.h - The graph structures, one list -------===//
//
// Every index structure a preprocessed hector::Graph can hold, in one X-macro list that the
// runtime (names, lengths, build groups), the emitted code (GraphView fields) and the emitter
// (the structures a layer's kernels read, written to its manifest) all expand. Dependency-free:
// valid C++17 for the host compiler, nvcc and the compiler (which links no LibTorch).
//
// Edges are numbered in the graph's *internal order*: stably by destination, then relation,
// then the user's edge id. A node's incoming edges are therefore a contiguous range of
// positions (in_ptr), and within it each relation's edges are contiguous too: the unique
// (destination, relation) pairs are runs of consecutive positions.
//
// Lengths are in terms of N (nodes), E (edges), R (relations), T (node types), Us / Ud (unique
// source / destination pairs). A structure is built with its whole group, on first use.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_GRAPH_SCHEMA_H
#define HECTOR_EMIT_GRAPH_SCHEMA_H

/// X(name, field, group, length): `name` is the structure's name in Python, manifests and
/// errors; `field` its GraphView member; `group` the unit it is built in; `length` its entry
/// count (GraphLength).
#define HECTOR_GRAPH_STRUCTURES(X)                                                                 \
  /* Base: built with the graph. */                                                                \
  X(in_ptr, inPtr, Base, NodesPlus1)        /* node v's incoming edges: [in_ptr[v], ...+1) */      \
  X(sorted_src, sortedSrc, Base, Edges)     /* source of every edge */                             \
  X(sorted_etype, sortedEtype, Base, Edges) /* relation of every edge */                           \
  X(edge_perm, edgePerm, Base, Edges)       /* internal position -> user edge id */                \
  X(node_range, nodeRange, Base, Two)       /* {0, N} */                                           \
  X(edge_range, edgeRange, Base, Two)       /* {0, E} */                                           \
  /* The destination of every edge (fills the in_ptr ranges). */                                   \
  X(sorted_dst, sortedDst, Dst, Edges)                                                             \
  /* Edges grouped by relation: relation r's positions rel_rows[rel_ptr[r] .. rel_ptr[r+1]). */    \
  X(rel_ptr, relPtr, Relation, RelationsPlus1)                                                     \
  X(rel_rows, relRows, Relation, Edges)                                                            \
  /* CSR by source: node j's outgoing edges out_pos[out_ptr[j] ..), by relation, then position */  \
  X(out_ptr, outPtr, Out, NodesPlus1)                                                              \
  X(out_pos, outPos, Out, Edges)                                                                   \
  /* The destination of every entry of the CSR by source, in CSR order: sorted_dst[out_pos[j]]. */ \
  X(out_dst, outDst, OutDst, Edges)                                                                \
  /* Unique (source, relation) pairs, numbered by relation, then node: relation r's pairs are */   \
  /* unique_src_ptr[r] .. unique_src_ptr[r+1]. A pair's edges are a run of the CSR by source. */   \
  X(unique_src, uniqueSrc, UniqueSrc, UniqueSrc) /* the pair's node */                             \
  X(unique_src_ptr, uniqueSrcPtr, UniqueSrc, RelationsPlus1)                                       \
  X(unique_src_inv, uniqueSrcInv, UniqueSrc, Edges)   /* every edge's pair */                      \
  X(unique_src_range, uniqueSrcRange, UniqueSrc, Two) /* {0, Us} */                                \
  /* The pairs as runs of the CSR by source, in CSR order: run k is the entries */                 \
  /* [unique_src_run_ptr[k], unique_src_run_ptr[k+1]) of one node, and pair unique_src_run[k]. */  \
  X(unique_src_run_ptr, uniqueSrcRunPtr, UniqueSrc, UniqueSrcPlus1)                                \
  X(unique_src_run, uniqueSrcRun, UniqueSrc, UniqueSrc)                                            \
  /* Unique (destination, relation) pairs, numbered by relation, then node; a pair's edges are */  \
  /* a run of consecutive positions. */                                                            \
  X(unique_dst, uniqueDst, UniqueDst, UniqueDst)                                                   \
  X(unique_dst_ptr, uniqueDstPtr, UniqueDst, RelationsPlus1)                                       \
  X(unique_dst_inv, uniqueDstInv, UniqueDst, Edges)                                                \
  X(unique_dst_range, uniqueDstRange, UniqueDst, Two)                                              \
  /* The same runs of the CSR by destination (consecutive positions). */                           \
  X(unique_dst_run_ptr, uniqueDstRunPtr, UniqueDst, UniqueDstPlus1)                                \
  X(unique_dst_run, uniqueDstRun, UniqueDst, UniqueDst)                                            \
  /* Node types: every node's type, and the nodes of type t ntype_perm[ntype_ptr[t] ..). */        \
  X(ntype, ntype, NType, Nodes)                                                                    \
  X(ntype_ptr, ntypePtr, NType, NtypesPlus1)                                                       \
  X(ntype_perm, ntypePerm, NType, Nodes)

namespace hector {
namespace graph_schema {

/// The structures, in schema order (the order of Graph::tensors()).
enum class GraphStructure : int {
#define HECTOR_GRAPH_ENUM(name, field, group, length) name,
  HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_ENUM)
#undef HECTOR_GRAPH_ENUM
};

constexpr int kNumGraphStructures = 0
#define HECTOR_GRAPH_COUNT(name, field, group, length) +1
    HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_COUNT)
#undef HECTOR_GRAPH_COUNT
    ;

/// The units structures are built in.
enum class GraphGroup : int { Base, Dst, Relation, Out, OutDst, UniqueSrc, UniqueDst, NType };
constexpr int kNumGraphGroups = 8;

/// The entry count of a structure.
enum class GraphLength : int {
  Nodes,
  NodesPlus1,
  Edges,
  RelationsPlus1,
  NtypesPlus1,
  UniqueSrc,
  UniqueSrcPlus1,
  UniqueDst,
  UniqueDstPlus1,
  Two
};

/// One structure's name, GraphView field, group and length.
struct GraphStructureInfo {
  const char *name;
  const char *field;
  GraphGroup group;
  GraphLength length;
};

/// Every structure's description, indexed by GraphStructure.
inline const GraphStructureInfo *graphStructures() {
  static const GraphStructureInfo infos[] = {
#define HECTOR_GRAPH_INFO(name, field, group, length)                                           \
  {#name, #field, GraphGroup::group, GraphLength::length},
      HECTOR_GRAPH_STRUCTURES(HECTOR_GRAPH_INFO)
#undef HECTOR_GRAPH_INFO
  };
  return infos;
}

/// A set of structures, as a bit mask over GraphStructure.
using GraphStructureMask = unsigned long long;
static_assert(kNumGraphStructures <= 64, "a GraphStructureMask holds every structure");

constexpr GraphStructureMask maskOf(GraphStructure s) {
  return GraphStructureMask(1) << static_cast<int>(s);
}

/// The structure named `name`, or -1.
inline int graphStructureIndex(const char *name) {
  for (int i = 0; i < kNumGraphStructures; ++i) {
    const char *a = graphStructures()[i].name, *b = name;
    while (*a && *a == *b)
      ++a, ++b;
    if (*a == 0 && *b == 0)
      return i;
  }
  return -1;
}

} // namespace graph_schema
} // namespace hector

#endif // HECTOR_EMIT_GRAPH_SCHEMA_H
