"""PyG data as :class:`hector.Graph`: ``Graph.from_pyg(data)`` and the stacked node layout.

A ``Data`` (``edge_index`` [2, E], ``edge_type`` [E], ``num_nodes``) becomes a graph with
``src, dst = edge_index`` and relation ``edge_type``. A ``HeteroData`` becomes one graph over
all nodes *stacked* by type in PyG's metadata order (type t's nodes are the rows
``offset[t]:offset[t] + count[t]``, node ids within a type kept), with ``ntype`` set and one
relation per edge type, numbered in the metadata order; the mapping is kept as
``graph.hetero`` (:class:`HeteroLayout`), whose :meth:`~HeteroLayout.stack` and
:meth:`~HeteroLayout.unstack` convert between per-type dicts and the stacked tensor. PyG's
mini-batches (``NeighborLoader``) are ``Data``/``HeteroData`` with local ids and go through the
same path; their ``n_id`` / ``e_id`` are kept (``graph.n_id``, ``graph.e_id``; per type in
``graph.hetero.n_id``).
"""
from __future__ import annotations

import torch

__all__ = ["HeteroLayout", "from_pyg", "from_edge_index", "from_hetero_dicts"]


def _check_edge_index(edge_index, edge_type, num_nodes, where, src_nodes=None):
    if not isinstance(edge_index, torch.Tensor):
        raise TypeError(f"{where}: edge_index must be a torch.Tensor, got "
                        f"{type(edge_index).__name__}")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{where}: edge_index must have shape [2, E], got "
                         f"{list(edge_index.shape)}")
    if edge_index.dtype.is_floating_point or edge_index.dtype == torch.bool:
        raise TypeError(f"{where}: edge_index must have an integer dtype, got {edge_index.dtype}")
    if edge_type is not None:
        if not isinstance(edge_type, torch.Tensor):
            raise TypeError(f"{where}: edge_type must be a torch.Tensor, got "
                            f"{type(edge_type).__name__}")
        if edge_type.dim() != 1 or edge_type.shape[0] != edge_index.shape[1]:
            raise ValueError(f"{where}: edge_type must have one entry per edge of edge_index: "
                             f"got shape {list(edge_type.shape)} for {edge_index.shape[1]} edges")
    if num_nodes is not None and edge_index.numel():
        bounds = (src_nodes if src_nodes is not None else num_nodes, num_nodes)
        for row, name in ((0, "source"), (1, "destination")):
            ids = edge_index[row]
            bad = torch.nonzero((ids < 0) | (ids >= bounds[row])).flatten()
            if bad.numel():
                e = int(bad[0])
                raise ValueError(f"{where}: edge_index[{row}, {e}] = {int(ids[e])} is out of range "
                                 f"[0, {bounds[row]}) ({name} node ids)")


def from_edge_index(edge_index, edge_type=None, num_nodes=None, num_relations=None,
                    where="hector.Graph.from_pyg"):
    """A :class:`hector.Graph` from PyG's ``edge_index`` [2, E] and ``edge_type`` [E] (``None``:
    one relation)."""
    from .graph import Graph
    _check_edge_index(edge_index, edge_type, num_nodes, where)
    if edge_type is None:
        edge_type = torch.zeros(edge_index.shape[1], dtype=torch.int64, device=edge_index.device)
    elif edge_type.numel() and num_relations is not None:
        bad = torch.nonzero((edge_type < 0) | (edge_type >= num_relations)).flatten()
        if bad.numel():
            e = int(bad[0])
            raise ValueError(f"{where}: edge_type[{e}] = {int(edge_type[e])} is out of range "
                             f"[0, {num_relations}) (num_relations)")
    return Graph(edge_index[0], edge_index[1], edge_type, num_nodes=num_nodes,
                 num_relations=num_relations)


class HeteroLayout:
    """How a heterogeneous graph's node and edge types map to the stacked layout: node types
    and edge types in order (their ids), per type the node count and the first stacked row."""

    def __init__(self, node_types, edge_types, num_nodes):
        self.node_types = list(node_types)
        self.edge_types = [tuple(e) for e in edge_types]
        self.num_nodes_dict = {t: int(num_nodes[t]) for t in self.node_types}
        self.node_type_id = {t: i for i, t in enumerate(self.node_types)}
        self.edge_type_id = {e: i for i, e in enumerate(self.edge_types)}
        self.offset = {}
        total = 0
        for t in self.node_types:
            self.offset[t] = total
            total += self.num_nodes_dict[t]
        self.num_nodes = total
        self.n_id = {}

    def metadata(self):
        return self.node_types, self.edge_types

    def ntype(self, device=None) -> torch.Tensor:
        """[N] the type id of every stacked node."""
        return torch.repeat_interleave(
            torch.arange(len(self.node_types), device=device),
            torch.tensor([self.num_nodes_dict[t] for t in self.node_types], device=device))

    def stack(self, x_dict, where="hector.HeteroLayout.stack") -> torch.Tensor:
        """Per-type features ``{type: [n_t, F]}`` -> the stacked ``[N, F]`` tensor
        (differentiable: a ``torch.cat`` in the layout's type order)."""
        for t in x_dict:
            if t not in self.node_type_id:
                raise ValueError(f"{where}: unknown node type {t!r} in x_dict (the graph's node "
                                 f"types are {self.node_types})")
        parts = []
        for t in self.node_types:
            if t not in x_dict:
                raise ValueError(f"{where}: x_dict has no entry for node type {t!r}")
            x = x_dict[t]
            if not isinstance(x, torch.Tensor) or x.dim() < 1 or x.shape[0] != \
                    self.num_nodes_dict[t]:
                shape = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{where}: x_dict[{t!r}] must have {self.num_nodes_dict[t]} "
                                 f"rows (the nodes of that type), got {shape}")
            parts.append(x)
        widths = {tuple(p.shape[1:]) for p in parts}
        if len(widths) > 1:
            raise ValueError(f"{where}: the node types' features have different shapes "
                             f"{sorted(widths)}; the stacked layout needs one width")
        return torch.cat(parts, dim=0)

    def unstack(self, x, types=None) -> dict:
        """The stacked ``[N, ...]`` tensor -> ``{type: [n_t, ...]}`` (views), for ``types``
        (default: every node type)."""
        if x.shape[0] != self.num_nodes:
            raise ValueError(f"hector.HeteroLayout.unstack: x has {x.shape[0]} rows but the "
                             f"layout has {self.num_nodes} nodes")
        return {t: x[self.offset[t]:self.offset[t] + self.num_nodes_dict[t]]
                for t in (self.node_types if types is None else types)}

    def __repr__(self):
        return (f"HeteroLayout(node_types={self.node_types}, edge_types={self.edge_types}, "
                f"num_nodes={self.num_nodes_dict})")


def from_hetero_dicts(layout: HeteroLayout, edge_index_dict, where="hector.Graph.from_pyg"):
    """The stacked graph of ``edge_index_dict`` ({(src type, rel, dst type): [2, E]}) over
    ``layout``; the relations are the layout's edge type ids."""
    from .graph import Graph
    srcs, dsts, ets = [], [], []
    for key, ei in edge_index_dict.items():
        key = tuple(key) if isinstance(key, (tuple, list)) else key
        if not isinstance(key, tuple) or len(key) != 3:
            raise ValueError(f"{where}: edge type {key!r} is not a (source type, relation, "
                             "destination type) triple")
        for t in (key[0], key[2]):
            if t not in layout.node_type_id:
                raise ValueError(f"{where}: unknown node type {t!r} in edge_index_dict key "
                                 f"{key} (the node types are {layout.node_types})")
        if key not in layout.edge_type_id:
            raise ValueError(f"{where}: unknown edge type {key} in edge_index_dict (the edge "
                             f"types are {layout.edge_types})")
        _check_edge_index(ei, None, layout.num_nodes_dict[key[2]], f"{where}: {key}",
                          src_nodes=layout.num_nodes_dict[key[0]])
        srcs.append(ei[0].long() + layout.offset[key[0]])
        dsts.append(ei[1].long() + layout.offset[key[2]])
        ets.append(torch.full((ei.shape[1],), layout.edge_type_id[key], dtype=torch.int64,
                              device=ei.device))
    device = srcs[0].device if srcs else None
    empty = torch.zeros(0, dtype=torch.int64, device=device)
    graph = Graph(torch.cat(srcs) if srcs else empty, torch.cat(dsts) if dsts else empty,
                  torch.cat(ets) if ets else empty, num_nodes=layout.num_nodes,
                  ntype=layout.ntype(device), num_relations=len(layout.edge_types),
                  num_ntypes=len(layout.node_types))
    graph.hetero = layout
    return graph


def from_pyg(data, *, num_relations=None, edge_type=None):
    """A :class:`hector.Graph` from a PyG ``Data`` or ``HeteroData`` (see the module docs).

    For ``Data``: ``edge_type`` defaults to ``data.edge_type`` (absent: one relation),
    ``num_relations`` to ``data.num_relations`` if set, else the largest relation plus one.
    For ``HeteroData``: the node types and edge types of ``data.metadata()`` in that order."""
    where = "hector.Graph.from_pyg"
    try:
        from torch_geometric.data import Data, HeteroData
    except ImportError as error:  # pragma: no cover
        raise ImportError(f"{where} needs torch_geometric") from error
    if isinstance(data, HeteroData):
        node_types, edge_types = data.metadata()
        layout = HeteroLayout(node_types, edge_types,
                              {t: data[t].num_nodes for t in node_types})
        for t in node_types:
            if "n_id" in data[t]:
                layout.n_id[t] = data[t].n_id
        graph = from_hetero_dicts(layout, {e: data[e].edge_index for e in edge_types}, where)
        return graph
    if isinstance(data, Data):
        if edge_type is None:
            edge_type = getattr(data, "edge_type", None)
        if num_relations is None:
            num_relations = getattr(data, "num_relations", None)
            if isinstance(num_relations, torch.Tensor):
                num_relations = int(num_relations.max())
        if data.edge_index is None:
            raise ValueError(f"{where}: data has no edge_index")
        graph = from_edge_index(data.edge_index, edge_type, data.num_nodes, num_relations, where)
        for name in ("n_id", "e_id"):
            if name in data:
                setattr(graph, name, data[name])
        return graph
    raise TypeError(f"{where}: data must be a torch_geometric Data or HeteroData, got "
                    f"{type(data).__name__}")
