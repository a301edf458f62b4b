//===- graph.cpp - hector::Graph: validation and preprocessing -------------===//
//
// The graph's state (sizes, device, index dtype, the structures built so far and their version
// counters) is shared by every copy of a Graph. The structures are computed on the host by the
// parallel counting sorts of graph_build.cpp and moved to the graph's device; validation reads
// the user's tensors once on the host.
//
// Also registers the `hector` operators and the TorchScript class behind the Python hector.Graph.
//
//===----------------------------------------------------------------------===//
#include "hector/graph.h"
#include "hector/common.h"
#include "hector/graph_holder.h"
#include "hector/tensor_pool.h"

#include "graph_build.h"
#include "graph_ops.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/custom_class.h>
#include <torch/library.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <tuple>
#include <type_traits>

namespace hector {

using graph_schema::GraphLength;
using graph_schema::graphStructures;
using graph_schema::kNumGraphStructures;
using graph_schema::maskOf;

/// The state every copy of a Graph shares.
struct Graph::State {
  int64_t numNodes = 0, numEdges = 0, numRelations = 0, numNtypes = 1;
  bool hasNtype = false;
  int64_t numUniqueSrc = -1, numUniqueDst = 0;
  at::Device device = at::kCPU;
  at::ScalarType index = at::kInt;
  /// Whether missing structures may be built (false for a graph from fromTensors).
  bool lazy = true;
  /// The user's node types (index dtype, host) until the NType group is built.
  at::Tensor userNtype;
  std::array<at::Tensor, kNumGraphStructures> tensors;
  std::array<int64_t, kNumGraphStructures> versions{};
  std::mutex mutex;

  bool has(int s) const { return tensors[s].defined(); }
  /// Entries of a structure of length `length`.
  int64_t lengthOf(GraphLength length) const {
    switch (length) {
    case GraphLength::Nodes:
      return numNodes;
    case GraphLength::NodesPlus1:
      return numNodes + 1;
    case GraphLength::Edges:
      return numEdges;
    case GraphLength::RelationsPlus1:
      return numRelations + 1;
    case GraphLength::NtypesPlus1:
      return numNtypes + 1;
    case GraphLength::UniqueSrc:
      return numUniqueSrc;
    case GraphLength::UniqueSrcPlus1:
      return numUniqueSrc < 0 ? -1 : numUniqueSrc + 1;
    case GraphLength::UniqueDst:
      return numUniqueDst;
    case GraphLength::UniqueDstPlus1:
      return numUniqueDst + 1;
    case GraphLength::Two:
      return 2;
    }
    return 0;
  }
};

namespace {

constexpr const char *kWho = "hector.Graph: ";

int idx(GraphStructure s) { return static_cast<int>(s); }

/// The common checks on one input: integer dtype, 1-D, on `device`.
void checkIndexTensor(const at::Tensor &t, const char *name, const at::Device &device,
                      const char *deviceOwner) {
  TORCH_CHECK_TYPE(t.defined(), kWho, name, " is undefined (None)");
  TORCH_CHECK_TYPE(isIndexDtype(t.scalar_type()), kWho, name, " must have an integer dtype, got ",
                   dtypeName(t.scalar_type()));
  TORCH_CHECK_VALUE(t.dim() == 1, kWho, name, " must be 1-D, got shape ", t.sizes());
  TORCH_CHECK_VALUE(t.device() == device, kWho, name, " is on ", deviceName(t.device()), " but ",
                    deviceOwner, " is on ", deviceName(device),
                    "; all graph tensors must be on one device");
}

/// Minimum and maximum of an int64 array (0, -1 for an empty one).
std::pair<int64_t, int64_t> minMax(const int64_t *v, int64_t n) {
  if (n == 0)
    return {0, -1};
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
#pragma omp parallel for schedule(static) reduction(min : lo) reduction(max : hi)
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
  }
  return {lo, hi};
}

/// Checks 0 <= v[k] < bound (no upper bound when bound < 0), naming the first bad position.
void checkRange(const int64_t *v, int64_t n, std::pair<int64_t, int64_t> range, const char *name,
                int64_t bound, const char *boundName) {
  if (n == 0 || (range.first >= 0 && (bound < 0 || range.second < bound)))
    return;
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t value = v[pos];
    if (value < 0)
      TORCH_CHECK_VALUE(false, kWho, name, "[", pos, "] = ", value, " is negative");
    if (bound >= 0 && value >= bound)
      TORCH_CHECK_VALUE(false, kWho, name, "[", pos, "] = ", value, " is out of range [0, ", bound,
                        ")", boundName[0] ? " (" : "", boundName, boundName[0] ? ")" : "");
  }
}

/// A count inferred as max + 1 from `name`'s values (the largest is at a position named in the
/// error when it cannot be a count).
int64_t inferredCount(std::pair<int64_t, int64_t> range, const char *name) {
  TORCH_CHECK_VALUE(range.second < std::numeric_limits<int64_t>::max(), kWho, name, " holds ",
                    range.second, ", too large to count ", name, " from");
  return range.second + 1;
}

/// Memory the system can still give this process, in bytes (MemAvailable; the limit of the
/// address space when one is set and smaller). 0 when unknown.
int64_t availableMemory() {
  int64_t bytes = 0;
  if (FILE *f = std::fopen("/proc/meminfo", "r")) {
    char key[64];
    long long kib = 0;
    while (std::fscanf(f, "%63s %lld kB", key, &kib) == 2)
      if (std::string(key) == "MemAvailable:") {
        bytes = static_cast<int64_t>(kib) * 1024;
        break;
      }
    std::fclose(f);
  }
  return bytes;
}

/// Refuses a graph whose structures cannot fit, naming the count that makes them large (a
/// typo such as num_nodes=10**12, or ids near 2^31 that make N inferred huge), rather than
/// failing inside an allocation.
void checkFits(int64_t numNodes, int64_t numEdges, int64_t numRelations, int64_t numNtypes,
               bool nodesInferred, bool relationsInferred) {
  const int64_t available = availableMemory();
  if (available <= 0)
    return;
  // Per node: the CSR pointers and the sort's histogram (int64); per relation, the same; per
  // edge: the base structures, the sort's temporaries and the validated int64 copies.
  const double bytes = 24.0 * static_cast<double>(numNodes) +
                       24.0 * static_cast<double>(numRelations + numNtypes) +
                       24.0 * static_cast<double>(numEdges);
  auto gib = [](double b) { return b / (1024.0 * 1024.0 * 1024.0); };
  if (bytes <= static_cast<double>(available))
    return;
  std::ostringstream os;
  os.precision(3);
  os << "the graph's structures need about " << gib(bytes) << " GiB, more than the "
     << gib(static_cast<double>(available)) << " GiB available";
  if (24.0 * numNodes > bytes / 2)
    TORCH_CHECK_VALUE(false, kWho, "num_nodes is ", numNodes,
                      nodesInferred ? " (inferred: the largest node id plus one)" : "", "; ",
                      os.str(), "; pass num_nodes, or renumber the nodes densely");
  if (24.0 * numRelations > bytes / 2)
    TORCH_CHECK_VALUE(false, kWho, "num_relations is ", numRelations,
                      relationsInferred ? " (inferred: the largest etype plus one)" : "", "; ",
                      os.str(), "; renumber the relations densely");
  TORCH_CHECK_VALUE(false, kWho, numEdges, " edges: ", os.str());
}

/// An index tensor of `n` entries on the host.
at::Tensor hostIndex(at::ScalarType index, int64_t n) {
  return at::empty({n}, at::TensorOptions().dtype(index));
}

template <typename I> I *ptr(const at::Tensor &t) { return t.data_ptr<I>(); }

/// Calls f.template operator()<I>() with I the C++ type of `index`.
template <typename F> void dispatchIndex(at::ScalarType index, F &&f) {
  if (index == at::kInt)
    f(int32_t{});
  else
    f(int64_t{});
}

/// out[perm ? perm[p] : p] = the degree norm of position p: 1 / (its relation's run length
/// at its destination) with `relation`, else 1 / (its destination's in-degree).
template <typename I, typename T>
void fillEdgeNorm(int64_t numNodes, const I *inPtr, const I *etype, const I *perm, bool relation,
                  T *out) {
#pragma omp parallel for schedule(dynamic, 1024)
  for (int64_t v = 0; v < numNodes; ++v) {
    const int64_t begin = inPtr[v], end = inPtr[v + 1];
    for (int64_t run = begin; run < end;) {
      int64_t runEnd = end;
      if (relation)
        for (runEnd = run + 1; runEnd < end && etype[runEnd] == etype[run]; ++runEnd) {
        }
      const T value = T(1) / static_cast<T>(runEnd - run);
      for (int64_t p = run; p < runEnd; ++p)
        out[perm ? static_cast<int64_t>(perm[p]) : p] = value;
      run = runEnd;
    }
  }
}

/// The host copy of a structure (the structure itself on a CPU graph).
at::Tensor onHost(const at::Tensor &t) { return t.device().is_cpu() ? t : t.cpu(); }

} // namespace

//===----------------------------------------------------------------------===//
// Building the groups
//===----------------------------------------------------------------------===//

namespace {

/// Builds one group of `s` (the mutex held; the group's dependencies built).
void buildGroup(Graph::State &s, GraphGroup group) {
  using graph_build::buildDst;
  const at::ScalarType I = s.index;
  const int64_t N = s.numNodes, E = s.numEdges, R = s.numRelations;
  auto host = [&](GraphStructure k) { return onHost(s.tensors[idx(k)]); };
  std::vector<std::pair<GraphStructure, at::Tensor>> made;
  auto range = [&](int64_t n) {
    at::Tensor r = hostIndex(I, 2);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      ptr<T>(r)[0] = 0;
      ptr<T>(r)[1] = static_cast<T>(n);
    });
    return r;
  };
  switch (group) {
  case GraphGroup::Base:
    TORCH_CHECK(false, "hector::Graph: the base structures are built with the graph");
  case GraphGroup::Dst: {
    at::Tensor dst = hostIndex(I, E), inPtr = host(GraphStructure::in_ptr);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      buildDst<T>(N, ptr<T>(inPtr), ptr<T>(dst));
    });
    made.push_back({GraphStructure::sorted_dst, dst});
    break;
  }
  case GraphGroup::Relation: {
    at::Tensor rows = hostIndex(I, E), relPtr = hostIndex(I, R + 1);
    at::Tensor etype = host(GraphStructure::sorted_etype);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      graph_build::buildRelation<T>(E, R, ptr<T>(etype), ptr<T>(rows), ptr<T>(relPtr));
    });
    made.push_back({GraphStructure::rel_ptr, relPtr});
    made.push_back({GraphStructure::rel_rows, rows});
    break;
  }
  case GraphGroup::Out: {
    at::Tensor etype = host(GraphStructure::sorted_etype), src = host(GraphStructure::sorted_src);
    // The positions grouped by relation: the Relation group's when built, else a temporary.
    at::Tensor relRows;
    if (s.has(idx(GraphStructure::rel_rows))) {
      relRows = host(GraphStructure::rel_rows);
    } else {
      relRows = hostIndex(I, E);
      at::Tensor relPtr = hostIndex(I, R + 1);
      dispatchIndex(I, [&](auto tag) {
        using T = decltype(tag);
        graph_build::buildRelation<T>(E, R, ptr<T>(etype), ptr<T>(relRows), ptr<T>(relPtr));
      });
    }
    at::Tensor outPos = hostIndex(I, E), outPtr = hostIndex(I, N + 1);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      graph_build::buildOut<T>(N, E, ptr<T>(src), ptr<T>(relRows), ptr<T>(outPos), ptr<T>(outPtr));
    });
    made.push_back({GraphStructure::out_ptr, outPtr});
    made.push_back({GraphStructure::out_pos, outPos});
    break;
  }
  case GraphGroup::OutDst: {
    at::Tensor outDst = hostIndex(I, E), inPtr = host(GraphStructure::in_ptr);
    at::Tensor outPos = host(GraphStructure::out_pos);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      graph_build::buildOutDst<T>(N, E, ptr<T>(inPtr), ptr<T>(outPos), ptr<T>(outDst));
    });
    made.push_back({GraphStructure::out_dst, outDst});
    break;
  }
  case GraphGroup::UniqueSrc:
  case GraphGroup::UniqueDst: {
    // The runs of the CSR by source (or by destination) are the pairs.
    const bool src = group == GraphGroup::UniqueSrc;
    at::Tensor etype = host(GraphStructure::sorted_etype);
    at::Tensor rowPtr = host(src ? GraphStructure::out_ptr : GraphStructure::in_ptr);
    at::Tensor entryPos = src ? host(GraphStructure::out_pos) : at::Tensor();
    at::Tensor node, runPtr, run, inv = hostIndex(I, E), pairPtr = hostIndex(I, R + 1);
    int64_t U = 0;
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      U = graph_build::buildPairs<T>(
          N, R, ptr<T>(rowPtr), entryPos.defined() ? ptr<T>(entryPos) : nullptr, ptr<T>(etype),
          ptr<T>(inv), ptr<T>(pairPtr), [&](int64_t n) {
            node = hostIndex(I, n);
            runPtr = hostIndex(I, n + 1);
            run = hostIndex(I, n);
            return graph_build::PairArrays<T>{ptr<T>(node), ptr<T>(runPtr), ptr<T>(run)};
          });
    });
    if (src) {
      s.numUniqueSrc = U;
      made.push_back({GraphStructure::unique_src, node});
      made.push_back({GraphStructure::unique_src_ptr, pairPtr});
      made.push_back({GraphStructure::unique_src_inv, inv});
      made.push_back({GraphStructure::unique_src_range, range(U)});
      made.push_back({GraphStructure::unique_src_run_ptr, runPtr});
      made.push_back({GraphStructure::unique_src_run, run});
    } else {
      TORCH_CHECK(U == s.numUniqueDst, "hector::Graph: U_dst changed (internal error)");
      made.push_back({GraphStructure::unique_dst, node});
      made.push_back({GraphStructure::unique_dst_ptr, pairPtr});
      made.push_back({GraphStructure::unique_dst_inv, inv});
      made.push_back({GraphStructure::unique_dst_range, range(U)});
      made.push_back({GraphStructure::unique_dst_run_ptr, runPtr});
      made.push_back({GraphStructure::unique_dst_run, run});
    }
    break;
  }
  case GraphGroup::NType: {
    at::Tensor ntype =
        s.userNtype.defined() ? s.userNtype : at::zeros({N}, at::TensorOptions().dtype(I));
    at::Tensor perm = hostIndex(I, N), typePtr = hostIndex(I, s.numNtypes + 1);
    dispatchIndex(I, [&](auto tag) {
      using T = decltype(tag);
      graph_build::buildNtype<T>(N, s.numNtypes, ptr<T>(ntype), ptr<T>(perm), ptr<T>(typePtr));
    });
    made.push_back({GraphStructure::ntype, ntype});
    made.push_back({GraphStructure::ntype_ptr, typePtr});
    made.push_back({GraphStructure::ntype_perm, perm});
    s.userNtype = at::Tensor();
    break;
  }
  }
  for (auto &[k, t] : made) {
    at::Tensor placed = s.device.is_cpu() ? t : t.to(s.device);
    s.tensors[idx(k)] = placed;
    s.versions[idx(k)] = placed._version();
  }
}

/// The groups a group needs built first.
GraphStructureMask dependencies(GraphGroup group) {
  if (group == GraphGroup::UniqueSrc || group == GraphGroup::OutDst)
    return maskOf(GraphStructure::out_pos);
  return 0;
}

/// Builds every group of `mask` that is missing (the mutex held).
void ensure(Graph::State &s, GraphStructureMask mask) {
  for (int k = 0; k < kNumGraphStructures; ++k) {
    if (!(mask >> k & 1) || s.has(k))
      continue;
    const GraphGroup group = graphStructures()[k].group;
    TORCH_CHECK_VALUE(s.lazy, "hector::Graph: the structure ", graphStructures()[k].name,
                      " was not built before this graph was handed over (an internal error: "
                      "call the layer through hector.layer_apply / hector::applyLayer)");
    ensure(s, dependencies(group));
    buildGroup(s, group);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

const std::vector<std::string> &Graph::tensorNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (int k = 0; k < kNumGraphStructures; ++k)
      out.push_back(graphStructures()[k].name);
    return out;
  }();
  return names;
}

const std::vector<std::string> &Graph::sizeNames() {
  static const std::vector<std::string> names = {"num_nodes",      "num_edges",  "num_relations",
                                                 "num_ntypes",     "has_ntype",  "num_unique_src",
                                                 "num_unique_dst", "index_bits", "built"};
  return names;
}

std::vector<at::Tensor> Graph::tensors() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  std::vector<at::Tensor> out;
  for (int k = 0; k < kNumGraphStructures; ++k)
    out.push_back(s_->has(k)
                      ? s_->tensors[k]
                      : at::empty({0}, at::TensorOptions().dtype(s_->index).device(s_->device)));
  return out;
}

std::vector<int64_t> Graph::sizes() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  int64_t built = 0;
  for (int k = 0; k < kNumGraphStructures; ++k)
    if (s_->has(k))
      built |= int64_t(1) << k;
  return {s_->numNodes,
          s_->numEdges,
          s_->numRelations,
          s_->numNtypes,
          s_->hasNtype ? 1 : 0,
          s_->numUniqueSrc,
          s_->numUniqueDst,
          s_->index == at::kInt ? 32 : 64,
          built};
}

Graph Graph::fromTensors(std::vector<at::Tensor> tensors, std::vector<int64_t> sizes) {
  const char *who = "hector::Graph::fromTensors: ";
  TORCH_CHECK_VALUE(tensors.size() == static_cast<size_t>(kNumGraphStructures), who, "expected ",
                    kNumGraphStructures, " tensors, got ", tensors.size());
  TORCH_CHECK_VALUE(sizes.size() == sizeNames().size(), who, "expected ", sizeNames().size(),
                    " sizes, got ", sizes.size());
  Graph g;
  g.s_ = std::make_shared<State>();
  State &s = *g.s_;
  s.lazy = false;
  s.numNodes = sizes[0];
  s.numEdges = sizes[1];
  s.numRelations = sizes[2];
  s.numNtypes = sizes[3];
  s.hasNtype = sizes[4] != 0;
  s.numUniqueSrc = sizes[5];
  s.numUniqueDst = sizes[6];
  TORCH_CHECK_VALUE(sizes[7] == 32 || sizes[7] == 64, who, "index_bits must be 32 or 64, got ",
                    sizes[7]);
  s.index = sizes[7] == 32 ? at::kInt : at::kLong;
  s.device = tensors.front().device();
  for (int64_t v : {s.numNodes, s.numEdges, s.numRelations, s.numNtypes, s.numUniqueDst})
    TORCH_CHECK_VALUE(v >= 0, who, "negative size ", v);
  const uint64_t built = static_cast<uint64_t>(sizes[8]);
  for (int k = 0; k < kNumGraphStructures; ++k) {
    if (!(built >> k & 1))
      continue;
    const auto &info = graphStructures()[k];
    const at::Tensor &t = tensors[k];
    TORCH_CHECK_VALUE(t.defined() && t.dim() == 1, who, info.name, " must be a 1-D tensor");
    TORCH_CHECK_VALUE(t.device() == s.device, who, info.name, " is on ", deviceName(t.device()),
                      ", the graph on ", deviceName(s.device));
    TORCH_CHECK_TYPE(t.scalar_type() == s.index, who, info.name, " must be ", dtypeName(s.index),
                     ", got ", dtypeName(t.scalar_type()));
    const int64_t want = s.lengthOf(info.length);
    TORCH_CHECK_VALUE(want >= 0 && t.size(0) == want, who, info.name, " has ", t.size(0),
                      " entries, expected ", want);
    TORCH_CHECK_VALUE(t.is_contiguous(), who, info.name, " must be contiguous");
    s.tensors[k] = t;
    s.versions[k] = t._version();
  }
  return g;
}

void Graph::require(GraphStructureMask mask) const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  ensure(*s_, mask);
}

bool Graph::has(GraphStructure k) const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  return s_->has(idx(k));
}

GraphStructureMask Graph::built() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  GraphStructureMask mask = 0;
  for (int k = 0; k < kNumGraphStructures; ++k)
    if (s_->has(k))
      mask |= GraphStructureMask(1) << k;
  return mask;
}

at::Tensor Graph::tensor(GraphStructure k) const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  ensure(*s_, maskOf(k));
  return s_->tensors[idx(k)];
}

void Graph::checkUnchanged(GraphStructureMask mask) const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  for (int k = 0; k < kNumGraphStructures; ++k)
    if ((mask >> k & 1) && s_->has(k) && s_->tensors[k]._version() != s_->versions[k])
      TORCH_CHECK_VALUE(false, kWho, graphStructures()[k].name,
                        " was modified in place after the graph was built; a graph's "
                        "structures are immutable (build a new hector.Graph instead)");
}

int64_t Graph::nbytes() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  int64_t bytes = 0;
  for (int k = 0; k < kNumGraphStructures; ++k)
    if (s_->has(k))
      bytes += s_->tensors[k].nbytes();
  return bytes;
}

int64_t Graph::bytesToBuild(GraphStructureMask mask) const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  // The groups that would be built, with the groups they depend on.
  std::array<bool, graph_schema::kNumGraphGroups> groups{};
  for (int k = 0; k < kNumGraphStructures; ++k)
    if ((mask >> k & 1) && !s_->has(k)) {
      const GraphGroup group = graphStructures()[k].group;
      groups[static_cast<int>(group)] = true;
      if ((group == GraphGroup::UniqueSrc || group == GraphGroup::OutDst) &&
          !s_->has(idx(GraphStructure::out_pos)))
        groups[static_cast<int>(GraphGroup::Out)] = true;
    }
  const int64_t indexBytes = s_->index == at::kInt ? 4 : 8;
  // A pair count not known yet is at most E.
  State sizes;
  sizes.numNodes = s_->numNodes;
  sizes.numEdges = s_->numEdges;
  sizes.numRelations = s_->numRelations;
  sizes.numNtypes = s_->numNtypes;
  sizes.numUniqueSrc = s_->numUniqueSrc >= 0 ? s_->numUniqueSrc : s_->numEdges;
  sizes.numUniqueDst = s_->numUniqueDst;
  int64_t bytes = 0;
  for (int k = 0; k < kNumGraphStructures; ++k)
    if (groups[static_cast<int>(graphStructures()[k].group)] && !s_->has(k))
      bytes += sizes.lengthOf(graphStructures()[k].length) * indexBytes;
  return bytes;
}

Graph Graph::to(at::Device device, bool nonBlocking) const {
  if (device == this->device())
    return *this;
  std::lock_guard<std::mutex> lock(s_->mutex);
  Graph g;
  g.s_ = std::make_shared<State>();
  State &s = *g.s_;
  s.numNodes = s_->numNodes;
  s.numEdges = s_->numEdges;
  s.numRelations = s_->numRelations;
  s.numNtypes = s_->numNtypes;
  s.hasNtype = s_->hasNtype;
  s.numUniqueSrc = s_->numUniqueSrc;
  s.numUniqueDst = s_->numUniqueDst;
  s.index = s_->index;
  s.lazy = s_->lazy;
  s.userNtype = s_->userNtype;
  s.device = device;
  for (int k = 0; k < kNumGraphStructures; ++k)
    if (s_->has(k)) {
      s.tensors[k] = s_->tensors[k].to(device, nonBlocking);
      s.versions[k] = s.tensors[k]._version();
    }
  return g;
}

at::Device Graph::device() const { return s_->device; }
at::ScalarType Graph::indexDtype() const { return s_->index; }
int64_t Graph::numNodes() const { return s_->numNodes; }
int64_t Graph::numEdges() const { return s_->numEdges; }
int64_t Graph::numRelations() const { return s_->numRelations; }
int64_t Graph::numNtypes() const { return s_->numNtypes; }
bool Graph::hasNtype() const { return s_->hasNtype; }
int64_t Graph::numUniqueDst() const { return s_->numUniqueDst; }

int64_t Graph::numUniqueSrc() const {
  std::lock_guard<std::mutex> lock(s_->mutex);
  if (s_->numUniqueSrc < 0) {
    TORCH_CHECK_VALUE(s_->lazy, "hector::Graph: U_src is not known for this graph");
    ensure(*s_, maskOf(GraphStructure::unique_src));
  }
  return s_->numUniqueSrc;
}

at::Tensor Graph::edgeNorm(const std::string &kind, at::ScalarType dtype, bool userOrder) const {
  TORCH_CHECK_VALUE(kind == "relation" || kind == "in", kWho,
                    "the edge norm is 'relation' or 'in', got '", kind, "'");
  TORCH_CHECK_TYPE(at::isFloatingType(dtype), kWho, "the edge norm's dtype must be floating, got ",
                   dtypeName(dtype));
  const bool relation = kind == "relation";
  at::Tensor inPtr = onHost(tensor(GraphStructure::in_ptr));
  at::Tensor etype = onHost(tensor(GraphStructure::sorted_etype));
  at::Tensor perm = userOrder ? onHost(tensor(GraphStructure::edge_perm)) : at::Tensor();
  const bool direct = dtype == at::kFloat || dtype == at::kDouble;
  at::Tensor out = at::empty({numEdges()}, at::TensorOptions().dtype(direct ? dtype : at::kFloat));
  dispatchIndex(indexDtype(), [&](auto itag) {
    using I = decltype(itag);
    const I *ip = ptr<I>(inPtr), *et = ptr<I>(etype);
    const I *pm = perm.defined() ? ptr<I>(perm) : nullptr;
    if (out.scalar_type() == at::kDouble)
      fillEdgeNorm(numNodes(), ip, et, pm, relation, out.data_ptr<double>());
    else
      fillEdgeNorm(numNodes(), ip, et, pm, relation, out.data_ptr<float>());
  });
  if (!direct)
    out = out.to(dtype);
  return device().is_cpu() ? out : out.to(device());
}

std::vector<at::Tensor> Graph::userEdges() const {
  at::Tensor inPtr = onHost(tensor(GraphStructure::in_ptr));
  at::Tensor src = onHost(tensor(GraphStructure::sorted_src));
  at::Tensor etype = onHost(tensor(GraphStructure::sorted_etype));
  at::Tensor perm = onHost(tensor(GraphStructure::edge_perm));
  const int64_t N = numNodes();
  auto opts = at::TensorOptions().dtype(at::kLong);
  at::Tensor us = at::empty({numEdges()}, opts), ud = at::empty({numEdges()}, opts),
             ue = at::empty({numEdges()}, opts);
  dispatchIndex(indexDtype(), [&](auto itag) {
    using I = decltype(itag);
    const I *ip = ptr<I>(inPtr), *sp = ptr<I>(src), *ep = ptr<I>(etype), *pm = ptr<I>(perm);
    int64_t *os = us.data_ptr<int64_t>(), *od = ud.data_ptr<int64_t>(),
            *oe = ue.data_ptr<int64_t>();
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t v = 0; v < N; ++v)
      for (int64_t p = ip[v]; p < static_cast<int64_t>(ip[v + 1]); ++p) {
        const int64_t e = pm[p];
        os[e] = sp[p];
        od[e] = v;
        oe[e] = ep[p];
      }
  });
  if (!device().is_cpu())
    return {us.to(device()), ud.to(device()), ue.to(device())};
  return {us, ud, ue};
}

at::Tensor Graph::sortEdgeData(const at::Tensor &data) const {
  TORCH_CHECK_VALUE(data.dim() >= 1 && data.size(0) == numEdges(), kWho,
                    "edge data must have one row per edge (", numEdges(), "), got shape ",
                    data.sizes());
  const at::Tensor perm = tensor(GraphStructure::edge_perm).to(data.device());
  if (!data.device().is_cpu())
    return data.index_select(0, perm);
  // On the CPU into a block of the tensor pool, as the kernels' tensors are.
  at::Tensor out = pooledEmpty(data.sizes(), data.options());
  if (!data.is_contiguous() || data.numel() == 0)
    return at::index_select_out(out, data, 0, perm);
  // A row gather of our own: index_select waits for every random read in turn, which made
  // sorting RGCN's norm (21.1M floats at ogbn-mag size) cost 170 ms per call; prefetching a
  // few dozen rows ahead lets the reads overlap. Bit-identical to index_select (copies).
  const int64_t rowBytes = static_cast<int64_t>(data.element_size()) * (data.numel() / numEdges());
  const char *src = static_cast<const char *>(data.const_data_ptr());
  char *dst = static_cast<char *>(out.mutable_data_ptr());
  AT_DISPATCH_INDEX_TYPES(perm.scalar_type(), "sortEdgeData", [&] {
    const index_t *pm = perm.const_data_ptr<index_t>();
    struct AnyRow {}; // rows of another size: memcpy
    auto gather = [&](auto rowTag) {
      using Row = decltype(rowTag);
      constexpr int64_t kAhead = 32;
      at::parallel_for(0, numEdges(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
          if (p + kAhead < end)
            __builtin_prefetch(src + static_cast<int64_t>(pm[p + kAhead]) * rowBytes);
          const char *from = src + static_cast<int64_t>(pm[p]) * rowBytes;
          if constexpr (std::is_same_v<Row, AnyRow>) {
            std::memcpy(dst + p * rowBytes, from, static_cast<size_t>(rowBytes));
          } else {
            Row v;
            std::memcpy(&v, from, sizeof v);
            std::memcpy(dst + p * static_cast<int64_t>(sizeof v), &v, sizeof v);
          }
        }
      });
    };
    switch (rowBytes) {
    case 2:
      gather(uint16_t{});
      break;
    case 4:
      gather(uint32_t{});
      break;
    case 8:
      gather(uint64_t{});
      break;
    default:
      gather(AnyRow{});
      break;
    }
  });
  return out;
}

at::Tensor Graph::unsortEdgeData(const at::Tensor &data) const {
  TORCH_CHECK_VALUE(data.dim() >= 1 && data.size(0) == numEdges(), kWho,
                    "edge data must have one row per edge (", numEdges(), "), got shape ",
                    data.sizes());
  const at::Tensor perm = tensor(GraphStructure::edge_perm);
  if (!data.device().is_cpu()) {
    at::Tensor out = at::empty_like(data, at::MemoryFormat::Contiguous);
    return out.index_copy_(0, perm.to(data.device(), at::kLong), data);
  }
  // out[perm[i]] = data[i], row by row, into a block of the tensor pool (no int64 copy of the
  // permutation).
  const at::Tensor in = data.contiguous();
  at::Tensor out = pooledEmpty(data.sizes(), data.options());
  const int64_t rowBytes = numEdges() == 0 ? 0 : in.nbytes() / numEdges();
  const char *from = static_cast<const char *>(in.const_data_ptr());
  char *to = static_cast<char *>(out.mutable_data_ptr());
  AT_DISPATCH_INDEX_TYPES(perm.scalar_type(), "unsortEdgeData", [&] {
    const index_t *p = perm.const_data_ptr<index_t>();
    at::parallel_for(0, numEdges(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        std::memcpy(to + static_cast<int64_t>(p[i]) * rowBytes, from + i * rowBytes,
                    static_cast<size_t>(rowBytes));
    });
  });
  return out;
}

Graph Graph::build(const at::Tensor &src, const at::Tensor &dst, const at::Tensor &etype,
                   const GraphOptions &options) {
  // --- Validation: types and shapes first, then counts, then values. ---
  TORCH_CHECK_TYPE(src.defined(), kWho, "src is undefined (None)");
  const at::Device device = src.device();
  checkIndexTensor(src, "src", device, "src");
  checkIndexTensor(dst, "dst", device, "src");
  checkIndexTensor(etype, "etype", device, "src");
  const bool hasNtype = options.ntype.has_value() && options.ntype->defined();
  if (hasNtype)
    checkIndexTensor(*options.ntype, "ntype", device, "src");
  TORCH_CHECK_VALUE(src.size(0) == dst.size(0) && src.size(0) == etype.size(0), kWho,
                    "src, dst and etype must have the same length, got ", src.size(0), ", ",
                    dst.size(0), " and ", etype.size(0));
  for (auto [value, name] :
       {std::pair{options.numNodes, "num_nodes"}, std::pair{options.numRelations, "num_relations"},
        std::pair{options.numNtypes, "num_ntypes"}})
    TORCH_CHECK_VALUE(!value || *value >= 0, kWho, name, " must be non-negative, got ", *value);

  // The edge list on the host as int64 (no copy when it already is).
  auto host64 = [](const at::Tensor &t) {
    return t.to(at::TensorOptions().device(at::kCPU).dtype(at::kLong)).contiguous();
  };
  const at::Tensor hs = host64(src), hd = host64(dst), he = host64(etype);
  const at::Tensor hn = hasNtype ? host64(*options.ntype) : at::Tensor();
  const int64_t E = hs.size(0);
  const int64_t *ps = hs.data_ptr<int64_t>(), *pd = hd.data_ptr<int64_t>(),
                *pe = he.data_ptr<int64_t>();
  const auto rs = minMax(ps, E), rd = minMax(pd, E), re = minMax(pe, E);

  auto s = std::make_shared<State>();
  s->device = device;
  s->hasNtype = hasNtype;
  s->numEdges = E;

  // Node count: explicit, else ntype's length, else from the edges.
  if (options.numNodes) {
    s->numNodes = *options.numNodes;
    TORCH_CHECK_VALUE(!hasNtype || hn.size(0) == s->numNodes, kWho, "ntype has ", hn.size(0),
                      " entries but num_nodes is ", s->numNodes,
                      "; ntype needs one entry per node");
  } else if (hasNtype) {
    s->numNodes = hn.size(0);
  } else {
    checkRange(ps, E, rs, "src", -1, "");
    checkRange(pd, E, rd, "dst", -1, "");
    s->numNodes = std::max(inferredCount(rs, "src"), inferredCount(rd, "dst"));
  }
  checkRange(ps, E, rs, "src", s->numNodes, "num_nodes");
  checkRange(pd, E, rd, "dst", s->numNodes, "num_nodes");

  if (options.numRelations) {
    s->numRelations = *options.numRelations;
  } else {
    checkRange(pe, E, re, "etype", -1, "");
    s->numRelations = inferredCount(re, "etype");
  }
  checkRange(pe, E, re, "etype", s->numRelations, "num_relations");

  if (hasNtype) {
    const int64_t T = hn.size(0);
    const auto rn = minMax(hn.data_ptr<int64_t>(), T);
    if (options.numNtypes) {
      s->numNtypes = *options.numNtypes;
    } else {
      checkRange(hn.data_ptr<int64_t>(), T, rn, "ntype", -1, "");
      s->numNtypes = std::max<int64_t>(inferredCount(rn, "ntype"), 1);
    }
    checkRange(hn.data_ptr<int64_t>(), T, rn, "ntype", s->numNtypes, "num_ntypes");
  } else {
    TORCH_CHECK_VALUE(!options.numNtypes || *options.numNtypes == 1, kWho, "num_ntypes is ",
                      *options.numNtypes,
                      " but no ntype was given (without ntype every node has "
                      "type 0, so num_ntypes must be 1 or None)");
    s->numNtypes = 1;
  }

  checkFits(s->numNodes, E, s->numRelations, s->numNtypes, !options.numNodes && !hasNtype,
            !options.numRelations);

  // The index dtype: int32 while every count and position fits.
  const int64_t largest = std::max({s->numNodes, E, s->numRelations, s->numNtypes}) + 1;
  const bool fits32 = largest <= std::numeric_limits<int32_t>::max();
  if (options.indexDtype) {
    TORCH_CHECK_VALUE(*options.indexDtype == at::kInt || *options.indexDtype == at::kLong, kWho,
                      "index_dtype must be torch.int32 or torch.int64, got ",
                      dtypeName(*options.indexDtype));
    TORCH_CHECK_VALUE(*options.indexDtype == at::kLong || fits32, kWho,
                      "index_dtype torch.int32 cannot index this graph (", s->numNodes, " nodes, ",
                      E, " edges); use torch.int64");
    s->index = *options.indexDtype;
  } else {
    s->index = fits32 ? at::kInt : at::kLong;
  }
  const at::ScalarType I = s->index;
  const int64_t N = s->numNodes, R = s->numRelations;

  // --- Optional: every relation joins one (source type, destination type) pair. ---
  if (options.checkRelationTypes && hasNtype && E > 0) {
    const int64_t *nt = hn.data_ptr<int64_t>();
    std::vector<int64_t> firstEdge(static_cast<size_t>(R), -1);
    for (int64_t e = 0; e < E; ++e) {
      int64_t &f = firstEdge[pe[e]];
      if (f < 0) {
        f = e;
      } else if (nt[ps[e]] != nt[ps[f]] || nt[pd[e]] != nt[pd[f]]) {
        TORCH_CHECK_VALUE(false, kWho, "edge ", e, " of relation ", pe[e], " joins node types ",
                          nt[ps[e]], " -> ", nt[pd[e]], ", but the relation's edge ", f, " joins ",
                          nt[ps[f]], " -> ", nt[pd[f]],
                          " (check_relation_types: every relation must join one source node "
                          "type to one destination node type)");
      }
    }
  }

  // --- The base structures. ---
  graph_build::EdgeList list{N, E, R, ps, pd, pe};
  at::Tensor inPtr = hostIndex(I, N + 1), sortedSrc = hostIndex(I, E),
             sortedEtype = hostIndex(I, E), edgePerm = hostIndex(I, E);
  dispatchIndex(I, [&](auto tag) {
    using T = decltype(tag);
    s->numUniqueDst = graph_build::buildBase<T>(list, ptr<T>(inPtr), ptr<T>(sortedSrc),
                                                ptr<T>(sortedEtype), ptr<T>(edgePerm));
    // U_src for the cost model: counted with a bitmap of at most E bytes (else when the unique
    // source pairs are built).
    s->numUniqueSrc = graph_build::countUniqueSrc<T>(
        N, E, R, ptr<T>(sortedSrc), ptr<T>(sortedEtype), std::max<int64_t>(E, 1 << 20));
  });
  if (hasNtype)
    s->userNtype = hn.to(I);
  std::vector<std::pair<GraphStructure, at::Tensor>> base = {
      {GraphStructure::in_ptr, inPtr},
      {GraphStructure::sorted_src, sortedSrc},
      {GraphStructure::sorted_etype, sortedEtype},
      {GraphStructure::edge_perm, edgePerm},
      {GraphStructure::node_range, at::tensor(std::vector<int64_t>{0, N}).to(I)},
      {GraphStructure::edge_range, at::tensor(std::vector<int64_t>{0, E}).to(I)}};
  for (auto &[k, t] : base) {
    at::Tensor placed = device.is_cpu() ? t : t.to(device);
    s->tensors[idx(k)] = placed;
    s->versions[idx(k)] = placed._version();
  }
  Graph g;
  g.s_ = std::move(s);
  return g;
}

} // namespace hector

//===----------------------------------------------------------------------===//
// Operators and the TorchScript class
//===----------------------------------------------------------------------===//

namespace {

using hector::Graph;
using hector::GraphHolder;
using Holder = c10::intrusive_ptr<GraphHolder>;

/// The structure named `name`, or a ValueError listing the names.
hector::GraphStructure structureNamed(const std::string &name) {
  const int k = hector::graph_schema::graphStructureIndex(name.c_str());
  if (k < 0) {
    std::string names;
    for (const std::string &n : Graph::tensorNames())
      names += (names.empty() ? "" : ", ") + n;
    TORCH_CHECK_VALUE(false, "hector.Graph: no structure named '", name, "' (structures: ", names,
                      ")");
  }
  return static_cast<hector::GraphStructure>(k);
}

Holder graphCreateOp(const at::Tensor &src, const at::Tensor &dst, const at::Tensor &etype,
                     std::optional<int64_t> numNodes, const std::optional<at::Tensor> &ntype,
                     std::optional<int64_t> numRelations, std::optional<int64_t> numNtypes,
                     bool checkRelationTypes, std::optional<at::ScalarType> indexDtype) {
  hector::GraphOptions options;
  options.numNodes = numNodes;
  options.ntype = ntype;
  options.numRelations = numRelations;
  options.numNtypes = numNtypes;
  options.checkRelationTypes = checkRelationTypes;
  options.indexDtype = indexDtype;
  return c10::make_intrusive<GraphHolder>(Graph::build(src, dst, etype, options));
}

/// The names of the structures and sizes, so that Python never hard-codes their order.
std::tuple<std::vector<std::string>, std::vector<std::string>> graphFieldsOp() {
  return {Graph::tensorNames(), Graph::sizeNames()};
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.class_<GraphHolder>("Graph")
      .def("sizes", [](const Holder &self) { return self->graph.sizes(); })
      .def("tensor",
           [](const Holder &self, const std::string &name) {
             return self->graph.tensor(structureNamed(name));
           })
      .def("require",
           [](const Holder &self, const std::vector<std::string> &names) {
             hector::GraphStructureMask mask = 0;
             for (const std::string &n : names)
               mask |= hector::graph_schema::maskOf(structureNamed(n));
             self->graph.require(mask);
           })
      .def("built",
           [](const Holder &self) {
             std::vector<std::string> out;
             const hector::GraphStructureMask mask = self->graph.built();
             for (int k = 0; k < hector::graph_schema::kNumGraphStructures; ++k)
               if (mask >> k & 1)
                 out.push_back(Graph::tensorNames()[k]);
             return out;
           })
      .def("nbytes", [](const Holder &self) { return self->graph.nbytes(); })
      .def("num_unique_src", [](const Holder &self) { return self->graph.numUniqueSrc(); })
      .def("device", [](const Holder &self) { return self->graph.device().str(); })
      .def("index_dtype",
           [](const Holder &self) { return hector::dtypeName(self->graph.indexDtype()); })
      .def("to",
           [](const Holder &self, const std::string &device, bool nonBlocking) {
             return c10::make_intrusive<GraphHolder>(
                 self->graph.to(at::Device(device), nonBlocking));
           })
      .def("check_unchanged",
           [](const Holder &self) { self->graph.checkUnchanged(~hector::GraphStructureMask(0)); })
      .def("edge_norm", [](const Holder &self, const std::string &kind, at::ScalarType dtype,
                           bool userOrder) { return self->graph.edgeNorm(kind, dtype, userOrder); })
      .def("user_edges", [](const Holder &self) { return self->graph.userEdges(); })
      .def("sort_edge_data", [](const Holder &self,
                                const at::Tensor &data) { return self->graph.sortEdgeData(data); })
      .def("unsort_edge_data", [](const Holder &self, const at::Tensor &data) {
        return self->graph.unsortEdgeData(data);
      });
  m.def("graph_create(Tensor src, Tensor dst, Tensor etype, int? num_nodes=None, "
        "Tensor? ntype=None, int? num_relations=None, int? num_ntypes=None, "
        "bool check_relation_types=False, ScalarType? index_dtype=None) "
        "-> __torch__.torch.classes.hector.Graph",
        &graphCreateOp);
  m.def("graph_fields() -> (str[], str[])", &graphFieldsOp);
  // CompositeImplicitAutograd: the kernel builds its own autograd node (autograd.cpp).
  m.def("layer_apply(str layer, __torch__.torch.classes.hector.Graph graph, Tensor[] inputs, "
        "Tensor[] weights, str variant=\"auto\") -> Tensor[]",
        &hector::layerApplyOp);
  m.def("layer_prepare(str layer, __torch__.torch.classes.hector.Graph graph, bool training, "
        "str variant=\"auto\") -> str",
        &hector::layerPrepareOp);
  m.def("layer_memory(str layer, __torch__.torch.classes.hector.Graph graph, bool training, "
        "str variant=\"auto\", int element_bytes=4) -> float",
        &hector::layerMemoryOp);
  m.def("layer_variant(str layer, __torch__.torch.classes.hector.Graph graph, bool training, "
        "str variant=\"auto\", int element_bytes=4) -> str",
        &hector::layerVariantOp);
  m.def("layer_explain(str layer, __torch__.torch.classes.hector.Graph graph) -> str",
        &hector::layerExplainOp);
}

// Under torch.autocast layer_apply runs in the autocast dtype, as `linear` does (autograd.cpp,
// layerApplyAutocast); here, after the Graph class its schema names.
TORCH_LIBRARY_IMPL(hector, AutocastCPU, m) {
  m.impl("layer_apply", &hector::layerApplyAutocast<c10::DeviceType::CPU>);
}
TORCH_LIBRARY_IMPL(hector, AutocastCUDA, m) {
  m.impl("layer_apply", &hector::layerApplyAutocast<c10::DeviceType::CUDA>);
}
