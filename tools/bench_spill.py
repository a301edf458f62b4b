"""Activation memory and step time: spilling off / on / adaptive vs save_on_cpu and checkpointing.

    python tools/bench_spill.py                       # CPU (and CUDA when present), small sizes
    python tools/bench_spill.py --device cuda --dim 1024 --layers 12 --seq 1024 --batch 8
    python tools/bench_spill.py --json out.json

Trains the GPT-style transformer of examples/transformer_spill.py for a few steps per mode, all in
one run, and prints one table per device. "peak act" is the peak memory above the level before the
step (parameters, gradients and optimiser state are allocated in the warm-up step):
torch.cuda.max_memory_allocated on CUDA; on the CPU, glibc's in-use bytes (mallinfo2) sampled
every 0.5 ms by a thread and at every module boundary. "saved" is hector's own count of saved
bytes resident in memory at its peak.
"""
import argparse
import ctypes
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
        for i in range(args.warmup + args.steps):
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
    return dict(mode=mode, step_s=statistics.median(times), peak_bytes=max(peaks),
                saved_peak=stats.get("peak_resident_bytes"),
                written=stats.get("bytes_written"), io=getattr(ctx, "io_mode", ""))


def print_table(device, rows, args):
    base = next(r for r in rows if r["mode"] == "off")
    print(f"\n{device}: GPT layers={args.layers} dim={args.dim} heads={args.heads} seq={args.seq} "
          f"batch={args.batch}, median of {args.steps} steps after {args.warmup} warm-up")
    print(f"{'mode':<12} {'step ms':>9} {'x off':>7} {'peak act MiB':>13} {'x off':>7} "
          f"{'saved MiB':>10} {'written MiB':>12}  io")
    for r in rows:
        saved = "" if r["saved_peak"] is None else f"{r['saved_peak'] / 2**20:.1f}"
        written = "" if r["written"] is None else f"{r['written'] / 2**20:.1f}"
        print(f"{r['mode']:<12} {r['step_s'] * 1e3:9.1f} {r['step_s'] / base['step_s']:7.2f} "
              f"{r['peak_bytes'] / 2**20:13.1f} {r['peak_bytes'] / max(base['peak_bytes'], 1):7.2f} "
              f"{saved:>10} {written:>12}  {r['io']}")


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
    p.add_argument("--threshold", type=int, default=1 << 20)
    p.add_argument("--prefetch", type=int, default=2)
    p.add_argument("--io-threads", type=int, default=2)
    p.add_argument("--modes", default="off,spill,adaptive,save_on_cpu,checkpoint")
    p.add_argument("--json", default=None, help="also write the results to this file")
    args = p.parse_args()

    devices = ["cpu"] if args.device == "cpu" else ["cuda"] if args.device == "cuda" else (
        ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    results = {}
    with tempfile.TemporaryDirectory(prefix="hector-bench-", dir=args.dir) as spill_dir:
        for device in devices:
            rows = [run_mode(m, args, device, spill_dir) for m in args.modes.split(",")]
            print_table(device, rows, args)
            results[device] = rows
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(dict(args=vars(args), results=results), indent=2))


if __name__ == "__main__":
    main()
