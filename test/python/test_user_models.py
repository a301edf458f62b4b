# Models a user writes in the language (test/python/user_models/), beyond the examples: relation
# embeddings composed with the source (CompGCN), a per-node MLP after a relational sum (RGIN),
# attention with the nonlinearity before the attention vector (GATv2), edge gates with max and
# mean together and a concatenated message, two hops inside one layer with node types and a
# derived weight, edge outputs (link scores), destination-side composition and a softmax of a
# destination-only score, heads split from a shared projection, sub-layers with edge outputs,
# reductions over both ends of the edges, linear maps of weights (projected relation
# embeddings), stored weight-space values, softplus, and a result written into an operand's
# buffer beside an operand also read through src. Each is compiled by hectorc and run in
# every optimisation variant it has; the oracle is a plain PyTorch reference written here from the
# model's text, in float64: outputs and the gradients of every input and weight (PyTorch's
# autograd through the reference), on the awkward graphs of references.awkward_graph.
import pathlib
import subprocess

import pytest
import torch

import hector
from conftest import BUILD
from random_models import max_scaled_error, scatter_dst
from references import awkward_graph, edge_softmax, rgcn_norm
from test_models import make_graph
from test_training import SMALL, randomise

F64 = torch.float64
MODELS_DIR = pathlib.Path(__file__).resolve().parent / "user_models"


@pytest.fixture(autouse=True)
def _no_variant_override(monkeypatch):
    """The tests choose the variants: a HECTOR_VARIANT in the environment would override them."""
    monkeypatch.delenv("HECTOR_VARIANT", raising=False)


@pytest.fixture(scope="module")
def user_model(tmp_path_factory):
    """user_model(name) -> the module class of layer `name` of user_models/<name>.hector. All the
    files are compiled as one library (one C++ build; their layer names are distinct)."""
    text = "".join(f.read_text() for f in sorted(MODELS_DIR.glob("*.hector")))
    src = tmp_path_factory.mktemp("user_models") / "user_models.hector"
    src.write_text(text)
    out = src.with_suffix(".so")
    cmd = [str(BUILD / "bin" / "hectorc"), str(src), "--target=cpu", "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    classes = hector.load_all(out)
    return lambda name: classes[name]


# --- references: plain PyTorch, one per model file -------------------------------------------

def scatter_sum(g, rows):
    return scatter_dst(g, rows, "sum")


def scatter_mean(g, rows):
    return scatter_dst(g, rows, "mean")


def scatter_max(g, rows):
    """Per-destination maximum; zeros where a node has no incoming edge."""
    return scatter_dst(g, rows, "max")


def per_edge(x, W, index):
    """x [E, k] times the slice W[index[e]] ([k, m...]) for every row."""
    return torch.einsum("ek,ek...->e...", x, W[index])


def compgcn(g, x, norm, w):
    m = norm.unsqueeze(1) * ((x[g.src] * w["rel"][g.etype]) @ w["W"])
    return (torch.tanh(scatter_sum(g, m) + x @ w["Wself"]),)


def rgin(g, x, w, eps=0.1):
    agg = (1 + eps) * x + scatter_sum(g, per_edge(x[g.src], w["W"], g.etype))
    return (torch.relu(agg @ w["A"] + w["b1"]) @ w["B"],)


def gatv2(g, x, w, slope=0.2):
    z = per_edge(x[g.src], w["Ws"], g.etype)                        # [E, H, d]
    zd = torch.einsum("nk,khd->nhd", x, w["Wd"])[g.dst]
    s = (w["a"][g.etype] * torch.nn.functional.leaky_relu(z + zd, slope)).sum(-1)   # [E, H]
    alpha = edge_softmax(s, g.dst, g.num_nodes)
    return (scatter_sum(g, alpha.unsqueeze(-1) * z).reshape(g.num_nodes, -1),)


def gated(g, x, wt, w):
    gate = torch.sigmoid(((x[g.src] * w["g"]) * x[g.dst]).sum(-1) + wt)
    m = gate.unsqueeze(1) * per_edge(torch.cat([x[g.src], x[g.dst]], 1), w["W"], g.etype)
    return (scatter_max(g, m) - scatter_mean(g, m) / 2,)


def twohop(g, x, w):
    Wr = torch.einsum("rb,bio->rio", w["comp"], w["V"])
    h1 = torch.relu(scatter_mean(g, per_edge(x[g.src], Wr, g.etype)))
    t = scatter_sum(g, h1[g.src] * h1[g.dst]) + h1
    h2 = per_edge(t, w["T"], g.ntype) + w["tb"][g.ntype]
    return h1, h2


def edgeout(g, x, w):
    z = x @ w["E"]
    score = (per_edge(z[g.src], w["Rb"], g.etype) * z[g.dst]).sum(-1)
    return score, scatter_sum(g, torch.exp(-score * score))


def dstcomp(g, x, w):
    m = ((x[g.dst] * w["rel"][g.etype]) @ w["W"]) * w["scale"][g.etype] + x[g.src] @ w["W"]
    q = (x[g.src] * x[g.dst]).sum(-1)
    den = scatter_sum(g, torch.exp(-q * q))
    a = 1.0 / torch.bincount(g.dst, minlength=g.num_nodes).to(x.dtype)[g.dst]
    return (scatter_sum(g, m) / (1 + den).unsqueeze(1) + scatter_sum(g, a.unsqueeze(1) * m),)


def multihead(g, x, w, heads=2, slope=0.1):
    k = per_edge(x, w["Wk"], g.ntype)
    ks, kd = k[g.src].view(-1, heads, 4), k[g.dst].view(-1, heads, 4)
    s = torch.nn.functional.leaky_relu((ks * kd).sum(-1), slope)       # [E, H]
    alpha = edge_softmax(s, g.dst, g.num_nodes)
    v = per_edge(x[g.src], w["Wv"], g.etype).view(-1, heads, 4)
    return (scatter_mean(g, alpha.unsqueeze(-1) * v).reshape(g.num_nodes, -1) - x,)


def stacked(g, x, w):
    def score(a):
        return torch.sigmoid((a[g.src] * w["sc.q"][g.etype] * a[g.dst]).sum(-1))

    def conv(a, e):
        msg = e.unsqueeze(1) * per_edge(a[g.src], w["c.W"], g.etype)
        return torch.relu(scatter_sum(g, msg) + a)

    h1 = conv(x, score(x))
    return (conv(h1, score(h1)),)


def ends(g, x, ew, w):
    a = scatter_sum(g, x[g.src])
    b = scatter_mean(g, per_edge(a[g.src] - a[g.dst], w["Wd"], g.etype))
    P = w["P"][g.etype]
    s = (x[g.src] * P).sum(-1) + (x[g.dst] * P).sum(-1) + ew
    z = torch.einsum("ek,khd->ehd", x[g.src], w["W"])
    alpha = edge_softmax(s, g.dst, g.num_nodes)
    m = scatter_max(g, alpha.view(-1, 1, 1) * z).reshape(g.num_nodes, -1)
    return (torch.cat([b, m, a], 1),)


def relemb(g, x, w):
    r = torch.relu(w["rel"]) @ w["Wr"]                                 # [R, in]
    m = (x[g.src] * r[g.etype]) @ w["V"] + w["u"] @ w["U"]
    e = torch.relu(w["b"]) + per_edge(x[g.dst], w["R"], g.etype)
    return (torch.cat([scatter_sum(g, m), scatter_mean(g, e * e)], 1),)


def wsops(g, x, w, heads=2):
    r = torch.cat([torch.tanh(w["a"]), w["b"]], 1) @ w["W"]             # [R, in]
    z = (x[g.src] * r[g.etype]).view(-1, heads, 3)
    s = (z * w["q"]).sum(-1) * (w["K"] * w["q"]).sum(-1)[g.etype]       # [E, H]
    alpha = edge_softmax(s, g.dst, g.num_nodes)
    m = scatter_sum(g, alpha.unsqueeze(-1) * z).reshape(g.num_nodes, -1)
    return (m + torch.tanh(w["P"]).reshape(-1) @ w["W"],)


def softplusgate(g, x, w):
    softplus = torch.nn.functional.softplus
    s = softplus(((x[g.src] * w["a"]) * x[g.dst]).sum(-1))
    m = s.unsqueeze(1) * per_edge(x[g.src], w["W"], g.etype) + softplus(w["b"])[g.etype]
    # Arguments stay below softplus's threshold (20): above it PyTorch's float64 gradient is
    # exactly dy, ours dy * sigmoid(x), at most 2.1e-9 apart (docs/architecture.md).
    return (scatter_sum(g, m) / 4 - softplus(scatter_mean(g, m)),)


def inplace(g, x, w):
    y, u = x @ w["W"], x @ w["V"]
    a = per_edge(x[g.src], w["P"], g.etype)
    return scatter_sum(g, u[g.src]) + u + (y * y + w["b"]), torch.tanh(a) * a


def edge_weights(g):
    return torch.randn(g.src.numel(), dtype=F64)


# name -> (inputs of the graph, reference); every model keeps its file's default parameters.
USER_MODELS = {
    "compgcn": (lambda g: [torch.randn(g.num_nodes, 8, dtype=F64), rgcn_norm(g)], compgcn),
    "rgin": (lambda g: [torch.randn(g.num_nodes, 8, dtype=F64)], rgin),
    "gatv2": (lambda g: [torch.randn(g.num_nodes, 8, dtype=F64)], gatv2),
    # Random edge weights: no two edges' messages tie in max (duplicate edges included).
    "gated": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64), edge_weights(g)], gated),
    "twohop": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], twohop),
    "edgeout": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], edgeout),
    "dstcomp": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], dstcomp),
    "multihead": (lambda g: [torch.randn(g.num_nodes, 8, dtype=F64)], multihead),
    "stacked": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], stacked),
    "relemb": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], relemb),
    "wsops": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], wsops),
    "softplusgate": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64)], softplusgate),
    "inplace": (lambda g: [torch.randn(g.num_nodes, 8, dtype=F64)], inplace),
    # Random edge weights: no two edges' messages tie in max.
    "ends": (lambda g: [torch.randn(g.num_nodes, 6, dtype=F64), edge_weights(g)], ends),
}
GRAPHS = SMALL + [dict(seed=3)]


@pytest.mark.parametrize("gkw", GRAPHS)
@pytest.mark.parametrize("name", sorted(USER_MODELS))
def test_user_model_matches_pytorch_in_every_variant(user_model, name, gkw):
    make_inputs, reference = USER_MODELS[name]
    Model = user_model(name)
    g = awkward_graph(**gkw)
    torch.manual_seed(11)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    randomise(layer)
    inputs = [t.requires_grad_() for t in make_inputs(g)]
    weights = {n: layer.get_parameter(n) for n in layer._weight_paths}
    expected = reference(g, *inputs, weights)
    upstream = [torch.randn_like(e) for e in expected]
    wrt = inputs + list(weights.values())
    expected_grads = torch.autograd.grad(expected, wrt, upstream, allow_unused=True)
    expected_grads = [torch.zeros_like(t) if d is None else d for t, d in zip(wrt, expected_grads)]
    names = [f"input {i}" for i in range(len(inputs))] + list(weights)
    graph = make_graph(g)
    variants = Model.variants()
    assert variants[0] == "none"
    for variant in variants:
        layer.variant = variant
        out = layer(graph, *inputs)
        out = out if isinstance(out, tuple) else (out,)
        assert len(out) == len(expected)
        grads = torch.autograd.grad(out, wrt, upstream, allow_unused=True)
        with torch.no_grad():
            inference = layer(graph, *inputs)
        inference = inference if isinstance(inference, tuple) else (inference,)
        checks = ([(f"output {i}", a, b) for i, (a, b) in enumerate(zip(out, expected))]
                  + [(f"inference output {i}", a, b)
                     for i, (a, b) in enumerate(zip(inference, expected))]
                  + [(f"gradient of {n}", torch.zeros_like(t) if a is None else a, b)
                     for n, t, a, b in zip(names, wrt, grads, expected_grads)])
        for what, a, b in checks:
            assert a.shape == b.shape, (f"{name}, variant {variant}: {what} shape {a.shape} != "
                                        f"{b.shape}")
            assert torch.isfinite(b).all(), f"{name}: the reference's {what} is not finite"
            err = max_scaled_error(a, b)
            assert err <= 1e-10, (f"{name}, variant {variant!r}: {what} differs from PyTorch by "
                                  f"{err:.3g} (scaled max abs error)")


def test_every_user_model_has_a_reference():
    files = {f.stem for f in MODELS_DIR.glob("*.hector")}
    assert files == set(USER_MODELS), (f"model files without a reference: "
                                        f"{sorted(files - set(USER_MODELS))}; references "
                                        f"without a file: {sorted(set(USER_MODELS) - files)}")


def test_user_models_have_compacted_and_reordered_variants(user_model):
    """The rewrites apply to the user models too: CompGCN's composed source rows are compacted
    into unique (source, relation) pairs, RGIN's relational sum is reordered."""
    assert "compact" in user_model("compgcn").variants()
    assert "reorder" in user_model("rgin").variants()


# --- random models (random_models.py): a fixed sample; run that file for more seeds -----------

RANDOM_SEEDS = list(range(8))


@pytest.fixture(scope="module")
def random_layers(tmp_path_factory):
    import random_models

    models = {s: random_models.random_model(s) for s in RANDOM_SEEDS}
    loaded, errors = random_models.compile_models(BUILD / "bin" / "hectorc", models,
                                                  tmp_path_factory.mktemp("random_models"))
    return models, loaded, errors


@pytest.mark.parametrize("seed", RANDOM_SEEDS)
def test_random_model_matches_pytorch_in_every_variant(random_layers, seed):
    import random_models

    models, loaded, errors = random_layers
    assert seed not in errors, f"hectorc rejected\n{models[seed].text}{errors[seed]}"
    try:
        random_models.check_layer(loaded[seed], models[seed].reference)
    except AssertionError as e:
        raise AssertionError(f"{models[seed].text}{e}") from None
