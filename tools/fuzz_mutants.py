"""Mutation testing of hectorc: N mutants of the dialect text and of the model files, run through
every --emit stage; any exit other than 0 or 1 (a signal, an abort, an uncaught exception) is a
finding, and so is partial output (an output file or package directory left by a failed run, or
a `*.tmp-*` file beside it).

    .venv/bin/python tools/fuzz_mutants.py --mutants 10000            # each kind: 10,000
    .venv/bin/python tools/fuzz_mutants.py --mutants 300 --seed 7     # the CI slice
    .venv/bin/python tools/fuzz_mutants.py --library-sample 5         # also build 5 libraries

Seeds: the examples (examples/*.hector, test/python/user_models/*.hector) and their dialect
text (`hectorc --emit=hector`, and `--emit=lowered` for the kernel-level ops). Mutations: byte
flips, insertions of random bytes and of tokens that matter (keywords, huge or negative numbers,
brackets, quotes, invalid UTF-8), deletions, duplications and swaps of lines. Every mutant runs
`--emit=hector`; the mutants it accepts also run `lowered`, `cpp`, `cuda` and `package` (a
mutant `--emit=hector` refuses is refused by every later stage at the same point: the stages
share the reading, the front end and the verifier); `--library-sample N` builds N accepted
mutants into libraries. Findings are written to --findings (default test/fuzz/findings-new) with
the command that failed; the summary line is `fuzz_mutants: N runs, N findings`.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build"))
HECTORC = str(BUILD / "bin" / "hectorc")

TOKENS = [b"layer", b"input", b"weight", b"output", b"node", b"edge", b"relation", b"ntype",
          b"src.", b"dst.", b"heads", b"init", b"sum(", b"mean(", b"max(", b"softmax(",
          b"linear(", b"dot(", b"concat(", b"split_heads(", b"merge_heads(", b"(", b")", b"[",
          b"]", b"{", b"}", b"<", b">", b",", b";", b"=", b".", b":", b"\"", b"#", b"//", b"@",
          b"%", b"0", b"-1", b"1e308", b"9223372036854775807", b"18446744073709551616",
          b"4294967296", b"2147483648", b"nan", b"inf", b"0x", b"\xff", b"\xc3", b"\x00",
          b"\n", b"\t", b"hector.layer", b"hector.input", b"hector.weight", b"hector.output",
          b"!hector.value<", b"!hector.weight<", b"h", b"unique_src", b"unique_dst",
          b"hector.variant", b"hector.backward", b"params", b"i64", b"f64", b"glorot", b"zeros",
          b"\"\\FF\"", b"\"a\\0Ab\"", b"\"saved.0\"", b"\"grad.x\""]


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(7)
        pos = rng.randrange(len(out) + 1) if out else 0
        if kind == 0 and out:                       # flip a byte
            out[min(pos, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1:                             # random bytes
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif kind == 2:                             # a token
            out[pos:pos] = rng.choice(TOKENS)
        elif kind == 3 and out:                     # delete a range
            out[pos:pos + rng.randint(1, 16)] = b""
        elif kind == 4 and out:                     # duplicate a range
            n = rng.randint(1, 64)
            out[pos:pos] = out[pos:pos + n]
        elif kind == 5:                             # swap two lines
            lines = bytes(out).split(b"\n")
            if len(lines) > 2:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
                out = bytearray(b"\n".join(lines))
        else:                                       # a number replaced by an extreme one
            digits = [i for i, c in enumerate(out) if 48 <= c <= 57]
            if digits:
                i = rng.choice(digits)
                out[i:i + 1] = rng.choice([b"0", b"-1", b"99999999999", b"1e308", b"65536"])
    return bytes(out)


def seeds():
    models = sorted((REPO / "examples").glob("*.hector")) + \
        sorted((REPO / "test" / "python" / "user_models").glob("*.hector"))
    texts = {"hector": [], "mlir": []}
    for m in models:
        texts["hector"].append(m.read_bytes())
    for m in models[:6]:
        for emit in ("hector", "lowered"):
            r = subprocess.run([HECTORC, str(m), f"--emit={emit}", "--no-reorder"],
                               capture_output=True, timeout=300)
            if r.returncode == 0:
                texts["mlir"].append(r.stdout)
    return texts


def run(args, cwd, outputs):
    """Runs hectorc; returns a finding (str) or None, and whether it succeeded."""
    try:
        r = subprocess.run([HECTORC, *args], capture_output=True, timeout=300, cwd=cwd)
    except subprocess.TimeoutExpired:
        return "timeout (300 s)", False
    tail = r.stderr[-600:].decode(errors="replace")
    if r.returncode not in (0, 1):
        return f"exit {r.returncode}: {tail}", False
    if b"Stack dump" in r.stderr or b"terminate called" in r.stderr:
        return f"stack dump with exit {r.returncode}: {tail}", False
    if r.returncode == 1:
        left = [p for p in outputs if os.path.exists(p)]
        left += [str(p) for p in pathlib.Path(cwd).iterdir() if ".tmp-" in p.name]
        if left:
            return f"failed run left output behind: {left}", False
        if b"error" not in r.stderr:
            return f"exit 1 without an error message: {tail}", False
    return None, r.returncode == 0


def check_mutant(index, kind, data, library, work):
    d = pathlib.Path(tempfile.mkdtemp(dir=work))
    src = d / ("in.mlir" if kind == "mlir" else "in.hector")
    src.write_bytes(data)
    findings, runs = [], 0
    base = [str(src), "-x", kind]
    finding, ok = run(base + ["--emit=hector", "-o", str(d / "out.mlir")], d, [d / "out.mlir"])
    runs += 1
    if finding:
        findings.append(("hector", finding))
    if ok:
        stages = [("lowered", ["--emit=lowered", "-o", "low.mlir"], ["low.mlir"]),
                  ("cpp", ["--emit=cpp", "--target=cpu", "-o", "m.cpp"], ["m.cpp"]),
                  ("cuda", ["--emit=cuda", "--target=cuda", "-o", "m.cu"], ["m.cu"]),
                  ("package", ["--emit=package", "--target=cpu", "-o", "pkg"], ["pkg"])]
        if library:
            stages.append(("library", ["--target=cpu", "-o", "m.so"], ["m.so"]))
        for stage, args, outs in stages:
            finding, _ = run(base + args, d, [d / o for o in outs])
            runs += 1
            if finding:
                findings.append((stage, finding))
    shutil.rmtree(d, ignore_errors=True)
    return index, kind, data, findings, runs, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mutants", type=int, default=10000, help="mutants of each kind")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--library-sample", type=int, default=0,
                    help="accepted mutants also built into a library (25 s each)")
    ap.add_argument("--findings", default=str(REPO / "test" / "fuzz" / "findings-new"))
    opts = ap.parse_args()
    rng = random.Random(opts.seed)
    texts = seeds()
    work = tempfile.mkdtemp(prefix="hector-mutants-")
    jobs = []
    libraries = opts.library_sample
    for kind in ("mlir", "hector"):
        for i in range(opts.mutants):
            jobs.append((i, kind, mutate(rng.choice(texts[kind]), rng)))
    total_runs = accepted = 0
    found = []
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        futures = []
        for i, kind, data in jobs:
            build = False
            if libraries > 0 and rng.random() < 0.05:
                build, libraries = True, libraries - 1
            futures.append(pool.submit(check_mutant, i, kind, data, build, work))
        for f in concurrent.futures.as_completed(futures):
            index, kind, data, findings, runs, ok = f.result()
            total_runs += runs
            accepted += ok
            for stage, what in findings:
                found.append((kind, index, stage, what, data))
                print(f"FINDING {kind} #{index} --emit={stage}: {what}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    if found:
        out = pathlib.Path(opts.findings)
        out.mkdir(parents=True, exist_ok=True)
        for kind, index, stage, what, data in found:
            name = f"{kind}-{index}-{stage}"
            (out / (name + (".mlir" if kind == "mlir" else ".hector"))).write_bytes(data)
            (out / (name + ".txt")).write_text(what + "\n")
    print(f"fuzz_mutants: {2 * opts.mutants} mutants ({accepted} accepted by --emit=hector), "
          f"{total_runs} runs, {len(found)} findings")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
