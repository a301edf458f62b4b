"""Mini-batch training of the compiled two-layer RGCN on AIFB with node features in host memory,
on one process or data-parallel (DDP) on several.

    python examples/train_minibatch.py                          # features gathered by PinnedTable
    python examples/train_minibatch.py --features device        # features indexed on the device
    python examples/train_minibatch.py --features cpu_gather    # CPU gather + copy (baseline)
    python examples/train_minibatch.py --features-on-disk DIR   # features in a FeatureStore file
    python examples/train_minibatch.py --world-size 2           # DDP, 2 processes (gloo on the CPU)
    torchrun --nproc-per-node 2 examples/train_minibatch.py     # the same, started by torchrun
    python examples/train_minibatch.py --device cuda --world-size 2    # NCCL, one GPU per rank

Each step trains on a batch of training entities: hector.minibatch builds the batch's relational
subgraph (the 2-hop in-neighbourhood the two layers need, with at most --fanout incoming edges per
node and relation, drawn with a seeded generator; "all" keeps every edge), computes the RGCN norm
1/|N_r(i)| on it, gathers the features of its nodes from the host-resident table and moves the
batch to the device, on a background thread that works --prefetch batches ahead of the model
(on CUDA on a side stream). The loss is the cross-entropy on the batch's targets.

Features: AIFB has none (the R-GCN paper's input is one-hot node identity, in = 8285). Here every
node gets a fixed row of --feature-dim values drawn from N(0, 1) with a seeded generator
(--feature-seed): a random projection of the one-hot input, which the first layer's relation
weights then multiply. It is distributed as train_entities.py's learned embedding at
initialisation (nn.Embedding), but frozen, so it can stay in host memory and be gathered per
batch like the features of a graph too large for the device. --features pinned gathers the rows
with hector.PinnedTable (zero-copy from page-locked host memory with a CUDA device, the
multithreaded CPU gather on the CPU); --features cpu_gather asks the table for its CPU path even
on a CUDA machine (a threaded CPU gather into a page-locked buffer, then one copy: the
"CPU-centric" baseline); --features device keeps the table on the training device and indexes it
there (index_select).

--features-on-disk DIR trains from a hector.FeatureStore file in DIR (built there from the same
table on the first run, opened on later ones): each batch's rows come from its device cache
(--cache-bytes, host memory on the CPU, GPU memory with --device cuda), its victim buffer
(--victim-bytes) or the file (io_uring, O_DIRECT), with the eviction --policy (hybrid: CLOCK
with credits from the nodes' degree in the sampled direction) and the prefetcher, which gets
every batch's nodes one batch ahead (--no-store-prefetch turns it off). The gathered rows are
the same bits, so training is the same as from the table in memory. With several ranks, rank 0
builds the file and every rank opens it with its own cache and one victim buffer in shared
memory for all of them.

Data-parallel: --world-size N starts N processes (torch.multiprocessing) that share the graph
loaded once; under torchrun the RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT variables are used and
rank 0 sends its loaded graph to the others (hector.data numbers RDF blank nodes differently in
every process). Every epoch the training entities are shuffled with the seed --seed + epoch and
shared as DistributedSampler shares them; each rank trains on its share, DDP averages the
gradients of the compiled layer's parameters. Testing uses every edge (no fan-out) on every rank;
rank 0 prints.

Prints the loss (mean over all ranks' batches), training accuracy and wall time of every epoch,
with the time the loader spent sampling and gathering on its thread and the time the model
waited for a batch, then the test accuracy:

    test accuracy: 91.67%, time per epoch: 182.6 ms (after the first), features: pinned
"""
from __future__ import annotations

import argparse
import os
import pathlib
import socket
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import _common
from _common import Progress, check_gradients, parse_fanout, seed_everything, synchronize


def make_features(num_nodes: int, dim: int, seed: int) -> torch.Tensor:
    """The fixed, host-resident node features: N(0, 1) rows from a seeded generator (a random
    projection of one-hot node identity)."""
    return torch.randn(num_nodes, dim, generator=torch.Generator().manual_seed(seed))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compile_layer(args, num_classes: int, device: str):
    if args.library:
        return args.library
    params = {"in": args.feature_dim, "hidden": args.hidden, "classes": num_classes}
    return _common.compile_model("rgcn_aifb", params,
                                 target="cuda" if device.startswith("cuda") else "cpu")


def load_data(args):
    from hector.data import load_entities
    start = time.perf_counter()
    data = load_entities(args.data)
    print(f"{data.name}: {data.num_nodes} nodes, {data.num_edges} edges, "
          f"{data.num_relations} relations; {len(data.train_idx)} training and "
          f"{len(data.test_idx)} test entities, {data.num_classes} classes "
          f"(loaded in {time.perf_counter() - start:.1f} s)", flush=True)
    return data


def open_store(args, data, features, graph, rank, world, device, say):
    """The FeatureStore of --features-on-disk: rank 0 builds the file if it is not there, every
    rank opens it (with several ranks, one shared victim buffer for all)."""
    from hector import FeatureStore
    directory = args.features_on_disk
    path = directory / (f"{data.name}-{data.num_nodes}x{args.feature_dim}-{args.dtype}-"
                        f"seed{args.feature_seed}.hfs")
    built = False
    if rank == 0 and not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        FeatureStore.write(path, features)
        built = True
        say(f"feature store: built {path} ({path.stat().st_size / 1e6:.1f} MB) in "
            f"{time.perf_counter() - start:.2f} s")
    if world > 1:
        dist.barrier()    # the file exists before the other ranks open it
    row = features[0].numel() * features.element_size()
    table_bytes = features.shape[0] * row
    cache = args.cache_bytes if args.cache_bytes is not None else table_bytes // 4
    victim = args.victim_bytes if args.victim_bytes is not None else table_bytes // 4
    shared = None
    if world > 1 and victim >= row:
        # One name per run: the rendezvous address is what the ranks share.
        shared = (f"minibatch-{os.environ.get('MASTER_ADDR', 'local')}-"
                  f"{os.environ.get('MASTER_PORT', '0')}").replace(":", "_")
    store = FeatureStore.open(
        path, width=args.feature_dim, dtype=features.dtype, cache_bytes=cache,
        victim_bytes=victim, policy=args.policy,
        static_scores=None if args.policy == "dynamic" else FeatureStore.degree_scores(graph),
        cache_device=device if device.startswith("cuda") else "cpu", shared_victim=shared,
        prefetch=args.store_prefetch)
    say(f"feature store: {'built and ' if built else ''}opened {path.name}: cache "
        f"{store.cache_rows} rows, victim buffer {store.victim_rows} rows"
        f"{' (shared victim buffer ' + store.victim_name + ')' if store.victim_name else ''}, "
        f"policy {store.policy}, prefetcher {'on' if store.prefetch_enabled else 'off'}; "
        f"reads: {store.io_mode}")
    return store


def run(rank: int, world: int, args, data, library) -> None:
    """One rank's training (the only one without DDP). Under torchrun ``data`` and ``library``
    are None: rank 0 loads the graph and compiles the model, and the other ranks receive them."""
    import hector
    from hector.minibatch import MiniBatchLoader, NeighborSampler

    distributed = world > 1
    device = args.device
    if device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        device = f"cuda:{local}"
        torch.cuda.set_device(local)
    if distributed and not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo",
                                rank=rank, world_size=world)
    torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // world))
    if data is None:
        # One copy of the graph for every rank: the loader numbers RDF blank nodes by their
        # parser-generated labels, which differ between processes.
        shared = [load_data(args) if rank == 0 else None, None]
        if rank == 0:
            shared[1] = str(compile_layer(args, shared[0].num_classes, device))
        if distributed:
            dist.broadcast_object_list(shared, src=0)
        data, library = shared
    dtype = _common.DTYPES[args.dtype]
    say = print if rank == 0 else (lambda *a, **k: None)
    say(f"model: {_common.relative(pathlib.Path(library))}; 2 layers, hidden {args.hidden}; "
        f"{args.dtype} on {device}; Adam lr {args.lr}, weight decay {args.weight_decay}, "
        f"{args.epochs} epochs; {torch.get_num_threads()} threads per process")

    # The full graph stays on the CPU: the sampler reads its CSR; only batches reach the device.
    graph = hector.Graph(data.src, data.dst, data.etype, num_nodes=data.num_nodes,
                         num_relations=data.num_relations)
    features = make_features(data.num_nodes, args.feature_dim, args.feature_seed).to(dtype)
    store = None
    if args.features_on_disk is not None:
        table = store = open_store(args, data, features, graph, rank, world, device, say)
        where = f"on disk ({store.path})"
    elif args.features in ("pinned", "cpu_gather"):
        mode = "zero_copy" if args.features == "pinned" else "cpu_gather"
        table = hector.PinnedTable(features, mode=mode)
        where = f"{args.features} ({table.mode})"
    else:
        table = features.to(device)
        where = f"device ({device})"
    train = MiniBatchLoader(NeighborSampler(graph, 2, args.fanout), table, data.train_idx,
                            data.train_y, batch_size=args.batch_size, shuffle=True,
                            seed=args.seed, rank=rank, world_size=world, device=device,
                            prefetch=args.prefetch)
    test = MiniBatchLoader(NeighborSampler(graph, 2), table, data.test_idx, data.test_y,
                           batch_size=args.batch_size, shuffle=False, device=device,
                           prefetch=args.prefetch)
    say(f"features: {data.num_nodes} x {args.feature_dim} {args.dtype}, {where}; fan-out "
        f"{'all' if args.fanout is None else args.fanout}, batch {args.batch_size}, "
        f"{len(train)} batches per epoch and rank, {world} rank{'s' if world > 1 else ''}")

    seed_everything(args.seed)
    Layer = hector.load(library)
    layer = Layer(num_relations=data.num_relations, dtype=dtype, device=device)
    model = torch.nn.parallel.DistributedDataParallel(layer) if distributed else layer
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    progress = Progress(args.epochs) if rank == 0 else None
    times = []
    for epoch in range(1, args.epochs + 1):
        train.set_epoch(epoch)
        synchronize(device)
        start = time.perf_counter()
        totals = torch.zeros(3, dtype=torch.float64, device=device)   # loss sum, correct, count
        for batch in train:
            opt.zero_grad()
            logits = model(batch.graph, batch.x, batch.norm)[batch.target_local]
            loss = F.cross_entropy(logits, batch.labels)
            loss.backward()
            if epoch == 1 and batch.index == 0:
                check_gradients({"": layer})
            opt.step()
            n = batch.labels.numel()
            totals += torch.stack([loss.detach().double() * n,
                                   (logits.argmax(1) == batch.labels).sum().double(),
                                   torch.tensor(float(n), dtype=torch.float64, device=device)])
        synchronize(device)
        times.append(time.perf_counter() - start)
        if distributed:
            dist.all_reduce(totals)
        s = train.stats
        if progress:
            progress.update(epoch, {
                "loss": f"{totals[0].item() / totals[2].item():.4f}",
                "train": f"{totals[1].item() / totals[2].item():7.2%}",
                "time": f"{times[-1] * 1e3:.1f} ms",
                "loader": f"sample {s['sample_s'] * 1e3:.1f} ms, gather {s['gather_s'] * 1e3:.1f} "
                          f"ms, waited {s['wait_s'] * 1e3:.1f} ms"})
    if progress:
        progress.close()

    if distributed:
        # DDP applied the same averaged gradients everywhere, so the parameters must agree. This
        # is checked before testing so that no collective comes last: a gloo worker thread that
        # still frees a collective's tensors while the interpreter shuts down aborts the process.
        flat = torch.cat([p.detach().flatten() for p in layer.parameters()])
        gathered = [torch.empty_like(flat) for _ in range(world)]
        dist.all_gather(gathered, flat)
        same = all(torch.equal(gathered[0], g) for g in gathered[1:])
        say(f"parameters identical on all {world} ranks: {'yes' if same else 'NO'}")
    layer.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in test:
            logits = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
            correct += int((logits.argmax(1) == batch.labels).sum())
            total += batch.labels.numel()
    steady = times[1:] if len(times) > 1 else times
    say(f"test accuracy: {correct / total:.2%}, time per epoch: "
        f"{sum(steady) / len(steady) * 1e3:.1f} ms{' (after the first)' if len(times) > 1 else ''}"
        f", features: {'on disk' if store is not None else args.features}")
    if store is not None:
        s = store.stats
        say(f"store (rank 0, training and testing): {s['unique_rows']} rows looked up: cache "
            f"{s['cache_hit_rate']:.1%}, victim buffer {s['victim_hit_rate']:.1%}, storage "
            f"{s['storage_rate']:.1%} ({s['bytes_read'] / 1e6:.2f} MB read in "
            f"{s['read_requests']} requests; gathers waited {s['stall_s'] * 1e3:.1f} ms); "
            f"{s['prefetched_rows']} rows found ahead by the prefetcher")
        if distributed:
            dist.barrier()    # every rank is done with the shared victim buffer's rows
        store.close()
    if distributed:
        dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=pathlib.Path, default=_common.DATA / "aifb",
                        help="dataset directory (default: <repo>/../shared/data/aifb)")
    parser.add_argument("--features", choices=("pinned", "cpu_gather", "device"),
                        default="pinned",
                        help="pinned: gather rows with hector.PinnedTable from host memory "
                             "(zero-copy on CUDA); cpu_gather: the table's CPU gather + copy; "
                             "device: the table on the training device, index_select there")
    parser.add_argument("--features-on-disk", type=pathlib.Path, default=None, metavar="DIR",
                        help="train from a hector.FeatureStore file in DIR (built there on the "
                             "first run); overrides --features")
    parser.add_argument("--cache-bytes", type=int, default=None,
                        help="with --features-on-disk: the device cache's bytes (default: a "
                             "quarter of the table)")
    parser.add_argument("--victim-bytes", type=int, default=None,
                        help="with --features-on-disk: the victim buffer's bytes (default: a "
                             "quarter of the table)")
    parser.add_argument("--policy", choices=("static", "dynamic", "hybrid"), default="hybrid",
                        help="with --features-on-disk: the cache's eviction (default hybrid)")
    parser.add_argument("--no-store-prefetch", dest="store_prefetch", action="store_false",
                        help="with --features-on-disk: no prefetching of the next batch's rows")
    parser.add_argument("--feature-dim", type=int, default=64, help="feature width (default 64)")
    parser.add_argument("--feature-seed", type=int, default=0,
                        help="seed of the random feature table (default 0)")
    parser.add_argument("--fanout", type=parse_fanout, default=None,
                        help="incoming edges kept per node and relation: all, K or K1,K2 for the "
                             "two hops (default all)")
    parser.add_argument("--batch-size", type=int, default=32, help="targets per batch (default 32)")
    parser.add_argument("--prefetch", type=int, default=2,
                        help="batches prepared ahead on the loader thread (0: none; default 2)")
    parser.add_argument("--epochs", type=int, default=30, help="default 30")
    parser.add_argument("--lr", type=float, default=0.01, help="Adam learning rate (default 0.01)")
    parser.add_argument("--weight-decay", type=float, default=5e-4,
                        help="Adam weight_decay (default 5e-4)")
    parser.add_argument("--hidden", type=int, default=16, help="hidden width (default 16)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the weights, the shuffles and the samples (default 0)")
    parser.add_argument("--world-size", type=int, default=None,
                        help="data-parallel processes (default 1, or $WORLD_SIZE under torchrun)")
    parser.add_argument("--threads", type=int, default=None,
                        help="intra-op threads per process (default: cores / world size)")
    parser.add_argument("--dtype", choices=sorted(_common.DTYPES), default="float32")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--library", type=pathlib.Path, default=None,
                        help="a library built by hectorc from examples/rgcn_aifb.hector with "
                             "in=--feature-dim, hidden=--hidden, classes=4 (default: compile it)")
    args = parser.parse_args()
    for name in ("feature_dim", "batch_size", "epochs", "hidden"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.prefetch < 0:
        parser.error("--prefetch must be at least 0")
    for name in ("cache_bytes", "victim_bytes"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be at least 0")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device")
    if not args.data.is_dir():
        parser.error(f"--data: {args.data} is not a directory")
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ   # torchrun
    env_world = int(os.environ["WORLD_SIZE"]) if launched else None
    if launched and args.world_size not in (None, env_world):
        parser.error(f"--world-size {args.world_size} disagrees with WORLD_SIZE={env_world}")
    world = env_world or args.world_size or 1
    if world < 1:
        parser.error("--world-size must be at least 1")
    if args.device == "cuda" and not launched and world > torch.cuda.device_count():
        parser.error(f"--world-size {world}: only {torch.cuda.device_count()} CUDA devices")

    if launched:
        run(int(os.environ["RANK"]), world, args, None, None)
        return
    data = load_data(args)
    library = compile_layer(args, data.num_classes, args.device)
    if world == 1:
        run(0, 1, args, data, library)
        return
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    torch.multiprocessing.spawn(run, args=(world, args, data, library), nprocs=world)


if __name__ == "__main__":
    main()
