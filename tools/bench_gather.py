#!/usr/bin/env python3
"""Feature-gather benchmark: zero-copy (PyTorch-Direct) vs CPU gather + copy vs all-in-GPU.

Gathers random mini-batches of rows from a host-resident feature table and reports, per method,
the wall time per gather, the bandwidth of useful bytes (GB/s) and the CPU time the process spent
per gather (time.process_time: all threads). The wait for the GPU is a blocking-sync CUDA event
(the thread sleeps), not torch.cuda.synchronize(), which spins a core for the whole kernel and so
would charge a zero-copy gather its wall time as CPU time. Without a GPU it reports the CPU
gathers alone.
Runtime is bounded (--budget seconds in all, default 45). Usable from a GPU check script:

    HECTOR_BUILD_DIR=build python tools/bench_gather.py [--json results.json]
"""
import argparse
import json
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "runtime" / "python"))
import hector  # noqa: E402
from hector.pinned import cpu_gather  # noqa: E402


def gpu_waiter():
    """A function that waits, without spinning, until the GPU work queued so far on the current
    stream has finished (nothing to wait for without CUDA)."""
    if not torch.cuda.is_available():
        return lambda: None
    done = torch.cuda.Event(blocking=True)   # cudaEventBlockingSync: the waiting thread sleeps

    def wait():
        done.record()
        done.synchronize()
    return wait


def measure(fn, sync, deadline, repeats):
    """(wall seconds, CPU seconds) per call: the median-free mean over up to `repeats` calls after
    one warm-up, stopping early at `deadline`. `sync` must wait without burning CPU time (see
    gpu_waiter), so that the CPU time is what the method itself costs."""
    fn()
    sync()
    calls, wall, cpu = 0, 0.0, 0.0
    while calls < repeats and (calls < 3 or time.perf_counter() < deadline):
        c0, w0 = time.process_time(), time.perf_counter()
        fn()
        sync()
        wall += time.perf_counter() - w0
        cpu += time.process_time() - c0
        calls += 1
    return wall / calls, cpu / calls, calls


def main():
    cuda = torch.cuda.is_available()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000 if cuda else 200_000,
                        help="rows of the feature table")
    parser.add_argument("--widths", type=int, nargs="+", default=[128, 31],
                        help="row widths in float32 elements (31: rows that are not 16-byte "
                             "multiples)")
    parser.add_argument("--batch", type=int, default=200_000 if cuda else 50_000,
                        help="indices per gather")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--budget", type=float, default=45.0, help="seconds for everything")
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    args = parser.parse_args()

    start = time.perf_counter()
    results = []
    sync = gpu_waiter()
    print(f"device: {torch.cuda.get_device_name() if cuda else 'cpu only'}; "
          f"torch threads: {torch.get_num_threads()}; table rows: {args.rows}; "
          f"batch: {args.batch}")
    for width in args.widths:
        features = torch.randn(args.rows, width)
        row_bytes = width * features.element_size()
        idx = torch.randint(0, args.rows, (args.batch,))
        useful = args.batch * row_bytes
        cases = [("cpu gather (hector, threaded)", lambda: cpu_gather(features, idx)),
                 ("cpu index_select (torch)", lambda: features.index_select(0, idx))]
        tables = []
        if cuda:
            table = hector.PinnedTable(features, fallback="error")
            uncapped = hector.PinnedTable(features, fallback="error", max_threads=0)
            # The CPU-centric baseline: the same table API, index to the host, threaded gather
            # into a page-locked staging buffer, one copy to the device.
            cpu_table = hector.PinnedTable(features, mode="cpu_gather")
            tables += [table, uncapped, cpu_table]
            idx_gpu = idx.cuda()
            on_gpu = features.cuda()
            cases = [
                ("zero-copy gather (capped)", lambda: table.gather(idx_gpu)),
                ("zero-copy gather (no cap)", lambda: uncapped.gather(idx_gpu)),
                ("cpu gather + copy", lambda: cpu_table.gather(idx_gpu)),
                ("all in GPU (index_select)", lambda: on_gpu.index_select(0, idx_gpu)),
            ] + cases
        for name, fn in cases:
            remaining = args.budget - (time.perf_counter() - start)
            share = remaining / (len(cases) * len(args.widths))
            deadline = time.perf_counter() + max(share, 0.2)
            wall, cpu, calls = measure(fn, sync, deadline, args.repeats)
            results.append(dict(method=name, row_bytes=row_bytes, batch=args.batch, calls=calls,
                                ms=wall * 1e3, gbps=useful / wall / 1e9, cpu_ms=cpu * 1e3))
        if cuda:
            reference = features.index_select(0, idx)
            for t in tables:
                assert torch.equal(t.gather(idx_gpu).cpu(), reference), f"{t} gather differs"
                t.close()
            del on_gpu
            torch.cuda.empty_cache()

    print(f"{'method':<32} {'row B':>6} {'ms/gather':>10} {'GB/s':>8} {'CPU ms/gather':>14}")
    for r in results:
        print(f"{r['method']:<32} {r['row_bytes']:>6} {r['ms']:>10.3f} {r['gbps']:>8.2f} "
              f"{r['cpu_ms']:>14.3f}")
    print(f"(total {time.perf_counter() - start:.1f} s)")
    if args.json:
        args.json.write_text(json.dumps(dict(device=torch.cuda.get_device_name() if cuda else "cpu",
                                             results=results), indent=1))


if __name__ == "__main__":
    main()
