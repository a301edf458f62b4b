//===- hector/kernel_common.h - Shared definitions of the kernel templates -===//
//
// Enums, small structs and reduction operators shared by the CPU and CUDA
// kernel templates. Valid C++17 for both the host compiler and nvcc.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_KERNEL_COMMON_H
#define HECTOR_KERNEL_COMMON_H

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define HECTOR_HD __host__ __device__ __forceinline__
#else
#define HECTOR_HD inline
#endif

#if defined(__GNUC__) || defined(__CUDACC__)
#define HECTOR_RESTRICT __restrict__
#else
#define HECTOR_RESTRICT
#endif

namespace hector {
namespace tmpl {

/// The type the kernels compute in for elements stored as T: T itself for float and double;
/// float for the 16-bit types (bfloat16, float16: any class type that converts to and from
/// float, such as c10::BFloat16 and c10::Half). Loads convert to it, products, sums, softmax
/// maxima and every reduction run in it, stores round back to T once.
template <typename T> struct AccumTypeOf {
  using type = std::conditional_t<std::is_floating_point<T>::value, T, float>;
};
template <typename T> using AccumType = typename AccumTypeOf<T>::type;

/// How the right-hand operand of a segmented GEMM is read: `kIdentity` reads
/// B_s as a row-major [K, N] matrix, `kTranspose` reads a row-major [N, K]
/// matrix and uses its transpose.
enum class BOp : int { kIdentity = 0, kTranspose = 1 };

/// Where (and how) a segmented GEMM writes its output rows.
///
/// - `kStore`:      C[row]  = result   (row-aligned)
/// - `kAccumulate`: C[row] += result   (row-aligned)
/// - `kAccumulateIndexPerSegment`: C[scatter[row]] += result, where `scatter` is injective
///   within each segment (rows of unique (node, relation) pairs summed into their nodes):
///   segments are added one after another, the rows of one in parallel, straight into C (no
///   workspace; deterministic).
///
/// These are the modes the emitter instantiates; a sum of edge rows into nodes or pairs is a
/// traversal's reduction, not a GEMM scatter.
enum class Scatter : int {
  kStore = 0,
  kAccumulate = 1,
  kAccumulateIndexPerSegment = 2,
};

/// True when a scatter mode reads an output index array.
HECTOR_HD constexpr bool scatterIsIndexed(Scatter s) {
  return s == Scatter::kAccumulateIndexPerSegment;
}

/// Whether a result overwrites its destination or is added to it.
enum class Assign : int { kStore = 0, kAdd = 1 };

/// Reduction of per-edge rows into a node row. `kMean` divides the sum by the
/// in-degree; every reduction writes 0 for a node without edges.
enum class Reduce : int { kSum = 0, kMean = 1, kMax = 2 };

/// One row of an edge-parallel traversal as seen by its functor.
///
/// `pos` is the row (an edge's position in the graph's internal order, or a unique pair's id),
/// `eid` the user's edge id (equals `pos` without a permutation), `src` / `dst` its ends (a
/// pair's node for both), `rel` its relation.
struct EdgeRef {
  std::int64_t pos;
  std::int64_t eid;
  std::int64_t src;
  std::int64_t dst;
  std::int64_t rel;
};

/// Identity and combine step of a `Reduce`, for an accumulator of type T.
template <Reduce R, typename T> struct ReduceOp;

template <typename T> struct ReduceOp<Reduce::kSum, T> {
  HECTOR_HD static T identity() { return T(0); }
  HECTOR_HD static T combine(T acc, T v) { return acc + v; }
  HECTOR_HD static T finish(T acc, std::int64_t /*degree*/) { return acc; }
};

template <typename T> struct ReduceOp<Reduce::kMean, T> {
  HECTOR_HD static T identity() { return T(0); }
  HECTOR_HD static T combine(T acc, T v) { return acc + v; }
  HECTOR_HD static T finish(T acc, std::int64_t degree) {
    return degree > 0 ? acc / T(degree) : T(0);
  }
};

/// Largest finite value of a floating-point type, usable in device code.
template <typename T> struct FiniteMax;
template <> struct FiniteMax<float> {
  HECTOR_HD static constexpr float value() { return 3.402823466e+38F; }
};
template <> struct FiniteMax<double> {
  HECTOR_HD static constexpr double value() { return 1.7976931348623157e+308; }
};

template <typename T> struct ReduceOp<Reduce::kMax, T> {
  HECTOR_HD static T identity() { return -FiniteMax<T>::value(); }
  HECTOR_HD static T combine(T acc, T v) { return v > acc ? v : acc; }
  HECTOR_HD static T finish(T acc, std::int64_t degree) {
    return degree > 0 ? acc : T(0);
  }
};

//===----------------------------------------------------------------------===//
// Problem descriptions (plain pointers and sizes; memory on the executing side)
//===----------------------------------------------------------------------===//

/// A segmented GEMM: for every segment s with rows [off[s], off[s+1]) and
/// every head h,
///
///     C[out(row)][h, :] (=|+=) A[in(row)][h, :] x op(B_s[h])
///
/// with in(row) = gather ? gather[phys(row)] : phys(row), out(row) = scatter ?
/// scatter[phys(row)] : phys(row), phys(row) = rows ? rows[row] : row (the
/// segments' rows may be a permutation of the physical rows: edges grouped by
/// relation while they are stored by destination), B_s[h] = B + s * strideB + h * K * N, and op()
/// the identity (B_s[h] is [K, N]) or the transpose (B_s[h] is [N, K]). A row of A holds heads x K
/// values starting at A + in(row) * lda; a row of C holds heads x N values starting at C + out(row)
/// * ldc. Strides are in elements.
///
/// A, B and C may each have their own element type (T, TB, TC; by default all T) provided
/// they compute in one AccumType: a 16-bit type beside float (bfloat16 or float16 rows of A
/// times a float32 B into a float32 C, for instance, so that a product of 16-bit rows keeps
/// float precision), never float beside double. The CPU template takes such mixed problems;
/// the CUDA template takes one element type.
template <typename T, typename Index = std::int64_t, typename TB = T, typename TC = T>
struct GemmProblem {
  static_assert(std::is_same<AccumType<T>, AccumType<TB>>::value &&
                    std::is_same<AccumType<T>, AccumType<TC>>::value,
                "the operands of a GEMM problem compute in one AccumType");
  std::int64_t numSegments = 0;
  /// [numSegments + 1] non-decreasing row offsets; off[0] is usually 0.
  const Index *segOffsets = nullptr;
  /// Total rows off[numSegments] - off[0], known to the caller without
  /// reading segOffsets (it sizes grids and workspaces).
  std::int64_t numRows = 0;
  std::int64_t K = 0;
  std::int64_t N = 0;
  std::int64_t heads = 1;
  const T *A = nullptr;
  std::int64_t lda = 0;
  /// Optional: the physical row of every segment row (`phys` above; injective).
  const Index *rows = nullptr;
  /// Optional row index into A, indexed by physical row (duplicates allowed).
  const Index *gather = nullptr;
  const TB *B = nullptr;
  std::int64_t strideB = 0;
  TC *C = nullptr;
  std::int64_t ldc = 0;
  /// [numRows] output row of every physical row, for `Scatter::kAccumulateIndexPerSegment`
  /// (injective within each segment).
  const Index *scatter = nullptr;
};

/// The weight-gradient (outer-product) form of a segmented GEMM: for every
/// segment s and head h,
///
///     dB_s[h] (=|+=) sum_{row in s} A[in(row)][h, :]^T x dC[inc(row)][h, :]
///
/// a [K, N] matrix (stored [N, K] for `BOp::kTranspose`, matching the forward
/// operand's layout), summed over the segment's rows in a fixed order.
/// An empty segment yields zero (or leaves dB_s unchanged when adding). A, dC and dB may have
/// their own element types (T, TG, TD) on the terms of GemmProblem's.
template <typename T, typename Index = std::int64_t, typename TG = T, typename TD = T>
struct WeightGradProblem {
  static_assert(std::is_same<AccumType<T>, AccumType<TG>>::value &&
                    std::is_same<AccumType<T>, AccumType<TD>>::value,
                "the operands of a weight-gradient problem compute in one AccumType");
  std::int64_t numSegments = 0;
  const Index *segOffsets = nullptr;
  std::int64_t numRows = 0;
  std::int64_t K = 0;
  std::int64_t N = 0;
  std::int64_t heads = 1;
  const T *A = nullptr;
  std::int64_t lda = 0;
  /// Optional physical row of every segment row (as GemmProblem::rows); gatherA and gatherC
  /// are indexed by physical row.
  const Index *rows = nullptr;
  const Index *gatherA = nullptr;
  const TG *dC = nullptr;
  std::int64_t ldc = 0;
  const Index *gatherC = nullptr;
  TD *dB = nullptr;
  std::int64_t strideB = 0;
};

/// The rows of an edge-parallel traversal, in groups: row r of group g is in [groupPtr[g],
/// groupPtr[g+1]). Edges are grouped by their destination node (`groupIsNode`): a row's `dst`
/// is its group, its `src` src[row], its relation rel[row]. Unique pairs are grouped by
/// relation: a row's relation is its group, `src` and `dst` its node, node[row]. `eid` is
/// eid[row] (row when null).
template <typename Index = std::int64_t> struct EdgeRows {
  std::int64_t numRows = 0;
  std::int64_t numGroups = 0;
  const Index *groupPtr = nullptr;
  bool groupIsNode = true;
  const Index *src = nullptr;
  const Index *rel = nullptr;
  const Index *node = nullptr;
  const Index *eid = nullptr;

  /// The EdgeRef of row `pos` in group `group`.
  HECTOR_HD EdgeRef at(std::int64_t pos, std::int64_t group) const {
    EdgeRef e;
    e.pos = pos;
    e.eid = eid ? static_cast<std::int64_t>(eid[pos]) : pos;
    if (groupIsNode) {
      e.dst = group;
      e.src = static_cast<std::int64_t>(src[pos]);
      e.rel = static_cast<std::int64_t>(rel[pos]);
    } else {
      e.rel = group;
      e.src = e.dst = static_cast<std::int64_t>(node[pos]);
    }
    return e;
  }
};

/// A compressed sparse row graph, by destination (incoming edges) or by
/// source (outgoing edges): node v owns entries [rowPtr[v], rowPtr[v+1]),
/// each naming an edge row `edge[j]` (the row of edge-indexed tables; j
/// itself when `edge` is null) and the neighbour at the other end, `nbr[j]`
/// (in CSR order, so that a traversal reads it in order).
///
/// When the entries of every node are grouped by relation, the (node, relation) runs are the
/// unique pairs of that end: run k is the entries [runPtr[k], runPtr[k+1]) and pair runPair[k]
/// (numRuns runs, in CSR order; null where the traversal does not need them).
template <typename Index = std::int64_t> struct Csr {
  std::int64_t numNodes = 0;
  std::int64_t numEntries = 0;
  const Index *rowPtr = nullptr;
  const Index *edge = nullptr;
  const Index *nbr = nullptr;
  std::int64_t numRuns = 0;
  const Index *runPtr = nullptr;
  const Index *runPair = nullptr;

  HECTOR_HD std::int64_t edgeAt(std::int64_t j) const {
    return edge ? static_cast<std::int64_t>(edge[j]) : j;
  }
  HECTOR_HD std::int64_t nbrAt(std::int64_t j) const { return static_cast<std::int64_t>(nbr[j]); }
  /// The first run that starts at entry `j` or later (numRuns when none): a binary search.
  HECTOR_HD std::int64_t firstRunFrom(std::int64_t j) const {
    std::int64_t lo = 0, hi = numRuns;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (static_cast<std::int64_t>(runPtr[mid]) < j)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  /// The node that owns entry `j` (j < numEntries): a binary search.
  HECTOR_HD std::int64_t nodeOf(std::int64_t j) const {
    std::int64_t lo = 0, hi = numNodes - 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      if (static_cast<std::int64_t>(rowPtr[mid]) <= j)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
};

/// One CSR entry as seen by a node-parallel functor: its edge row, the neighbour at the edge's
/// other end, the row the traversal computes (the CSR node, or a unique pair of it) and the
/// CSR node.
struct CsrEdge {
  std::int64_t edge;
  std::int64_t nbr;
  std::int64_t node;
  std::int64_t csrNode;
};

/// Ceiling division for non-negative integers.
template <typename I> HECTOR_HD constexpr I ceilDiv(I a, I b) {
  return (a + b - 1) / b;
}

} // namespace tmpl
} // namespace hector

#endif // HECTOR_KERNEL_COMMON_H
