# Mini-batch training (hector.minibatch). Oracles: a plain-Python breadth-first search over the
# edge list (the subgraph's nodes, edges, relabelling and norm), DistributedSampler (the split of
# the targets), the compiled two-layer RGCN on the full graph (outputs and gradients at a batch's
# targets in float64), the same training with features indexed from a plain tensor (bit-identical
# on the CPU), and a single-process run over both ranks' batches with the averaged gradient (a
# 2-process gloo DDP run).
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest
import torch
import torch.nn.functional as F

import hector
from hector.minibatch import (MiniBatchLoader, NeighborSampler, partition_nodes, relation_norm)
from references import awkward_graph, rgcn_norm

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
needs_aifb = pytest.mark.skipif(not (DATA / "aifb").is_dir(), reason="../shared/data not present")
F64 = torch.float64
# rgcn_aifb with AIFB's 4 classes: the example's smoke runs use the same library.
MODEL = ("in=8", "hidden=4", "classes=4")


def hand_graph():
    """10 nodes, 4 relations (relation 2 without edges), duplicates, self-loops; node 8 has no
    incoming edge, node 9 none at all. Edge ids are the list positions."""
    edges = [(1, 0, 0), (2, 0, 0), (2, 0, 0), (3, 0, 1), (0, 0, 1),   # into 0: a duplicate, a loop
             (4, 1, 0), (5, 3, 3), (6, 4, 1), (1, 1, 3), (7, 6, 0),   # (1, 1, 3): a loop
             (8, 5, 0), (0, 2, 1), (3, 7, 0)]
    src, dst, etype = (torch.tensor(c) for c in zip(*edges))
    return src, dst, etype, 10, 4


def full_graph(src, dst, etype, num_nodes, num_relations):
    return hector.Graph(src, dst, etype, num_nodes=num_nodes, num_relations=num_relations)


def bfs_subgraph(src, dst, targets, hops):
    """Plain-Python oracle: (the nodes of every hop, the ids of the subgraph's edges)."""
    src, dst = src.tolist(), dst.tolist()
    first = list(dict.fromkeys(targets.tolist()))
    levels, seen, edges, frontier = [first], set(first), [], set(first)
    for _ in range(hops):
        hop = [e for e in range(len(src)) if dst[e] in frontier]
        edges += hop
        new = sorted({src[e] for e in hop} - seen)
        seen |= set(new)
        levels.append(new)
        frontier = set(new)
    return levels, sorted(edges)


def check_structure(sub, src, dst, etype, targets):
    """Relabelling, targets and norm of a subgraph, whatever its edges."""
    nodes = sub.nodes
    assert torch.equal(nodes[sub.target_local], targets)
    assert len(set(nodes.tolist())) == nodes.numel()
    assert torch.equal(nodes[sub.src], src[sub.edge_ids])
    assert torch.equal(nodes[sub.dst], dst[sub.edge_ids])
    assert torch.equal(sub.etype, etype[sub.edge_ids])
    assert sub.graph.num_nodes == nodes.numel() and sub.graph.num_edges == sub.edge_ids.numel()
    # The norm counts the subgraph's own edges of the relation at the destination.
    key = (sub.dst * sub.graph.num_relations + sub.etype).tolist()
    expected = torch.tensor([1.0 / key.count(k) for k in key], dtype=F64)
    assert torch.equal(sub.norm, expected)


# --- subgraph extraction --------------------------------------------------------------------

def test_hand_built_subgraphs():
    src, dst, etype, n, r = hand_graph()
    sampler = NeighborSampler(full_graph(src, dst, etype, n, r), num_layers=2)
    sub = sampler.sample(torch.tensor([0]))
    assert sub.nodes.tolist() == [0, 1, 2, 3, 4, 5]
    assert sub.hop_ptr.tolist() == [0, 1, 4, 6]
    assert sub.edge_ids.tolist() == [0, 1, 2, 3, 4, 5, 6, 8, 11]
    assert sub.norm.tolist() == [1 / 3, 1 / 3, 1 / 3, 0.5, 0.5, 1, 1, 1, 1]
    # An isolated target, a repeated one; the sources are relabelled.
    sub = sampler.sample(torch.tensor([9, 6, 9]))
    assert sub.nodes.tolist() == [9, 6, 7, 3] and sub.target_local.tolist() == [0, 1, 0]
    assert sub.edge_ids.tolist() == [9, 12]
    assert sub.src.tolist() == [2, 3] and sub.dst.tolist() == [1, 2]
    assert sub.etype.tolist() == [0, 0] and sub.norm.tolist() == [1.0, 1.0]
    # No targets: an empty subgraph.
    sub = sampler.sample(torch.empty(0, dtype=torch.int32))
    assert sub.num_nodes == 0 and sub.num_edges == 0 and sub.graph.num_nodes == 0


def target_sets(num_nodes, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.tensor([0]), torch.tensor([num_nodes - 1]),       # an isolated node (awkward)
            torch.arange(num_nodes),                                # everything
            torch.randint(0, num_nodes, (7,), generator=g),         # repeats likely
            torch.randperm(num_nodes, generator=g)[:5]]


@pytest.mark.parametrize("hops", [1, 2, 3])
@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=1, num_relations=1),
                                 dict(seed=2, num_nodes=9, num_edges=30)])
def test_subgraph_equals_breadth_first_search(gkw, hops):
    g = awkward_graph(**gkw)
    graph = full_graph(g.src, g.dst, g.etype, g.num_nodes, g.num_relations)
    sampler = NeighborSampler(graph, num_layers=hops)
    full_norm = rgcn_norm(g)
    for targets in target_sets(g.num_nodes, gkw["seed"]):
        sub = sampler.sample(targets)
        levels, edges = bfs_subgraph(g.src, g.dst, targets, hops)
        assert sub.nodes.tolist() == [v for level in levels for v in level]
        assert sub.hop_ptr.diff().tolist() == [len(level) for level in levels]
        assert sub.edge_ids.tolist() == edges
        check_structure(sub, g.src, g.dst, g.etype, targets)
        # Every expanded node keeps all its edges: the norm is the full graph's.
        assert torch.equal(sub.norm, full_norm[sub.edge_ids])


def test_node_types_follow_the_nodes():
    g = awkward_graph(0)
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                         num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    sub = NeighborSampler(graph).sample(torch.tensor([5, 11]))
    assert sub.graph.has_ntype and sub.graph.num_ntypes == g.num_ntypes
    assert torch.equal(sub.graph.ntype, g.ntype[sub.nodes])


def star_graph():
    """Node 0 receives 10 edges of relation 0 (two of them duplicates), 4 of relation 1 and one
    of relation 2; each of those sources receives 6 edges of relation 0."""
    edges = [(s, 0, 0) for s in range(1, 9)] + [(1, 0, 0), (2, 0, 0)]
    edges += [(s, 0, 1) for s in range(9, 13)] + [(13, 0, 2)]
    edges += [(100 + 6 * s + k, s, 0) for s in range(1, 14) for k in range(6)]
    src, dst, etype = (torch.tensor(c) for c in zip(*edges))
    return src, dst, etype, 100 + 6 * 14, 3


@pytest.mark.parametrize("fanout", [1, 3, [4, 2], [None, 2], [2, None]])
def test_fanout_sampling(fanout):
    src, dst, etype, n, r = star_graph()
    sampler = NeighborSampler(full_graph(src, dst, etype, n, r), num_layers=2, fanout=fanout)
    ks = fanout if isinstance(fanout, list) else [fanout, fanout]
    targets = torch.tensor([0])
    samples = []
    for seed in range(3):
        sub = sampler.sample(targets, torch.Generator().manual_seed(seed))
        check_structure(sub, src, dst, etype, targets)
        _, all_edges = bfs_subgraph(src, dst, targets, 2)
        assert set(sub.edge_ids.tolist()) <= set(all_edges)
        hop_of = {int(v): h for h in range(3)
                  for v in sub.nodes[sub.hop_ptr[h]:sub.hop_ptr[h + 1]]}
        # Per expanded node and relation: min(k, available) edges, drawn at its own hop.
        for node, hop in hop_of.items():
            if hop == 2:
                assert not (dst[sub.edge_ids] == node).any()
                continue
            for rel in range(r):
                available = int(((dst == node) & (etype == rel)).sum())
                kept = int(((dst[sub.edge_ids] == node) & (etype[sub.edge_ids] == rel)).sum())
                k = ks[hop]
                assert kept == (available if k is None else min(k, available))
        # The reached nodes are exactly the sampled edges' sources.
        assert set(sub.nodes.tolist()) == set(targets.tolist()) | set(src[sub.edge_ids].tolist())
        again = sampler.sample(targets, torch.Generator().manual_seed(seed))
        assert torch.equal(again.edge_ids, sub.edge_ids) and torch.equal(again.nodes, sub.nodes)
        samples.append(sub.edge_ids.tolist())
    if ks[0] is not None and ks[0] < 4:
        assert len({tuple(s) for s in samples}) > 1   # different seeds, different samples


def test_fanout_is_uniform():
    """Every edge of a group is drawn about equally often: k = 3 of 10 edges (relation 0) and of
    4 (relation 1) in 600 draws; a group of one is always kept."""
    src, dst, etype, n, r = star_graph()
    sampler = NeighborSampler(full_graph(src, dst, etype, n, r), num_layers=1, fanout=3)
    counts = torch.zeros(src.numel())
    for seed in range(600):
        counts[sampler.sample(torch.tensor([0]), torch.Generator().manual_seed(seed)).edge_ids] += 1
    group = counts[:10]   # the relation-0 edges into node 0 (duplicates are distinct edges)
    assert group.sum() == 600 * 3 and ((group > 130) & (group < 230)).all(), group
    group = counts[10:14]
    assert group.sum() == 600 * 3 and ((group > 390) & (group < 510)).all(), group
    assert counts[14] == 600


@pytest.mark.parametrize("call, exc, message", [
    (lambda s: s.sample(torch.tensor([0, 10])), ValueError,
     "hector.minibatch: targets[1] = 10 is out of range [0, 10)"),
    (lambda s: s.sample(torch.tensor([-1])), ValueError, "targets[0] = -1 is out of range"),
    (lambda s: s.sample(torch.tensor([0.0])), TypeError, "targets must have an integer dtype"),
    (lambda s: s.sample([0]), TypeError, "targets must be a torch.Tensor, got list"),
    (lambda s: s.sample(torch.tensor([[0]])), ValueError, "targets must be 1-D, got shape [1, 1]"),
    (lambda s: NeighborSampler(s.graph, fanout=0), ValueError, "every fanout must be None or a "
                                                              "positive int, got 0"),
    (lambda s: NeighborSampler(s.graph, fanout=[1]), ValueError,
     "fanout has 1 entries but num_layers is 2"),
    (lambda s: NeighborSampler(s.graph, num_layers=0), ValueError, "num_layers must be a positive"),
    (lambda s: NeighborSampler("graph"), TypeError, "graph must be a hector.Graph, got str"),
])
def test_sampler_validation(call, exc, message):
    sampler = NeighborSampler(full_graph(*hand_graph()))
    with pytest.raises(exc) as info:
        call(sampler)
    assert message in str(info.value)


# --- the compiled model on a subgraph equals the model on the full graph -----------------------

def assert_model_agrees(Model, graph, num_relations, targets, dtype=F64):
    """Outputs and gradients (weights; features, which are zero outside the subgraph) of the
    compiled two-layer RGCN at ``targets``: on the subgraph as on the full graph."""
    torch.manual_seed(0)
    layer = Model(num_relations=num_relations, dtype=dtype)
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.5 * torch.randn_like(p))   # non-zero biases too
    x = torch.randn(graph.num_nodes, 8, dtype=dtype, requires_grad=True)
    full = layer(graph, x, relation_norm(graph).to(dtype))[targets]
    up = torch.randn_like(full)
    expected = torch.autograd.grad(full, [x, *layer.parameters()], up)
    sub = NeighborSampler(graph, num_layers=2).sample(targets)
    xs = x.detach()[sub.nodes].requires_grad_()
    out = layer(sub.graph, xs, sub.norm.to(dtype))[sub.target_local]
    torch.testing.assert_close(out, full, rtol=0, atol=1e-12)
    got = torch.autograd.grad(out, [xs, *layer.parameters()], up)
    grad_x = torch.zeros_like(expected[0]).index_copy(0, sub.nodes, got[0])
    for a, b in zip((grad_x, *got[1:]), expected):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("gkw", [dict(seed=0), dict(seed=1, num_relations=1),
                                 dict(seed=2, num_nodes=9, num_edges=30),
                                 dict(seed=3, num_nodes=80, num_edges=500)])
def test_model_on_subgraph_equals_full_graph(compile_model, gkw):
    Model = compile_model("rgcn_aifb", *MODEL)
    g = awkward_graph(**gkw)
    graph = full_graph(g.src, g.dst, g.etype, g.num_nodes, g.num_relations)
    for targets in target_sets(g.num_nodes, gkw["seed"]):
        assert_model_agrees(Model, graph, g.num_relations, targets)
    src, dst, etype, n, r = hand_graph()
    assert_model_agrees(Model, full_graph(src, dst, etype, n, r), r, torch.tensor([0, 9, 6, 0]))


@needs_aifb
def test_model_on_aifb_batch_equals_full_graph(compile_model):
    from hector.data import load_entities
    d = load_entities(DATA / "aifb")
    graph = full_graph(d.src, d.dst, d.etype, d.num_nodes, d.num_relations)
    targets = d.train_idx[torch.randperm(d.train_idx.numel(),
                                         generator=torch.Generator().manual_seed(0))[:32]]
    assert_model_agrees(compile_model("rgcn_aifb", *MODEL), graph, d.num_relations, targets)


# --- splitting the targets ------------------------------------------------------------------------

@pytest.mark.parametrize("n, world", [(140, 2), (7, 3), (1, 2), (10, 1), (0, 2)])
@pytest.mark.parametrize("shuffle", [True, False])
def test_partition_matches_distributed_sampler(n, world, shuffle):
    from torch.utils.data import DistributedSampler
    for epoch in (0, 3):
        for rank in range(world):
            ds = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=shuffle,
                                    seed=5)
            ds.set_epoch(epoch)
            batches = partition_nodes(n, 4, epoch=epoch, seed=5, shuffle=shuffle, rank=rank,
                                      world_size=world)
            mine = torch.cat(batches).tolist() if batches else []
            assert mine == list(ds)
            assert all(b.numel() == 4 for b in batches[:-1])
    assert len(partition_nodes(10, 4, drop_last=True)) == 2
    assert partition_nodes(0, 4) == []
    assert partition_nodes(1, 4, rank=1, world_size=2)[0].numel() == 1
    with pytest.raises(ValueError, match=r"rank 2 is not in \[0, 2\)"):
        partition_nodes(10, 4, rank=2, world_size=2)


# --- the loader ------------------------------------------------------------------------------

def training_problem(seed=3, num_nodes=80, num_edges=500, width=8):
    g = awkward_graph(seed, num_nodes=num_nodes, num_edges=num_edges)
    graph = full_graph(g.src, g.dst, g.etype, g.num_nodes, g.num_relations)
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(g.num_nodes, width, generator=gen)
    nodes = torch.randperm(g.num_nodes, generator=gen)[:30]
    labels = torch.randint(0, 4, (30,), generator=gen)
    return graph, features, nodes, labels


def train(layer, loader, epochs):
    """Adam on the loader's batches (`layer` may be a DistributedDataParallel wrapper); returns
    every step's loss."""
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    losses = []
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for batch in loader:
            opt.zero_grad()
            out = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
            loss = F.cross_entropy(out, batch.labels)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
    return losses


def test_pinned_and_device_features_train_identically(compile_model):
    """PinnedTable gathers (on a loader thread) and index_select (on the caller's thread) give
    bit-identical batches, losses and parameters, sampled batches included."""
    Model = compile_model("rgcn_aifb", *MODEL)
    graph, features, nodes, labels = training_problem()
    sampler = NeighborSampler(graph, num_layers=2, fanout=[3, 2])
    torch.manual_seed(1)
    init = Model(num_relations=graph.num_relations).state_dict()
    results = []
    for table, prefetch in ((hector.PinnedTable(features), 2), (features, 0)):
        loader = MiniBatchLoader(sampler, table, nodes, labels, batch_size=7, seed=4,
                                 prefetch=prefetch)
        layer = Model(num_relations=graph.num_relations)
        layer.load_state_dict(init)
        losses = train(layer, loader, epochs=3)
        assert loader.stats["batches"] == 5 and loader.stats["nodes"] > 0
        results.append((losses, [p.detach() for p in layer.parameters()]))
    (losses_a, params_a), (losses_b, params_b) = results
    assert len(losses_a) == 15
    assert all(torch.equal(a, b) for a, b in zip(losses_a, losses_b))
    assert all(torch.equal(a, b) for a, b in zip(params_a, params_b))
    assert losses_a[-1] < losses_a[0]


def test_batches_hold_the_subgraph_features():
    graph, features, nodes, labels = training_problem()
    loader = MiniBatchLoader(NeighborSampler(graph, fanout=2), hector.PinnedTable(features),
                             nodes, labels, batch_size=8, dtype=F64)
    label_of = dict(zip(nodes.tolist(), labels.tolist()))
    seen = []
    for batch in loader:
        sub = batch.subgraph
        assert torch.equal(batch.x, features[sub.nodes])
        assert torch.equal(batch.norm, sub.norm) and batch.norm.dtype == F64
        assert torch.equal(sub.nodes[batch.target_local], batch.targets)
        assert batch.labels.tolist() == [label_of[t] for t in batch.targets.tolist()]
        seen.append(batch.targets)
    assert sorted(torch.cat(seen).tolist()) == sorted(nodes.tolist())
    assert len(loader) == 4


def test_loader_thread_errors_and_early_exit():
    graph, features, nodes, labels = training_problem()

    class Failing(NeighborSampler):
        def sample(self, targets, generator=None):
            if self.calls == 2:
                raise RuntimeError("sampling failed")
            self.calls += 1
            return super().sample(targets, generator)

    sampler = Failing(graph)
    sampler.calls = 0
    loader = MiniBatchLoader(sampler, features, nodes, labels, batch_size=5, prefetch=1)
    with pytest.raises(RuntimeError, match="sampling failed"):
        for _ in loader:
            pass
    # Leaving early stops the thread.
    loader = MiniBatchLoader(NeighborSampler(graph), features, nodes, batch_size=5, prefetch=2)
    for batch in loader:
        assert batch.labels is None
        break
    deadline = time.monotonic() + 10
    while any(t.name == "hector-minibatch" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the loader thread did not stop"
        time.sleep(0.01)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_loader_on_cuda_zero_copy_side_stream():
    """On CUDA (no compiled model needed, so the GPU check runs it): batches gathered zero-copy
    on the loader thread's side stream, handed over to the caller's stream (event, record_stream),
    equal the CPU gather + copy and the rows indexed on the device, bit for bit."""
    graph, features, nodes, labels = training_problem(width=33)
    on_device = features.cuda()
    sampler = NeighborSampler(graph, num_layers=2, fanout=[3, 2])
    sources = [(hector.PinnedTable(features, fallback="error"), 2),
               (hector.PinnedTable(features, mode="cpu_gather"), 1), (on_device, 0)]
    assert sources[0][0].mode == "zero_copy"
    for epoch in range(2):
        runs = []
        for source, prefetch in sources:
            loader = MiniBatchLoader(sampler, source, nodes, labels, batch_size=7, seed=4,
                                     device="cuda", prefetch=prefetch, dtype=F64)
            loader.set_epoch(epoch)
            got = []
            for batch in loader:
                assert batch.x.is_cuda and batch.norm.is_cuda and batch.graph.device.type == "cuda"
                # Used on the caller's stream at once: the hand-over must have made that safe.
                expected = on_device.index_select(0, batch.subgraph.nodes.cuda())
                assert torch.equal(batch.x, expected)
                got.append([t.cpu() for t in (batch.x, batch.norm, batch.target_local,
                                              batch.labels)])
            runs.append(got)
        assert len(runs[0]) == 5
        for a, b, c in zip(*runs):
            assert all(torch.equal(x, y) and torch.equal(x, z) for x, y, z in zip(a, b, c))


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(features=torch.randn(5, 8)), ValueError,
     "the feature table has 5 rows but the graph has 80 nodes"),
    (dict(features=[1.0]), TypeError, "features must be a hector.PinnedTable, a hector.FeatureStore or a tensor"),
    (dict(labels=torch.zeros(3)), ValueError, "3 labels for 30 nodes"),
    (dict(prefetch=-1), ValueError, "prefetch must be a non-negative int"),
    (dict(nodes=torch.tensor([80])), ValueError, "nodes[0] = 80 is out of range [0, 80)"),
    (dict(batch_size=0), ValueError, "batch_size must be positive"),
])
def test_loader_validation(kwargs, exc, message):
    graph, features, nodes, labels = training_problem()
    args = dict(features=features, nodes=nodes, labels=labels, batch_size=4)
    args.update(kwargs)
    with pytest.raises(exc) as info:
        MiniBatchLoader(NeighborSampler(graph), **args)
    assert message in str(info.value)


# --- data-parallel training (DDP, gloo) -----------------------------------------------------

DDP_EPOCHS = 3


def ddp_setup(library, rank, world):
    graph, features, nodes, labels = training_problem(width=8)
    Model = hector.load(library)
    torch.manual_seed(2)
    layer = Model(num_relations=graph.num_relations, dtype=F64)
    loader = MiniBatchLoader(NeighborSampler(graph, fanout=[4, 3]), hector.PinnedTable(
        features.double()), nodes, labels, batch_size=4, seed=9, rank=rank, world_size=world,
        prefetch=1)
    return layer, loader


def ddp_worker(rank, world, init_file, library, out_dir):
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=world)
    try:
        layer, loader = ddp_setup(library, rank, world)
        model = torch.nn.parallel.DistributedDataParallel(layer)
        losses = train(model, loader, DDP_EPOCHS)
        torch.save({"losses": losses, "params": dict(layer.named_parameters())},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_ddp_two_ranks_equal_single_process_over_both_shares(compiled_library, tmp_path):
    library = str(compiled_library("rgcn_aifb", *MODEL))
    ctx = torch.multiprocessing.spawn(ddp_worker, nprocs=2, join=False,
                                      args=(2, str(tmp_path / "rendezvous"), library,
                                            str(tmp_path)))
    deadline = time.monotonic() + 120
    while not ctx.join(timeout=1):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                p.terminate()
            pytest.fail("the DDP run did not finish in 120 s")
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    for name, p in ranks[0]["params"].items():
        assert torch.equal(p, ranks[1]["params"][name]), name

    # One process over both shares: each step averages the two ranks' gradients, as DDP does.
    # (DDP's average, g0/2 + g1/2 or (g0 + g1)/2, is the same float64 number: halving is exact.)
    setups = [ddp_setup(library, r, 2) for r in range(2)]
    layer = setups[0][0]
    opt = torch.optim.Adam(layer.parameters(), lr=0.05)
    params = list(layer.parameters())
    losses = []
    for epoch in range(DDP_EPOCHS):
        for _, loader in setups:
            loader.set_epoch(epoch)
        for b0, b1 in zip(*(loader for _, loader in setups)):
            grads = []
            for batch in (b0, b1):
                out = layer(batch.graph, batch.x, batch.norm)[batch.target_local]
                loss = F.cross_entropy(out, batch.labels)
                grads.append(torch.autograd.grad(loss, params))
                losses.append(loss.detach())
            for p, g0, g1 in zip(params, *grads):
                p.grad = (g0 + g1) / 2
            opt.step()
    assert len(ranks[0]["losses"]) == DDP_EPOCHS * 4   # 15 targets per rank: batches of 4, 4, 4, 3
    for rank in range(2):
        assert all(torch.equal(a, b) for a, b in zip(losses[rank::2], ranks[rank]["losses"]))
    for name, p in layer.named_parameters():
        assert torch.equal(p.detach(), ranks[0]["params"][name].detach()), name
    per_epoch = [sum(losses[8 * e:8 * (e + 1)]) for e in range(DDP_EPOCHS)]
    assert per_epoch[-1] < per_epoch[0]


# --- the example ------------------------------------------------------------------------------

def run_example(library, *args, timeout=240):
    env = dict(os.environ, HECTOR_BUILD_DIR=os.environ.get("HECTOR_BUILD_DIR",
                                                           str(REPO / "build")))
    cmd = [sys.executable, str(REPO / "examples" / "train_minibatch.py"), "--library",
           str(library), "--feature-dim", "8", "--hidden", "4", "--batch-size", "32", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@needs_aifb
def test_example_smoke_pinned(compiled_library):
    out = run_example(compiled_library("rgcn_aifb", *MODEL), "--epochs", "2", "--fanout", "5",
                      "--features", "pinned")
    assert "pinned (cpu_gather)" in out and "epoch 2/2" in out
    assert "test accuracy:" in out


@needs_aifb
def test_example_smoke_ddp_two_processes(compiled_library):
    out = run_example(compiled_library("rgcn_aifb", *MODEL), "--epochs", "1", "--world-size", "2",
                      "--features", "device")
    assert "2 ranks" in out and "3 batches per epoch and rank" in out
    assert "parameters identical on all 2 ranks: yes" in out
    assert "test accuracy:" in out


# --- the end-to-end benchmark (tools/bench_minibatch.py) --------------------------------------

def test_bench_minibatch_cpu_smoke(compiled_library, tmp_path):
    """The benchmark and its --check (zero-copy vs device training) on the CPU: the GPU check
    script runs them on CUDA, where the zero-copy mode exists."""
    import json
    library = str(compiled_library("rgcn_aifb", *MODEL))
    env = dict(os.environ, HECTOR_BUILD_DIR=os.environ.get("HECTOR_BUILD_DIR",
                                                           str(REPO / "build")))
    script = str(REPO / "tools" / "bench_minibatch.py")

    def run(*args):
        cmd = [sys.executable, script, "--device", "cpu", "--library", library, *args]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
        return r.stdout

    out = run("--nodes", "2000", "--degree", "3", "--relations", "4", "--batch-size", "32",
              "--batches", "3", "--warmup", "1", "--bandwidth-batches", "2",
              "--json", str(tmp_path / "bench.json"))
    report = json.loads((tmp_path / "bench.json").read_text())
    assert [r["mode"] for r in report["results"]] == ["cpu_gather", "device"]
    assert report["skipped"] == ["zero_copy"] and report["losses_identical"]
    for r in report["results"]:
        assert r["batches"] == 3 and r["epoch_s"] > 0 and r["cpu_s"] > 0
        assert r["gather_gbps"] > 0 and r["nodes_per_batch"] >= 32
    assert report["results"][0]["epoch_vs_device"] > 0
    assert "losses identical across modes: yes" in out

    run("--check", "--graph", "synthetic", "--epochs", "2", "--json", str(tmp_path / "check.json"))
    check = json.loads((tmp_path / "check.json").read_text())
    assert check["failures"] == [] and len(check["runs"]) == 3
    assert all(r["batches_with_wrong_features"] == 0 and r["losses_identical_to_device"]
               for r in check["runs"])
