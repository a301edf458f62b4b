"""End to end: compile the example models with hectorc, load them with hector.load, and compare
their outputs with PyG's layers (same weights) and plain-PyTorch references, on awkward random
graphs and on the real graphs AIFB and UMLS."""
import os
import pathlib
import subprocess
import sys

import pytest
import torch

import hector
from references import (awkward_graph, hgt_pyg, hgt_reference, rgat_hector_reference,
                        rgat_pyg, rgcn_norm, rgcn_pyg)

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"

TOL = {torch.float64: dict(rtol=1e-10, atol=1e-10), torch.float32: dict(rtol=1e-5, atol=1e-5)}


def make_graph(g):
    return hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                        num_relations=g.num_relations, num_ntypes=g.num_ntypes)


def assert_close(actual, expected, dtype):
    torch.testing.assert_close(actual, expected, **TOL[dtype])


GRAPHS = [dict(seed=0), dict(seed=1, num_relations=1), dict(seed=2, num_nodes=9, num_edges=30)]


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("gkw", GRAPHS)
@pytest.mark.parametrize("aggr", ["mean", "add"])
def test_rgcn_matches_pyg(compile_model, dtype, gkw, aggr):
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(**gkw)
    torch.manual_seed(0)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(g.num_nodes, 6, dtype=dtype)
    norm = rgcn_norm(g) if aggr == "mean" else torch.ones(g.src.numel(), dtype=torch.float64)
    out = layer(make_graph(g), x, norm.to(dtype))
    _, expected = rgcn_pyg(g, x, layer.W.detach(), layer.root.detach(), layer.bias.detach(),
                           aggr=aggr)
    assert out.dtype == dtype and out.shape == (g.num_nodes, 5)
    assert_close(out, expected, dtype)


def test_edge_inputs_in_edge_order_on_every_call(compile_model):
    # Edge inputs are gathered into the graph's edge order on every call (Graph::sortEdgeData,
    # its own prefetching gather on the CPU): the same norm tensor again, after an in-place
    # write, and another tensor all give the plain-PyTorch results, and nothing keeps the
    # input alive.
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(4)
    graph = make_graph(g)
    torch.manual_seed(5)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=torch.float64)
    x = torch.randn(g.num_nodes, 6, dtype=torch.float64, requires_grad=True)
    norm = rgcn_norm(g).to(torch.float64)

    def expected(n):
        # Plain PyTorch: x W_root + b + sum over incoming edges of norm_e x_src W_rel.
        xs = x.detach().clone().requires_grad_(True)
        msg = torch.einsum("ei,eio->eo", xs[g.src], layer.W.detach()[g.etype]) * n[:, None]
        out = (xs @ layer.root.detach() + layer.bias.detach()).index_add(0, g.dst, msg)
        out.sum().backward()
        return out.detach(), xs.grad

    for n in (norm, norm, None, norm, torch.rand_like(norm)):
        if n is None:              # an in-place write between two calls with the same tensor
            norm.mul_(torch.rand_like(norm) + 0.5)
            n = norm
        x.grad = None
        out = layer(graph, x, n)
        out.sum().backward()
        want, want_grad = expected(n)
        assert_close(out.detach(), want, torch.float64)
        assert_close(x.grad, want_grad, torch.float64)
    import gc
    import weakref
    alive = weakref.ref(norm)
    del norm, n, out
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("aggr", ["mean", "add"])
def test_rgcn_bases_matches_pyg(compile_model, dtype, aggr):
    Model = compile_model("rgcn_bases", "in=6", "out=5", "bases=3")
    g = awkward_graph(3)
    torch.manual_seed(1)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    x = torch.randn(g.num_nodes, 6, dtype=dtype)
    norm = rgcn_norm(g) if aggr == "mean" else torch.ones(g.src.numel(), dtype=torch.float64)
    out = layer(make_graph(g), x, norm.to(dtype))
    _, expected = rgcn_pyg(g, x, None, layer.root.detach(), layer.bias.detach(),
                           comp=layer.comp.detach(), bases=layer.V.detach(), aggr=aggr)
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("gkw", GRAPHS)
def test_rgat_hector_variant_matches_reference(compile_model, dtype, gkw):
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(2)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    x = torch.randn(g.num_nodes, 6, dtype=dtype)
    out = layer(make_graph(g), x)
    expected = rgat_hector_reference(g, x, layer.W.detach(), layer.a_src.detach(),
                                     layer.a_dst.detach(), 0.2)
    assert_close(out, expected, dtype)


def test_rgat_softmax_is_stable(compile_model):
    """Large logits overflow a softmax that does not subtract the per-destination maximum."""
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(4)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=torch.float32)
    with torch.no_grad():
        layer.a_src.mul_(1e3)
        layer.a_dst.mul_(1e3)
    x = torch.randn(g.num_nodes, 6) * 30
    out = layer(make_graph(g), x)
    assert torch.isfinite(out).all()
    expected = rgat_hector_reference(g, x.double(), layer.W.detach().double(),
                                     layer.a_src.detach().double(), layer.a_dst.detach().double())
    torch.testing.assert_close(out.double(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("gkw", GRAPHS)
def test_rgat_pyg_variant_matches_pyg(compile_model, dtype, gkw):
    Model = compile_model("rgat_pyg", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(3)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(g.num_nodes, 6, dtype=dtype)
    out = layer(make_graph(g), x)
    R = g.num_relations
    _, expected = rgat_pyg(g, x, layer.W.detach().view(R, 6, 2, 3), layer.q.detach(),
                           layer.k.detach(), layer.bias.detach())
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("gkw", GRAPHS)
def test_hgt_matches_pyg(compile_model, dtype, gkw):
    Model = compile_model("hgt", "in=8", "out=8", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(4)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    with torch.no_grad():
        for p in (layer.bk, layer.bq, layer.bv, layer.bA, layer.mu, layer.skip):
            p.normal_()
    x = torch.randn(g.num_nodes, 8, dtype=dtype)
    out = layer(make_graph(g), x)
    expected, mask = hgt_pyg(g, x, layer, heads=2)
    assert mask.any()
    assert_close(out[mask], expected[mask], dtype)
    # The plain reference covers every node, including those PyG gives no output.
    ref = hgt_reference(g, x, *(p.detach() for p in (
        layer.Wk, layer.bk, layer.Wq, layer.bq, layer.Wv, layer.bv, layer.W_att, layer.W_msg,
        layer.mu, layer.A, layer.bA)), skip=layer.skip.detach())
    assert_close(out, ref, dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_hgt_simplified_matches_reference(compile_model, dtype):
    Model = compile_model("hgt_simplified", "in=8", "out=8", "H=2")
    g = awkward_graph(5)
    torch.manual_seed(5)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    x = torch.randn(g.num_nodes, 8, dtype=dtype)
    out = layer(make_graph(g), x)
    T = g.num_ntypes
    ref = hgt_reference(g, x, *(p.detach() for p in (
        layer.Wk, layer.bk, layer.Wq, layer.bq, layer.Wv, layer.bv, layer.W_att, layer.W_msg,
        layer.mu, layer.A)), torch.zeros(T, 8, dtype=dtype), skip=None, gelu=False)
    assert_close(out, ref, dtype)


needs_data = pytest.mark.skipif(not (DATA / "aifb").is_dir(), reason="../shared/data not present")


def real_graph(name):
    """AIFB (with its rdf:type node types) or UMLS (one node type, inverse relations added)."""
    from references import TestGraph
    if name == "aifb":
        from hector.data import load_entities
        d = load_entities(DATA / "aifb")
        return TestGraph(d.src, d.dst, d.etype, d.ntype, d.num_nodes, d.num_relations,
                         d.num_ntypes, [], [])
    from hector.data import load_triples
    k = load_triples(DATA / "umls")
    src = torch.cat([k.train[:, 0], k.train[:, 2]])
    dst = torch.cat([k.train[:, 2], k.train[:, 0]])
    et = torch.cat([2 * k.train[:, 1], 2 * k.train[:, 1] + 1])
    R = 2 * k.num_relations
    return TestGraph(src, dst, et, torch.zeros(k.num_nodes, dtype=torch.int64), k.num_nodes, R,
                     1, [], [])


@needs_data
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("name", ["aifb", "umls"])
def test_all_models_on_real_graphs(compile_model, name, dtype):
    g = real_graph(name)
    graph = make_graph(g)
    torch.manual_seed(6)
    x = torch.randn(g.num_nodes, 8, dtype=dtype)
    R, T = g.num_relations, g.num_ntypes

    RGCN = compile_model("rgcn", "in=8", "out=4")
    layer = RGCN(num_relations=R, num_ntypes=T, dtype=dtype)
    for aggr, norm in (("mean", rgcn_norm(g)), ("add", torch.ones(g.src.numel()))):
        out = layer(graph, x, norm.to(dtype))
        _, expected = rgcn_pyg(g, x, layer.W.detach(), layer.root.detach(), layer.bias.detach(),
                               aggr=aggr)
        assert_close(out, expected, dtype)

    Bases = compile_model("rgcn_bases", "in=8", "out=4", "bases=3")
    layer = Bases(num_relations=R, num_ntypes=T, dtype=dtype)
    out = layer(graph, x, rgcn_norm(g).to(dtype))
    _, expected = rgcn_pyg(g, x, None, layer.root.detach(), layer.bias.detach(),
                           comp=layer.comp.detach(), bases=layer.V.detach())
    assert_close(out, expected, dtype)

    RGAT = compile_model("rgat", "in=8", "d=3", "H=2")
    layer = RGAT(num_relations=R, num_ntypes=T, dtype=dtype)
    expected = rgat_hector_reference(g, x, layer.W.detach(), layer.a_src.detach(),
                                     layer.a_dst.detach(), 0.2)
    assert_close(layer(graph, x), expected, dtype)

    PygRGAT = compile_model("rgat_pyg", "in=8", "d=3", "H=2")
    layer = PygRGAT(num_relations=R, num_ntypes=T, dtype=dtype)
    _, expected = rgat_pyg(g, x, layer.W.detach().view(R, 8, 2, 3), layer.q.detach(),
                           layer.k.detach(), layer.bias.detach())
    assert_close(layer(graph, x), expected, dtype)

    HGT = compile_model("hgt", "in=8", "out=8", "H=2")
    layer = HGT(num_relations=R, num_ntypes=T, dtype=dtype)
    with torch.no_grad():
        for p in (layer.bk, layer.bq, layer.bv, layer.bA, layer.mu, layer.skip):
            p.normal_()
    out = layer(graph, x)
    expected, mask = hgt_pyg(g, x, layer, heads=2)
    assert_close(out[mask], expected[mask], dtype)

    Simple = compile_model("hgt_simplified", "in=8", "out=8", "H=2")
    layer = Simple(num_relations=R, num_ntypes=T, dtype=dtype)
    ref = hgt_reference(g, x, *(p.detach() for p in (
        layer.Wk, layer.bk, layer.Wq, layer.bq, layer.Wv, layer.bv, layer.W_att, layer.W_msg,
        layer.mu, layer.A)), torch.zeros(T, 8, dtype=dtype), skip=None, gelu=False)
    assert_close(layer(graph, x), ref, dtype)


def test_bad_inputs_raise_clear_errors(compile_model):
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(0)
    graph = make_graph(g)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=torch.float64)
    x = torch.randn(g.num_nodes, 6, dtype=torch.float64)
    norm = rgcn_norm(g)
    with pytest.raises(TypeError, match="expected 2 inputs"):
        layer(graph, x)
    with pytest.raises(TypeError, match="hector.Graph"):
        layer(None, x, norm)
    with pytest.raises((ValueError, RuntimeError), match="x"):
        layer(graph, torch.randn(g.num_nodes, 7, dtype=torch.float64), norm)
    with pytest.raises((ValueError, RuntimeError), match="norm"):
        layer(graph, x, norm[:-1])
    with pytest.raises((ValueError, RuntimeError, TypeError), match="dtype|float"):
        layer(graph, x.float(), norm)
    other = RGCN(num_relations=g.num_relations + 1, num_ntypes=g.num_ntypes)
    with pytest.raises(ValueError, match="relations"):
        other(graph, x.float(), norm.float())


def test_the_same_library_from_a_second_file_is_a_clear_error(compiled_library, tmp_path):
    """PyTorch cannot register an operator namespace twice; a copy of a loaded library (its
    namespaces taken) is reported by hector.load instead of ending the process, and the first
    stays usable."""
    import shutil

    first = compiled_library("rgcn", "in=5", "out=3")
    RGCN = hector.load(first)
    copy = tmp_path / "copy.so"
    shutil.copyfile(first, copy)
    with pytest.raises(RuntimeError, match=r"copy\.so registers layers .*hector_rgcn_.* already "
                                           r"loaded in this process from .*rgcn\.so"):
        hector.load(copy)
    assert hector.load(first) is not None
    layer = RGCN(num_relations=2)
    assert layer.variants()


def test_kernels_are_profiler_events(compile_model):
    """Every emitted kernel call is a torch.profiler event named after the kernel, forward and
    backward, so a profile shows where a compiled layer spends its time."""
    from torch.profiler import ProfilerActivity, profile

    RGCN = compile_model("rgcn", "in=5", "out=3")
    g = awkward_graph()
    graph = make_graph(g)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    layer.variant = "none"
    x = torch.randn(g.num_nodes, 5, requires_grad=True)
    norm = torch.ones(graph.num_edges)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        layer(graph, x, norm).sum().backward()
    names = {event.name for event in prof.events()}
    assert any(n.startswith("rgcn_k") and "_gemm_relation_gsrc" in n for n in names), names
    assert any(n.startswith("rgcn_k") and "_node_traversal" in n for n in names), names
    assert any(n.startswith("rgcn_backward_k") and n.endswith("_wgrad") for n in names), names


def test_allocation_failure_is_clear_and_recoverable(compiled_library, tmp_path):
    """An allocation that fails inside a call (the address space capped below what it needs,
    the budget out of the way) is torch.OutOfMemoryError naming the layer, the variant and the
    estimate; afterwards a smaller call succeeds, and repeated failing calls leak nothing."""
    lib = compiled_library("rgcn", "in=64", "out=64")
    script = tmp_path / "oom.py"
    script.write_text(f"""
import resource, sys, torch
sys.path.insert(0, {str(pathlib.Path(__file__).resolve().parents[2] / "runtime" / "python")!r})
import hector
torch.set_num_threads(1)
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
def mapped():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
RGCN = hector.load({str(lib)!r})
def graph(n, e):
    g = torch.Generator().manual_seed(0)
    src, dst = torch.randint(0, n, (e,), generator=g), torch.randint(0, n, (e,), generator=g)
    return hector.Graph(src, dst, torch.randint(0, 4, (e,), generator=g), num_nodes=n,
                        num_relations=4)
big, small = graph(200000, 2000000), graph(1000, 5000)
layer = RGCN(num_relations=4)
layer.variant = "none"
xb, nb = torch.randn(200000, 64), big.edge_norm()
xs, ns = torch.randn(1000, 64), small.edge_norm()
for g in (big, small):
    layer.prepare(g)
hector.set_memory_budget(1 << 50)
headroom = 256 << 20                     # the call needs ~1.6 GiB: it cannot fit
resource.setrlimit(resource.RLIMIT_AS, (mapped() + headroom, resource.RLIM_INFINITY))
before = None
for attempt in range(3):
    try:
        layer(big, xb, nb)
        print("NO ERROR"); sys.exit(1)
    except torch.OutOfMemoryError as e:
        text = str(e)
    if before is None:
        before = rss()
print(text)
out = layer(small, xs, ns)              # the process goes on
assert out.shape == (1000, 64)
print("GROWTH", rss() - before)
""")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rgcn: out of memory in a training call of variant 'none'" in r.stdout, r.stdout
    assert "estimated peak" in r.stdout and "memory budget" in r.stdout
    growth = int(r.stdout.split("GROWTH")[1].split()[0])
    assert growth < 64 << 20, r.stdout     # nothing of the failed calls is kept


def test_weights_initialised_as_pyg(compile_model):
    """A layer's weights start as PyG's initialisers would draw them (the runtime's one
    implementation, hector::init_weight, shared with C++ layers): W and root by PyG's own
    glorot, in the manifest's order from the same seed, and the bias zeros. An unknown
    initialiser is an error naming the weight."""
    from torch_geometric.nn.inits import glorot

    RGCN = compile_model("rgcn", "in=5", "out=3")
    torch.manual_seed(123)
    layer = RGCN(num_relations=4, dtype=torch.float64)
    torch.manual_seed(123)
    W = torch.empty(4, 5, 3, dtype=torch.float64)
    root = torch.empty(5, 3, dtype=torch.float64)
    glorot(W)
    glorot(root)
    assert [w["name"] for w in RGCN.manifest["weights"]] == ["W", "root", "bias"]
    assert torch.equal(layer.W.detach(), W)
    assert torch.equal(layer.root.detach(), root)
    assert torch.equal(layer.bias.detach(), torch.zeros(3, dtype=torch.float64))
    with pytest.raises(ValueError, match="weight 'W' has an unknown initialiser 'kaiming'"):
        torch.ops.hector.init_weight(torch.empty(2, 2), "kaiming", [2, 2], "W")
