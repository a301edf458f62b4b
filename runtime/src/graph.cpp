//===- graph.cpp - hector::Graph: validation and preprocessing -------------===//
//
// Everything is built from ATen operators (stable sort, searchsorted, unique), so the same code
// runs on CPU and CUDA tensors. Validation copies a handful of scalars to the host; nothing else
// leaves the device.
//
//===----------------------------------------------------------------------===//
#include "hector/graph.h"
#include "hector/common.h"

#include <torch/library.h>

#include <limits>
#include <sstream>
#include <tuple>

namespace hector {
namespace {

constexpr const char *kWho = "hector.Graph: ";

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

/// Checks 0 <= t[k] < bound (no upper bound when bound < 0) and names the first bad position.
void checkRange(const at::Tensor &t, const char *name, int64_t bound, const char *boundName) {
  if (t.numel() == 0)
    return;
  at::Tensor bad = t.lt(0);
  if (bound >= 0)
    bad.logical_or_(t.ge(bound));
  if (!bad.any().item<bool>())
    return;
  // argmax returns the first maximal element: the first bad position.
  int64_t pos = bad.to(at::kByte).argmax().item<int64_t>();
  int64_t value = t[pos].item<int64_t>();
  if (bound >= 0)
    TORCH_CHECK_VALUE(false, kWho, name, "[", pos, "] = ", value, " is out of range [0, ", bound,
                      ")", boundName[0] ? " (" : "", boundName, boundName[0] ? ")" : "");
  TORCH_CHECK_VALUE(false, kWho, name, "[", pos, "] = ", value, " is negative");
}

/// max(t) + 1, or 0 for an empty tensor.
int64_t countFromMax(const at::Tensor &t) {
  return t.numel() == 0 ? 0 : t.max().item<int64_t>() + 1;
}

/// offsets[k] = first position of `sorted` holding a value >= k, for k in [0, count]: the segment
/// pointer of a sorted key array.
at::Tensor segmentPointer(const at::Tensor &sorted, int64_t count) {
  at::Tensor boundaries = at::arange(count + 1, sorted.options());
  if (sorted.numel() == 0)
    return at::zeros({count + 1}, sorted.options());
  return at::searchsorted(sorted, boundaries);
}

/// The inverse of a permutation: inv[perm[k]] = k.
at::Tensor invertPermutation(const at::Tensor &perm) {
  at::Tensor inv = at::empty_like(perm);
  inv.index_put_({perm}, at::arange(perm.numel(), perm.options()));
  return inv;
}

/// The CSR of `keys` (a node per sorted edge): row pointer [N+1], the sorted edge ids grouped by
/// key (stable, so ascending edge id within a row).
std::tuple<at::Tensor, at::Tensor> buildCsr(const at::Tensor &keys, int64_t numNodes) {
  auto [sortedKeys, eids] = at::sort(keys, /*stable=*/std::optional<bool>(true), /*dim=*/0);
  return {segmentPointer(sortedKeys, numNodes), eids};
}

} // namespace

const std::vector<std::string> &Graph::tensorNames() {
  // clang-format off
  static const std::vector<std::string> names = {
      "src",          "dst",           "etype",          "rel_ptr",        "edge_perm",
      "edge_perm_inv", "sorted_src",   "sorted_dst",     "sorted_etype",   "in_ptr",
      "in_eid",       "in_src",        "out_ptr",        "out_eid",        "out_dst",
      "unique_src_ptr", "unique_src",  "unique_src_inv", "unique_dst_ptr", "unique_dst",
      "unique_dst_inv", "ntype",       "ntype_ptr",      "ntype_perm",     "ntype_perm_inv",
      "norm_relation", "norm_in",
      "unique_src_edge_ptr", "unique_src_edges", "unique_dst_edge_ptr",
      "unique_src_node_ptr", "unique_src_by_node", "unique_dst_node_ptr", "unique_dst_by_node",
      "ranges"};
  // clang-format on
  return names;
}

const std::vector<std::string> &Graph::sizeNames() {
  static const std::vector<std::string> names = {"num_nodes", "num_edges", "num_relations",
                                                 "num_ntypes", "has_ntype"};
  return names;
}

std::vector<at::Tensor *> Graph::members() {
  // clang-format off
  return {&src_,          &dst_,          &etype_,        &relPtr_,       &edgePerm_,
          &edgePermInv_,  &sortedSrc_,    &sortedDst_,    &sortedEtype_,  &inPtr_,
          &inEid_,        &inSrc_,        &outPtr_,       &outEid_,       &outDst_,
          &uniqueSrcPtr_, &uniqueSrc_,    &uniqueSrcInv_, &uniqueDstPtr_, &uniqueDst_,
          &uniqueDstInv_, &ntype_,        &ntypePtr_,     &ntypePerm_,    &ntypePermInv_,
          &normRelation_, &normIn_,
          &uniqueSrcEdgePtr_, &uniqueSrcEdges_, &uniqueDstEdgePtr_,
          &uniqueSrcNodePtr_, &uniqueSrcByNode_, &uniqueDstNodePtr_, &uniqueDstByNode_,
          &ranges_};
  // clang-format on
}

std::vector<at::Tensor> Graph::tensors() const {
  std::vector<at::Tensor> out;
  for (at::Tensor *t : const_cast<Graph *>(this)->members())
    out.push_back(*t);
  return out;
}

std::vector<int64_t> Graph::sizes() const {
  return {numNodes_, numEdges_, numRelations_, numNtypes_, hasNtype_ ? 1 : 0};
}

Graph Graph::fromTensors(std::vector<at::Tensor> tensors, std::vector<int64_t> sizes) {
  Graph g;
  std::vector<at::Tensor *> slots = g.members();
  TORCH_CHECK_VALUE(tensors.size() == slots.size(), "hector::Graph::fromTensors: expected ",
                    slots.size(), " tensors, got ", tensors.size());
  TORCH_CHECK_VALUE(sizes.size() == sizeNames().size(), "hector::Graph::fromTensors: expected ",
                    sizeNames().size(), " sizes, got ", sizes.size());
  g.numNodes_ = sizes[0];
  g.numEdges_ = sizes[1];
  g.numRelations_ = sizes[2];
  g.numNtypes_ = sizes[3];
  g.hasNtype_ = sizes[4] != 0;
  const auto &names = tensorNames();
  for (size_t k = 0; k < slots.size(); ++k) {
    const at::Tensor &t = tensors[k];
    TORCH_CHECK_VALUE(t.defined() && t.dim() == 1, "hector::Graph::fromTensors: ", names[k],
                      " must be a defined 1-D tensor");
    TORCH_CHECK_VALUE(t.device() == tensors[0].device(), "hector::Graph::fromTensors: ", names[k],
                      " is on ", deviceName(t.device()), ", src on ",
                      deviceName(tensors[0].device()));
    bool isNorm = names[k].rfind("norm_", 0) == 0;
    TORCH_CHECK_TYPE(t.scalar_type() == (isNorm ? at::kDouble : at::kLong),
                     "hector::Graph::fromTensors: ", names[k], " must be ",
                     isNorm ? "torch.float64" : "torch.int64", ", got ",
                     dtypeName(t.scalar_type()));
    *slots[k] = t;
  }
  auto expect = [&](const at::Tensor &t, int64_t n, const char *name) {
    TORCH_CHECK_VALUE(t.size(0) == n, "hector::Graph::fromTensors: ", name, " has ", t.size(0),
                      " entries, expected ", n);
  };
  expect(g.src_, g.numEdges_, "src");
  expect(g.relPtr_, g.numRelations_ + 1, "rel_ptr");
  expect(g.inPtr_, g.numNodes_ + 1, "in_ptr");
  expect(g.ntype_, g.numNodes_, "ntype");
  expect(g.ntypePtr_, g.numNtypes_ + 1, "ntype_ptr");
  expect(g.normIn_, g.numEdges_, "norm_in");
  expect(g.uniqueSrcEdgePtr_, g.uniqueSrc_.size(0) + 1, "unique_src_edge_ptr");
  expect(g.uniqueSrcEdges_, g.numEdges_, "unique_src_edges");
  expect(g.uniqueDstEdgePtr_, g.uniqueDst_.size(0) + 1, "unique_dst_edge_ptr");
  expect(g.uniqueSrcNodePtr_, g.numNodes_ + 1, "unique_src_node_ptr");
  expect(g.uniqueSrcByNode_, g.uniqueSrc_.size(0), "unique_src_by_node");
  expect(g.uniqueDstNodePtr_, g.numNodes_ + 1, "unique_dst_node_ptr");
  expect(g.uniqueDstByNode_, g.uniqueDst_.size(0), "unique_dst_by_node");
  expect(g.ranges_, 8, "ranges");
  return g;
}

Graph Graph::to(at::Device device, bool nonBlocking) const {
  if (device == this->device())
    return *this;
  Graph g = *this;
  for (at::Tensor *t : g.members())
    *t = t->to(device, nonBlocking);
  return g;
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

  Graph g;
  g.hasNtype_ = hasNtype;
  g.numEdges_ = src.size(0);
  // Private copies: the graph must not change when the caller later writes to its tensors.
  auto own = [](const at::Tensor &t) {
    return t.to(at::kLong, /*non_blocking=*/false, /*copy=*/true).contiguous();
  };
  g.src_ = own(src);
  g.dst_ = own(dst);
  g.etype_ = own(etype);
  at::Tensor ntype = hasNtype ? own(*options.ntype) : at::Tensor();

  // Node count: explicit, else ntype's length, else from the edges.
  if (options.numNodes) {
    g.numNodes_ = *options.numNodes;
    TORCH_CHECK_VALUE(!hasNtype || ntype.size(0) == g.numNodes_, kWho, "ntype has ", ntype.size(0),
                      " entries but num_nodes is ", g.numNodes_,
                      "; ntype needs one entry per node");
  } else if (hasNtype) {
    g.numNodes_ = ntype.size(0);
  } else {
    checkRange(g.src_, "src", -1, "");
    checkRange(g.dst_, "dst", -1, "");
    g.numNodes_ = std::max(countFromMax(g.src_), countFromMax(g.dst_));
  }
  checkRange(g.src_, "src", g.numNodes_, "num_nodes");
  checkRange(g.dst_, "dst", g.numNodes_, "num_nodes");

  if (options.numRelations) {
    g.numRelations_ = *options.numRelations;
  } else {
    checkRange(g.etype_, "etype", -1, "");
    g.numRelations_ = countFromMax(g.etype_);
  }
  checkRange(g.etype_, "etype", g.numRelations_, "num_relations");

  if (hasNtype) {
    if (options.numNtypes) {
      g.numNtypes_ = *options.numNtypes;
    } else {
      checkRange(ntype, "ntype", -1, "");
      g.numNtypes_ = std::max<int64_t>(countFromMax(ntype), 1);
    }
    checkRange(ntype, "ntype", g.numNtypes_, "num_ntypes");
  } else {
    TORCH_CHECK_VALUE(!options.numNtypes || *options.numNtypes == 1, kWho, "num_ntypes is ",
                      *options.numNtypes,
                      " but no ntype was given (without ntype every node has "
                      "type 0, so num_ntypes must be 1 or None)");
    g.numNtypes_ = 1;
  }

  // Composite keys relation * N + node must fit in int64.
  const int64_t n = std::max<int64_t>(g.numNodes_, 1);
  TORCH_CHECK_VALUE(g.numRelations_ <= std::numeric_limits<int64_t>::max() / n - 1, kWho,
                    "num_relations * num_nodes (", g.numRelations_, " * ", g.numNodes_,
                    ") does not fit in int64");

  const at::TensorOptions idx = g.src_.options();
  const int64_t numEdges = g.numEdges_;

  // --- Relation-sorted edges: stable by (relation, destination), ties by user edge id. ---
  at::Tensor key = g.etype_ * n + g.dst_;
  auto [sortedKey, perm] = at::sort(key, /*stable=*/std::optional<bool>(true), /*dim=*/0);
  g.edgePerm_ = perm;
  g.edgePermInv_ = invertPermutation(perm);
  g.sortedSrc_ = g.src_.index_select(0, perm);
  g.sortedDst_ = g.dst_.index_select(0, perm);
  g.sortedEtype_ = g.etype_.index_select(0, perm);
  g.relPtr_ = segmentPointer(g.sortedEtype_, g.numRelations_);

  // --- CSR by destination and by source over sorted edge ids. ---
  std::tie(g.inPtr_, g.inEid_) = buildCsr(g.sortedDst_, g.numNodes_);
  g.inSrc_ = g.sortedSrc_.index_select(0, g.inEid_);
  std::tie(g.outPtr_, g.outEid_) = buildCsr(g.sortedSrc_, g.numNodes_);
  g.outDst_ = g.sortedDst_.index_select(0, g.outEid_);

  // --- Unique (node, relation) pairs. Sorted keys relation * N + node; the destination keys are
  // already sorted (they are the sort key), the source keys need a sorted unique. ---
  at::Tensor dstCounts;
  if (numEdges == 0) {
    g.uniqueDst_ = at::empty({0}, idx);
    g.uniqueDstInv_ = at::empty({0}, idx);
    g.uniqueSrc_ = at::empty({0}, idx);
    g.uniqueSrcInv_ = at::empty({0}, idx);
    g.uniqueDstPtr_ = at::zeros({g.numRelations_ + 1}, idx);
    g.uniqueSrcPtr_ = at::zeros({g.numRelations_ + 1}, idx);
    dstCounts = at::empty({0}, idx);
  } else {
    at::Tensor uniqueDstKeys;
    std::tie(uniqueDstKeys, g.uniqueDstInv_, dstCounts) =
        at::unique_consecutive(sortedKey, /*return_inverse=*/true, /*return_counts=*/true, 0);
    g.uniqueDst_ = uniqueDstKeys.remainder(n);
    g.uniqueDstPtr_ = segmentPointer(uniqueDstKeys.div(n, "floor"), g.numRelations_);

    at::Tensor srcKey = g.sortedEtype_ * n + g.sortedSrc_;
    auto [uniqueSrcKeys, srcInv, srcCounts] =
        at::_unique2(srcKey, /*sorted=*/true, /*return_inverse=*/true, /*return_counts=*/false);
    g.uniqueSrc_ = uniqueSrcKeys.remainder(n);
    g.uniqueSrcInv_ = srcInv.reshape({numEdges});
    g.uniqueSrcPtr_ = segmentPointer(uniqueSrcKeys.div(n, "floor"), g.numRelations_);
    g.uniqueDstInv_ = g.uniqueDstInv_.reshape({numEdges});
  }

  // --- The members of every unique pair: its edges (for sums from edges into pairs) and, per
  // node, its pairs (for sums from pairs into nodes). A destination pair's edges are contiguous
  // (edges are sorted by relation, then destination), so it needs only the pointer. ---
  std::tie(g.uniqueSrcEdgePtr_, g.uniqueSrcEdges_) =
      buildCsr(g.uniqueSrcInv_, g.uniqueSrc_.size(0));
  g.uniqueDstEdgePtr_ = segmentPointer(g.uniqueDstInv_, g.uniqueDst_.size(0));
  std::tie(g.uniqueSrcNodePtr_, g.uniqueSrcByNode_) = buildCsr(g.uniqueSrc_, g.numNodes_);
  std::tie(g.uniqueDstNodePtr_, g.uniqueDstByNode_) = buildCsr(g.uniqueDst_, g.numNodes_);

  // --- Degree norms per sorted edge. ---
  g.normRelation_ =
      dstCounts.to(at::kDouble).reciprocal().index_select(0, g.uniqueDstInv_).contiguous();
  at::Tensor inDegree = g.inPtr_.narrow(0, 1, g.numNodes_) - g.inPtr_.narrow(0, 0, g.numNodes_);
  g.normIn_ = inDegree.index_select(0, g.sortedDst_).to(at::kDouble).reciprocal();

  // --- Node-type segments. ---
  g.ntype_ = hasNtype ? ntype : at::zeros({g.numNodes_}, idx);
  auto [sortedTypes, typePerm] =
      at::sort(g.ntype_, /*stable=*/std::optional<bool>(true), /*dim=*/0);
  g.ntypePerm_ = typePerm;
  g.ntypePermInv_ = invertPermutation(typePerm);
  g.ntypePtr_ = segmentPointer(sortedTypes, g.numNtypes_);

  // --- Optional: every relation joins one (source type, destination type) pair. ---
  if (options.checkRelationTypes && hasNtype && numEdges > 0) {
    at::Tensor pairKey = g.ntype_.index_select(0, g.sortedSrc_) * g.numNtypes_ +
                         g.ntype_.index_select(0, g.sortedDst_);
    at::Tensor firstOfRelation = g.relPtr_.index_select(0, g.sortedEtype_);
    at::Tensor bad = pairKey.ne(pairKey.index_select(0, firstOfRelation));
    if (bad.any().item<bool>()) {
      // The first bad edge in the user's order.
      at::Tensor badUser = bad.index_select(0, g.edgePermInv_);
      int64_t edge = badUser.to(at::kByte).argmax().item<int64_t>();
      int64_t rel = g.etype_[edge].item<int64_t>();
      int64_t first = g.edgePerm_[g.relPtr_[rel]].item<int64_t>();
      auto typeOf = [&](const at::Tensor &nodes, int64_t e) {
        return g.ntype_[nodes[e]].item<int64_t>();
      };
      TORCH_CHECK_VALUE(false, kWho, "edge ", edge, " of relation ", rel, " joins node types ",
                        typeOf(g.src_, edge), " -> ", typeOf(g.dst_, edge), ", but the relation's ",
                        "edge ", first, " joins ", typeOf(g.src_, first), " -> ",
                        typeOf(g.dst_, first),
                        " (check_relation_types: every relation must join one source node type "
                        "to one destination node type)");
    }
  }

  // --- The row ranges kernels read on the device (see ranges()). ---
  std::vector<int64_t> ranges = {0, g.numNodes_,     0, g.numEdges_,
                                 0, g.numUniqueSrc(), 0, g.numUniqueDst()};
  g.ranges_ = at::tensor(ranges, idx.device(at::kCPU)).to(device);
  return g;
}

} // namespace hector

namespace {

/// The operator behind the Python class: builds and returns (tensors, sizes).
std::tuple<std::vector<at::Tensor>, std::vector<int64_t>>
graphBuildOp(const at::Tensor &src, const at::Tensor &dst, const at::Tensor &etype,
             std::optional<int64_t> numNodes, const std::optional<at::Tensor> &ntype,
             std::optional<int64_t> numRelations, std::optional<int64_t> numNtypes,
             bool checkRelationTypes) {
  hector::GraphOptions options;
  options.numNodes = numNodes;
  options.ntype = ntype;
  options.numRelations = numRelations;
  options.numNtypes = numNtypes;
  options.checkRelationTypes = checkRelationTypes;
  hector::Graph g = hector::Graph::build(src, dst, etype, options);
  return {g.tensors(), g.sizes()};
}

/// The names of graph_build's outputs, so that Python never hard-codes their order.
std::tuple<std::vector<std::string>, std::vector<std::string>> graphFieldsOp() {
  return {hector::Graph::tensorNames(), hector::Graph::sizeNames()};
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.def("graph_build(Tensor src, Tensor dst, Tensor etype, int? num_nodes=None, "
        "Tensor? ntype=None, int? num_relations=None, int? num_ntypes=None, "
        "bool check_relation_types=False) -> (Tensor[], int[])",
        &graphBuildOp);
  m.def("graph_fields() -> (str[], str[])", &graphFieldsOp);
}
