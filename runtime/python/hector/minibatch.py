"""Mini-batch training of relational GNNs on a graph whose node features stay in host memory.

The pipeline (docs/runtime.md "Mini-batch training"):

1. :func:`partition_nodes` splits the target (training) nodes of an epoch into batches: shuffled
   with a generator seeded by ``seed + epoch``, then shared between the ranks of a data-parallel
   run as ``torch.utils.data.DistributedSampler`` shares them (padded by repeating the start of
   the permutation, rank ``r`` takes every ``world_size``-th node from ``r`` on).
2. :class:`NeighborSampler` builds each batch's relational subgraph: the ``num_layers``-hop
   in-neighbourhood a ``num_layers``-layer model needs at the batch's nodes, optionally with at
   most ``fanout`` incoming edges per (node, relation) drawn with a seeded generator, relabelled
   to local ids, as a :class:`hector.Graph` with the RGCN norm ``1/|N_r(i)|`` computed on it.
3. :class:`MiniBatchLoader` gathers the features of the subgraph's nodes — from a
   :class:`hector.PinnedTable` (zero-copy on CUDA, the multithreaded CPU gather on the CPU or
   with ``mode="cpu_gather"``, plus one copy to a GPU), from a :class:`hector.FeatureStore`
   (features on disk; the next batch's nodes are handed to its prefetcher before the current
   batch is gathered) or from a plain tensor — moves the batch to the training device and does
   all of this for the next batches on a background thread (a bounded queue; on CUDA a side
   stream) while the caller computes on the current one.

Every random choice derives from ``seed``, the epoch, the rank and the batch's position, so a run
is reproducible whatever the prefetch depth or the thread timing.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import queue
import threading
import time

import torch

from ._native import load_runtime
from .feature_store import FeatureStore
from .graph import Graph
from .pinned import PinnedTable

__all__ = ["Subgraph", "NeighborSampler", "partition_nodes", "Batch", "MiniBatchLoader",
           "relation_norm"]

_MASK64 = (1 << 64) - 1


def _mix_seed(*parts: int) -> int:
    """One 63-bit seed from integers (splitmix64 over the parts): independent streams per
    (seed, epoch, rank, batch)."""
    state = 0
    for part in parts:
        z = ((state ^ (int(part) & _MASK64)) + 0x9E3779B97F4A7C15) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        state = z ^ (z >> 31)
    return state >> 1


def relation_norm(graph: Graph) -> torch.Tensor:
    """RGCN's edge input: ``1/|N_r(i)|`` per edge in the user's edge order (float64), counted on
    ``graph`` itself — on a subgraph, over the subgraph's edges."""
    return graph.edge_norm("relation", torch.float64)


def _check_index(name: str, index, bound: int) -> torch.Tensor:
    """``index`` as a CPU int64 tensor after checking it is a 1-D integer tensor in [0, bound)."""
    if not isinstance(index, torch.Tensor):
        raise TypeError(f"hector.minibatch: {name} must be a torch.Tensor, got "
                        f"{type(index).__name__}")
    if index.is_floating_point() or index.is_complex() or index.dtype == torch.bool:
        raise TypeError(f"hector.minibatch: {name} must have an integer dtype, got {index.dtype}")
    if index.dim() != 1:
        raise ValueError(f"hector.minibatch: {name} must be 1-D, got shape {list(index.shape)}")
    index = index.to(device="cpu", dtype=torch.int64)
    bad = torch.nonzero((index < 0) | (index >= bound)).flatten()
    if bad.numel():
        i = int(bad[0])
        raise ValueError(f"hector.minibatch: {name}[{i}] = {int(index[i])} is out of range "
                         f"[0, {bound})")
    return index


def _segment_positions(starts: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """The concatenation of ``arange(starts[k], starts[k] + counts[k])`` over k."""
    total = int(counts.sum())
    if total == 0:
        return torch.empty(0, dtype=torch.int64)
    offsets = torch.cumsum(counts, 0) - counts            # where each segment starts in the output
    return torch.repeat_interleave(starts - offsets, counts) + torch.arange(total)


def _first_occurrence_unique(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(the distinct values in order of first occurrence, the position of every value in it)."""
    uniq, inverse = torch.unique(values, return_inverse=True)
    first = torch.full((uniq.numel(),), values.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(values.numel()), "amin")
    order = torch.argsort(first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(order.numel())
    return uniq[order], rank[inverse]


@dataclasses.dataclass
class Subgraph:
    """The relational subgraph of one batch, on the CPU, with local node ids.

    Local node ``k`` is global node ``nodes[k]``. The batch's distinct target nodes come first, in
    the order they first occur in the batch; then the nodes each hop reaches for the first time,
    hop by hop, ascending within a hop (``hop_ptr[h]:hop_ptr[h+1]`` are those of hop ``h``, hop
    0 the targets). The edges are the (sampled) incoming edges of every node of hops
    ``0 .. num_layers-1`` — so a ``num_layers``-layer model computes the targets' outputs exactly
    as on the full graph — in the full graph's edge order (``edge_ids`` ascending).
    """

    nodes: torch.Tensor         #: int64 [n], global id of every local node
    target_local: torch.Tensor  #: int64 [B], local id of every target, in batch order
    hop_ptr: torch.Tensor       #: int64 [num_layers + 2], node offsets of the hops
    edge_ids: torch.Tensor      #: int64 [e], the full graph's (user-order) id of every edge
    src: torch.Tensor           #: int64 [e], local source
    dst: torch.Tensor           #: int64 [e], local destination
    etype: torch.Tensor         #: int64 [e], relation
    graph: Graph                #: the subgraph as a hector.Graph (CPU)
    norm: torch.Tensor          #: float64 [e], 1/|N_r(i)| on the subgraph, in edge order

    @property
    def num_nodes(self) -> int:
        return int(self.nodes.numel())

    @property
    def num_edges(self) -> int:
        return int(self.edge_ids.numel())


class NeighborSampler:
    """Builds the relational subgraph that a ``num_layers``-layer model needs at a batch of
    target nodes of ``graph`` (a CPU :class:`hector.Graph`).

    Hop ``h`` (``h = 1 .. num_layers``) takes the incoming edges of the nodes reached for the
    first time at hop ``h - 1`` (hop 0: the targets) and reaches their sources. With
    ``fanout[h-1] = k``, a node keeps at most ``k`` incoming edges *per relation*, drawn uniformly
    without replacement (duplicate edges count as distinct edges, as in the norm); ``None`` keeps
    all. A node's edges are drawn once, at the hop that first reaches it, and serve every layer.

    Args:
        graph: the full graph, on the CPU.
        num_layers: the model's number of message-passing layers (hops).
        fanout: ``None`` (every edge), an int for every hop, or one entry per hop (``None`` or a
            positive int).
    """

    def __init__(self, graph: Graph, num_layers: int = 2, fanout=None):
        if not isinstance(graph, Graph):
            raise TypeError(f"hector.NeighborSampler: graph must be a hector.Graph, got "
                            f"{type(graph).__name__}")
        if graph.device.type != "cpu":
            raise ValueError(f"hector.NeighborSampler: graph must be on the CPU, got "
                             f"{graph.device}")
        if isinstance(num_layers, bool) or not isinstance(num_layers, int) or num_layers < 1:
            raise ValueError(f"hector.NeighborSampler: num_layers must be a positive int, got "
                             f"{num_layers!r}")
        if fanout is None or isinstance(fanout, int):
            fanout = [fanout] * num_layers
        fanout = list(fanout)
        if len(fanout) != num_layers:
            raise ValueError(f"hector.NeighborSampler: fanout has {len(fanout)} entries but "
                             f"num_layers is {num_layers}")
        for k in fanout:
            if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
                raise ValueError(f"hector.NeighborSampler: every fanout must be None or a "
                                 f"positive int, got {k!r}")
        self.graph = graph
        self.num_layers = num_layers
        self.fanout = fanout
        # The CSR by destination (a node's incoming edges are consecutive positions; the graph's
        # own tensors, in its index dtype) and the user's edge list (int64).
        self._in_ptr = graph.in_ptr.long()
        self._in_src, self._sorted_etype = graph.sorted_src, graph.sorted_etype
        self._edge_perm = graph.edge_perm
        self._src, self._dst, self._etype = graph._impl.user_edges()
        self._ntype = graph.ntype.long() if graph.has_ntype else None

    def _sample(self, pos: torch.Tensor, owner: torch.Tensor, k: int,
                generator: torch.Generator | None) -> torch.Tensor:
        """Keeps at most k of the CSR positions ``pos`` per (owner, relation) group, uniformly."""
        key = owner * self.graph.num_relations + self._sorted_etype[pos].long()
        # Random order within a group: sort by a random key, then stably by group.
        order = torch.argsort(torch.rand(pos.numel(), generator=generator, dtype=torch.float64))
        order = order[torch.argsort(key[order], stable=True)]
        grouped = key[order]
        rank = torch.arange(grouped.numel()) - torch.searchsorted(grouped, grouped)
        return torch.sort(pos[order[rank < k]]).values

    def sample(self, targets: torch.Tensor, generator: torch.Generator | None = None) -> Subgraph:
        """The subgraph of the batch ``targets`` (global node ids; repeats allowed, they share a
        local node). ``generator`` draws the fan-out samples (unused without fan-out)."""
        targets = _check_index("targets", targets, self.graph.num_nodes)
        seeds, target_local = _first_occurrence_unique(targets)
        parts, edge_parts = [seeds], []
        visited = frontier = seeds
        for k in self.fanout:
            starts = self._in_ptr[frontier]
            counts = self._in_ptr[frontier + 1] - starts
            pos = _segment_positions(starts, counts)
            if k is not None and pos.numel():
                owner = torch.repeat_interleave(torch.arange(frontier.numel()), counts)
                pos = self._sample(pos, owner, k, generator)
            edge_parts.append(pos)
            reached = torch.unique(self._in_src[pos].long())
            frontier = reached[~torch.isin(reached, visited)]
            parts.append(frontier)
            visited = torch.cat([visited, frontier])
        nodes = torch.cat(parts)
        hop_ptr = torch.tensor([0] + [p.numel() for p in parts]).cumsum(0)
        # Edges in the full graph's order; endpoints relabelled through the sorted node list.
        edge_ids = torch.sort(self._edge_perm[torch.cat(edge_parts)].long()).values
        sorted_nodes, local_of_sorted = torch.sort(nodes)
        src = local_of_sorted[torch.searchsorted(sorted_nodes, self._src[edge_ids])]
        dst = local_of_sorted[torch.searchsorted(sorted_nodes, self._dst[edge_ids])]
        etype = self._etype[edge_ids]
        g = self.graph
        sub = Graph(src, dst, etype, num_nodes=nodes.numel(),
                    ntype=None if self._ntype is None else self._ntype[nodes],
                    num_relations=g.num_relations, num_ntypes=g.num_ntypes)
        return Subgraph(nodes=nodes, target_local=target_local, hop_ptr=hop_ptr,
                        edge_ids=edge_ids, src=src, dst=dst, etype=etype, graph=sub,
                        norm=relation_norm(sub))


def partition_nodes(num_nodes: int, batch_size: int, *, epoch: int = 0, seed: int = 0,
                    shuffle: bool = True, rank: int = 0, world_size: int = 1,
                    drop_last: bool = False) -> list[torch.Tensor]:
    """The batches (positions in ``[0, num_nodes)``) that ``rank`` of ``world_size`` trains on in
    ``epoch``.

    As ``DistributedSampler`` then ``DataLoader``: a permutation from a generator seeded with
    ``seed + epoch`` (the identity without ``shuffle``), padded by repeating its start to a multiple
    of ``world_size``, every ``world_size``-th entry from ``rank`` on, cut into batches of
    ``batch_size`` (the last one shorter unless ``drop_last``). Every rank gets the same number of
    batches, which data-parallel training needs.
    """
    if batch_size < 1:
        raise ValueError(f"hector.partition_nodes: batch_size must be positive, got {batch_size}")
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"hector.partition_nodes: rank {rank} is not in [0, {world_size})")
    if shuffle:
        order = torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed + epoch))
    else:
        order = torch.arange(num_nodes)
    per_rank = math.ceil(num_nodes / world_size)
    if num_nodes and per_rank * world_size > num_nodes:
        order = order.repeat(math.ceil(per_rank * world_size / num_nodes))[:per_rank * world_size]
    mine = order[rank::world_size]
    batches = [b for b in mine.split(batch_size) if b.numel()]
    if drop_last and batches and batches[-1].numel() < batch_size:
        batches.pop()
    return batches


@dataclasses.dataclass
class Batch:
    """One batch on the training device: ``model(batch.graph, batch.x, batch.norm)`` gives the
    subgraph's outputs; ``out[batch.target_local]`` those of ``batch.targets``."""

    index: int                  #: position in the epoch
    targets: torch.Tensor       #: int64 [B], global target ids (CPU)
    subgraph: Subgraph          #: the CPU subgraph (global ids, edge ids)
    graph: Graph                #: the subgraph on the device
    x: torch.Tensor             #: [n, ...] features of subgraph.nodes on the device
    norm: torch.Tensor          #: [e] 1/|N_r(i)| on the subgraph, user edge order, device
    target_local: torch.Tensor  #: int64 [B] local ids of the targets, device
    labels: torch.Tensor | None  #: [B] labels of the targets, device (None without labels)
    sample_s: float = 0.0       #: seconds spent building the subgraph
    gather_s: float = 0.0       #: seconds spent gathering features and moving the batch
    _event: object = dataclasses.field(default=None, repr=False)


class MiniBatchLoader:
    """Batches of target nodes with their subgraphs and features, prepared ahead of use.

    Args:
        sampler: the :class:`NeighborSampler` that builds each subgraph.
        features: the node feature table, a :class:`hector.PinnedTable` or a
            :class:`hector.FeatureStore` (``gather`` with an index on ``device``; a store whose
            ``prefetch_enabled`` is set also gets every batch's nodes one batch ahead, through
            :meth:`~hector.FeatureStore.prefetch`) or a tensor (``index_select`` on the tensor's
            device, then moved to ``device``), ``[num_nodes, ...]``.
        nodes: int64 [M] the target nodes (e.g. the training nodes).
        labels: optional [M], the label of every entry of ``nodes``.
        batch_size, shuffle, seed, rank, world_size, drop_last: :func:`partition_nodes`.
        device: where batches go (the features' device for a tensor, the CPU for a table, if
            not given).
        prefetch: batches prepared ahead on a background thread (the queue holds at most this
            many ready batches); 0 prepares each batch on the caller's thread when it is needed.
        dtype: dtype of ``Batch.norm`` (default: the features' dtype when floating, else the
            default dtype).

    Call :meth:`set_epoch` before each epoch, as for ``DistributedSampler``. After an epoch,
    :attr:`stats` holds the number of batches, their total nodes and edges, and the seconds spent
    sampling and gathering (on the loader thread) and waiting for batches (on the caller's).
    """

    def __init__(self, sampler: NeighborSampler, features, nodes: torch.Tensor,
                 labels: torch.Tensor | None = None, *, batch_size: int, shuffle: bool = True,
                 seed: int = 0, rank: int = 0, world_size: int = 1, drop_last: bool = False,
                 device=None, prefetch: int = 2, dtype: torch.dtype | None = None):
        if not isinstance(sampler, NeighborSampler):
            raise TypeError(f"hector.MiniBatchLoader: sampler must be a hector.NeighborSampler, "
                            f"got {type(sampler).__name__}")
        if isinstance(features, PinnedTable):
            table_rows, feature_dtype, home = features.num_rows, features.features.dtype, "cpu"
        elif isinstance(features, FeatureStore):
            table_rows, feature_dtype, home = features.num_rows, features.dtype, "cpu"
        elif isinstance(features, torch.Tensor):
            table_rows, feature_dtype, home = features.shape[0], features.dtype, features.device
        else:
            raise TypeError(f"hector.MiniBatchLoader: features must be a hector.PinnedTable, a "
                            f"hector.FeatureStore or a tensor, got {type(features).__name__}")
        num_nodes = sampler.graph.num_nodes
        if table_rows != num_nodes:
            raise ValueError(f"hector.MiniBatchLoader: the feature table has {table_rows} rows "
                             f"but the graph has {num_nodes} nodes")
        self.nodes = _check_index("nodes", nodes, num_nodes)
        if labels is not None and labels.shape[0] != self.nodes.numel():
            raise ValueError(f"hector.MiniBatchLoader: {labels.shape[0]} labels for "
                             f"{self.nodes.numel()} nodes")
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise ValueError(f"hector.MiniBatchLoader: prefetch must be a non-negative int, got "
                             f"{prefetch!r}")
        partition_nodes(0, batch_size, rank=rank, world_size=world_size)   # validates
        self.sampler = sampler
        self.features = features
        self.labels = None if labels is None else labels.cpu()
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.rank, self.world_size, self.drop_last = rank, world_size, drop_last
        self.device = torch.device(device if device is not None else home)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.prefetch = prefetch
        self.dtype = dtype or (feature_dtype if feature_dtype.is_floating_point
                               else torch.get_default_dtype())
        self.epoch = 0
        self.stats = {}
        load_runtime()   # loaded here, not first on the background thread

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch's shuffle and samples (as ``DistributedSampler.set_epoch``)."""
        self.epoch = int(epoch)

    def batches(self) -> list[torch.Tensor]:
        """This epoch's batches for this rank, as positions in ``nodes``."""
        return partition_nodes(self.nodes.numel(), self.batch_size, epoch=self.epoch,
                               seed=self.seed, shuffle=self.shuffle, rank=self.rank,
                               world_size=self.world_size, drop_last=self.drop_last)

    def __len__(self) -> int:
        return len(self.batches())

    # --- preparing one batch -----------------------------------------------------------------
    def _to_device(self, t: torch.Tensor, dtype=None) -> torch.Tensor:
        if self.device.type == "cuda" and t.device.type == "cpu":
            t = t.pin_memory()   # so that the copy is asynchronous on the current stream
        return t.to(self.device, dtype=dtype, non_blocking=True)

    def _gather(self, index: torch.Tensor) -> torch.Tensor:
        if isinstance(self.features, (PinnedTable, FeatureStore)):
            # PinnedTable: zero-copy from host memory with a CUDA index, the CPU gather with a CPU
            # index. FeatureStore: its tiers; the rows come back on the index's device.
            return self.features.gather(self._to_device(index))
        rows = self.features.index_select(0, index.to(self.features.device, non_blocking=True))
        return rows if rows.device == self.device else self._to_device(rows)

    def prepare(self, index: int, positions: torch.Tensor, epoch: int | None = None,
                stream=None) -> Batch:
        """Builds batch ``index`` of ``epoch`` from the ``positions`` (in ``nodes``) of its
        targets: subgraph, features, labels, on the device. Work on the device is queued on
        ``stream`` (default: the current stream)."""
        epoch = self.epoch if epoch is None else epoch
        return self._assemble(index, positions, self._sample(index, positions, epoch), stream)

    def _sample(self, index: int, positions: torch.Tensor, epoch: int):
        """(targets, subgraph, seconds) of batch ``index``: its seeded sample."""
        start = time.perf_counter()
        targets = self.nodes[positions]
        generator = torch.Generator().manual_seed(
            _mix_seed(self.seed, epoch, self.rank, index))
        sub = self.sampler.sample(targets, generator)
        return targets, sub, time.perf_counter() - start

    def _assemble(self, index: int, positions: torch.Tensor, sampled, stream=None) -> Batch:
        """The batch from its sample: features, graph, norm and labels on the device."""
        targets, sub, sample_s = sampled
        sampled = time.perf_counter()
        on_stream = torch.cuda.stream(stream) if stream is not None else contextlib.nullcontext()
        with on_stream:
            x = self._gather(sub.nodes)
            graph = sub.graph.to(self.device, non_blocking=True)
            norm = self._to_device(sub.norm, self.dtype)
            target_local = self._to_device(sub.target_local)
            labels = None if self.labels is None else self._to_device(self.labels[positions])
            event = None
            if stream is not None:
                event = torch.cuda.Event()
                event.record(stream)
        return Batch(index=index, targets=targets, subgraph=sub, graph=graph, x=x, norm=norm,
                     target_local=target_local, labels=labels, sample_s=sample_s,
                     gather_s=time.perf_counter() - sampled, _event=event)

    def _prepared(self, batches, epoch: int, stream=None):
        """The epoch's batches, prepared in order. With a FeatureStore that prefetches, batch
        i+1 is sampled before batch i is gathered and its nodes go to the store's prefetcher, so
        that its rows are found or read while batch i is gathered and trained on; whatever the
        prefetches still hold is released when the epoch ends or is left."""
        lookahead = isinstance(self.features, FeatureStore) and self.features.prefetch_enabled
        try:
            ahead = None
            for i, positions in enumerate(batches):
                sampled = ahead if ahead is not None else self._sample(i, positions, epoch)
                ahead = None
                if lookahead and i + 1 < len(batches):
                    ahead = self._sample(i + 1, batches[i + 1], epoch)
                    self.features.prefetch(ahead[1].nodes)
                yield self._assemble(i, positions, sampled, stream)
        finally:
            if lookahead:
                self.features.cancel_prefetch()

    def _hand_over(self, batch: Batch) -> Batch:
        """Makes a batch prepared on the side stream safe to use on the caller's stream."""
        if batch._event is not None:
            current = torch.cuda.current_stream(self.device)
            current.wait_event(batch._event)
            tensors = [batch.x, batch.norm, batch.target_local, *batch.graph.tensors().values()]
            if batch.labels is not None:
                tensors.append(batch.labels)
            for t in tensors:
                t.record_stream(current)   # the allocator must not reuse them before it is done
            batch._event = None
        return batch

    # --- iteration -----------------------------------------------------------------------------
    def __iter__(self):
        batches, epoch = self.batches(), self.epoch
        stats = self.stats = dict(batches=0, nodes=0, edges=0, sample_s=0.0, gather_s=0.0,
                                  wait_s=0.0)

        def account(batch):
            stats["batches"] += 1
            stats["nodes"] += batch.subgraph.num_nodes
            stats["edges"] += batch.subgraph.num_edges
            stats["sample_s"] += batch.sample_s
            stats["gather_s"] += batch.gather_s

        if self.prefetch == 0:
            prepared = self._prepared(batches, epoch)
            try:
                while True:
                    start = time.perf_counter()
                    batch = next(prepared, None)
                    stats["wait_s"] += time.perf_counter() - start
                    if batch is None:
                        return
                    account(batch)
                    yield batch
            finally:
                prepared.close()

        ready = queue.Queue(maxsize=self.prefetch)
        stop = threading.Event()
        stream = torch.cuda.Stream(self.device) if self.device.type == "cuda" else None

        def put(item):
            # Blocks while the queue is full, but gives up once the consumer has stopped.
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.05)
                    return True
                except queue.Full:
                    pass
            return False

        def produce():
            try:
                device = torch.cuda.device(self.device) if stream is not None \
                    else contextlib.nullcontext()
                with device:
                    prepared = self._prepared(batches, epoch, stream)
                    try:
                        for batch in prepared:
                            if not put(batch):
                                return
                    finally:
                        prepared.close()
            except BaseException as error:   # handed to the consumer, raised there
                put(_Failure(error))
                return
            put(_END)

        thread = threading.Thread(target=produce, name="hector-minibatch", daemon=True)
        thread.start()
        try:
            while True:
                start = time.perf_counter()
                item = ready.get()
                stats["wait_s"] += time.perf_counter() - start
                if item is _END:
                    break
                if isinstance(item, _Failure):
                    raise item.error
                account(item)
                yield self._hand_over(item)
        finally:
            stop.set()   # the producer stops at its next put (an early break, an exception)
            thread.join()


class _Failure:
    def __init__(self, error):
        self.error = error


_END = object()
