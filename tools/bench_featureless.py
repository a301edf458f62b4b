#!/usr/bin/env python3
"""Featureless RGCN (PyG's `x=None`: node v's input is row v of the weights) at growing sizes:
hector.nn.RGCNConv with the weight-row read fused into the kernels (`src_row`), the same layer
with PyG's gather (an index tensor x = arange: W viewed as [R * N, out], an [E, out]
index_select, then the compiled sum), and PyG's RGCNConv. One training step is forward, a
mean-square loss and backward; every (size, implementation) runs in its own process, which
reports the median step time and its peak resident memory (VmHWM) above the memory it held
before the graph and the layer were made.

    .venv/bin/python tools/bench_featureless.py                      # the default sizes
    .venv/bin/python tools/bench_featureless.py --nodes 50000 --degree 10 --repeats 5

Prints a markdown table (docs/benchmarks.md, "Featureless RGCN"): time and peak per step, and
the ratios of the gather path and PyG to the fused path. HECTOR_BUILD_DIR as for the tests.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
IMPLS = {"fused": "hector, src_row (fused)", "gather": "hector, index_select gather",
         "pyg": "PyG RGCNConv"}


def vm_hwm() -> int:
    """The peak resident memory of this process in bytes."""
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def child(impl: str, nodes: int, degree: int, relations: int, out: int, repeats: int) -> dict:
    import torch

    torch.manual_seed(0)
    # The reference point: what the process holds before the graph and the layer exist.
    if impl == "pyg":
        import torch_geometric
        from torch_geometric.nn import RGCNConv
        torch_geometric.backend.use_segment_matmul = False
    else:
        sys.path.insert(0, str(ROOT / "runtime" / "python"))
        import hector  # noqa: F401
        from hector.nn import RGCNConv
        RGCNConv(4, 2, 2)    # the compile happens in the warm-up; import the runtime now
    base = vm_hwm()
    edges = nodes * degree
    g = torch.Generator().manual_seed(1)
    src = torch.randint(0, nodes, (edges,), generator=g)
    dst = torch.randint(0, nodes, (edges,), generator=g)
    etype = torch.randint(0, relations, (edges,), generator=g)
    edge_index = torch.stack([src, dst])
    conv = RGCNConv(nodes, out, relations)
    x = torch.arange(nodes) if impl == "gather" else None
    target = torch.randn(nodes, out, generator=g)
    opt = torch.optim.SGD(conv.parameters(), lr=0.0)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = (conv(x, edge_index, etype) - target).square().mean()
        loss.backward()
        return float(loss)

    start = time.perf_counter()
    step()                               # compiles (cached afterwards) and prepares the graph
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return {"impl": impl, "nodes": nodes, "edges": edges, "relations": relations, "out": out,
            "first_s": first, "step_s": statistics.median(times),
            "peak_bytes": vm_hwm() - base, "threads": torch.get_num_threads()}


def run(impl: str, args) -> dict:
    cmd = [sys.executable, __file__, "--child", impl, "--nodes", str(args.n), "--degree",
           str(args.degree), "--relations", str(args.relations), "--out", str(args.out),
           "--repeats", str(args.repeats)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if r.returncode != 0:
        return {"impl": impl, "nodes": args.n, "error": (r.stderr or r.stdout).strip()[-300:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", choices=sorted(IMPLS))
    ap.add_argument("--nodes", default="25000,100000,400000",
                    help="node counts (comma list); in_channels = the node count")
    ap.add_argument("--degree", type=int, default=10, help="edges per node")
    ap.add_argument("--relations", type=int, default=8)
    ap.add_argument("--out", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    if args.child:
        result = child(args.child, int(args.nodes), args.degree, args.relations, args.out,
                       args.repeats)
        print(json.dumps(result))
        return 0
    rows = []
    for n in [int(v) for v in args.nodes.split(",")]:
        args.n = n
        for impl in IMPLS:
            row = run(impl, args)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1))
    print("| nodes | edges | implementation | step | peak above baseline | "
          "step / fused | peak / fused |")
    print("|---|---|---|---|---|---|---|")
    fused = {r["nodes"]: r for r in rows if r["impl"] == "fused" and "error" not in r}
    for r in rows:
        if "error" in r:
            print(f"| {r['nodes']:,} | | {IMPLS[r['impl']]} | error: {r['error']} | | | |")
            continue
        f = fused.get(r["nodes"])
        ratio_t = f"{r['step_s'] / f['step_s']:.2f}x" if f else "-"
        ratio_m = f"{r['peak_bytes'] / f['peak_bytes']:.2f}x" if f and f["peak_bytes"] else "-"
        print(f"| {r['nodes']:,} | {r['edges']:,} | {IMPLS[r['impl']]} | "
              f"{r['step_s'] * 1e3:,.1f} ms | {r['peak_bytes'] / 2**20:,.0f} MiB | {ratio_t} | "
              f"{ratio_m} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
