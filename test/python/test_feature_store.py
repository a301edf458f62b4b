# hector.FeatureStore (features on disk behind a device cache and a victim buffer). Oracles:
# index_select on the in-memory table (every gather, bit for bit), an independent reader of the
# documented file format written here (struct + a table-driven CRC32C in plain Python), plain
# Python models of the eviction policies (CLOCK, hybrid credits, static top-k, the victim
# buffer's LRU), and training from an in-memory table with the same seeds.
import os
import pathlib
import signal
import struct
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch
import torch.nn.functional as F

import hector
from hector import FeatureStore
from hector.minibatch import MiniBatchLoader, NeighborSampler
from references import awkward_graph

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
needs_aifb = pytest.mark.skipif(not (DATA / "aifb").is_dir(), reason="../shared/data not present")
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
MODEL = ("in=8", "hidden=4", "classes=4")


def table(rows, width, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(rows, width, generator=g, dtype=torch.float64)
    if dtype.is_floating_point:
        return (t * 3).to(dtype)
    return (t * 50).to(dtype)


def awkward_indices(rows, seed):
    """Unsorted with duplicates, all rows, reversed, one row repeated, the last row, empty."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(0, rows, (3 * rows + 1,), generator=g), torch.arange(rows),
            torch.arange(rows).flip(0), torch.full((5,), rows // 2), torch.tensor([rows - 1]),
            torch.empty(0, dtype=torch.int64),
            torch.randint(0, rows, (rows,), generator=g).to(torch.int32)]


# --- an independent reader of the documented format ----------------------------------------

def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC = _crc32c_table()


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ _CRC[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


HEADER = struct.Struct("<8sIIIIII8QQQQQQQQQQII16s")
DTYPE_CODES = {1: torch.float32, 2: torch.float64, 3: torch.float16, 4: torch.bfloat16,
               5: torch.int8, 6: torch.uint8, 7: torch.int16, 8: torch.int32, 9: torch.int64,
               10: torch.bool}


def read_store(path):
    """Parses a store file as docs/runtime.md describes it and checks every checksum; returns
    (fields, the table)."""
    raw = pathlib.Path(path).read_bytes()
    f = HEADER.unpack_from(raw, 0)
    (magic, version, header_bytes, dtype_code, elem, dims, flags, *rest) = f
    shape, rest = rest[:8], rest[8:]
    (rows, row_bytes, rpb, stride, nblocks, data_off, cks_off, cks_bytes, file_bytes,
     table_crc, _reserved, uuid) = rest
    assert magic == b"HECTORFS" and version == 1 and header_bytes == 4096 and flags == 1
    assert struct.unpack_from("<I", raw, 4092)[0] == crc32c(raw[:4092])
    assert len(raw) == file_bytes and data_off == 4096 and stride % 4096 == 0
    assert cks_off == data_off + nblocks * stride and cks_bytes == 4 * nblocks
    assert file_bytes == cks_off + -(-cks_bytes // 4096) * 4096
    table_bytes = raw[cks_off:cks_off + cks_bytes]
    assert crc32c(table_bytes) == table_crc
    sums = struct.unpack(f"<{nblocks}I", table_bytes)
    out = bytearray()
    for b in range(nblocks):
        n = min(rpb, rows - b * rpb)
        block = raw[data_off + b * stride:data_off + b * stride + n * row_bytes]
        assert crc32c(block, crc32c(struct.pack("<Q", b))) == sums[b], f"block {b}"
        assert raw[data_off + b * stride + n * row_bytes:data_off + (b + 1) * stride] == \
            bytes(stride - n * row_bytes)   # zero padding
        out += block
    dtype = DTYPE_CODES[dtype_code]
    row_shape = list(shape[:dims])
    t = torch.frombuffer(bytearray(out) or bytearray(1), dtype=torch.uint8)[:len(out)]
    t = t.view(dtype).reshape([rows] + row_shape) if out else torch.empty([rows] + row_shape,
                                                                         dtype=dtype)
    return dict(rows=rows, row_bytes=row_bytes, rows_per_block=rpb, stride=stride,
                blocks=nblocks, dtype=dtype, row_shape=row_shape, elem=elem, uuid=uuid), t


# --- gathers: bit-identical to index_select --------------------------------------------------

CACHE_MODES = ("none", "one row", "all")


def cache_bytes(mode, t):
    row = t[0].numel() * t.element_size()
    return {"none": 0, "one row": row, "all": (t.shape[0] + 5) * row}[mode]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_every_width_gathers_like_index_select(tmp_path, dtype):
    """Widths 1..4097 (row blocks from 1024 rows down to one row over several pages), caches of
    0, 1 row and more than the table in turn, victim buffers with and without, both cache code
    paths; every gather equals index_select bit for bit. (Every 7th store uses O_DIRECT and
    io_uring: a direct write costs the device's latency, milliseconds here, and setting up a
    ring costs more than these few reads; the layouts are the point.)"""
    path = tmp_path / "t.hfs"
    for width in range(1, 4098):
        rows = 3 + width % 5
        t = table(rows, width, dtype, seed=width)
        mode = CACHE_MODES[width % 3]
        fast = width % 7 != 0
        s = FeatureStore.create(path, t, overwrite=True, sync=False, direct_io=not fast,
                                use_uring=not fast,
                                cache_bytes=cache_bytes(mode, t),
                                victim_bytes=(width % 2) * 2 * t[0].numel() * t.element_size(),
                                _tensor_path=width % 4 == 0)
        assert (s.num_rows, s.row_shape, s.dtype, s.width) == (rows, (width,), dtype, width)
        for idx in (torch.tensor([rows - 1, 0, 0, rows // 2, rows - 1]), torch.arange(rows)):
            got = s.gather(idx)
            assert got.dtype == dtype and torch.equal(got.view(torch.uint8),
                                                      t.index_select(0, idx).view(torch.uint8)), \
                (width, mode)
        s.close()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64,
                                   torch.uint8, torch.bool, torch.float16])
@pytest.mark.parametrize("mode", CACHE_MODES)
@pytest.mark.parametrize("tensor_path", [False, True])
def test_awkward_indices(tmp_path, dtype, mode, tensor_path):
    t = table(301, 19, dtype, seed=3)
    if dtype == torch.bool:
        t = t > 0
    s = FeatureStore.create(tmp_path / "t.hfs", t, cache_bytes=cache_bytes(mode, t),
                            victim_bytes=40 * t[0].numel() * t.element_size(), sync=False,
                            _tensor_path=tensor_path)
    for rnd in range(3):   # the caches fill and churn across rounds
        for idx in awkward_indices(301, rnd):
            got = s.gather(idx)
            want = t.index_select(0, idx.long())
            assert got.shape == want.shape and got.dtype == want.dtype
            assert torch.equal(got, want)
    st = s.stats
    assert st["cache_hits"] + st["victim_hits"] + st["storage_rows"] == st["unique_rows"]
    if mode == "all":
        # Everything read once, then served from the cache.
        assert st["storage_rows"] == 301 and st["cache_evictions"] == 0
    if mode == "none":
        assert st["cache_hits"] == 0


def test_row_shapes_and_one_dimensional_tables(tmp_path):
    for shape in ([50], [50, 3, 4], [50, 1, 1, 7], [0, 6], [0]):
        t = torch.randn(shape)
        s = FeatureStore.create(tmp_path / "t.hfs", t, overwrite=True, sync=False,
                                cache_bytes=64)
        assert s.row_shape == tuple(shape[1:]) and s.num_rows == shape[0]
        idx = torch.randint(0, max(1, shape[0]), (17,)) if shape[0] else torch.empty(0).long()
        assert torch.equal(s.gather(idx), t[idx])
        s.close()


def test_file_format_matches_the_documentation(tmp_path):
    t = table(1000, 37)    # 148-byte rows: 27 per 4 KiB block, a partial last block
    FeatureStore.write(tmp_path / "a.hfs", t)
    fields, back = read_store(tmp_path / "a.hfs")
    assert fields["rows_per_block"] == 27 and fields["blocks"] == 38 and fields["stride"] == 4096
    assert torch.equal(back, t)
    # Bigger blocks, rows wider than a page, a 3-D row shape, other dtypes.
    for tt, block in ((table(20, 1500, torch.float64), 4096),
                      (table(333, 5, torch.bfloat16), 16384),
                      (torch.randn(10, 2, 3).to(torch.float16), 8192)):
        FeatureStore.write(tmp_path / "b.hfs", tt, block_bytes=block, overwrite=True)
        fields, back = read_store(tmp_path / "b.hfs")
        assert torch.equal(back, tt) and fields["row_shape"] == list(tt.shape[1:])
        row = tt[0].numel() * tt.element_size()
        assert fields["rows_per_block"] == max(1, block // row)
        assert fields["stride"] == -(-fields["rows_per_block"] * row // 4096) * 4096
    # Every build gets a new identity.
    FeatureStore.write(tmp_path / "c.hfs", t)
    assert read_store(tmp_path / "c.hfs")[0]["uuid"] != read_store(tmp_path / "a.hfs")[0]["uuid"]


def test_streamed_build_equals_the_tensor_build(tmp_path):
    t = table(2000, 33)
    sizes = [0, 1, 7, 500, 0, 1, 1200, 291]
    blocks = list(torch.split(t, [s for s in sizes]))
    assert sum(b.shape[0] for b in blocks) == 2000

    def gen():
        yield from blocks   # a generator: the table is never handed over whole

    n = FeatureStore.write(tmp_path / "s.hfs", gen())
    assert n == 2000
    FeatureStore.write(tmp_path / "t.hfs", t)
    a, b = (pathlib.Path(tmp_path / f).read_bytes() for f in ("s.hfs", "t.hfs"))
    # Identical but for the identity (16 bytes at 176) and the header's checksum.
    assert len(a) == len(b) and a[4096:] == b[4096:] and a[:176] == b[:176]
    assert a[192:4092] == b[192:4092]
    s = FeatureStore.open(tmp_path / "s.hfs", cache_bytes=10_000, victim_bytes=10_000)
    idx = torch.randint(0, 2000, (3000,))
    assert torch.equal(s.gather(idx), t[idx])


# --- the eviction policies against plain Python models ---------------------------------------

def round_half_away(x):
    return int(x + 0.5) if x >= 0 else -int(-x + 0.5)


def levels_of(scores):
    """The store's static levels: 65535 * log1p(score - lowest) / log1p(highest - lowest)."""
    import math
    s = scores.double().tolist()
    lo, hi = min(s), max(s)
    if hi == lo:
        return [0] * len(s)
    return [round_half_away(math.log1p(v - lo) / math.log1p(hi - lo) * 65535) for v in s]


class ClockModel:
    """CLOCK with per-row credits (1 for dynamic, 1 + round(w * level / 65535) for hybrid) and,
    for hybrid, admission only in place of a row of no higher level."""

    def __init__(self, slots, credit, levels=None):
        self.slots, self.credit, self.levels = slots, credit, levels
        self.rows, self.credits, self.where = [-1] * slots, [0] * slots, {}
        self.used = self.hand = 0

    def admit(self, r):
        if self.slots == 0:
            return
        if self.used < self.slots:
            s = self.used
            self.used += 1
        else:
            while True:
                s = self.hand
                self.hand = (self.hand + 1) % self.slots
                if self.credits[s]:
                    self.credits[s] -= 1
                    continue
                break
            if self.levels is not None and self.levels[r] < self.levels[self.rows[s]]:
                return
        if self.rows[s] >= 0:
            del self.where[self.rows[s]]
        self.rows[s], self.where[r], self.credits[s] = r, s, self.credit(r)

    def gather(self, rows):
        hits = [r for r in rows if r in self.where]
        for r in hits:
            self.credits[self.where[r]] = self.credit(r)
        for r in rows:
            if r not in hits:
                self.admit(r)
        return len(hits)


class StaticModel:
    def __init__(self, slots, levels):
        self.slots, self.key, self.cached = slots, (lambda r: (levels[r], r)), set()

    def gather(self, rows):
        hits = [r for r in rows if r in self.cached]
        for r in rows:
            if r in hits or self.slots == 0:
                continue
            if len(self.cached) < self.slots:
                self.cached.add(r)
            else:
                least = min(self.cached, key=self.key)
                if self.key(r) > self.key(least):
                    self.cached.remove(least)
                    self.cached.add(r)
        return len(hits)


def skewed_batches(rows, count, size, seed):
    """Batches drawn with a heavy-tailed (Zipf-like) popularity, as neighbourhood samples are."""
    g = torch.Generator().manual_seed(seed)
    weights = 1.0 / torch.arange(1, rows + 1, dtype=torch.float64) ** 1.1
    perm = torch.randperm(rows, generator=g)
    return [perm[torch.multinomial(weights, size, replacement=True, generator=g)]
            for _ in range(count)]


@pytest.mark.parametrize("policy", ["dynamic", "hybrid", "static"])
@pytest.mark.parametrize("slots", [0, 1, 7, 64])
@pytest.mark.parametrize("tensor_path", [False, True])
def test_policies_match_their_models(tmp_path, policy, slots, tensor_path):
    rows = 500
    t = table(rows, 8)
    g = torch.Generator().manual_seed(5)
    scores = torch.randint(0, 40, (rows,), generator=g)   # ties on purpose
    weight = 3.0
    levels = levels_of(scores)
    if policy == "dynamic":
        model = ClockModel(slots, lambda r: 1)
    elif policy == "hybrid":
        model = ClockModel(slots, lambda r: min(255, 1 + round_half_away(
            weight * (levels[r] / 65535.0))), levels)
    else:
        model = StaticModel(slots, levels)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, cache_bytes=slots * 32,
                            victim_bytes=3000, policy=policy, static_scores=scores,
                            static_weight=weight, _tensor_path=tensor_path)
    hits = 0
    for idx in skewed_batches(rows, 40, 60, seed=slots):
        got = s.gather(idx)
        assert torch.equal(got, t[idx])
        hits += model.gather(sorted(set(idx.tolist())))
        assert s.stats["cache_hits"] == hits
    assert s.cache_rows == slots
    if slots == 64:
        assert hits > 0


def test_static_scores_from_the_graph():
    """degree_scores counts the edges a node is the source of; sampled_frequency counts the
    batches whose subgraph holds the node (every edge: the 2-hop in-neighbourhood, by a plain
    breadth-first search)."""
    g = awkward_graph(4, num_nodes=60, num_edges=300)
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes,
                         num_relations=g.num_relations)
    src, dst = g.src.tolist(), g.dst.tolist()
    degree = [0] * g.num_nodes
    for u in src:
        degree[u] += 1
    assert FeatureStore.degree_scores(graph).tolist() == degree
    nodes = torch.arange(0, 60, 3)
    freq = FeatureStore.sampled_frequency(NeighborSampler(graph, 2), nodes, 4, epochs=2, seed=7)
    from hector.minibatch import partition_nodes
    want = [0] * g.num_nodes
    for epoch in range(2):
        for positions in partition_nodes(nodes.numel(), 4, epoch=epoch, seed=7):
            reached, frontier = set(nodes[positions].tolist()), set(nodes[positions].tolist())
            for _ in range(2):
                frontier = {src[e] for e in range(len(src)) if dst[e] in frontier} - reached
                reached |= frontier
            for v in reached:
                want[v] += 1
    assert freq.tolist() == want


def test_static_cache_keeps_the_top_rows(tmp_path):
    rows, slots = 400, 50
    t = table(rows, 4)
    scores = torch.randperm(rows).double()
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, cache_bytes=slots * 16,
                            policy="static", static_scores=scores)
    for idx in skewed_batches(rows, 30, 100, seed=1) + [torch.arange(rows)]:
        s.gather(idx)
    top = torch.argsort(scores, descending=True)[:slots]
    s.reset_stats()
    assert torch.equal(s.gather(top), t[top])
    assert s.stats["cache_hits"] == slots


def test_victim_buffer_is_lru_within_a_set(tmp_path):
    """A victim buffer of fewer than 8 rows is one fully associative LRU set: against a model."""
    rows, ways = 200, 5
    t = table(rows, 8)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, victim_bytes=ways * 32)
    lru = []   # most recent last
    vhits = 0
    for idx in skewed_batches(rows, 60, 6, seed=2):
        assert torch.equal(s.gather(idx), t[idx])
        rows_ = sorted(set(idx.tolist()))
        hit = [r for r in rows_ if r in lru]
        for r in hit:   # renewed in row order
            lru.remove(r)
            lru.append(r)
        for r in rows_:
            if r not in hit:
                lru.append(r)
                if len(lru) > ways:
                    lru.pop(0)
        vhits += len(hit)
        assert s.stats["victim_hits"] == vhits
    assert vhits > 0 and s.victim_rows == ways


@pytest.mark.parametrize("policy", ["static", "hybrid"])
def test_victim_buffer_keeps_high_levels_under_static_scores(tmp_path, policy):
    """Under static and hybrid, a full set takes a row only in place of its row of lowest level
    (the least recently used of those), and only if that level is not higher: against a model of
    one fully associative set (no cache, so every row read goes to the victim buffer)."""
    rows, ways = 200, 6
    t = table(rows, 8)
    scores = torch.randint(0, 30, (rows,), generator=torch.Generator().manual_seed(8))
    levels = levels_of(scores)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, victim_bytes=ways * 32,
                            policy=policy, static_scores=scores)
    held, stamp, clock, vhits = set(), {}, 0, 0
    for idx in skewed_batches(rows, 80, 6, seed=3):
        assert torch.equal(s.gather(idx), t[idx])
        rows_ = sorted(set(idx.tolist()))
        hit = [r for r in rows_ if r in held]
        for r in hit:
            clock += 1
            stamp[r] = clock
        for r in rows_:
            if r in hit:
                continue
            if len(held) == ways:
                least = min(held, key=lambda x: (levels[x], stamp[x]))
                if levels[least] > levels[r]:
                    continue
                held.remove(least)
            held.add(r)
            clock += 1
            stamp[r] = clock
        vhits += len(hit)
        assert s.stats["victim_hits"] == vhits
    assert vhits > 0


def test_evicted_rows_go_to_the_victim_buffer(tmp_path):
    t = table(100, 16)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, cache_bytes=10 * 64,
                            victim_bytes=100 * 64)
    a, b = torch.arange(0, 10), torch.arange(50, 60)
    s.gather(a)                 # a fills the cache
    s.gather(b)                 # b evicts a into the victim buffer
    s.reset_stats()
    assert torch.equal(s.gather(a), t[a])
    st = s.stats
    assert st["victim_hits"] == 10 and st["bytes_read"] == 0 and st["cache_hits"] == 0


# --- the prefetcher ----------------------------------------------------------------------------

def test_used_prefetches_are_no_cache(tmp_path):
    """Once its claims are used, a prefetch's buffer serves nothing: it is not a cache beyond the
    tiers' capacities (8 KiB rows, one per block; no cache, no victim buffer)."""
    t = table(50, 2048)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False)
    s.prefetch(torch.tensor([5, 6]))
    assert torch.equal(s.gather(torch.tensor([5])), t[[5]])   # the claim on 5 is used
    assert torch.equal(s.gather(torch.tensor([5])), t[[5]])   # read again (6 still claimed)
    assert torch.equal(s.gather(torch.tensor([6])), t[[6]])
    st = s.stats
    assert st["blocks_read"] == 3 and st["prefetched_rows"] == 2


@pytest.mark.parametrize("tensor_path", [False, True])
def test_prefetch_reads_once_and_serves_the_gather(tmp_path, tensor_path):
    t = table(3000, 40)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, cache_bytes=200 * 160,
                            victim_bytes=200 * 160, _tensor_path=tensor_path)
    batches = skewed_batches(3000, 12, 300, seed=4)
    for i, idx in enumerate(batches):
        if i + 1 < len(batches):
            s.prefetch(batches[i + 1])
        assert torch.equal(s.gather(idx), t[idx])
    st = s.stats
    assert st["prefetches"] == 11 and st["prefetched_rows"] > 0
    assert st["cache_hits"] + st["victim_hits"] + st["storage_rows"] == st["unique_rows"]
    # A row is read once per time it is needed and absent from both tiers: never twice for one
    # gather (the prefetch's read serves it).
    assert st["blocks_read"] <= st["storage_rows"]
    s.cancel_prefetch()
    assert s.stats["prefetch_unused_rows"] == 0


def test_prefetch_keeps_the_next_batch_in_the_cache(tmp_path):
    t = table(100, 16)
    for prefetch in (False, True):
        s = FeatureStore.create(tmp_path / "t.hfs", t, overwrite=True, sync=False,
                                cache_bytes=10 * 64)
        a, b = torch.arange(0, 10), torch.arange(50, 60)
        s.gather(a)
        if prefetch:
            s.prefetch(a)       # a is the batch after b: kept, b cannot evict it
        s.gather(b)
        s.reset_stats()
        assert torch.equal(s.gather(a), t[a])
        assert s.stats["cache_hits"] == (10 if prefetch else 0)
        # The claims are used up: b now evicts a as usual.
        s.gather(b)
        s.reset_stats()
        s.gather(a)
        assert s.stats["cache_hits"] == 0


def test_prefetch_copies_out_of_the_victim_buffer_before_it_churns(tmp_path):
    t = table(100, 16)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, victim_bytes=5 * 64)
    a = torch.arange(0, 5)
    s.gather(a)                              # a in the victim buffer (no cache)
    s.prefetch(a)                            # copied out now
    s.gather(torch.arange(50, 60))           # pushes a out of the victim buffer
    s.reset_stats()
    assert torch.equal(s.gather(a), t[a])
    assert s.stats["victim_hits"] == 5 and s.stats["bytes_read"] == 0


def test_cancel_prefetch_releases_claims(tmp_path):
    t = table(100, 16)
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, cache_bytes=10 * 64)
    s.gather(torch.arange(10))
    s.prefetch(torch.arange(10))             # pins every slot
    s.prefetch(torch.arange(20, 30))         # read in the background
    s.cancel_prefetch()
    assert s.stats["prefetch_unused_rows"] == 20
    s.gather(torch.arange(40, 50))           # the slots are free to evict again
    s.reset_stats()
    s.gather(torch.arange(40, 50))
    assert s.stats["cache_hits"] == 10


def test_prefetch_bound(tmp_path):
    t = table(1000, 16)                       # 64 rows per block
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False, prefetch_bytes=100 * 64)
    s.prefetch(torch.arange(1000))            # claims rows 0..99 only: blocks 0 and 1
    idx = torch.arange(1000)
    assert torch.equal(s.gather(idx), t)
    st = s.stats
    # Rows 100..127 share block 1 with claimed rows: taken from the prefetch's read too.
    assert st["prefetched_rows"] == 128
    assert st["blocks_read"] == 16 and st["bytes_read"] == 16 * 4096   # every block once


def test_prefetched_blocks_serve_their_other_rows(tmp_path):
    t = table(1000, 16)                       # 64 rows per block
    s = FeatureStore.create(tmp_path / "t.hfs", t, sync=False)
    s.prefetch(torch.tensor([0, 2, 200]))     # blocks 0 and 3
    s.prefetch(torch.tensor([5, 201, 900]))   # 5 and 201: blocks already being read
    assert torch.equal(s.gather(torch.tensor([1, 3, 130])), t[[1, 3, 130]])   # 130: block 2
    assert torch.equal(s.gather(torch.tensor([0, 2, 200])), t[[0, 2, 200]])
    assert torch.equal(s.gather(torch.tensor([5, 201, 900])), t[[5, 201, 900]])
    st = s.stats
    # Blocks 0 and 3 (one prefetch, two reads), 14 (the other), 2 (the gather's own read).
    assert st["blocks_read"] == 4 and st["read_requests"] == 4
    assert st["prefetched_rows"] == 8 and st["prefetch_unused_rows"] == 0


# --- failure behaviour --------------------------------------------------------------------------

def test_checksum_mismatch_names_the_file_and_block(tmp_path):
    t = table(1000, 37)                       # 27 rows per block
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, t)
    with open(path, "r+b") as f:             # one flipped bit in block 3 (rows 81..107)
        f.seek(4096 + 3 * 4096 + 100)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0x10]))
    for tensor_path in (False, True):
        s = FeatureStore.open(path, cache_bytes=10 ** 6, _tensor_path=tensor_path)
        with pytest.raises(RuntimeError) as info:
            s.gather(torch.tensor([5, 90, 600]))
        msg = str(info.value)
        assert str(path) in msg and "row block 3 (rows 81..107): checksum mismatch" in msg
        assert "no features were returned" in msg
        # Nothing of the failed gather was cached; other blocks still work.
        assert torch.equal(s.gather(torch.tensor([5, 600])), t[[5, 600]])
        with pytest.raises(RuntimeError, match="row block 3"):
            s.gather(torch.tensor([81]))
        # Through a prefetch: the gather that needs the row raises.
        s.prefetch(torch.tensor([100, 200]))
        with pytest.raises(RuntimeError, match="row block 3 .*checksum mismatch"):
            s.gather(torch.tensor([100, 200]))
        s.cancel_prefetch()


def test_short_read_names_the_file_and_block(tmp_path):
    t = table(1000, 37)
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, t)
    s = FeatureStore.open(path)
    os.truncate(path, 4096 + 20 * 4096 + 1000)   # block 20 cut, 21.. gone (the store is open)
    with pytest.raises(RuntimeError) as info:
        s.gather(torch.tensor([1, 700]))
    msg = str(info.value)
    assert str(path) in msg and "row block 25 (rows 675..701): short read" in msg
    assert "got 0 of 4096 bytes (the file is shorter than its header says)" in msg
    with pytest.raises(RuntimeError) as info:
        s.gather(torch.tensor([545]))
    assert "row block 20 (rows 540..566): short read at offset 87016: got 1000 of 4096" in \
        str(info.value)
    assert torch.equal(s.gather(torch.tensor([1, 500])), t[[1, 500]])
    s.close()
    with pytest.raises(RuntimeError, match="the file has 87016 bytes but its header says 163840 \\(truncated\\?\\)"):
        FeatureStore.open(path)


@pytest.mark.parametrize("damage, message", [
    (lambda raw: b"NOTASTOR" + raw[8:], "not a hector feature store"),
    (lambda raw: raw[:200] + bytes([raw[200] ^ 1]) + raw[201:], "header's checksum"),
    (lambda raw: raw[:100], "too short for a store"),
    (lambda raw: raw[:-4096] + bytes([raw[-4096] ^ 1]) + raw[-4095:], "checksum table is corrupt"),
])
def test_damaged_headers_are_refused(tmp_path, damage, message):
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, table(100, 8))
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(RuntimeError, match=message) as info:
        FeatureStore.open(path)
    assert str(path) in str(info.value)


def test_open_with_another_layout_is_refused(tmp_path):
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, table(10, 8))
    assert FeatureStore.open(path, width=8, dtype=torch.float32).width == 8
    with pytest.raises(ValueError, match="holds rows of width 8 .* dtype torch.float32 but was "
                                         "opened as width 16: refused"):
        FeatureStore.open(path, width=16)
    with pytest.raises(ValueError, match="opened as torch.bfloat16: refused"):
        FeatureStore.open(path, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="opened as width 8, torch.float64: refused"):
        FeatureStore.open(path, width=8, dtype=torch.float64)


def leftovers(directory):
    return sorted(p.name for p in pathlib.Path(directory).iterdir())


def test_enospc_while_building_leaves_nothing(tmp_path):
    t = table(20000, 64)                        # 5 MB: several 4 MiB chunks
    path = tmp_path / "t.hfs"
    for after in (0, 4096, (4 << 20) + 8192, 5_120_000 + 100):   # the last: in the checksums
        with pytest.raises(RuntimeError) as info:
            FeatureStore.write(path, t, _faults=f"enospc_after={after}")
        msg = str(info.value)
        assert "No space left on device" in msg and str(path) in msg
        assert "no store was written (the partial file was removed)" in msg
        assert leftovers(tmp_path) == []
    # A store that exists is not touched by a failed rebuild over it.
    FeatureStore.write(path, t[:10])
    with pytest.raises(RuntimeError, match="No space left"):
        FeatureStore.write(path, t, overwrite=True, _faults="enospc_after=8192")
    assert leftovers(tmp_path) == ["t.hfs"]
    assert torch.equal(FeatureStore.open(path).gather(torch.arange(10)), t[:10])


def test_a_real_write_failure_leaves_nothing(tmp_path):
    """The kernel refuses the writes (RLIMIT_FSIZE: EFBIG), in a child process."""
    script = textwrap.dedent(f"""
        import resource, signal, sys, torch
        sys.path.insert(0, {str(REPO / "runtime" / "python")!r})
        import hector
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        try:
            hector.FeatureStore.write({str(tmp_path / "t.hfs")!r}, torch.randn(20000, 64))
        except RuntimeError as e:
            print("ERROR:", e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ))
    assert "ERROR:" in r.stdout and "File too large" in r.stdout, r.stdout + r.stderr
    assert "the partial file was removed" in r.stdout
    assert leftovers(tmp_path) == []


def test_bad_blocks_and_failing_iterators_leave_nothing(tmp_path):
    path = tmp_path / "t.hfs"
    cases = [
        ([torch.randn(5, 4), torch.randn(5, 4).double()], ValueError,
         "row block 1 has dtype torch.float64 but the store's (from block 0) is torch.float32"),
        ([torch.randn(5, 4), torch.randn(5, 3)], ValueError,
         "row block 1 has rows of shape [3] but the store's (from block 0) are [4]"),
        ([torch.randn(5, 4), "rows"], TypeError, "row block 1 is a str, not a tensor"),
        ([torch.randn(5, 0)], ValueError, "hold no bytes"),
        ([torch.randn(5, 4).to(torch.complex64)], TypeError, "cannot be stored"),
        ([], ValueError, "no row blocks were given"),
        ([torch.tensor(1.0)], ValueError, "at least one dimension"),
    ]
    for blocks, exc, message in cases:
        with pytest.raises(exc) as info:
            FeatureStore.write(path, iter(blocks))
        assert message in str(info.value)
        assert leftovers(tmp_path) == []

    def failing():
        yield torch.randn(100, 4)
        raise KeyError("the source failed")

    with pytest.raises(KeyError, match="the source failed"):
        FeatureStore.write(path, failing())
    assert leftovers(tmp_path) == []
    FeatureStore.write(path, torch.randn(3, 4))
    with pytest.raises(FileExistsError, match="exists"):
        FeatureStore.write(path, torch.randn(3, 4))
    with pytest.raises(TypeError, match="expected a tensor or an iterable"):
        FeatureStore.write(tmp_path / "u.hfs", 5)


@pytest.mark.parametrize("index, exc, message", [
    (torch.tensor([0.0]), TypeError, "index must be torch.int64 or torch.int32, got torch.float32"),
    (torch.zeros(2, 2, dtype=torch.long), ValueError, "index must be 1-D"),
    (torch.tensor([3, 10]), ValueError, "index[1] = 10 is out of range [0, 10)"),
    (torch.tensor([-1]), ValueError, "index[0] = -1 is out of range"),
    ([1, 2], TypeError, "index must be a torch.Tensor"),
])
def test_index_validation(tmp_path, index, exc, message):
    s = FeatureStore.create(tmp_path / "t.hfs", table(10, 4), cache_bytes=64, sync=False)
    for call in (s.gather, s.prefetch):
        with pytest.raises(exc) as info:
            call(index)
        assert message in str(info.value)
    assert s.stats["storage_rows"] == 0


@pytest.mark.parametrize("kwargs, exc, message", [
    (dict(policy="lru"), ValueError, "policy must be one of"),
    (dict(policy="hybrid"), TypeError, "need static_scores"),
    (dict(policy="static", static_scores=torch.zeros(3)), ValueError,
     "static_scores must have shape [10]"),
    (dict(policy="static", static_scores=torch.full((10,), float("nan"))), ValueError,
     "is not finite"),
    (dict(static_scores=[1, 2]), TypeError, "static_scores must be a tensor"),
    (dict(cache_bytes=-1), ValueError, "cache_bytes must be an int >= 0"),
    (dict(io_depth=0), ValueError, "io_depth must be an int >= 1"),
    (dict(static_scores=torch.zeros(10), static_weight=-1.0), ValueError,
     "static_weight must be in [0, 254]"),
    (dict(shared_victim="a/b", victim_bytes=1000), ValueError, "shared_victim must be a name"),
    (dict(shared_victim="x"), ValueError, "shared_victim needs victim_bytes"),
    (dict(cache_device="meta"), ValueError, "cache_device must be the CPU or a CUDA device"),
])
def test_option_validation(tmp_path, kwargs, exc, message):
    FeatureStore.write(tmp_path / "t.hfs", table(10, 4))
    with pytest.raises(exc) as info:
        FeatureStore.open(tmp_path / "t.hfs", **kwargs)
    assert message in str(info.value)


def test_missing_file_and_closed_store(tmp_path):
    with pytest.raises(FileNotFoundError):
        FeatureStore.open(tmp_path / "none.hfs")
    s = FeatureStore.create(tmp_path / "t.hfs", table(10, 4))
    s.close()
    s.close()
    with pytest.raises(RuntimeError, match="the store is closed"):
        s.gather(torch.tensor([0]))


# --- the victim buffer shared by processes ------------------------------------------------------

def test_processes_share_one_victim_buffer(tmp_path):
    t = table(500, 32)
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, t)
    name = f"test-{os.getpid()}-{time.monotonic_ns()}"
    rows = torch.arange(100, 300)
    ready, done = tmp_path / "ready", tmp_path / "done"
    child = textwrap.dedent(f"""
        import pathlib, sys, time, torch
        sys.path.insert(0, {str(REPO / "runtime" / "python")!r})
        import hector
        s = hector.FeatureStore.open({str(path)!r}, victim_bytes=1 << 20, shared_victim={name!r})
        out = s.gather(torch.arange(100, 300))
        st = s.stats
        assert st["storage_rows"] == 200 and st["victim_hits"] == 0, st
        pathlib.Path({str(ready)!r}).write_text("ok")
        while not pathlib.Path({str(done)!r}).exists():
            time.sleep(0.01)
        s.close()
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        s = FeatureStore.open(path, victim_bytes=1 << 20, shared_victim=name)
        assert s.victim_name == f"/dev/shm/hector-fs-{name}"
        assert torch.equal(s.gather(rows), t[rows])
        st = s.stats
        # The other process's reads serve this one: nothing read from the file.
        assert st["victim_hits"] == 200 and st["bytes_read"] == 0, st
        # Another store under the same name is refused.
        FeatureStore.write(tmp_path / "u.hfs", t)
        with pytest.raises(RuntimeError, match="belongs to another store file"):
            FeatureStore.open(tmp_path / "u.hfs", victim_bytes=1 << 20, shared_victim=name)
        done.write_text("ok")
        assert proc.wait(timeout=60) == 0, proc.communicate()
        s.close()
    finally:
        done.write_text("ok")
        proc.kill()
    # The last process out removed the segment.
    assert not pathlib.Path(f"/dev/shm/hector-fs-{name}").exists()


# --- the mini-batch loader -----------------------------------------------------------------------

def training_problem(seed=3, num_nodes=80, num_edges=500, width=8):
    g = awkward_graph(seed, num_nodes=num_nodes, num_edges=num_edges)
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes,
                         num_relations=g.num_relations)
    gen = torch.Generator().manual_seed(seed)
    features = torch.randn(g.num_nodes, width, generator=gen)
    nodes = torch.randperm(g.num_nodes, generator=gen)[:30]
    labels = torch.randint(0, 4, (30,), generator=gen)
    return graph, features, nodes, labels


def train(layer, loader, epochs):
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


def test_training_from_the_store_equals_training_from_memory(compile_model, tmp_path):
    """The same seeds give bit-identical losses and parameters from the store (small cache and
    victim buffer, so that every tier serves rows; prefetcher on and off; loader thread and
    synchronous) as from the in-memory table."""
    Model = compile_model("rgcn_aifb", *MODEL)
    graph, features, nodes, labels = training_problem()
    sampler = NeighborSampler(graph, num_layers=2, fanout=[3, 2])
    FeatureStore.write(tmp_path / "f.hfs", features)
    torch.manual_seed(1)
    init = Model(num_relations=graph.num_relations).state_dict()
    row = 8 * 4
    sources = [(features, 0)]
    for policy in ("dynamic", "hybrid", "static"):
        for prefetch, depth in ((True, 2), (False, 0), (True, 0)):
            store = FeatureStore.open(tmp_path / "f.hfs", cache_bytes=15 * row,
                                      victim_bytes=10 * row, policy=policy,
                                      static_scores=FeatureStore.degree_scores(graph),
                                      prefetch=prefetch)
            sources.append((store, depth))
    results = []
    for source, depth in sources:
        loader = MiniBatchLoader(sampler, source, nodes, labels, batch_size=7, seed=4,
                                 prefetch=depth)
        layer = Model(num_relations=graph.num_relations)
        layer.load_state_dict(init)
        losses = train(layer, loader, epochs=3)
        results.append((losses, [p.detach() for p in layer.parameters()]))
        if isinstance(source, FeatureStore):
            st = source.stats
            assert st["cache_hits"] and st["storage_rows"], st
            assert (st["prefetched_rows"] > 0) == source.prefetch_enabled
            # Every prefetch was used by the gather it announced.
            assert st["prefetch_unused_rows"] == 0
    losses0, params0 = results[0]
    assert len(losses0) == 15 and losses0[-1] < losses0[0]
    for losses, params in results[1:]:
        assert all(torch.equal(a, b) for a, b in zip(losses0, losses))
        assert all(torch.equal(a, b) for a, b in zip(params0, params))


def test_loader_batches_from_the_store(tmp_path):
    graph, features, nodes, labels = training_problem(width=13)
    store = FeatureStore.create(tmp_path / "f.hfs", features, cache_bytes=20 * 52,
                                victim_bytes=20 * 52)
    loader = MiniBatchLoader(NeighborSampler(graph, fanout=2), store, nodes, labels,
                             batch_size=8, prefetch=1)
    for epoch in range(2):
        loader.set_epoch(epoch)
        for batch in loader:
            assert torch.equal(batch.x, features[batch.subgraph.nodes])
    assert store.stats["prefetch_unused_rows"] == 0 and store.stats["prefetched_rows"] > 0
    # Leaving an epoch early releases what was prefetched for the batches not taken.
    for batch in loader:
        break
    deadline = time.monotonic() + 10
    while any(t.name == "hector-minibatch" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the loader thread did not stop"
        time.sleep(0.01)
    assert store.stats["prefetch_unused_rows"] > 0
    store.reset_stats()
    store.gather(torch.arange(80))           # no slot is left pinned: the cache turns over
    store.gather(torch.arange(80).flip(0))
    assert store.stats["cache_evictions"] > 0
    with pytest.raises(ValueError, match="the feature table has 80 rows but the graph has"):
        MiniBatchLoader(NeighborSampler(hector.Graph(torch.tensor([0]), torch.tensor([1]),
                                                     torch.tensor([0]), num_nodes=81)),
                        store, nodes, batch_size=4)


# --- the example and the benchmark ----------------------------------------------------------------

def run_example(library, *args, timeout=300):
    env = dict(os.environ, HECTOR_BUILD_DIR=os.environ.get("HECTOR_BUILD_DIR",
                                                           str(REPO / "build")))
    cmd = [sys.executable, str(REPO / "examples" / "train_minibatch.py"), "--library",
           str(library), "--feature-dim", "8", "--hidden", "4", "--batch-size", "32", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
    return r.stdout


@needs_aifb
def test_example_trains_from_disk(compiled_library, tmp_path):
    lib = compiled_library("rgcn_aifb", *MODEL)
    out = run_example(lib, "--epochs", "2", "--fanout", "5", "--features-on-disk",
                      str(tmp_path), "--cache-bytes", "20000", "--victim-bytes", "20000")
    assert "features: on disk" in out and "built" in out and "epoch 2/2" in out
    assert "test accuracy:" in out and "storage" in out
    # A second run opens the store it built.
    out = run_example(lib, "--epochs", "1", "--features-on-disk", str(tmp_path),
                      "--policy", "dynamic")
    assert "opened" in out and "test accuracy:" in out


@needs_aifb
def test_example_ddp_shares_the_victim_buffer(compiled_library, tmp_path):
    lib = compiled_library("rgcn_aifb", *MODEL)
    out = run_example(lib, "--epochs", "1", "--world-size", "2", "--features-on-disk",
                      str(tmp_path), "--cache-bytes", "0", "--victim-bytes", "4000000")
    assert "2 ranks" in out and "parameters identical on all 2 ranks: yes" in out
    import re
    name = re.search(r"shared victim buffer (/dev/shm/hector-fs-\S+)\)", out)
    assert name, out
    assert not pathlib.Path(name.group(1)).exists()   # the last rank out removed it


def test_bench_featurestore_smoke(compiled_library, tmp_path):
    import json
    lib = compiled_library("rgcn_aifb", "in=16", "hidden=4", "classes=4")
    out_json = tmp_path / "bench.json"
    env = dict(os.environ, HECTOR_BUILD_DIR=os.environ.get("HECTOR_BUILD_DIR",
                                                           str(REPO / "build")))
    cmd = [sys.executable, str(REPO / "tools" / "bench_featurestore.py"), "--library", str(lib),
           "--nodes", "3000", "--batches", "3", "--batch-size", "32", "--fanout", "4,3",
           "--memory-limit", "0", "--static-scores", "sampled", "--policies", "dynamic,hybrid",
           "--epochs", "1", "--dir", str(tmp_path),
           "--json", str(out_json)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    result = json.loads(out_json.read_text())
    runs = result["runs"]
    assert {(x["policy"], x["prefetch"]) for x in runs} == {
        (p, f) for p in ("dynamic", "hybrid") for f in (False, True)}
    assert len({tuple(x["losses"]) for x in runs}) == 1   # every configuration trains alike
    assert all(x["bytes_read"] > 0 for x in runs)
    assert not list(tmp_path.glob("*.hfs"))                # the benchmark removes its store


# --- CUDA (the GPU check runs these) ----------------------------------------------------------

@needs_cuda
@pytest.mark.parametrize("use_cufile", [False, True])
def test_gpu_cache(tmp_path, use_cufile):
    t = table(3000, 33)
    path = tmp_path / "t.hfs"
    FeatureStore.write(path, t)
    s = FeatureStore.open(path, cache_device="cuda", cache_bytes=300 * 132,
                          victim_bytes=300 * 132, use_cufile=use_cufile)
    want_cufile = use_cufile and "cuFile (misses" in s.io_mode
    print("io mode:", s.io_mode)
    for rnd, idx in enumerate(skewed_batches(3000, 20, 400, seed=9) + awkward_indices(3000, 1)):
        if rnd % 3 == 0:
            s.prefetch(idx)
        for device in ("cuda", "cpu"):
            got = s.gather(idx.to(device))
            assert got.device.type == device and torch.equal(got.cpu(), t[idx.long()])
    assert s.stats["cache_hits"] > 0 and s.stats["victim_hits"] > 0
    assert want_cufile == ("cuFile (misses" in s.io_mode)
    s.close()
    # A corrupt block is caught on this path too (on the GPU with cuFile).
    with open(path, "r+b") as f:
        f.seek(4096 + 7 * 4096 + 5)
        f.write(b"\xff\xff")
    s = FeatureStore.open(path, cache_device="cuda", cache_bytes=10 ** 6, use_cufile=use_cufile)
    with pytest.raises(RuntimeError, match="row block 7 .*checksum mismatch"):
        s.gather(torch.tensor([7 * 31 + 1], device="cuda"))


@needs_cuda
def test_gpu_loader_from_the_store(tmp_path):
    graph, features, nodes, labels = training_problem(width=33)
    store = FeatureStore.create(tmp_path / "f.hfs", features, cache_device="cuda",
                                cache_bytes=20 * 132, victim_bytes=20 * 132)
    loader = MiniBatchLoader(NeighborSampler(graph, fanout=[3, 2]), store, nodes, labels,
                             batch_size=7, device="cuda", prefetch=2)
    for batch in loader:
        assert batch.x.is_cuda
        assert torch.equal(batch.x.cpu(), features[batch.subgraph.nodes])
