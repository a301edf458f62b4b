#!/usr/bin/env python3
"""End-to-end mini-batch training benchmark: zero-copy vs CPU gather + copy vs all-in-GPU.

Trains the compiled two-layer RGCN (examples/rgcn_aifb.hector) with hector.minibatch on a
synthetic relational graph whose node features stay in host memory, once per feature mode, from
the same initial weights over the same batches:

  zero_copy   hector.PinnedTable: the table is page-locked in place and a kernel reads the
              batch's rows over PCIe (PyTorch-Direct)
  cpu_gather  hector.PinnedTable(mode="cpu_gather"): the "CPU-centric" baseline, a threaded CPU
              gather into a page-locked staging buffer, then one copy to the device
  device      the whole table on the device (index_select there): the upper bound, when the
              features fit

Per mode it reports the epoch time (--batches batches of --batch-size targets after --warmup
untimed ones), the CPU time of the whole process over the epoch (time.process_time: every thread,
the loader's and PyTorch's pools included; the final wait for the GPU sleeps on a blocking-sync
event instead of spinning), what the loader spent sampling and gathering, the gather bandwidth
(the epoch's first batches' node lists gathered alone, synchronously) and the ratios to the other
modes. The modes must train identically (the gathers are exact); the losses are compared.

    HECTOR_BUILD_DIR=build-gpu python tools/bench_minibatch.py [--json out.json]

With --check it instead checks that training with a zero-copy table gives the same losses,
parameters and test accuracy as with the features on the device (and as with cpu_gather) on AIFB
(gpu-packages/graphs/aifb-entities.pt from tools/gpu-check-prepare.sh, else ../shared/data/aifb,
else a small synthetic graph), every gathered batch bit for bit, with MiniBatchLoader's side
stream in use; it exits non-zero on a difference.

The model: --library (a built library), else --package (an emitted source package, built here
against the runtime; default gpu-packages/minibatch-rgcn, which tools/gpu-check-prepare.sh writes:
in=256, hidden=64, classes=4), else compiled with hectorc when it is there. The feature width is
the library's `in`. --device cpu runs the same on the CPU (no zero-copy there) as a smoke test.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
import types

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "runtime" / "python"))
# cuBLAS is deterministic only with a fixed workspace; it reads this when CUDA starts (--check).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, str(ROOT / "examples"))
from _common import parse_fanout  # noqa: E402  (the mini-batch example's --fanout)

MODES = ("zero_copy", "cpu_gather", "device")
DEFAULT_PACKAGE = ROOT / "gpu-packages" / "minibatch-rgcn"
DEFAULT_ENTITIES = ROOT / "gpu-packages" / "graphs" / "aifb-entities.pt"


# --- the model --------------------------------------------------------------------------------

def resolve_library(args, cuda: bool) -> pathlib.Path:
    """The compiled two-layer RGCN: --library, else --package built here, else hectorc."""
    if args.library:
        if not args.library.is_file():
            sys.exit(f"--library: {args.library} does not exist")
        return args.library
    package = args.package
    if package is not None and (package / "manifest.json").is_file():
        runtime = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", ROOT / "build")).resolve()
        lib = prebuilt_library(package, runtime, cuda)
        if lib is not None:
            print(f"model: package {package.name}, already built ({lib.name})", flush=True)
            return lib
        sys.path.insert(0, str(ROOT / "tools"))
        from gpu_models import build_package   # the GPU check's package build, reused
        name, lib, secs, log = build_package(package, runtime, cuda, os.cpu_count() or 2)
        if lib is None:
            sys.exit(f"building the package {package} against {runtime} failed:\n{log}")
        print(f"model: package {package.name} built in {secs:.0f} s", flush=True)
        return lib
    import _common
    if not (_common.BUILD / "bin" / "hectorc").is_file():
        where = package if package is not None else "--package"
        sys.exit(f"no model: {where} holds no package (tools/gpu-check-prepare.sh writes "
                 f"{DEFAULT_PACKAGE.relative_to(ROOT)}), no --library, and no hectorc to compile "
                 "examples/rgcn_aifb.hector")
    params = {"in": args.dim or 256, "hidden": args.hidden, "classes": 4}
    return _common.compile_model("rgcn_aifb", params, target="cuda" if cuda else "cpu")


def prebuilt_library(package: pathlib.Path, runtime: pathlib.Path, cuda: bool):
    """The package's library when package/build already holds one built against `runtime` with
    (or without) CUDA as asked and newer than its sources and the runtime library (the GPU check
    builds every package in its models step; a CUDA build takes a minute), else None."""
    build = package / "build"
    libs = sorted(build.glob("lib*.so"))
    cache = build / "CMakeCache.txt"
    runtime_lib = runtime / "lib" / "libhector_runtime.so"
    if not libs or not cache.is_file() or not runtime_lib.is_file():
        return None
    settings = dict(line.split("=", 1) for line in cache.read_text().splitlines()
                    if "=" in line and not line.startswith(("#", "//")))
    built_for = pathlib.Path(settings.get("HECTOR_RUNTIME_DIR:PATH", "/nonexistent"))
    built_cuda = settings.get("HECTOR_ENABLE_CUDA:BOOL", "OFF").upper() in ("ON", "1", "TRUE")
    if not built_for.exists() or built_for.resolve() != runtime or built_cuda != cuda:
        return None
    sources = [p for p in package.iterdir() if p.is_file()] + [runtime_lib]
    if libs[0].stat().st_mtime < max(p.stat().st_mtime for p in sources):
        return None
    return libs[0]


def load_model(args, cuda: bool):
    import hector
    library = resolve_library(args, cuda)
    Layer = hector.load(library)
    params = Layer.manifest["params"]
    if set(params) != {"in", "hidden", "classes"}:
        sys.exit(f"{library}: expected the two-layer RGCN of examples/rgcn_aifb.hector (params "
                 f"in, hidden, classes), got params {sorted(params)}")
    if args.dim and args.dim != params["in"]:
        sys.exit(f"--dim {args.dim} disagrees with the library's in={params['in']} (the feature "
                 "width is compiled into the model)")
    return library, Layer, params


# --- graphs and features ----------------------------------------------------------------------

def synthetic_graph(num_nodes: int, degree: int, num_relations: int, seed: int, device: str):
    """A uniform random multigraph (num_nodes * degree edges), built on `device` (the
    preprocessing is much faster on a GPU) and returned on the CPU, where the sampler reads it."""
    import hector
    g = torch.Generator(device=device).manual_seed(seed)
    e = num_nodes * degree
    src = torch.randint(0, num_nodes, (e,), generator=g, device=device)
    dst = torch.randint(0, num_nodes, (e,), generator=g, device=device)
    etype = torch.randint(0, num_relations, (e,), generator=g, device=device)
    graph = hector.Graph(src, dst, etype, num_nodes=num_nodes, num_relations=num_relations)
    return graph.to("cpu")


def random_features(num_nodes: int, dim: int, seed: int, device: str) -> torch.Tensor:
    """N(0, 1) features in (pageable, private) host memory; drawn on `device` and copied, which
    is much faster than a single-threaded CPU generator for gigabytes."""
    g = torch.Generator(device=device).manual_seed(seed)
    return torch.randn(num_nodes, dim, generator=g, device=device).cpu()


class Waiter:
    """Waits for the GPU work queued so far on the current stream without spinning (a
    blocking-sync event: the thread sleeps), so that process CPU time is not inflated by the
    wait itself. Nothing to wait for on the CPU."""

    def __init__(self, cuda: bool):
        self.event = torch.cuda.Event(blocking=True) if cuda else None

    def __call__(self):
        if self.event is not None:
            self.event.record()
            self.event.synchronize()


def make_table(mode: str, features: torch.Tensor, device: str):
    """The loader's feature source for `mode` (None when the mode needs CUDA and there is none)."""
    import hector
    if mode == "zero_copy":
        if device == "cpu":
            return None
        return hector.PinnedTable(features, fallback="error")
    if mode == "cpu_gather":
        return hector.PinnedTable(features, mode="cpu_gather")
    return features.to(device)


def gather_fn(source):
    if isinstance(source, torch.Tensor):
        return lambda idx: source.index_select(0, idx)
    return source.gather


def describe(source) -> str:
    """How a feature source serves rows: the table's mode, or where the tensor is."""
    if isinstance(source, torch.Tensor):
        return f"tensor on {source.device}"
    return source.mode


# --- one training run ---------------------------------------------------------------------------

def step(layer, opt, batch):
    opt.zero_grad()
    logits = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
    loss = F.cross_entropy(logits, batch.labels)
    loss.backward()
    opt.step()
    return loss.detach()


def bench_mode(mode, source, args, graph, targets, labels, Layer, init, device, cuda,
               bandwidth_sets):
    from hector.minibatch import MiniBatchLoader, NeighborSampler
    wait = Waiter(cuda)
    loader = MiniBatchLoader(NeighborSampler(graph, 2, args.fanout), source, targets, labels,
                             batch_size=args.batch_size, shuffle=True, seed=args.seed,
                             device=device, prefetch=args.prefetch)
    layer = Layer(num_relations=graph.num_relations, device=device)
    layer.load_state_dict(init)
    opt = torch.optim.Adam(layer.parameters(), lr=0.01)
    # Warm-up (allocator, kernels, first registrations): the start of another epoch.
    loader.set_epoch(1000)
    for i, batch in enumerate(loader):
        step(layer, opt, batch)
        if i + 1 >= args.warmup:
            break
    wait()
    loader.set_epoch(0)
    losses = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for batch in loader:
        losses.append(step(layer, opt, batch))
    wait()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    s = loader.stats
    row_bytes = args.dim * 4
    result = dict(mode=mode, table_mode=describe(source),
                  epoch_s=wall, batches=s["batches"], ms_per_batch=wall / s["batches"] * 1e3,
                  cpu_s=cpu, cpu_per_wall=cpu / wall, nodes_per_batch=s["nodes"] / s["batches"],
                  edges_per_batch=s["edges"] / s["batches"],
                  gathered_gb=s["nodes"] * row_bytes / 1e9,
                  loader_sample_s=s["sample_s"], loader_gather_s=s["gather_s"],
                  waited_for_batches_s=s["wait_s"])

    # Gather bandwidth: the same node lists for every mode, each gather waited for.
    gather = gather_fn(source)
    total_bytes, gwall, gcpu = 0, 0.0, 0.0
    for idx in bandwidth_sets:
        idx = idx.to(device)
        gather(idx)
        wait()
        c0, w0 = time.process_time(), time.perf_counter()
        out = gather(idx)
        wait()
        gwall += time.perf_counter() - w0
        gcpu += time.process_time() - c0
        total_bytes += out.numel() * out.element_size()
    result.update(gather_gbps=total_bytes / gwall / 1e9,
                  gather_ms=gwall / len(bandwidth_sets) * 1e3,
                  gather_cpu_ms=gcpu / len(bandwidth_sets) * 1e3)
    return result, torch.stack(losses).cpu()


def bench(args, device, cuda):
    from hector.minibatch import NeighborSampler, partition_nodes
    library, Layer, params = load_model(args, cuda)
    args.dim = params["in"]
    t0 = time.perf_counter()
    graph = synthetic_graph(args.nodes, args.degree, args.relations, args.seed, device)
    features = random_features(args.nodes, args.dim, args.seed + 1, device)
    gen = torch.Generator().manual_seed(args.seed + 2)
    num_targets = args.targets or args.batches * args.batch_size
    targets = torch.randperm(args.nodes, generator=gen)[:num_targets]
    labels = torch.randint(0, params["classes"], (targets.numel(),), generator=gen)
    setup_s = time.perf_counter() - t0
    print(f"device: {torch.cuda.get_device_name() if cuda else 'cpu'}; torch threads "
          f"{torch.get_num_threads()}; model {library.name} (in {params['in']}, hidden "
          f"{params['hidden']}, classes {params['classes']})", flush=True)
    print(f"graph: {args.nodes:,} nodes, {graph.num_edges:,} edges, {args.relations} relations; "
          f"features {args.nodes:,} x {args.dim} float32 = {features.numel() * 4 / 1e9:.2f} GB "
          f"in host memory; {targets.numel():,} targets, batches of {args.batch_size}, fan-out "
          f"{'all' if args.fanout is None else args.fanout}, prefetch {args.prefetch} "
          f"(set up in {setup_s:.1f} s)", flush=True)

    # The node lists of the epoch's first batches, for the bandwidth measurement.
    sampler = NeighborSampler(graph, 2, args.fanout)
    first = partition_nodes(targets.numel(), args.batch_size, epoch=0, seed=args.seed)
    bandwidth_sets = [sampler.sample(targets[p], torch.Generator().manual_seed(k)).nodes
                      for k, p in enumerate(first[:args.bandwidth_batches])]

    torch.manual_seed(args.seed)
    init = Layer(num_relations=graph.num_relations, device=device).state_dict()
    results, losses, skipped = [], {}, []
    for mode in args.modes:
        source = make_table(mode, features, device)
        if source is None:
            skipped.append(mode)
            print(f"{mode}: skipped (needs a CUDA device)", flush=True)
            continue
        result, losses[mode] = bench_mode(mode, source, args, graph, targets, labels, Layer, init,
                                          device, cuda, bandwidth_sets)
        results.append(result)
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v
                          for k, v in result.items()}), flush=True)
        if hasattr(source, "close"):
            source.close()
        del source
        if cuda:
            torch.cuda.empty_cache()

    by_mode = {r["mode"]: r for r in results}
    for r in results:
        for base in ("cpu_gather", "device"):
            if base in by_mode and base != r["mode"]:
                b = by_mode[base]
                r[f"epoch_vs_{base}"] = r["epoch_s"] / b["epoch_s"]
                r[f"cpu_vs_{base}"] = r["cpu_s"] / b["cpu_s"]
    names = list(losses)
    identical = all(torch.equal(losses[names[0]], losses[n]) for n in names[1:])

    print()
    print(f"{'mode':<11} {'epoch s':>8} {'ms/batch':>9} {'CPU s':>7} {'CPU/wall':>8} "
          f"{'gather GB/s':>11} {'gather CPU ms':>13} {'epoch vs cpu_gather':>19} "
          f"{'CPU vs cpu_gather':>17} {'epoch vs device':>15}")
    for r in results:
        def ratio(key):
            return f"{r[key]:.2f}x" if key in r else "-"
        print(f"{r['mode']:<11} {r['epoch_s']:>8.3f} {r['ms_per_batch']:>9.1f} {r['cpu_s']:>7.2f} "
              f"{r['cpu_per_wall']:>8.2f} {r['gather_gbps']:>11.2f} {r['gather_cpu_ms']:>13.2f} "
              f"{ratio('epoch_vs_cpu_gather'):>19} {ratio('cpu_vs_cpu_gather'):>17} "
              f"{ratio('epoch_vs_device'):>15}")
    if results:
        r = results[0]
        megabytes = r["nodes_per_batch"] * args.dim * 4 / 1e6
        print(f"per batch: {r['nodes_per_batch']:,.0f} nodes ({megabytes:.1f} MB of features), "
              f"{r['edges_per_batch']:,.0f} edges; losses identical across modes: "
              f"{'yes' if identical else 'NO'}")
    if args.json:
        config = {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items()}
        args.json.write_text(json.dumps(dict(
            device=torch.cuda.get_device_name() if cuda else "cpu", library=str(library),
            config=config, edges=graph.num_edges, torch_threads=torch.get_num_threads(),
            results=results, skipped=skipped, losses_identical=identical), indent=1))
    return 0 if identical else 1


# --- --check: zero-copy trains as the features on the device do --------------------------------

def entity_data(path: pathlib.Path | None):
    """AIFB as saved by tools/gpu-check-prepare.sh, else loaded from ../shared/data (needs
    rdflib), else None."""
    if path is not None and path.is_file():
        return types.SimpleNamespace(**torch.load(path)), str(path)
    data = ROOT.parent / "shared" / "data" / "aifb"
    if data.is_dir():
        try:
            from hector.data import load_entities
        except ImportError:
            return None, None
        d = load_entities(data)
        return d, str(data)
    return None, None


def synthetic_entities(seed: int, classes: int):
    gen = torch.Generator().manual_seed(seed)
    n, e, r = 3000, 12000, 6
    nodes = torch.randperm(n, generator=gen)
    return types.SimpleNamespace(
        name="synthetic", num_nodes=n, num_relations=r,
        src=torch.randint(0, n, (e,), generator=gen), dst=torch.randint(0, n, (e,), generator=gen),
        etype=torch.randint(0, r, (e,), generator=gen),
        train_idx=nodes[:120], train_y=torch.randint(0, classes, (120,), generator=gen),
        test_idx=nodes[120:160], test_y=torch.randint(0, classes, (40,), generator=gen),
        num_classes=classes)


def check(args, device, cuda):
    import hector
    from hector.minibatch import MiniBatchLoader, NeighborSampler
    torch.use_deterministic_algorithms(True, warn_only=True)
    start = time.perf_counter()
    library, Layer, params = load_model(args, cuda)
    data, where = (None, None) if args.graph == "synthetic" else entity_data(
        pathlib.Path(args.graph) if args.graph else DEFAULT_ENTITIES)
    if data is None:
        data, where = synthetic_entities(args.seed, params["classes"]), "synthetic"
    if data.num_classes > params["classes"]:
        sys.exit(f"{data.num_classes} classes but the library has classes={params['classes']}")
    graph = hector.Graph(data.src, data.dst, data.etype, num_nodes=data.num_nodes,
                         num_relations=data.num_relations)
    features = torch.randn(data.num_nodes, params["in"],
                           generator=torch.Generator().manual_seed(args.seed))
    reference = features.to(device)
    print(f"check: {data.name} ({where}): {data.num_nodes} nodes, {graph.num_edges} edges; "
          f"features {data.num_nodes} x {params['in']}; model {library.name}; {device}",
          flush=True)
    torch.manual_seed(args.seed)
    init = Layer(num_relations=data.num_relations, device=device).state_dict()

    def run(name, source, prefetch):
        """Losses, parameters and test accuracy of a training run; every batch's features are
        compared with the reference rows, bit for bit."""
        sampler = NeighborSampler(graph, 2, args.fanout)
        train = MiniBatchLoader(sampler, source, data.train_idx, data.train_y,
                                batch_size=args.check_batch_size, seed=args.seed, device=device,
                                prefetch=prefetch)
        test = MiniBatchLoader(NeighborSampler(graph, 2), source, data.test_idx, data.test_y,
                               batch_size=args.check_batch_size, shuffle=False, device=device,
                               prefetch=prefetch)
        layer = Layer(num_relations=data.num_relations, device=device)
        layer.load_state_dict(init)
        opt = torch.optim.Adam(layer.parameters(), lr=0.01, weight_decay=5e-4)
        losses, bad_batches = [], 0
        for epoch in range(args.epochs):
            train.set_epoch(epoch)
            for batch in train:
                rows = reference.index_select(0, batch.subgraph.nodes.to(device))
                bad_batches += not torch.equal(batch.x, rows)
                losses.append(step(layer, opt, batch))
        correct = total = 0
        with torch.no_grad():
            for batch in test:
                rows = reference.index_select(0, batch.subgraph.nodes.to(device))
                bad_batches += not torch.equal(batch.x, rows)
                logits = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
                correct += int((logits.argmax(1) == batch.labels).sum())
                total += batch.labels.numel()
        return dict(name=name, table_mode=describe(source), prefetch=prefetch,
                    losses=torch.stack(losses).cpu(), accuracy=correct / total,
                    params=[p.detach().cpu() for p in layer.parameters()],
                    bad_batches=bad_batches)

    zero_copy = hector.PinnedTable(features, fallback="error" if cuda else "cpu_gather")
    if cuda and zero_copy.mode != "zero_copy":
        sys.exit(f"the table is not zero-copy: {zero_copy.reason}")
    runs = [run("zero_copy", zero_copy, 2),            # loader thread, side stream
            run("cpu_gather", hector.PinnedTable(features, mode="cpu_gather"), 1),
            run("device", reference, 0)]               # caller's thread and stream
    base = runs[-1]
    failures = []
    report = dict(device=torch.cuda.get_device_name() if cuda else "cpu", graph=where,
                  epochs=args.epochs, steps=len(base["losses"]), runs=[])
    for r in runs:
        same_losses = torch.equal(r["losses"], base["losses"])
        same_params = all(torch.equal(a, b) for a, b in zip(r["params"], base["params"]))
        entry = dict(name=r["name"], table_mode=r["table_mode"], prefetch=r["prefetch"],
                     final_loss=r["losses"][-1].item(), test_accuracy=r["accuracy"],
                     batches_with_wrong_features=r["bad_batches"],
                     losses_identical_to_device=same_losses,
                     params_identical_to_device=same_params,
                     max_loss_difference=(r["losses"] - base["losses"]).abs().max().item())
        report["runs"].append(entry)
        print(json.dumps(entry), flush=True)
        if r["bad_batches"]:
            failures.append(f"{r['name']}: {r['bad_batches']} batches with wrong features")
        if not (same_losses and same_params and r["accuracy"] == base["accuracy"]):
            failures.append(f"{r['name']}: training differs from the device run")
    if failures and not any("wrong features" in f for f in failures):
        # Exact gathers but different training: tell a nondeterministic model apart from a bug.
        again = run("device (again)", reference, 0)
        deterministic = torch.equal(again["losses"], base["losses"])
        report["device_repeat_identical"] = deterministic
        if not deterministic:
            failures.append("the device run itself is not reproducible (nondeterministic "
                            "kernels): bit-identical training cannot be expected here")
    report["failures"] = failures
    report["seconds"] = time.perf_counter() - start
    print(f"{len(base['losses'])} steps per run; test accuracy "
          + ", ".join(f"{r['name']} {r['accuracy']:.2%}" for r in runs)
          + f"; {'OK: identical' if not failures else 'FAILED: ' + '; '.join(failures)} "
          f"({report['seconds']:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 1 if failures else 0


def main():
    cuda_here = torch.cuda.is_available()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if cuda_here else "cpu")
    ap.add_argument("--library", type=pathlib.Path, help="a built rgcn_aifb library")
    ap.add_argument("--package", type=pathlib.Path, default=DEFAULT_PACKAGE,
                    help="an emitted source package of rgcn_aifb, built here against "
                         "$HECTOR_BUILD_DIR (default gpu-packages/minibatch-rgcn)")
    ap.add_argument("--dim", type=int, default=None,
                    help="feature width (default: the library's `in`; with hectorc, 256)")
    ap.add_argument("--hidden", type=int, default=64, help="hidden width when compiling (64)")
    ap.add_argument("--nodes", type=int, default=None,
                    help="nodes of the synthetic graph (default 2,000,000 on CUDA, 20,000 on "
                         "the CPU)")
    ap.add_argument("--degree", type=int, default=5, help="edges per node (default 5)")
    ap.add_argument("--relations", type=int, default=64, help="relations (default 64)")
    ap.add_argument("--batch-size", type=int, default=1024, help="targets per batch (1024)")
    ap.add_argument("--fanout", type=parse_fanout, default=None,
                    help="incoming edges kept per node and relation: all, K or K1,K2 (all)")
    ap.add_argument("--batches", type=int, default=None,
                    help="batches in the timed epoch (default 40 on CUDA, 4 on the CPU)")
    ap.add_argument("--targets", type=int, default=None,
                    help="training targets (default --batches x --batch-size: one epoch is "
                         "--batches batches)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed batches first (3)")
    ap.add_argument("--prefetch", type=int, default=2, help="loader prefetch depth (2)")
    ap.add_argument("--bandwidth-batches", type=int, default=5,
                    help="batches whose node lists the bandwidth measurement gathers (5)")
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=pathlib.Path, help="also write the results here")
    ap.add_argument("--check", action="store_true",
                    help="check identical training (zero-copy vs device) instead of timing")
    ap.add_argument("--graph", default=None,
                    help="--check: the entity data (.pt from gpu-check-prepare.sh), or "
                         "'synthetic' (default: gpu-packages/graphs/aifb-entities.pt, else "
                         "../shared/data/aifb, else synthetic)")
    ap.add_argument("--epochs", type=int, default=4, help="--check: epochs per run (4)")
    ap.add_argument("--check-batch-size", type=int, default=32, help="--check: batch size (32)")
    args = ap.parse_args()
    cuda = args.device == "cuda"
    if cuda and not cuda_here:
        ap.error("--device cuda: PyTorch sees no CUDA device")
    args.nodes = args.nodes or (2_000_000 if cuda else 20_000)
    args.batches = args.batches or (40 if cuda else 4)
    for name in ("nodes", "degree", "relations", "batch_size", "batches", "warmup", "epochs",
                 "bandwidth_batches", "check_batch_size"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.prefetch < 0:
        ap.error("--prefetch must be at least 0")
    device = "cuda:0" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(0)
    sys.exit(check(args, device, cuda) if args.check else bench(args, device, cuda))


if __name__ == "__main__":
    main()
