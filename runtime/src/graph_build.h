//===- graph_build.h - The CPU algorithms of hector::Graph -------*- C++ -*-===//
//
// Parallel, stable counting sorts and run scans over plain arrays, templated on the index type
// (int32_t or int64_t). Every result is a function of the input alone (a stable sort's output
// is unique), so it does not depend on the number of threads. Internal to the runtime.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace hector {
namespace graph_build {

/// The user's edge list as the algorithms read it (int64, host memory, validated).
struct EdgeList {
  int64_t numNodes = 0, numEdges = 0, numRelations = 0;
  const int64_t *src = nullptr, *dst = nullptr, *etype = nullptr;
};

/// The base structures: edges in internal order (by destination, then relation, then user edge
/// id). `inPtr` [N+1], `sortedSrc`, `sortedEtype`, `edgePerm` [E]. Returns U_dst, the number of
/// (destination, relation) runs.
template <typename I>
int64_t buildBase(const EdgeList &g, I *inPtr, I *sortedSrc, I *sortedEtype, I *edgePerm);

/// U_src, counted with a bitmap of R x N bits; -1 when that bitmap would exceed `maxBytes`.
template <typename I>
int64_t countUniqueSrc(int64_t numNodes, int64_t numEdges, int64_t numRelations, const I *sortedSrc,
                       const I *sortedEtype, int64_t maxBytes);

/// sortedDst [E]: the node of every position (from inPtr).
template <typename I> void buildDst(int64_t numNodes, const I *inPtr, I *sortedDst);

/// Positions grouped by relation (stable): relRows [E], relPtr [R+1].
template <typename I>
void buildRelation(int64_t numEdges, int64_t numRelations, const I *sortedEtype, I *relRows,
                   I *relPtr);

/// The CSR by source, each node's edges by relation, then position: outPos [E], outPtr [N+1],
/// from the positions grouped by relation (`relRows`).
template <typename I>
void buildOut(int64_t numNodes, int64_t numEdges, const I *sortedSrc, const I *relRows, I *outPos,
              I *outPtr);

/// outDst [E]: the destination of every entry of the CSR by source, in CSR order (from inPtr
/// and outPos), so that a traversal of that CSR reads its neighbours in order.
template <typename I>
void buildOutDst(int64_t numNodes, int64_t numEdges, const I *inPtr, const I *outPos, I *outDst);

/// The number of (node, relation) runs of a CSR whose entries are grouped by relation within
/// each node (entryPos: null for the identity).
template <typename I>
int64_t countRuns(int64_t numNodes, const I *rowPtr, const I *entryPos, const I *sortedEtype);

/// The arrays of U entries buildPairs fills once it knows U.
template <typename I> struct PairArrays {
  I *node;   ///< [U] the node of every pair
  I *runPtr; ///< [U+1] CSR entries of every run, in CSR order
  I *run;    ///< [U] the pair of every run, in CSR order
};

/// The unique (node, relation) pairs of a CSR (rowPtr; entryPos, null for the identity) whose
/// entries are grouped by relation within each node, numbered by relation, then node. Returns
/// their number; fills pairInv [E] (the pair of every position), pairPtr [R+1] (relation r's
/// pairs) and the PairArrays that `allocate(U)` returns: every pair's node, and the runs of the
/// CSR in its own order (run k: entries [runPtr[k], runPtr[k+1]), pair run[k]).
template <typename I, typename Allocate>
int64_t buildPairs(int64_t numNodes, int64_t numRelations, const I *rowPtr, const I *entryPos,
                   const I *sortedEtype, I *pairInv, I *pairPtr, Allocate &&allocate);

/// Nodes grouped by type (stable): perm [N], ptr [T+1].
template <typename I>
void buildNtype(int64_t numNodes, int64_t numNtypes, const I *ntype, I *perm, I *ptr);

} // namespace graph_build
} // namespace hector

// buildPairs is a template over the allocator; its definition is here.
namespace hector {
namespace graph_build {

template <typename I, typename Allocate>
int64_t buildPairs(int64_t numNodes, int64_t numRelations, const I *rowPtr, const I *entryPos,
                   const I *sortedEtype, I *pairInv, I *pairPtr, Allocate &&allocate) {
#if defined(_OPENMP)
  const int threads = omp_get_max_threads();
#else
  const int threads = 1;
#endif
  const int64_t R = numRelations;
  const int C = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(numNodes, 8 * threads)));
  // The relation of every entry, read once (an entry's position may be far from its index).
  const int64_t entries = rowPtr[numNodes];
  std::vector<I> rel;
  const I *relOf = sortedEtype;
  if (entryPos) {
    rel.resize(static_cast<size_t>(entries));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < entries; ++k)
      rel[k] = sortedEtype[entryPos[k]];
    relOf = rel.data();
  }
  // Runs per (chunk of nodes, relation), then ids numbered by relation, then chunk, then node.
  std::vector<int64_t> next(static_cast<size_t>(C) * static_cast<size_t>(std::max<int64_t>(R, 1)),
                            0);
  // The first run of every chunk, in CSR order (after the count: prefix sums).
  std::vector<int64_t> firstRun(static_cast<size_t>(C) + 1, 0);
#pragma omp parallel for schedule(dynamic, 1)
  for (int c = 0; c < C; ++c) {
    const int64_t vb = numNodes * c / C, ve = numNodes * (c + 1) / C;
    int64_t *count = next.data() + static_cast<size_t>(c) * R;
    for (int64_t v = vb; v < ve; ++v) {
      int64_t prev = -1;
      for (int64_t k = rowPtr[v]; k < static_cast<int64_t>(rowPtr[v + 1]); ++k) {
        const int64_t r = relOf[k];
        if (r != prev) {
          ++count[r];
          ++firstRun[c + 1];
        }
        prev = r;
      }
    }
  }
  for (int c = 0; c < C; ++c)
    firstRun[c + 1] += firstRun[c];
  int64_t running = 0;
  for (int64_t r = 0; r < R; ++r) {
    pairPtr[r] = static_cast<I>(running);
    for (int c = 0; c < C; ++c) {
      int64_t &n = next[static_cast<size_t>(c) * R + r];
      const int64_t count = n;
      n = running;
      running += count;
    }
  }
  pairPtr[R] = static_cast<I>(running);
  const PairArrays<I> out = allocate(running);
  out.runPtr[running] = static_cast<I>(entries);
#pragma omp parallel for schedule(dynamic, 1)
  for (int c = 0; c < C; ++c) {
    const int64_t vb = numNodes * c / C, ve = numNodes * (c + 1) / C;
    int64_t *at = next.data() + static_cast<size_t>(c) * R;
    int64_t runAt = firstRun[c];
    for (int64_t v = vb; v < ve; ++v) {
      int64_t prev = -1, id = -1;
      for (int64_t k = rowPtr[v]; k < static_cast<int64_t>(rowPtr[v + 1]); ++k) {
        const int64_t r = relOf[k];
        if (r != prev) {
          id = at[r]++;
          out.node[id] = static_cast<I>(v);
          out.runPtr[runAt] = static_cast<I>(k);
          out.run[runAt++] = static_cast<I>(id);
          prev = r;
        }
        pairInv[entryPos ? static_cast<int64_t>(entryPos[k]) : k] = static_cast<I>(id);
      }
    }
  }
  return running;
}

} // namespace graph_build
} // namespace hector
