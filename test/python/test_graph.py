"""hector.Graph against plain Python/NumPy references and PyG's RGCNConv."""
import pathlib

import numpy as np
import pytest
import torch

import hector

DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


# --- graphs -------------------------------------------------------------------------------------

def awkward_graph(seed=0, num_nodes=40, num_edges=200, num_relations=7, num_ntypes=4):
    """A random graph with every awkward case: isolated nodes, nodes without incoming edges,
    relations without edges, self-loops, duplicate edges, a node type without nodes."""
    g = torch.Generator().manual_seed(seed)
    active = num_nodes - 5  # the last 5 nodes are isolated
    src = torch.randint(0, active, (num_edges,), generator=g)
    dst = torch.randint(0, active // 2, (num_edges,), generator=g)  # upper half: no incoming
    used = [r for r in range(num_relations) if r % 3 != 1]  # relations 1, 4: no edges
    etype = torch.tensor(used)[torch.randint(0, len(used), (num_edges,), generator=g)]
    # self-loops and exact duplicates
    src[:5] = dst[:5]
    src[5:10], dst[5:10], etype[5:10] = src[10:15], dst[10:15], etype[10:15]
    ntype = torch.randint(0, num_ntypes, (num_nodes,), generator=g)
    ntype[ntype == 2] = 3  # node type 2 has no nodes
    return src, dst, etype, ntype


def reference(src, dst, etype, n, r, ntype=None, t=1):
    """Every structure, computed with Python loops over lists (graph_schema.h's definitions)."""
    src, dst, etype = src.tolist(), dst.tolist(), etype.tolist()
    e = len(src)
    order = sorted(range(e), key=lambda k: (dst[k], etype[k], k))   # the internal order
    s_src = [src[k] for k in order]
    s_dst = [dst[k] for k in order]
    s_et = [etype[k] for k in order]
    ref = {"edge_perm": order, "sorted_src": s_src, "sorted_dst": s_dst, "sorted_etype": s_et}
    ref["in_ptr"] = [sum(1 for x in s_dst if x < i) for i in range(n + 1)]
    ref["node_range"], ref["edge_range"] = [0, n], [0, e]
    ref["rel_rows"] = sorted(range(e), key=lambda p: (s_et[p], p))
    ref["rel_ptr"] = [sum(1 for x in s_et if x < q) for q in range(r + 1)]
    ref["out_pos"] = sorted(range(e), key=lambda p: (s_src[p], s_et[p], p))
    ref["out_ptr"] = [sum(1 for x in s_src if x < i) for i in range(n + 1)]
    ref["out_dst"] = [s_dst[p] for p in ref["out_pos"]]
    for side, nodes, entries in (("src", s_src, ref["out_pos"]), ("dst", s_dst, range(e))):
        flat = sorted({(s_et[p], nodes[p]) for p in range(e)})        # by relation, then node
        ref[f"unique_{side}"] = [v for _, v in flat]
        ref[f"unique_{side}_ptr"] = [sum(1 for q, _ in flat if q < x) for x in range(r + 1)]
        ref[f"unique_{side}_inv"] = [flat.index((s_et[p], nodes[p])) for p in range(e)]
        ref[f"unique_{side}_range"] = [0, len(flat)]
        # The runs of the CSR of this end (entries in CSR order): where the pair changes.
        pairs = [flat.index((s_et[p], nodes[p])) for p in entries]
        starts = [j for j in range(e) if j == 0 or pairs[j] != pairs[j - 1]]
        ref[f"unique_{side}_run_ptr"] = starts + [e]
        ref[f"unique_{side}_run"] = [pairs[j] for j in starts]
    types = [0] * n if ntype is None else ntype.tolist()
    ref["ntype"] = types
    ref["ntype_perm"] = sorted(range(n), key=lambda v: (types[v], v))
    ref["ntype_ptr"] = [sum(1 for x in types if x < q) for q in range(t + 1)]
    return ref


def reference_norms(src, dst, etype):
    """1/|N_r(i)| and 1/in-degree per edge, user order (Python counts)."""
    d, r = dst.tolist(), etype.tolist()
    e = len(d)
    mean = [1 / sum(1 for m in range(e) if d[m] == d[k] and r[m] == r[k]) for k in range(e)]
    indeg = [1 / sum(1 for m in range(e) if d[m] == d[k]) for k in range(e)]
    return mean, indeg


def assert_matches_reference(graph, ref, index_dtype=torch.int32):
    assert graph.index_dtype == index_dtype
    for name, expected in ref.items():
        got = getattr(graph, name).cpu()
        assert got.dtype == index_dtype, name
        assert got.tolist() == [int(x) for x in expected], name


# --- structure --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("index_dtype", [None, torch.int64])
def test_awkward_graph_matches_reference(seed, index_dtype):
    src, dst, etype, ntype = awkward_graph(seed)
    g = hector.Graph(src, dst, etype, num_nodes=40, ntype=ntype, num_relations=7, num_ntypes=4,
                     index_dtype=index_dtype)
    assert (g.num_nodes, g.num_edges, g.num_relations, g.num_ntypes) == (40, 200, 7, 4)
    assert g.has_ntype
    ref = reference(src, dst, etype, 40, 7, ntype, 4)
    assert_matches_reference(g, ref, index_dtype or torch.int32)
    assert g.num_unique_src == ref["unique_src_range"][1]
    assert g.num_unique_dst == ref["unique_dst_range"][1]


def test_structures_are_built_on_first_use():
    src, dst, etype, ntype = awkward_graph(1)
    g = hector.Graph(src, dst, etype, num_nodes=40, ntype=ntype, num_relations=7, num_ntypes=4)
    base = ["in_ptr", "sorted_src", "sorted_etype", "edge_perm", "node_range", "edge_range"]
    assert g.built() == base
    assert list(g.tensors()) == base
    assert g.nbytes == sum(t.nbytes for t in g.tensors().values())
    g.unique_dst_inv                             # one structure builds its group
    assert g.built() == base + ["unique_dst", "unique_dst_ptr", "unique_dst_inv",
                                "unique_dst_range", "unique_dst_run_ptr", "unique_dst_run"]
    g.require("unique_src")                      # which needs the CSR by source
    assert {"out_ptr", "out_pos", "unique_src_inv", "unique_src_run"} <= set(g.built())
    assert not {"rel_rows", "sorted_dst", "out_dst"} & set(g.built())
    g.out_dst                                    # its own group, on the CSR by source
    assert "out_dst" in g.built() and "sorted_dst" not in g.built()
    with pytest.raises(ValueError, match="no structure named 'in_eid'"):
        g.require("in_eid")


def test_memory_layout():
    """int32 structures: the base holds half the bytes of the int64 COO (three arrays of E and
    the CSR pointer); every structure together 9 E-arrays, 3 arrays per pair (node, run, run
    start) and a few of N."""
    torch.manual_seed(0)
    n, e, r = 5000, 60000, 8
    src, dst, etype = torch.randint(0, n, (e,)), torch.randint(0, n, (e,)), torch.randint(0, r, (e,))
    g = hector.Graph(src, dst, etype, num_nodes=n, num_relations=r)
    assert g.nbytes == 4 * (3 * e + (n + 1) + 4)
    assert g.nbytes <= 0.5 * 24 * e + 4 * (n + 5)
    g.require(*hector.graph._fields()[0])
    us, ud = g.num_unique_src, g.num_unique_dst
    assert g.nbytes == 4 * (9 * e + 3 * (us + ud) + 2 + 4 * (n + 1) - 2 + 3 * (r + 1) + 2 + 8)


def test_awkward_cases_are_present():
    src, dst, etype, ntype = awkward_graph(0)
    g = hector.Graph(src, dst, etype, num_nodes=40, ntype=ntype, num_relations=7, num_ntypes=4)
    in_deg = g.in_ptr.diff()
    out_deg = g.out_ptr.diff()
    assert ((in_deg == 0) & (out_deg == 0)).any()            # isolated nodes
    assert ((in_deg == 0) & (out_deg > 0)).any()             # no incoming edges
    assert (g.rel_ptr.diff() == 0).any()                     # relations without edges
    assert (src == dst).any()                                # self-loops
    assert g.ntype_ptr.diff()[2] == 0                        # a node type without nodes
    keys = torch.stack([src, dst, etype], 1)
    assert torch.unique(keys, dim=0).shape[0] < keys.shape[0]  # duplicate edges


def test_sort_is_stable_and_permutations_round_trip():
    src, dst, etype, _ = awkward_graph(3)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    perm = g.edge_perm.long()
    assert sorted(perm.tolist()) == list(range(200))
    assert torch.equal(g.sorted_src.long(), src[perm])
    assert torch.equal(g.sorted_dst.long(), dst[perm])
    assert torch.equal(g.sorted_etype.long(), etype[perm])
    # lexicographic (destination, relation, user edge id)
    key = list(zip(g.sorted_dst.tolist(), g.sorted_etype.tolist(), perm.tolist()))
    assert key == sorted(key)
    data = torch.randn(200, 3, dtype=torch.float64)
    assert torch.equal(g.unsort_edge_data(g.sort_edge_data(data)), data)
    assert torch.equal(g.sort_edge_data(data), data[perm])
    # The CPU gather for every row size (2, 4, 8 bytes, others), views, empty rows, and a graph
    # large enough to be split among threads.
    torch.manual_seed(3)
    big = hector.Graph(torch.randint(0, 5000, (70000,)), torch.randint(0, 5000, (70000,)),
                       torch.randint(0, 3, (70000,)), num_nodes=5000, num_relations=3)
    for graph in (g, big):
        e, p = graph.num_edges, graph.edge_perm.long()
        for d in (torch.randn(e).to(torch.bfloat16), torch.randn(e), torch.randn(e, 1).double(),
                  torch.randint(-9, 9, (e, 2)), torch.randn(e, 5), torch.randn(3, e).t(),
                  torch.randn(e, 0), torch.randn(e, 4)[:, 1]):
            assert torch.equal(graph.sort_edge_data(d), d[p]), (d.dtype, d.shape)
    # the user's edge list back
    assert torch.equal(g.src, src) and torch.equal(g.dst, dst) and torch.equal(g.etype, etype)
    assert g.src.dtype == torch.int64


def test_csr_lists_every_edge_once():
    src, dst, etype, _ = awkward_graph(4)
    g = hector.Graph(src, dst, etype, num_nodes=40)
    assert sorted(g.out_pos.tolist()) == list(range(200))
    for i in range(40):
        incoming = torch.arange(int(g.in_ptr[i]), int(g.in_ptr[i + 1]))
        assert (g.sorted_dst[incoming] == i).all()
        outgoing = g.out_pos[g.out_ptr[i]:g.out_ptr[i + 1]].long()
        assert (g.sorted_src[outgoing] == i).all()
        key = list(zip(g.sorted_etype[outgoing].tolist(), outgoing.tolist()))
        assert key == sorted(key)                 # by relation, then position


def test_unique_maps_reconstruct_node_and_relation():
    src, dst, etype, _ = awkward_graph(5)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    for side, nodes in (("src", g.sorted_src), ("dst", g.sorted_dst)):
        ptr = getattr(g, f"unique_{side}_ptr").long()
        uniq = getattr(g, f"unique_{side}")
        inv = getattr(g, f"unique_{side}_inv").long()
        rel_of_unique = torch.repeat_interleave(torch.arange(7), ptr.diff())
        assert torch.equal(uniq[inv], nodes)
        assert torch.equal(rel_of_unique[inv], g.sorted_etype.long())
        pairs = set(zip(nodes.tolist(), g.sorted_etype.tolist()))
        assert len(pairs) == uniq.numel()
        for r in range(7):
            seg = uniq[ptr[r]:ptr[r + 1]].tolist()
            assert seg == sorted(set(seg))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_norms_equal_python_counts(dtype):
    src, dst, etype, _ = awkward_graph(6)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    mean, indeg = reference_norms(src, dst, etype)
    for kind, expected in (("relation", mean), ("in", indeg)):
        got = g.edge_norm(kind, dtype)
        assert got.dtype == dtype
        torch.testing.assert_close(got, torch.tensor(expected, dtype=dtype), rtol=0, atol=0)
        internal = g.edge_norm(kind, dtype, order="internal")
        assert torch.equal(g.unsort_edge_data(internal), got)
    assert torch.equal(g.unsort_edge_data(g.norm_relation), torch.tensor(mean, dtype=torch.float64))
    assert torch.equal(g.unsort_edge_data(g.norm_in), torch.tensor(indeg, dtype=torch.float64))
    with pytest.raises(ValueError, match="the edge norm is 'relation' or 'in', got 'out'"):
        g.edge_norm("out")


def test_norm_matches_pyg_rgcnconv_mean():
    pyg = pytest.importorskip("torch_geometric")
    from torch_geometric.nn import RGCNConv
    pyg.backend.use_segment_matmul = False
    src, dst, etype, _ = awkward_graph(7)
    torch.manual_seed(0)
    conv = RGCNConv(5, 3, num_relations=7, aggr="mean", root_weight=False, bias=False).double()
    x = torch.randn(40, 5, dtype=torch.float64)
    expected = conv(x, torch.stack([src, dst]), etype)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    msg = torch.einsum("ei,eio->eo", x[src], conv.weight[etype])
    ours = torch.zeros(40, 3, dtype=torch.float64).index_add_(
        0, dst, msg * g.edge_norm("relation", torch.float64)[:, None])
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


def test_in_place_writes_are_detected():
    src, dst, etype, _ = awkward_graph(2)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    g._impl.check_unchanged()
    g.sorted_src[3] = 10 ** 6                     # a property's tensor, written in place
    with pytest.raises(ValueError, match="sorted_src was modified in place after the graph was "
                                         "built"):
        g._impl.check_unchanged()


# --- edge cases -------------------------------------------------------------------------------

def test_zero_edges():
    empty = torch.empty(0, dtype=torch.int64)
    g = hector.Graph(empty, empty, empty, num_nodes=3, num_relations=2)
    assert (g.num_nodes, g.num_edges, g.num_relations, g.num_ntypes) == (3, 0, 2, 1)
    assert g.rel_ptr.tolist() == [0, 0, 0]
    assert g.in_ptr.tolist() == [0, 0, 0, 0] and g.out_ptr.tolist() == [0, 0, 0, 0]
    assert g.unique_src_ptr.tolist() == [0, 0, 0] and g.unique_dst.numel() == 0
    assert g.num_unique_src == 0 and g.num_unique_dst == 0
    assert g.norm_relation.numel() == 0 and g.norm_in.dtype == torch.float64
    g0 = hector.Graph(empty, empty, empty)
    assert (g0.num_nodes, g0.num_edges, g0.num_relations) == (0, 0, 0)
    assert g0.in_ptr.tolist() == [0] and g0.ntype_ptr.tolist() == [0, 0]


def test_single_relation_and_counts_inferred():
    src = torch.tensor([0, 1, 2, 2, 4], dtype=torch.int32)
    dst = torch.tensor([1, 1, 1, 0, 4], dtype=torch.int16)
    etype = torch.zeros(5, dtype=torch.uint8)
    g = hector.Graph(src, dst, etype)
    assert (g.num_nodes, g.num_relations, g.num_ntypes, g.has_ntype) == (5, 1, 1, False)
    assert_matches_reference(g, reference(src, dst, etype, 5, 1))
    assert g.src.dtype == torch.int64


def test_num_nodes_from_ntype_and_ntypes_inferred():
    ntype = torch.tensor([1, 0, 1, 1, 0, 0])
    g = hector.Graph(torch.tensor([0]), torch.tensor([5]), torch.tensor([0]), ntype=ntype)
    assert (g.num_nodes, g.num_ntypes) == (6, 2)
    assert g.ntype_ptr.tolist() == [0, 3, 6]
    assert g.ntype_perm.tolist() == [1, 4, 5, 0, 2, 3]


def test_graph_owns_its_tensors():
    src, dst, etype = torch.tensor([0, 1]), torch.tensor([1, 0]), torch.tensor([0, 0])
    g = hector.Graph(src, dst, etype)
    src[0] = 1
    assert g.src.tolist() == [0, 1]


def test_to_and_repr():
    src, dst, etype, ntype = awkward_graph(8)
    g = hector.Graph(src, dst, etype, ntype=ntype)
    assert g.to("cpu") is g
    assert g.device == torch.device("cpu")
    text = repr(g)
    assert text.startswith("hector.Graph(num_nodes=40, num_edges=200")
    assert "device=cpu" in text


def test_relation_type_consistency():
    ntype = torch.tensor([0, 0, 1, 1])
    src, dst = torch.tensor([0, 1, 2, 0]), torch.tensor([2, 3, 3, 3])
    etype = torch.tensor([0, 0, 1, 1])
    hector.Graph(src, dst, torch.tensor([0, 0, 1, 2]), ntype=ntype, check_relation_types=True)
    hector.Graph(src, dst, etype, ntype=ntype)  # not checked by default
    with pytest.raises(ValueError, match=r"edge 3 of relation 1 joins node types 0 -> 1, but the "
                                         r"relation's edge 2 joins 1 -> 1"):
        hector.Graph(src, dst, etype, ntype=ntype, check_relation_types=True)


# --- validation -------------------------------------------------------------------------------

I = torch.tensor


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(src=I([0.0]), dst=I([0]), etype=I([0])), TypeError,
     "hector.Graph: src must have an integer dtype, got torch.float32"),
    (dict(src=I([0]), dst=I([True]), etype=I([0])), TypeError,
     "hector.Graph: dst must have an integer dtype, got torch.bool"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), ntype=I([0.5])), TypeError,
     "hector.Graph: ntype must have an integer dtype, got torch.float32"),
    (dict(src=[0], dst=I([0]), etype=I([0])), TypeError,
     "hector.Graph: src must be a torch.Tensor, got list"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), num_nodes=2.0), TypeError,
     "hector.Graph: num_nodes must be an int or None, got float"),
    (dict(src=I([[0]]), dst=I([0]), etype=I([0])), ValueError,
     "hector.Graph: src must be 1-D, got shape [1, 1]"),
    (dict(src=I([0, 1]), dst=I([0]), etype=I([0])), ValueError,
     "hector.Graph: src, dst and etype must have the same length, got 2, 1 and 1"),
    (dict(src=I([0, 1, 2]), dst=I([0, 9001, 9002]), etype=I([0, 0, 0]), num_nodes=8285),
     ValueError, "hector.Graph: dst[1] = 9001 is out of range [0, 8285)"),
    (dict(src=I([0, -1]), dst=I([0, 0]), etype=I([0, 0])), ValueError,
     "hector.Graph: src[1] = -1 is negative"),
    (dict(src=I([0, 1]), dst=I([0, 0]), etype=I([0, 3]), num_relations=3), ValueError,
     "hector.Graph: etype[1] = 3 is out of range [0, 3)"),
    (dict(src=I([0]), dst=I([0]), etype=I([-2])), ValueError,
     "hector.Graph: etype[0] = -2 is negative"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), num_nodes=2, ntype=I([0, 0, 0])), ValueError,
     "hector.Graph: ntype has 3 entries but num_nodes is 2"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), ntype=I([0, 5]), num_ntypes=2), ValueError,
     "hector.Graph: ntype[1] = 5 is out of range [0, 2)"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), ntype=I([0, -1])), ValueError,
     "hector.Graph: ntype[1] = -1 is negative"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), num_nodes=-1), ValueError,
     "hector.Graph: num_nodes must be non-negative, got -1"),
    (dict(src=I([0]), dst=I([0]), etype=I([0]), num_ntypes=3), ValueError,
     "hector.Graph: num_ntypes is 3 but no ntype was given"),
    (dict(src=I([3]), dst=I([0]), etype=I([0]), ntype=I([0, 0])), ValueError,
     "hector.Graph: src[0] = 3 is out of range [0, 2)"),
])
def test_validation_errors(kwargs, exc, message):
    with pytest.raises(exc) as info:
        hector.Graph(**kwargs)
    assert message in str(info.value)


def test_validation_names_the_first_bad_position():
    dst = torch.zeros(100, dtype=torch.int64)
    dst[17] = 9001
    dst[50] = 9500
    with pytest.raises(ValueError, match=r"dst\[17\] = 9001 is out of range \[0, 8285\)"):
        hector.Graph(torch.zeros(100, dtype=torch.int64), dst, torch.zeros(100, dtype=torch.int64),
                     num_nodes=8285)


def test_validation_rejects_meta_device_mismatch():
    with pytest.raises(ValueError, match="dst is on meta but src is on cpu"):
        hector.Graph(I([0]), torch.empty(1, dtype=torch.int64, device="meta"), I([0]))


# --- a real graph -----------------------------------------------------------------------------

@pytest.mark.skipif(not (DATA / "umls" / "train.tsv").exists(), reason="no ../shared/data/umls")
def test_umls_matches_numpy_reference():
    rows = [line.rstrip("\n").split("\t") for line in open(DATA / "umls" / "train.tsv")]
    entities = {name: k for k, name in enumerate(sorted({r[0] for r in rows} | {r[2] for r in rows}))}
    relations = {name: k for k, name in enumerate(sorted({r[1] for r in rows}))}
    src = torch.tensor([entities[r[0]] for r in rows])
    dst = torch.tensor([entities[r[2]] for r in rows])
    etype = torch.tensor([relations[r[1]] for r in rows])
    g = hector.Graph(src, dst, etype, num_nodes=len(entities), num_relations=len(relations))
    s, d, r = src.numpy(), dst.numpy(), etype.numpy()
    n, nr = len(entities), len(relations)
    order = np.lexsort((np.arange(len(s)), r, d))             # by destination, relation, id
    assert np.array_equal(g.edge_perm.numpy(), order)
    assert np.array_equal(g.in_ptr.numpy(), np.concatenate([[0], np.cumsum(np.bincount(d, minlength=n))]))
    assert np.array_equal(g.rel_ptr.numpy(), np.concatenate([[0], np.cumsum(np.bincount(r, minlength=nr))]))
    pair = r * n + d
    _, inv, counts = np.unique(pair, return_inverse=True, return_counts=True)
    assert np.array_equal(g.edge_norm("relation", torch.float64).numpy(), 1.0 / counts[inv])
    usrc = np.unique(r * n + s)
    assert np.array_equal(g.unique_src.numpy(), usrc % n)
    assert g.num_unique_src == len(usrc)


@pytest.mark.parametrize("num_nodes, num_relations, index_dtype", [
    (5000, 3000, None),            # 15M keys (destination x relation): two radix passes
    (100_000, 50_000, None),       # 5e9 keys: 64-bit keys, three passes
    (100_000, 50_000, torch.int64),
    (3, 1, None),                  # one pass, most nodes isolated
])
def test_sort_of_large_key_spaces_matches_numpy(num_nodes, num_relations, index_dtype):
    """The edge sort over every size of key space (its number of radix passes and key width
    depend on num_nodes x num_relations): duplicates, self-loops, hubs, isolated nodes."""
    gen = torch.Generator().manual_seed(num_nodes + num_relations)
    e = 4000
    src = torch.randint(0, num_nodes, (e,), generator=gen)
    dst = torch.randint(0, num_nodes, (e,), generator=gen)
    etype = torch.randint(0, num_relations, (e,), generator=gen)
    dst[: e // 4] = num_nodes - 1                        # a hub at the last node
    etype[: e // 8] = num_relations - 1
    src[e // 4: e // 4 + 50] = dst[e // 4: e // 4 + 50]  # self-loops
    src[-100:], dst[-100:], etype[-100:] = src[:100], dst[:100], etype[:100]   # duplicates
    g = hector.Graph(src, dst, etype, num_nodes=num_nodes, num_relations=num_relations,
                     index_dtype=index_dtype)
    s, d, r = src.numpy(), dst.numpy(), etype.numpy()
    order = np.lexsort((np.arange(e), r, d))                 # by destination, relation, id
    assert np.array_equal(g.edge_perm.numpy(), order)
    assert np.array_equal(g.sorted_src.numpy(), s[order])
    assert np.array_equal(g.sorted_etype.numpy(), r[order])
    assert np.array_equal(g.in_ptr.numpy(),
                          np.concatenate([[0], np.cumsum(np.bincount(d, minlength=num_nodes))]))
    assert g.num_unique_dst == len(np.unique(d.astype(np.int64) * num_relations + r))
    # The CSR by source: positions by source, relation, position.
    ss, sr = s[order], r[order]
    assert np.array_equal(g.out_pos.numpy(), np.lexsort((np.arange(e), sr, ss)))
    assert np.array_equal(g.out_ptr.numpy(),
                          np.concatenate([[0], np.cumsum(np.bincount(s, minlength=num_nodes))]))


# --- CUDA -------------------------------------------------------------------------------------

@CUDA
def test_cuda_build_equals_cpu_build():
    src, dst, etype, ntype = awkward_graph(9, num_nodes=300, num_edges=5000)
    cpu = hector.Graph(src, dst, etype, ntype=ntype, num_relations=7, num_ntypes=4)
    gpu = hector.Graph(src.cuda(), dst.cuda(), etype.cuda(), ntype=ntype.cuda(), num_relations=7,
                       num_ntypes=4)
    assert gpu.device.type == "cuda"
    names = hector.graph._fields()[0]
    cpu.require(*names)
    for name, tensor in cpu.tensors().items():
        got = getattr(gpu, name)                 # built on first use, on the host, moved
        assert got.device.type == "cuda", name
        assert torch.equal(got.cpu(), tensor), name
    moved = cpu.to("cuda")
    for name, tensor in cpu.tensors().items():
        assert torch.equal(getattr(moved, name).cpu(), tensor), name
    assert moved.to("cpu").device == torch.device("cpu")


@CUDA
def test_cuda_validation():
    with pytest.raises(ValueError, match=r"dst\[1\] = 7 is out of range \[0, 5\)"):
        hector.Graph(I([0, 1]).cuda(), I([0, 7]).cuda(), I([0, 0]).cuda(), num_nodes=5)
    with pytest.raises(ValueError, match="etype is on cpu but src is on cuda"):
        hector.Graph(I([0]).cuda(), I([0]).cuda(), I([0]))


# --- counts that cannot fit -------------------------------------------------------------------

def test_huge_counts_are_clear_errors():
    """Counts whose structures cannot fit in memory name the count, before any allocation."""
    one = I([0])
    with pytest.raises(ValueError, match=r"num_nodes is 1099511627776 \(inferred: the largest "
                                         r"node id plus one\); the graph's structures need about"):
        hector.Graph(I([0, 2 ** 40 - 1]), I([1, 2]), I([0, 0]))
    with pytest.raises(ValueError, match=r"num_nodes is 1000000000000; the graph's structures"):
        hector.Graph(one, one, one, num_nodes=10 ** 12)
    with pytest.raises(ValueError, match=r"etype holds 9223372036854775807, too large to count "
                                         r"etype from"):
        hector.Graph(one, one, I([2 ** 63 - 1]))
    with pytest.raises(ValueError, match=r"num_relations is 1000000000000 \(inferred"):
        hector.Graph(one, one, I([10 ** 12 - 1]))
