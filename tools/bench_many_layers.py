"""hectorc on models of many layers: N copies of examples/rgcn.hector in one file, compiled to the
kernel-level IR (`--emit=lowered`, which runs hector-variants, autodiff and the lowering), with
`--mlir-timing`. Prints, per N, the wall time of the variants pass, of the driver's stages (the
pipeline, the one verification after it, printing the output) and of the whole run, and the
ratios to the smallest N divided by the ratio of N (1.0: linear).

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
            rows.append((n, *(stage_wall(r.stderr, name) for name in STAGES), total))
    first = rows[0]
    print(f"{'layers':>7} " + " ".join(f"{name.split()[0].lower() + ' s':>11}" for name in STAGES)
          + f" {'total s':>9} {'variants/linear':>16} {'total/linear':>13}")
    for row in rows:
        n, v, t = row[0], row[1], row[-1]
        print(f"{n:>7} " + " ".join(f"{x:>11.2f}" for x in row[1:-1]) + f" {t:>9.2f} "
              f"{(v / first[1]) / (n / first[0]):>16.2f} {(t / first[-1]) / (n / first[0]):>13.2f}")


#: The stages of --mlir-timing's report shown per N (the variants pass, then the driver's).
STAGES = ("Variants", "Pipeline", "Verify", "Output")


def stage_wall(report: str, name: str) -> float:
    """The wall time of the stage `name` in a --mlir-timing report (NaN if it is absent)."""
    m = re.search(r"^\s*[\d.]+ \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)\s+" + re.escape(name) + "$",
                  report, re.M)
    return float(m.group(1)) if m else float("nan")


if __name__ == "__main__":
    main()
