#!/usr/bin/env python3
"""Runs `hectorc -x mlir` over every file of a corpus directory at the stages --emit=hector,
lowered and cpp, and checks each run ends cleanly: exit status 0, or 1 with an `error:` line and
no output file; never a signal, an abort or a stack dump. Prints one line per failure and exits 1
if there is any."""
import os
import subprocess
import sys
import tempfile


def main():
    tool, directory = sys.argv[1], sys.argv[2]
    files = sorted(f for f in os.listdir(directory) if f.endswith(".mlir"))
    failures = []
    with tempfile.TemporaryDirectory() as work:
        for name in files:
            path = os.path.join(directory, name)
            for emit in ("hector", "lowered", "cpp"):
                out = os.path.join(work, "out")
                try:
                    proc = subprocess.run([tool, "-x", "mlir", path, f"--emit={emit}",
                                           "--target=cpu", "-o", out], capture_output=True,
                                          timeout=120)
                except subprocess.TimeoutExpired:
                    failures.append(f"{name} --emit={emit}: timed out")
                    continue
                err = proc.stderr.decode("utf-8", "replace")
                if proc.returncode not in (0, 1):
                    failures.append(f"{name} --emit={emit}: exit status {proc.returncode}")
                elif any(s in err for s in ("Stack dump", "Assertion", "Sanitizer", "terminate")):
                    failures.append(f"{name} --emit={emit}: crash output")
                elif proc.returncode == 1 and ("error:" not in err or os.path.exists(out)):
                    failures.append(f"{name} --emit={emit}: no error line, or partial output")
                if os.path.exists(out):
                    os.remove(out)
    for f in failures:
        print("FAIL " + f)
    print("%d files, %d failures" % (len(files), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
