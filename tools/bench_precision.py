"""Float32 against 16-bit training: every layer under torch.autocast against the same run in
float32, ours and PyG's, on the synthetic graphs of tools/bench_scale.py, with the hardware's
own rates beside them.

    python tools/bench_precision.py                                  # mag at 1/8, every model
    python tools/bench_precision.py --scales 0.01,0.125,1 --impls hector
    python tools/bench_precision.py --autocast float16 --models rgcn --json out.json
    python tools/bench_precision.py --device cuda --scales 1 --packages gpu-packages  # GPU check

For each (graph, scale, model, implementation) tools/bench_scale.py runs twice, each row in its
own process under its memory cap: in float32, then with every layer under
`torch.autocast(device, dtype=--autocast)` (float32 weights and inputs outside it, as a training
script has them; the loss in float32). The table gives both training steps and inferences,
their ratio (above 1x the 16-bit run is faster), both peaks, and how far the 16-bit run's output
at the sampled rows (and its sampled weight gradients, where bench_scale records them) is from
the float32 run's, relative to the largest sampled value.

The GEMM template alone (tools/bench_gemm.cpp, target hector-bench-gemm, built with
-march=native): the three segmented GEMM instances of a layer's training step at the largest
graph's shapes (rows = its edges, gathered from its nodes), in float32 and bfloat16 (on AMX
tiles where the CPU has them, and on the vector kernels), beside torch.mm at the same shapes.

Beside them, measured in this process with the same threads: PyTorch's own GEMM
(`torch.mm`, [rows, hidden] x [hidden, hidden], rows the graph's node and edge counts) in
float32 and in the 16-bit dtype, in GFLOP/s, and a streaming copy of an [edges, hidden] float32
tensor, in GB/s: the rates a layer's GEMM instances and traversals would have to reach. The
per-kernel times of one training step come from bench_scale's --profile.

Accuracy of training under autocast (a small graph, where the time is overhead):
`python examples/train_entities.py --model rgat --seeds 5 --autocast bfloat16`.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
GiB = 1 << 30


def run_scale(args, autocast: str | None, out: pathlib.Path) -> dict:
    cmd = [sys.executable, str(ROOT / "tools" / "bench_scale.py"), "--graphs", args.graphs,
           "--scales", args.scales, "--models", args.models, "--impls", args.impls,
           "--threads", str(args.threads), "--repeats", str(args.repeats),
           "--budget", str(args.budget), "--cap-gib", str(args.cap_gib),
           "--device", args.device, "--hidden", str(args.hidden), "--heads", str(args.heads),
           "--seed", str(args.seed), "--samples", "--json", str(out)]
    if autocast:
        cmd += ["--autocast", autocast]
    if args.profile:
        cmd += ["--profile", str(args.profile)]
    if args.packages:
        cmd += ["--packages", str(args.packages)]
    if args.timeout:
        cmd += ["--timeout", str(args.timeout)]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0 or not out.exists():
        raise SystemExit(f"bench_scale.py failed (exit {r.returncode})")
    return json.loads(out.read_text())


def rel_err(a, b):
    """max |a - b| / max |b| over nested lists of numbers, or None."""
    if not a or not b:
        return None
    fa, fb = [], []

    def flat(x, into):
        if isinstance(x, (list, tuple)):
            for y in x:
                flat(y, into)
        else:
            into.append(float(x))
    flat(a, fa)
    flat(b, fb)
    if len(fa) != len(fb) or not fb:
        return None
    scale = max(abs(v) for v in fb) or 1.0
    return max(abs(x - y) for x, y in zip(fa, fb)) / scale


def hardware_rates(args, sizes: list[tuple[str, int]], dtype_name: str) -> list[str]:
    """torch.mm GFLOP/s in float32 and dtype at [rows, hidden] x [hidden, hidden], and a
    streaming copy's GB/s, as table rows."""
    import torch
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    h = args.hidden

    def best(fn, n=5):
        fn()
        sync()
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    lines = ["| what | rows | float32 | " + dtype_name + " | ratio |", "|---|---:|---:|---:|---:|"]
    for what, rows in sizes:
        rates = []
        for dt in (torch.float32, getattr(torch, dtype_name)):
            a = torch.randn(rows, h, device=dev).to(dt)
            b = torch.randn(h, h, device=dev).to(dt)
            c = torch.empty(rows, h, device=dev, dtype=dt)
            s = best(lambda: torch.mm(a, b, out=c))
            rates.append(2.0 * rows * h * h / s / 1e9)
            del a, b, c
        lines.append(f"| torch.mm GFLOP/s | {rows:,} ({what}) x {h} x {h} | {rates[0]:.0f} | "
                     f"{rates[1]:.0f} | {rates[1] / rates[0]:.2f}x |")
    rows = max(r for _, r in sizes)
    x = torch.randn(rows, h, device=dev)
    y = torch.empty_like(x)
    s = best(lambda: y.copy_(x))
    lines.append(f"| copy GB/s (read + write) | {rows:,} x {h} float32 | {2 * x.nbytes / s / 1e9:.1f} "
                 "| | |")
    return lines


# Relations of bench_scale's graphs: the segments of the GEMM benchmark.
RELATIONS = {"mag": 8, "mag4": 4, "mag_undirected": 8, "wikikg2": 535}


def gemm_rates(args, graph: str, nodes: int, edges: int, dtype_name: str) -> list[str]:
    """Our CPU GEMM template (hector-bench-gemm: every instance of a layer's training step,
    gathering its rows as the emitted code does) beside torch.mm at the same shapes, as table
    rows; [] when the benchmark cannot be built (no -march=native compiler)."""
    import torch
    build = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", ROOT / "build"))
    r = subprocess.run(["cmake", "--build", str(build), "--target", "hector-bench-gemm"],
                       capture_output=True, text=True)
    exe = build / "bin" / "hector-bench-gemm"
    if r.returncode != 0 or not exe.is_file():
        print(f"hector-bench-gemm not built: {(r.stdout + r.stderr).strip()[-300:]}")
        return []
    h = args.hidden
    segments = RELATIONS.get(graph, 8)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    r = subprocess.run([str(exe), str(edges), str(h), str(h), str(segments), str(nodes), "5"],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"hector-bench-gemm failed: {r.stderr.strip()[-300:]}")
        return []
    ours = {}
    for line in r.stdout.splitlines():
        m = json.loads(line)
        ours[(m["op"], m["dtype"], m["path"])] = m["gflops"]

    torch.set_num_threads(args.threads)

    def torch_rate(op, dt):
        # Outputs preallocated, as ours are.
        a = torch.randn(edges, h).to(dt)
        w = torch.randn(h, h).to(dt)
        if op == "weight_grad":
            c = torch.empty(h, h, dtype=dt)
            fn = lambda: torch.mm(a.t(), a, out=c)              # noqa: E731  [h, E] x [E, h]
        else:
            c = torch.empty(edges, h, dtype=dt)
            wt = w.t() if op == "input_grad" else w
            fn = lambda: torch.mm(a, wt, out=c)                 # noqa: E731
        fn()
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 2.0 * edges * h * h / statistics.median(times) / 1e9

    def cell(v):
        return "-" if v is None else f"{v:.0f}"

    def ratio(a, b):
        return "-" if a is None or b is None else f"{a / b:.2f}"
    lines = [f"| GEMM instance | shape | ours float32 | torch float32 | ratio | ours {dtype_name} "
             f"(AMX) | ours {dtype_name} (vector) | torch {dtype_name} | ratio (best of ours) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    shapes = {"forward": f"gather({edges:,} of {nodes:,}) x {h} x {h}",
              "input_grad": f"{edges:,} x {h} x {h}^T",
              "weight_grad": f"gather({edges:,})^T x {edges:,} x {h}"}
    half = getattr(torch, dtype_name)
    for op in ("forward", "input_grad", "weight_grad"):
        f32 = ours.get((op, "float32", "vector"))
        amx = ours.get((op, "bfloat16", "amx")) if dtype_name == "bfloat16" else None
        vec = ours.get((op, "bfloat16", "vector")) if dtype_name == "bfloat16" else None
        t32, t16 = torch_rate(op, torch.float32), torch_rate(op, half)
        best = max((v for v in (amx, vec) if v is not None), default=None)
        lines.append(f"| {op} | {shapes[op]}, {segments} segments | {cell(f32)} | {cell(t32)} | "
                     f"{ratio(f32, t32)} | {cell(amx)} | {cell(vec)} | {cell(t16)} | "
                     f"{ratio(best, t16)} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", default="mag")
    ap.add_argument("--scales", default="0.125")
    ap.add_argument("--models", default="rgcn,rgat,rgat_pyg,hgt")
    ap.add_argument("--impls", default="hector,pyg")
    ap.add_argument("--autocast", choices=["bfloat16", "float16"], default="bfloat16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=20.0)
    ap.add_argument("--cap-gib", type=float, default=23.0)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="also profile one training step of each run (bench_scale --profile)")
    ap.add_argument("--packages", type=pathlib.Path, default=None,
                    help="bench_scale --packages: ours from hectorc packages (a GPU machine "
                         "without hectorc; tools/gpu-check.sh)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="bench_scale --timeout: seconds per measuring process")
    ap.add_argument("--json", type=pathlib.Path, default=None)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-precision-") as tmp:
        single = run_scale(args, None, pathlib.Path(tmp) / "float32.json")
        half = run_scale(args, args.autocast, pathlib.Path(tmp) / "half.json")

    key = lambda r: (r["graph"], r["scale"], r["model"], r["impl"])   # noqa: E731
    base = {key(r): r for r in single["rows"]}
    heads = ["graph", "scale", "N", "E", "model", "impl", "float32 train s",
             f"{args.autocast} train s", "train float32 / 16-bit", "float32 infer s",
             f"{args.autocast} infer s", "float32 peak GiB", f"{args.autocast} peak GiB",
             "output err", "grad err"]
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    results = []

    def secs(m):
        return m.get("s") if isinstance(m, dict) else None

    def cell(v, fmt="{:.3g}"):
        return "-" if v is None else fmt.format(v)
    sizes = {}
    for r in half["rows"]:
        b = base.get(key(r))
        if b is None:
            continue
        sa, sb = r.get("samples") or {}, b.get("samples") or {}
        out_err = (rel_err(sa.get("out_rows"), sb.get("out_rows"))
                   if sa.get("sample_rows") == sb.get("sample_rows") else None)
        ga, gb = sa.get("grad_samples") or {}, sb.get("grad_samples") or {}
        grad_errs = [e for e in (rel_err(ga.get(k), gb.get(k)) for k in gb) if e is not None]
        grad_err = max(grad_errs) if grad_errs else None
        t32, t16 = secs(b.get("train")), secs(r.get("train"))
        # The peak: resident set on the CPU, PyTorch's GPU allocations of training on CUDA.
        peak_key = "cuda_peak_train" if args.device == "cuda" else "peak_rss"
        p32, p16 = b.get(peak_key), r.get(peak_key)
        res = {"graph": r["graph"], "scale": r["scale"], "model": r["model"], "impl": r["impl"],
               "N": r.get("N"), "E": r.get("E"), "train_float32_s": t32, "train_half_s": t16,
               "infer_float32_s": secs(b.get("infer")), "infer_half_s": secs(r.get("infer")),
               "peak_float32": p32, "peak_half": p16,
               "output_err": out_err, "grad_err": grad_err,
               "notes": (b.get("notes") or []) + (r.get("notes") or [])}
        results.append(res)
        if r.get("N") and r.get("E"):
            sizes[(r["graph"], r["scale"])] = (r["N"], r["E"])
        out.append("| " + " | ".join([
            r["graph"], f"{r['scale']:g}", cell(r.get("N"), "{:,}"), cell(r.get("E"), "{:,}"),
            r["model"], r["impl"], cell(t32), cell(t16),
            cell(t32 / t16 if t32 and t16 else None, "{:.2f}x"),
            cell(res["infer_float32_s"]), cell(res["infer_half_s"]),
            cell(p32 and p32 / GiB), cell(p16 and p16 / GiB),
            cell(out_err, "{:.1e}"), cell(grad_err, "{:.1e}")]) + " |")
    print(f"\n{args.device}, float32 against float32 weights under {args.autocast} autocast, "
          f"hidden {args.hidden}, {args.heads} heads, {args.threads} threads; revision "
          f"{single['meta']['machine'].get('revision', '?')}\n")
    print("\n".join(out))
    rate_sizes = []
    for (g, s), (n, e) in sorted(sizes.items()):
        rate_sizes += [(f"{g} {s:g} nodes", n), (f"{g} {s:g} edges", e)]
    rates = hardware_rates(args, rate_sizes[-2:], args.autocast) if rate_sizes else []
    if rates:
        print("\nThe hardware's own rates at the largest graph's shapes (this process, "
              f"{args.threads} threads):\n")
        print("\n".join(rates))
    gemms = []
    if args.device == "cpu" and sizes:
        (g, s), (n, e) = max(sizes.items(), key=lambda kv: kv[1][1])
        gemms = gemm_rates(args, g, n, e, args.autocast)
        if gemms:
            print(f"\nThe GEMM template at the layer's shapes ({g} {s:g}), in GFLOP/s, beside "
                  "torch.mm at the same shapes (ours includes the row gather; "
                  f"{args.threads} threads):\n")
            print("\n".join(gemms))
    if args.json:
        args.json.write_text(json.dumps({"meta": {"args": {k: str(v) for k, v in
                                                            vars(args).items()},
                                                  "machine": single["meta"]["machine"]},
                                         "rows": results, "rates": rates,
                                         "gemm_rates": gemms}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
