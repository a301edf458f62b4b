"""Activation memory and step time: spilling off / on / adaptive vs save_on_cpu and checkpointing.

    python tools/bench_spill.py                       # CPU (and CUDA when present), small sizes
    python tools/bench_spill.py --device cuda --dim 1024 --layers 12 --seq 1024 --batch 4 \
        --warmup 1 --steps 3 --budget 8      # the GPU check (H200), sized for about a minute
    python tools/bench_spill.py --json out.json

Trains the GPT-style transformer of examples/transformer_spill.py for a few steps per mode, all in
one run, and prints one table per device. "peak act" is the peak memory above the level before the
step (parameters, gradients and optimiser state are allocated in the warm-up step):
torch.cuda.max_memory_allocated on CUDA; on the CPU, glibc's in-use bytes (mallinfo2) sampled
every 0.5 ms by a thread and at every module boundary. "saved" is hector's own count of saved
bytes resident in memory at its peak.

Each table ends with the verdict against the target of the original work (SSDTrain), for spill
and adaptive: activation peak at least 40 % below spilling off, step time less than 10 % above
it. The target is stated for a GPU; on the CPU the verdict is printed for information. The JSON
records the rows, the verdicts ("targets") and how CUDA tensors were written ("cufile").
"""
import argparse
import ctypes
import os
import json
import pathlib
import statistics
import sys
import tempfile
import threading
import time

import torch
import torch.utils.checkpoint

_repo = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_repo / "runtime" / "python"))
sys.path.insert(0, str(_repo / "examples"))
import hector  # noqa: E402
import transformer_spill as tx  # noqa: E402


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


class CpuPeak:
    """Peak of glibc's in-use heap bytes during a region (sampling thread + module hooks)."""

    def __init__(self):
        libc = ctypes.CDLL("libc.so.6")
        self._mallinfo2 = libc.mallinfo2
        self._mallinfo2.restype = _MallInfo2
        self.peak = 0
        self._stop = threading.Event()
        self._hooks = []

    def now(self):
        m = self._mallinfo2()
        return m.uordblks + m.hblkhd

    def sample(self, *_):
        v = self.now()
        if v > self.peak:
            self.peak = v

    def __enter__(self):
        self.base = self.now()
        self.peak = self.base
        mm = torch.nn.modules.module
        self._hooks = [mm.register_module_forward_pre_hook(lambda m, a: self.sample()),
                       mm.register_module_forward_hook(lambda m, a, o: self.sample())]
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            time.sleep(0.0005)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for h in self._hooks:
            h.remove()
        self.sample()

    @property
    def bytes(self):
        return self.peak - self.base


class CudaPeak:
    def __enter__(self):
        torch.cuda.synchronize()
        self.base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc):
        torch.cuda.synchronize()
        self.bytes = torch.cuda.max_memory_allocated() - self.base


class CheckpointedGPT(torch.nn.Module):
    """The same model with every block recomputed in backward (torch.utils.checkpoint)."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, idx, targets):
        g = self.gpt
        x = g.tok(idx) + g.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in g.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        logits = g.head(g.ln(x))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                 targets.reshape(-1))


# The target of the original work: peak at most this fraction of "off", step time below this one.
TARGET_PEAK_RATIO = 0.60
TARGET_STEP_RATIO = 1.10


def run_mode(mode, args, device, spill_dir):
    model = tx.build_model(vocab=args.vocab, dim=args.dim, heads=args.heads, layers=args.layers,
                           seq=args.seq, device=device)
    batch = tx.make_batch(args.batch, args.seq, args.vocab, device=device)
    net = CheckpointedGPT(model) if mode == "checkpoint" else model
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if mode in ("spill", "adaptive"):
        ctx = hector.spill(dir=spill_dir, threshold_bytes=args.threshold, prefetch=args.prefetch,
                           adaptive=mode == "adaptive", keep_last=1,
                           io_threads=args.io_threads, model=model)
    elif mode == "save_on_cpu":
        ctx = torch.autograd.graph.save_on_cpu(pin_memory=device == "cuda")
    else:
        ctx = None
    times, peaks = [], []

    def step():
        opt.zero_grad(set_to_none=False)
        loss = net(*batch)
        loss.backward()
        opt.step()

    def loop():
        start = None
        for i in range(args.warmup + args.steps):
            if i == args.warmup:
                start = time.perf_counter()
            elif (args.budget is not None and times
                  and time.perf_counter() - start > args.budget):
                break           # keeps a run on a slow disk within its time
            sync()
            meter = CudaPeak() if device == "cuda" else CpuPeak()
            t0 = time.perf_counter()
            with meter:
                step()
                sync()
            dt = time.perf_counter() - t0
            if i >= args.warmup:
                times.append(dt)
                peaks.append(meter.bytes)

    if ctx is None:
        loop()
    else:
        with ctx:
            loop()
    stats = ctx.stats if hasattr(ctx, "stats") else {}
    row = dict(mode=mode, step_s=statistics.median(times), steps=len(times), peak_bytes=max(peaks),
               saved_peak=stats.get("peak_resident_bytes"),
               written=stats.get("bytes_written"), io=getattr(ctx, "io_mode", ""))
    if mode in ("spill", "adaptive"):
        row["stats"] = stats
        if device == "cuda":
            row["cufile"] = ctx.cufile_status()
    return row


def verdicts(rows):
    """spill and adaptive against the target, relative to "off" (None without an "off" row)."""
    base = next((r for r in rows if r["mode"] == "off"), None)
    if base is None:
        return {}
    out = {}
    for r in rows:
        if r["mode"] not in ("spill", "adaptive"):
            continue
        peak = r["peak_bytes"] / max(base["peak_bytes"], 1)
        step = r["step_s"] / base["step_s"]
        out[r["mode"]] = dict(peak_ratio=round(peak, 4), step_ratio=round(step, 4),
                              peak_ok=peak <= TARGET_PEAK_RATIO, step_ok=step < TARGET_STEP_RATIO,
                              passed=peak <= TARGET_PEAK_RATIO and step < TARGET_STEP_RATIO)
    return out


def print_table(device, rows, args, targets):
    base = next((r for r in rows if r["mode"] == "off"), rows[0])
    counts = sorted({r["steps"] for r in rows})
    steps = "/".join(map(str, counts))
    print(f"\n{device}: GPT layers={args.layers} dim={args.dim} heads={args.heads} seq={args.seq} "
          f"batch={args.batch}, median of {steps} steps after {args.warmup} warm-up")
    print(f"{'mode':<12} {'step ms':>9} {'x off':>7} {'peak act MiB':>13} {'x off':>7} "
          f"{'saved MiB':>10} {'written MiB':>12}  io")
    for r in rows:
        saved = "" if r["saved_peak"] is None else f"{r['saved_peak'] / 2**20:.1f}"
        written = "" if r["written"] is None else f"{r['written'] / 2**20:.1f}"
        print(f"{r['mode']:<12} {r['step_s'] * 1e3:9.1f} {r['step_s'] / base['step_s']:7.2f} "
              f"{r['peak_bytes'] / 2**20:13.1f} {r['peak_bytes'] / max(base['peak_bytes'], 1):7.2f} "
              f"{saved:>10} {written:>12}  {r['io']}")
    cufile = next((r["cufile"] for r in rows if "cufile" in r), None)
    if cufile is not None:
        print(f"cuFile: {cufile}")
    note = "" if device == "cuda" else "  (the target is stated for a GPU; for information)"
    for mode, v in targets.items():
        print(f"target {mode}: {'PASS' if v['passed'] else 'FAIL'}: peak {v['peak_ratio']:.2f}x off "
              f"({'ok' if v['peak_ok'] else 'not'} <= {TARGET_PEAK_RATIO:.2f}), step "
              f"{v['step_ratio']:.2f}x off ({'ok' if v['step_ok'] else 'not'} < "
              f"{TARGET_STEP_RATIO:.2f}){note}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cpu", "cuda", "all"], default="all",
                   help="all: the CPU, and CUDA when available")
    p.add_argument("--dir", default=None, help="spill directory (default: a new one under /tmp)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--budget", type=float, default=None,
                   help="seconds per mode after the warm-up: stop measuring steps after this "
                        "(at least one is measured)")
    p.add_argument("--threshold", type=int, default=1 << 20)
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--io-threads", type=int, default=2)
    p.add_argument("--modes", default="off,spill,adaptive,save_on_cpu,checkpoint")
    p.add_argument("--json", default=None, help="also write the results to this file")
    args = p.parse_args()

    devices = ["cpu"] if args.device == "cpu" else ["cuda"] if args.device == "cuda" else (
        ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    results, targets = {}, {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hector-bench-", dir=args.dir) as spill_dir:
        for device in devices:
            rows = [run_mode(m, args, device, spill_dir) for m in args.modes.split(",")]
            targets[device] = verdicts(rows)
            print_table(device, rows, args, targets[device])
            results[device] = rows
            leftover = os.listdir(spill_dir)
            assert not leftover, f"spill files left behind: {leftover}"
    elapsed = time.perf_counter() - start
    print(f"\n{elapsed:.1f} s in all")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            dict(args=vars(args), results=results, targets=targets,
                 target=dict(peak_ratio_max=TARGET_PEAK_RATIO, step_ratio_below=TARGET_STEP_RATIO),
                 elapsed_s=round(elapsed, 1)), indent=2))


if __name__ == "__main__":
    main()
