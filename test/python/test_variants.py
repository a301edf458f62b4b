# Optimisation variants: every layer's library carries the layer as written ("none") and the
# variants whose rewrites change it ("reorder": linear-operator reordering, "compact": compact
# materialisation on unique (node, relation) pairs, "both", and "both_logits": both, with every
# softmax logit computed from the inputs); the runtime picks one per graph with the cost model. Oracles: the "none" variant (checked against PyG and plain PyTorch by
# test_models.py / test_training.py) for outputs and gradients, in float64, on the awkward small
# graphs and on the real graphs AIFB and UMLS; torch.autograd.gradcheck for the variants'
# backward; hectorc --explain for the runtime's choice.
import os
import pathlib
import re
import subprocess

import pytest
import torch

import hector
from hector.module import layer_manifest
import references
from references import awkward_graph
from test_models import make_graph
from test_training import MODELS, SMALL, gradcheck_layer, inputs_for, randomise

F64 = torch.float64
REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build"))   # as conftest.py
DATA = REPO.parent / "shared" / "data"
ALL_VARIANTS = ["none", "reorder", "compact", "both", "both_logits"]
# The real graphs: the models (with MODELS' small widths, so that the libraries are shared with
# test_training.py) that run on them.
REAL_MODELS = ["rgcn", "rgat", "hgt"]


@pytest.fixture(autouse=True)
def _no_variant_override(monkeypatch):
    """The tests choose variants themselves: a HECTOR_VARIANT in the environment would override
    "auto"."""
    monkeypatch.delenv("HECTOR_VARIANT", raising=False)


# --- helpers ------------------------------------------------------------------------------------

def build_layer(Model, g, dtype=F64, seed=0):
    torch.manual_seed(seed)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
    randomise(layer)
    return layer


def run(layer, graph, inputs, variant, upstream=None):
    """Outputs and gradients (w.r.t. every float input and every weight) of `variant`, with the
    given upstream gradients (drawn when None); also the output under no_grad (the inference
    copy of the variant). Returns (outputs, gradients, inference outputs, upstream)."""
    layer.variant = variant
    try:
        out = layer(graph, *inputs)
        outs = out if isinstance(out, tuple) else (out,)
        if upstream is None:
            upstream = [torch.randn_like(o) for o in outs]
        wrt = [t for t in inputs if t.is_floating_point() and t.requires_grad] + layer.weights()
        gs = torch.autograd.grad(outs, wrt, upstream, allow_unused=True)
        gs = [torch.zeros_like(w) if gr is None else gr for w, gr in zip(wrt, gs)]
        with torch.no_grad():
            inf = layer(graph, *inputs)
        inf = inf if isinstance(inf, tuple) else (inf,)
    finally:
        layer.variant = "auto"
    return [o.detach() for o in outs], gs, list(inf), upstream


def max_scaled_error(actual, expected):
    scale = max(1.0, float(expected.abs().max())) if expected.numel() else 1.0
    return float((actual - expected).abs().max()) / scale if expected.numel() else 0.0


def assert_variant_equals_none(layer, graph, inputs, what, tol=1e-10):
    """Every variant of `layer` against "none": outputs, gradients and inference outputs to
    `tol` relative to the largest magnitude of the reference tensor. Returns the variants."""
    variants = type(layer).variants()
    assert variants[0] == "none" and len(set(variants)) == len(variants), variants
    assert set(variants) <= set(ALL_VARIANTS), variants
    ref_out, ref_grads, ref_inf, up = run(layer, graph, inputs, "none")
    names = [f"input {i}" for i, t in enumerate(inputs)
             if t.is_floating_point() and t.requires_grad] + list(layer._weight_paths)
    for v in variants[1:]:
        out, gs, inf, _ = run(layer, graph, inputs, v, up)
        pairs = ([(f"output {i}", a, b) for i, (a, b) in enumerate(zip(out, ref_out))]
                 + [(f"gradient of {n}", a, b) for n, a, b in zip(names, gs, ref_grads)]
                 + [(f"inference output {i}", a, b) for i, (a, b) in enumerate(zip(inf, ref_inf))])
        assert len(out) == len(ref_out) and len(gs) == len(ref_grads) and len(inf) == len(ref_inf)
        for name, a, b in pairs:
            assert a.shape == b.shape, f"{what}, variant {v}: {name} shape {a.shape} != {b.shape}"
            assert torch.isfinite(b).all(), f"{what}: reference {name} is not finite"
            err = max_scaled_error(a, b)
            assert err <= tol, (f"{what}, variant {v!r} vs 'none': {name} differs by {err:.3g} "
                                f"(scaled max abs error; tolerance {tol})")
    return variants


def last_line(text):
    return text.rstrip("\n").splitlines()[-1]


def choice_of(text):
    """(training, inference) from an explanation's '  choice: training X, inference Y' line."""
    m = re.fullmatch(r"  choice: training (\w+), inference (\w+)", last_line(text))
    assert m, f"no choice line at the end of:\n{text}"
    return m.group(1), m.group(2)


def sharing_graph(num_relations=5, sources=10, edges_per_relation=2000, num_nodes=1000, seed=0):
    """Every relation's edges come from `sources` nodes: E / U_src = edges_per_relation / sources
    (200 by default), where compact materialisation clearly pays."""
    gen = torch.Generator().manual_seed(seed)
    src, dst, et = [], [], []
    for r in range(num_relations):
        pool = torch.randperm(num_nodes, generator=gen)[:sources]
        src.append(pool[torch.randint(0, sources, (edges_per_relation,), generator=gen)])
        dst.append(torch.randint(0, num_nodes, (edges_per_relation,), generator=gen))
        et.append(torch.full((edges_per_relation,), r))
    return hector.Graph(torch.cat(src), torch.cat(dst), torch.cat(et), num_nodes=num_nodes,
                        num_relations=num_relations)


def no_sharing_graph(num_nodes=500, num_relations=4, num_ntypes=2, seed=0):
    """Every (source, relation) and every (destination, relation) pair has exactly one edge:
    U_src = U_dst = E (each relation is a permutation of the nodes)."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.arange(num_nodes).repeat(num_relations)
    dst = torch.cat([torch.randperm(num_nodes, generator=gen) for _ in range(num_relations)])
    et = torch.arange(num_relations).repeat_interleave(num_nodes)
    ntype = torch.randint(0, num_ntypes, (num_nodes,), generator=gen)
    return hector.Graph(src, dst, et, num_nodes=num_nodes, ntype=ntype,
                        num_relations=num_relations, num_ntypes=num_ntypes)


def hectorc_explain(example, params, graph):
    sizes = (f"edges={graph.num_edges} nodes={graph.num_nodes} relations={graph.num_relations} "
             f"ntypes={graph.num_ntypes} unique-src={graph.num_unique_src} "
             f"unique-dst={graph.num_unique_dst}")
    cmd = [str(BUILD / "bin" / "hectorc"), str(REPO / "examples" / f"{example}.hector"),
           "--explain", sizes]
    for p in params:
        cmd += ["-P", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


# --- 1. every variant equals "none" on the awkward small graphs ----------------------------------

@pytest.mark.parametrize("gkw", SMALL)
@pytest.mark.parametrize("model", sorted(MODELS))
def test_variants_equal_none_on_small_graphs(compile_model, model, gkw):
    params, decls = MODELS[model]
    Model = compile_model(model, *params)
    g = awkward_graph(**gkw)
    layer = build_layer(Model, g)
    graph = make_graph(g)
    torch.manual_seed(11)
    inputs = inputs_for(g, decls, F64)
    assert_variant_equals_none(layer, graph, inputs, f"{model} on awkward_graph({gkw})")


# Variants each example must have (at MODELS' parameters): the rewrites that change the layer.
EXPECTED_VARIANTS = {
    "rgcn": {"reorder", "compact"},
    "rgat": {"reorder", "compact", "both", "both_logits"},
    "rgat_pyg": {"reorder", "compact", "both", "both_logits"},
    "hgt": {"compact"},
}


@pytest.mark.parametrize("model", sorted(MODELS))
def test_models_have_their_variants(compile_model, model):
    Model = compile_model(model, *MODELS[model][0])
    variants = Model.variants()
    assert variants[0] == "none" and len(set(variants)) == len(variants), variants
    assert set(variants) <= set(ALL_VARIANTS), variants
    assert EXPECTED_VARIANTS.get(model, set()) <= set(variants), variants
    if model == "rgat":
        assert variants == ALL_VARIANTS
    # HGT: its projections are biased and per node type, no reordering applies; RGCN: "both"
    # equals "reorder" (no per-edge GEMM is left to compact); neither is built. Neither has a
    # logit computed from its messages, so "both_logits" would repeat "both" or "compact".
    if model == "hgt":
        assert variants == ["none", "compact"]
    if model == "rgcn":
        assert variants == ["none", "reorder", "compact"]


# --- 2. the same on the real graphs --------------------------------------------------------------

needs_data = pytest.mark.skipif(not (DATA / "aifb").is_dir() or not (DATA / "umls").is_dir(),
                                reason=f"the real graphs ({DATA}/aifb, {DATA}/umls) are absent")


@pytest.fixture(scope="session")
def real_graphs():
    """name -> (TestGraph, hector.Graph) of AIFB (with node types) and UMLS (the training
    triples and their inverses, as examples/train_links.py builds its message graph)."""
    from hector.data import load_entities, load_triples
    out = {}
    d = load_entities(DATA / "aifb")
    g = references.TestGraph(d.src, d.dst, d.etype, d.ntype, d.num_nodes, d.num_relations,
                             d.num_ntypes, [], [])
    out["aifb"] = (g, make_graph(g))
    k = load_triples(DATA / "umls")
    h, r, t = k.train.unbind(1)
    n = k.num_nodes
    g = references.TestGraph(torch.cat([h, t]), torch.cat([t, h]), torch.cat([2 * r, 2 * r + 1]),
                             torch.zeros(n, dtype=torch.int64), n, 2 * k.num_relations, 1, [], [])
    out["umls"] = (g, make_graph(g))
    return out


@needs_data
@pytest.mark.parametrize("dataset", ["aifb", "umls"])
@pytest.mark.parametrize("model", REAL_MODELS)
def test_variants_equal_none_on_real_graphs(compile_model, real_graphs, model, dataset):
    params, decls = MODELS[model]
    Model = compile_model(model, *params)
    g, graph = real_graphs[dataset]
    # Compaction has something to share on both graphs.
    assert graph.num_unique_src < graph.num_edges and graph.num_unique_dst < graph.num_edges
    layer = build_layer(Model, g, seed=5)
    torch.manual_seed(12)
    inputs = inputs_for(g, decls, F64)
    variants = assert_variant_equals_none(layer, graph, inputs, f"{model} on {dataset}")
    assert len(variants) > 1


# --- 3. gradcheck of the variants' backward ------------------------------------------------------

@pytest.mark.parametrize("model,variant", [("rgat", "both"), ("rgat", "both_logits"),
                                           ("rgat_pyg", "both_logits"), ("hgt", "compact")])
def test_variant_gradcheck_float64(compile_model, model, variant):
    params, decls = MODELS[model]
    Model = compile_model(model, *params)
    assert variant in Model.variants()
    g = awkward_graph(**SMALL[2])
    graph = make_graph(g)
    assert graph.num_unique_src < graph.num_edges   # the compacted operators have pairs to share
    layer = build_layer(Model, g, seed=7)
    assert gradcheck_layer(Model, graph, inputs_for(g, decls, F64), layer.weights(), variant)


# --- 4. the choice ------------------------------------------------------------------------------

def test_rgat_chooses_compaction_where_sources_are_shared(compile_model):
    Model = compile_model("rgat", *MODELS["rgat"][0])
    graph = sharing_graph()
    assert graph.num_edges / graph.num_unique_src >= 10
    layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes, dtype=F64)
    training = layer.chosen_variant(graph, training=True)
    assert training in ("compact", "both", "both_logits"), layer.explain(graph)
    inference = layer.chosen_variant(graph, training=False)
    assert choice_of(layer.explain(graph)) == (training, inference)
    # The default for `training`: grad mode and weights that require grad.
    assert layer.chosen_variant(graph) == training
    with torch.no_grad():
        assert layer.chosen_variant(graph) == inference


def test_hgt_chooses_none_without_sharing(compile_model):
    Model = compile_model("hgt", *MODELS["hgt"][0])
    graph = no_sharing_graph()
    assert graph.num_unique_src == graph.num_unique_dst == graph.num_edges
    layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes, dtype=F64)
    training = layer.chosen_variant(graph, training=True)
    inference = layer.chosen_variant(graph, training=False)
    assert (training, inference) == ("none", "none"), layer.explain(graph)
    assert choice_of(layer.explain(graph)) == (training, inference)


def test_memory_budget_chooses_a_variant_that_fits(compile_model):
    """Under a budget between two variants' estimated peaks the call runs the one that fits
    (not the cheapest); under every estimate it raises torch.OutOfMemoryError naming them all;
    the estimates follow the measured allocations (the live tensor bytes of a call)."""
    Model = compile_model("rgcn", *MODELS["rgcn"][0])
    graph = no_sharing_graph()   # "none" is the cheapest here, "compact" the smallest
    layer = build_layer(Model, graph, dtype=torch.float32)
    x = torch.randn(graph.num_nodes, Model.manifest["inputs"][0]["dims"][0])
    norm = torch.rand(graph.num_edges)
    peaks = {}
    for v in Model.variants():
        layer.variant = v
        peaks[v] = layer.memory_estimate(graph, training=True)
    layer.variant = "auto"
    cheapest = layer.chosen_variant(graph, training=True)
    smaller = {v: p for v, p in peaks.items() if p < peaks[cheapest]}
    assert smaller, peaks   # the cheapest is not the smallest on this graph
    try:
        hector.set_memory_budget((max(smaller.values()) + peaks[cheapest]) // 2)
        chosen = layer.chosen_variant(graph, training=True)
        assert chosen != cheapest and peaks[chosen] <= hector.memory_budget(), (chosen, peaks)
        assert "memory budget" in layer.explain(graph)
        hector.set_memory_budget(min(peaks.values()) // 2)
        with pytest.raises(torch.OutOfMemoryError, match=r"no variant fits the memory budget.*"
                                                         r"estimated peaks none "):
            layer(graph, x.requires_grad_(), norm)
    finally:
        hector.set_memory_budget(None)
    # The estimate against the allocations measured by the profiler's memory events.
    from torch.profiler import ProfilerActivity, profile
    layer.variant = cheapest
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        layer(graph, x, norm).sum().backward()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):   # + allocation, - free
        live += event.nbytes()
        peak = max(peak, live)
    assert 0.5 * peaks[cheapest] <= peak <= 1.5 * peaks[cheapest], (peak, peaks[cheapest])


@pytest.mark.parametrize("model", sorted(MODELS))
def test_explain_agrees_with_chosen_variant(compile_model, model):
    Model = compile_model(model, *MODELS[model][0])
    for graph in (sharing_graph(), no_sharing_graph(num_ntypes=1), make_graph(awkward_graph(0))):
        layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes)
        text = layer.explain(graph)
        assert choice_of(text) == (layer.chosen_variant(graph, training=True),
                                   layer.chosen_variant(graph, training=False)), text
        for v in Model.variants():
            assert re.search(rf"^  {v}: ", text, re.M), text


def cost_terms(graph):
    """The values of the manifests' cost terms N, E, U_src, U_dst, R, T, 1 on `graph`."""
    return [graph.num_nodes, graph.num_edges, graph.num_unique_src, graph.num_unique_dst,
            graph.num_relations, graph.num_ntypes, 1]


def two_byte_factor(ns, terms):
    """The bytes a 16-bit call of layer `ns` moves per byte of a float32 call, from its manifest's
    kernel traffic: (2 x 16-bit elements + 4 x wide ones) / (4 x all)."""
    traffic = layer_manifest(ns)["traffic"]
    every = sum(c * t for c, t in zip(traffic["elements"], terms))
    wide = sum(c * t for c, t in zip(traffic["wide"], terms))
    return (2 * (every - wide) + 4 * wide) / (4 * every)


def sixteen_bit_objective(ns, terms, balance=4.0):
    """flops + balance x bytes of layer `ns` in a 16-bit call (balance: the CPU's)."""
    cost = layer_manifest(ns)["cost"]
    flops = sum(c * t for c, t in zip(cost["flops"], terms))
    bytes_ = sum(c * t for c, t in zip(cost["bytes"], terms))
    return flops + balance * two_byte_factor(ns, terms) * bytes_


@pytest.mark.parametrize("model", ["rgcn", "rgat", "rgat_pyg", "hgt"])
def test_sixteen_bit_calls_weigh_two_byte_traffic(compile_model, model):
    """A bfloat16 call chooses among the variants with each one's bytes weighed by its share of
    2-byte traffic (the manifest's "traffic": a wide element moves 4 bytes, any other 2); for
    RGCN, which has no wide values, exactly one half; for the inference copy of the RGATs'
    "both_logits", whose messages are 16-bit, less than for "both"'s, whose logits are computed
    from its messages (a training call keeps the messages float32 for the backward). The
    choice recomputed here from the manifests is the one the runtime makes and explains; a
    float32 call's choice is unchanged."""
    Model = compile_model(model, *MODELS[model][0])
    for graph in (sharing_graph(), no_sharing_graph(num_ntypes=1)):
        layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes)
        terms = cost_terms(graph)
        names = [layer.manifest["namespace"]] + layer.manifest.get("variants", [])
        train, inference, inference_factor = {}, {}, {}
        for v, ns in zip(Model.variants(), names):
            lm = layer_manifest(ns)
            related = [ns, lm["backward"], lm["inference"]]
            factors = [two_byte_factor(n, terms) for n in related]
            if model == "rgcn":
                assert factors == [0.5] * 3, (v, factors)
            else:
                assert all(0.5 < f <= 1 for f in factors), (v, factors)
            train[v] = sixteen_bit_objective(ns, terms) + sixteen_bit_objective(lm["backward"],
                                                                                terms)
            inference[v] = sixteen_bit_objective(lm["inference"], terms)
            inference_factor[v] = factors[2]
        if model.startswith("rgat") and graph.num_unique_src == graph.num_edges:
            assert inference_factor["both_logits"] < inference_factor["both"] - 0.05, \
                inference_factor

        def cheapest(costs):   # the first (simplest) among equals, as the runtime chooses
            best = next(iter(costs))
            for v, c in costs.items():
                if c < costs[best] * (1 - 1e-9):
                    best = v
            return best

        expected = (cheapest(train), cheapest(inference))
        half = (layer.chosen_variant(graph, True, torch.bfloat16),
                layer.chosen_variant(graph, False, torch.float16))
        assert half == expected, (half, train, inference)
        text = layer.explain(graph)
        m = re.search(r"^  choice of 16-bit calls: training (\w+), inference (\w+)$", text, re.M)
        assert m and m.groups() == expected, text
        assert choice_of(text) == (layer.chosen_variant(graph, True, torch.float32),
                                   layer.chosen_variant(graph, False)), text


# --- 5. the runtime's choice is hectorc --explain's ----------------------------------------------

@pytest.mark.parametrize("graph_kind", ["sharing", "no_sharing", "awkward"])
def test_hectorc_explain_agrees_with_runtime(compile_model, graph_kind):
    params = MODELS["rgat"][0]
    Model = compile_model("rgat", *params)
    graph = {"sharing": sharing_graph, "no_sharing": lambda: no_sharing_graph(num_ntypes=1),
             "awkward": lambda: make_graph(awkward_graph(0))}[graph_kind]()
    layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes)
    ours = layer.explain(graph)
    theirs = hectorc_explain("rgat", params, graph)
    assert choice_of(ours) == choice_of(theirs), f"runtime:\n{ours}\nhectorc:\n{theirs}"
    # The estimates themselves: the same cost coefficients at the same sizes (balance 4 on both).
    def estimates(text):
        return re.findall(r"^  (\w+): (train=\S+ inference=\S+ largest=\S+)", text, re.M)
    assert estimates(ours) and estimates(ours) == estimates(theirs), \
        f"runtime:\n{ours}\nhectorc:\n{theirs}"
    assert " balance=4 " in ours and " balance=4 " in theirs


# --- 6. requesting a variant ---------------------------------------------------------------------

def test_absent_variant_is_a_value_error(compile_model):
    Model = compile_model("hgt", *MODELS["hgt"][0])
    assert "reorder" not in Model.variants()
    g = awkward_graph(0)
    graph = make_graph(g)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    layer.variant = "reorder"
    pattern = r"no variant 'reorder' \(this library has none, compact"
    with pytest.raises(ValueError, match=pattern):
        layer.chosen_variant(graph)
    with pytest.raises(ValueError, match=pattern):
        layer(graph, torch.randn(g.num_nodes, 8))
    layer.variant = "bogus"
    with pytest.raises(ValueError, match="no variant 'bogus'"):
        layer.chosen_variant(graph)


def test_hector_variant_environment_overrides_auto(compile_model, monkeypatch):
    Model = compile_model("rgat", *MODELS["rgat"][0])
    graph = sharing_graph()
    layer = Model(num_relations=graph.num_relations, num_ntypes=graph.num_ntypes)
    assert layer.chosen_variant(graph, training=True) != "none"   # so that the override shows
    monkeypatch.setenv("HECTOR_VARIANT", "none")
    assert layer.variant == "auto"
    assert layer.chosen_variant(graph, training=True) == "none"
    assert layer.chosen_variant(graph, training=False) == "none"
    # An explicit request wins over the environment.
    layer.variant = "compact"
    assert layer.chosen_variant(graph, training=True) == "compact"
    # The environment's request is checked like an explicit one.
    layer.variant = "auto"
    monkeypatch.setenv("HECTOR_VARIANT", "sideways")
    with pytest.raises(ValueError, match="no variant 'sideways'"):
        layer.chosen_variant(graph)


# --- 7. a library without variants --------------------------------------------------------------

def test_library_without_variants(compile_model, tmp_path):
    """--no-reorder --no-compact: the layer as written only; it computes what the full library's
    "none" variant computes (same parameters as test_training.py's rgcn; a distinct layer
    namespace, so both load in one process)."""
    params, decls = MODELS["rgcn"]
    out = tmp_path / "rgcn_plain.so"
    cmd = [str(BUILD / "bin" / "hectorc"), str(REPO / "examples" / "rgcn.hector"), "--target=cpu",
           "--no-reorder", "--no-compact", "-o", str(out)]
    for p in params:
        cmd += ["-P", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    Plain = hector.load(out)
    Full = compile_model("rgcn", *params)
    assert Plain.manifest["namespace"] != Full.manifest["namespace"]
    assert Plain.variants() == ["none"]
    assert len(Full.variants()) > 1
    g = awkward_graph(0)
    graph = make_graph(g)
    layer = build_layer(Plain, g)
    assert layer.chosen_variant(graph, training=True) == "none"
    assert choice_of(layer.explain(graph)) == ("none", "none")
    layer.variant = "compact"
    with pytest.raises(ValueError, match=r"no variant 'compact' \(this library has none;"):
        layer.chosen_variant(graph)
    layer.variant = "auto"
    full = Full(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=F64)
    full.load_state_dict(layer.state_dict())
    inputs = inputs_for(g, decls, F64)
    got, got_grads, _, up = run(layer, graph, inputs, "auto")
    want, want_grads, _, _ = run(full, graph, inputs, "none", up)
    for a, b in zip(got + got_grads, want + want_grads):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
