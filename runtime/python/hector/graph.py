"""hector.Graph: a validated relational graph with the index structures compiled layers read."""
import torch

from ._native import load_runtime

__all__ = ["Graph"]

_FIELDS = None


def _fields():
    """(structure names, size names) of the native graph, in the native order."""
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

    The graph renumbers the edges in its *internal order* (by destination, then relation, then
    the user's edge id): every per-edge structure uses it, ``edge_perm`` maps an internal
    position to the user's edge id, and :meth:`sort_edge_data` / :meth:`unsort_edge_data`
    convert edge data between the two orders. Index structures are ``torch.int32`` whenever
    the graph's counts allow (``index_dtype``; ``torch.int64`` on request or for graphs with
    2^31 nodes or edges or more).

    Only the base structures (``in_ptr``, ``sorted_src``, ``sorted_etype``, ``edge_perm``: the
    CSR by destination) are built with the graph; every other structure is built, with its
    group, when a layer that reads it first runs or when its property is first read, and then
    kept. :attr:`nbytes` and :meth:`built` say what the graph holds; the structures are listed
    in ``codegen-templates/hector/emit/graph_schema.h`` and docs/runtime.md. They are
    immutable: a layer call on a graph whose structure was written in place raises
    ``ValueError``.

    Raises ``TypeError`` for non-integer tensors and ``ValueError`` for any other bad input, naming
    the tensor and the first bad position.
    """

    def __init__(self, src, dst, etype, num_nodes=None, ntype=None, num_relations=None,
                 num_ntypes=None, *, check_relation_types=False, index_dtype=None):
        _check_tensor(src, "src")
        _check_tensor(dst, "dst")
        _check_tensor(etype, "etype")
        _check_tensor(ntype, "ntype", optional=True)
        num_nodes = _check_count(num_nodes, "num_nodes")
        num_relations = _check_count(num_relations, "num_relations")
        num_ntypes = _check_count(num_ntypes, "num_ntypes")
        if index_dtype is not None and index_dtype not in (torch.int32, torch.int64):
            raise ValueError(f"hector.Graph: index_dtype must be torch.int32, torch.int64 or "
                             f"None, got {index_dtype}")
        self._impl = load_runtime().graph_create(
            src, dst, etype, num_nodes, ntype, num_relations, num_ntypes,
            bool(check_relation_types), index_dtype)
        self._read_sizes()

    @classmethod
    def from_pyg(cls, data, *, num_relations=None, edge_type=None):
        """The graph of a PyG ``Data`` (``edge_index``, ``edge_type``, ``num_nodes``) or
        ``HeteroData`` (node types stacked in metadata order, one relation per edge type; the
        mapping is ``graph.hetero``, a :class:`hector.pyg.HeteroLayout`). PyG mini-batches
        work the same way (their ``n_id``/``e_id`` are kept). See ``hector.pyg``."""
        from .pyg import from_pyg
        return from_pyg(data, num_relations=num_relations, edge_type=edge_type)

    @classmethod
    def _from_impl(cls, impl):
        graph = cls.__new__(cls)
        graph._impl = impl
        graph._read_sizes()
        return graph

    def _read_sizes(self):
        names = _fields()[1]
        self._sizes = dict(zip(names, self._impl.sizes()))

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
        """U_src: the number of unique (source node, relation) pairs (counted when the graph
        was built, or by building the unique source pairs)."""
        return int(self._impl.num_unique_src())

    @property
    def num_unique_dst(self):
        """U_dst: the number of unique (destination node, relation) pairs."""
        return self._sizes["num_unique_dst"]

    @property
    def device(self):
        return torch.device(self._impl.device())

    @property
    def index_dtype(self):
        """The dtype of every index structure: ``torch.int32`` or ``torch.int64``."""
        return torch.int32 if self._sizes["index_bits"] == 32 else torch.int64

    @property
    def nbytes(self):
        """Bytes held by the structures built so far."""
        return int(self._impl.nbytes())

    # --- structures ------------------------------------------------------------------------
    def built(self):
        """The names of the structures built so far."""
        return list(self._impl.built())

    def require(self, *names):
        """Builds the named structures (and their groups) now, rather than on first use."""
        self._impl.require(list(names))

    def tensors(self):
        """The structures built so far, as a dict name -> tensor (in the native order)."""
        built = set(self._impl.built())
        return {n: self._impl.tensor(n) for n in _fields()[0] if n in built}

    # --- the user's view -------------------------------------------------------------------
    @property
    def src(self):
        """[E] source node of every edge, in the user's order (int64; computed on each read)."""
        return self._impl.user_edges()[0]

    @property
    def dst(self):
        """[E] destination node of every edge, in the user's order (int64; computed on each
        read)."""
        return self._impl.user_edges()[1]

    @property
    def etype(self):
        """[E] relation of every edge, in the user's order (int64; computed on each read)."""
        return self._impl.user_edges()[2]

    def edge_norm(self, kind="relation", dtype=torch.float32, order="user"):
        """The degree norm of every edge: ``kind="relation"`` 1/|N_r(i)| (PyG RGCNConv's
        ``aggr="mean"``: one over the number of incoming edges of the edge's relation at its
        destination, duplicates counted) or ``"in"`` 1/in-degree, in ``dtype``, in the user's
        edge order (``order="internal"``: the graph's). Computed on each call, not kept."""
        if order not in ("user", "internal"):
            raise ValueError(f"hector.Graph.edge_norm: order must be 'user' or 'internal', "
                             f"got {order!r}")
        return self._impl.edge_norm(kind, dtype, order == "user")

    @property
    def norm_relation(self):
        """[E] float64, internal order: 1/|N_r(i)| (see :meth:`edge_norm`)."""
        return self.edge_norm("relation", torch.float64, order="internal")

    @property
    def norm_in(self):
        """[E] float64, internal order: 1/in-degree of the destination."""
        return self.edge_norm("in", torch.float64, order="internal")

    # --- conversions -----------------------------------------------------------------------
    def to(self, device, non_blocking=False):
        """The same graph on ``device`` (``self`` when already there)."""
        device = torch.device(device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        if device == self.device:
            return self
        return Graph._from_impl(self._impl.to(str(device), bool(non_blocking)))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else torch.device("cuda", device)
                       if isinstance(device, int) else device)

    def sort_edge_data(self, data):
        """Edge data in the user's edge order -> the internal order (along dim 0)."""
        return self._impl.sort_edge_data(data)

    def unsort_edge_data(self, data):
        """Edge data in the internal order -> the user's edge order (along dim 0)."""
        return self._impl.unsort_edge_data(data)

    def __repr__(self):
        return (f"hector.Graph(num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
                f"num_relations={self.num_relations}, num_ntypes={self.num_ntypes}, "
                f"unique_dst={self.num_unique_dst}, index_dtype={self.index_dtype}, "
                f"device={self.device})")


def _tensor_property(name, doc):
    def get(self):
        return self._impl.tensor(name)
    get.__name__ = name
    return property(get, doc=doc + " Built on first read.")


_DOCS = {
    "in_ptr": "[N+1] node v's incoming edges are the positions in_ptr[v]:in_ptr[v+1].",
    "sorted_src": "[E] source node of every edge (internal order).",
    "sorted_etype": "[E] relation of every edge (internal order; non-decreasing within a node).",
    "edge_perm": "[E] internal position -> user edge id.",
    "node_range": "[2] {0, N}.",
    "edge_range": "[2] {0, E}.",
    "sorted_dst": "[E] destination node of every edge (internal order; non-decreasing).",
    "rel_ptr": "[R+1] relation r's edges are the positions rel_rows[rel_ptr[r]:rel_ptr[r+1]].",
    "rel_rows": "[E] positions grouped by relation (ascending within a relation).",
    "out_ptr": "[N+1] CSR by source: node j's outgoing edges are out_pos[out_ptr[j]:out_ptr[j+1]].",
    "out_pos": "[E] positions grouped by source, then relation (ascending within).",
    "out_dst": "[E] destination of every CSR-by-source entry: sorted_dst[out_pos[j]].",
    "unique_src": "[U_src] node of every unique (source, relation) pair (by relation, then "
                  "node).",
    "unique_src_ptr": "[R+1] relation r's source pairs are unique_src_ptr[r]:unique_src_ptr[r+1].",
    "unique_src_inv": "[E] per position, its (source, relation) pair.",
    "unique_src_range": "[2] {0, U_src}.",
    "unique_src_run_ptr": "[U_src+1] the source pairs as runs of the CSR by source, in its "
                          "order: run k is out_pos[unique_src_run_ptr[k]:unique_src_run_ptr[k+1]].",
    "unique_src_run": "[U_src] the source pair of every run of the CSR by source.",
    "unique_dst": "[U_dst] node of every unique (destination, relation) pair (by relation, "
                  "then node).",
    "unique_dst_ptr": "[R+1] relation r's destination pairs are "
                      "unique_dst_ptr[r]:unique_dst_ptr[r+1].",
    "unique_dst_inv": "[E] per position, its (destination, relation) pair.",
    "unique_dst_range": "[2] {0, U_dst}.",
    "unique_dst_run_ptr": "[U_dst+1] the destination pairs as runs of positions, in order: run "
                          "k is the positions unique_dst_run_ptr[k]:unique_dst_run_ptr[k+1].",
    "unique_dst_run": "[U_dst] the destination pair of every run of positions.",
    "ntype": "[N] node type of every node (zeros without ntype).",
    "ntype_ptr": "[T+1] the nodes of type t are ntype_perm[ntype_ptr[t]:ntype_ptr[t+1]].",
    "ntype_perm": "[N] nodes grouped by type (ascending node id within a type).",
}

for _name, _doc in _DOCS.items():
    setattr(Graph, _name, _tensor_property(_name, _doc))
del _name, _doc
