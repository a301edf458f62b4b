"""hector.nn against PyG: a PyG layer's state_dict loaded into ours gives the same outputs and
gradients (float64, 1e-10) on the awkward graphs of references.py, and ours loaded into PyG's
gives PyG's; Graph.from_pyg on Data, HeteroData and NeighborLoader batches; hector.compile's
cache and errors. The three compiled layers are built once per session (HECTOR_CACHE_DIR)."""
import copy
import io
import os
import pathlib
import pickle
import subprocess
import sys

import pytest
import torch

import references

torch_geometric = pytest.importorskip("torch_geometric")
from torch_geometric import nn as pyg_nn  # noqa: E402

import hector  # noqa: E402
import hector.nn as hnn  # noqa: E402

IN, OUT, HEADS = 8, 6, 2
RGAT_OUT = 3  # per head
TOL = dict(rtol=1e-10, atol=1e-10)


@pytest.fixture(scope="session", autouse=True)
def _cache(tmp_path_factory):
    os.environ.setdefault("HECTOR_CACHE_DIR", str(tmp_path_factory.mktemp("hector-cache")))
    os.environ.setdefault("HECTOR_TARGET", "cpu")
    torch_geometric.backend.use_segment_matmul = False
    yield


def graphs():
    return [references.awkward_graph(seed=s, num_nodes=30, num_edges=120, num_relations=4)
            for s in (0, 1)]


def _inputs(g, width, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(g.num_nodes, width, generator=gen, dtype=torch.float64)
    return x


def _compare(pyg, ours, g, x, **kw):
    """Forward + backward of both layers on the same input; outputs and every gradient."""
    ei = torch.stack([g.src, g.dst])
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()
    a = pyg(xa, ei, g.etype, **kw)
    b = ours(xb, ei, g.etype, **kw)
    torch.testing.assert_close(b, a, **TOL)
    gen = torch.Generator().manual_seed(7)
    up = torch.randn(a.shape, generator=gen, dtype=torch.float64)
    (a * up).sum().backward()
    (b * up).sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad, **TOL)
    pa, pb = dict(pyg.named_parameters()), dict(ours.named_parameters())
    for name, p in pa.items():
        if p.grad is None:
            continue
        assert pb[name].grad is not None, name
        torch.testing.assert_close(pb[name].grad, p.grad, **TOL, msg=name)


def _both_ways(pyg_cls, our_cls, args, kwargs, g, x, seed=0):
    torch.manual_seed(seed)
    pyg = pyg_cls(*args, **kwargs).double()
    ours = our_cls(*args, **kwargs).double()
    assert list(ours.state_dict()) == list(pyg.state_dict())
    for k, v in pyg.state_dict().items():
        assert ours.state_dict()[k].shape == v.shape, k
    with torch.no_grad():  # make every parameter non-trivial (biases are zeros at init)
        for p in pyg.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours.load_state_dict(pyg.state_dict())
    _compare(pyg, ours, g, x)
    # The other way round: ours (re-randomised) -> PyG.
    with torch.no_grad():
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    pyg2 = pyg_cls(*args, **kwargs).double()
    pyg2.load_state_dict(ours.state_dict())
    ours.zero_grad()
    _compare(pyg2, ours, g, x)


RGCN_CASES = [
    dict(),
    dict(aggr="add"),
    dict(aggr="sum", root_weight=False, bias=False),
    dict(num_bases=3),
    dict(num_blocks=2),
]


@pytest.mark.parametrize("kwargs", RGCN_CASES, ids=lambda k: ",".join(map(str, k.items())) or
                         "default")
def test_rgcn_equals_pyg(kwargs):
    for i, g in enumerate(graphs()):
        _both_ways(pyg_nn.RGCNConv, hnn.RGCNConv, (IN, OUT, g.num_relations), kwargs, g,
                   _inputs(g, IN, i), seed=i)


@pytest.mark.parametrize("kwargs", [dict(), dict(aggr="add"), dict(num_bases=2)],
                         ids=["default", "add", "bases"])
def test_fast_rgcn_equals_pyg(kwargs):
    g = graphs()[0]
    _both_ways(pyg_nn.FastRGCNConv, hnn.FastRGCNConv, (IN, OUT, g.num_relations), kwargs, g,
               _inputs(g, IN, 3))


RGAT_CASES = [
    dict(heads=HEADS),
    dict(heads=HEADS, concat=False),
    dict(heads=HEADS, bias=False, num_bases=3),
    dict(heads=HEADS, num_blocks=2),
    dict(heads=HEADS, concat=False, attention_mode="multiplicative-self-attention"),
]


@pytest.mark.parametrize("kwargs", RGAT_CASES, ids=["concat", "mean", "bases", "blocks",
                                                    "multiplicative"])
def test_rgat_equals_pyg(kwargs):
    for i, g in enumerate(graphs()):
        _both_ways(pyg_nn.RGATConv, hnn.RGATConv, (IN, RGAT_OUT, g.num_relations),
                   kwargs, g, _inputs(g, IN, i), seed=i)


def test_rgat_attention_dropout_equals_pyg(monkeypatch):
    """RGATConv(dropout=p) in training mode drops attention coefficients as PyG's does. With
    F.dropout replaced by a fixed mask (0 or 1 / (1 - p) per edge and head), ours and PyG's
    give the same outputs and gradients (float64, 1e-10) on the awkward graphs; with the real
    F.dropout and the same seed they draw the same mask; in eval mode the layer is the one
    without dropout."""
    p = 0.4
    for i, g in enumerate(graphs()):
        ei = torch.stack([g.src, g.dst])
        gen = torch.Generator().manual_seed(10 + i)
        mask = (torch.rand(g.src.numel(), HEADS, generator=gen, dtype=torch.float64) >= p) / (1 - p)
        calls = []

        def fixed(t, p=0.5, training=True, inplace=False):
            assert t.shape == mask.shape and training, (t.shape, training)
            calls.append(t.shape)
            return t * mask

        torch.manual_seed(i)
        pyg = pyg_nn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS, dropout=p).double()
        ours = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS, dropout=p).double()
        with torch.no_grad():
            for q in pyg.parameters():
                q.add_(torch.randn_like(q) * 0.1)
        ours.load_state_dict(pyg.state_dict())
        x = _inputs(g, IN, i)
        with monkeypatch.context() as m:
            m.setattr(torch.nn.functional, "dropout", fixed)
            _compare(pyg, ours, g, x)
        assert len(calls) == 2  # one mask per layer call: PyG's and ours

        # The real F.dropout, the same seed: the same mask on both sides.
        with torch.no_grad():
            torch.manual_seed(5)
            a = pyg(x, ei, g.etype)
            torch.manual_seed(5)
            b = ours(x, ei, g.etype)
            torch.testing.assert_close(b, a, **TOL)
            pyg.eval(), ours.eval()
            plain = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS).double()
            plain.load_state_dict(ours.state_dict())
            torch.testing.assert_close(ours(x, ei, g.etype), pyg(x, ei, g.etype), **TOL)
            assert torch.equal(ours(x, ei, g.etype), plain(x, ei, g.etype))
            assert not torch.equal(b, plain(x, ei, g.etype))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        hnn.RGATConv(IN, RGAT_OUT, 2, dropout=1.5)


def hetero_inputs(g, width, seed=0):
    """PyG's heterogeneous form of an awkward graph: node types t0..t{T-1} (the last without
    nodes), one edge type per (source type, relation, destination type) that occurs, plus one
    edge type without edges."""
    T = g.num_ntypes
    ntypes = [f"t{t}" for t in range(T)]
    triples = sorted({(int(a), int(r), int(b)) for a, r, b in zip(
        g.ntype[g.src].tolist(), g.etype.tolist(), g.ntype[g.dst].tolist())})
    etypes = [(f"t{a}", f"r{r}", f"t{b}") for a, r, b in triples] + [("t0", "empty", "t1")]
    local = torch.empty(g.num_nodes, dtype=torch.int64)
    gen = torch.Generator().manual_seed(seed)
    x_dict = {}
    for t, name in enumerate(ntypes):
        idx = torch.nonzero(g.ntype == t).flatten()
        local[idx] = torch.arange(idx.numel())
        x_dict[name] = torch.randn(idx.numel(), width, generator=gen, dtype=torch.float64)
    ei = {}
    for (a, r, b), et in zip(triples, etypes):
        m = (g.etype == r) & (g.ntype[g.src] == a) & (g.ntype[g.dst] == b)
        ei[et] = torch.stack([local[g.src[m]], local[g.dst[m]]])
    ei[etypes[-1]] = torch.zeros(2, 0, dtype=torch.int64)
    return (ntypes, etypes), x_dict, ei


def _compare_hetero(pyg, ours, x_dict, ei):
    xa = {k: v.clone().requires_grad_() for k, v in x_dict.items()}
    xb = {k: v.clone().requires_grad_() for k, v in x_dict.items()}
    a, b = pyg(xa, ei), ours(xb, ei)
    assert list(a) == list(b)
    gen = torch.Generator().manual_seed(3)
    loss_a = loss_b = 0
    for k in a:
        torch.testing.assert_close(b[k], a[k], **TOL, msg=k)
        up = torch.randn(a[k].shape, generator=gen, dtype=torch.float64)
        loss_a = loss_a + (a[k] * up).sum()
        loss_b = loss_b + (b[k] * up).sum()
    loss_a.backward()
    loss_b.backward()
    for k in x_dict:
        if xa[k].grad is not None:
            torch.testing.assert_close(xb[k].grad, xa[k].grad, **TOL, msg=k)
    pb = dict(ours.named_parameters())
    for name, p in pyg.named_parameters():
        if p.grad is not None:
            torch.testing.assert_close(pb[name].grad, p.grad, **TOL, msg=name)


def _hgt_both_ways(in_channels, metadata, x_dict, ei, seed):
    """HGTConv(in_channels, IN): PyG's state_dict into ours, then ours (re-randomised) into a
    fresh PyG layer; outputs and gradients compared each time."""
    torch.manual_seed(seed)
    pyg = pyg_nn.HGTConv(in_channels, IN, metadata, heads=HEADS).double()
    ours = hnn.HGTConv(in_channels, IN, metadata, heads=HEADS).double()
    assert list(ours.state_dict()) == list(pyg.state_dict())
    for k, v in pyg.state_dict().items():
        assert ours.state_dict()[k].shape == v.shape, k
    with torch.no_grad():
        for p in pyg.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    ours.load_state_dict(pyg.state_dict())
    _compare_hetero(pyg, ours, x_dict, ei)
    with torch.no_grad():
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    pyg2 = pyg_nn.HGTConv(in_channels, IN, metadata, heads=HEADS).double()
    pyg2.load_state_dict(ours.state_dict())
    ours.zero_grad()
    _compare_hetero(pyg2, ours, x_dict, ei)
    return ours


def test_hgt_equals_pyg():
    for seed, g in enumerate(graphs()):
        metadata, x_dict, ei = hetero_inputs(g, IN, seed)
        _hgt_both_ways(IN, metadata, x_dict, ei, seed)


def test_rgat_attention_weights_equal_pyg(monkeypatch):
    """return_attention_weights (True or False: PyG returns them for any bool) gives PyG's
    (out, (edge_index, alpha)): alpha per edge and head in the caller's edge order, before the
    attention dropout, and gradients through both out and alpha equal PyG's (float64, 1e-10),
    eager and under torch.compile(fullgraph=True), on the awkward graphs."""
    for i, g in enumerate(graphs()):
        ei = torch.stack([g.src, g.dst])
        torch.manual_seed(i)
        pyg = pyg_nn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS, dropout=0.3).double()
        ours = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS, dropout=0.3).double()
        with torch.no_grad():
            for q in pyg.parameters():
                q.add_(torch.randn_like(q) * 0.1)
        ours.load_state_dict(pyg.state_dict())
        gen = torch.Generator().manual_seed(20 + i)
        mask = (torch.rand(g.src.numel(), HEADS, generator=gen, dtype=torch.float64) >= 0.3) / 0.7
        monkeypatch.setattr(torch.nn.functional, "dropout",
                            lambda t, p=0.5, training=True, inplace=False: t * mask)
        x = _inputs(g, IN, i)
        up = torch.randn(g.num_nodes, HEADS * RGAT_OUT, generator=gen, dtype=torch.float64)
        up_alpha = torch.randn(g.src.numel(), HEADS, generator=gen, dtype=torch.float64)
        runs = [(pyg, True, False), (ours, True, False), (ours, False, True), (ours, True, True)]
        for training in (True, False):
            results = []
            for layer, flag, compiled in runs:
                layer.train(training)
                layer.zero_grad()
                xl = x.clone().requires_grad_()
                run = torch.compile(layer, fullgraph=True, backend="aot_eager") if compiled \
                    else layer
                out, (edges, alpha) = run(xl, ei, g.etype, return_attention_weights=flag)
                assert edges is ei and alpha.shape == (g.src.numel(), HEADS)
                ((out * up).sum() + (alpha * up_alpha).sum()).backward()
                results.append([out.detach(), alpha.detach(), xl.grad] +
                               [q.grad.clone() for q in layer.parameters() if q.grad is not None])
            for r in results[1:]:
                assert len(r) == len(results[0])
                for a, b in zip(results[0], r):
                    torch.testing.assert_close(b, a, **TOL)
        # Without the flag: the output alone, the layer without the coefficients.
        assert isinstance(ours(x, ei, g.etype), torch.Tensor)


@pytest.mark.parametrize("mode,edge_dim", [("additive", 3), ("additive", 1),
                                           ("multiplicative", 3)])
def test_rgat_edge_features_equal_pyg(mode, edge_dim, monkeypatch):
    """edge_dim/edge_attr (PyG's lin_edge and e: a per-edge term of the logits, added in the
    additive attention mode, multiplied in the multiplicative one): the same state_dict keys,
    outputs, attention weights and gradients (x, edge_attr and every parameter) as PyG's, both
    ways, float64, with the attention dropout (a fixed mask) in training mode, with and without
    edge_attr; a 1-D edge_attr for edge_dim=1. An edge_attr of the wrong shape, or without
    edge_dim, is refused naming it."""
    for i, g in enumerate(graphs()):
        ei = torch.stack([g.src, g.dst])
        E = g.src.numel()
        gen = torch.Generator().manual_seed(30 + i)
        mask = (torch.rand(E, HEADS, generator=gen, dtype=torch.float64) >= 0.25) / 0.75
        monkeypatch.setattr(torch.nn.functional, "dropout",
                            lambda t, p=0.5, training=True, inplace=False: t * mask)
        ea = torch.randn((E, edge_dim) if edge_dim > 1 else (E,), generator=gen,
                         dtype=torch.float64)
        x = _inputs(g, IN, i)
        up = torch.randn(g.num_nodes, HEADS * RGAT_OUT, generator=gen, dtype=torch.float64)
        up_alpha = torch.randn(E, HEADS, generator=gen, dtype=torch.float64)
        torch.manual_seed(i)
        kw = dict(heads=HEADS, edge_dim=edge_dim, dropout=0.25,
                  attention_mode=f"{mode}-self-attention")
        pyg = pyg_nn.RGATConv(IN, RGAT_OUT, g.num_relations, **kw).double()
        ours = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, **kw).double()
        assert list(ours.state_dict()) == list(pyg.state_dict())
        for k, v in pyg.state_dict().items():
            assert ours.state_dict()[k].shape == v.shape, k
        with torch.no_grad():
            for q in pyg.parameters():
                q.add_(torch.randn_like(q) * 0.1)
        for src, dst in ((pyg, ours), (ours, pyg)):
            dst.load_state_dict(src.state_dict())
            for attention, use_ea in ((None, True), (True, True), (True, False)):
                results = []
                for layer in (pyg, ours):
                    layer.zero_grad()
                    xl, eal = x.clone().requires_grad_(), ea.clone().requires_grad_()
                    res = layer(xl, ei, g.etype, edge_attr=eal if use_ea else None,
                                return_attention_weights=attention)
                    out, alpha = res if attention else (res, None)
                    loss = (out * up).sum()
                    if attention:
                        loss = loss + (alpha[1] * up_alpha).sum()
                    loss.backward()
                    grads = {n: q.grad for n, q in layer.named_parameters()
                             if q.grad is not None}
                    results.append(([out.detach(), xl.grad] + ([eal.grad] if use_ea else []) +
                                    ([alpha[1].detach()] if attention else []), grads))
                (a, ga), (b, gb) = results
                assert list(gb) == list(ga) and ("e" in ga) == use_ea, (list(ga), list(gb))
                for u, v in zip(a + list(ga.values()), b + list(gb.values())):
                    torch.testing.assert_close(v, u, **TOL)
            with torch.no_grad():
                for q in ours.parameters():
                    q.add_(torch.randn_like(q) * 0.1)
    with pytest.raises(ValueError, match=r"edge_attr must have shape \[num_edges, edge_dim\]"):
        ours(x, ei, g.etype, edge_attr=torch.zeros(E + 1, edge_dim, dtype=torch.float64))
    plain = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS).double()
    with pytest.raises(ValueError, match="edge_attr needs the layer built with edge_dim"):
        plain(x, ei, g.etype, edge_attr=ea)


def test_hgt_with_a_width_per_node_type_equals_pyg():
    """in_channels as a {node type: width} dict of different widths (PyG's HeteroDictLinear
    per type; the skip only where the width equals out_channels): the same state_dict keys and
    shapes, outputs and gradients as PyG's both ways (float64, 1e-10), on the awkward graphs.
    A width missing for a node type, a lazy -1 width and features of another width are refused
    naming them."""
    for seed, g in enumerate(graphs()):
        metadata, x_dict, ei = hetero_inputs(g, IN, seed)
        gen = torch.Generator().manual_seed(seed)
        widths = {t: (IN, 5, 1, 3)[i % 4] for i, t in enumerate(metadata[0])}
        x_dict = {t: torch.randn(x.shape[0], widths[t], generator=gen, dtype=torch.float64)
                  for t, x in x_dict.items()}
        # A dict in another order than the metadata's: its order is the state_dict's.
        in_channels = dict(reversed(list(widths.items())))
        ours = _hgt_both_ways(in_channels, metadata, x_dict, ei, seed)
    t0, t1 = metadata[0][:2]
    with pytest.raises(ValueError, match=rf"no width for node types \['{t1}'\]"):
        hnn.HGTConv({t0: 4}, IN, (metadata[0][:2], metadata[1]))
    with pytest.raises(NotImplementedError, match="lazy -1"):
        hnn.HGTConv({**widths, t0: -1}, IN, metadata)
    with pytest.raises(ValueError, match=rf"x_dict\['{t1}'\] must have shape \[n, 5\]"):
        ours({**x_dict, t1: torch.zeros(x_dict[t1].shape[0], IN, dtype=torch.float64)}, ei)


# --- Graph.from_pyg -----------------------------------------------------------------------

def test_from_pyg_data_and_hetero_data_equal_hand_made_graphs():
    from torch_geometric.data import Data, HeteroData
    g = graphs()[0]
    data = Data(edge_index=torch.stack([g.src, g.dst]), edge_type=g.etype, num_nodes=g.num_nodes)
    graph = hector.Graph.from_pyg(data, num_relations=g.num_relations)
    assert (graph.num_nodes, graph.num_relations) == (g.num_nodes, g.num_relations)
    assert torch.equal(graph.src, g.src) and torch.equal(graph.dst, g.dst)
    assert torch.equal(graph.etype, g.etype)
    # HeteroData: types stacked in metadata order, edge types numbered in metadata order.
    metadata, x_dict, ei = hetero_inputs(g, IN)
    hd = HeteroData()
    for t, x in x_dict.items():
        hd[t].x = x
    for e, idx in ei.items():
        hd[e].edge_index = idx
    hg = hector.Graph.from_pyg(hd)
    layout = hg.hetero
    assert layout.metadata() == (list(hd.metadata()[0]), [tuple(e) for e in hd.metadata()[1]])
    assert hg.num_relations == len(metadata[1]) and hg.num_ntypes == len(metadata[0])
    # Oracle: the hand-made stacked graph (plain loops over the edge types).
    src, dst, et, nt = [], [], [], []
    off = 0
    offsets = {}
    for i, t in enumerate(metadata[0]):
        offsets[t] = off
        nt += [i] * x_dict[t].shape[0]
        off += x_dict[t].shape[0]
    for r, e in enumerate(metadata[1]):
        for s, d in ei[e].t().tolist():
            src.append(s + offsets[e[0]]), dst.append(d + offsets[e[2]]), et.append(r)
    assert hg.src.tolist() == src and hg.dst.tolist() == dst and hg.etype.tolist() == et
    assert hg.ntype.tolist() == nt
    x = layout.stack(x_dict)
    assert torch.equal(x, torch.cat([x_dict[t] for t in metadata[0]]))
    back = layout.unstack(x)
    assert all(torch.equal(back[t], x_dict[t]) for t in x_dict)


def test_from_pyg_errors_name_the_argument():
    from torch_geometric.data import Data, HeteroData
    ei = torch.tensor([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match="edge_type must have one entry per edge"):
        hector.Graph.from_pyg(Data(edge_index=ei, edge_type=torch.tensor([0, 1]), num_nodes=3))
    with pytest.raises(ValueError, match=r"edge_index\[1, 1\] = 7 is out of range \[0, 3\)"):
        hector.Graph.from_pyg(Data(edge_index=torch.tensor([[0, 1, 2], [1, 7, 0]]),
                                   edge_type=torch.zeros(3, dtype=torch.long), num_nodes=3))
    with pytest.raises(ValueError, match=r"edge_type\[2\] = 5 is out of range \[0, 2\)"):
        hector.Graph.from_pyg(Data(edge_index=ei, edge_type=torch.tensor([0, 1, 5]),
                                   num_nodes=3), num_relations=2)
    hd = HeteroData()
    hd["a"].num_nodes = 2
    hd["b"].num_nodes = 3
    hd["a", "r", "b"].edge_index = torch.tensor([[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r"\('a', 'r', 'b'\): edge_index\[1, 1\] = 3 is out of "
                                         r"range \[0, 3\)"):
        hector.Graph.from_pyg(hd)
    conv = hnn.HGTConv(IN, IN, (["a", "b"], [("a", "r", "b")]), heads=HEADS).double()
    x_dict = {"a": torch.zeros(2, IN, dtype=torch.float64),
              "b": torch.zeros(3, IN, dtype=torch.float64)}
    with pytest.raises(ValueError, match="unknown node type 'c' in edge_index_dict"):
        conv(x_dict, {("a", "r", "c"): torch.tensor([[0], [0]])})
    with pytest.raises(ValueError, match=r"x_dict\['b'\] must have shape \[n, 8\]"):
        conv({"a": x_dict["a"], "b": torch.zeros(3, 5)}, {("a", "r", "b"): ei[:, :0]})
    rgcn = hnn.RGCNConv(IN, OUT, 2).double()
    x = torch.zeros(3, IN, dtype=torch.float64)
    with pytest.raises(ValueError, match="edge_type must have one entry per edge"):
        rgcn(x, ei, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"edge_index\[0, 0\] = 3 is out of range"):
        rgcn(x, torch.tensor([[3], [0]]), torch.tensor([0]))
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        rgcn.load_state_dict(pyg_nn.RGCNConv(IN, OUT, 3).state_dict())
    with pytest.raises(NotImplementedError, match="attention_mechanism='within-relation'"):
        hnn.RGATConv(IN, 3, 2, attention_mechanism="within-relation")
    with pytest.raises(NotImplementedError, match="aggr='max'"):
        hnn.RGCNConv(IN, OUT, 2, aggr="max")


def test_mini_batches_go_through_from_pyg():
    """A PyG mini-batch (local ids, n_id/e_id): NeighborLoader's with every neighbour where
    pyg-lib or torch-sparse is installed, else the same batch built with k_hop_subgraph. The
    layer's outputs at the seed nodes equal those on the full graph."""
    from torch_geometric.data import Data
    from torch_geometric.utils import k_hop_subgraph
    g = graphs()[1]
    x = _inputs(g, IN, 5)
    data = Data(x=x, edge_index=torch.stack([g.src, g.dst]), edge_type=g.etype,
                num_nodes=g.num_nodes)
    torch.manual_seed(0)
    conv = hnn.RGCNConv(IN, OUT, g.num_relations).double()
    full = conv(x, data.edge_index, data.edge_type)
    seeds = torch.tensor([3, 0, 11, 20, 26, 29])           # 26..29 are isolated
    try:
        from torch_geometric.loader import NeighborLoader
        loader = NeighborLoader(data, num_neighbors=[-1], batch_size=len(seeds),
                                input_nodes=seeds, shuffle=False)
        batch = next(iter(loader))
    except ImportError:
        subset, edge_index, mapping, edge_mask = k_hop_subgraph(
            seeds, 1, data.edge_index, relabel_nodes=True, num_nodes=g.num_nodes)
        order = torch.cat([seeds, subset[~torch.isin(subset, seeds)]])   # seeds first, as PyG
        relabel = torch.empty(g.num_nodes, dtype=torch.long)
        relabel[order] = torch.arange(order.numel())
        e_id = torch.nonzero(edge_mask).flatten()
        batch = Data(x=x[order], edge_index=relabel[data.edge_index[:, e_id]],
                     edge_type=g.etype[e_id], n_id=order, e_id=e_id, batch_size=len(seeds),
                     num_nodes=order.numel())
    graph = hector.Graph.from_pyg(batch, num_relations=g.num_relations)
    assert torch.equal(graph.n_id, batch.n_id) and torch.equal(graph.e_id, batch.e_id)
    out = conv(batch.x, batch.edge_index, batch.edge_type)
    torch.testing.assert_close(out[:batch.batch_size], full[batch.n_id[:batch.batch_size]], **TOL)


# --- the layers as PyTorch modules --------------------------------------------------------

def test_graph_prepared_once_per_edge_tensors():
    g = graphs()[0]
    ei, et = torch.stack([g.src, g.dst]), g.etype.clone()
    conv1 = hnn.RGCNConv(IN, OUT, g.num_relations).double()
    x = _inputs(g, IN, 0)
    before = hnn._graph_cache.builds
    a = conv1(x, ei, et)
    conv1(x, ei, et)
    assert hnn._graph_cache.builds == before + 1
    et[0] = (et[0] + 1) % g.num_relations                 # in place: a new version, rebuilt
    b = conv1(x, ei, et)
    assert hnn._graph_cache.builds == before + 2
    assert not torch.equal(a, b)


def test_functional_call_pickle_deepcopy_to():
    g = graphs()[0]
    ei = torch.stack([g.src, g.dst])
    x = _inputs(g, IN, 1)
    torch.manual_seed(0)
    conv = hnn.RGCNConv(IN, OUT, g.num_relations, num_bases=2).double()
    ref = pyg_nn.RGCNConv(IN, OUT, g.num_relations, num_bases=2).double()
    params = {k: v.detach().clone().requires_grad_() for k, v in ref.named_parameters()}
    out = torch.func.functional_call(conv, params, (x, ei, g.etype))
    torch.testing.assert_close(out, ref(x, ei, g.etype), **TOL)
    out.sum().backward()
    assert all(p.grad is not None for p in params.values())
    expected = conv(x, ei, g.etype)
    buffer = io.BytesIO()
    torch.save(conv, buffer)
    buffer.seek(0)
    for other in (pickle.loads(pickle.dumps(conv)), copy.deepcopy(conv),
                  torch.load(buffer, weights_only=False), conv.to("cpu").float().double()):
        torch.testing.assert_close(other(x, ei, g.etype), expected, **TOL)
    with torch.no_grad():
        assert not conv(x, ei, g.etype).requires_grad


# --- hector.compile -----------------------------------------------------------------------

BROKEN = "layer broken(in = 4) {\n  input x: node[in];\n  node h = sum(y);\n  output h;\n}\n"


def test_compile_errors_and_cache(tmp_path):
    model = tmp_path / "broken.hector"
    model.write_text(BROKEN)
    with pytest.raises(hector.CompileError, match=r"broken.hector:3:\d+: error:"):
        hector.compile(model, target="cpu")
    with pytest.raises(hector.CompileError, match=r"<stdin>:3:\d+: error:"):
        hector.compile(BROKEN, target="cpu")
    cache = pathlib.Path(os.environ["HECTOR_CACHE_DIR"])
    assert not list(cache.glob("*.tmp-*")), "a failed build left a partial file"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        hector.compile(tmp_path / "missing.hector")
    with pytest.raises(TypeError, match="parameter 'in' must be an int or a float"):
        hector.compile(hnn._MODELS / "rgcn_conv.hector", **{"in": "8"})
    env = dict(os.environ, HECTORC="", HECTOR_BUILD_DIR=str(tmp_path), PATH="/nonexistent")
    code = ("import sys; sys.path.insert(0, %r); import hector._compile as c\n"
            "c.__file__ = '/nonexistent/a/b/hector/_compile.py'\n"
            "try:\n  c.find_hectorc()\nexcept RuntimeError as e:\n  print(e)\n") % (
                str(pathlib.Path(hector.__file__).parents[1]),)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert "hectorc is not installed" in r.stdout, r.stdout + r.stderr


def test_compile_loads_from_cache_in_a_new_process():
    """The layers above built the library; a new process finds it in the cache (no hectorc
    run) and loads it in under a second."""
    hnn.RGCNConv(IN, OUT, 2)(torch.zeros(2, IN), torch.tensor([[0], [1]]), torch.tensor([0]))
    code = ("import sys, time; sys.path.insert(0, %r); import torch, hector\n"
            "t = time.perf_counter()\n"
            "C = hector.compile(%r, target='cpu', **{'in': %d, 'out': %d})\n"
            "print(time.perf_counter() - t, C.__name__)\n") % (
                str(pathlib.Path(hector.__file__).parents[1]),
                str(hnn._MODELS / "rgcn_conv.hector"), IN, OUT)
    env = dict(os.environ, HECTOR_COMPILE_VERBOSE="1")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "building" not in r.stderr
    seconds, name = r.stdout.split()
    assert name == "rgcn_conv" and float(seconds) < 1.0, r.stdout


# --- torch.compile and opcheck --------------------------------------------------------------

class _TwoLayers(torch.nn.Module):
    def __init__(self, first, second, between=None):
        super().__init__()
        self.conv1, self.conv2 = first, second
        self.between = between or torch.nn.Identity()

    def forward(self, x, edge_index, edge_type):
        h = self.between(torch.relu(self.conv1(x, edge_index, edge_type)))
        return self.conv2(h, edge_index, edge_type)


@pytest.mark.parametrize("kind", ["rgcn", "rgat"])
def test_torch_compile_fullgraph_equals_eager(kind):
    """Dynamo with no graph break (fullgraph=True) and AOTAutograd over the fake kernels
    (backend aot_eager: the tracing inductor also does, without its slow C++ codegen)."""
    g = graphs()[0]
    ei = torch.stack([g.src, g.dst])
    R = g.num_relations
    torch.manual_seed(0)
    if kind == "rgcn":
        model = _TwoLayers(hnn.RGCNConv(IN, OUT, R),
                           hnn.RGCNConv(IN, OUT, R, aggr="add", num_bases=2),
                           torch.nn.Linear(OUT, IN)).double()
    else:  # a Linear back to IN wide keeps to the layers the other tests compiled
        model = _TwoLayers(hnn.RGATConv(IN, RGAT_OUT, R, heads=HEADS),
                           hnn.RGATConv(IN, RGAT_OUT, R, heads=HEADS, concat=False),
                           torch.nn.Linear(HEADS * RGAT_OUT, IN)).double()
    x = _inputs(g, IN, 0).requires_grad_()
    results = []
    for run in (model, torch.compile(model, fullgraph=True, backend="aot_eager")):
        model.zero_grad()
        x.grad = None
        out = run(x, ei, g.etype)
        (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        results.append([out.detach(), x.grad.clone()] + [p.grad.clone()
                                                         for p in model.parameters()
                                                         if p.grad is not None])
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-10)


def test_opcheck_every_operator():
    g = graphs()[0]
    ei = torch.stack([g.src, g.dst])
    x = _inputs(g, IN, 0).requires_grad_()
    rgcn = hnn.RGCNConv(IN, OUT, g.num_relations).double()
    rgat = hnn.RGATConv(IN, RGAT_OUT, g.num_relations, heads=HEADS).double()
    rgcn(x, ei, g.etype), rgat(x, ei, g.etype)  # compiled and registered
    rgcn_ns = hnn._namespace("rgcn_conv", "cpu", (("in", IN), ("out", OUT)))
    rgat_ns = hnn._namespace("rgat_conv", "cpu", (("H", HEADS), ("d", RGAT_OUT), ("in", IN),
                                                  ("slope", 0.2)))
    leaf = lambda t: t.detach().clone().requires_grad_()  # noqa: E731
    spec = [0, g.num_nodes, g.num_relations]
    for norm in ("mean", "add"):
        torch.library.opcheck(hnn._apply_op, (rgcn_ns, [ei, g.etype], spec, norm, [leaf(x)],
                                              [leaf(rgcn.weight), leaf(rgcn.root)]))
    torch.library.opcheck(hnn._apply_op, (rgat_ns, [ei, g.etype], spec, "none", [leaf(x)],
                                          [leaf(rgat.weight), leaf(rgat.q), leaf(rgat.k)]))
    grad = torch.randn(g.num_nodes, OUT, dtype=torch.float64)
    torch.library.opcheck(hnn._apply_backward_op, (rgcn_ns, [ei, g.etype], spec, "mean", [grad],
                                                   [x.detach()], [rgcn.weight.detach(),
                                                                  rgcn.root.detach()]))
    # HGT: the heterogeneous graph spec.
    metadata, x_dict, edict = hetero_inputs(g, IN)
    hgt = hnn.HGTConv(IN, IN, metadata, heads=HEADS).double()
    hgt(x_dict, edict)
    hgt_ns = hnn._namespace("hgt_conv", "cpu", (("H", HEADS), ("in", IN), ("out", IN)))
    types = {t: i for i, t in enumerate(metadata[0])}
    hspec = [1, len(metadata[0]), len(metadata[1])] + [x_dict[t].shape[0] for t in metadata[0]]
    for e in edict:
        hspec += [types[e[0]], metadata[1].index(e), types[e[2]]]
    xs = torch.cat([x_dict[t] for t in metadata[0]])
    torch.library.opcheck(hnn._apply_op, (hgt_ns, list(edict.values()), hspec, "none",
                                          [leaf(xs)], [leaf(w) for w in hgt.kernel_weights()]))


def test_torch_compile_hgt_fullgraph_equals_eager():
    g = graphs()[0]
    metadata, x_dict, edict = hetero_inputs(g, IN)
    torch.manual_seed(0)

    class TwoHGT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = hnn.HGTConv(IN, IN, metadata, heads=HEADS)
            self.conv2 = hnn.HGTConv(IN, IN, metadata, heads=HEADS)

        def forward(self, x_dict, edict):
            h = self.conv1(x_dict, edict)
            h = {t: h.get(t, x_dict[t]) for t in x_dict}   # types without incoming edges
            return self.conv2(h, edict)

    model = TwoHGT().double()
    x_dict = {t: v.requires_grad_() for t, v in x_dict.items()}
    results = []
    for run in (model, torch.compile(model, fullgraph=True, backend="aot_eager")):
        model.zero_grad()
        for v in x_dict.values():
            v.grad = None
        out = run(x_dict, edict)
        sum((o * o).sum() for o in out.values()).backward()
        results.append([o.detach() for o in out.values()]
                       + [v.grad.clone() for v in x_dict.values() if v.grad is not None]
                       + [p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert len(results[0]) == len(results[1])
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kwargs", [dict(), dict(aggr="add", num_bases=2),
                                    dict(root_weight=False, bias=False)],
                         ids=["default", "add-bases", "no-root-no-bias"])
def test_rgcn_featureless_equals_pyg(kwargs):
    """x=None with in_channels = num_nodes (PyG's featureless input), and an index tensor x:
    the same outputs and parameter gradients as PyG's, both ways."""
    for i, g in enumerate(graphs()):
        ei = torch.stack([g.src, g.dst])
        torch.manual_seed(i)
        pyg = pyg_nn.RGCNConv(g.num_nodes, OUT, g.num_relations, **kwargs).double()
        ours = hnn.RGCNConv(g.num_nodes, OUT, g.num_relations, **kwargs).double()
        with torch.no_grad():
            for p in pyg.parameters():
                p.add_(torch.randn_like(p) * 0.1)
        for src, dst in ((pyg, ours), (ours, pyg)):
            dst.load_state_dict(src.state_dict())
            for x in (None, torch.randperm(g.num_nodes)):
                pyg.zero_grad(), ours.zero_grad()
                a, b = pyg(x, ei, g.etype), ours(x, ei, g.etype)
                torch.testing.assert_close(b, a, **TOL)
                up = torch.randn(a.shape, dtype=torch.float64)
                (a * up).sum().backward()
                (b * up).sum().backward()
                for (name, p), q in zip(pyg.named_parameters(), ours.parameters()):
                    torch.testing.assert_close(q.grad, p.grad, **TOL, msg=name)
            with torch.no_grad():
                for p in ours.parameters():
                    p.add_(torch.randn_like(p) * 0.1)
    with pytest.raises(ValueError, match=r"x holds node indices outside \[0, 30\)"):
        ours(torch.tensor([0, 31] + [1] * 28), ei, g.etype)


def test_src_row_refuses_a_graph_with_more_nodes_than_rows():
    """The kernels read row src of the table unchecked: the glue refuses a graph whose node ids
    are not all rows of it, naming the weight and the counts, before any kernel runs. (The
    library of the featureless test above, from the session's cache.)"""
    n = graphs()[0].num_nodes
    Layer = hector.compile(hnn._MODELS / "rgcn_conv_featureless.hector", target="cpu",
                           **{"in": n, "out": OUT})
    layer = Layer(num_relations=2).double()
    graph = hector.Graph(torch.tensor([0, n]), torch.tensor([1, 0]), torch.tensor([0, 1]),
                         num_nodes=n + 1, num_relations=2)
    with pytest.raises(ValueError, match=rf"src_row reads row src of weight 'W', which has {n} "
                                         rf"rows, but the graph has {n + 1} nodes"):
        layer(graph, torch.zeros(n + 1, OUT, dtype=torch.float64),
              torch.ones(2, dtype=torch.float64))


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "torch.compile"])
def test_autocast_casts_the_layers_as_it_casts_linear(compiled):
    """Under torch.autocast(bfloat16) our layers are on the lower-precision list, as `linear`
    and `matmul` (and so PyG's layers' products) are: the bfloat16 activation of an autocast
    Linear and the float32 weights meet as bfloat16, the compiled layer's output is bfloat16
    and equals the layer called outside autocast on bfloat16 casts, bit for bit. Against PyG's layer in
    float32 on the same activation it is within 2^-7 of the output's scale, and no further from
    it than PyG's own layer under autocast; gradients reach the float32 weights (the Linear's
    too) in float32. The featureless RGCN input (a weight table) is cast as well; float64
    stays float64."""
    g = graphs()[0]
    ei = torch.stack([g.src, g.dst])

    class Model(torch.nn.Module):
        def __init__(self, conv_cls):
            super().__init__()
            self.lin = torch.nn.Linear(IN, IN)
            self.conv = conv_cls(IN, OUT, g.num_relations)

        def forward(self, x):
            return self.conv(self.lin(x), ei, g.etype)

    torch.manual_seed(0)
    pyg, ours = Model(pyg_nn.RGCNConv), Model(hnn.RGCNConv)
    ours.load_state_dict(pyg.state_dict())
    x = torch.randn(g.num_nodes, IN)
    run = torch.compile(ours, fullgraph=True, backend="aot_eager") if compiled else ours
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = run(x)
        h = pyg.lin(x)
        pyg_amp = pyg.conv(h, ei, g.etype)
    # The compiled layer's output is bfloat16; the bias (a float32 parameter added in Python,
    # as PyG adds it) promotes the sum to float32 on both sides.
    assert h.dtype == torch.bfloat16 and out.dtype == pyg_amp.dtype == torch.float32

    def cast_weights(conv):
        for name, p in conv.named_parameters():
            if name != "bias":
                p.data = p.data.to(torch.bfloat16)
        return conv

    # The same as casting by hand outside autocast (the degree norms float32 either way).
    cast = hnn.RGCNConv(IN, OUT, g.num_relations)
    cast.load_state_dict(ours.conv.state_dict())
    with torch.no_grad():
        assert torch.equal(cast_weights(cast)(h, ei, g.etype), out)

    # Against PyG in float32 on the same (bfloat16) activation, float32 weights.
    ref = pyg.conv(h.float(), ei, g.etype)
    scale = ref.abs().max().item()
    err = (out.float() - ref).abs().max().item()
    pyg_err = (pyg_amp.float() - ref).abs().max().item()
    assert err <= 2 ** -7 * scale, (err, scale)
    assert err <= pyg_err * 1.5 + 2 ** -10 * scale, (err, pyg_err)

    out.float().square().sum().backward()
    ref.square().sum().backward()
    for (name, p), q in zip(pyg.named_parameters(), ours.parameters()):
        assert q.grad is not None and q.grad.dtype == torch.float32, name
        # Inputs and weights rounded to bfloat16 on our side: bfloat16 resolution.
        torch.testing.assert_close(q.grad, p.grad, rtol=2e-2, atol=2e-2 * p.grad.abs().max().item(),
                                   msg=name)

    conv = hnn.RGCNConv(g.num_nodes, OUT, g.num_relations)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = conv(None, ei, g.etype)
    with torch.no_grad():
        assert torch.equal(out, cast_weights(conv)(None, ei, g.etype))

    conv64 = hnn.RGCNConv(IN, OUT, g.num_relations).double()
    x64 = torch.randn(g.num_nodes, IN, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = conv64(x64, ei, g.etype)
    assert out.dtype == torch.float64 and torch.equal(out, conv64(x64, ei, g.etype))


def test_output_and_gradient_dtypes_equal_pyg():
    """A drop-in returns what PyG's layer returns, dtype included, under bfloat16 autocast and
    outside it: PyG's RGCNConv sums into zeros of the default dtype (float32 with or without a
    bias), its FastRGCNConv and RGATConv keep the product's bfloat16 where no float32 bias is
    added, and featureless FastRGCNConv sums float32 weight rows; the gradients of the float32
    inputs and weights are float32 on both sides."""
    g = graphs()[0]
    ei = torch.stack([g.src, g.dst])
    cases = [(cls, (IN, OUT, g.num_relations), kw)
             for cls in ("RGCNConv", "FastRGCNConv")
             for kw in (dict(), dict(bias=False), dict(root_weight=False, bias=False),
                        dict(num_bases=3, bias=False), dict(num_blocks=2, bias=False))]
    cases += [("RGATConv", (IN, RGAT_OUT, g.num_relations), dict(heads=HEADS, **kw))
              for kw in (dict(), dict(bias=False), dict(concat=False, bias=False))]
    cases += [(cls, (g.num_nodes, OUT, g.num_relations), dict(bias=False, featureless=x))
              for cls in ("RGCNConv", "FastRGCNConv") for x in ("none", "index")]
    seen = 0
    for cls, args, kwargs in cases:
        featureless = kwargs.pop("featureless", None)
        if cls == "FastRGCNConv" and "num_blocks" in kwargs:
            continue  # PyG's FastRGCNConv has no block-diagonal path
        torch.manual_seed(0)
        pyg, ours = getattr(pyg_nn, cls)(*args, **kwargs), getattr(hnn, cls)(*args, **kwargs)
        ours.load_state_dict(pyg.state_dict())
        for autocast in (True, False):
            results = []
            for layer in (pyg, ours):
                layer.zero_grad()
                if featureless == "none":
                    x = None
                elif featureless == "index":
                    x = torch.randperm(g.num_nodes)
                else:
                    x = torch.randn(g.num_nodes, IN, generator=torch.Generator().manual_seed(1),
                                    requires_grad=True)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                    out = layer(x, ei, g.etype)
                out.float().sum().backward()
                grads = {n: p.grad.dtype for n, p in layer.named_parameters()
                         if p.grad is not None}
                results.append((out.dtype, x.grad.dtype if featureless is None else None, grads))
            assert results[1] == results[0], (cls, kwargs, featureless, autocast, results)
            seen += autocast and results[0][0] == torch.float32
    assert seen >= 5  # the float32 results of autocast calls (RGCNConv's) are among the cases

    metadata, x_dict, edges = hetero_inputs(g, IN, 0)
    torch.manual_seed(0)
    pyg, ours = pyg_nn.HGTConv(IN, IN, metadata, heads=HEADS), hnn.HGTConv(IN, IN, metadata,
                                                                            heads=HEADS)
    ours.load_state_dict(pyg.state_dict())
    x_dict = {k: v.float() for k, v in x_dict.items()}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a, b = pyg(x_dict, edges), ours(x_dict, edges)
    assert {k: v.dtype for k, v in b.items()} == {k: v.dtype for k, v in a.items()}
