#!/usr/bin/env python3
"""Eight processes run hector.compile on the same model at once, in a fresh cache directory:
all must succeed, exactly one must run hectorc, and the cache must hold one library and no
temporary file. Then a ninth process must load it from the cache in under a second.

    HECTOR_BUILD_DIR=build .venv/bin/python tools/check_compile_concurrency.py [--processes 8]

Takes about one compile (~25-40 s on two cores). Prints one line per check and exits non-zero
when one fails.
"""
import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
MODEL = REPO / "runtime" / "python" / "hector" / "models" / "rgcn_conv.hector"
CODE = f"""
import sys, time
sys.path.insert(0, {str(REPO / 'runtime' / 'python')!r})
import hector
t = time.perf_counter()
C = hector.compile({str(MODEL)!r}, target="cpu", **{{"in": 5, "out": 3}})
layer = C(num_relations=2)
print("ok", C.__name__, time.perf_counter() - t)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="hector-cache-") as cache:
        env = dict(os.environ, HECTOR_CACHE_DIR=cache, HECTOR_COMPILE_VERBOSE="1")
        start = time.perf_counter()
        procs = [subprocess.Popen([sys.executable, "-c", CODE], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for _ in range(args.processes)]
        results = [p.communicate() + (p.returncode,) for p in procs]
        elapsed = time.perf_counter() - start
        ok = sum(1 for out, _, rc in results if rc == 0 and out.startswith("ok"))
        builds = sum(err.count("hector.compile: building") for _, err, _ in results)
        print(f"{ok}/{args.processes} processes succeeded ({elapsed:.1f} s)")
        print(f"{builds} build(s) ran")
        files = sorted(p.name for p in pathlib.Path(cache).iterdir())
        libraries = [f for f in files if f.endswith(".so")]
        leftovers = [f for f in files if ".tmp-" in f]
        print(f"cache: {len(libraries)} library, {len(leftovers)} temporary files")
        failures += ok != args.processes or builds != 1 or len(libraries) != 1 or bool(leftovers)
        for out, err, rc in results:
            if rc != 0:
                print(err[-2000:], file=sys.stderr)
        r = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True)
        seconds = float(r.stdout.split()[-1]) if r.returncode == 0 else float("inf")
        built = "hector.compile: building" in r.stderr
        print(f"a new process loads it from the cache in {seconds:.3f} s "
              f"({'rebuilt!' if built else 'no build'})")
        failures += bool(seconds >= 1.0 or built)
    print("PASS" if not failures else "FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
