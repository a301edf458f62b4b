"""Full-graph training at the sizes of real graphs, ours against PyG, over a size series.

Every (graph, size, model, implementation) runs in a fresh process under a memory cap, one at a
time; the report has their times, peak memory, graph preparation, ratios and growth.

    python tools/bench_scale.py                                   # mag, 1/8 .. 1, every model
    python tools/bench_scale.py --graphs mag --scales 0.125 --models rgcn --impls hector,pyg
    python tools/bench_scale.py --graphs mag,wikikg2 --cap-gib 23 --json out.json
    python tools/bench_scale.py --device cuda --scales 1,2        # on a GPU machine
    python tools/bench_scale.py --device cuda --packages gpu-packages   # without hectorc there
    python tools/bench_scale.py --stats --graphs mag,wikikg2 --scales 0.01   # the graphs only
    python tools/bench_scale.py --scales 0.5,1 --models rgat --impls hector --profile 16
                                  # also: where one training step's time goes, and its growth

Graphs: synthetic graphs with the published statistics of ogbn-mag and ogbl-wikikg2, generated
by tools/synth_graphs.py (its docstring says how): `mag` (the default) is ogbn-mag's 1,939,743
nodes of 4 types and its published 21,111,007 edges over 8 relations (its 4 relations and their
reverses, each pair sharing its relation's count); `mag4` the 4 relations without
reverses (21.1M edges); `mag_undirected` the 4 relations and all their reverses (42.2M edges);
`wikikg2` 2,500,604 nodes, 16.1M edges, 535 relations of Zipf-distributed sizes. Degrees are
power-law at both ends. `--scales` multiplies every node and edge count (1 = full size). The
graphs are cached under build/bench-scale-cache/ (.npy files, least recently used evicted
beyond --cache-gib), so each measuring process loads its graph rather than generating it.

Models (one layer, in = out = --hidden 64, float32, features x random [N, hidden], loss: mean
square error against a fixed random target):

- rgcn: ours rgcn.hector with its norm input 1/|N_r(i)|; PyG RGCNConv(aggr='mean') (impl
  pyg) and FastRGCNConv(aggr='mean') (impl pyg_fast).
- rgat: ours rgat.hector (Hector's RGAT); no PyG layer computes it, so it has no peer.
- rgat_pyg: ours rgat_pyg.hector, --heads 4 of hidden / 4; PyG RGATConv (across-relation,
  additive self-attention).
- hgt: ours hgt.hector, --heads 4; PyG HGTConv on the heterogeneous form (x_dict,
  edge_index_dict: one entry per node type and per relation).

Both sides get the same weights, drawn from a seed in each process (make_weights), PyG's mapped
onto its layouts by test/python/references.py's builders (rgcn_pyg, rgat_pyg, hgt_pyg: each
builds its layer on a one-edge-per-relation graph, whose module is then run on the big graph).
Each process records its output at a few hundred fixed rows (the largest hubs among them) and,
for rgcn and rgat_pyg, samples of every weight gradient; the report compares ours with PyG's
there (forward_rel_err, grad_rel_err in the JSON; a note when they disagree), so a row measures
the same computation on both sides or says that it does not. Without pyg-lib, PyG's HGTConv
trains through bench_train.py's hetero_linear_split, as there (--pyg-slow: PyG's own fallback).

What one process measures, in this order:

- graph build: ours: hector.Graph(src, dst, etype, ntype=...) (and RGCN's norm input, norm_s in
  the JSON), then layer.prepare(graph) for training and inference, which builds the structures
  the chosen variants read (graph_prepare_s in the JSON, "+ prep" in the table); PyG: its inputs from the COO (edge_index [2, E] and edge_type, or HGT's
  edge_index_dict). "graph MiB": the bytes of the distinct storages of graph.tensors() (ours),
  of those inputs (PyG), again after the calls (graph_bytes_end: a note when the graph grew);
  "graph N.Nx COO" in the notes (graph_vs_coo in the JSON): ours over
  the int64 COO it was given (src, dst, etype [E], ntype [N]).
  The COO arrays are then dropped where the implementation no longer needs them.
- inference: the layer's forward under torch.no_grad (eval mode); training step: forward + MSE
  loss + backward (gradients set to None before each; no optimiser). Each: one warm-up call,
  then the median of up to --repeats calls, stopping once they have taken --budget seconds; a
  warm-up call that alone takes --budget is the measurement ("1 cold call" in the notes).
- peak resident memory: the process's VmHWM (/proc/self/status) once it has measured (it then
  exits without the interpreter's teardown): everything, inputs included. Of it, the
  interpreter with torch and our runtime is about 0.68 GiB here, with PyG about 0.83 GiB
  (base_rss in the JSON; peak_above_base the rest); bytes/edge = peak / E. On CUDA the memory
  column is torch.cuda.max_memory_allocated over the graph build, inference and training
  (host VmHWM in the JSON), and times are synchronised.
- variant: layer.chosen_variant(graph) for training / inference; layer.explain(graph) in the JSON.

The cap (--cap-gib, per process): after its imports, the process limits its address space
(RLIMIT_AS) to what it has mapped plus the cap less what is resident. Measured here, torch
alone maps 3.1 GiB of which 0.68 GiB is resident, so an RLIMIT_AS of the cap itself would cut
the process short by some 2.4 GiB; counting only what is added, an allocation that would take
the process past the cap fails at once, inside the call (RuntimeError "DefaultCPUAllocator:
not enough memory", std::bad_alloc, MemoryError), without touching the memory. (A cgroup's
memory.max would cap the resident set exactly, but needs a delegated cgroup, which a benchmark
cannot count on.) Beside it the parent polls the process's VmRSS every 50 ms and kills it above
the cap: that covers pages mapped before the limit was set, and CUDA runs, where no limit is
set (CUDA maps far more address space than it uses). An out-of-memory row says so ("OOM at
23 GiB cap" and where), so does a process killed by the kernel or a timeout ("> N s"); the other
rows go on, and a (graph, model, implementation) that measured nothing for want of memory or
time at one size is not run at the larger ones (--no-skip runs them). Processes run one at a
time.

Output: the markdown table by size, the ratios PyG / ours (above 1, ours is better), and the
growth between consecutive sizes (ratio of time and memory, and the same per doubling of E);
--json FILE writes every number.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import pathlib
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", ROOT / "build"))
CACHE = BUILD / "bench-scale-cache"
sys.path.insert(0, str(ROOT / "tools"))
import synth_graphs as sg  # noqa: E402

GiB = 2 ** 30
MiB = 2 ** 20

#: model -> the example file of ours
EXAMPLES = {"rgcn": "rgcn", "rgat": "rgat", "rgat_pyg": "rgat_pyg", "hgt": "hgt"}
#: (model, implementation) -> PyG's layer
PYG_LAYERS = {("rgcn", "pyg"): "RGCNConv", ("rgcn", "pyg_fast"): "FastRGCNConv",
              ("rgat_pyg", "pyg"): "RGATConv", ("hgt", "pyg"): "HGTConv"}
IMPLS = ("hector", "pyg", "pyg_fast")
#: weights compared by their gradients: (ours, PyG's), same layouts
GRAD_PAIRS = {"rgcn": [("W", "weight"), ("root", "root"), ("bias", "bias")],
              "rgat_pyg": [("W", "weight"), ("q", "q"), ("k", "k"), ("bias", "bias")]}
SAMPLE_ROWS = 256      # output rows every process records (plus the largest hubs)
SAMPLE_GRADS = 256     # entries of every compared weight gradient
FORWARD_TOL = 1e-4     # relative to the largest sampled value (float32), as bench_train's check
GRAD_TOL = 1e-3        # gradients sum over millions of edges in float32, in different orders
OOM_MARKERS = ("not enough memory", "defaultcpuallocator", "bad_alloc", "out of memory",
               "cannot allocate memory", "can't allocate memory", "memoryerror",
               "thread creation failed")   # libgomp, when the address-space limit is reached


def impl_label(model: str, impl: str) -> str:
    return "hector" if impl == "hector" else f"PyG {PYG_LAYERS[(model, impl)]}"


# ------------------------------------------------------------------------------------------------
# Memory: the cap, the process's resident set


def proc_status(key: str, pid: int | str = "self") -> int | None:
    """A /proc/PID/status field in bytes (VmRSS, VmHWM, VmSize), or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def apply_cap(cap_bytes: int) -> int:
    """Limits this process's address space so that it can map at most cap_bytes less what is
    resident now, beyond what it has mapped now; returns the limit."""
    size, rss = proc_status("VmSize"), proc_status("VmRSS")
    if size is None or rss is None:
        raise OSError("/proc/self/status has no VmSize/VmRSS")
    limit = size + max(cap_bytes - rss, 0)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def is_oom(e: BaseException | str) -> bool:
    if isinstance(e, MemoryError):
        return True
    return any(m in str(e).lower() for m in OOM_MARKERS)


def _fmt_gib(b: float) -> str:
    v = b / GiB
    return f"{v:.0f}" if v >= 10 and abs(v - round(v)) < 0.05 else f"{v:.3g}"


def oom_text(message: str, cap_bytes: int) -> str:
    """"OOM at 23 GiB cap", with the allocation that failed where the message names it."""
    text = f"OOM at {_fmt_gib(cap_bytes)} GiB cap"
    import re
    m = re.search(r"allocate (\d+) bytes", message)
    if m:
        text += f" (one allocation of {int(m.group(1)) / GiB:.3g} GiB)"
    return text


def run_capped(argv: list[str], env: dict, cap_bytes: int | None, timeout_s: float,
               log_path: pathlib.Path, poll_s: float = 0.05) -> dict:
    """Runs argv in its own session with stdout and stderr to log_path, killing it when its
    resident set passes cap_bytes or it runs past timeout_s. Returns {"returncode", "killed"
    (None, "cap" or "timeout"), "max_rss" (the largest VmRSS seen), "wall_s"}."""
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        p = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    killed, max_rss = None, 0
    try:
        while p.poll() is None:
            rss = proc_status("VmRSS", p.pid)
            if rss is not None:
                max_rss = max(max_rss, rss)
                if cap_bytes is not None and rss > cap_bytes:
                    killed = "cap"
            if killed is None and time.perf_counter() - t0 > timeout_s:
                killed = "timeout"
            if killed is not None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                break
            time.sleep(poll_s)
    finally:
        if p.poll() is None:   # interrupted: take the child with us
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return {"returncode": p.returncode, "killed": killed, "max_rss": max_rss,
            "wall_s": time.perf_counter() - t0}


def log_tail(path: pathlib.Path, lines: int = 12) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def classify_exit(outcome: dict, result: dict, tail: str, cap_bytes: int | None,
                  timeout_s: float) -> str | None:
    """What ended a process that did not finish its measurements, as the row's note; None when
    it finished."""
    if result.get("phase") == "done" and outcome["returncode"] == 0:
        return None
    where = result.get("phase", "start")
    cap = cap_bytes if cap_bytes is not None else 0
    if outcome["killed"] == "timeout":
        return f"> {timeout_s:g} s (in {where})"
    if outcome["killed"] == "cap":
        return f"OOM at {_fmt_gib(cap)} GiB cap (resident set passed it in {where})"
    rc = outcome["returncode"]
    if rc == -signal.SIGKILL:
        return f"killed by SIGKILL in {where} (the kernel's OOM killer?)"
    if is_oom(tail):
        last = tail.strip().splitlines()[-1] if tail.strip() else ""
        return oom_text(last, cap) + f" (in {where}, process died: {last[:120]})"
    last = tail.strip().splitlines()[-1] if tail.strip() else ""
    what = f"signal {-rc}" if rc < 0 else f"exit {rc}"
    return f"crashed ({what}) in {where}: {last[:160]}"


# ------------------------------------------------------------------------------------------------
# The measuring process


class Report(dict):
    """The process's results, rewritten atomically after every phase: a process that is killed
    leaves what it had measured."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def save(self, phase: str | None = None) -> None:
        if phase is not None:
            self["phase"] = phase
        self["hwm"] = proc_status("VmHWM")
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self, f)
        os.replace(tmp, self.path)


def make_weights(model: str, R: int, T: int, F: int, H: int, seed: int = 0) -> dict:
    """Every weight of the model file, by name, with the file's shapes (docs/language.md's
    layouts): uniform in +-1/sqrt(fan-in), biases and gates non-trivial so that the checks
    cover them."""
    import torch
    g = torch.Generator().manual_seed(seed)

    def uni(*shape, fan):
        b = 1.0 / math.sqrt(fan)
        return (torch.rand(*shape, generator=g) * 2 - 1) * b

    def nrm(*shape, mean=0.0, std=0.1):
        return torch.randn(*shape, generator=g) * std + mean
    if F % H:
        raise ValueError(f"--hidden {F} is not a multiple of --heads {H}")
    d = F // H
    if model == "rgcn":
        return {"W": uni(R, F, F, fan=F), "root": uni(F, F, fan=F), "bias": nrm(F)}
    if model == "rgat":
        return {"W": uni(R, F, H, d, fan=F), "a_src": uni(R, H, d, fan=d),
                "a_dst": uni(R, H, d, fan=d)}
    if model == "rgat_pyg":
        return {"W": uni(R, F, H * d, fan=F), "q": uni(H * d, H, fan=H * d),
                "k": uni(H * d, H, fan=H * d), "bias": nrm(H * d)}
    if model == "hgt":
        w = {}
        for n in ("k", "q", "v"):
            w[f"W{n}"] = uni(T, F, H, d, fan=F)
            w[f"b{n}"] = nrm(T, H, d)
        w.update({"W_att": uni(R, H, d, d, fan=d), "W_msg": uni(R, H, d, d, fan=d),
                  "mu": nrm(R, H, mean=1.0), "A": uni(T, F, F, fan=F), "bA": nrm(T, F),
                  "skip": nrm(T, std=1.0)})
        return w
    raise ValueError(f"unknown model {model!r}")


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind the tensors (a view or an alias counts once)."""
    seen, total = set(), 0
    for t in tensors:
        st = t.untyped_storage()
        key = (t.device.type, t.device.index, st.data_ptr())
        if key not in seen:
            seen.add(key)
            total += st.nbytes()
    return total


def timed(fn: Callable[[], Any], repeats: int, budget: float, sync: Callable[[], None]) -> dict:
    """One warm-up call, then the median of up to `repeats` calls, stopping once they have
    taken `budget` seconds (at least one); a warm-up that alone takes `budget` is the result."""
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    warm = time.perf_counter() - t0
    if warm >= budget or repeats < 1:
        return {"s": warm, "n": 1, "cold": True, "warmup_s": warm}
    times = []
    start = time.perf_counter()
    while len(times) < repeats and (not times or time.perf_counter() - start < budget):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return {"s": statistics.median(times), "min_s": min(times), "n": len(times),
            "warmup_s": warm, "all_s": times}


def short_error(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:400]


def child_main(config_path: str) -> int:
    """One (graph, scale, model, implementation): see the module docstring for what it does."""
    cfg = json.loads(pathlib.Path(config_path).read_text())
    rep = Report(cfg["result"])
    rep.save("start")
    phase = "start"
    try:
        import numpy as np
        import torch
        torch.set_num_threads(cfg["threads"])
        # --tf32: float32 matrix products on TF32 tensor cores, PyTorch's (PyG's) and ours alike.
        torch.backends.cuda.matmul.allow_tf32 = bool(cfg.get("tf32"))
        dev = torch.device(cfg["device"])
        cuda = dev.type == "cuda"
        sync = (lambda: torch.cuda.synchronize()) if cuda else (lambda: None)
        model, impl = cfg["model"], cfg["impl"]
        sys.path.insert(0, str(ROOT / "runtime" / "python"))
        sys.path.insert(0, str(ROOT / "test" / "python"))
        if impl == "hector":
            import hector
            Layer = hector.load(cfg["lib"])
            if cfg.get("tensor_pool") == "off":
                hector.configure_tensor_pool(min_bytes=1 << 62)   # every tensor from PyTorch
            elif cfg.get("tensor_pool") == "process":
                hector.configure_tensor_pool(process_wide=True)
        else:
            import torch_geometric.typing
            import bench_train   # hetero_linear_split; it imports references and PyG
            from references import TestGraph, hgt_pyg, rgat_pyg, rgcn_pyg
        if cuda:
            torch.zeros(1, device=dev)   # the context, before the baseline
            if cfg.get("gpu_cap_bytes"):
                total = torch.cuda.get_device_properties(dev).total_memory
                torch.cuda.set_per_process_memory_fraction(
                    min(1.0, cfg["gpu_cap_bytes"] / total), dev)
        rep["base_rss"] = proc_status("VmRSS")
        if cfg["cap_bytes"] and not cuda:
            rep["rlimit_as"] = apply_cap(cfg["cap_bytes"])
        rep.save("load")

        phase = "load"
        spec = sg.SPECS[cfg["graph"]]
        cache = pathlib.Path(cfg["cache_dir"]) if cfg.get("cache_dir") else None
        g, _, how = sg.load_or_generate(spec, cfg["scale"], cfg["seed"], cache, 0, store=False)
        rep["graph_from"] = how
        N, E, R, T = g.num_nodes, g.num_edges, g.num_relations, g.num_ntypes
        off = g.ntype_offsets
        coo = {k: torch.from_numpy(getattr(g, k)) for k in ("src", "dst", "etype", "ntype")}
        del g
        coo_bytes = sum(t.nbytes for t in coo.values())
        gen = torch.Generator().manual_seed(cfg["seed"])
        x = torch.randn(N, cfg["hidden"], generator=gen).to(dev)
        # Output rows: all nodes, except for HGT the node types PyG gives an output (those that
        # receive edges), in type order.
        counts = [off[t + 1] - off[t] for t in range(T)]
        rel_counts = cfg["rel_counts"]
        covered = sorted({cfg["rel_dst_type"][r] for r in range(R) if rel_counts[r] > 0})
        if model != "hgt":
            covered = list(range(T))
        M = sum(counts[t] for t in covered)
        target = torch.randn(M, cfg["hidden"],
                             generator=torch.Generator().manual_seed(cfg["seed"] + 1)).to(dev)
        # The rows both sides record: fixed random positions and the largest hubs.
        pos_of = {}
        acc = 0
        for t in covered:
            pos_of[t] = acc
            acc += counts[t]
        sample = set(torch.randint(0, max(M, 1), (min(SAMPLE_ROWS, M),),
                                   generator=torch.Generator().manual_seed(7)).tolist())
        for v in cfg.get("hubs", []):
            t = next(t for t in range(T) if off[t] <= v < off[t + 1])
            if t in pos_of:
                sample.add(pos_of[t] + v - off[t])
        sample = torch.tensor(sorted(sample), dtype=torch.int64)
        # ... as node ids, and grouped by node type (positions follow the types' order)
        starts = torch.tensor([pos_of[t] for t in covered], dtype=torch.int64)
        which = torch.bucketize(sample, starts, right=True) - 1
        sample_type = torch.tensor(covered, dtype=torch.int64)[which]
        sample_local = sample - starts[which]
        sample_ids = torch.tensor(off)[sample_type] + sample_local
        weights = make_weights(model, R, T, cfg["hidden"], cfg["heads"], cfg["seed"])
        rep.update(N=N, E=E, R=R, T=T, coo_bytes=coo_bytes, output_rows=M)
        rep.save("graph")

        phase = "graph"
        if cuda:
            coo = {k: v.to(dev) for k, v in coo.items()}
            sync()
            torch.cuda.reset_peak_memory_stats(dev)
        if impl == "hector":
            t0 = time.perf_counter()
            graph = hector.Graph(coo["src"], coo["dst"], coo["etype"], num_nodes=N,
                                 ntype=coo["ntype"], num_relations=R, num_ntypes=T)
            sync()
            rep["graph_build_s"] = time.perf_counter() - t0
            tensors = list(graph.tensors().values())
            rep["graph_bytes"] = storage_bytes(tensors)
            rep["graph_sum_nbytes"] = sum(t.nbytes for t in tensors)
            rep["graph_vs_coo"] = rep["graph_bytes"] / coo_bytes
            del tensors
            names = [d["name"] for d in Layer.manifest["inputs"]]
            t0 = time.perf_counter()
            norm = None
            if "norm" in names:   # PyG RGCNConv's mean: 1/|N_r(i)| per edge, in the user's order
                try:
                    norm = graph.edge_norm("relation", torch.float32)
                except AttributeError:   # a graph without it: computed here
                    key = coo["dst"] * R + coo["etype"]
                    counts = torch.bincount(key, minlength=N * R)
                    norm = 1.0 / counts[key].to(torch.float32)
                    del key, counts
                    rep.setdefault("notes", []).append("norm computed by the benchmark")
                norm = norm.to(torch.float32)
            sync()
            rep["norm_s"] = time.perf_counter() - t0
            del coo   # the graph keeps what it needs
            layer = Layer(num_relations=R, num_ntypes=T, dtype=torch.float32, device=dev)
            params = dict(layer.named_parameters())
            if set(params) != set(weights):
                raise RuntimeError(f"the library's weights {sorted(params)} are not the "
                                   f"benchmark's {sorted(weights)} for {model}")
            with torch.no_grad():
                for name, p in params.items():
                    if tuple(p.shape) != tuple(weights[name].shape):
                        raise RuntimeError(f"weight {name}: the library has {tuple(p.shape)}, "
                                           f"the benchmark {tuple(weights[name].shape)}")
                    p.copy_(weights[name])
            inputs = []
            for name in names:
                if name in ("x", "norm"):
                    inputs.append(x if name == "x" else norm)
                else:
                    raise RuntimeError(f"{model}: the library wants an input {name!r} the "
                                       "benchmark does not know")
            del norm
            # The call's dtype: autocast's where the layer runs under it (its variant choice
            # weighs 16-bit traffic).
            call_dtype = getattr(torch, cfg["autocast"]) if cfg.get("autocast") else None
            for training in (True, False):
                try:
                    rep[f"variant_{'train' if training else 'infer'}"] = \
                        layer.chosen_variant(graph, training=training, dtype=call_dtype)
                except Exception as e:   # noqa: BLE001 - an API that changed: say so, go on
                    rep[f"variant_{'train' if training else 'infer'}"] = f"? ({short_error(e)})"
            try:
                rep["explain"] = layer.explain(graph)
            except Exception as e:   # noqa: BLE001
                rep["explain"] = f"? ({short_error(e)})"
            # The structures the layers read are built on first use: time that preparation
            # apart (it is part of the graph's cost, not of a step).
            if hasattr(layer, "prepare"):
                t0 = time.perf_counter()
                for training in (True, False):
                    layer.prepare(graph, training=training)
                sync()
                rep["graph_prepare_s"] = time.perf_counter() - t0
            if M == N:
                rows = lambda out: out   # noqa: E731
            else:
                row_idx = torch.cat([torch.arange(off[t], off[t + 1]) for t in covered]).to(dev)
                rows = lambda out: out[row_idx]   # noqa: E731
            module = layer
            call = lambda: layer(graph, *inputs)   # noqa: E731
            ids_dev = sample_ids.to(dev)
            pick = lambda out: out.index_select(0, ids_dev)   # noqa: E731
            grad_of = {a: params[a] for a, _ in GRAD_PAIRS.get(model, [])}
        else:
            # PyG's layer with our weights, built by references.py on a graph with one edge per
            # relation (node t is of type t), then run on the big graph.
            tiny = TestGraph(torch.tensor(cfg["rel_src_type"]), torch.tensor(cfg["rel_dst_type"]),
                             torch.arange(R), torch.arange(T), T, R, T, cfg["rel_src_type"],
                             cfg["rel_dst_type"])
            xt = torch.randn(T, cfg["hidden"], generator=gen)
            if model == "rgcn":
                conv, _ = rgcn_pyg(tiny, xt, weights["W"], weights["root"], weights["bias"])
                if impl == "pyg_fast":
                    from torch_geometric.nn import FastRGCNConv
                    fast = FastRGCNConv(cfg["hidden"], cfg["hidden"], R, aggr="mean")
                    fast.load_state_dict(conv.state_dict())
                    conv = fast
            elif model == "rgat_pyg":
                H = cfg["heads"]
                W = weights["W"].view(R, cfg["hidden"], H, cfg["hidden"] // H)
                conv, _ = rgat_pyg(tiny, xt, W, weights["q"], weights["k"], weights["bias"])
            elif model == "hgt":
                import types
                _, _, conv, _, _ = hgt_pyg(tiny, xt, types.SimpleNamespace(**weights),
                                           heads=cfg["heads"], return_module=True)
                if not torch_geometric.typing.WITH_SEGMM and not cfg["pyg_slow"]:
                    for rel in (conv.k_rel, conv.v_rel):
                        rel.forward_naive = types.MethodType(bench_train.hetero_linear_split,
                                                             rel)
            else:
                raise RuntimeError(f"no PyG layer for {model}")
            conv = conv.to(dev)
            t0 = time.perf_counter()
            if model == "hgt":   # the heterogeneous form: per-type features (views), per-relation
                ro = [0] + list(np.cumsum(rel_counts).tolist())
                key = [(f"t{cfg['rel_src_type'][r]}", f"r{r}", f"t{cfg['rel_dst_type'][r]}")
                       for r in range(R)]
                order = sorted(range(R), key=lambda r: (cfg["rel_src_type"][r], r,
                                                         cfg["rel_dst_type"][r]))
                ei = {}
                for r in order:   # hgt_pyg's edge-type order
                    a, b = cfg["rel_src_type"][r], cfg["rel_dst_type"][r]
                    s, d = coo["src"][ro[r]:ro[r + 1]], coo["dst"][ro[r]:ro[r + 1]]
                    ei[key[r]] = torch.stack([s - off[a], d - off[b]])
                x_in = {f"t{t}": x[off[t]:off[t + 1]] for t in range(T)}
                sync()
                rep["graph_build_s"] = time.perf_counter() - t0
                rep["graph_bytes"] = storage_bytes(ei.values())
                del coo
                module = conv
                call = lambda: conv(x_in, ei)   # noqa: E731
                rows = lambda out: torch.cat([out[f"t{t}"] for t in covered])   # noqa: E731
                local = {t: sample_local[sample_type == t].to(dev) for t in covered}

                def pick(out):
                    return torch.cat([out[f"t{t}"].index_select(0, local[t]) for t in covered])
            else:
                edge_index = torch.stack([coo["src"], coo["dst"]])
                edge_type = coo["etype"]
                sync()
                rep["graph_build_s"] = time.perf_counter() - t0
                rep["graph_bytes"] = storage_bytes([edge_index, edge_type])
                del coo
                module = conv
                call = lambda: conv(x, edge_index, edge_type)   # noqa: E731
                rows = lambda out: out   # noqa: E731
                ids_dev = sample_ids.to(dev)
                pick = lambda out: out.index_select(0, ids_dev)   # noqa: E731
            params = dict(conv.named_parameters())
            grad_of = {a: params[b] for a, b in GRAD_PAIRS.get(model, [])}
        rep["params"] = sum(p.numel() for p in module.parameters())
        if cuda:
            rep["cuda_peak_graph"] = torch.cuda.max_memory_allocated(dev)
        rep.save("infer")

        # Inference (the layer alone), then training; the output at the sampled rows from the
        # last inference.
        phase = "infer"
        last = {}

        def amp():
            """torch.autocast to --autocast's dtype around the layer (both sides), or nothing."""
            if not cfg.get("autocast"):
                return contextlib.nullcontext()
            return torch.autocast(dev.type, dtype=getattr(torch, cfg["autocast"]))

        def infer():
            with torch.no_grad(), amp():
                out = call()
                last["rows"] = pick(out)
                del out
        module.eval()
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        try:
            rep["infer"] = timed(infer, cfg["repeats"], cfg["budget"], sync)
            rep["sample_rows"] = sample.tolist()
            rep["out_rows"] = last["rows"].cpu().tolist()
        except Exception as e:   # noqa: BLE001 - a failed measurement is a result
            rep["infer"] = {"error": short_error(e), "oom": is_oom(e)}
        if cuda:
            rep["cuda_peak_infer"] = torch.cuda.max_memory_allocated(dev)
        last.clear()
        rep.save("train")

        phase = "train"
        module.train()
        weights_list = list(module.parameters())

        def train():
            for p in weights_list:
                p.grad = None
            with amp():
                out = call()
            loss = torch.nn.functional.mse_loss(rows(out).float(), target)
            del out
            loss.backward()
        if cuda:
            torch.cuda.reset_peak_memory_stats(dev)
        # Also after an inference that ran out of memory: ours may choose another variant for
        # training, and a failed allocation leaves the process usable.
        try:
            rep["train"] = timed(train, cfg["repeats"], cfg["budget"], sync)
            g_samples = {}
            for name, p in grad_of.items():
                if p.grad is None:
                    g_samples[name] = None
                    continue
                flat = p.grad.detach().reshape(-1).cpu()
                idx = torch.randint(0, flat.numel(), (SAMPLE_GRADS,),
                                    generator=torch.Generator().manual_seed(11))
                g_samples[name] = flat[idx].tolist()
            rep["grad_samples"] = g_samples
        except Exception as e:   # noqa: BLE001
            rep["train"] = {"error": short_error(e), "oom": is_oom(e)}
        if cuda:
            rep["cuda_peak_train"] = torch.cuda.max_memory_allocated(dev)
        if impl == "hector" and not cuda:
            rep["tensor_pool"] = hector.tensor_pool_stats()
        if cfg.get("profile") and "error" not in rep["train"]:
            # One more training step under torch.profiler: the emitted kernels and glue ops are
            # RECORD_FUNCTION ranges, so their times show where a step's time goes.
            from torch.profiler import ProfilerActivity, profile
            acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
            with profile(activities=acts) as prof:
                train()
                sync()
            key = "self_device_time_total" if cuda else "self_cpu_time_total"
            top = sorted(prof.key_averages(), key=lambda e: getattr(e, key), reverse=True)
            rep["profile"] = [{"name": e.key, "self_ms": getattr(e, key) / 1e3,
                               "calls": e.count} for e in top[:cfg["profile"]]]
        for p in weights_list:
            p.grad = None
        if impl == "hector":   # structures a graph builds on first use count too
            rep["graph_bytes_end"] = storage_bytes(graph.tensors().values())
        rep.save("done")
    except Exception as e:   # noqa: BLE001 - the parent reports it
        rep["error"] = short_error(e)
        rep["error_phase"] = phase
        rep["oom"] = is_oom(e)
        if not rep["oom"]:
            rep["traceback"] = traceback.format_exc()[-4000:]
        rep.save("done")
    return 0


def compile_main(args: list[str]) -> int:
    """hectorc through bench_train's cached compile: prints the library's path."""
    example, target, params = args[0], args[1], json.loads(args[2])
    import bench_train
    print(bench_train.compile_example(example, params, target))
    return 0


# ------------------------------------------------------------------------------------------------
# The runner


def model_params(model: str, hidden: int, heads: int) -> dict[str, int]:
    """hectorc -P parameters of each example at the benchmark's sizes (bench_train's)."""
    if model == "rgcn":
        return {"in": hidden, "out": hidden}
    if hidden % heads:
        raise SystemExit(f"--hidden {hidden} is not a multiple of --heads {heads}")
    if model in ("rgat", "rgat_pyg"):
        return {"in": hidden, "d": hidden // heads, "H": heads}
    return {"in": hidden, "out": hidden, "H": heads}


def compile_library(model: str, args) -> str:
    target = "cuda" if args.device == "cuda" else "cpu"
    params = model_params(model, args.hidden, args.heads)
    r = subprocess.run([sys.executable, __file__, "_compile", EXAMPLES[model], target,
                        json.dumps(params)], capture_output=True, text=True,
                       env=child_env(args))
    if r.returncode != 0:
        lines = (r.stdout + r.stderr).strip().splitlines()
        raise RuntimeError(f"compiling {EXAMPLES[model]}.hector failed: "
                           f"{lines[-1] if lines else ''}\n{r.stdout}{r.stderr}")
    for line in r.stdout.splitlines():
        if line.startswith("compiling "):
            print(line, flush=True)
    return r.stdout.strip().splitlines()[-1]


def build_packages(directory: pathlib.Path, models: list[str], args) -> dict:
    """The libraries of DIR/scale-MODEL, built against $HECTOR_BUILD_DIR's runtime by
    tools/gpu_models.py's build_package; a package that fails to build is an error its rows
    report, as a failed compile is."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import gpu_models
    runtime = os.environ.get("HECTOR_BUILD_DIR")
    if not runtime:
        raise SystemExit("--packages needs HECTOR_BUILD_DIR: the runtime's build directory")
    libs = {}
    for m in models:
        pkg = directory / f"scale-{m}"
        if not (pkg / "manifest.json").is_file():
            libs[m] = RuntimeError(f"no package {pkg} (run tools/gpu-check-prepare.sh)")
            continue
        name, lib, secs, log = gpu_models.build_package(pkg, pathlib.Path(runtime),
                                                        args.device == "cuda", os.cpu_count() or 2)
        print(f"built {name} in {secs:.0f} s" if lib else f"building {name} failed:\n{log}",
              flush=True)
        libs[m] = str(lib) if lib else RuntimeError(f"building {pkg} failed")
    return libs


def child_env(args) -> dict:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads),
               KINETO_LOG_LEVEL="5", PYTHONUNBUFFERED="1", HECTOR_BUILD_DIR=str(BUILD))
    return env


def rel_err(a, b) -> float | None:
    """max |a - b| / max |b| over two equally shaped nested lists (None where absent)."""
    if a is None or b is None:
        return None
    import numpy as np
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return math.inf
    return float(np.abs(a - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0), 1e-30))


def run_one(cfg: dict, args, work: pathlib.Path) -> dict:
    """One process; returns its row."""
    tag = f"{cfg['graph']}-{cfg['scale']:g}-{cfg['model']}-{cfg['impl']}"
    cfg = dict(cfg, result=str(work / f"{tag}.json"))
    cfg_path = work / f"{tag}.cfg.json"
    cfg_path.write_text(json.dumps(cfg))
    log = work / f"{tag}.log"
    cap = cfg["cap_bytes"]
    outcome = run_capped([sys.executable, __file__, "_child", str(cfg_path)], child_env(args),
                         cap, args.timeout, log)
    try:
        result = json.loads(pathlib.Path(cfg["result"]).read_text())
    except (OSError, ValueError):
        result = {}
    tail = log_tail(log)
    row = {k: cfg[k] for k in ("graph", "scale", "model", "impl")}
    row["layer"] = (f"{EXAMPLES[cfg['model']]}.hector" if cfg["impl"] == "hector"
                    else PYG_LAYERS[(cfg["model"], cfg["impl"])])
    row.update({k: v for k, v in result.items()
                if k not in ("hwm", "phase", "out_rows", "sample_rows", "grad_samples")})
    row["peak_rss"] = result.get("hwm")
    row["watchdog_max_rss"] = outcome["max_rss"]
    row["wall_s"] = outcome["wall_s"]
    row["_fingerprint"] = {k: result.get(k) for k in ("sample_rows", "out_rows", "grad_samples")}
    notes = list(result.get("notes", []))
    ended = classify_exit(outcome, result, tail, cap, args.timeout)
    if ended is not None:
        row["ended"] = ended
        notes.append(ended)
        row["log_tail"] = tail
        phase = result.get("phase", "start")
        for kind in ("infer", "train"):
            if kind in row:
                continue
            if phase == "infer" and kind == "train":   # it never started
                row[kind] = {"error": "not run", "not_run": True}
            else:
                row[kind] = {"error": ended, "oom": ended.startswith("OOM")
                             or "SIGKILL" in ended, "timeout": ended.startswith(">")}
    if "error" in result:
        e = result["error"]
        note = (oom_text(e, cap or 0) + f" in {result.get('error_phase')}" if result.get("oom")
                else f"error in {result.get('error_phase')}: {e}")
        notes.append(note)
        for kind in ("infer", "train"):
            row.setdefault(kind, {"error": note, "oom": bool(result.get("oom"))})
    for kind in ("infer", "train"):
        m = row.get(kind)
        if isinstance(m, dict) and "error" in m and m.get("oom") and "OOM" not in m["error"]:
            m["note"] = oom_text(m["error"], cap or 0)
        if isinstance(m, dict) and m.get("cold"):
            notes.append(f"{kind}: 1 cold call")
    # The memory the report compares: the process's peak resident set, or on CUDA the peak of
    # PyTorch's GPU allocations over the graph build, inference and training.
    if cfg["device"] == "cuda":
        peaks = [row.get(f"cuda_peak_{k}") for k in ("graph", "infer", "train")]
        row["peak_mem"] = max([p for p in peaks if p is not None], default=None)
    else:
        row["peak_mem"] = row.get("peak_rss")
    if row.get("peak_mem") and row.get("E"):
        row["bytes_per_edge"] = row["peak_mem"] / row["E"]
    if row.get("peak_rss") and row.get("base_rss") and cfg["device"] != "cuda":
        row["peak_above_base"] = row["peak_rss"] - row["base_rss"]
    row["notes"] = notes
    return row


def cell_time(m: dict | None) -> str:
    if not m:
        return "-"
    if "error" in m:
        if m.get("not_run"):
            return "not run"
        if m.get("timeout"):
            return m["error"].split(" (")[0]
        return "OOM" if m.get("oom") else "error"
    return f"{m['s']:.3g}"


def fmt(v, digits=3, scale=1.0) -> str:
    return "-" if v is None else f"{v * scale:.{digits}g}"


def add_checks(rows: list[dict], fwd_tol: float = FORWARD_TOL,
               grad_tol: float = GRAD_TOL) -> None:
    """forward_rel_err / grad_rel_err of every PyG row against ours on the same graph and
    size, from the recorded samples; a note where they disagree."""
    ours = {(r["graph"], r["scale"], r["model"]): r for r in rows if r["impl"] == "hector"}
    for r in rows:
        if r["impl"] == "hector":
            continue
        o = ours.get((r["graph"], r["scale"], r["model"]))
        fa, fb = (o or {}).get("_fingerprint", {}), r.get("_fingerprint", {})
        if not fa.get("out_rows") or not fb.get("out_rows"):
            continue
        if fa["sample_rows"] != fb["sample_rows"]:
            r["notes"].append("not compared: the sampled rows differ")
            continue
        err = rel_err(fa["out_rows"], fb["out_rows"])
        r["forward_rel_err"] = err
        o.setdefault("forward_rel_err", err)
        if not err < fwd_tol:
            r["notes"].append(f"outputs differ from ours (rel err {err:.1e})")
        ga, gb = fa.get("grad_samples") or {}, fb.get("grad_samples") or {}
        errs = [rel_err(ga.get(k), gb.get(k)) for k in ga if k in gb]
        errs = [e for e in errs if e is not None]
        if errs:
            r["grad_rel_err"] = max(errs)
            o.setdefault("grad_rel_err", max(errs))
            if not max(errs) < grad_tol:
                r["notes"].append(f"gradients differ from ours (rel err {max(errs):.1e})")


def table(rows: list[dict], args) -> list[str]:
    mem_head = "peak GPU GiB" if args.device == "cuda" else "peak RSS GiB"
    heads = ["graph", "scale", "N", "E", "model", "impl", "graph build s", "graph MiB",
             "train step s", "inference s", mem_head, "bytes/edge", "variant", "notes"]
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    for r in rows:
        variant = r.get("variant_train") or ""
        if r.get("variant_infer") and r.get("variant_infer") != variant:
            variant += f" / {r['variant_infer']}"
        mem, bpe = r.get("peak_mem"), r.get("bytes_per_edge")
        notes = list(r["notes"])
        for kind in ("train", "infer"):
            m = r.get(kind) or {}
            if "error" in m and m["error"] not in notes and not m.get("timeout") \
                    and not m.get("not_run"):
                notes.append(f"{kind}: {m.get('note') or m['error']}")
        if r.get("graph_bytes_end", 0) > r.get("graph_bytes", 0):
            end = r["graph_bytes_end"]
            grew = f"graph grew to {end / MiB:.3g} MiB"
            if r.get("coo_bytes"):
                grew += f" ({end / r['coo_bytes']:.2f}x COO)"
            if r.get("graph_prepare_s") is not None:
                grew += f" in {r['graph_prepare_s']:.2f} s of preparation"
            notes.insert(0, grew)
        if r.get("graph_vs_coo"):
            notes.insert(0, f"graph {r['graph_vs_coo']:.2f}x COO")
        if "skipped" in r:
            notes = [r["skipped"]]
        out.append("| " + " | ".join([
            r["graph"], f"{r['scale']:g}", f"{r.get('N', '-'):,}" if r.get("N") else "-",
            f"{r.get('E'):,}" if r.get("E") else "-", r["model"],
            impl_label(r["model"], r["impl"]), fmt(r.get("graph_build_s")),
            fmt(r.get("graph_bytes"), scale=1 / MiB), cell_time(r.get("train")),
            cell_time(r.get("infer")), fmt(mem, scale=1 / GiB),
            "-" if bpe is None else f"{bpe:,.0f}", variant or "-",
            "; ".join(notes).replace("|", "/")]) + " |")
    return out


def ratios(rows: list[dict], args) -> list[str]:
    """PyG / ours per (graph, scale, model) and PyG layer."""
    ours = {(r["graph"], r["scale"], r["model"]): r for r in rows if r["impl"] == "hector"}
    out = ["| graph | scale | model | PyG layer | train step | inference | peak memory |",
           "|---|---|---|---|---|---|---|"]
    mem_key = "peak_mem"

    def ratio(p, o):
        if p is None or o is None:
            return "-"
        ok_p, ok_o = "s" in p, "s" in o
        if ok_p and ok_o and o["s"] > 0:
            return f"{p['s'] / o['s']:.2f}x"
        if ok_o and "error" in p:
            return "PyG " + ("OOM" if p.get("oom") else cell_time(p))
        if ok_p and "error" in o:
            return "ours " + ("OOM" if o.get("oom") else cell_time(o))
        return "-"
    for r in rows:
        o = ours.get((r["graph"], r["scale"], r["model"]))
        if r["impl"] == "hector" or o is None or "skipped" in r:
            continue
        pm, om = r.get(mem_key), o.get(mem_key)
        done_p = "s" in (r.get("train") or {})
        done_o = "s" in (o.get("train") or {})
        mem = f"{pm / om:.2f}x" if pm and om and done_p and done_o else "-"
        out.append(f"| {r['graph']} | {r['scale']:g} | {r['model']} | "
                   f"{PYG_LAYERS[(r['model'], r['impl'])]} | "
                   f"{ratio(r.get('train'), o.get('train'))} | "
                   f"{ratio(r.get('infer'), o.get('infer'))} | {mem} |")
    return out


def growth(rows: list[dict], args) -> list[str]:
    """Ratios between consecutive sizes of one (graph, model, implementation), and the same per
    doubling of E (ratio ** (1 / log2(E ratio)))."""
    mem_key = "peak_mem"
    by = {}
    for r in rows:
        if "E" in r and "skipped" not in r:
            by.setdefault((r["graph"], r["model"], r["impl"]), []).append(r)
    out = ["| graph | model | impl | scales | E ratio | train step | inference | peak memory "
           "| peak above base | graph build | graph bytes |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]

    def g(a, b, e_ratio):
        if a is None or b is None or a <= 0 or e_ratio <= 1:
            return "-"
        if abs(e_ratio - 2) < 0.01:   # a doubling already
            return f"{b / a:.2f}x"
        per = (b / a) ** (1 / math.log2(e_ratio))
        return f"{b / a:.2f}x ({per:.2f}x/doubling)"
    for (graph, model, impl), rs in by.items():
        rs = sorted(rs, key=lambda r: r["scale"])
        for a, b in zip(rs, rs[1:]):
            er = b["E"] / a["E"]
            t = lambda r, k: (r.get(k) or {}).get("s")   # noqa: E731
            # Memory only between two processes that measured everything (a peak that ended in
            # an allocation failure is the cap's, not the run's).
            full = all(t(r, k) is not None for r in (a, b) for k in ("train", "infer"))
            m = (lambda r, k: r.get(k)) if full else (lambda r, k: None)   # noqa: E731
            out.append(f"| {graph} | {model} | {impl_label(model, impl)} | "
                       f"{a['scale']:g} -> {b['scale']:g} | {er:.2f} | "
                       f"{g(t(a, 'train'), t(b, 'train'), er)} | "
                       f"{g(t(a, 'infer'), t(b, 'infer'), er)} | "
                       f"{g(m(a, mem_key), m(b, mem_key), er)} | "
                       f"{g(m(a, 'peak_above_base'), m(b, 'peak_above_base'), er)} | "
                       f"{g(a.get('graph_build_s'), b.get('graph_build_s'), er)} | "
                       f"{g(a.get('graph_bytes'), b.get('graph_bytes'), er)} |")
    return out


def machine() -> dict:
    info = {"cores": os.cpu_count()}
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        info["mem_total"] = proc_status("MemTotal", "self") or None
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                info["mem_total"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    from importlib import metadata
    for pkg in ("torch", "torch_geometric", "numpy", "pyg_lib"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = None
    try:
        info["revision"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short",
                                           "HEAD"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return info


def parse_list(text: str, allowed, what: str, ap) -> list[str]:
    items = [t for t in text.split(",") if t]
    for t in items:
        if t not in allowed:
            ap.error(f"unknown {what} {t!r} (one of {', '.join(allowed)})")
    if not items:
        ap.error(f"no {what} given")
    return items


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default="mag", help=f"comma-separated: {', '.join(sg.SPECS)}")
    ap.add_argument("--scales", default="0.125,0.25,0.5,1",
                    help="comma-separated scale factors of the graphs (1: full size)")
    ap.add_argument("--models", default="rgcn,rgat,rgat_pyg,hgt",
                    help=f"comma-separated: {', '.join(EXAMPLES)}")
    ap.add_argument("--impls", default="hector,pyg,pyg_fast",
                    help="comma-separated: hector (ours), pyg (RGCNConv, RGATConv, HGTConv), "
                         "pyg_fast (FastRGCNConv, rgcn only)")
    ap.add_argument("--cap-gib", type=float, default=23.0,
                    help="memory cap of every measuring process (resident set), GiB")
    ap.add_argument("--gpu-cap-gib", type=float,
                    help="--device cuda: also cap PyTorch's GPU allocations (default: none)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch.set_num_threads and OMP_NUM_THREADS of the measuring processes")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls after the warm-up")
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds after which a measurement stops repeating")
    ap.add_argument("--timeout", type=float, default=1200.0,
                    help="seconds after which a measuring process (its imports and graph "
                         "loading included) is stopped")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--hidden", type=int, default=64, help="in = out feature width")
    ap.add_argument("--heads", type=int, default=4, help="heads of RGAT and HGT")
    ap.add_argument("--seed", type=int, default=0, help="of the graphs, features and weights")
    ap.add_argument("--lib", action="append", default=[], metavar="MODEL=PATH",
                    help="use this library for MODEL instead of compiling it (e.g. one built "
                         "from a hectorc package on a machine without hectorc)")
    ap.add_argument("--packages", type=pathlib.Path, metavar="DIR",
                    help="build DIR/scale-MODEL (hectorc --emit=package, written by "
                         "tools/gpu-check-prepare.sh) against the runtime in $HECTOR_BUILD_DIR "
                         "and use it for MODEL: for a machine without hectorc")
    ap.add_argument("--pyg-slow", action="store_true",
                    help="without pyg-lib, train HGTConv through HeteroLinear's own per-type "
                         "loop rather than bench_train's hetero_linear_split")
    ap.add_argument("--no-skip", action="store_true",
                    help="also run the sizes above one where a row ran out of memory or time")
    ap.add_argument("--cache-gib", type=float, default=4.0,
                    help="disk limit of the graph cache (build/bench-scale-cache), GiB")
    ap.add_argument("--no-cache", action="store_true",
                    help="generate every graph in the measuring process (not counted in it)")
    ap.add_argument("--stats", action="store_true",
                    help="generate (or load) the graphs, print their statistics, measure nothing")
    ap.add_argument("--autocast", choices=["bfloat16", "float16"], default=None,
                    help="run every layer (ours and PyG's) under torch.autocast to this dtype, "
                         "float32 weights and inputs outside it; outputs are compared with "
                         "PyG's at 2^-5 / 2^-4 instead (tools/bench_precision.py compares with "
                         "float32)")
    ap.add_argument("--tf32", action="store_true",
                    help="allow TF32 tensor cores for float32 matrix products on CUDA "
                         "(torch.backends.cuda.matmul.allow_tf32), ours and PyG's alike; "
                         "outputs are compared with PyG's at 2^-7 / 2^-6")
    ap.add_argument("--samples", action="store_true",
                    help="--json: also store each row's sampled output rows and weight-gradient "
                         "samples (tools/bench_precision.py compares runs with them)")
    ap.add_argument("--tensor-pool", choices=["kernels", "off", "process"], default="kernels",
                    help="ours on the CPU: the runtime's tensor pool serves the compiled layers' "
                         "tensors (the default), none (every tensor from PyTorch's allocator, to "
                         "measure what the pool gives), or every CPU tensor of the process")
    ap.add_argument("--json", type=pathlib.Path, help="also write every number to this file")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also profile one training step (torch.profiler) and print its N "
                         "operators and kernels of most self time, per row")
    args = ap.parse_args()
    graphs = parse_list(args.graphs, list(sg.SPECS), "graph", ap)
    models = parse_list(args.models, list(EXAMPLES), "model", ap)
    impls = parse_list(args.impls, list(IMPLS), "implementation", ap)
    try:
        scales = sorted({float(s) for s in args.scales.split(",") if s})
    except ValueError:
        ap.error(f"--scales: not a list of numbers: {args.scales!r}")
    if not scales or any(not (s > 0 and math.isfinite(s)) for s in scales):
        ap.error("--scales: every scale must be a positive number")
    for name, v in (("--threads", args.threads), ("--repeats", args.repeats),
                    ("--hidden", args.hidden), ("--heads", args.heads)):
        if v < 1:
            ap.error(f"{name} must be at least 1")
    if args.cap_gib <= 0 or args.budget <= 0 or args.timeout <= 0:
        ap.error("--cap-gib, --budget and --timeout must be positive")
    if args.hidden % args.heads:
        ap.error(f"--hidden {args.hidden} is not a multiple of --heads {args.heads}")
    libs = {}
    for item in args.lib:
        m, _, path = item.partition("=")
        if m not in EXAMPLES or not path:
            ap.error(f"--lib {item!r}: expected MODEL=PATH with MODEL one of {', '.join(EXAMPLES)}")
        if not pathlib.Path(path).is_file():
            ap.error(f"--lib {item!r}: no such file")
        libs[m] = str(pathlib.Path(path).resolve())
    if args.packages is not None:
        libs.update(build_packages(args.packages, [m for m in models if m not in libs], args))
    cache_dir = None if args.no_cache else CACHE
    cache_bytes = int(args.cache_gib * GiB)

    # The graphs: generated (and cached) here, one at a time, before anything is measured on them.
    graph_info = {}

    def prepare(name: str, scale: float) -> dict:
        spec = sg.SPECS[name]
        key = sg.cache_key(spec, scale, args.seed)
        meta = sg.cached_meta(cache_dir, key) if cache_dir else None
        if meta is None or meta.get("stats") is None:
            t0 = time.perf_counter()
            g, stats, _ = sg.load_or_generate(spec, scale, args.seed, cache_dir, cache_bytes,
                                              with_stats=True)
            meta = dict(g.meta(), stats=stats, generate_s=time.perf_counter() - t0)
            del g
        info = {k: meta[k] for k in ("num_nodes", "num_edges", "ntype_counts", "rel_counts",
                                     "rel_src_type", "rel_dst_type")}
        info["stats"] = meta["stats"]
        if "generate_s" in meta:
            info["generate_s"] = meta["generate_s"]
        graph_info[(name, scale)] = info
        st = meta["stats"]
        print(f"graph {name} at scale {scale:g}: {st['nodes']:,} nodes, {st['edges']:,} edges, "
              f"{st['relations']} relations; in-degree max {st['in_degree']['max']:,} "
              f"(mean {st['in_degree']['mean']}), out-degree max {st['out_degree']['max']:,}"
              + (f"; generated in {meta['generate_s']:.1f} s" if "generate_s" in meta else ""),
              flush=True)
        return info

    if args.stats:
        for name in graphs:
            for scale in scales:
                print(json.dumps(prepare(name, scale)["stats"], indent=1))
        return 0

    runs = [(m, i) for m in models for i in impls if i == "hector" or (m, i) in PYG_LAYERS]
    no_peer = [m for m in models if any(i != "hector" for i in impls)
               and not any((m, i) in PYG_LAYERS for i in impls if i != "hector")]
    if "hector" in impls:
        for m in models:
            if m not in libs:
                try:
                    libs[m] = compile_library(m, args)
                except Exception as e:   # noqa: BLE001 - its rows say so
                    libs[m] = e
                    print(f"{m}: {e}", flush=True)
    cap = int(args.cap_gib * GiB)
    rows, failed_at = [], {}
    total = len(graphs) * len(scales) * len(runs)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        work = pathlib.Path(tmp)
        n = 0
        for name in graphs:
            for scale in scales:
                info = prepare(name, scale)
                hubs = info["stats"]["in_degree"]["top_nodes"]
                for model, impl in runs:
                    n += 1
                    row = {"graph": name, "scale": scale, "model": model, "impl": impl,
                           "N": info["num_nodes"], "E": info["num_edges"], "notes": []}
                    key = (name, model, impl)
                    if key in failed_at and not args.no_skip:
                        row["skipped"] = f"not run: {failed_at[key]}"
                    elif impl == "hector" and isinstance(libs.get(model), Exception):
                        row["skipped"] = f"not run: {short_error(libs[model])}"
                    if "skipped" in row:
                        rows.append(row)
                        print(f"[{n}/{total}] {name} {scale:g} {model} {impl}: {row['skipped']}",
                              flush=True)
                        continue
                    cfg = {"graph": name, "scale": scale, "seed": args.seed, "model": model,
                           "impl": impl, "hidden": args.hidden, "heads": args.heads,
                           "threads": args.threads, "device": args.device,
                           "repeats": args.repeats, "budget": args.budget, "cap_bytes": cap,
                           "gpu_cap_bytes": int(args.gpu_cap_gib * GiB) if args.gpu_cap_gib
                           else None, "lib": libs.get(model) if impl == "hector" else None,
                           "cache_dir": str(cache_dir) if cache_dir else None,
                           "rel_counts": info["rel_counts"], "rel_src_type": info["rel_src_type"],
                           "rel_dst_type": info["rel_dst_type"], "hubs": hubs,
                           "pyg_slow": args.pyg_slow, "profile": args.profile,
                           "tensor_pool": args.tensor_pool, "autocast": args.autocast,
                           "tf32": args.tf32}
                    row = run_one(cfg, args, work)
                    rows.append(row)
                    tr, inf = row.get("train") or {}, row.get("infer") or {}
                    # Nothing measured for want of memory or time: the larger sizes would fare
                    # no better.
                    lacking = [m for m in (inf, tr) if m.get("oom") or m.get("timeout")]
                    if lacking and not any("s" in m for m in (tr, inf)):
                        failed_at[key] = ((lacking[0].get("note") or lacking[0]["error"])
                                          .split(" (")[0] + f" at scale {scale:g}")
                    secs = lambda m: cell_time(m) + (" s" if "s" in m else "")   # noqa: E731
                    print(f"[{n}/{total}] {name} {scale:g} {model} {impl}: train "
                          f"{secs(tr)}, inference {secs(inf)}, peak RSS "
                          f"{fmt(row.get('peak_rss'), scale=1 / GiB)} GiB"
                          + (f"; {'; '.join(row['notes'])}" if row["notes"] else ""),
                          flush=True)
    # Under autocast both sides round to 16 bits (PyG's sums too): checked at 16-bit resolution.
    # With TF32 both sides round the operands of their products to 11 significant bits.
    tols = ((2 ** -5, 2 ** -4) if args.autocast else (2 ** -7, 2 ** -6) if args.tf32
            else (FORWARD_TOL, GRAD_TOL))
    add_checks(rows, *tols)
    mach = machine()
    precision = (f"float32 under {args.autocast} autocast" if args.autocast
                 else "float32, TF32 products" if args.tf32 else "float32")
    print(f"\n{args.device}, {precision}, hidden {args.hidden}, {args.heads} heads, {args.threads} "
          f"threads, median of up to {args.repeats} after a warm-up (budget {args.budget:g} s), "
          f"cap {args.cap_gib:g} GiB per process, tensor pool: {args.tensor_pool}; "
          f"{mach.get('cpu', '?')}, {mach['cores']} cores, "
          f"{(mach.get('mem_total') or 0) / GiB:.0f} GiB; torch {mach['torch']}, PyG "
          f"{mach['torch_geometric']}{'' if mach.get('pyg_lib') else ' (without pyg-lib)'}, "
          f"revision {mach.get('revision', '?')}\n")
    print("\n".join(table(rows, args)))
    checked = [r for r in rows if "forward_rel_err" in r and r["impl"] != "hector"]
    if checked:
        fwd = max(r["forward_rel_err"] for r in checked)
        grads = [r["grad_rel_err"] for r in checked if "grad_rel_err" in r]
        bad = [r for r in checked if any("differ" in n for n in r["notes"])]
        print(f"\nChecks: the outputs of {len(checked)} PyG row(s) at {SAMPLE_ROWS}+ sampled rows "
              f"against ours: largest relative error {fwd:.1e}"
              + (f"; weight gradients {max(grads):.1e}" if grads else "")
              + (f"; {len(bad)} disagree (see notes)" if bad else
                 f" (within {tols[0]:g} / {tols[1]:g})"))
    if no_peer:
        print(f"\n{', '.join(no_peer)}: no PyG layer computes this model (ours only).")
    r = ratios(rows, args)
    if len(r) > 2:
        print("\nPyG / ours (above 1x, ours is better):\n")
        print("\n".join(r))
    profiled = [r for r in rows if r.get("profile")]
    if profiled:
        print(f"\nOne training step under torch.profiler: the {args.profile} entries of most self "
              "time (ms), per row; the last column is the time's growth from the previous size:\n")
        seen = {}
        for r in profiled:
            key = (r["graph"], r["model"], r["impl"])
            print(f"{r['graph']} {r['scale']:g} {r['model']} {r['impl']} "
                  f"(train step {fmt((r.get('train') or {}).get('s'))} s):")
            before = seen.get(key, {})
            for e in r["profile"]:
                prev = before.get(e["name"])
                grow = f"  x{e['self_ms'] / prev:.2f}" if prev else ""
                print(f"  {e['self_ms']:10.1f} ms  {e['calls']:4d} calls  {e['name'][:90]}{grow}")
            seen[key] = {e["name"]: e["self_ms"] for e in r["profile"]}
    gr = growth(rows, args)
    if len(gr) > 2:
        print("\nGrowth between consecutive sizes:\n")
        print("\n".join(gr))
    for row in rows:
        fingerprint = row.pop("_fingerprint", None)
        if args.samples:
            row["samples"] = fingerprint
    if args.json:
        meta = {"machine": mach, "args": {k: (str(v) if isinstance(v, pathlib.Path) else v)
                                          for k, v in vars(args).items()},
                "hector_variant_env": os.environ.get("HECTOR_VARIANT"),
                "graphs": {f"{g}@{s:g}": v for (g, s), v in graph_info.items()}}
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "_child":
        code = child_main(sys.argv[2])
        # The results are written: skip the interpreter's teardown, which grows the resident
        # set of a process that has imported torch by some 0.2 GiB (and is no part of the run).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    if len(sys.argv) >= 5 and sys.argv[1] == "_compile":
        sys.exit(compile_main(sys.argv[2:]))
    sys.exit(main())
