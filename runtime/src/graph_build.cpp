//===- graph_build.cpp - The CPU algorithms of hector::Graph ---------------===//
//
// Stable counting sorts (per-thread histograms over contiguous chunks, a prefix over buckets
// then chunks, a scatter), a stable LSD radix sort of the edges built from them, parallel
// gathers and run scans. Buffers are allocated before every
// parallel region, so an allocation failure is an ordinary exception of the calling thread.
//
//===----------------------------------------------------------------------===//
#include "graph_build.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace hector {
namespace graph_build {
namespace {

int maxThreads() {
#if defined(_OPENMP)
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/// Threads for a pass over `n` items with `buckets` histogram bins per thread: at most the
/// machine's, few enough that the histograms stay below ~4 entries per item (a graph with
/// many more nodes than edges sorts on one thread), and none idle on tiny inputs.
int sortThreads(int64_t n, int64_t buckets) {
  int64_t t = std::min<int64_t>(maxThreads(), 16);
  t = std::min<int64_t>(t, std::max<int64_t>(1, n / 32768));
  if (buckets > 0)
    t = std::min<int64_t>(t, std::max<int64_t>(1, (4 * n) / buckets));
  return static_cast<int>(std::max<int64_t>(1, t));
}

/// [begin, end) of chunk `c` of `chunks` over n items.
inline void chunkRange(int64_t n, int chunks, int c, int64_t &begin, int64_t &end) {
  begin = n * c / chunks;
  end = n * (c + 1) / chunks;
}

/// Stable counting scatter: visits the items i in [0, n) ordered by key(i) in [0, buckets),
/// ties by i, calling place(k, i) with k the item's position in that order; offsets[b]
/// (buckets + 1 entries, may be null) = the first position of bucket b. Per-thread histograms
/// over contiguous chunks, a prefix over buckets then chunks, a scatter.
template <typename I, typename Key, typename Place>
void countingScatter(int64_t n, int64_t buckets, Key key, Place place, I *offsets) {
  const int T = sortThreads(n, buckets);
  std::vector<int64_t> hist(static_cast<size_t>(T) * static_cast<size_t>(buckets), 0);
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t) {
    int64_t begin, end;
    chunkRange(n, T, t, begin, end);
    int64_t *h = hist.data() + static_cast<size_t>(t) * buckets;
    for (int64_t i = begin; i < end; ++i)
      ++h[key(i)];
  }
  int64_t running = 0;
  for (int64_t b = 0; b < buckets; ++b) {
    if (offsets)
      offsets[b] = static_cast<I>(running);
    for (int t = 0; t < T; ++t) {
      int64_t &h = hist[static_cast<size_t>(t) * buckets + b];
      const int64_t count = h;
      h = running;
      running += count;
    }
  }
  if (offsets)
    offsets[buckets] = static_cast<I>(running);
#pragma omp parallel for num_threads(T) schedule(static, 1)
  for (int t = 0; t < T; ++t) {
    int64_t begin, end;
    chunkRange(n, T, t, begin, end);
    int64_t *h = hist.data() + static_cast<size_t>(t) * buckets;
    for (int64_t i = begin; i < end; ++i)
      place(h[key(i)]++, i);
  }
}

/// Stable counting sort: out[k] = item(i) for the items i in [0, n) ordered by key(i) in
/// [0, buckets), ties by i; offsets as countingScatter.
template <typename I, typename Key, typename Item>
void countingSort(int64_t n, int64_t buckets, Key key, Item item, I *out, I *offsets) {
  countingScatter<I>(
      n, buckets, key, [&](int64_t at, int64_t i) { out[at] = static_cast<I>(item(i)); }, offsets);
}

/// One pass of a stable LSD radix sort over records (key, id, src) held as three arrays: the
/// records ordered by digit `(key >> shift) & mask`, ties by position. `read(i, key, id, src)`
/// loads record i of the input, which has `n` records; the output goes to (outKey, outId,
/// outSrc). At most 4,096 buckets, so the scatter writes a few thousand sequential streams that
/// stay in the caches whatever the size of the graph.
template <typename K, typename I, typename Read>
void radixPass(int64_t n, int shift, K mask, Read read, K *outKey, I *outId, I *outSrc) {
  auto digit = [&](int64_t i) {
    K key;
    I id, src;
    read(i, key, id, src);
    return static_cast<int64_t>((key >> shift) & mask);
  };
  countingScatter<I>(
      n, static_cast<int64_t>(mask) + 1, digit,
      [&](int64_t at, int64_t i) { read(i, outKey[at], outId[at], outSrc[at]); },
      static_cast<I *>(nullptr));
}

/// Sorts `n` records (read(i, key, id, src): record i of the input, key <= largest) by key,
/// stably, in ceil(bits / 12) radix passes that carry each record's id and source; the last
/// pass writes them into outId and outSrc. Every pass streams its input: no
/// random access to arrays of n entries, so the time grows with n even where those arrays
/// exceed the caches. Returns the sorted keys.
template <typename K, typename I, typename Read>
std::vector<K> radixSort(int64_t n, uint64_t largest, Read read, I *outId, I *outSrc) {
  int bits = 1;
  while (bits < 64 && (largest >> bits) != 0)
    ++bits;
  const int passes = (bits + 11) / 12, digit = (bits + passes - 1) / passes;
  const K mask = static_cast<K>((uint64_t(1) << digit) - 1);
  const size_t temp = static_cast<size_t>(n);
  // Ping-pong buffers (A after even passes, B after odd ones) but for the last pass's ids and
  // sources, which go straight to their arrays.
  std::vector<K> keyA(temp), keyB(passes > 1 ? temp : 0);
  std::vector<I> idA(passes > 1 ? temp : 0), idB(passes > 2 ? temp : 0);
  std::vector<I> srcA(passes > 1 ? temp : 0), srcB(passes > 2 ? temp : 0);
  K *inKey = nullptr;
  const I *inId = nullptr, *inSrc = nullptr;
  for (int pass = 0; pass < passes; ++pass) {
    const bool last = pass == passes - 1, even = pass % 2 == 0;
    K *key = even ? keyA.data() : keyB.data();
    I *id = last ? outId : even ? idA.data() : idB.data();
    I *src = last ? outSrc : even ? srcA.data() : srcB.data();
    if (pass == 0)
      radixPass<K, I>(n, 0, mask, read, key, id, src);
    else
      radixPass<K, I>(
          n, pass * digit, mask,
          [&](int64_t i, K &k, I &d, I &s) {
            k = inKey[i];
            d = inId[i];
            s = inSrc[i];
          },
          key, id, src);
    inKey = key;
    inId = id;
    inSrc = src;
  }
  return passes % 2 == 1 ? std::move(keyA) : std::move(keyB);
}

/// One scan of keys node * R + relation sorted by node: the CSR pointers (ptr[v]: the first
/// position whose node is at least v, written once per v by the position where the nodes pass
/// it; ptr[N] = n), the relation of every position (`etype`, unless null) and the number of
/// (node, relation) runs.
template <typename K, typename I>
int64_t scanSortedKeys(const std::vector<K> &keys, int64_t numNodes, int64_t numRelations, I *ptr,
                       I *etype) {
  const int64_t n = static_cast<int64_t>(keys.size());
  const K R = static_cast<K>(std::max<int64_t>(numRelations, 1));
  const K *key = keys.data();
  int64_t runs = 0;
#pragma omp parallel for schedule(static) reduction(+ : runs)
  for (int64_t p = 0; p < n; ++p) {
    const int64_t node = static_cast<int64_t>(key[p] / R);
    if (etype)
      etype[p] = static_cast<I>(key[p] - static_cast<K>(node) * R);
    const int64_t before = p == 0 ? -1 : static_cast<int64_t>(key[p - 1] / R);
    for (int64_t v = before + 1; v <= node; ++v)
      ptr[v] = static_cast<I>(p);
    runs += p == 0 || key[p] != key[p - 1];
  }
  const int64_t lastNode = n == 0 ? -1 : static_cast<int64_t>(key[n - 1] / R);
  for (int64_t v = lastNode + 1; v <= numNodes; ++v)
    ptr[v] = static_cast<I>(n);
  return runs;
}

/// Whether keys node * R + relation fit 32 bits.
inline bool keysFit32(int64_t numNodes, int64_t numRelations) {
  return static_cast<uint64_t>(numNodes) *
             static_cast<uint64_t>(std::max<int64_t>(numRelations, 1)) <=
         (uint64_t(1) << 32);
}

/// The largest key node * R + relation.
inline uint64_t largestKey(int64_t numNodes, int64_t numRelations) {
  const uint64_t keys =
      static_cast<uint64_t>(numNodes) * static_cast<uint64_t>(std::max<int64_t>(numRelations, 1));
  return keys == 0 ? 0 : keys - 1;
}

/// buildBase with keys of type K: the edges sorted by destination * R + relation (stable: ties
/// by user edge id), carrying ids and sources; then inPtr, the relations and the runs.
template <typename K, typename I>
int64_t buildBaseRadix(const EdgeList &g, I *inPtr, I *sortedSrc, I *sortedEtype, I *edgePerm) {
  const K R = static_cast<K>(std::max<int64_t>(g.numRelations, 1));
  std::vector<K> keys = radixSort<K, I>(
      g.numEdges, largestKey(g.numNodes, g.numRelations),
      [&](int64_t i, K &key, I &id, I &src) {
        key = static_cast<K>(g.dst[i]) * R + static_cast<K>(g.etype[i]);
        id = static_cast<I>(i);
        src = static_cast<I>(g.src[i]);
      },
      edgePerm, sortedSrc);
  return scanSortedKeys<K, I>(keys, g.numNodes, g.numRelations, inPtr, sortedEtype);
}

} // namespace

template <typename I>
int64_t buildBase(const EdgeList &g, I *inPtr, I *sortedSrc, I *sortedEtype, I *edgePerm) {
  if (keysFit32(g.numNodes, g.numRelations))
    return buildBaseRadix<uint32_t, I>(g, inPtr, sortedSrc, sortedEtype, edgePerm);
  return buildBaseRadix<uint64_t, I>(g, inPtr, sortedSrc, sortedEtype, edgePerm);
}

template <typename I>
int64_t countUniqueSrc(int64_t numNodes, int64_t numEdges, int64_t numRelations, const I *sortedSrc,
                       const I *sortedEtype, int64_t maxBytes) {
  const double bits = static_cast<double>(numNodes) * static_cast<double>(numRelations);
  if (bits / 8 > static_cast<double>(maxBytes))
    return -1;
  const int64_t words = (static_cast<int64_t>(bits) + 63) / 64;
  std::vector<uint64_t> bitmap(static_cast<size_t>(words), 0);
  uint64_t *w = bitmap.data();
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < numEdges; ++p) {
    const int64_t bit = static_cast<int64_t>(sortedEtype[p]) * numNodes + sortedSrc[p];
    __atomic_fetch_or(&w[bit >> 6], uint64_t(1) << (bit & 63), __ATOMIC_RELAXED);
  }
  int64_t count = 0;
#pragma omp parallel for schedule(static) reduction(+ : count)
  for (int64_t i = 0; i < words; ++i)
    count += __builtin_popcountll(w[i]);
  return count;
}

template <typename I> void buildDst(int64_t numNodes, const I *inPtr, I *sortedDst) {
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < numNodes; ++v)
    for (int64_t p = inPtr[v]; p < static_cast<int64_t>(inPtr[v + 1]); ++p)
      sortedDst[p] = static_cast<I>(v);
}

template <typename I>
void buildRelation(int64_t numEdges, int64_t numRelations, const I *sortedEtype, I *relRows,
                   I *relPtr) {
  countingSort<I>(
      numEdges, numRelations, [&](int64_t p) { return static_cast<int64_t>(sortedEtype[p]); },
      [](int64_t p) { return p; }, relRows, relPtr);
  if (numRelations == 0)
    relPtr[0] = 0;
}

template <typename I>
void buildOut(int64_t numNodes, int64_t numEdges, const I *sortedSrc, const I *relRows, I *outPos,
              I *outPtr) {
  std::vector<I> key(static_cast<size_t>(numEdges));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < numEdges; ++i)
    key[i] = sortedSrc[relRows[i]];
  countingSort<I>(
      numEdges, numNodes, [&](int64_t i) { return static_cast<int64_t>(key[i]); },
      [&](int64_t i) { return static_cast<int64_t>(relRows[i]); }, outPos, outPtr);
  if (numNodes == 0)
    outPtr[0] = 0;
}

template <typename I>
void buildOutDst(int64_t numNodes, int64_t numEdges, const I *inPtr, const I *outPos, I *outDst) {
  std::vector<I> dst(static_cast<size_t>(numEdges));
  buildDst<I>(numNodes, inPtr, dst.data());
#pragma omp parallel for schedule(static)
  for (int64_t j = 0; j < numEdges; ++j)
    outDst[j] = dst[outPos[j]];
}

template <typename I>
int64_t countRuns(int64_t numNodes, const I *rowPtr, const I *entryPos, const I *sortedEtype) {
  int64_t runs = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : runs)
  for (int64_t v = 0; v < numNodes; ++v) {
    const int64_t begin = rowPtr[v], end = rowPtr[v + 1];
    int64_t prev = -1;
    for (int64_t k = begin; k < end; ++k) {
      const int64_t rel = sortedEtype[entryPos ? static_cast<int64_t>(entryPos[k]) : k];
      runs += rel != prev;
      prev = rel;
    }
  }
  return runs;
}

template <typename I>
void buildNtype(int64_t numNodes, int64_t numNtypes, const I *ntype, I *perm, I *ptr) {
  countingSort<I>(
      numNodes, std::max<int64_t>(numNtypes, 1),
      [&](int64_t v) { return static_cast<int64_t>(ntype[v]); }, [](int64_t v) { return v; }, perm,
      ptr);
  ptr[numNtypes] = static_cast<I>(numNodes);
}

#define HECTOR_INSTANTIATE(I)                                                                      \
  template int64_t buildBase<I>(const EdgeList &, I *, I *, I *, I *);                             \
  template int64_t countUniqueSrc<I>(int64_t, int64_t, int64_t, const I *, const I *, int64_t);    \
  template void buildDst<I>(int64_t, const I *, I *);                                              \
  template void buildRelation<I>(int64_t, int64_t, const I *, I *, I *);                           \
  template void buildOut<I>(int64_t, int64_t, const I *, const I *, I *, I *);                     \
  template void buildOutDst<I>(int64_t, int64_t, const I *, const I *, I *);                       \
  template int64_t countRuns<I>(int64_t, const I *, const I *, const I *);                         \
  template void buildNtype<I>(int64_t, int64_t, const I *, I *, I *);
HECTOR_INSTANTIATE(int32_t)
HECTOR_INSTANTIATE(int64_t)
#undef HECTOR_INSTANTIATE

} // namespace graph_build
} // namespace hector
