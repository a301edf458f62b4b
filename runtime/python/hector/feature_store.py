"""hector.FeatureStore: node features stored on disk, served through a device cache, a victim
buffer in host memory and batched O_DIRECT reads (LSM-GNN's tiers, hybrid eviction and
victim-buffer prefetcher). The file format and the design are in docs/runtime.md
("Storage-backed features")."""
from __future__ import annotations

import os

import torch

from ._native import load_runtime

__all__ = ["FeatureStore", "POLICIES"]

POLICIES = ("static", "dynamic", "hybrid")
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
           torch.int16, torch.int32, torch.int64, torch.bool)
_CHUNK_BYTES = 64 << 20   # a tensor given to create() is written in slices of about this size


def _check_int(name, value, low=0):
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"hector.FeatureStore: {name} must be an int >= {low}, got {value!r}")
    return value


class FeatureStore:
    """A node-feature table in a file, served row by row through three tiers.

    - **device cache** (``cache_bytes``): GPU memory with ``cache_device="cuda"``, host memory
      otherwise. Its eviction ``policy`` is ``"static"`` (keep the rows of highest
      ``static_scores``), ``"dynamic"`` (CLOCK) or ``"hybrid"`` (CLOCK whose credits grow with
      the static score: a use gives a row ``1 + round(static_weight * s)`` passes of the hand,
      ``s`` in [0, 1] the rank of its score). Default: hybrid with scores, dynamic without.
    - **victim buffer** (``victim_bytes``): host memory (page-locked on a CUDA machine) that
      receives the rows the cache evicts or does not admit. With ``shared_victim=NAME`` it lives
      in ``/dev/shm/hector-fs-NAME`` and every process of the machine that opens the same store
      with that name shares it; then rows read from the file go there too, so that one process's
      read serves the others.
    - **storage**: the file, read with io_uring and O_DIRECT (many reads in flight, adjacent row
      blocks merged), or with cuFile into GPU memory for a CUDA cache where cuFile works (else a
      warning says why not). Every row block's CRC32C is checked.

    :meth:`gather` returns rows bit-identical to ``index_select`` on the whole table.
    :meth:`prefetch` announces a later gather (the mini-batch loader calls it with the next
    batch's nodes): rows in the cache stay there until that gather, rows in the victim buffer are
    copied out at once, and the rest are read from the file on a background thread.

    Open a store with :meth:`open` (or the constructor), build one with :meth:`create`.

    Args:
        path: the store file.
        width, dtype: if given, the file's row width (elements) and dtype must be these
            (``ValueError`` otherwise).
        cache_bytes, victim_bytes: capacities in bytes (whole rows).
        policy, static_scores, static_weight: the cache's eviction (see above);
            ``static_scores`` is one number per row, e.g. :meth:`degree_scores`.
        cache_device: ``"cpu"`` or a CUDA device.
        shared_victim: a name to share the victim buffer under (see above), or None.
        direct_io, use_uring, use_cufile: how the file is read (each falls back when refused).
        io_depth: reads in flight per io_uring.
        prefetch: whether the mini-batch loader should call :meth:`prefetch` (it always works).
        prefetch_bytes: bound on the rows prefetches hold for gathers that have not come.
    """

    def __init__(self, path, *, width=None, dtype=None, cache_bytes=0, victim_bytes=0,
                 policy=None, static_scores=None, static_weight=4.0, cache_device="cpu",
                 shared_victim=None, direct_io=True, use_uring=True, use_cufile=True,
                 io_depth=64, prefetch=True, prefetch_bytes=1 << 30, _tensor_path=False):
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"hector.FeatureStore: {path} does not exist")
        _check_int("cache_bytes", cache_bytes)
        _check_int("victim_bytes", victim_bytes)
        _check_int("io_depth", io_depth, 1)
        _check_int("prefetch_bytes", prefetch_bytes)
        if width is not None:
            _check_int("width", width, 1)
        if dtype is not None and not isinstance(dtype, torch.dtype):
            raise TypeError(f"hector.FeatureStore: dtype must be a torch.dtype, got "
                            f"{type(dtype).__name__}")
        if policy is None:
            policy = "dynamic" if static_scores is None else "hybrid"
        if policy not in POLICIES:
            raise ValueError(f"hector.FeatureStore: policy must be one of {POLICIES}, got "
                             f"{policy!r}")
        if static_scores is not None and not isinstance(static_scores, torch.Tensor):
            raise TypeError(f"hector.FeatureStore: static_scores must be a tensor, got "
                            f"{type(static_scores).__name__}")
        if shared_victim is not None and not isinstance(shared_victim, str):
            raise TypeError("hector.FeatureStore: shared_victim must be a str or None")
        load_runtime()
        self._store = torch.classes.hector.FeatureStore(
            path, cache_bytes, victim_bytes, policy,
            None if policy == "dynamic" else static_scores, float(static_weight),
            str(torch.device(cache_device)), shared_victim or "", bool(direct_io),
            bool(use_uring), bool(use_cufile), io_depth, prefetch_bytes, bool(_tensor_path),
            -1 if width is None else width, "" if dtype is None else str(dtype))
        self.policy = policy
        self.prefetch_enabled = bool(prefetch)
        self.cache_device = torch.device(cache_device)
        self._dtype = getattr(torch, self._store.dtype_name().split(".", 1)[1])

    # --- building --------------------------------------------------------------------------
    @classmethod
    def open(cls, path, **kwargs) -> "FeatureStore":
        """Opens an existing store (keywords as for the constructor)."""
        return cls(path, **kwargs)

    @staticmethod
    def write(path, table_or_blocks, *, block_bytes=4096, overwrite=False, direct_io=True,
              use_uring=True, sync=True, _faults="") -> int:
        """Builds the store file at ``path`` from a CPU tensor ``[num_rows, ...]`` or from an
        iterable of such row blocks (streamed: the whole table is never in memory; every block
        must have the first one's dtype and row shape). Returns the number of rows.

        Nothing appears at ``path`` until the complete file is written and synced; on any error
        (a full disk, a bad block, an exception from the iterator) the partial file is removed.
        ``block_bytes`` (a multiple of 4096) is the target size of a row block, the unit of
        reads and checksums. ``sync=False`` skips syncing the file and its directory before
        returning (the store is still complete or absent after a crash of the process, but may
        be lost in a crash of the machine): for scratch stores.
        """
        path = os.fspath(path)
        if os.path.exists(path) and not overwrite:
            raise FileExistsError(f"hector.FeatureStore.create: {path} exists (pass "
                                  "overwrite=True to replace it)")
        _check_int("block_bytes", block_bytes, 4096)
        load_runtime()
        writer = torch.classes.hector.FeatureStoreWriter(path, block_bytes, bool(overwrite),
                                                         bool(direct_io), bool(use_uring),
                                                         bool(sync), _faults)
        try:
            if isinstance(table_or_blocks, torch.Tensor):
                table = table_or_blocks
                if table.dim() >= 1 and table.shape[0] > 0:
                    row = max(1, table[0].numel() * table.element_size())
                    step = max(1, _CHUNK_BYTES // row)
                    for start in range(0, table.shape[0], step):
                        writer.append(table[start:start + step])
                else:
                    writer.append(table)
            else:
                try:
                    blocks = iter(table_or_blocks)
                except TypeError:
                    raise TypeError("hector.FeatureStore.create: expected a tensor or an "
                                    "iterable of row blocks, got "
                                    f"{type(table_or_blocks).__name__}") from None
                for number, block in enumerate(blocks):
                    if not isinstance(block, torch.Tensor):
                        raise TypeError(f"hector.FeatureStore.create: row block {number} is a "
                                        f"{type(block).__name__}, not a tensor")
                    writer.append(block)
            writer.finish()
        except BaseException:
            writer.abort()
            raise
        return writer.rows()

    @classmethod
    def create(cls, path, table_or_blocks, *, block_bytes=4096, overwrite=False,
               direct_io=True, use_uring=True, sync=True, _faults="",
               **open_kwargs) -> "FeatureStore":
        """:meth:`write` the store, then open it with ``open_kwargs`` (``cache_bytes``,
        ``victim_bytes``, ...)."""
        cls.write(path, table_or_blocks, block_bytes=block_bytes, overwrite=overwrite,
                  direct_io=direct_io, use_uring=use_uring, sync=sync, _faults=_faults)
        return cls(path, direct_io=direct_io, use_uring=use_uring, **open_kwargs)

    # --- static scores -----------------------------------------------------------------------
    @staticmethod
    def degree_scores(graph) -> torch.Tensor:
        """One score per node of a :class:`hector.Graph`: the number of edges it is the source of,
        that is how many in-neighbourhoods it belongs to, which is how a neighbour sampler that
        follows incoming edges reaches it (int64, CPU)."""
        src = graph.sorted_src.cpu().long()  # every edge's source, in the graph's internal order
        return torch.bincount(src, minlength=graph.num_nodes)

    @staticmethod
    def sampled_frequency(sampler, nodes, batch_size, *, epochs=1, seed=0) -> torch.Tensor:
        """One score per node: how often ``sampler`` (a :class:`hector.NeighborSampler`) put it
        into a batch's subgraph over ``epochs`` epochs of batches of ``nodes`` (shuffled with
        ``seed``; use a seed the training does not use). int64, CPU."""
        from .minibatch import partition_nodes
        counts = torch.zeros(sampler.graph.num_nodes, dtype=torch.int64)
        nodes = torch.as_tensor(nodes, dtype=torch.int64)
        for epoch in range(epochs):
            for i, positions in enumerate(partition_nodes(nodes.numel(), batch_size,
                                                          epoch=epoch, seed=seed)):
                gen = torch.Generator().manual_seed(seed * 1000003 + epoch * 7919 + i)
                sub = sampler.sample(nodes[positions], gen)
                counts.index_add_(0, sub.nodes, torch.ones_like(sub.nodes))
        return counts

    # --- gathers -----------------------------------------------------------------------------
    def gather(self, index):
        """Rows ``index`` on ``index``'s device, equal bit for bit to
        ``table.index_select(0, index)``. ``index``: 1-D int64/int32 on the CPU or a CUDA device
        (``TypeError`` for a wrong dtype, ``ValueError`` for a wrong shape, device or an entry out
        of range). A checksum mismatch or a short read raises ``RuntimeError`` naming the file and
        the row block."""
        if not isinstance(index, torch.Tensor):
            raise TypeError(f"hector.FeatureStore: index must be a torch.Tensor, got "
                            f"{type(index).__name__}")
        return self._store.gather(index)

    __call__ = gather

    def prefetch(self, index) -> None:
        """Announces a later :meth:`gather` of ``index`` (see the class)."""
        if not isinstance(index, torch.Tensor):
            raise TypeError(f"hector.FeatureStore: index must be a torch.Tensor, got "
                            f"{type(index).__name__}")
        self._store.prefetch(index)

    def cancel_prefetch(self) -> None:
        """Releases what prefetches hold for gathers that have not come."""
        self._store.cancel_prefetch()

    # --- statistics and layout ---------------------------------------------------------------
    @property
    def stats(self) -> dict:
        """Counters since opening (or :meth:`reset_stats`): ``gathers``, ``rows`` (index entries),
        ``unique_rows`` (distinct rows per gather, summed), ``cache_hits``, ``victim_hits``,
        ``storage_rows`` (distinct rows found in each tier), ``prefetched_rows`` (of those, found
        by a prefetch), ``bytes_read``, ``blocks_read``, ``read_requests`` (the file),
        ``cache_admissions``, ``cache_evictions``, ``victim_inserts``, ``prefetches``,
        ``prefetch_unused_rows``, ``stall_s`` (time gathers waited for the file), and the hit
        rates ``cache_hit_rate``, ``victim_hit_rate``, ``storage_rate`` (shares of
        ``unique_rows``)."""
        s = dict(self._store.stats())
        s["stall_s"] = s.pop("stall_ns") / 1e9
        total = max(1, s["unique_rows"])
        s["cache_hit_rate"] = s["cache_hits"] / total
        s["victim_hit_rate"] = s["victim_hits"] / total
        s["storage_rate"] = s["storage_rows"] / total
        return s

    def reset_stats(self) -> None:
        self._store.reset_stats()

    @property
    def layout(self) -> dict:
        """The file's layout: ``num_rows``, ``width``, ``row_bytes``, ``rows_per_block``,
        ``block_stride``, ``num_blocks``, ``file_bytes``."""
        return dict(self._store.layout())

    @property
    def num_rows(self) -> int:
        return self._store.num_rows()

    @property
    def row_shape(self) -> tuple:
        return tuple(self._store.row_shape())

    @property
    def width(self) -> int:
        return self.layout["width"]

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def row_bytes(self) -> int:
        return self.layout["row_bytes"]

    @property
    def path(self) -> str:
        return self._store.path()

    @property
    def uuid(self) -> str:
        return self._store.uuid()

    @property
    def cache_rows(self) -> int:
        return self._store.cache_rows()

    @property
    def victim_rows(self) -> int:
        return self._store.victim_rows()

    @property
    def io_mode(self) -> str:
        """How the file is read, and why anything asked for is not in use."""
        return self._store.io_mode()

    @property
    def victim_name(self) -> str:
        """The shared victim buffer's path in /dev/shm ("" for a private one)."""
        return self._store.victim_name()

    def close(self) -> None:
        """Releases the caches and the file (later calls raise)."""
        self._store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self):
        return self.num_rows

    def __repr__(self):
        try:
            return (f"hector.FeatureStore({self.path!r}, rows={self.num_rows}, "
                    f"row_shape={self.row_shape}, dtype={self.dtype}, policy={self.policy!r}, "
                    f"cache_rows={self.cache_rows}, victim_rows={self.victim_rows})")
        except RuntimeError:
            return "hector.FeatureStore(closed)"
