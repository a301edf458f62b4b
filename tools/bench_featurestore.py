#!/usr/bin/env python3
"""Mini-batch training from node features larger than the memory the process may use:
hector.FeatureStore with static, dynamic and hybrid eviction, the prefetcher off and on.

A synthetic relational graph with heavy-tailed out-degrees (a node's chance to be the source of
an edge falls with its popularity rank as rank^-alpha, alpha 0.8 by default: P(degree = k) ~
k^-2.25 and a largest degree of tens of thousands, like ogbn-mag's most cited papers) gets a
feature table of --nodes x --dim float32 in a store file (streamed row block by row block: it is
never in memory). Every configuration then trains the compiled two-layer RGCN
(examples/rgcn_aifb.hector, in = --dim) from the store with hector.MiniBatchLoader, each in its
own process under a memory limit (--memory-limit GiB, enforced with RLIMIT_DATA, which bounds
the process's private writable memory: heap, anonymous mappings, thread stacks; RLIMIT_AS
cannot be used, since importing torch's CUDA wheel alone maps 3.1 GiB of address space; torch's
import takes 0.76 GiB of the limit, the graph 0.45 GiB). The table must be at least twice the
limit. The children run with MALLOC_MMAP_THRESHOLD_=131072 (see run_child). Reads bypass the page cache (O_DIRECT), so the file's
bytes are not held in memory outside the limit either.

Per configuration: one untimed warm-up epoch (it fills the cache), then --epochs timed epochs:
epoch time, bytes read from the file, distinct rows found per tier (cache, victim buffer,
storage), the time gathers waited for the file, the loader's wait, the peak resident memory;
every configuration must compute the same losses (the gathers are exact). The static score of
the static and hybrid policies (--static-scores) is each node's out-degree ("degree": how many
in-neighbourhoods it belongs to), or how often the sampler drew it in one epoch of batches
shuffled with another seed ("sampled": FeatureStore.sampled_frequency, no features read), each
computed once. Also reported: what a fixed placement of the rows these epochs use most, known in
advance, would read (the bound of any static policy with the same capacity).

    python tools/bench_featurestore.py [--json out.json]            # the docs/benchmarks.md run
    python tools/bench_featurestore.py --nodes 3000 --memory-limit 0 --batches 3   # smoke
    python tools/bench_featurestore.py --device cuda --json gpu.json   # GPU cache, cuFile

The store file (and the graph file next to it) are removed at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "runtime" / "python"))
sys.path.insert(0, str(ROOT / "examples"))

POLICIES = ("static", "dynamic", "hybrid")
GiB = 1 << 30


# --- the parent: setup, one child per configuration, the table ---------------------------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=540_000, help="nodes (default 540,000)")
    p.add_argument("--degree", type=int, default=4, help="edges per node (default 4)")
    p.add_argument("--relations", type=int, default=8, help="relations (default 8)")
    p.add_argument("--alpha", type=float, default=0.8,
                   help="source popularity exponent: rank^-alpha (default 0.8)")
    p.add_argument("--dim", type=int, default=None,
                   help="feature width = the model's `in` (default: the library's, else 2048)")
    p.add_argument("--hidden", type=int, default=64, help="hidden width (default 64)")
    p.add_argument("--train-fraction", type=float, default=0.025,
                   help="share of the nodes that are training targets (default 0.025)")
    p.add_argument("--batch-size", type=int, default=128, help="targets per batch (default 128)")
    p.add_argument("--fanout", default="10,5", help="per hop, as the example (default 10,5)")
    p.add_argument("--batches", type=int, default=0,
                   help="batches per epoch (default 0: every training target once; with a cap "
                        "the prefetcher also reads the batch after the last, which is not used)")
    p.add_argument("--epochs", type=int, default=2, help="timed epochs (default 2)")
    p.add_argument("--cache-fraction", type=float, default=1 / 32,
                   help="device cache, as a share of the table (default 1/32)")
    p.add_argument("--victim-fraction", type=float, default=1 / 32,
                   help="victim buffer, as a share of the table (default 1/32)")
    p.add_argument("--static-weight", type=float, default=4.0,
                   help="hybrid: CLOCK credits of the highest static score (default 4)")
    p.add_argument("--policies", default=",".join(POLICIES),
                   help="comma-separated (default static,dynamic,hybrid)")
    p.add_argument("--static-scores", default="degree,sampled",
                   help="static scores of static and hybrid, comma-separated: degree, sampled "
                        "(default both)")
    p.add_argument("--memory-limit", type=float, default=2.0,
                   help="RLIMIT_DATA of every benchmark process in GiB (default 2; 0: none, "
                        "which also lifts the table >= 2x limit rule)")
    p.add_argument("--loader-prefetch", type=int, default=1,
                   help="MiniBatchLoader prefetch depth (default 1)")
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads (default 1: a 2-thread team stalls on a shared 2-core "
                        "machine, see docs/runtime.md)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="cuda: the cache in GPU memory, misses read with cuFile where it works")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", type=pathlib.Path, default=None,
                   help="where the store file goes (default: the temp directory)")
    p.add_argument("--library", type=pathlib.Path, default=None,
                   help="a library built from examples/rgcn_aifb.hector (default: compile one)")
    p.add_argument("--package", type=pathlib.Path, default=None,
                   help="an emitted source package of that model (gpu-packages/minibatch-rgcn, "
                        "on a machine without hectorc), built against the runtime")
    p.add_argument("--json", type=pathlib.Path, default=None)
    p.add_argument("--keep", action="store_true", help="keep the store file")
    args = p.parse_args(argv)
    args.policies = [x for x in args.policies.split(",") if x]
    for x in args.policies:
        if x not in POLICIES:
            p.error(f"--policies: {x!r} is not one of {POLICIES}")
    args.static_scores = [x for x in args.static_scores.split(",") if x]
    for x in args.static_scores:
        if x not in ("degree", "sampled"):
            p.error(f"--static-scores: {x!r} is not degree or sampled")
    from _common import parse_fanout
    args.fanout_list = parse_fanout(args.fanout)
    return args


def resolve_library(args):
    if args.library:
        if not args.library.is_file():
            sys.exit(f"--library: {args.library} does not exist")
        return args.library
    if args.package is not None:
        # The mini-batch benchmark's package build (the GPU check's), reused.
        sys.path.insert(0, str(ROOT / "tools"))
        import bench_minibatch
        return bench_minibatch.resolve_library(args, args.device == "cuda")
    import _common
    params = {"in": args.dim or 2048, "hidden": args.hidden, "classes": 4}
    return _common.compile_model("rgcn_aifb", params,
                                 target="cuda" if args.device == "cuda" else "cpu")


def library_params(library):
    out = subprocess.run([sys.executable, "-c", (
        "import sys, json; sys.path.insert(0, %r); import hector; "
        "print(json.dumps(hector.load(%r).manifest['params']))") % (
        str(ROOT / "runtime" / "python"), str(library))], capture_output=True, text=True,
        env=dict(os.environ), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_graph(args, path):
    """The synthetic graph's edges, training targets and labels, saved for the children."""
    import torch
    g = torch.Generator().manual_seed(args.seed)
    n, e = args.nodes, args.nodes * args.degree
    popularity = torch.arange(1, n + 1, dtype=torch.float64) ** -args.alpha
    rank_to_node = torch.randperm(n, generator=g)    # hot nodes are spread over the file
    src = rank_to_node[torch.multinomial(popularity, e, replacement=True, generator=g)]
    dst = torch.randint(0, n, (e,), generator=g)
    etype = torch.randint(0, args.relations, (e,), generator=g)
    train = torch.randperm(n, generator=g)[:max(1, int(n * args.train_fraction))]
    labels = torch.randint(0, 4, (train.numel(),), generator=g)
    torch.save(dict(src=src, dst=dst, etype=etype, num_nodes=n, num_relations=args.relations,
                    train=train, labels=labels), path)
    degree = torch.bincount(src, minlength=n)
    return dict(edges=e, max_out_degree=int(degree.max()), nodes_with_out_edges=int(
        (degree > 0).sum()), train_targets=int(train.numel()))


def run_child(args, mode, config, limit_bytes):
    """Runs `mode` in a fresh process under the memory limit; returns its JSON result."""
    def limit():
        if limit_bytes:
            resource.setrlimit(resource.RLIMIT_DATA, (limit_bytes, limit_bytes))
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        cmd = [sys.executable, __file__, "_child", mode, json.dumps(config), out.name]
        # glibc raises its mmap threshold after the first large frees and then keeps freed batch
        # buffers in its heap (400 MB more private memory here by the end of an epoch): a fixed
        # threshold returns them to the system.
        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
        env.setdefault("MALLOC_MMAP_THRESHOLD_", "131072")
        r = subprocess.run(cmd, preexec_fn=limit, capture_output=True, text=True, env=env)
        if r.returncode != 0:
            return dict(error=(r.stdout + r.stderr)[-3000:], returncode=r.returncode)
        return json.loads(pathlib.Path(out.name).read_text())


def main(argv=None):
    args = parse_args(argv)
    library = resolve_library(args)
    params = library_params(library)
    if set(params) != {"in", "hidden", "classes"}:
        sys.exit(f"{library}: not the two-layer RGCN of examples/rgcn_aifb.hector")
    if args.dim and args.dim != params["in"]:
        sys.exit(f"--dim {args.dim} disagrees with the library's in={params['in']}")
    dim = params["in"]
    row_bytes = dim * 4
    table_bytes = args.nodes * row_bytes
    limit = int(args.memory_limit * GiB)
    if limit and table_bytes < 2 * limit:
        sys.exit(f"the table ({table_bytes / GiB:.2f} GiB) must be at least twice the memory "
                 f"limit ({args.memory_limit} GiB): raise --nodes or lower --memory-limit")
    directory = pathlib.Path(tempfile.mkdtemp(prefix="bench-featurestore-", dir=args.dir))
    store_path, graph_path = directory / "features.hfs", directory / "graph.pt"
    print(f"table: {args.nodes} x {dim} float32 = {table_bytes / GiB:.2f} GiB in {store_path}; "
          f"memory limit (RLIMIT_DATA) {args.memory_limit} GiB per process"
          f"{'' if limit else ' (none)'}", flush=True)
    results = dict(machine=os.uname().nodename, cpus=os.cpu_count(), nodes=args.nodes, dim=dim,
                   table_bytes=table_bytes, memory_limit_bytes=limit, limit_kind="RLIMIT_DATA",
                   device=args.device, args={k: (str(v) if isinstance(v, pathlib.Path) else v)
                                             for k, v in vars(args).items()}, runs=[])
    try:
        start = time.perf_counter()
        results["graph"] = make_graph(args, graph_path)
        print(f"graph: {args.nodes} nodes, {results['graph']['edges']} edges, {args.relations} "
              f"relations, largest out-degree {results['graph']['max_out_degree']}; "
              f"{results['graph']['train_targets']} training targets (made in "
              f"{time.perf_counter() - start:.1f} s)", flush=True)
        base = dict(store=str(store_path), graph=str(graph_path), library=str(library),
                    dim=dim, seed=args.seed, threads=args.threads, device=args.device,
                    batch_size=args.batch_size, fanout=args.fanout_list, batches=args.batches,
                    epochs=args.epochs, loader_prefetch=args.loader_prefetch,
                    cache_bytes=int(table_bytes * args.cache_fraction),
                    victim_bytes=int(table_bytes * args.victim_fraction),
                    static_weight=args.static_weight, nodes=args.nodes)
        built = run_child(args, "build", base, limit)
        if "error" in built:
            sys.exit(f"building the store failed:\n{built['error']}")
        results["build"] = built
        print(f"store: built in {built['seconds']:.1f} s ({built['gbps']:.2f} GB/s, streamed; "
              f"peak RSS {built['peak_rss_mib']:.0f} MiB); cache {base['cache_bytes'] / 2**20:.0f}"
              f" MiB, victim buffer {base['victim_bytes'] / 2**20:.0f} MiB", flush=True)
        for policy in args.policies:
            for scores in (["-"] if policy == "dynamic" else args.static_scores):
                for prefetch in (False, True):
                    config = dict(base, policy=policy, prefetch=prefetch, scores=scores)
                    r = run_child(args, "run", config, limit)
                    r.update(policy=policy, prefetch=prefetch, scores=scores)
                    results["runs"].append(r)
                    name = f"{policy:8s} {scores:8s} prefetch {'on ' if prefetch else 'off'}"
                    if "error" in r:
                        print(f"{name}: FAILED\n{r['error']}", flush=True)
                    else:
                        print(f"{name}: {describe(r)}", flush=True)
    finally:
        if not args.keep:
            for f in (store_path, graph_path):
                f.unlink(missing_ok=True)
            try:
                directory.rmdir()
            except OSError:
                pass
    summarise(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    failed = [r for r in results["runs"] if "error" in r]
    sys.exit(1 if failed else 0)


def describe(r):
    return (f"epoch {r['epoch_s_mean']:.2f} s, read {r['mb_read_per_epoch']:.0f} MB/epoch, "
            f"cache {r['cache_hit_rate']:.1%} victim {r['victim_hit_rate']:.1%} storage "
            f"{r['storage_rate']:.1%}, stall {r['stall_s_per_epoch']:.2f} s/epoch, peak RSS "
            f"{r['peak_rss_mib']:.0f} MiB")


def summarise(results):
    runs = [r for r in results["runs"] if "error" not in r]
    if not runs:
        return
    base = next((r for r in runs if r["policy"] == "dynamic" and not r["prefetch"]), None)
    print("\n| policy | static score | prefetch | epoch (s) | MB read / epoch | vs dynamic, off | "
          "cache hits | victim hits | storage | gathers waited (s / epoch) | "
          "loader wait (s / epoch) | peak RSS (MiB) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in runs:
        ratio = (f"{r['mb_read_per_epoch'] / base['mb_read_per_epoch'] - 1:+.1%}"
                 if base and base["mb_read_per_epoch"] else "")
        print(f"| {r['policy']} | {r['scores']} | {'on' if r['prefetch'] else 'off'} | "
              f"{r['epoch_s_mean']:.2f} | "
              f"{r['mb_read_per_epoch']:.0f} | {ratio} | {r['cache_hit_rate']:.1%} | "
              f"{r['victim_hit_rate']:.1%} | {r['storage_rate']:.1%} | "
              f"{r['stall_s_per_epoch']:.2f} | {r['wait_s_per_epoch']:.2f} | "
              f"{r['peak_rss_mib']:.0f} |")
    losses = {tuple(r["losses"]) for r in runs}
    print(f"\nlosses identical in every configuration: {'yes' if len(losses) == 1 else 'NO'}")
    if not base or not base["mb_read_per_epoch"]:
        return
    if base["oracle_exact"]:   # one row per block: rows read are blocks read
        oracle = 1 - base["oracle_mb_per_epoch"] / base["mb_read_per_epoch"]
        results["oracle_static_vs_dynamic_bytes_saved"] = oracle
        print(f"a fixed placement of the {base['cache_rows'] + base['victim_rows']} rows these "
              f"epochs use most (known in advance) would read {oracle:.1%} fewer bytes than "
              f"dynamic without the prefetcher")
    results["hybrid_prefetch_vs_dynamic_bytes_saved"] = {}
    for hybrid in (r for r in runs if r["policy"] == "hybrid" and r["prefetch"]):
        saved = 1 - hybrid["mb_read_per_epoch"] / base["mb_read_per_epoch"]
        results["hybrid_prefetch_vs_dynamic_bytes_saved"][hybrid["scores"]] = saved
        print(f"hybrid ({hybrid['scores']} scores) with the prefetcher reads {abs(saved):.1%} "
              f"{'fewer' if saved >= 0 else 'more'} bytes than dynamic without it (target: at "
              f"least 30% fewer: {'met' if saved >= 0.3 else 'NOT met'})")


# --- the children --------------------------------------------------------------------------------

def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_build(c):
    import torch
    import hector
    torch.set_num_threads(c["threads"])
    n, dim, seed = c["nodes"], c["dim"], c["seed"]
    rows_per_block = max(1, (16 << 20) // (dim * 4))

    def blocks():   # 16 MiB at a time, each from its own seeded generator
        for b, start in enumerate(range(0, n, rows_per_block)):
            g = torch.Generator().manual_seed(seed * 1_000_003 + b)
            yield torch.randn(min(rows_per_block, n - start), dim, generator=g)

    start = time.perf_counter()
    hector.FeatureStore.write(c["store"], blocks())
    seconds = time.perf_counter() - start
    size = os.path.getsize(c["store"])
    return dict(seconds=seconds, gbps=size / seconds / 1e9, file_bytes=size,
                peak_rss_mib=peak_rss_mib())


def child_run(c):
    import torch
    import torch.nn.functional as F
    import hector
    from hector.minibatch import MiniBatchLoader, NeighborSampler
    torch.set_num_threads(c["threads"])
    device = "cuda" if c["device"] == "cuda" else "cpu"
    saved = torch.load(c["graph"])
    graph = hector.Graph(saved.pop("src"), saved.pop("dst"), saved.pop("etype"),
                         num_nodes=saved["num_nodes"], num_relations=saved["num_relations"])
    train, labels = saved["train"], saved["labels"]
    del saved
    policy = c["policy"]
    sampler = NeighborSampler(graph, 2, c["fanout"])
    if policy == "dynamic":
        scores = None
    elif c["scores"] == "degree":
        scores = hector.FeatureStore.degree_scores(graph)
    else:   # one epoch of samples with another seed than the training's (no features read)
        scores = hector.FeatureStore.sampled_frequency(sampler, train, c["batch_size"],
                                                       seed=c["seed"] + 1)
    store = hector.FeatureStore.open(
        c["store"], width=c["dim"], dtype=torch.float32, cache_bytes=c["cache_bytes"],
        victim_bytes=c["victim_bytes"], policy=policy, static_scores=scores,
        static_weight=c["static_weight"], prefetch=c["prefetch"], cache_device=device)
    del scores
    Layer = hector.load(c["library"])
    torch.manual_seed(c["seed"])
    layer = Layer(num_relations=graph.num_relations, device=device)
    opt = torch.optim.Adam(layer.parameters(), lr=0.01)
    loader = MiniBatchLoader(sampler, store, train, labels,
                             batch_size=c["batch_size"], shuffle=True, seed=c["seed"],
                             device=device, prefetch=c["loader_prefetch"])
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)

    counts = torch.zeros(c["nodes"], dtype=torch.int64)   # uses per row in the timed epochs

    def epoch(number, count=False):
        loader.set_epoch(number)
        losses = []
        for i, batch in enumerate(loader):
            if c["batches"] and i >= c["batches"]:
                break
            if count:
                counts.index_add_(0, batch.subgraph.nodes, torch.ones_like(batch.subgraph.nodes))
            opt.zero_grad()
            out = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
            loss = F.cross_entropy(out, batch.labels)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        sync()
        return losses

    start = time.perf_counter()
    epoch(1000)                  # warm-up: another epoch's shuffle fills the cache
    warm = dict(seconds=time.perf_counter() - start, **store.stats)
    store.reset_stats()
    epochs, losses, waits = [], [], []
    for e in range(c["epochs"]):
        start = time.perf_counter()
        losses += epoch(e, count=True)
        epochs.append(time.perf_counter() - start)
        waits.append(loader.stats["wait_s"])
    s = store.stats
    n = len(epochs)
    # The best any fixed placement could do: the cache and the victim buffer holding the rows
    # these epochs use most, known in advance.
    held = store.cache_rows + store.victim_rows
    top = torch.sort(counts, descending=True).values[:held].sum().item()
    oracle_rows = counts.sum().item() - top
    layout = store.layout
    oracle_bytes = oracle_rows * layout["block_stride"] / layout["rows_per_block"]
    result = dict(epoch_s=epochs, epoch_s_mean=sum(epochs) / n, losses=losses,
                  mb_read_per_epoch=s["bytes_read"] / n / 1e6, bytes_read=s["bytes_read"],
                  cache_hit_rate=s["cache_hit_rate"], victim_hit_rate=s["victim_hit_rate"],
                  storage_rate=s["storage_rate"], stall_s_per_epoch=s["stall_s"] / n,
                  wait_s_per_epoch=sum(waits) / n, stats=s, warmup=warm, io_mode=store.io_mode,
                  oracle_storage_rows=oracle_rows, oracle_mb_per_epoch=oracle_bytes / n / 1e6,
                  oracle_exact=layout["rows_per_block"] == 1,
                  cache_rows=store.cache_rows, victim_rows=store.victim_rows,
                  peak_rss_mib=peak_rss_mib(),
                  vm_data_mib=int(open("/proc/self/status").read().split("VmData:")[1]
                                  .split()[0]) / 1024)
    store.close()
    return result


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "_child":
        mode, config, out = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
        result = child_build(config) if mode == "build" else child_run(config)
        pathlib.Path(out).write_text(json.dumps(result))
    else:
        main()
