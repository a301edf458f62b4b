"""16-bit layers: bfloat16 and float16 tensors go into every example model and come out in
their dtype, computed in float32 inside. The oracle is PyTorch: a float64 run of the plain
reference (references.py) on the same 16-bit-rounded inputs and weights, so that the only error
left is the kernels' float32 arithmetic and the final rounding to 16 bits. The bound is the
issue's: max |error| <= 2^-7 * max |reference|, for the output and for every gradient, on the
awkward graphs and with softmax inputs of large magnitude."""
import copy

import pytest
import torch

import hector
from references import awkward_graph, hgt_reference, rgat_hector_reference, rgat_pyg, rgcn_reference

HALF = [torch.bfloat16, torch.float16]
BOUND = 2.0 ** -7
GRAPHS = [dict(seed=0), dict(seed=1, num_relations=1), dict(seed=2, num_nodes=9, num_edges=30)]


def make_graph(g):
    return hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                        num_relations=g.num_relations, num_ntypes=g.num_ntypes)


def rounded(t, dtype, ref_dtype):
    """t rounded to dtype, as a leaf of ref_dtype (the reference's input)."""
    return t.detach().to(dtype).to(ref_dtype).requires_grad_()


def run_reference(reference, inputs, weights, dtype, ref_dtype, grad_out):
    """The reference's output and gradients in ref_dtype, on inputs and weights rounded to
    dtype: (output, [input gradients], {weight name: gradient})."""
    ins = [rounded(x, dtype, ref_dtype) for x in inputs]
    ws = {n: rounded(p, dtype, ref_dtype) for n, p in weights}
    out = reference(ins, ws)
    if isinstance(out, tuple):  # (output, the leaves that hold the weights' gradients)
        out, leaves = out
        ws.update(leaves)
    out.backward(grad_out.to(ref_dtype))
    return (out.detach().double(), [x.grad.double() for x in ins],
            {n: w.grad.double() for n, w in ws.items() if w.grad is not None})


def assert_within_bound(actual, exact, single, what):
    """max |actual - exact| <= 2^-7 max |exact|, plus what float32 itself cannot resolve: 16
    times the error of PyTorch's own float32 evaluation (`single`) of the same reference, for a
    gradient that is a small difference of large terms or exactly zero (16 x 2^-24 of the terms
    stays far below the 2^-9 that a 16-bit intermediate would cost)."""
    assert actual is not None, f"{what}: no gradient"
    scale = exact.abs().max().item()
    err = (actual.double() - exact).abs().max().item()
    float32_err = (single - exact).abs().max().item()
    allowed = BOUND * scale + 16 * float32_err
    assert err <= max(allowed, 1e-30), (f"{what}: max error {err:.3g}, scale {scale:.3g}, "
                                        f"float32 reference error {float32_err:.3g}")


def check_layer(layer, dtype, graph, inputs, reference, weight_grads=True):
    """Runs `layer` in `dtype` on `inputs` (float32 tensors, rounded to dtype) and compares the
    output and the gradients of every input and weight with reference(inputs, weights) in
    float64 on the same rounded values; with each optimisation variant the library carries, each
    of which keeps its own set of values in float32 (LayerPlan::wide). `weight_grads=False`
    leaves out the weights' gradients."""
    for variant in type(layer).variants():
        each = copy.deepcopy(layer)
        each.variant = variant
        check_variant(each, dtype, graph, inputs, reference, f"variant {variant!r}",
                      weight_grads)


def check_variant(layer, dtype, graph, inputs, reference, which, weight_grads):
    weights = [(n, p.detach().clone()) for n, p in layer.named_parameters()]
    layer = layer.to(dtype)
    ins = [x.detach().to(dtype).requires_grad_() for x in inputs]
    out = layer(graph, *ins)
    assert out.dtype == dtype
    seed = torch.Generator().manual_seed(7)
    grad_out = torch.randn(out.shape, generator=seed).to(dtype)
    out.backward(grad_out)
    exact = run_reference(reference, inputs, weights, dtype, torch.float64, grad_out)
    single = run_reference(reference, inputs, weights, dtype, torch.float32, grad_out)
    assert_within_bound(out, exact[0], single[0], f"{which}: output")
    for i, x in enumerate(ins):
        assert x.grad.dtype == dtype
        assert_within_bound(x.grad, exact[1][i], single[1][i], f"{which}: gradient of input {i}")
    if not weight_grads:
        return
    checked = 0
    for n, p in layer.named_parameters():
        if n not in exact[2]:
            continue
        assert p.grad.dtype == dtype, n
        want = exact[2][n]
        assert_within_bound(p.grad.reshape(want.shape), want, single[2][n],
                            f"{which}: gradient of {n}")
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("gkw", GRAPHS)
def test_rgcn(compile_model, dtype, gkw):
    Model = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(**gkw)
    torch.manual_seed(0)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(g.num_nodes, 6)
    ones = torch.ones(g.src.numel())

    def reference(ins, w):
        return rgcn_reference(g, ins[0], w["W"], w["root"], w["bias"], norm=ins[1])

    check_layer(layer, dtype, make_graph(g), [x, ones], reference)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("gkw", GRAPHS)
@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["unit", "large-logits"])
def test_rgat(compile_model, dtype, gkw, scale):
    """scale 30: softmax inputs in the hundreds, where rounding a logit to 16 bits would move
    an attention weight by far more than 2^-7."""
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(2)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    x = torch.randn(g.num_nodes, 6) * scale

    def reference(ins, w):
        return rgat_hector_reference(g, ins[0], w["W"], w["a_src"], w["a_dst"], 0.2)

    check_layer(layer, dtype, make_graph(g), [x], reference)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("gkw", GRAPHS)
def test_rgat_pyg(compile_model, dtype, gkw):
    Model = compile_model("rgat_pyg", "in=6", "d=3", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(3)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(g.num_nodes, 6) * 10
    R = g.num_relations

    def reference(ins, w):
        conv, out = rgat_pyg(g, ins[0], w["W"].view(R, 6, 2, 3), w["q"], w["k"], w["bias"])
        return out, {"W": conv.weight, "q": conv.q, "k": conv.k, "bias": conv.bias}

    check_layer(layer, dtype, make_graph(g), [x], reference)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("gkw", GRAPHS)
@pytest.mark.parametrize("scale", [4.0, 30.0], ids=["unit", "large-logits"])
def test_hgt(compile_model, dtype, gkw, scale):
    """scale 30: logits in the hundreds, where the attention weights' gradients g_alpha = g_h . v
    must come from float32 messages (16-bit ones left the input gradient 3% off). There the
    attention saturates and the keys' weight gradients vanish (exactly ~1e-15, a cancellation
    that float32 resolves no better): only the output and the input gradient are checked."""
    Model = compile_model("hgt", "in=8", "out=8", "H=2")
    g = awkward_graph(**gkw)
    torch.manual_seed(4)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    with torch.no_grad():
        for p in (layer.bk, layer.bq, layer.bv, layer.bA, layer.mu, layer.skip):
            p.normal_()
    x = torch.randn(g.num_nodes, 8) * scale

    def reference(ins, w):
        return hgt_reference(g, ins[0], w["Wk"], w["bk"], w["Wq"], w["bq"], w["Wv"], w["bv"],
                             w["W_att"], w["W_msg"], w["mu"], w["A"], w["bA"], skip=w["skip"])

    check_layer(layer, dtype, make_graph(g), [x], reference, weight_grads=scale < 10)


def test_dtype_errors_name_the_tensor(compile_model):
    Model = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(0)
    graph = make_graph(g)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    ones = torch.ones(g.src.numel())
    x = torch.randn(g.num_nodes, 6)
    with pytest.raises(TypeError, match=r"input 'x' must be float32, float64, bfloat16 or "
                                        r"float16.*got Long"):
        layer(graph, x.long(), ones)
    # float16 features with float64 weights.
    with pytest.raises(TypeError, match=r"weight 'W' has dtype Double but input 'x' is Half"):
        layer.double()(graph, x.half(), ones)
    # bfloat16 and float16 in one call.
    layer.float()
    with pytest.raises(TypeError, match=r"input 'norm' has dtype Half but input 'x' is BFloat16"):
        layer.bfloat16()(graph, x.bfloat16(), ones.half())
    # Nothing was changed by the failed calls: a valid call works.
    out = layer(graph, x.bfloat16(), ones)
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()


def test_float32_weights_keep_float32_gradients(compile_model):
    """bfloat16 features with float32 weights in a softmax layer: the output is bfloat16; the
    weights the logits are computed from stay float32 in the call (they are wide), and every
    weight's gradient is float32, within the bound of the gradients of a float32 call on the
    rounded features."""
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(1)
    graph = make_graph(g)
    torch.manual_seed(6)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    x = (torch.randn(g.num_nodes, 6) * 10).to(torch.bfloat16)
    out = layer(graph, x)
    assert out.dtype == torch.bfloat16
    out.float().square().sum().backward()
    mixed = {n: p.grad.clone() for n, p in layer.named_parameters()}
    layer.zero_grad()
    ref = layer(graph, x.float())
    ref.to(torch.bfloat16).float().square().sum().backward()
    for n, p in layer.named_parameters():
        assert mixed[n].dtype == torch.float32, n
        err = (mixed[n] - p.grad).abs().max().item()
        assert err <= BOUND * p.grad.abs().max().item(), (n, err)


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("model", ["rgat", "rgcn"])
def test_autocast_casts_like_linear(compile_model, dtype, model):
    """Under torch.autocast a compiled layer is on the lower-precision list, as `linear` is:
    float32 features and weights (and any floating input) are cast to the autocast dtype, the
    output is in that dtype and equals a call on the casts outside autocast, bit for bit; the
    float32 master weights get float32 gradients equal to those through an explicit cast;
    float64 stays float64."""
    Model = compile_model(*{"rgat": ("rgat", "in=6", "d=3", "H=2"),
                            "rgcn": ("rgcn", "in=6", "out=5")}[model])
    g = awkward_graph(0)
    graph = make_graph(g)
    torch.manual_seed(8)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    # RGCN's per-edge norm is a floating input too: autocast casts it.
    xs = [torch.randn(g.num_nodes, 6)] + ([torch.rand(g.src.numel())] if model == "rgcn" else [])
    with torch.autocast("cpu", dtype=dtype):
        out = layer(graph, *xs)
    assert out.dtype == dtype
    out.float().square().sum().backward()
    amp = {n: p.grad.clone() for n, p in layer.named_parameters()}
    layer.zero_grad()

    # By hand: the same casts outside autocast. The gradient of a float32 master weight is
    # that of its 16-bit cast, converted (the cast's backward).
    half = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    half.load_state_dict(layer.state_dict())
    half = half.to(dtype)
    by_hand = half(graph, *[x.to(dtype) for x in xs])
    assert torch.equal(by_hand, out)
    by_hand.float().square().sum().backward()
    for n, p in half.named_parameters():
        assert amp[n].dtype == torch.float32, n
        torch.testing.assert_close(amp[n], p.grad.float(), rtol=0, atol=0, msg=n)

    layer64 = layer.double()
    x64 = [x.double() for x in xs]
    with torch.autocast("cpu", dtype=dtype):
        out64 = layer64(graph, *x64)
    assert out64.dtype == torch.float64 and torch.equal(out64, layer64(graph, *x64))


def test_sixteen_bit_storage(compile_model):
    """Every example layer (its variants and backward layers too) runs 16-bit calls on 16-bit
    rows; a softmax layer (both RGATs, HGT) keeps the values an exponential reads, and its per-head
    rows (logits, attention weights and their gradients), in float32. The memory estimate of a
    bfloat16 call counts 2 bytes an element and 4 for those: for RGCN, whose wide values are only
    its weight gradients' float partials, close to half the float32 estimate; for the softmax
    layers between half and all of it. The manifest says which tensors are wide, and which part
    of the kernels' traffic (none for RGCN)."""
    from hector.module import layer_manifest

    g = awkward_graph(0)
    graph = make_graph(g)
    for args in [("rgcn", "in=6", "out=5"), ("rgat", "in=6", "d=3", "H=2"),
                 ("rgat_pyg", "in=6", "d=3", "H=2"), ("hgt", "in=8", "out=8", "H=2")]:
        Model = compile_model(*args)
        layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
        m = layer.manifest
        variants = m.get("variants", [])
        related = [m["namespace"], m["backward"], m["inference"]] + variants
        related += [layer_manifest(ns)[k] for ns in variants for k in ("backward", "inference")]
        wide = wide_traffic = 0.0
        for ns in related:
            lm = layer_manifest(ns)
            assert lm["sixteen_bit_storage"] is True, (args[0], ns)
            wide += sum(sum(point) for point in lm["memory"]["wide_points"])
            # The kernels' traffic in elements, and its wide part, term by term.
            traffic = lm["traffic"]
            assert sum(traffic["elements"]) > 0, (args[0], ns)
            assert all(0 <= w <= e for w, e in zip(traffic["wide"], traffic["elements"])), \
                (args[0], ns, traffic)
            wide_traffic += sum(traffic["wide"])
        if args[0] != "rgcn":
            assert wide > 0 and wide_traffic > 0, args[0]
        else:
            assert wide_traffic == 0
        single = layer.memory_estimate(graph, training=True, dtype=torch.float32)
        half = layer.memory_estimate(graph, training=True, dtype=torch.bfloat16)
        # estimate = elements x element size + graph structures
        structures = 2 * single - layer.memory_estimate(graph, training=True, dtype=torch.float64)
        assert (single + structures) / 2 <= half < single, args[0]
        if args[0] == "rgcn":
            assert half == pytest.approx((single + structures) / 2, rel=1e-3), args[0]
        else:
            assert half > (single + structures) / 2 * 1.01, args[0]


def test_sixteen_bit_storage_float32_weights(compile_model):
    """bfloat16 features with float32 weights in a layer in 16-bit storage (RGCN): the weights
    are rounded to bfloat16 for the call, as torch.autocast would; the output is bit for bit
    that of a call with the rounded weights, and the weights' float32 gradients are the
    rounded weights' gradients, converted."""
    Model = compile_model("rgcn", "in=6", "out=5")
    g = awkward_graph(1)
    graph = make_graph(g)
    torch.manual_seed(9)
    layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(g.num_nodes, 6).to(torch.bfloat16)
    norm = torch.rand(g.src.numel()).to(torch.bfloat16)
    out = layer(graph, x, norm)
    assert out.dtype == torch.bfloat16
    g_out = torch.randn(out.shape).to(torch.bfloat16)
    out.backward(g_out)
    half = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    half.load_state_dict(layer.state_dict())
    half = half.to(torch.bfloat16)
    by_hand = half(graph, x, norm)
    assert torch.equal(by_hand, out)
    by_hand.backward(g_out)
    for n, p in half.named_parameters():
        got = dict(layer.named_parameters())[n].grad
        assert got.dtype == torch.float32, n
        torch.testing.assert_close(got, p.grad.float(), rtol=0, atol=0, msg=n)


@pytest.mark.parametrize("switch", ["allow_tf32", "matmul_precision"])
def test_tf32_switch_leaves_cpu_results_exact(compile_model, switch):
    """PyTorch's TF32 switch for matrix products (read by every call: on CUDA, float32 GEMMs then
    run on TF32 tensor cores) changes nothing on the CPU: float32 outputs and gradients stay
    bit-for-bit those of a call with the switch off, and float64 is never rounded."""
    Model = compile_model("rgat", "in=6", "d=3", "H=2")
    g = awkward_graph(2)
    graph = make_graph(g)

    def run(dtype):
        torch.manual_seed(9)
        layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
        x = torch.randn(g.num_nodes, 6, dtype=dtype, requires_grad=True)
        out = layer(graph, x)
        grads = torch.autograd.grad(out.square().sum(), [x, *layer.parameters()])
        return [out.detach(), *grads]

    off = {dtype: run(dtype) for dtype in (torch.float32, torch.float64)}
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())
    try:
        if switch == "allow_tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
        else:
            torch.set_float32_matmul_precision("high")
        assert torch.backends.cuda.matmul.allow_tf32
        on = {dtype: run(dtype) for dtype in (torch.float32, torch.float64)}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved[0]
        torch.set_float32_matmul_precision(saved[1])
    for dtype in on:
        for a, b in zip(on[dtype], off[dtype]):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
