"""Training and inference, ours against PyG: RGCN, RGAT and HGT side by side on the same graphs.

    python tools/bench_train.py                    # CPU, float32, every model on every graph
    python tools/bench_train.py --markdown         # the table as markdown (docs/benchmarks.md)
    python tools/bench_train.py --models rgcn,hgt --graphs aifb --repeats 10 --json out.json
    python tools/bench_train.py --device cuda --dtype float32

For every (model, graph) both layers live in this one process, on the same graph, inputs and
weights: our layer compiled by hectorc from examples/ (rgcn.hector, rgat_pyg.hector, hgt.hector;
cached under build/bench/, rebuilt when the model file or hectorc is newer), and PyG's peer built
by test/python/references.py and test_models.py with our weights copied in (RGCNConv(aggr='mean'),
RGATConv(across-relation, additive self-attention), HGTConv). Before anything is timed the two
outputs are compared, and one backward of ours is checked against an oracle on the same loss:
the gradient with respect to the input features and every weight gradient, the oracle being
PyG's layer for RGCN and RGAT (same weight layouts) and references.hgt_reference on our weights
for HGT. A row whose outputs differ is an error; so is our training when the library has no
backward layers (built with hectorc --no-backward: the call raises) or its gradients disagree.
PyG's HGTConv trains through HeteroLinear, whose fallback without pyg-lib (segment_matmul) takes
minutes per step on these graphs: without pyg-lib the benchmark gives PyG's layer the same
products over one split of the input in training (hetero_linear_split: minutes become tens of
milliseconds); --pyg-slow measures the original.

Graphs: AIFB (node types from rdf:type), UMLS (one node type, inverse relations added), and a
seeded synthetic graph with many relations whose edges come from few distinct sources per
relation (default N = 20000, R = 100, 4 node types, E = 100000, 50 sources per relation:
E / U_src = 20), the case compact materialisation targets.

What is measured, per implementation:

- train: one training step = zero_grad(set_to_none) + forward + MSE loss against a fixed random
  target + backward + Adam step; the median over --repeats steps after --warmup steps (fewer
  once a measurement has taken --budget seconds; "n" in the JSON).
- infer: the layer's forward alone under torch.no_grad (eval mode), median likewise.
- peak memory of one training step and of one inference, above the level before it (inputs,
  weights and optimiser state exist; gradients are freed before the step, so the step allocates
  them). On CUDA: torch.cuda.max_memory_allocated after reset_peak_memory_stats, minus
  memory_allocated before. On the CPU: the peak of live tensor bytes, from torch.profiler's
  memory events (profile(profile_memory=True): every allocation and free through PyTorch's CPU
  allocator, replayed in time order). Like the CUDA number it counts tensors only, not scratch
  that a CPU kernel takes from malloc directly (some ATen kernels, std::vector buffers in the
  compiled kernels). --rss adds the growth of the process's resident set during the step
  (rss_bytes in the JSON; see ResidentPeak), which counts those too but also glibc's
  fragmentation: for PyG's RGCN it reads 2-3x the tensor peak, for the layers that allocate a
  few large tensors (PyG's RGAT, ours) it agrees to a few percent. Memory is measured after all
  timings, so neither the profiler nor --rss's allocator setting touches them. Our layers take
  their tensors of 1 MiB and more from the runtime's tensor pool, which maps its own blocks
  unseen by the profiler: the tensor peak is taken with the pool bypassed (every tensor through
  PyTorch's allocator), which is the live-tensor peak the pool serves from its blocks.

Ratios are PyG / ours: above 1, ours is faster or smaller. Times are wall clock (CUDA:
synchronised). On a loaded machine every parallel op waits for its slowest thread, which costs
PyG's thousands of small ops far more than our few large kernels: there, --threads 1 gives
steadier and fairer numbers, and a small ratio needs a second run before it is trusted.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import gc
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time
import traceback
import types
import warnings
from typing import Any, Callable

os.environ.setdefault("KINETO_LOG_LEVEL", "5")   # quiets the profiler's device probe on a CPU host
import torch  # noqa: E402
import torch_geometric.typing  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", ROOT / "build"))
sys.path.insert(0, str(ROOT / "runtime" / "python"))
sys.path.insert(0, str(ROOT / "test" / "python"))
import hector  # noqa: E402
from references import TestGraph, hgt_reference, rgat_pyg, rgcn_norm, rgcn_pyg  # noqa: E402
from references import hgt_pyg  # noqa: E402

MiB = 2 ** 20
NO_AUTOGRAD = "autograd kernel was not registered"   # PyTorch's warning for an op without backward


# ------------------------------------------------------------------------------------------------
# Graphs


def synthetic_graph(num_nodes: int, num_relations: int, num_edges: int, sources: int,
                    num_ntypes: int = 4, seed: int = 0) -> TestGraph:
    """Every relation joins one source node type to one destination type and has num_edges / R
    edges from exactly `sources` distinct source nodes (each the source of the same number of
    edges) to uniformly drawn destinations: E / U_src = num_edges / (R * sources)."""
    g = torch.Generator().manual_seed(seed)
    ntype = torch.randint(0, num_ntypes, (num_nodes,), generator=g)
    ntype[:num_ntypes] = torch.arange(num_ntypes)            # every type has a node
    members = [torch.nonzero(ntype == t).flatten() for t in range(num_ntypes)]
    per_rel = num_edges // num_relations
    src, dst, et, src_types, dst_types = [], [], [], [], []
    for r in range(num_relations):
        a, b = (int(torch.randint(0, num_ntypes, (1,), generator=g)) for _ in range(2))
        pool_a, pool_b = members[a], members[b]
        chosen = pool_a[torch.randperm(pool_a.numel(), generator=g)[:sources]]
        order = torch.randperm(per_rel, generator=g)
        src.append(chosen[order % chosen.numel()])
        dst.append(pool_b[torch.randint(0, pool_b.numel(), (per_rel,), generator=g)])
        et.append(torch.full((per_rel,), r, dtype=torch.int64))
        src_types.append(a), dst_types.append(b)
    return TestGraph(torch.cat(src), torch.cat(dst), torch.cat(et), ntype, num_nodes,
                     num_relations, num_ntypes, src_types, dst_types)


def load_graph(name: str, args) -> TestGraph:
    if name == "synthetic":
        return synthetic_graph(args.synth_nodes, args.synth_relations, args.synth_edges,
                               args.synth_sources)
    from test_models import real_graph   # here: importing it needs pytest
    return real_graph(name)   # aifb or umls from ../shared/data, as the end-to-end tests load them


def describe(g: TestGraph) -> dict:
    unique_src = torch.unique(g.etype * g.num_nodes + g.src).numel()
    return {"nodes": g.num_nodes, "edges": int(g.src.numel()), "relations": g.num_relations,
            "ntypes": g.num_ntypes, "unique_src": unique_src,
            "edges_per_unique_src": round(g.src.numel() / max(unique_src, 1), 2)}


# ------------------------------------------------------------------------------------------------
# Compiled libraries


def model_params(model: str, hidden: int, heads: int) -> dict[str, int]:
    """The hectorc parameters of each model file at the benchmark's sizes."""
    if model == "rgcn":
        return {"in": hidden, "out": hidden}
    if hidden % heads:
        raise SystemExit(f"--hidden {hidden} is not a multiple of --heads {heads}")
    if model == "rgat":
        return {"in": hidden, "d": hidden // heads, "H": heads}
    return {"in": hidden, "out": hidden, "H": heads}     # hgt: in == out (see examples/hgt.hector)


MODEL_FILES = {"rgcn": "rgcn", "rgat": "rgat_pyg", "hgt": "hgt"}


def compile_model(model: str, params: dict[str, int], target: str) -> pathlib.Path:
    """The library of one of the benchmark's models (see compile_example)."""
    return compile_example(MODEL_FILES[model], params, target)


def compile_example(example: str, params: dict[str, int], target: str) -> pathlib.Path:
    """build/bench/<example>_<params>_<target>.so from examples/<example>.hector, rebuilt when
    missing or older than the model file, hectorc, or a header the package copies (the kernel
    templates, the runtime's)."""
    source = ROOT / "examples" / f"{example}.hector"
    hectorc = BUILD / "bin" / "hectorc"
    tag = "_".join(f"{k}{v}" for k, v in params.items())
    out = BUILD / "bench" / f"{example}_{tag}_{target}.so"
    headers = [*(ROOT / "codegen-templates").rglob("*.h*"), *(ROOT / "runtime" / "include").rglob("*.h")]
    newest = max([source.stat().st_mtime, hectorc.stat().st_mtime]
                 + [h.stat().st_mtime for h in headers])
    if out.is_file() and out.stat().st_mtime >= newest:
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(hectorc), str(source), f"--target={target}", "-o", str(out)]
    for k, v in params.items():
        cmd += ["-P", f"{k}={v}"]
    print(f"compiling {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}", flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return out


# ------------------------------------------------------------------------------------------------
# One implementation of one layer on one graph


@dataclasses.dataclass
class Side:
    """One implementation, ready to run: `call(*inputs)` is the layer alone (what inference
    times), `rows(output)` its output as a [M, out] tensor in the row order both sides share (the
    loss and the checks use it), `prepare(x)` the layer's inputs from node features x."""
    module: torch.nn.Module
    prepare: Callable[[torch.Tensor], tuple]
    call: Callable[..., Any]
    rows: Callable[[Any], torch.Tensor]
    grad_params: list = dataclasses.field(default_factory=list)  # (name, parameter), checked
    error: str | None = None            # why its training step cannot be measured
    skip: str | None = None             # why its training step is not measured
    opt: torch.optim.Optimizer | None = None


@dataclasses.dataclass
class Setup:
    model: str
    graph: str
    ours: Side
    pyg: Side
    x: torch.Tensor                     # node features (no gradient)
    target: torch.Tensor                # the MSE target, rows as Side.rows gives them
    expected: torch.Tensor              # PyG's output on the CPU, rows likewise
    graph_ms: float                     # hector.Graph preprocessing (once per graph, not timed)
    oracle: Callable[[], list]          # reference gradients: d loss / d x, then ours.grad_params'


HGT_WEIGHTS = ["Wk", "bk", "Wq", "bq", "Wv", "bv", "W_att", "W_msg", "mu", "A", "bA"]


def hetero_linear_split(self, x: torch.Tensor, type_ptr: torch.Tensor) -> torch.Tensor:
    """PyG's HeteroLinear.forward_naive (its path without pyg-lib's segment_matmul) computed over
    one split of x and a concatenation instead of a slice read and a slice write per type:
    the same products, but autograd's backward no longer touches the whole tensor once per type
    (HGTConv runs it on ~1,100 types on AIFB, where the original takes minutes per step;
    --pyg-slow measures the original). Without autograd PyG's own fallback runs."""
    if not torch.is_grad_enabled():
        return type(self).forward_naive(self, x, type_ptr)
    parts = torch.split(x, torch.diff(type_ptr).tolist())
    return torch.cat([part @ self.weight[i] for i, part in enumerate(parts)])



def side_grads(side: Side, x: torch.Tensor, target: torch.Tensor, params: list) -> list:
    """One forward and backward of the benchmark's loss with x as a leaf: [d/dx] + [d/dparams]."""
    x = x.detach().clone().requires_grad_()
    side.module.zero_grad(set_to_none=True)
    torch.nn.functional.mse_loss(side.rows(side.call(*side.prepare(x))), target).backward()
    grads = [x.grad] + [p.grad for _, p in params]
    side.module.zero_grad(set_to_none=True)
    return grads


def build_setup(model: str, gname: str, g: TestGraph, Layer, args) -> Setup:
    """Both sides on the CPU with the same weights, then moved to the device."""
    dtype, dev = args.torch_dtype, args.device
    R, T, F = g.num_relations, g.num_ntypes, args.hidden
    torch.manual_seed(0)
    x = torch.randn(g.num_nodes, F, dtype=dtype)
    t0 = time.perf_counter()
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                         num_relations=R, num_ntypes=T).to(dev)
    graph_ms = (time.perf_counter() - t0) * 1e3
    layer = Layer(num_relations=R, num_ntypes=T, dtype=dtype)
    ei, et = torch.stack([g.src, g.dst]).to(dev), g.etype.to(dev)
    identity = lambda out: out  # noqa: E731
    with torch.no_grad():   # non-trivial biases and gates, so the checks cover them
        for name, p in layer.named_parameters():
            if name in ("bias", "bk", "bq", "bv", "bA", "mu", "skip"):
                p.normal_(0.0, 1.0 if name in ("mu", "skip") else 0.1)

    # PyG's layer and its output (on the CPU); the gradient oracle below is PyG's layer where
    # its weights have our layouts, else the plain PyTorch reference on our weights.
    rows = None   # the output rows both sides are compared and trained on (None: all nodes)
    if model == "rgcn":
        conv, expected = rgcn_pyg(g, x, layer.W.detach(), layer.root.detach(),
                                  layer.bias.detach())
        norm = rgcn_norm(g).to(dtype).to(dev)
        ours = Side(layer, lambda x: (graph, x, norm), layer, identity)
        pyg = Side(conv, lambda x: (x, ei, et), conv, identity)
        pairs = [("W", "weight"), ("root", "root"), ("bias", "bias")]
    elif model == "rgat":
        H = args.heads
        W = layer.W.detach().view(R, F, H, F // H)
        conv, expected = rgat_pyg(g, x, W, layer.q.detach(), layer.k.detach(),
                                  layer.bias.detach())
        ours = Side(layer, lambda x: (graph, x), layer, identity)
        pyg = Side(conv, lambda x: (x, ei, et), conv, identity)
        pairs = [("W", "weight"), ("q", "q"), ("k", "k"), ("bias", "bias")]
    else:   # hgt: PyG's HGTConv on the heterogeneous form (one dict entry per node type)
        expected, mask, conv, _, ei_dict = hgt_pyg(g, x, layer, heads=args.heads,
                                                   return_module=True)
        # PyG gives no output to a node type without incoming edges: compare and train on the
        # types it covers, in the order of this concatenation.
        members = [torch.nonzero(g.ntype == t).flatten() for t in range(T)]
        covered = [t for t in range(T) if mask[members[t]].any()]
        rows = torch.cat([members[t] for t in covered])
        expected = expected[rows]
        members, row_idx_dev = [m.to(dev) for m in members], rows.to(dev)
        ei_dict = {k: v.to(dev) for k, v in ei_dict.items()}
        ours = Side(layer, lambda x: (graph, x), layer, lambda out: out[row_idx_dev])
        pyg = Side(conv, lambda x: ({f"t{t}": x[members[t]] for t in range(T)}, ei_dict), conv,
                   lambda out: torch.cat([out[f"t{t}"] for t in covered]))
        if not torch_geometric.typing.WITH_SEGMM and not args.pyg_slow:
            for rel in (conv.k_rel, conv.v_rel):
                rel.forward_naive = types.MethodType(hetero_linear_split, rel)
        pairs = []
    ours.module.to(dev)
    pyg.module.to(dev)
    x = x.to(dev)
    target = torch.randn(g.num_nodes if rows is None else rows.numel(), F, dtype=dtype,
                         generator=torch.Generator().manual_seed(1)).to(dev)

    if model == "hgt":
        ours.grad_params = [(n, layer.get_parameter(n)) for n in HGT_WEIGHTS + ["skip"]]

        def oracle():   # on the CPU, on copies of our weights as they are now
            ws = [p.detach().cpu().clone().requires_grad_() for _, p in ours.grad_params]
            xc = x.detach().cpu().clone().requires_grad_()
            out = hgt_reference(g, xc, *ws[:-1], skip=ws[-1])[rows]
            torch.nn.functional.mse_loss(out, target.cpu()).backward()
            return [xc.grad] + [w.grad for w in ws]
    else:
        ours.grad_params = [(a, layer.get_parameter(a)) for a, _ in pairs]
        pyg_params = [(b, conv.get_parameter(b)) for _, b in pairs]

        def oracle():
            return side_grads(pyg, x, target, pyg_params)
    assert len(ours.grad_params) == len(list(layer.parameters())), "a weight is not checked"
    return Setup(model, gname, ours, pyg, x, target, expected.detach(), graph_ms, oracle)


# ------------------------------------------------------------------------------------------------
# Steps, checks and timing


def make_optimizer(side: Side) -> torch.optim.Optimizer:
    return torch.optim.Adam(side.module.parameters(), lr=1e-4)


def train_step(side: Side, inputs: tuple, target: torch.Tensor, opt) -> None:
    opt.zero_grad(set_to_none=True)
    out = side.rows(side.call(*inputs))
    loss = torch.nn.functional.mse_loss(out, target)
    loss.backward()
    opt.step()


def infer_step(side: Side, inputs: tuple) -> None:
    with torch.no_grad():
        side.call(*inputs)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check(s: Setup, tol: float) -> dict:
    """Ours against PyG: the forward outputs (PyG's computed on the CPU when the setup was
    built); then one backward of ours against the oracle's (the same loss): the gradient with
    respect to x and to the weights. Sets ours.error when ours has no usable backward. Leaves the
    weights unchanged and the gradients cleared."""
    result = {}
    with torch.no_grad():
        s.ours.module.eval()
        out = s.ours.rows(s.ours.call(*s.ours.prepare(s.x)))
        result["forward_rel_err"] = rel_err(out.cpu(), s.expected)
    if not result["forward_rel_err"] < tol:
        raise RuntimeError(f"outputs differ from PyG's (relative error "
                           f"{result['forward_rel_err']:.2e}): the comparison is not like for like")
    s.ours.module.train()
    s.pyg.module.train()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ours = side_grads(s.ours, s.x, s.target, s.ours.grad_params)
        if any(NO_AUTOGRAD in str(w.message) for w in caught):
            raise RuntimeError("the compiled operator has no backward (PyTorch: no autograd kernel "
                               "registered), so the weights get no gradient")
        # Every weight of our model files reaches the output, so each must get a gradient.
        names = ["x"] + [name for name, _ in s.ours.grad_params]
        missing = [name for name, grad in zip(names, ours) if grad is None]
        if missing:
            raise RuntimeError("no gradient reached " + ", ".join(missing))
    except Exception as e:   # noqa: BLE001 - reported in the row, the run goes on
        s.ours.error = short_error(e)
        return result
    expected = s.oracle()
    result["grad_rel_err"] = max(rel_err(a.cpu(), b.cpu()) for a, b in zip(ours, expected))
    if not result["grad_rel_err"] < tol:
        s.ours.error = f"gradients differ from the oracle's (relative error " \
                       f"{result['grad_rel_err']:.2e})"
    return result


def short_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], None], args, min_warmup: int = 0) -> dict:
    """Median (and min) wall milliseconds of fn over --repeats calls after --warmup calls; fewer
    calls (at least one) once they have taken --budget seconds. cpu_ms: the median CPU time of
    the process (all threads), less sensitive than wall time to other load on the machine."""
    for _ in range(max(args.warmup, min_warmup)):
        fn()
    wall, cpu = [], []
    start = time.perf_counter()
    while len(wall) < args.repeats and (not wall or time.perf_counter() - start < args.budget):
        sync(args.device)
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        sync(args.device)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {"ms": statistics.median(wall) * 1e3, "min_ms": min(wall) * 1e3,
            "cpu_ms": statistics.median(cpu) * 1e3, "n": len(wall)}


def not_measured(side: Side) -> dict | None:
    """Why a side's training is not measured, as the entry the row records, or None."""
    if side.error:
        return {"error": side.error}
    if side.skip:
        return {"skipped": side.skip}
    return None


def measure_times(s: Setup, args) -> dict:
    """{"infer_ours": {"ms": ..}, "train_ours": {"ms": ..} or {"error": ..}, ... pyg}."""
    out = {}
    for name, side in (("ours", s.ours), ("pyg", s.pyg)):
        inputs = side.prepare(s.x)
        side.module.eval()
        out[f"infer_{name}"] = timed(lambda: infer_step(side, inputs), args)
        if (reason := not_measured(side)) is not None:
            out[f"train_{name}"] = reason
            continue
        side.module.train()
        side.opt = make_optimizer(side)
        try:   # at least one warm-up step: it allocates Adam's state
            out[f"train_{name}"] = timed(lambda: train_step(side, inputs, s.target, side.opt),
                                         args, min_warmup=1)
        except Exception as e:   # noqa: BLE001
            side.error = short_error(e)
            out[f"train_{name}"] = {"error": side.error}
    return out


# ------------------------------------------------------------------------------------------------
# Peak memory


def tensor_peak(fn: Callable[[], None]) -> int:
    """Peak of live tensor bytes during fn above the level before it, from torch.profiler's
    memory events (every allocation and free through PyTorch's CPU allocator, replayed in time
    order; a free of a tensor from before fn counts as negative)."""
    from torch.profiler import ProfilerActivity, profile
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    events.sort(key=lambda e: e.start_ns())
    live = peak = 0
    for e in events:   # nbytes: + for an allocation, - for a free
        live += e.nbytes()
        peak = max(peak, live)
    return peak


class ResidentPeak:
    """Peak growth of the process's resident set during a call (--rss): freed heap is returned
    first (malloc_trim), the kernel's peak mark is reset (/proc/self/clear_refs "5"), and VmHWM
    after the call minus VmRSS before is the peak. glibc's mmap threshold is fixed at 64 KiB, so
    a freed large block leaves the resident set at once."""

    M_MMAP_THRESHOLD = -3   # mallopt parameter

    def __init__(self):
        self.libc = ctypes.CDLL("libc.so.6")
        self.reset_peak()   # raises OSError where the kernel does not support it
        self.libc.mallopt(self.M_MMAP_THRESHOLD, 64 * 1024)

    @staticmethod
    def reset_peak() -> None:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    @staticmethod
    def _status(key: str) -> int:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        raise OSError(f"/proc/self/status has no {key}")

    def __call__(self, fn: Callable[[], None]) -> int:
        gc.collect()
        self.libc.malloc_trim(0)
        self.reset_peak()
        base = self._status("VmRSS:")
        fn()
        return self._status("VmHWM:") - base


def cuda_peak(fn: Callable[[], None]) -> int:
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


def measure_memory(s: Setup, args, rss: ResidentPeak | None) -> dict:
    """{"train_mem_ours": {"bytes": ..[, "rss_bytes": ..]} or {"error": ..}, ... pyg}."""
    out = {}
    for name, side in (("ours", s.ours), ("pyg", s.pyg)):
        inputs = side.prepare(s.x)
        for kind in ("train", "infer"):
            key = f"{kind}_mem_{name}"
            if kind == "train" and (reason := not_measured(side)) is not None:
                out[key] = reason
                continue
            if kind == "train":
                side.module.train()
                opt = side.opt
                fn = lambda: train_step(side, inputs, s.target, opt)   # noqa: E731
                before = lambda: opt.zero_grad(set_to_none=True)   # noqa: E731
            else:
                side.module.eval()
                fn = lambda: infer_step(side, inputs)   # noqa: E731
                before = lambda: None   # noqa: E731
            try:
                before()
                if args.device == "cuda":
                    out[key] = {"bytes": cuda_peak(fn)}
                else:
                    # The runtime's tensor pool maps its blocks itself, unseen by the profiler:
                    # every tensor through PyTorch's allocator while the tensor peak is taken.
                    with tensors_from_pytorch():
                        out[key] = {"bytes": tensor_peak(fn)}
                if rss is not None:
                    before()
                    out[key]["rss_bytes"] = rss(fn)
            except Exception as e:   # noqa: BLE001
                out[key] = {"error": short_error(e)}
            finally:
                before()
    return out


@contextlib.contextmanager
def tensors_from_pytorch():
    """Our layers' CPU tensors from PyTorch's allocator instead of the tensor pool (whose blocks
    torch.profiler's memory events do not see), restoring the pool's threshold afterwards."""
    import hector
    saved = hector.tensor_pool_stats()["min_bytes"]
    hector.configure_tensor_pool(min_bytes=1 << 62)
    try:
        yield
    finally:
        hector.configure_tensor_pool(min_bytes=saved)


# ------------------------------------------------------------------------------------------------
# Report

METRICS = [("train", "ms", "train step ms"), ("infer", "ms", "inference ms"),
           ("train_mem", "bytes", "train peak MiB"), ("infer_mem", "bytes", "inference peak MiB")]


def add_ratios(row: dict) -> None:
    """row[f"{metric}_ratio"] = PyG / ours where both were measured."""
    for metric, unit, _ in METRICS:
        ours, pyg = row.get(f"{metric}_ours", {}), row.get(f"{metric}_pyg", {})
        if unit in ours and unit in pyg and ours[unit] > 0:
            row[f"{metric}_ratio"] = pyg[unit] / ours[unit]


def cell(row: dict, metric: str, unit: str) -> str:
    """"ours / PyG (ratio x)", with "error" for a measurement that failed."""
    scale = 1.0 if unit == "ms" else 1 / MiB

    def fmt(m: dict) -> str:
        if "error" in m:
            return "error"
        if "skipped" in m:
            return "skipped"
        if unit not in m:
            return "-"
        v = m[unit] * scale
        return f"{v:.1f}" if v >= 10 else f"{v:.2f}"
    text = f"{fmt(row.get(f'{metric}_ours', {}))} / {fmt(row.get(f'{metric}_pyg', {}))}"
    ratio = row.get(f"{metric}_ratio")
    return text + (f" ({ratio:.2f}x)" if ratio is not None else "")


def print_table(rows: list[dict], args, markdown: bool) -> None:
    heads = ["model", "graph"] + [title for *_, title in METRICS]
    table = []
    for r in rows:
        cells = ([cell(r, m, u) for m, u, _ in METRICS] if "error" not in r
                 else ["error"] * len(METRICS))
        table.append([r["model"], r["graph"]] + cells)
    print(f"\nours / PyG (PyG / ours: above 1x, ours is better); {args.device}, {args.dtype}, "
          f"hidden {args.hidden}, {args.heads} heads, median of {args.repeats}, "
          f"{torch.get_num_threads()} threads, torch {torch.__version__}, "
          f"PyG {torch_geometric.__version__}"
          f"{'' if torch_geometric.typing.WITH_PYG_LIB else ' (without pyg-lib)'}")
    if markdown:
        print("| " + " | ".join(heads) + " |")
        print("|" + "|".join("---" for _ in heads) + "|")
        for line in table:
            print("| " + " | ".join(line) + " |")
    else:
        widths = [max(len(x) for x in col) for col in zip(heads, *table)]
        for line in [heads] + table:
            print("  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip())
    notes = {}   # each distinct error or reason to skip, with the rows it concerns
    for r in rows:
        found = [("error", r["error"])] if "error" in r else []
        found += [(k, v[k]) for v in r.values() if isinstance(v, dict)
                  for k in ("error", "skipped") if k in v]
        for note in dict.fromkeys(found):
            notes.setdefault(note, []).append(f"{r['model']}/{r['graph']}")
    for (kind, text), where in notes.items():
        print(f"{kind} ({', '.join(where)}): {text}")


def progress(row: dict) -> str:
    if "error" in row:
        return f"{row['model']} on {row['graph']}: error: {row['error']}"
    parts = [f"{row['model']} on {row['graph']}: forward rel err {row['forward_rel_err']:.1e}"]
    if "grad_rel_err" in row:
        parts.append(f"grad rel err {row['grad_rel_err']:.1e}")
    for metric in ("train", "infer"):
        for side in ("ours", "pyg"):
            m = row.get(f"{metric}_{side}", {})
            parts.append(f"{metric} {side} " + (f"{m['ms']:.1f} ms" if "ms" in m else
                                                  "skipped" if "skipped" in m else "error"))
    return ", ".join(parts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--models", default="rgcn,rgat,hgt", help="comma-separated: rgcn, rgat, hgt")
    ap.add_argument("--graphs", default="aifb,umls,synthetic",
                    help="comma-separated: aifb, umls, synthetic")
    ap.add_argument("--hidden", type=int, default=64,
                    help="feature width: in = out (RGAT: H heads of hidden / H)")
    ap.add_argument("--heads", type=int, default=4, help="heads of RGAT and HGT")
    ap.add_argument("--threads", type=int,
                    help="CPU threads of PyTorch and of our kernels (same OpenMP runtime; default: "
                         "PyTorch's); 1 is steadier on a loaded machine")
    ap.add_argument("--repeats", type=int, default=5, help="timed calls per measurement")
    ap.add_argument("--warmup", type=int, default=1, help="untimed calls before them")
    ap.add_argument("--budget", type=float, default=10.0,
                    help="seconds after which a measurement stops repeating (at least one call)")
    ap.add_argument("--rss", action="store_true",
                    help="CPU: also the peak growth of the resident set (rss_bytes in the JSON)")
    ap.add_argument("--pyg-slow", action="store_true",
                    help="without pyg-lib, train PyG's HGTConv through HeteroLinear's own "
                         "per-type fallback (minutes per step) rather than hetero_linear_split")
    ap.add_argument("--synth-nodes", type=int, default=20000)
    ap.add_argument("--synth-relations", type=int, default=100)
    ap.add_argument("--synth-edges", type=int, default=100000)
    ap.add_argument("--synth-sources", type=int, default=50,
                    help="distinct source nodes per relation of the synthetic graph")
    ap.add_argument("--markdown", action="store_true", help="print the table as markdown")
    ap.add_argument("--json", type=pathlib.Path, help="also write every number to this file")
    args = ap.parse_args()
    args.torch_dtype = getattr(torch, args.dtype)
    models = [m for m in args.models.split(",") if m]
    graphs = [g for g in args.graphs.split(",") if g]
    for m in models:
        if m not in MODEL_FILES:
            ap.error(f"unknown model {m!r} (rgcn, rgat, hgt)")
    for g in graphs:
        if g not in ("aifb", "umls", "synthetic"):
            ap.error(f"unknown graph {g!r} (aifb, umls, synthetic)")
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device")
    if args.threads:
        torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", message=".*" + NO_AUTOGRAD)   # checked and reported per row
    tol = 1e-4 if args.dtype == "float32" else 1e-9

    # Phase 1: compile, build, check and time every (model, graph); keep the setups.
    loaded = {}   # name -> TestGraph, or the error that loading it raised
    for name in graphs:
        t0 = time.perf_counter()
        try:
            loaded[name] = load_graph(name, args)
        except Exception as e:   # noqa: BLE001 - its rows report it
            loaded[name] = e
            print(f"graph {name}: {short_error(e)}", flush=True)
            continue
        print(f"graph {name}: {describe(loaded[name])} ({time.perf_counter() - t0:.1f} s)",
              flush=True)
    rows, setups = [], []
    for model in models:
        try:
            lib = compile_model(model, model_params(model, args.hidden, args.heads),
                                "cuda" if args.device == "cuda" else "cpu")
            Layer = hector.load(lib)
        except Exception as e:   # noqa: BLE001 - every row of the model reports it
            rows += [{"model": model, "graph": g, "error": short_error(e)} for g in graphs]
            print(f"{model}: {e}", flush=True)
            continue
        for gname in graphs:
            row = {"model": model, "graph": gname}
            rows.append(row)
            try:
                if isinstance(loaded[gname], Exception):
                    raise loaded[gname]
                s = build_setup(model, gname, loaded[gname], Layer, args)
                row["graph_preprocessing_ms"] = s.graph_ms
                row.update(check(s, tol))
                row.update(measure_times(s, args))
                setups.append((row, s))
            except Exception as e:   # noqa: BLE001
                row["error"] = short_error(e)
                if e is not loaded[gname]:   # a graph that did not load was reported above
                    traceback.print_exc()
            print(progress(row), flush=True)

    # Phase 2: peak memory, after all timings (the profiler's overhead and --rss's allocation
    # policy stay out of them).
    rss = None
    if args.rss and args.device == "cpu":
        try:
            rss = ResidentPeak()
        except OSError as e:
            print(f"--rss: not available here ({e})", flush=True)
    for row, s in setups:
        row.update(measure_memory(s, args, rss))
        add_ratios(row)
    setups.clear()

    print_table(rows, args, args.markdown)
    if args.json:
        meta = {"device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                "threads": torch.get_num_threads(), "dtype": args.dtype, "hidden": args.hidden,
                "heads": args.heads, "repeats": args.repeats, "warmup": args.warmup,
                "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
                "pyg_lib": torch_geometric.typing.WITH_PYG_LIB, "rss": rss is not None,
                "graphs": {g: describe(v) for g, v in loaded.items()
                           if not isinstance(v, Exception)}}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
