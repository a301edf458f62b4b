"""hector.Graph: a validated relational graph with the index structures compiled layers read."""
import torch

from ._native import load_runtime

__all__ = ["Graph"]

_FIELDS = None


def _fields():
    """(tensor names, size names) of the native graph, in the native operator's output order."""
    global _FIELDS
    if _FIELDS is None:
        tensors, sizes = load_runtime().graph_fields()
        _FIELDS = (tuple(tensors), tuple(sizes))
    return _FIELDS


def _check_tensor(value, name, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"hector.Graph: {name} must be a torch.Tensor, got {type(value).__name__}")


def _check_count(value, name):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        # Accept numpy/torch integer scalars, reject floats and bools.
        if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point() \
                and value.dtype != torch.bool:
            return int(value.item())
        try:
            import numpy
            if isinstance(value, numpy.integer):
                return int(value)
        except ImportError:  # pragma: no cover
            pass
        raise TypeError(f"hector.Graph: {name} must be an int or None, got {type(value).__name__}")
    return value


class Graph:
    """A relational graph: ``E`` edges ``src[e] -> dst[e]`` of relation ``etype[e]`` over
    ``num_nodes`` nodes, optionally typed by ``ntype``, validated and preprocessed.

    Every index tensor is ``torch.int64`` on the inputs' device. Per-edge tensors other than
    ``src``/``dst``/``etype`` are in *relation-sorted* order (stable by relation, then destination,
    then the user's edge id); ``edge_perm`` maps a sorted position to the user's edge id and
    :meth:`sort_edge_data` / :meth:`unsort_edge_data` convert edge data between the two orders.

    Structures (``N`` nodes, ``E`` edges, ``R`` relations, ``T`` node types):

    - ``rel_ptr`` [R+1], ``edge_perm`` / ``edge_perm_inv`` [E], ``sorted_src`` / ``sorted_dst`` /
      ``sorted_etype`` [E]
    - CSR by destination: ``in_ptr`` [N+1], ``in_eid`` [E] (sorted edge ids), ``in_src`` [E];
      by source: ``out_ptr``, ``out_eid``, ``out_dst``
    - unique (node, relation) pairs: ``unique_src_ptr`` [R+1], ``unique_src`` [U_src],
      ``unique_src_inv`` [E] (per sorted edge); the same for ``unique_dst``; the members of
      every pair: ``unique_src_edge_ptr`` [U_src+1] / ``unique_src_edges`` [E] (its edges),
      ``unique_dst_edge_ptr`` [U_dst+1] (contiguous edges), ``unique_{src,dst}_node_ptr`` [N+1] /
      ``unique_{src,dst}_by_node`` [U] (the pairs of every node)
    - ``ranges`` [8]: {0, N, 0, E, 0, U_src, 0, U_dst}, the row ranges the kernels read on the
      graph's device (made here once, so a call never copies them from the host)
    - node types: ``ntype`` [N], ``ntype_ptr`` [T+1], ``ntype_perm`` / ``ntype_perm_inv`` [N]
    - degree norms (float64, per sorted edge): ``norm_relation`` = 1/|N_r(i)| (PyG RGCNConv
      ``aggr="mean"``), ``norm_in`` = 1/in-degree

    Raises ``TypeError`` for non-integer tensors and ``ValueError`` for any other bad input, naming
    the tensor and the first bad position.
    """

    def __init__(self, src, dst, etype, num_nodes=None, ntype=None, num_relations=None,
                 num_ntypes=None, *, check_relation_types=False):
        _check_tensor(src, "src")
        _check_tensor(dst, "dst")
        _check_tensor(etype, "etype")
        _check_tensor(ntype, "ntype", optional=True)
        num_nodes = _check_count(num_nodes, "num_nodes")
        num_relations = _check_count(num_relations, "num_relations")
        num_ntypes = _check_count(num_ntypes, "num_ntypes")
        tensors, sizes = load_runtime().graph_build(
            src, dst, etype, num_nodes, ntype, num_relations, num_ntypes,
            bool(check_relation_types))
        self._set(tensors, sizes)

    @classmethod
    def _from_parts(cls, tensors, sizes):
        graph = cls.__new__(cls)
        graph._set(tensors, sizes)
        return graph

    def _set(self, tensors, sizes):
        names, size_names = _fields()
        self._tensors = dict(zip(names, tensors))
        self._sizes = dict(zip(size_names, sizes))

    # --- sizes -----------------------------------------------------------------------------
    @property
    def num_nodes(self):
        return self._sizes["num_nodes"]

    @property
    def num_edges(self):
        return self._sizes["num_edges"]

    @property
    def num_relations(self):
        return self._sizes["num_relations"]

    @property
    def num_ntypes(self):
        """The number of node types (1 when no ``ntype`` was given)."""
        return self._sizes["num_ntypes"]

    @property
    def has_ntype(self):
        """Whether node types were given."""
        return bool(self._sizes["has_ntype"])

    @property
    def num_unique_src(self):
        """U_src: the number of unique (source node, relation) pairs."""
        return self._tensors["unique_src"].numel()

    @property
    def num_unique_dst(self):
        """U_dst: the number of unique (destination node, relation) pairs."""
        return self._tensors["unique_dst"].numel()

    @property
    def device(self):
        return self._tensors["src"].device

    # --- conversions -----------------------------------------------------------------------
    def tensors(self):
        """All tensors as a dict name -> tensor, in the native order."""
        return dict(self._tensors)

    def to(self, device, non_blocking=False):
        """The same graph on ``device`` (``self`` when already there)."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device == self.device:
            return self
        names, size_names = _fields()
        moved = [self._tensors[n].to(device, non_blocking=non_blocking) for n in names]
        return Graph._from_parts(moved, [self._sizes[n] for n in size_names])

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else torch.device("cuda", device)
                       if isinstance(device, int) else device)

    def sort_edge_data(self, data):
        """Edge data in the user's edge order -> relation-sorted order (along dim 0)."""
        return data.index_select(0, self._tensors["edge_perm"].to(data.device))

    def unsort_edge_data(self, data):
        """Edge data in relation-sorted order -> the user's edge order (along dim 0)."""
        return data.index_select(0, self._tensors["edge_perm_inv"].to(data.device))

    def __repr__(self):
        return (f"hector.Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
                f"num_relations={self.num_relations}, num_ntypes={self.num_ntypes}, "
                f"unique_src={self.num_unique_src}, unique_dst={self.num_unique_dst}, "
                f"device={self.device})")


def _tensor_property(name, doc):
    def get(self):
        return self._tensors[name]
    get.__name__ = name
    return property(get, doc=doc)


_DOCS = {
    "src": "[E] source node of every edge, user order.",
    "dst": "[E] destination node of every edge, user order.",
    "etype": "[E] relation of every edge, user order.",
    "rel_ptr": "[R+1] the edges of relation r are the sorted positions rel_ptr[r]:rel_ptr[r+1].",
    "edge_perm": "[E] sorted position -> user edge id.",
    "edge_perm_inv": "[E] user edge id -> sorted position.",
    "sorted_src": "[E] source node per sorted edge.",
    "sorted_dst": "[E] destination node per sorted edge.",
    "sorted_etype": "[E] relation per sorted edge (non-decreasing).",
    "in_ptr": "[N+1] CSR by destination: node i's incoming edges are in_eid[in_ptr[i]:in_ptr[i+1]].",
    "in_eid": "[E] sorted edge ids grouped by destination (ascending within a node).",
    "in_src": "[E] source node of every in_eid entry.",
    "out_ptr": "[N+1] CSR by source: node j's outgoing edges are out_eid[out_ptr[j]:out_ptr[j+1]].",
    "out_eid": "[E] sorted edge ids grouped by source (ascending within a node).",
    "out_dst": "[E] destination node of every out_eid entry.",
    "unique_src_ptr": "[R+1] relation r's unique sources are unique_src[ptr[r]:ptr[r+1]].",
    "unique_src": "[U_src] node of every unique (source, relation) pair, sorted per relation.",
    "unique_src_inv": "[E] per sorted edge, its (source, relation) pair's index in unique_src.",
    "unique_dst_ptr": "[R+1] relation r's unique destinations are unique_dst[ptr[r]:ptr[r+1]].",
    "unique_dst": "[U_dst] node of every unique (destination, relation) pair, sorted per relation.",
    "unique_dst_inv": "[E] per sorted edge, its (destination, relation) pair's index in unique_dst.",
    "ntype": "[N] node type of every node (zeros without ntype).",
    "ntype_ptr": "[T+1] the nodes of type t are ntype_perm[ntype_ptr[t]:ntype_ptr[t+1]].",
    "ntype_perm": "[N] type-sorted position -> node id (ascending node id within a type).",
    "ntype_perm_inv": "[N] node id -> type-sorted position.",
    "norm_relation": "[E] float64, per sorted edge: 1/|N_r(i)| (PyG RGCNConv aggr='mean').",
    "norm_in": "[E] float64, per sorted edge: 1/in-degree of the destination.",
    "unique_src_edge_ptr": "[U_src+1] pair u's edges are unique_src_edges[ptr[u]:ptr[u+1]].",
    "unique_src_edges": "[E] sorted edge ids grouped by unique (source, relation) pair.",
    "unique_dst_edge_ptr": "[U_dst+1] pair u's edges are the sorted positions ptr[u]:ptr[u+1].",
    "unique_src_node_ptr": "[N+1] node i's source pairs are unique_src_by_node[ptr[i]:ptr[i+1]].",
    "unique_src_by_node": "[U_src] unique (source, relation) pair indices grouped by node.",
    "unique_dst_node_ptr": "[N+1] node i's destination pairs are unique_dst_by_node[ptr[i]:ptr[i+1]].",
    "unique_dst_by_node": "[U_dst] unique (destination, relation) pair indices grouped by node.",
}

for _name, _doc in _DOCS.items():
    setattr(Graph, _name, _tensor_property(_name, _doc))
del _name, _doc
