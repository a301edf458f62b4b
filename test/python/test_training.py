# Training through compiled layers: the backward layers the compiler derives, run by the
# runtime's autograd node. Oracles: torch.autograd.gradcheck in float64 (finite differences, for
# every input and weight), PyG's layers with the same weights (gradients to 1e-8), plain PyTorch
# references; graphs with isolated nodes, empty relations, self-loops and duplicate edges.
import pytest
import torch

import hector
from references import (awkward_graph, hgt_pyg, hgt_reference, rgat_hector_reference,
                        rgat_pyg, rgcn_norm, rgcn_pyg, rgcn_reference)
from test_models import make_graph

F64 = torch.float64
SMALL = [dict(seed=0, num_nodes=12, num_edges=40), dict(seed=1, num_nodes=9, num_edges=30,
                                                        num_relations=1),
         dict(seed=2, num_nodes=10, num_edges=36)]
# (example, parameters, input widths besides the graph: "node:W" / "edge")
# The parameters of test_models.py, so that the session compiles each library once.
MODELS = {
    "rgcn": (("in=6", "out=5"), ["node:6", "edge"]),
    "rgcn_bases": (("in=6", "out=5", "bases=3"), ["node:6", "edge"]),
    "rgcn_aifb": (("in=5", "hidden=4", "classes=3"), ["node:5", "edge"]),
    "rgat": (("in=6", "d=3", "H=2"), ["node:6"]),
    "rgat_pyg": (("in=6", "d=3", "H=2"), ["node:6"]),
    "hgt": (("in=8", "out=8", "H=2"), ["node:8"]),
    "hgt_simplified": (("in=8", "out=8", "H=2"), ["node:8"]),
    "rgcn_max": (("in=6", "out=5"), ["node:6"]),
}


def inputs_for(g, decls, dtype, requires_grad=True):
    out = []
    for d in decls:
        if d == "edge":
            t = rgcn_norm(g).to(dtype)
        else:
            t = torch.randn(g.num_nodes, int(d.split(":")[1]), dtype=dtype)
        out.append(t.requires_grad_(requires_grad))
    return out


def randomise(layer):
    """Gives zero- and one-initialised weights (biases, gates) random values, so that their
    gradients and the terms they scale are exercised."""
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.5 * torch.randn_like(p))


@pytest.mark.parametrize("gkw", SMALL)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_gradcheck_float64(compile_model, model, gkw):
    """Finite differences against the compiled backward for every input and weight."""
    params, decls = MODELS[model]
    Model = compile_model(model, *params)
    g = awkward_graph(**gkw)
    torch.manual_seed(7)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    assert gradcheck_layer(Model, make_graph(g), inputs_for(g, decls, F64), layer.weights())


def gradcheck_layer(Model, graph, inputs, weights, variant="auto"):
    """torch.autograd.gradcheck of the layer's first output with respect to every input and
    weight (the weights enter as arguments, so that gradcheck perturbs them)."""
    n = len(inputs)

    def f(*args):
        return torch.ops.hector.layer_apply(Model.manifest["namespace"], graph._impl,
                                            list(args[:n]), list(args[n:]), variant)[0]

    return torch.autograd.gradcheck(f, (*inputs, *weights), eps=1e-6, atol=1e-7, rtol=1e-5)


def grads(out, wrt, upstream, retain_graph=False):
    return torch.autograd.grad(out, wrt, upstream, allow_unused=True, retain_graph=retain_graph)


def assert_grads_equal(ours, theirs, atol=1e-8):
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, rtol=0, atol=atol)


@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=1, num_relations=1),
                                 dict(seed=2, num_nodes=9, num_edges=30)])
@pytest.mark.parametrize("aggr", ["mean", "add"])
def test_rgcn_gradients_equal_pyg(compile_model, gkw, aggr):
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(**gkw)
    torch.manual_seed(0)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    norm = rgcn_norm(g) if aggr == "mean" else torch.ones(g.src.numel(), dtype=F64)
    out = layer(make_graph(g), x, norm)
    x2 = x.detach().clone().requires_grad_()
    conv, expected = rgcn_pyg(g, x2, layer.W.detach(), layer.root.detach(), layer.bias.detach(),
                              aggr=aggr)
    up = torch.randn_like(out)
    assert_grads_equal(grads(out, [x, layer.W, layer.root, layer.bias], up),
                       grads(expected, [x2, conv.weight, conv.root, conv.bias], up))


def test_rgcn_bases_gradients_equal_pyg(compile_model):
    Model = compile_model("rgcn_bases", "in=6", "out=5", "bases=3")
    g = awkward_graph(3)
    torch.manual_seed(1)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x, rgcn_norm(g))
    x2 = x.detach().clone().requires_grad_()
    conv, expected = rgcn_pyg(g, x2, None, layer.root.detach(), layer.bias.detach(),
                              comp=layer.comp.detach(), bases=layer.V.detach())
    up = torch.randn_like(out)
    assert_grads_equal(grads(out, [x, layer.V, layer.comp, layer.root, layer.bias], up),
                       grads(expected, [x2, conv.weight, conv.comp, conv.root, conv.bias], up))


@pytest.mark.parametrize("gkw", SMALL + [dict(seed=4)])
def test_max_aggregation_gradients_equal_pytorch(compile_model, gkw):
    """examples/rgcn_max.hector against scatter_reduce("amax"): on duplicate edges (equal
    messages) ours routes the gradient to the first, PyTorch splits it; the gradients of the
    source rows and weights, which sum over both, agree. Nodes without incoming edges get 0."""
    Model = compile_model("rgcn_max", "in=6", "out=5")
    g = awkward_graph(**gkw)
    torch.manual_seed(3)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    graph = make_graph(g)
    W, root = layer.W, layer.root
    m = torch.bmm(x[g.src].unsqueeze(1), W[g.etype]).squeeze(1)
    index = g.dst.unsqueeze(1).expand(-1, 5)
    expected = torch.zeros(g.num_nodes, 5, dtype=F64).scatter_reduce(
        0, index, m, "amax", include_self=False) + x @ root
    up = torch.randn_like(expected)
    expected_grads = grads(expected, [x, W, root], up)
    assert (torch.bincount(g.dst, minlength=g.num_nodes) == 0).any()   # isolated destinations
    for variant in Model.variants():
        layer.variant = variant
        out = layer(graph, x)
        torch.testing.assert_close(out, expected, rtol=0, atol=1e-12)
        assert_grads_equal(grads(out, [x, W, root], up), expected_grads, atol=1e-12)


@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=1, num_relations=1),
                                 dict(seed=2, num_nodes=9, num_edges=30)])
def test_rgat_gradients_equal_pyg(compile_model, gkw):
    Model = compile_model("rgat_pyg", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(3)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x)
    R = g.num_relations
    x2 = x.detach().clone().requires_grad_()
    conv, expected = rgat_pyg(g, x2, layer.W.detach().view(R, 6, 2, 3), layer.q.detach(),
                              layer.k.detach(), layer.bias.detach())
    up = torch.randn_like(out)
    ours = grads(out, [x, layer.W, layer.q, layer.k, layer.bias], up)
    theirs = grads(expected, [x2, conv.weight, conv.q, conv.k, conv.bias], up)
    assert_grads_equal(ours[:1] + (ours[1].reshape(theirs[1].shape),) + ours[2:], theirs)


def test_library_built_at_O0_equals_pyg(tmp_path):
    """hectorc -O0, the level of the suite's compile-only checks, builds a library that computes
    what the default -O3 one does: RGAT's output and gradients equal PyG's (float64), on a graph
    with isolated nodes, an empty relation, self-loops and duplicate edges."""
    import os
    import pathlib
    import subprocess
    repo = pathlib.Path(__file__).resolve().parents[2]
    build = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", repo / "build"))
    lib = tmp_path / "rgat_pyg_O0.so"
    cmd = [str(build / "bin" / "hectorc"), str(repo / "examples" / "rgat_pyg.hector"),
           "--target=cpu", "-O0", "--no-reorder", "--no-compact", "-P", "in=6", "-P", "d=3",
           "-P", "H=2", "-o", str(lib)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    Model = hector.load(lib)
    g = awkward_graph(seed=0)
    torch.manual_seed(3)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x)
    R = g.num_relations
    x2 = x.detach().clone().requires_grad_()
    conv, expected = rgat_pyg(g, x2, layer.W.detach().view(R, 6, 2, 3), layer.q.detach(),
                              layer.k.detach(), layer.bias.detach())
    torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)
    up = torch.randn_like(out)
    ours = grads(out, [x, layer.W, layer.q, layer.k, layer.bias], up)
    theirs = grads(expected, [x2, conv.weight, conv.q, conv.k, conv.bias], up)
    assert_grads_equal(ours[:1] + (ours[1].reshape(theirs[1].shape),) + ours[2:], theirs)


@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=2, num_nodes=9, num_edges=30)])
def test_rgat_hector_variant_gradients_equal_reference(compile_model, gkw):
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(2)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x)
    ref = rgat_hector_reference(g, x, layer.W, layer.a_src, layer.a_dst, 0.2)
    up = torch.randn_like(out)
    wrt = [x, layer.W, layer.a_src, layer.a_dst]
    assert_grads_equal(grads(out, wrt, up), grads(ref, wrt, up))


@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=1, num_relations=1),
                                 dict(seed=2, num_nodes=9, num_edges=30)])
def test_hgt_gradients_equal_pyg(compile_model, gkw):
    Model = compile_model("hgt", "in=8", "out=8", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(4)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    x = torch.randn(g.num_nodes, 8, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x)
    x2 = x.detach().clone().requires_grad_()
    expected, mask, conv, _, _ = hgt_pyg(g, x2, layer, heads=2, return_module=True)
    up = torch.randn_like(out) * mask.unsqueeze(1)   # PyG gives no output to some nodes
    ours = grads(out, [x, layer.A], up, retain_graph=True)
    # The output projection of each type: PyG's out_lin weight is A[t]^T.
    theirs_x, *theirs_A = grads(
        expected, [x2] + [conv.out_lin.lins[f"t{t}"].weight for t in range(g.num_ntypes)], up)
    torch.testing.assert_close(ours[0], theirs_x, rtol=0, atol=1e-8)
    for t, gA in enumerate(theirs_A):
        if gA is not None:
            torch.testing.assert_close(ours[1][t], gA.t(), rtol=0, atol=1e-8)
    # Every weight against the plain reference (it covers the nodes PyG leaves out too).
    names = ["Wk", "bk", "Wq", "bq", "Wv", "bv", "W_att", "W_msg", "mu", "A", "bA"]
    wrt = [x] + [getattr(layer, n) for n in names] + [layer.skip]
    ref = hgt_reference(g, x, *(getattr(layer, n) for n in names), skip=layer.skip)
    up = torch.randn_like(out)
    assert_grads_equal(grads(out, wrt, up), grads(ref, wrt, up))


def test_two_layer_model_trains_like_pytorch(compile_model):
    """A few SGD steps of the compiled two-layer RGCN follow the same trajectory as the plain
    PyTorch model with the same weights."""
    Model = compile_model("rgcn_aifb", "in=5", "hidden=4", "classes=3")
    g = awkward_graph(6)
    torch.manual_seed(8)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    ref = {n: p.detach().clone().requires_grad_() for n, p in layer.named_parameters()}
    graph, norm = make_graph(g), rgcn_norm(g)
    x = torch.randn(g.num_nodes, 5, dtype=F64)
    labels = torch.randint(0, 3, (g.num_nodes,))
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    opt_ref = torch.optim.Adam(ref.values(), lr=0.05)

    def reference(x):
        h = torch.relu(rgcn_reference(g, x, ref["conv1.W"], ref["conv1.root"], ref["conv1.bias"],
                                      norm))
        return rgcn_reference(g, h, ref["conv2.W"], ref["conv2.root"], ref["conv2.bias"], norm)

    losses = []
    for _ in range(5):
        for o in (opt, opt_ref):
            o.zero_grad()
        loss = torch.nn.functional.cross_entropy(layer(graph, x, norm), labels)
        loss_ref = torch.nn.functional.cross_entropy(reference(x), labels)
        loss.backward()
        loss_ref.backward()
        torch.testing.assert_close(loss, loss_ref, rtol=0, atol=1e-10)
        opt.step()
        opt_ref.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    for n, p in layer.named_parameters():
        torch.testing.assert_close(p, ref[n], rtol=0, atol=1e-10)


def test_float32_gradients_are_deterministic(compile_model):
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(0)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    graph = make_graph(g)
    x = torch.randn(g.num_nodes, 6, requires_grad=True)
    results = []
    for _ in range(3):
        out = layer(graph, x)
        results.append(torch.autograd.grad(out.square().sum(), [x, *layer.parameters()]))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert torch.equal(a, b)


def test_double_backward_is_a_clear_error(compile_model):
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(0)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x, rgcn_norm(g))
    with pytest.raises(RuntimeError, match="double backward"):
        torch.autograd.grad(out.sum(), x, create_graph=True)


def test_second_backward_needs_retain_graph(compile_model):
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(0)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    x = torch.randn(g.num_nodes, 6, dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x, rgcn_norm(g))
    first, = torch.autograd.grad(out.sum(), x, retain_graph=True)
    second, = torch.autograd.grad(out.sum(), x)
    assert torch.equal(first, second)
    with pytest.raises(RuntimeError, match="second time"):
        torch.autograd.grad(out.sum(), x)


def test_inference_saves_nothing_and_frees_after_backward(compile_model):
    """Under no_grad nothing reaches the activation store; in training the saved activations
    are released right after backward (as PyTorch releases its own)."""
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(0)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    graph = make_graph(g)
    x = torch.randn(g.num_nodes, 6)
    store = hector.spill(threshold_bytes=1 << 40)   # a store that keeps everything, with stats
    with store:
        with torch.no_grad():
            out = layer(graph, x)
        assert out.grad_fn is None and store.stats["saved"] == 0
        out = layer(graph, x)
        saved = store.stats["saved"]
        assert saved > 0 and store.stats["resident_bytes"] > 0
        out.sum().backward()
        assert store.stats["resident_bytes"] == 0
    assert layer.W.grad is not None


def test_edge_input_gradient_in_user_order(compile_model):
    """The gradient of an edge input comes back in the caller's edge order."""
    RGCN = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(1)
    layer = RGCN(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    x = torch.randn(g.num_nodes, 6, dtype=F64)
    norm = torch.rand(g.src.numel(), dtype=F64, requires_grad=True)
    out = layer(make_graph(g), x, norm)
    ref = rgcn_reference(g, x, layer.W, layer.root, layer.bias, norm)
    up = torch.randn_like(out)
    assert_grads_equal(grads(out, [norm], up), grads(ref, [norm], up))


@pytest.mark.parametrize("dtype", [torch.float32, F64])
@pytest.mark.parametrize("model", ["rgat", "hgt"])
def test_spilled_activations_give_bit_identical_gradients(compile_model, model, dtype, tmp_path):
    """The compiled layers' saved activations go through the activation store: spilled to files
    and read back, the gradients are bit-identical to keeping them in memory."""
    params, decls = MODELS[model]
    Model = compile_model(model, *params)
    g = awkward_graph(0, num_nodes=60, num_edges=400)
    torch.manual_seed(9)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    randomise(layer)
    graph = make_graph(g)
    inputs = inputs_for(g, decls, dtype)
    up = torch.randn(g.num_nodes, layer.manifest["outputs"][0]["dims"][0], dtype=dtype)

    def step(ctx=None):
        out = layer(graph, *inputs)
        if ctx is not None:
            ctx.synchronize()   # every write done: the loads really read the files
        return torch.autograd.grad(out, inputs + list(layer.parameters()), up)

    expected = step()
    spill_dir = tmp_path / "spill"
    spill_dir.mkdir()
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False,
                      prefetch=0) as ctx:
        for _ in range(2):
            got = step(ctx)
            assert all(torch.equal(a, b) for a, b in zip(got, expected))
    stats = ctx.stats
    assert stats["spilled"] > 0 and stats["bytes_read"] > 0 and stats["write_failures"] == 0
    assert list(spill_dir.iterdir()) == []


def test_derived_layers_are_internal(compiled_library):
    """The backward layer and the inference copy are registered but not offered as modules; a
    call under no_grad runs the copy (the fused forward) with the same results."""
    lib = compiled_library("rgat", "in=6", "d=3", "H=2")
    assert sorted(hector.load_all(lib)) == ["rgat"]
    Model = hector.load(lib)
    assert Model.manifest["inference"].startswith("hector_rgat_inference_")
    assert Model.manifest["backward"].startswith("hector_rgat_backward_")
    g = awkward_graph(0)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    graph, x = make_graph(g), torch.randn(g.num_nodes, 6, dtype=F64)
    with torch.no_grad():
        fused = layer(graph, x)
    trained = layer(graph, x)
    assert trained.grad_fn is not None
    torch.testing.assert_close(fused, trained.detach(), rtol=0, atol=1e-12)
