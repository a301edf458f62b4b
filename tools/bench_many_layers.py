"""hectorc on models of many layers: N copies of examples/rgcn.hector in one file, compiled to the
kernel-level IR (`--emit=lowered`, which runs hector-variants, autodiff and the lowering), with
MLIR's pass timing. Prints the time of the variants pass and of the whole run per N, and the
ratio to the smallest N divided by the ratio of N (1.0: linear).

    .venv/bin/python tools/bench_many_layers.py            # N = 400, 800, 1600, 7000
    .venv/bin/python tools/bench_many_layers.py 100 1000
"""
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build"))


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [400, 800, 1600, 7000]
    src = (REPO / "examples" / "rgcn.hector").read_text()
    body = src[src.index("layer rgcn"):]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for n in sizes:
            path = pathlib.Path(work) / f"many{n}.hector"
            path.write_text("".join(body.replace("layer rgcn", f"layer rgcn{i}") for i in range(n)))
            start = time.perf_counter()
            r = subprocess.run([str(BUILD / "bin" / "hectorc"), str(path), "--emit=lowered",
                                "-o", os.devnull, "--mlir-timing"], capture_output=True, text=True)
            total = time.perf_counter() - start
            if r.returncode != 0:
                sys.exit(f"hectorc failed at N={n}:\n{r.stderr[-2000:]}")
            m = re.search(r"^\s*[\d.]+ \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)\s+Variants$",
                          r.stderr, re.M)
            rows.append((n, float(m.group(1)) if m else float("nan"), total))
    n0, v0, t0 = rows[0]
    print(f"{'layers':>7} {'variants s':>11} {'total s':>9} {'variants/linear':>16} "
          f"{'total/linear':>13}")
    for n, v, t in rows:
        print(f"{n:>7} {v:>11.2f} {t:>9.2f} {(v / v0) / (n / n0):>16.2f} "
              f"{(t / t0) / (n / n0):>13.2f}")


if __name__ == "__main__":
    main()
