"""The scale benchmark's graph generator (tools/synth_graphs.py: published counts, determinism,
heavy-tailed degrees, bounded memory, the cache) and its process runner (tools/bench_scale.py:
the memory cap and the timeout become results). Small sizes only: the file runs in seconds."""
import math
import pathlib
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

TOOLS = pathlib.Path(__file__).resolve().parents[2] / "tools"
sys.path.insert(0, str(TOOLS))
import bench_scale  # noqa: E402
import synth_graphs as sg  # noqa: E402

# ogbn-mag and ogbl-wikikg2 as published (../shared/brief/scale.md)
MAG_NODES = {"paper": 736_389, "author": 1_134_649, "institution": 8_740,
             "field_of_study": 59_965}
MAG_EDGES = {"writes": 7_145_660, "cites": 5_416_271, "has_topic": 7_505_078,
             "affiliated_with": 1_043_998}


def test_full_size_counts_are_the_published_ones():
    mag = sg.SPECS["mag"]
    nodes, edges = sg.scaled_counts(mag, 1.0)
    assert dict(zip(mag.ntypes, nodes)) == MAG_NODES
    assert sum(nodes) == 1_939_743 and sum(edges) == 21_111_007 and len(edges) == 8
    by_name = dict(zip([r.name for r in mag.relations], edges))
    for rel, count in MAG_EDGES.items():   # a relation and its reverse share its count
        assert by_name[rel] + by_name[f"rev_{rel}"] == count
        assert by_name[rel] - by_name[f"rev_{rel}"] in (0, 1)
    types = {r.name: (mag.ntypes[r.src], mag.ntypes[r.dst]) for r in mag.relations}
    assert types["writes"] == ("author", "paper") and types["rev_writes"] == ("paper", "author")
    assert types["has_topic"] == ("paper", "field_of_study")
    assert types["affiliated_with"] == ("author", "institution")

    nodes4, edges4 = sg.scaled_counts(sg.SPECS["mag4"], 1.0)
    assert sum(nodes4) == 1_939_743 and edges4 == list(MAG_EDGES.values())
    _, edges8 = sg.scaled_counts(sg.SPECS["mag_undirected"], 1.0)
    assert sum(edges8) == 2 * 21_111_007 and len(edges8) == 8

    wiki = sg.SPECS["wikikg2"]
    nodes_w, edges_w = sg.scaled_counts(wiki, 1.0)
    assert nodes_w == [2_500_604] and sum(edges_w) == 16_109_182 and len(edges_w) == 535
    assert edges_w == sorted(edges_w, reverse=True) and min(edges_w) >= 1
    assert edges_w[0] / edges_w[-1] > 1000          # very different sizes
    # Zipf: log size against log rank is a line of slope -1.3
    slope = np.polyfit(np.log(np.arange(1, 536)), np.log(edges_w), 1)[0]
    assert abs(slope + sg.WIKIKG2_RELATION_EXP) < 0.02


@pytest.mark.parametrize("scale", [0.125, 0.25, 0.5, 0.001])
def test_scaling_scales_nodes_and_edges(scale):
    for name in ("mag", "mag4", "wikikg2"):
        spec = sg.SPECS[name]
        nodes, edges = sg.scaled_counts(spec, scale)
        assert nodes == [max(1, round(c * scale)) for c in spec.ntype_counts]
        assert abs(sum(edges) - spec.num_edges * scale) <= len(edges)
    _, edges = sg.scaled_counts(sg.SPECS["mag"], scale)
    assert sum(edges) == sum(round(c * scale) for c in MAG_EDGES.values())


def test_bad_scale_and_seed_are_rejected():
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="scale"):
            sg.scaled_counts(sg.SPECS["mag"], bad)
    with pytest.raises(ValueError, match="seed"):
        sg.generate(sg.SPECS["mag"], 0.001, seed=-1)


@pytest.mark.parametrize("name", ["mag", "mag4", "wikikg2"])
def test_generated_graph_matches_its_counts_and_types(name):
    spec = sg.SPECS[name]
    g = sg.generate(spec, 0.002, seed=3)
    nodes, edges = sg.scaled_counts(spec, 0.002)
    for a in (g.src, g.dst, g.etype, g.ntype):
        assert a.dtype == np.int64
    assert g.num_edges == sum(edges) and g.rel_counts == edges
    assert np.bincount(g.ntype, minlength=len(nodes)).tolist() == nodes
    assert (np.diff(g.ntype) >= 0).all()                         # grouped by type
    assert np.bincount(g.etype, minlength=len(edges)).tolist() == edges
    assert (np.diff(g.etype) >= 0).all()                         # grouped by relation
    off = g.ntype_offsets
    for r, rel in enumerate(spec.relations):                     # endpoints of the right types
        m = g.etype == r
        assert (g.ntype[g.src[m]] == rel.src).all() and (g.ntype[g.dst[m]] == rel.dst).all()
        if rel.reverse_of is not None:                           # the forward edges turned round
            f = g.etype == rel.reverse_of
            k = int(m.sum())
            assert (g.src[m] == g.dst[f][:k]).all() and (g.dst[m] == g.src[f][:k]).all()
    assert g.src.min() >= 0 and g.dst.max() < off[-1]


def test_generation_is_deterministic_by_seed():
    a = sg.generate(sg.SPECS["mag"], 0.002, seed=5)
    b = sg.generate(sg.SPECS["mag"], 0.002, seed=5)
    c = sg.generate(sg.SPECS["mag"], 0.002, seed=6)
    for k in ("src", "dst", "etype", "ntype"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    assert not np.array_equal(a.src, c.src) and not np.array_equal(a.dst, c.dst)
    # and block by block: a smaller block gives another graph of the same counts
    d = sg.generate(sg.SPECS["mag"], 0.002, seed=5, block=1000)
    e = sg.generate(sg.SPECS["mag"], 0.002, seed=5, block=1000)
    assert np.array_equal(d.dst, e.dst) and d.rel_counts == a.rel_counts


def test_degrees_are_heavy_tailed_with_the_published_hubs():
    scale = 0.02
    g = sg.generate(sg.SPECS["mag"], scale, seed=0)
    names = g.relation_names
    rng = np.random.default_rng(0)
    for rel, end, hub in (("has_topic", "dst", 300_000), ("cites", "dst", 30_000)):
        r = names.index(rel)
        lo, hi = g.rel_offsets[r], g.rel_offsets[r + 1]
        spec_rel = sg.SPECS["mag"].relations[r]
        t = spec_rel.dst if end == "dst" else spec_rel.src
        n = g.ntype_counts[t]
        deg = np.bincount(getattr(g, end)[lo:hi] - g.ntype_offsets[t], minlength=n)
        # Uniform endpoints (numpy's sampler) have a max degree near the mean; ours has hubs.
        uniform = np.bincount(rng.integers(0, n, hi - lo), minlength=n)
        assert deg.max() > 8 * uniform.max()
        # The largest hub keeps its full-size share of the relation (the "half" form halves
        # the published relation, and its hub with it).
        expected = hub / MAG_EDGES[rel] * (hi - lo)
        assert abs(deg.max() - expected) < 0.25 * expected + 3 * math.sqrt(expected)
        # Heavy tail: the top 1% of the nodes hold far more than 1% of the edges.
        top = np.sort(deg)[::-1][: max(1, n // 100)].sum()
        assert top > 0.05 * (hi - lo)
    # Both ends: the sources of writes (the authors) are skewed too, though less.
    r = names.index("writes")
    lo, hi = g.rel_offsets[r], g.rel_offsets[r + 1]
    deg = np.bincount(g.src[lo:hi])
    assert deg.max() > 3 * (hi - lo) / g.ntype_counts[1]
    # wikikg2: one entity receives far more than a uniform draw would give it
    w = sg.generate(sg.SPECS["wikikg2"], 0.005, seed=0)
    deg = np.bincount(w.dst, minlength=w.num_nodes)
    assert deg.max() > 50 * w.num_edges / w.num_nodes


def test_generation_needs_the_result_plus_a_few_blocks():
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        g = sg.generate(sg.SPECS["mag"], 0.02, seed=0, block=4096)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert g.nbytes <= peak <= g.nbytes + 64 * 4096 * 8


def test_cache_round_trip_atomic_and_bounded(tmp_path):
    spec = sg.SPECS["mag"]
    a = sg.generate(spec, 0.001, seed=1)
    key_a = sg.cache_key(spec, 0.001, 1)
    assert sg.save(a, tmp_path, key_a, limit=10 * a.nbytes, stats={"x": 1})
    loaded, stats = sg.load(tmp_path, key_a)
    assert stats == {"x": 1} and loaded.rel_counts == a.rel_counts
    for k in ("src", "dst", "etype", "ntype"):
        assert np.array_equal(getattr(loaded, k), getattr(a, k))
    assert sg.cached_meta(tmp_path, key_a)["num_edges"] == a.num_edges
    # a second graph under a limit for one: the first is evicted
    b = sg.generate(spec, 0.0012, seed=1)
    key_b = sg.cache_key(spec, 0.0012, 1)
    assert sg.save(b, tmp_path, key_b, limit=b.nbytes + a.nbytes // 2)
    assert sg.load(tmp_path, key_a) is None and sg.load(tmp_path, key_b) is not None
    # one that does not fit at all is not written, and nothing else is lost
    assert not sg.save(b, tmp_path, "too-big", limit=b.nbytes // 2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [key_b]
    # load_or_generate: a hit is the same graph
    g, _, how = sg.load_or_generate(spec, 0.0012, 1, tmp_path, 1 << 30)
    assert how == "cache" and np.array_equal(g.dst, b.dst)
    g, _, how = sg.load_or_generate(spec, 0.0013, 1, tmp_path, 1 << 30, store=False)
    assert how == "generated" and sg.load(tmp_path, sg.cache_key(spec, 0.0013, 1)) is None


def _child(tmp_path, code):
    script = tmp_path / "child.py"
    script.write_text(f"import sys; sys.path.insert(0, {str(TOOLS)!r})\n" + code)
    return [sys.executable, str(script)]


def test_runner_reports_a_process_over_its_cap_as_out_of_memory(tmp_path):
    cap = 256 << 20
    # Under the address-space limit the allocation fails inside the process (MemoryError) ...
    argv = _child(tmp_path, "import bench_scale, numpy\nbench_scale.apply_cap(%d)\n"
                            "a = numpy.ones(%d // 8)\n" % (cap, 2 * cap))
    log = tmp_path / "a.log"
    out = bench_scale.run_capped(argv, {}, cap, 60, log)
    assert out["returncode"] == 1 and out["killed"] is None
    note = bench_scale.classify_exit(out, {"phase": "train"}, bench_scale.log_tail(log), cap, 60)
    assert note.startswith("OOM at 0.25 GiB cap") and "train" in note
    # ... and a process that grows past the cap without it is killed by the watchdog.
    argv = _child(tmp_path, "import numpy, time\na = numpy.ones(%d // 8)\ntime.sleep(30)\n"
                            % (2 * cap))
    out = bench_scale.run_capped(argv, {}, cap, 60, tmp_path / "b.log")
    assert out["killed"] == "cap" and out["max_rss"] > cap and out["wall_s"] < 20
    note = bench_scale.classify_exit(out, {"phase": "infer"}, "", cap, 60)
    assert note.startswith("OOM at 0.25 GiB cap") and "infer" in note
    # An allocation under the cap succeeds.
    argv = _child(tmp_path, "import bench_scale, numpy\nbench_scale.apply_cap(%d)\n"
                            "a = numpy.ones(%d // 8)\n" % (cap, cap // 4))
    assert bench_scale.run_capped(argv, {}, cap, 60, tmp_path / "c.log")["returncode"] == 0


def test_runner_reports_a_timeout_and_a_crash(tmp_path):
    argv = _child(tmp_path, "import time\ntime.sleep(30)\n")
    out = bench_scale.run_capped(argv, {}, None, 0.5, tmp_path / "a.log")
    assert out["killed"] == "timeout" and out["wall_s"] < 10
    assert bench_scale.classify_exit(out, {"phase": "train"}, "", None, 0.5) == "> 0.5 s (in train)"
    argv = _child(tmp_path, "raise SystemExit('boom')\n")
    log = tmp_path / "b.log"
    out = bench_scale.run_capped(argv, {}, None, 60, log)
    note = bench_scale.classify_exit(out, {"phase": "graph"}, bench_scale.log_tail(log), None, 60)
    assert note == "crashed (exit 1) in graph: boom"
    # a finished process is no note
    assert bench_scale.classify_exit({"returncode": 0, "killed": None}, {"phase": "done"}, "",
                                     None, 60) is None


def test_oom_messages_are_recognised():
    assert bench_scale.is_oom(MemoryError())
    msg = ("DefaultCPUAllocator: not enough memory: you tried to allocate 370440929280 bytes.")
    assert bench_scale.is_oom(RuntimeError(msg)) and bench_scale.is_oom("std::bad_alloc")
    assert not bench_scale.is_oom(RuntimeError("index 5 is out of bounds"))
    assert bench_scale.oom_text(msg, 23 << 30) == ("OOM at 23 GiB cap (one allocation of "
                                                   "345 GiB)")


def test_synth_graphs_command_line():
    r = subprocess.run([sys.executable, str(TOOLS / "synth_graphs.py"), "mag4", "--scale",
                        "0.001"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert '"edges": 21111' in r.stdout and '"relations": 4' in r.stdout
    r = subprocess.run([sys.executable, str(TOOLS / "synth_graphs.py"), "nope"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown graph 'nope'" in r.stderr


def _row(impl, scale, E, train_s, rows, grads=None, peak=None):
    return {"graph": "mag", "scale": scale, "model": "rgcn", "impl": impl, "E": E, "N": 10,
            "notes": [], "train": {"s": train_s}, "infer": {"s": train_s / 4},
            "peak_mem": peak, "_fingerprint": {"sample_rows": [0, 3], "out_rows": rows,
                                               "grad_samples": grads}}


def test_report_compares_the_sides_and_computes_growth_per_doubling():
    ours = _row("hector", 0.25, 400, 1.0, [[1.0, 2.0], [3.0, 4.0]], {"W": [1.0, 2.0]}, 100)
    same = _row("pyg", 0.25, 400, 3.0, [[1.0, 2.0], [3.0, 4.0 + 1e-6]], {"W": [1.0, 2.0]}, 300)
    off = _row("pyg_fast", 0.25, 400, 3.0, [[1.0, 2.0], [3.0, 4.1]], {"W": [1.0, 2.5]}, 300)
    bench_scale.add_checks([ours, same, off])
    assert same["forward_rel_err"] == pytest.approx(2.5e-7) and same["notes"] == []
    assert off["forward_rel_err"] == pytest.approx(0.1 / 4.1)   # relative to PyG's values
    assert off["grad_rel_err"] == pytest.approx(0.5 / 2.5)
    assert any("outputs differ" in n for n in off["notes"])
    assert any("gradients differ" in n for n in off["notes"])
    # E grows 4x (two doublings) and the time 4x: 2x per doubling; memory 8x: 2.83x
    big = _row("hector", 1.0, 1600, 4.0, None, None, 800)
    args = type("Args", (), {"device": "cpu"})()
    lines = bench_scale.growth([ours, big], args)
    assert "| 4.00 | 4.00x (2.00x/doubling) | 4.00x (2.00x/doubling) | 8.00x (2.83x/doubling)" \
        in lines[-1]
    ratio = bench_scale.ratios([ours, same], args)[-1]
    assert "| RGCNConv | 3.00x | 3.00x | 3.00x |" in ratio


def test_precision_benchmark_compares_float32_with_autocast(tmp_path):
    """tools/bench_precision.py end to end on a tiny graph, ours only: both runs measured, and
    the bfloat16-autocast output within bfloat16 resolution of the float32 one."""
    import json
    out = tmp_path / "precision.json"
    r = subprocess.run([sys.executable, str(TOOLS / "bench_precision.py"), "--scales", "0.002",
                        "--models", "rgcn", "--impls", "hector", "--repeats", "1",
                        "--budget", "2", "--json", str(out)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) == 1 and rows[0]["model"] == "rgcn"
    row = rows[0]
    assert row["train_float32_s"] > 0 and row["train_half_s"] > 0
    assert row["output_err"] is not None and 0 < row["output_err"] <= 2 ** -7
    assert "torch.mm GFLOP/s" in r.stdout


def test_precision_benchmark_relative_error():
    sys.path.insert(0, str(TOOLS))
    import bench_precision
    assert bench_precision.rel_err([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.4]]) == \
        pytest.approx(0.4 / 4.4)
    assert bench_precision.rel_err(None, [1.0]) is None
    assert bench_precision.rel_err([1.0], [1.0, 2.0]) is None
