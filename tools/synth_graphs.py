"""Synthetic heterogeneous graphs with the published statistics of real ones (ogbn-mag,
ogbl-wikikg2), at any scale, deterministic by seed, for tools/bench_scale.py.

    from synth_graphs import SPECS, generate, load_or_generate
    g = generate(SPECS["mag"], scale=0.125, seed=0)      # numpy int64 COO + ntype
    g = load_or_generate(SPECS["mag"], 0.125, 0, cache_dir=..., cache_bytes=4 << 30)

    python tools/synth_graphs.py mag wikikg2 --scale 0.01   # prints the statistics

Graphs (counts from ../shared/brief/scale.md, i.e. the data sets' papers and loaders):

- ``mag`` (the default of the benchmark): ogbn-mag's four node types with their counts
  (paper 736,389, author 1,134,649, institution 8,740, field_of_study 59,965: 1,939,743 nodes)
  and eight relations: its four (writes, cites, has_topic, affiliated_with) and their reverses,
  the reverse of an edge being the same edge turned round (PyG's ToUndirected adds them as
  rev_* relations; we keep cites' reverse as its own relation rev_cites, so there are 8, not 7).
  Every relation and its reverse share the relation's published count, so the total is
  ogbn-mag's 21,111,007 edges over 8 relations (the size of the first measurements at scale:
  1,939,743 nodes, 21,111,007 edges, 8 relations). A relation with an odd count gives its
  forward half the extra edge.
- ``mag4``: the four relations without reverses, each with its published count (21,111,007).
- ``mag_undirected``: the four relations with their published counts and all their reverses
  (what ToUndirected gives a layer: 42,222,014 edges, 8 relations).
- ``wikikg2``: ogbl-wikikg2's 2,500,604 entities (one node type) and 16,109,182 training
  triples over 535 relations whose sizes follow a Zipf law (relation k, 0-based, has a share
  proportional to (k + 1) ** -1.3: the largest about 29% of the edges, the smallest about
  1,300 edges, each at least one). Relations are numbered by size, largest first.

Degrees are heavy-tailed at both ends: every endpoint of a relation is drawn from its node type
by a truncated power law over popularity ranks (P(rank k) ~ (k + 1) ** -s, drawn by inverse
transform), and the ranks are mapped to node ids by a random affine permutation per relation and
end, so that each relation has its own hubs. For ogbn-mag the exponent s of each end is chosen
so that, at full size, the most popular node of that end expects a given number of edges of its
relation (the hubs of ``_MAG_RELATIONS``): e.g. a field of study with 300,000 papers and a paper
cited 30,000 times, as scale.md describes (in ``mag``, where a relation and its reverse share
the published count, each carries half of those edges: at full size its largest field of study
has about 150,000 papers, its most cited paper about 15,000 citations); wikikg2 gives the
exponents directly (at full size: an entity with about 100,000 incoming edges). Scaling keeps
the node types' proportions, the mean degrees and the hubs' shares: every node and edge count is
multiplied by the scale factor (rounded; at least 1), and each end's exponent is solved again
at the scaled node count so that its most popular node keeps the share of the relation's edges
that it has at full size (so every hub's degree scales with the graph, and the work of the
largest hubs stays the same fraction of the whole). Edges are i.i.d. draws, so the graph is a
multigraph (a pair of hubs can be joined twice); self-loops may occur where a relation joins a
type to itself.

Layout (what PyG's HeteroData.to_homogeneous gives): node ids are grouped by node type, in the
order of ``GraphSpec.ntypes``; edges are grouped by relation, in relation order, and in random
order within a relation. A reverse relation's i-th edge is its forward relation's i-th edge
turned round.

Memory: the result is preallocated (int64 src, dst, etype [E] and ntype [N]: 24 E + 8 N bytes)
and filled block by block (``BLOCK`` edges; every block has its own random stream, seeded by
(seed, graph, relation, block)), so generating needs the result plus a few blocks' temporaries
(about 40 bytes per edge of one block). The cache (``load_or_generate``) stores the arrays as
.npy files, written to a temporary directory and renamed into place (a killed writer leaves
no entry), and evicts the least recently used entries to stay within its byte limit.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import pathlib
import shutil
import sys
import time
import zlib

import numpy as np

#: Version of the generator's output: part of every cache key (bump it when the output changes).
VERSION = 1
#: Edges per random block: the unit of determinism and of the generator's temporaries.
BLOCK = 1 << 20


@dataclasses.dataclass(frozen=True)
class Relation:
    name: str
    src: int                    #: source node type
    dst: int                    #: destination node type
    edges: int                  #: edges at full size
    src_exp: float              #: power-law exponent of the sources' popularity at full size
    dst_exp: float              #: and of the destinations'
    reverse_of: int | None = None   #: the relation whose edges this one turns round
    #: where a relation and its reverse share one published count: that count (both carry it)
    pair_edges: int | None = None


@dataclasses.dataclass(frozen=True)
class GraphSpec:
    name: str
    ntypes: tuple[str, ...]
    ntype_counts: tuple[int, ...]   #: nodes per type at full size
    relations: tuple[Relation, ...]
    description: str

    @property
    def num_nodes(self) -> int:
        return sum(self.ntype_counts)

    @property
    def num_edges(self) -> int:
        return sum(r.edges for r in self.relations)


# ------------------------------------------------------------------------------------------------
# Power-law endpoints


def rank_share(s: float, n: int, k: int = 0) -> float:
    """Probability of rank k under the sampler below: the mass of [k + 1, k + 2) under the
    density x ** -s truncated to [1, n + 1)."""
    def integral(a: float, b: float) -> float:
        if abs(s - 1.0) < 1e-12:
            return math.log(b / a)
        return (b ** (1 - s) - a ** (1 - s)) / (1 - s)
    return integral(k + 1.0, k + 2.0) / integral(1.0, n + 1.0)


def exponent_for_hub(n: int, edges: int, hub: float) -> float:
    """The exponent s at which the most popular of n nodes expects `hub` of `edges` draws
    (0: uniform, when even that gives the hub more)."""
    target = hub / edges
    if n <= 1 or target <= rank_share(0.0, n):
        return 0.0
    lo, hi = 0.0, 8.0
    for _ in range(100):   # rank_share(s, n, 0) increases with s
        mid = (lo + hi) / 2
        if rank_share(mid, n) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@functools.lru_cache(maxsize=None)
def scaled_exponent(s: float, n_full: int, n: int) -> float:
    """The exponent at which the most popular of n nodes has the share of the draws that it has
    among n_full nodes with exponent s."""
    if n == n_full:
        return s
    share = rank_share(s, n_full)
    return exponent_for_hub(n, 1, share)


def power_law_ranks(rng: np.random.Generator, count: int, n: int, s: float) -> np.ndarray:
    """`count` ranks in [0, n), P(k) = rank_share(s, n, k): the inverse transform of the
    truncated continuous power law, floored."""
    u = rng.random(count)
    if s == 0.0:
        x = u * n
        x += 1.0
    elif abs(s - 1.0) < 1e-12:
        x = np.exp(u * math.log(n + 1.0))
    else:
        a = 1.0 - s
        top = (n + 1.0) ** a
        x = u
        x *= top - 1.0
        x += 1.0
        np.power(x, 1.0 / a, out=x)
    ranks = x.astype(np.int64)
    ranks -= 1
    np.clip(ranks, 0, n - 1, out=ranks)
    return ranks


def affine_permutation(rng: np.random.Generator, n: int) -> tuple[int, int]:
    """(a, b) with gcd(a, n) = 1: rank -> (a * rank + b) mod n is a permutation of [0, n)."""
    if n <= 1:
        return 1, 0
    a = int(rng.integers(1, n))
    while math.gcd(a, n) != 1:
        a = a % (n - 1) + 1
    return a, int(rng.integers(0, n))


# ------------------------------------------------------------------------------------------------
# The graphs

# ogbn-mag: node types and relations (counts of ../shared/brief/scale.md). The hubs are the
# expected edges of each end's most popular node at full size, for the published relation.
_MAG_NTYPES = ("paper", "author", "institution", "field_of_study")
_MAG_COUNTS = (736_389, 1_134_649, 8_740, 59_965)
# name, src type, dst type, edges, src hub, dst hub
_MAG_RELATIONS = (
    ("writes", 1, 0, 7_145_660, 1_500, 300),            # a prolific author; a big collaboration
    ("cites", 0, 0, 5_416_271, 1_000, 30_000),          # a survey; a paper cited 30,000 times
    ("has_topic", 0, 3, 7_505_078, 100, 300_000),       # a field with 300,000 papers
    ("affiliated_with", 1, 2, 1_043_998, 30, 20_000),   # a large institution
)


def _mag_spec(name: str, mode: str) -> GraphSpec:
    """mode: "half" (relations and reverses share the published count), "forward" (no
    reverses), "full" (reverses as large as their relations)."""
    forward, reverse = [], []
    for i, (rel, a, b, edges, src_hub, dst_hub) in enumerate(_MAG_RELATIONS):
        s_src = exponent_for_hub(_MAG_COUNTS[a], edges, src_hub)
        s_dst = exponent_for_hub(_MAG_COUNTS[b], edges, dst_hub)
        fwd = {"half": (edges + 1) // 2, "forward": edges, "full": edges}[mode]
        pair = edges if mode == "half" else None
        forward.append(Relation(rel, a, b, fwd, s_src, s_dst, pair_edges=pair))
        if mode != "forward":
            back = edges - fwd if mode == "half" else edges
            reverse.append(Relation(f"rev_{rel}", b, a, back, s_dst, s_src, reverse_of=i,
                                    pair_edges=pair))
    relations = tuple(forward + reverse)
    what = {"half": "4 relations and their reverses sharing the published counts",
            "forward": "4 relations, no reverses",
            "full": "4 relations with the published counts and all their reverses"}[mode]
    return GraphSpec(name, _MAG_NTYPES, _MAG_COUNTS, relations, f"ogbn-mag-like: {what}")


def _zipf_sizes(total: int, count: int, s: float) -> list[int]:
    """`total` split into `count` parts proportional to (k + 1) ** -s, each at least 1 (largest
    remainder rounding)."""
    if total < count:
        raise ValueError(f"{total} edges cannot give {count} relations an edge each")
    w = np.arange(1, count + 1, dtype=np.float64) ** -s
    share = w / w.sum() * (total - count)
    sizes = np.floor(share).astype(np.int64)
    rest = (total - count) - int(sizes.sum())
    sizes[np.argsort(-(share - sizes), kind="stable")[:rest]] += 1
    return [int(v) + 1 for v in sizes]


WIKIKG2_ENTITIES = 2_500_604
WIKIKG2_TRIPLES = 16_109_182
WIKIKG2_RELATIONS = 535
WIKIKG2_RELATION_EXP = 1.3   # Zipf exponent of the relation sizes
WIKIKG2_SRC_EXP = 0.6        # popularity exponents of heads and tails
WIKIKG2_DST_EXP = 0.9


def _wikikg2_spec() -> GraphSpec:
    sizes = _zipf_sizes(WIKIKG2_TRIPLES, WIKIKG2_RELATIONS, WIKIKG2_RELATION_EXP)
    relations = tuple(Relation(f"r{k}", 0, 0, e, WIKIKG2_SRC_EXP, WIKIKG2_DST_EXP)
                      for k, e in enumerate(sizes))
    return GraphSpec("wikikg2", ("entity",), (WIKIKG2_ENTITIES,), relations,
                     "ogbl-wikikg2-like: 535 relations of Zipf-distributed sizes")


SPECS: dict[str, GraphSpec] = {
    "mag": _mag_spec("mag", "half"),
    "mag4": _mag_spec("mag4", "forward"),
    "mag_undirected": _mag_spec("mag_undirected", "full"),
    "wikikg2": _wikikg2_spec(),
}


def scaled_counts(spec: GraphSpec, scale: float) -> tuple[list[int], list[int]]:
    """(nodes per type, edges per relation) at `scale`: every full-size count times the scale,
    rounded, at least 1. A relation and its reverse in the "half" form split their relation's
    scaled count (the forward half gets the odd edge), so the total scales exactly like the
    published total; a reverse never has more edges than its forward relation."""
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive number, got {scale}")
    nodes = [max(1, round(c * scale)) for c in spec.ntype_counts]
    edges = [max(1, round(r.edges * scale)) for r in spec.relations]
    for i, r in enumerate(spec.relations):
        if r.reverse_of is not None:
            f = r.reverse_of
            if r.pair_edges is not None:   # the two halves of one published relation
                whole = max(2, round(r.pair_edges * scale))
                edges[f], edges[i] = (whole + 1) // 2, whole // 2
            edges[i] = min(edges[i], edges[f])
    return nodes, edges


@dataclasses.dataclass
class SynthGraph:
    """A generated graph: numpy int64 COO (src, dst, etype [E]) and ntype [N], plus what it is."""
    name: str
    scale: float
    seed: int
    src: np.ndarray
    dst: np.ndarray
    etype: np.ndarray
    ntype: np.ndarray
    ntype_names: list[str]
    ntype_counts: list[int]
    relation_names: list[str]
    rel_src_type: list[int]
    rel_dst_type: list[int]
    rel_counts: list[int]

    @property
    def num_nodes(self) -> int:
        return int(self.ntype.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.src.shape[0])

    @property
    def num_relations(self) -> int:
        return len(self.relation_names)

    @property
    def num_ntypes(self) -> int:
        return len(self.ntype_names)

    @property
    def ntype_offsets(self) -> list[int]:
        """[T+1]: node ids of type t are ntype_offsets[t]:ntype_offsets[t+1]."""
        return [0] + list(np.cumsum(self.ntype_counts).tolist())

    @property
    def rel_offsets(self) -> list[int]:
        """[R+1]: the edges of relation r are the positions rel_offsets[r]:rel_offsets[r+1]."""
        return [0] + list(np.cumsum(self.rel_counts).tolist())

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.src, self.dst, self.etype, self.ntype))

    def meta(self) -> dict:
        return {"name": self.name, "scale": self.scale, "seed": self.seed,
                "num_nodes": self.num_nodes, "num_edges": self.num_edges,
                "ntype_names": self.ntype_names, "ntype_counts": self.ntype_counts,
                "relation_names": self.relation_names, "rel_src_type": self.rel_src_type,
                "rel_dst_type": self.rel_dst_type, "rel_counts": self.rel_counts}


def _rng(*key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(list(key))))


def generate(spec: GraphSpec, scale: float = 1.0, seed: int = 0, block: int = BLOCK) -> SynthGraph:
    """The graph `spec` at `scale`, deterministic in (spec, scale, seed, block)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    if block < 1:
        raise ValueError(f"block must be positive, got {block}")
    nodes, edges = scaled_counts(spec, scale)
    offsets = np.concatenate([[0], np.cumsum(nodes)]).astype(np.int64)
    total = int(sum(edges))
    src = np.empty(total, dtype=np.int64)
    dst = np.empty(total, dtype=np.int64)
    etype = np.empty(total, dtype=np.int64)
    ntype = np.repeat(np.arange(len(nodes), dtype=np.int64), nodes)
    starts = np.concatenate([[0], np.cumsum(edges)]).astype(np.int64)
    graph_key = zlib.crc32(spec.name.encode())
    for r, rel in enumerate(spec.relations):
        lo, count = int(starts[r]), int(edges[r])
        etype[lo:lo + count] = r
        if rel.reverse_of is not None:   # the first `count` edges of the forward relation
            if rel.reverse_of >= r:
                raise ValueError(f"{spec.name}: relation {rel.name} reverses a later relation")
            f = int(starts[rel.reverse_of])
            src[lo:lo + count] = dst[f:f + count]
            dst[lo:lo + count] = src[f:f + count]
            continue
        ends = []
        for end, (t, s) in enumerate(((rel.src, rel.src_exp), (rel.dst, rel.dst_exp))):
            a, b = affine_permutation(_rng(seed, graph_key, r, end, 1 << 40), nodes[t])
            s = scaled_exponent(s, spec.ntype_counts[t], nodes[t])
            ends.append((nodes[t], s, a, b, int(offsets[t])))
        for i, pos in enumerate(range(0, count, block)):
            m = min(block, count - pos)
            rng = _rng(seed, graph_key, r, i)
            for out, (n, s, a, b, off) in zip((src, dst), ends):
                ranks = power_law_ranks(rng, m, n, s)
                ranks *= a
                ranks += b
                np.remainder(ranks, n, out=ranks)
                ranks += off
                out[lo + pos:lo + pos + m] = ranks
    return SynthGraph(spec.name, scale, seed, src, dst, etype, ntype, list(spec.ntypes), nodes,
                      [r.name for r in spec.relations], [r.src for r in spec.relations],
                      [r.dst for r in spec.relations], [int(e) for e in edges])


# ------------------------------------------------------------------------------------------------
# Statistics


def statistics(g: SynthGraph, top: int = 5) -> dict:
    """Counts, and the degree tails: overall in- and out-degree (max, mean over the nodes of
    the types that receive / send, the top `top`, the share of nodes without any), and per
    relation (at most 16 relations; else the spread of the relation sizes) its edges and its
    largest in- and out-degree."""
    out: dict = {"nodes": g.num_nodes, "edges": g.num_edges, "relations": g.num_relations,
                 "ntypes": dict(zip(g.ntype_names, g.ntype_counts))}
    for side, ids in (("in", g.dst), ("out", g.src)):
        deg = np.bincount(ids, minlength=g.num_nodes)
        order = np.argsort(-deg, kind="stable")[:top]
        out[f"{side}_degree"] = {"max": int(deg.max(initial=0)),
                                 "mean": round(g.num_edges / max(g.num_nodes, 1), 2),
                                 "top": [int(d) for d in deg[order]],
                                 "top_nodes": [int(v) for v in order],
                                 "zero_share": round(float((deg == 0).mean()), 4)}
    if g.num_relations <= 16:
        per = {}
        bounds = g.rel_offsets
        for r, name in enumerate(g.relation_names):
            lo, hi = bounds[r], bounds[r + 1]
            if hi == lo:
                continue
            per[name] = {"edges": hi - lo,
                         "max_in": int(np.bincount(g.dst[lo:hi]).max()),
                         "max_out": int(np.bincount(g.src[lo:hi]).max())}
        out["per_relation"] = per
    else:
        c = np.asarray(g.rel_counts)
        out["relation_sizes"] = {"max": int(c.max()), "median": int(np.median(c)),
                                 "min": int(c.min())}
    return out


# ------------------------------------------------------------------------------------------------
# Cache


def cache_key(spec: GraphSpec, scale: float, seed: int) -> str:
    return f"{spec.name}-s{scale:g}-seed{seed}-v{VERSION}"


_ARRAYS = ("src", "dst", "etype", "ntype")


def _entry_bytes(path: pathlib.Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


def _evict(cache_dir: pathlib.Path, need: int, limit: int, keep: str | None = None) -> None:
    """Removes the least recently used entries (and leftovers of killed writers) until `need`
    more bytes fit under `limit`."""
    entries = []
    for p in cache_dir.iterdir():
        if p.name.startswith(".tmp-"):
            if time.time() - p.stat().st_mtime > 3600:   # a writer killed an hour ago or more
                shutil.rmtree(p, ignore_errors=True)
            continue
        if p.is_dir() and p.name != keep and (p / "meta.json").is_file():
            entries.append((p.joinpath("meta.json").stat().st_mtime, p))
    used = sum(_entry_bytes(p) for _, p in entries)
    for _, p in sorted(entries, key=lambda e: e[0]):
        if used + need <= limit:
            break
        used -= _entry_bytes(p)
        shutil.rmtree(p, ignore_errors=True)


def save(g: SynthGraph, cache_dir: pathlib.Path, key: str, limit: int,
         stats: dict | None = None) -> bool:
    """Writes g under cache_dir/key (atomically); False when it does not fit in `limit` bytes
    even with every other entry evicted."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    need = g.nbytes + 4096
    if need > limit:
        return False
    _evict(cache_dir, need, limit, keep=key)
    tmp = cache_dir / f".tmp-{key}-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for name in _ARRAYS:
            np.save(tmp / f"{name}.npy", getattr(g, name))
        meta = g.meta()
        meta["stats"] = stats
        (tmp / "meta.json").write_text(json.dumps(meta))
        final = cache_dir / key
        shutil.rmtree(final, ignore_errors=True)
        os.rename(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def load(cache_dir: pathlib.Path, key: str) -> tuple[SynthGraph, dict | None] | None:
    """The cached graph and its statistics, or None. Arrays are read into memory (not mapped)."""
    path = cache_dir / key
    try:
        meta = json.loads((path / "meta.json").read_text())
        arrays = {name: np.load(path / f"{name}.npy") for name in _ARRAYS}
    except (OSError, ValueError):
        return None
    os.utime(path / "meta.json")   # recently used
    fields = {f.name for f in dataclasses.fields(SynthGraph)}
    g = SynthGraph(**arrays, **{k: v for k, v in meta.items() if k in fields})
    return g, meta.get("stats")


def cached_meta(cache_dir: pathlib.Path, key: str) -> dict | None:
    """The metadata (and statistics) of a cache entry without its arrays, or None."""
    path = cache_dir / key
    if not all((path / f"{name}.npy").is_file() for name in _ARRAYS):
        return None
    try:
        return json.loads((path / "meta.json").read_text())
    except (OSError, ValueError):
        return None


def load_or_generate(spec: GraphSpec, scale: float, seed: int, cache_dir: pathlib.Path | None,
                     cache_bytes: int, with_stats: bool = False, store: bool = True):
    """(graph, statistics or None, "cache" | "generated"): from the cache when it holds the graph,
    else generated (and cached when cache_dir is given, `store` is set and it fits)."""
    key = cache_key(spec, scale, seed)
    if cache_dir is not None and (hit := load(cache_dir, key)) is not None:
        g, stats = hit
        if with_stats and stats is None:
            stats = statistics(g)
        return g, stats, "cache"
    g = generate(spec, scale, seed)
    stats = statistics(g) if with_stats else None
    if cache_dir is not None and store:
        save(g, cache_dir, key, cache_bytes, stats)
    return g, stats, "generated"


def main() -> None:
    ap = argparse.ArgumentParser(description="Prints the statistics of generated graphs.")
    ap.add_argument("graphs", nargs="*", default=["mag"], help=", ".join(SPECS))
    ap.add_argument("--scale", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for name in args.graphs:
        if name not in SPECS:
            ap.error(f"unknown graph {name!r} ({', '.join(SPECS)})")
        t0 = time.perf_counter()
        g = generate(SPECS[name], args.scale, args.seed)
        dt = time.perf_counter() - t0
        print(f"{name} at scale {args.scale:g} (seed {args.seed}): generated in {dt:.2f} s, "
              f"{g.nbytes / 2 ** 20:.1f} MiB")
        print(json.dumps(statistics(g), indent=1))


if __name__ == "__main__":
    sys.exit(main())
