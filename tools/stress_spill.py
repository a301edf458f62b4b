"""Stress test of hector.spill under compiled layers: REPETITIONS runs of one setting, each in its
own process, so that a crash (a signal) is counted rather than ending the run.

Each run trains compiled RGCN layers for several steps with the same `x` and `norm` tensors
every step and shared between layers (test/python/spill_stress.py), under hector.spill with the
given setting, and compares the weights after every step bit for bit with the same training
without a store. Prints one line per failed run and a summary; exits 1 if any run failed.

    .venv/bin/python tools/stress_spill.py                       # 200 runs of the reported case
    .venv/bin/python tools/stress_spill.py --repetitions 50 --threshold 512 --prefetch 2
    .venv/bin/python tools/stress_spill.py --all-settings --repetitions 5

The reported case is float32, threshold_bytes=0, prefetch=0 (the other knobs at their
defaults). Needs a built tree ($HECTOR_BUILD_DIR, default build/).
"""
from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build"))

CHILD = r"""
import json, sys, torch
sys.path[:0] = [{python!r}, {tests!r}]
import spill_stress
libs = json.loads({libs!r})
args = json.loads({args!r})
dtype = getattr(torch, {dtype!r})
size = spill_stress.LARGE
expected = spill_stress.train(libs, None, dtype, {variant!r}, size=size)
spill_stress.check(libs, args, dtype, {variant!r}, spill_dir={spill_dir!r}, expected=expected,
                   repetitions={inner}, size=size)
"""


def run_one(libs, args, dtype, variant, inner, work):
    spill_dir = tempfile.mkdtemp(dir=work)
    code = CHILD.format(python=str(REPO / "runtime" / "python"), tests=str(REPO / "test" / "python"),
                        libs=json.dumps({k: str(v) for k, v in libs.items()}),
                        args=json.dumps(args), dtype=dtype, variant=variant, inner=inner,
                        spill_dir=spill_dir)
    env = dict(os.environ, HECTOR_BUILD_DIR=str(BUILD), OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    leftover = os.listdir(spill_dir)
    os.rmdir(spill_dir) if not leftover else None
    if r.returncode < 0:
        return "crash", f"signal {-r.returncode}: {r.stderr.strip().splitlines()[-1:]}"
    if r.returncode != 0:
        last = [l for l in r.stderr.strip().splitlines() if l.strip()][-1:]
        return "error", "; ".join(last)
    if leftover:
        return "error", f"files left in {spill_dir}: {leftover}"
    return "ok", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repetitions", type=int, default=200, help="processes per setting")
    ap.add_argument("--inner", type=int, default=1,
                    help="spilled trainings per process (each compared with the oracle)")
    ap.add_argument("--threshold", type=int, default=0)
    ap.add_argument("--prefetch", type=int, default=0)
    ap.add_argument("--all-settings", action="store_true",
                    help="every setting of spill_stress.SETTINGS instead of one")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--variant", default="auto")
    ap.add_argument("--jobs", type=int, default=1, help="processes at a time")
    opts = ap.parse_args()
    sys.path[:0] = [str(REPO / "runtime" / "python"), str(REPO / "test" / "python")]
    os.environ["HECTOR_BUILD_DIR"] = str(BUILD)
    import spill_stress

    work = tempfile.mkdtemp(prefix="hector-stress-")
    libs = spill_stress.compile_libraries(str(BUILD / "bin" / "hectorc"), REPO,
                                          pathlib.Path(work))
    settings = spill_stress.SETTINGS if opts.all_settings else [
        dict(threshold_bytes=opts.threshold, prefetch=opts.prefetch)]
    counts = collections.Counter()
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        for args in settings:
            futures = [pool.submit(run_one, libs, args, opts.dtype, opts.variant, opts.inner, work)
                       for _ in range(opts.repetitions)]
            for i, f in enumerate(futures):
                kind, detail = f.result()
                counts[kind] += 1
                if kind != "ok":
                    print(f"run {i} {args}: {kind}: {detail}", flush=True)
    total = sum(counts.values())
    print(f"stress_spill: {total} runs ({opts.dtype}, variant={opts.variant}, "
          f"{len(settings)} setting(s) x {opts.repetitions}, {opts.inner} training(s) of "
          f"{spill_stress.STEPS} steps each): {counts['ok']} ok, {counts['crash']} crashes, "
          f"{counts['error']} errors, {time.time() - start:.0f} s")
    sys.exit(0 if counts["ok"] == total else 1)


if __name__ == "__main__":
    main()
