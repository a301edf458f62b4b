"""Random models for differential testing: each is a well-typed `.hector` layer and, built with it
from the same expression trees, a plain PyTorch function computing what the layer means
(docs/language.md). test_user_models.py compiles a few fixed seeds and compares every variant's
outputs and gradients with PyTorch's autograd through the reference; run this file for more:

    .venv/bin/python test/python/random_models.py --seeds 0-199     # HECTOR_BUILD_DIR as in tests

prints each failing seed with its model text and the first difference, and exits 1 if any failed.

The generator covers edge and node statements, `src.`/`dst.`, edge inputs, relation-, node-type-
sliced and unsliced weights as values and in `linear`, `dot`, `concat`, heads (`split_heads`,
`merge_heads`, head-wise broadcasting), `sum`/`mean`/`max` aggregation, `softmax`, the unary
functions, `+ - * /` with scalar and head broadcasting, per-head `linear`, `src_row` (relation-
sliced and unsliced tables), derived weights
(`matmul`), sub-layer instances and calls, and edge and node outputs. A `max` argument
always adds the random edge input, so that no two edges tie (a tie has no unique gradient);
divisions are by `2 + tanh(...)` and `exp` reads a `tanh`, so values stay finite.
"""
from __future__ import annotations

import dataclasses
import pathlib
import random
from typing import Callable

import torch

from references import edge_softmax

H = 2            # the `heads H` parameter of every random layer
TABLE_ROWS = 48  # rows of the tables src_row reads (at least the nodes of check_layer's graphs)
HEAD_D = 3       # per-head width of [Hh, d] values
WIDTHS = [2, 4, 6]
# Row shapes: () scalar, (k,) vector, ("h",) one per head, ("h", HEAD_D) a vector per head.
SHAPES = [(), (2,), (4,), (6,), ("h",), ("h", HEAD_D)]


def dims_text(shape) -> str:
    return ", ".join("H" if d == "h" else str(d) for d in shape)


def torch_dims(shape) -> tuple[int, ...]:
    return tuple(H if d == "h" else d for d in shape)


@dataclasses.dataclass
class Expr:
    text: str
    fn: Callable      # fn(env) -> tensor [rows, *torch_dims(shape)] (or a 0-d constant)
    shape: tuple
    varies: bool      # depends on the row (a node / edge), not only on weights and constants


@dataclasses.dataclass
class Weight:
    name: str
    slicing: str      # "relation", "ntype" or "none"
    dims: tuple
    derived: tuple | None = None    # (A, B) of `weight NAME = matmul(A, B);`


class Env:
    """What a reference function reads: the graph, the inputs and values, the weights."""

    def __init__(self, g, values, weights):
        self.g, self.values, self.weights = g, values, weights

    def rows_of(self, ctx):
        return self.g.num_nodes if ctx == "node" else self.g.src.numel()


def scatter_dst(g, rows, kind):
    shape = (g.num_nodes,) + rows.shape[1:]
    if kind == "max":
        idx = g.dst.view(-1, *([1] * (rows.dim() - 1))).expand_as(rows)
        return torch.zeros(shape, dtype=rows.dtype).scatter_reduce(0, idx, rows, "amax",
                                                                   include_self=False)
    out = torch.zeros(shape, dtype=rows.dtype).index_add(0, g.dst, rows)
    if kind == "mean":
        count = torch.bincount(g.dst, minlength=g.num_nodes).clamp(min=1).to(rows.dtype)
        out = out / count.view(-1, *([1] * (rows.dim() - 1)))
    return out


def broadcast(t, shape, to):
    """A row tensor of row shape `shape` viewed for the language's prefix broadcasting to `to`."""
    if not isinstance(t, torch.Tensor):
        return t
    extra = len(to) - len(shape)
    return t.reshape(t.shape + (1,) * extra) if extra > 0 else t


class Generator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.weights: list[Weight] = []
        self.node_values: list[tuple[str, tuple]] = [("x", (6,))]
        self.edge_values: list[tuple[str, tuple]] = [("ew", ())]
        self.derived_weights: list[tuple[str, str, str]] = []
        self.sub: RandomModel | None = None        # the sub-layer of the instance `s`
        self.sub_kind, self.sub_shape, self.in_call = None, None, False
        self.statements: list[tuple[str, str, Expr]] = []   # (kind, name, expr)

    # --- helpers -------------------------------------------------------------------------------

    def chance(self, p):
        return self.rng.random() < p

    def weight(self, slicing, dims) -> str:
        name = f"w{len(self.weights)}"
        self.weights.append(Weight(name, slicing, tuple(dims)))
        return name

    def weight_rows(self, name, slicing, ctx):
        """fn(env) -> the weight's slice for every row of `ctx`."""
        def fn(env):
            w = env.weights[name]
            if slicing == "relation":
                return w[env.g.etype]
            if slicing == "ntype":
                return w[env.g.ntype]
            return w.unsqueeze(0).expand((env.rows_of(ctx),) + tuple(w.shape))
        return fn

    # --- expressions ---------------------------------------------------------------------------

    def varying_leaf(self, ctx, shape) -> Expr:
        """A row-varying expression of any shape: a linear map of x (x itself for [6])."""
        if ctx == "node":
            src = Expr("x", lambda env: env.values["x"], (6,), True)
        else:
            side = self.rng.choice(["src", "dst"])
            src = Expr(f"{side}.x", lambda env, s=side: env.values["x"][getattr(env.g, s)], (6,),
                       True)
        if shape == (6,) and self.chance(0.5):
            return src
        if ctx == "edge" and shape == () and self.chance(0.5):
            return Expr("ew", lambda env: env.values["ew"], (), True)
        if ctx == "edge" and "h" not in shape and self.chance(0.15):
            return self.src_row(shape)
        return self.linear(ctx, src, shape, allow_sliced=True)

    def src_row(self, shape) -> Expr:
        """src_row(W): row src of the edge's relation slice of W [TABLE_ROWS, shape...], or of
        an unsliced W (the featureless input); W has no head dimension."""
        slicing = self.rng.choice(["relation", "none"])
        name = self.weight(slicing, (TABLE_ROWS,) + tuple(shape))

        def fn(env, name=name, slicing=slicing):
            w = env.weights[name]
            return w[env.g.etype, env.g.src] if slicing == "relation" else w[env.g.src]
        return Expr(f"src_row({name})", fn, shape, True)

    def linear(self, ctx, a: Expr, shape, allow_sliced) -> Expr:
        per_head = a.shape[:1] == ("h",)        # [Hh, k] . [Hh, k, m] per head
        k = a.shape[-1]
        if per_head:
            wdims = ("h", k, HEAD_D)
        elif shape and shape[0] == "h":
            wdims = (k, "h") if len(shape) == 1 else (k, "h", HEAD_D)
        else:
            wdims = (k,) + tuple(shape)
        slicings = ["none"]
        if allow_sliced and a.varies:     # a sliced weight needs a per-row input
            slicings += ["relation"] if ctx == "edge" else ["ntype"]
        slicing = self.rng.choice(slicings)
        if not per_head and self.chance(0.2):
            name = self.derived(slicing, wdims)
        else:
            name = self.weight(slicing, wdims)
        rows = self.weight_rows(name, slicing, ctx)

        def fn(env, a=a, rows=rows):
            x = a.fn(env)
            if per_head:
                return torch.einsum("rhk,rhkm->rhm", x, rows(env))
            return torch.einsum("rk,rk...->r...", x, rows(env))
        return Expr(f"linear({a.text}, {name})", fn, shape, a.varies)

    def derived(self, slicing, dims) -> str:
        """A weight `matmul(A, B)` of these dimensions: A [k, j] (sliced as asked), B [j, ...]."""
        j = self.rng.choice(WIDTHS)
        a = self.weight(slicing, (dims[0], j))
        b = self.weight("none", (j,) + tuple(dims[1:]))
        name = f"w{len(self.weights)}"
        self.derived_weights.append((name, a, b))
        self.weights.append(Weight(name, slicing, tuple(dims), derived=(a, b)))
        return name

    def gen(self, ctx, shape, depth) -> Expr:
        """A random expression of row shape `shape` in a `ctx` ("node" / "edge") statement."""
        options = ["leaf", "leaf"]
        if depth > 0:
            options += ["unary", "binary", "binary", "linear"]
            if shape == ():
                options += ["dot"]
            if shape == ("h",):
                options += ["dot_heads"]
            if shape == ("h", HEAD_D):
                options += ["split"]
            if shape == (6,):
                options += ["merge"]
            if shape in [(4,), (6,)]:
                options += ["concat"]
            if ctx == "node":
                options += ["aggregate", "aggregate"]
            if ctx == "edge" and shape in [(), ("h",)]:
                options += ["softmax"]
        kind = self.rng.choice(options)
        d = depth - 1
        if kind == "leaf":
            return self.leaf(ctx, shape)
        if kind == "unary":
            a = self.gen(ctx, shape, d)
            fname = self.rng.choice(["relu", "tanh", "sigmoid", "gelu", "leaky_relu", "neg",
                                     "exp"])
            if fname == "neg":
                return Expr(f"-({a.text})", lambda env, a=a: -a.fn(env), shape, a.varies)
            if fname == "exp":
                return Expr(f"exp(tanh({a.text}))",
                            lambda env, a=a: torch.exp(torch.tanh(a.fn(env))), shape, a.varies)
            if fname == "leaky_relu":
                return Expr(f"leaky_relu({a.text}, 0.2)",
                            lambda env, a=a: torch.nn.functional.leaky_relu(a.fn(env), 0.2),
                            shape, a.varies)
            fns = {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
                   "gelu": torch.nn.functional.gelu}
            return Expr(f"{fname}({a.text})", lambda env, a=a, f=fns[fname]: f(a.fn(env)), shape,
                        a.varies)
        if kind == "binary":
            op = self.rng.choice(["+", "-", "*", "/"])
            # The other operand: the same shape, a scalar, or the head prefix of [Hh, d].
            other_shapes = [shape, ()]
            if shape == ("h", HEAD_D):
                other_shapes.append(("h",))
            bshape = self.rng.choice(other_shapes)
            a, b = self.gen(ctx, shape, d), self.gen(ctx, bshape, d)
            if self.chance(0.5) and op != "/":
                a, b = b, a
            sa, sb = a.shape, b.shape

            def fn(env, a=a, b=b, op=op, sa=sa, sb=sb):
                x, y = broadcast(a.fn(env), sa, shape), broadcast(b.fn(env), sb, shape)
                if op == "+":
                    return x + y
                if op == "-":
                    return x - y
                if op == "*":
                    return x * y
                return x / (2 + torch.tanh(y))
            text = (f"({a.text}) / (2 + tanh({b.text}))" if op == "/"
                    else f"({a.text}) {op} ({b.text})")
            return Expr(text, fn, shape, a.varies or b.varies)
        if kind == "linear":
            if shape == ("h", HEAD_D) and self.chance(0.4):
                a = self.gen(ctx, ("h", HEAD_D), d)
            else:
                a = self.gen(ctx, (self.rng.choice(WIDTHS),), d)
            return self.linear(ctx, a, shape, allow_sliced=True)
        if kind == "dot":
            k = self.rng.choice(WIDTHS)
            a, b = self.gen(ctx, (k,), d), self.gen(ctx, (k,), d)
            return Expr(f"dot({a.text}, {b.text})",
                        lambda env, a=a, b=b: (a.fn(env) * b.fn(env)).sum(-1), (),
                        a.varies or b.varies)
        if kind == "dot_heads":
            a, b = self.gen(ctx, ("h", HEAD_D), d), self.gen(ctx, ("h", HEAD_D), d)
            return Expr(f"dot({a.text}, {b.text})",
                        lambda env, a=a, b=b: (a.fn(env) * b.fn(env)).sum(-1), ("h",),
                        a.varies or b.varies)
        if kind == "split":
            a = self.gen(ctx, (H * HEAD_D,), d)
            return Expr(f"split_heads({a.text}, H)",
                        lambda env, a=a: a.fn(env).reshape(-1, H, HEAD_D), shape, a.varies)
        if kind == "merge":
            a = self.gen(ctx, ("h", HEAD_D), d)
            return Expr(f"merge_heads({a.text})",
                        lambda env, a=a: a.fn(env).reshape(-1, H * HEAD_D), shape, a.varies)
        if kind == "concat":
            n = shape[0]
            first = self.rng.choice([w for w in WIDTHS if w < n])
            a, b = self.gen(ctx, (first,), d), self.gen(ctx, (n - first,), d)
            return Expr(f"concat({a.text}, {b.text})",
                        lambda env, a=a, b=b: torch.cat([a.fn(env), b.fn(env)], -1), shape,
                        a.varies or b.varies)
        if kind == "softmax":
            a = self.force_varying("edge", self.gen("edge", shape, d))
            return Expr(f"softmax({a.text})",
                        lambda env, a=a: edge_softmax(a.fn(env), env.g.dst, env.g.num_nodes),
                        shape, True)
        if kind == "aggregate":
            agg = self.rng.choice(["sum", "mean", "max"])
            a = self.force_varying("edge", self.gen("edge", shape, d))
            if agg == "max":      # distinct per edge: no ties
                a = Expr(f"({a.text}) + ew",
                         lambda env, a=a: a.fn(env) + broadcast(env.values["ew"], (), shape),
                         shape, True)
            return Expr(f"{agg}({a.text})",
                        lambda env, a=a, agg=agg: scatter_dst(env.g, a.fn(env), agg), shape, True)
        raise AssertionError(kind)

    def leaf(self, ctx, shape) -> Expr:
        options = []
        call = self.call(ctx, shape) if self.chance(0.5) else None
        if call:
            return call
        for name, s in self.node_values:
            if s == shape:
                if ctx == "node":
                    options.append(Expr(name, lambda env, n=name: env.values[n], shape, True))
                else:
                    for side in ("src", "dst"):
                        options.append(Expr(
                            f"{side}.{name}",
                            lambda env, n=name, s=side: env.values[n][getattr(env.g, s)],
                            shape, True))
        if ctx == "edge":
            for name, s in self.edge_values:
                if s == shape:
                    options.append(Expr(name, lambda env, n=name: env.values[n], shape, True))
        if self.chance(0.3):
            slicing = self.rng.choice(["none", "relation" if ctx == "edge" else "ntype"])
            name = self.weight(slicing, shape)
            rows = self.weight_rows(name, slicing, ctx)
            return Expr(name, lambda env, rows=rows: rows(env), shape, False)
        if shape == () and self.chance(0.2):
            c = self.rng.choice([0.5, 2, 1.5])
            return Expr(str(c), lambda env, c=c: torch.tensor(float(c), dtype=torch.float64),
                        shape, False)
        if not options:
            return self.varying_leaf(ctx, shape)
        return self.rng.choice(options)

    def force_varying(self, ctx, e: Expr) -> Expr:
        if e.varies:
            return e
        v = self.varying_leaf(ctx, e.shape)
        return Expr(f"({e.text}) + ({v.text})",
                    lambda env, e=e, v=v: e.fn(env) + v.fn(env), e.shape, True)

    # --- a layer -------------------------------------------------------------------------------

    def call(self, ctx, shape) -> Expr | None:
        """A call of the sub-layer instance `s` when its output has this kind and shape."""
        if not self.sub or self.in_call or self.sub_kind != ctx or self.sub_shape != shape:
            return None
        self.in_call = True       # arguments hold no further calls
        ax = self.force_varying("node", self.gen("node", (6,), 0))
        aew = self.force_varying("edge", self.gen("edge", (), 0))
        self.in_call = False
        sub = self.sub

        def fn(env, ax=ax, aew=aew):
            weights = {k[2:]: v for k, v in env.weights.items() if k.startswith("s.")}
            return sub.reference(env.g, ax.fn(env), aew.fn(env), weights)[0]
        return Expr(f"s({ax.text}, {aew.text})", fn, shape, True)

    def layer(self, name="random_layer", single_output=False, sub_seed=None):
        """The layer's text and outputs; with `sub_seed`, a sub-layer of that seed first (an
        instance `s` that the statements may call)."""
        prefix = ""
        if sub_seed is not None:
            subgen = Generator(sub_seed)
            sub_text, sub_outputs = subgen.layer(f"{name}_sub", single_output=True)
            self.sub = RandomModel(sub_text, sub_outputs, subgen.weights, subgen.statements)
            kind, _, e = subgen.statements[-1]
            self.sub_kind, self.sub_shape = kind, e.shape
            prefix = sub_text
        count = self.rng.randint(2, 4)
        for i in range(count):
            kind = self.rng.choice(["node", "edge"])
            shape = self.rng.choice(SHAPES)
            if self.sub and i == 0:       # the first statement calls the sub-layer
                kind, shape = self.sub_kind, self.sub_shape
                e = self.call(kind, shape)
                if self.chance(0.5):
                    other = self.gen(kind, shape, 1)
                    e = Expr(f"({e.text}) * ({other.text})",
                             lambda env, a=e, b=other: a.fn(env) * b.fn(env), shape, True)
            else:
                e = self.force_varying(kind, self.gen(kind, shape, self.rng.randint(1, 3)))
            vname = f"v{i}"
            self.statements.append((kind, vname, e))
            (self.node_values if kind == "node" else self.edge_values).append((vname, shape))
        outputs = [self.statements[-1][1]]
        if not single_output and len(self.statements) > 1 and self.chance(0.4):
            outputs.insert(0, self.statements[self.rng.randrange(len(self.statements) - 1)][1])
        lines = [f"layer {name}(heads H = {H}) {{", "  input x: node[6];", "  input ew: edge[];"]
        if self.sub:
            lines.append(f"  layer s = {name}_sub();")
        for w in self.weights:
            slicing = "" if w.slicing == "none" else w.slicing + " "
            if w.derived:
                lines.append(f"  weight {w.name} = matmul({w.derived[0]}, {w.derived[1]});")
            else:
                lines.append(f"  weight {w.name}: {slicing}[{dims_text(w.dims)}];")
        for kind, vname, e in self.statements:
            lines.append(f"  {kind} {vname} = {e.text};")
        lines.append(f"  output {', '.join(outputs)};")
        lines.append("}")
        return prefix + "\n".join(lines) + "\n", outputs


@dataclasses.dataclass
class RandomModel:
    text: str
    outputs: list[str]
    weights: list[Weight]
    statements: list

    def reference(self, g, x, ew, weights: dict[str, torch.Tensor]):
        """The layer's outputs, computed by PyTorch from the expression trees."""
        weights = dict(weights)
        for w in self.weights:
            if w.derived:
                a, b = weights[w.derived[0]], weights[w.derived[1]]
                weights[w.name] = torch.tensordot(a, b, dims=([a.dim() - 1], [0]))
        env = Env(g, {"x": x, "ew": ew}, weights)
        for _, vname, e in self.statements:
            env.values[vname] = e.fn(env)
        return tuple(env.values[o] for o in self.outputs)


def random_model(seed: int) -> RandomModel:
    """The random layer `random_<seed>` (a third of them with a sub-layer)."""
    gen = Generator(seed)
    sub_seed = 1_000_000 + seed if seed % 3 == 2 else None
    text, outputs = gen.layer(f"random_{seed}", sub_seed=sub_seed)
    return RandomModel(text, outputs, gen.weights, gen.statements)


def compile_models(hectorc, models: dict[int, RandomModel], directory) -> tuple[dict, dict]:
    """Compiles the layers of `models` (seed -> model) into one library (one C++ compile), or,
    when that fails, each alone. Returns ({seed: module class}, {seed: hectorc's error})."""
    import subprocess

    import hector

    directory = pathlib.Path(directory)

    def build(seeds, stem):
        src = directory / f"{stem}.hector"
        src.write_text("".join(models[s].text for s in seeds))
        lib = directory / f"{stem}.so"
        r = subprocess.run([str(hectorc), str(src), "--target=cpu", "-o", str(lib)],
                           capture_output=True, text=True)
        return lib, r

    seeds = sorted(models)
    lib, r = build(seeds, f"random_{seeds[0]}_{seeds[-1]}")
    if r.returncode == 0:
        classes = hector.load_all(lib)
        return {s: classes[f"random_{s}"] for s in seeds}, {}
    loaded, errors = {}, {}
    for s in seeds:
        lib, r = build([s], f"random_{s}")
        if r.returncode == 0:
            loaded[s] = hector.load(lib)
        else:
            errors[s] = r.stderr
    return loaded, errors


def max_scaled_error(actual, expected) -> float:
    actual, expected = actual.detach(), expected.detach()
    if expected.numel() == 0:
        return 0.0
    return float((actual - expected).abs().max()) / max(1.0, float(expected.abs().max()))


def check_layer(Model, reference, graphs=None, tol=1e-9):
    """Runs the compiled layer `Model` in every variant it has on each awkward graph (float64)
    and compares its outputs (with and without gradients) and the gradients of x, ew and every
    weight with PyTorch's autograd through `reference(g, x, ew, weights)`. Raises AssertionError
    naming the graph, the variant and the tensor that differs."""
    from references import awkward_graph
    from test_models import make_graph
    from test_training import randomise

    graphs = graphs or [dict(seed=0, num_nodes=12, num_edges=40),
                        dict(seed=1, num_nodes=9, num_edges=30, num_relations=1),
                        dict(seed=3)]
    for gkw in graphs:
        g = awkward_graph(**gkw)
        torch.manual_seed(5)
        layer = Model(num_relations=g.num_relations, num_ntypes=g.num_ntypes,
                      dtype=torch.float64)
        randomise(layer)
        x = torch.randn(g.num_nodes, 6, dtype=torch.float64, requires_grad=True)
        ew = torch.randn(g.src.numel(), dtype=torch.float64, requires_grad=True)
        weights = {n: layer.get_parameter(n) for n in layer._weight_paths}
        expected = reference(g, x, ew, weights)
        upstream = [torch.randn_like(e) for e in expected]
        wrt = [x, ew] + list(weights.values())
        names = ["x", "ew"] + list(weights)
        ref_grads = torch.autograd.grad(expected, wrt, upstream, allow_unused=True)
        ref_grads = [torch.zeros_like(t) if d is None else d for t, d in zip(wrt, ref_grads)]
        graph = make_graph(g)
        for variant in Model.variants():
            layer.variant = variant
            try:
                out = layer(graph, x, ew)
                out = out if isinstance(out, tuple) else (out,)
                grads = torch.autograd.grad(out, wrt, upstream, allow_unused=True)
                with torch.no_grad():
                    inference = layer(graph, x, ew)
                inference = inference if isinstance(inference, tuple) else (inference,)
            finally:
                layer.variant = "auto"
            checks = ([(f"output {i}", a, b) for i, (a, b) in enumerate(zip(out, expected))]
                      + [(f"inference output {i}", a, b)
                         for i, (a, b) in enumerate(zip(inference, expected))]
                      + [(f"gradient of {n}", torch.zeros_like(t) if a is None else a, b)
                         for n, t, a, b in zip(names, wrt, grads, ref_grads)])
            assert len(out) == len(expected) == len(inference)
            for what, a, b in checks:
                where = f"graph {gkw}, variant {variant!r}: {what}"
                assert a.shape == b.shape, f"{where}: shape {tuple(a.shape)} != {tuple(b.shape)}"
                assert torch.isfinite(b).all(), f"{where}: the reference is not finite"
                err = max_scaled_error(a, b)
                assert err <= tol, f"{where} differs from PyTorch by {err:.3g} (scaled)"


if __name__ == "__main__":
    import argparse
    import os
    import sys
    import tempfile

    here = pathlib.Path(__file__).resolve().parent
    sys.path.insert(0, str(here.parents[1] / "runtime" / "python"))

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0-49", help="A-B (inclusive) or a comma list")
    parser.add_argument("--print", action="store_true", help="print each model's text")
    args = parser.parse_args()
    if "-" in args.seeds:
        lo, hi = map(int, args.seeds.split("-"))
        seeds = list(range(lo, hi + 1))
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
    build = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", here.parents[1] / "build"))
    failed = 0
    batch = 10
    with tempfile.TemporaryDirectory() as tmp:
        for start in range(0, len(seeds), batch):
            models = {s: random_model(s) for s in seeds[start:start + batch]}
            loaded, errors = compile_models(build / "bin" / "hectorc", models, tmp)
            for seed, model in models.items():
                if args.print:
                    print(f"--- seed {seed}\n{model.text}")
                problem = None
                if seed in errors:
                    problem = f"hectorc failed:\n{errors[seed]}"
                else:
                    try:
                        check_layer(loaded[seed], model.reference)
                    except AssertionError as e:
                        problem = str(e)
                if problem:
                    failed += 1
                    print(f"FAIL seed {seed}\n{model.text}{problem}\n", flush=True)
                else:
                    print(f"ok seed {seed}", flush=True)
    print(f"{len(seeds) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
