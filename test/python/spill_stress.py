"""Training compiled layers under hector.spill with inputs that are reused across steps and
shared between layers: the case in which one saved storage is referenced by several saved
records (the same `norm` saved by every layer of every step), whose lifetime the engine must
get right while its I/O threads write and read it.

`train(...)` runs STEPS steps of SGD on a model of two compiled RGCN layers (two instances of
one library) and a compiled two-layer RGCN (rgcn_aifb: conv1 and conv2 read the same `norm`),
feeding the same `x` and `norm` tensors every step, and returns the weights after every step.
The oracle is the same training without a store (autograd keeps the tensors in memory), which
must give bit-identical weights: spilling moves bytes, it never changes them.

Used by test_spill_stress.py (a few repetitions of every setting) and tools/stress_spill.py
(hundreds of repetitions of one setting, each in its own process, counting crashes).
"""
from __future__ import annotations

import itertools
import pathlib
import subprocess

import torch

import hector

IN, HIDDEN, OUT = 16, 16, 4
STEPS = 6

# Every threshold (all storages spill / only large ones / none) and prefetch distance, with and
# without the keep window and the adaptive policy.
SETTINGS = [dict(threshold_bytes=t, prefetch=p, keep_last=k, adaptive=a)
            for t, p, (k, a) in itertools.product([0, 512, 1 << 30], [0, 1, 2, 8],
                                                  [(0, False), (1, True)])]
# The configuration of the report: float32, threshold_bytes=0, prefetch=0 (other knobs default).
FAILING = dict(threshold_bytes=0, prefetch=0)


def compile_libraries(hectorc: str, repo: pathlib.Path, out_dir: pathlib.Path) -> dict:
    """Builds the two libraries the stress model needs; returns {name: path}."""
    libs = {}
    for name, params in [("rgcn", [f"in={IN}", f"out={HIDDEN}"]),
                         ("rgcn_aifb", [f"in={HIDDEN}", f"hidden={HIDDEN}", f"classes={OUT}"])]:
        path = out_dir / f"{name}.so"
        if not path.exists():
            cmd = [hectorc, str(repo / "examples" / f"{name}.hector"), "--target=cpu",
                   "-o", str(path)]
            for p in params:
                cmd += ["-P", p]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        libs[name] = path
    return libs


# (nodes, edges): the tests' size, and the stress script's (larger saved tensors, longer writes).
SMALL, LARGE = (500, 6000), (2000, 40000)


def graph_and_inputs(seed: int = 0, num_nodes: int = SMALL[0], num_edges: int = SMALL[1]):
    gen = torch.Generator().manual_seed(seed)
    R, T = 4, 2
    src = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=gen)
    etype = torch.randint(0, R, (num_edges,), generator=gen)
    ntype = torch.randint(0, T, (num_nodes,), generator=gen)
    graph = hector.Graph(src, dst, etype, num_nodes=num_nodes, ntype=ntype, num_relations=R,
                         num_ntypes=T)
    return graph, R, T


class Model(torch.nn.Module):
    def __init__(self, libs, R, T, dtype, variant):
        super().__init__()
        RGCN, RGCN2 = hector.load(libs["rgcn"]), hector.load(libs["rgcn_aifb"])
        self.a = RGCN(num_relations=R, num_ntypes=T, dtype=dtype)
        self.b = RGCN(num_relations=R, num_ntypes=T, dtype=dtype)
        self.c = RGCN2(num_relations=R, num_ntypes=T, dtype=dtype)
        for layer in (self.a, self.b, self.c):
            layer.variant = variant

    def forward(self, graph, x, norm):
        h = torch.relu(self.a(graph, x, norm))
        h = h + torch.relu(self.b(graph, h, norm))   # `norm` shared by a, b and c's conv1/conv2
        return self.c(graph, h, norm)


def train(libs, spill_args=None, dtype=torch.float32, variant="auto", steps=STEPS,
          spill_dir=None, seed=0, size=SMALL, stats=None):
    """Weights after each of `steps` SGD steps (a list of lists of tensors); `stats` (a dict),
    when given, receives the spill context's statistics summed over the steps (each entry of the
    context is a new store whose `stats` replace the previous entry's; peaks are maxima)."""
    graph, R, T = graph_and_inputs(seed, *size)
    torch.manual_seed(seed)
    model = Model(libs, R, T, dtype, variant)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(graph.num_nodes, IN, generator=gen, dtype=dtype)            # reused
    norm = graph.unsort_edge_data(graph.norm_relation).to(dtype)                # reused
    target = torch.randn(graph.num_nodes, OUT, generator=gen, dtype=dtype)
    history = []
    ctx = hector.spill(dir=spill_dir, **spill_args) if spill_args is not None else None
    def step(k):
        if k % 2 == 1:
            # A forward whose graph is dropped without backward (a validation loss computed
            # with gradients on): its saved records are released while their writes run.
            float((model(graph, x, norm) - target).square().mean().detach())
        loss = (model(graph, x, norm) - target).square().mean()
        loss.backward()

    total = {}
    for k in range(steps):
        opt.zero_grad()
        if ctx is None:
            step(k)
        else:
            with ctx:
                step(k)
            for key, value in ctx.stats.items():
                total[key] = (max(total.get(key, 0), value) if key.startswith("peak_")
                              else total.get(key, 0) + value)
        opt.step()
        history.append([p.detach().clone() for p in model.parameters()])
        assert all(bool(p.isfinite().all()) for p in history[-1]), "training diverged"
    if ctx is not None:
        assert total["write_failures"] == 0 or spill_args.get("faults"), total
        if stats is not None:
            stats.update(total)
        if spill_dir is not None:
            assert list(pathlib.Path(spill_dir).iterdir()) == [], "spill files left behind"
    return history


def check(libs, spill_args, dtype=torch.float32, variant="auto", spill_dir=None, repetitions=1,
          expected=None, size=SMALL):
    """Trains `repetitions` times under the store; every run must equal the in-memory run
    bit for bit. Returns the in-memory history (to reuse as `expected`)."""
    if expected is None:
        expected = train(libs, None, dtype, variant, size=size)
    for _ in range(repetitions):
        got = train(libs, spill_args, dtype, variant, spill_dir=spill_dir, size=size)
        for step, (a, b) in enumerate(zip(got, expected)):
            for p, q in zip(a, b):
                assert torch.equal(p, q), f"step {step}: weights differ under {spill_args}"
    return expected
