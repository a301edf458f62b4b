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
    """Every structure, computed with Python loops over lists."""
    src, dst, etype = src.tolist(), dst.tolist(), etype.tolist()
    e = len(src)
    order = sorted(range(e), key=lambda k: (etype[k], dst[k], k))
    ref = {"edge_perm": order}
    ref["edge_perm_inv"] = [0] * e
    for pos, k in enumerate(order):
        ref["edge_perm_inv"][k] = pos
    s_src = [src[k] for k in order]
    s_dst = [dst[k] for k in order]
    s_et = [etype[k] for k in order]
    ref.update(sorted_src=s_src, sorted_dst=s_dst, sorted_etype=s_et)
    ref["rel_ptr"] = [sum(1 for x in s_et if x < q) for q in range(r + 1)]
    for side, key, other in (("in", s_dst, s_src), ("out", s_src, s_dst)):
        rows = [[k for k in range(e) if key[k] == i] for i in range(n)]
        ref[f"{side}_ptr"] = list(np.cumsum([0] + [len(x) for x in rows]))
        ref[f"{side}_eid"] = [k for row in rows for k in row]
        ref[f"{side}_{'src' if side == 'in' else 'dst'}"] = [other[k] for row in rows for k in row]
    for side, nodes in (("src", s_src), ("dst", s_dst)):
        per_rel = [sorted({nodes[k] for k in range(e) if s_et[k] == q}) for q in range(r)]
        flat = [(q, v) for q in range(r) for v in per_rel[q]]
        ref[f"unique_{side}"] = [v for _, v in flat]
        ref[f"unique_{side}_ptr"] = list(np.cumsum([0] + [len(x) for x in per_rel]))
        ref[f"unique_{side}_inv"] = [flat.index((s_et[k], nodes[k])) for k in range(e)]
        members = [[k for k in range(e) if ref[f"unique_{side}_inv"][k] == u]
                   for u in range(len(flat))]
        ref[f"unique_{side}_edge_ptr"] = list(np.cumsum([0] + [len(m) for m in members]))
        if side == "src":
            ref["unique_src_edges"] = [k for m in members for k in m]
        else:
            assert [k for m in members for k in m] == list(range(e))   # contiguous
        by_node = [[u for u, (_, v) in enumerate(flat) if v == i] for i in range(n)]
        ref[f"unique_{side}_node_ptr"] = list(np.cumsum([0] + [len(x) for x in by_node]))
        ref[f"unique_{side}_by_node"] = [u for x in by_node for u in x]
    ref["norm_relation"] = [
        1.0 / sum(1 for m in range(e) if s_dst[m] == s_dst[k] and s_et[m] == s_et[k])
        for k in range(e)]
    ref["norm_in"] = [1.0 / sum(1 for m in range(e) if s_dst[m] == s_dst[k]) for k in range(e)]
    types = [0] * n if ntype is None else ntype.tolist()
    ref["ntype"] = types
    ref["ntype_perm"] = sorted(range(n), key=lambda v: (types[v], v))
    ref["ntype_perm_inv"] = [ref["ntype_perm"].index(v) for v in range(n)]
    ref["ntype_ptr"] = [sum(1 for x in types if x < q) for q in range(t + 1)]
    return ref


def assert_matches_reference(graph, ref):
    for name, expected in ref.items():
        got = getattr(graph, name).cpu()
        if name.startswith("norm"):
            assert got.dtype == torch.float64, name
            assert got.tolist() == pytest.approx(expected, rel=0, abs=0), name
        else:
            assert got.dtype == torch.int64, name
            assert got.tolist() == [int(x) for x in expected], name


# --- structure --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_awkward_graph_matches_reference(seed):
    src, dst, etype, ntype = awkward_graph(seed)
    g = hector.Graph(src, dst, etype, num_nodes=40, ntype=ntype, num_relations=7, num_ntypes=4)
    assert (g.num_nodes, g.num_edges, g.num_relations, g.num_ntypes) == (40, 200, 7, 4)
    assert g.has_ntype
    assert_matches_reference(g, reference(src, dst, etype, 40, 7, ntype, 4))


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
    perm, inv = g.edge_perm, g.edge_perm_inv
    assert torch.equal(perm[inv], torch.arange(200))
    assert torch.equal(inv[perm], torch.arange(200))
    assert torch.equal(g.sorted_src, src[perm])
    assert torch.equal(g.sorted_dst, dst[perm])
    assert torch.equal(g.sorted_etype, etype[perm])
    # lexicographic (relation, destination, user edge id)
    key = list(zip(g.sorted_etype.tolist(), g.sorted_dst.tolist(), perm.tolist()))
    assert key == sorted(key)
    data = torch.randn(200, 3, dtype=torch.float64)
    assert torch.equal(g.unsort_edge_data(g.sort_edge_data(data)), data)
    assert torch.equal(g.sort_edge_data(data), data[perm])


def test_csr_lists_every_edge_once():
    src, dst, etype, _ = awkward_graph(4)
    g = hector.Graph(src, dst, etype, num_nodes=40)
    for ptr, eid, node_of_row, other, other_key in (
            (g.in_ptr, g.in_eid, g.sorted_dst, g.in_src, g.sorted_src),
            (g.out_ptr, g.out_eid, g.sorted_src, g.out_dst, g.sorted_dst)):
        assert sorted(eid.tolist()) == list(range(200))
        for i in range(40):
            row = eid[ptr[i]:ptr[i + 1]]
            assert (node_of_row[row] == i).all()
            assert row.tolist() == sorted(row.tolist())
        assert torch.equal(other, other_key[eid])


def test_unique_maps_reconstruct_node_and_relation():
    src, dst, etype, _ = awkward_graph(5)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    for side, nodes in (("src", g.sorted_src), ("dst", g.sorted_dst)):
        ptr = getattr(g, f"unique_{side}_ptr")
        uniq = getattr(g, f"unique_{side}")
        inv = getattr(g, f"unique_{side}_inv")
        rel_of_unique = torch.repeat_interleave(torch.arange(7), ptr.diff())
        assert torch.equal(uniq[inv], nodes)
        assert torch.equal(rel_of_unique[inv], g.sorted_etype)
        pairs = set(zip(nodes.tolist(), g.sorted_etype.tolist()))
        assert len(pairs) == uniq.numel()
        for r in range(7):
            seg = uniq[ptr[r]:ptr[r + 1]].tolist()
            assert seg == sorted(set(seg))


def test_norms_equal_python_counts():
    src, dst, etype, _ = awkward_graph(6)
    g = hector.Graph(src, dst, etype, num_nodes=40, num_relations=7)
    d, r = dst.tolist(), etype.tolist()
    mean = [1 / sum(1 for m in range(200) if d[m] == d[k] and r[m] == r[k]) for k in range(200)]
    indeg = [1 / sum(1 for m in range(200) if d[m] == d[k]) for k in range(200)]
    assert g.unsort_edge_data(g.norm_relation).tolist() == mean
    assert g.unsort_edge_data(g.norm_in).tolist() == indeg


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
    msg = torch.einsum("ei,eio->eo", x[g.sorted_src], conv.weight[g.sorted_etype])
    ours = torch.zeros(40, 3, dtype=torch.float64).index_add_(
        0, g.sorted_dst, msg * g.norm_relation[:, None])
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)


# --- edge cases -------------------------------------------------------------------------------

def test_zero_edges():
    empty = torch.empty(0, dtype=torch.int64)
    g = hector.Graph(empty, empty, empty, num_nodes=3, num_relations=2)
    assert (g.num_nodes, g.num_edges, g.num_relations, g.num_ntypes) == (3, 0, 2, 1)
    assert g.rel_ptr.tolist() == [0, 0, 0]
    assert g.in_ptr.tolist() == [0, 0, 0, 0] and g.out_ptr.tolist() == [0, 0, 0, 0]
    assert g.unique_src_ptr.tolist() == [0, 0, 0] and g.unique_dst.numel() == 0
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
    assert g.ntype_perm_inv[g.ntype_perm].tolist() == list(range(6))


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
    order = np.lexsort((np.arange(len(s)), d, r))
    assert np.array_equal(g.edge_perm.numpy(), order)
    assert np.array_equal(g.rel_ptr.numpy(),
                          np.concatenate([[0], np.cumsum(np.bincount(r, minlength=len(relations)))]))
    pair = r[order] * len(entities) + d[order]
    _, inv, counts = np.unique(pair, return_inverse=True, return_counts=True)
    assert np.array_equal(g.norm_relation.numpy(), 1.0 / counts[inv])
    assert np.array_equal(g.in_ptr.numpy(), np.concatenate(
        [[0], np.cumsum(np.bincount(d, minlength=len(entities)))]))
    usrc = np.unique(r[order] * len(entities) + s[order])
    assert np.array_equal(g.unique_src.numpy(), usrc % len(entities))
    assert g.num_unique_src == len(usrc)


# --- CUDA -------------------------------------------------------------------------------------

@CUDA
def test_cuda_build_equals_cpu_build():
    src, dst, etype, ntype = awkward_graph(9, num_nodes=300, num_edges=5000)
    cpu = hector.Graph(src, dst, etype, ntype=ntype, num_relations=7, num_ntypes=4)
    gpu = hector.Graph(src.cuda(), dst.cuda(), etype.cuda(), ntype=ntype.cuda(), num_relations=7,
                       num_ntypes=4)
    assert gpu.device.type == "cuda"
    for name, tensor in cpu.tensors().items():
        got = getattr(gpu, name)
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
