"""Helpers shared by the training examples (train_entities.py, train_links.py): paths, compiling a
model file with hectorc (cached), the options every example takes, seeding, timing, the progress
display, and the check that a compiled layer produced gradients.
"""
from __future__ import annotations

import argparse
import math
import os
import pathlib
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

REPO = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
DATA = REPO.parent / "shared" / "data"          # the real graphs (../shared/data/README.md)
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build")).resolve()

# The runtime finds libhector_runtime.so through $HECTOR_BUILD_DIR (hector/_native.py).
os.environ.setdefault("HECTOR_BUILD_DIR", str(BUILD))
sys.path.insert(0, str(REPO / "runtime" / "python"))

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def parse_fanout(text: str):
    """"all" -> None (every edge), "10" -> 10 for both hops, "10,5" -> [10, 5]."""
    if text == "all":
        return None
    values = [None if v == "all" else int(v) for v in text.split(",")]
    if any(v is not None and v < 1 for v in values) or len(values) not in (1, 2):
        raise argparse.ArgumentTypeError(f"expected 'all', K or K1,K2 with K >= 1, got {text!r}")
    return values[0] if len(values) == 1 else values


def add_common_args(parser: argparse.ArgumentParser, data: str, epochs: int, lr: float,
                    weight_decay: float | None, hidden: int, embed_dim: int | None,
                    seeds: int, notes: dict[str, str] | None = None) -> None:
    """The options both examples take. A default of None is resolved by the example after
    parsing; notes[name] then says in --help what it becomes."""
    notes = notes or {}

    def default(name, value):
        return notes[name] if value is None else str(value)

    parser.add_argument("--data", type=pathlib.Path, default=DATA / data,
                        help=f"dataset directory (default: <repo>/../shared/data/{data})")
    parser.add_argument("--impl", choices=("hector", "pyg"), default="hector",
                        help="hector: layers compiled by hectorc; pyg: the same architecture "
                             "built from PyG layers (default: hector)")
    parser.add_argument("--epochs", type=int, default=epochs, help=f"default {epochs}")
    parser.add_argument("--lr", type=float, default=lr, help=f"Adam learning rate (default {lr})")
    parser.add_argument("--weight-decay", type=float, default=weight_decay,
                        help="L2 penalty on every parameter (Adam weight_decay; default "
                             f"{default('weight_decay', weight_decay)})")
    parser.add_argument("--hidden", type=int, default=hidden,
                        help=f"hidden width (default {hidden})")
    parser.add_argument("--embed-dim", type=int, default=embed_dim,
                        help="width of the learned node embedding that is the input (default "
                             f"{default('embed_dim', embed_dim)})")
    parser.add_argument("--seeds", type=int, default=seeds,
                        help=f"train this many times, seeds 0..K-1, and report the mean "
                             f"(default {seeds})")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="float32")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for name in ("epochs", "hidden", "embed_dim", "seeds"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: PyTorch sees no CUDA device")
    if not args.data.is_dir():
        parser.error(f"--data: {args.data} is not a directory (the real graphs live in "
                     "<repo>/../shared/data)")


def compile_model(model: str, params: dict[str, int], target: str = "cpu",
                  entry: str | None = None) -> pathlib.Path:
    """Builds examples/<model>.hector with hectorc (-P NAME=VALUE for every entry of params) into
    $HECTOR_BUILD_DIR/examples/, named after the model, the parameters and the target, and returns
    the library's path. A library that is newer than the model file, hectorc and the runtime
    library is reused."""
    source = EXAMPLES / f"{model}.hector"
    hectorc = BUILD / "bin" / "hectorc"
    runtime = BUILD / "lib" / "libhector_runtime.so"
    for path, what in ((hectorc, "hectorc"), (runtime, "the runtime library")):
        if not path.is_file():
            raise SystemExit(f"{what} ({path}) is missing: build the project first (tools/build.sh)")
    key = "-".join(f"{k}{v}" for k, v in params.items())
    out = BUILD / "examples" / f"{model}-{key}-{target}.so"
    if out.is_file() and out.stat().st_mtime > max(p.stat().st_mtime
                                                   for p in (source, hectorc, runtime)):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(hectorc), str(source), f"--target={target}", "-o", str(out)]
    for k, v in params.items():
        cmd += ["-P", f"{k}={v}"]
    if entry:
        cmd += ["--entry", entry]
    shown = " ".join(f"{k}={v}" for k, v in params.items())
    print(f"hectorc: compiling examples/{model}.hector ({shown}, {target}) -> "
          f"{relative(out)}", flush=True)
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"hectorc failed ({' '.join(cmd)}):\n{result.stdout}{result.stderr}")
    print(f"hectorc: done in {time.perf_counter() - start:.0f} s", flush=True)
    return out


def relative(path: pathlib.Path) -> str:
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return str(path)


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)   # also seeds every CUDA device


def synchronize(device: str) -> None:
    """Waits for queued device work, so that wall-clock times cover it."""
    if device == "cuda":
        torch.cuda.synchronize()


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for a single value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, 0.0
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def check_gradients(modules: dict[str, torch.nn.Module]) -> None:
    """After the first backward pass: every trainable parameter must have a gradient. A compiled
    layer from a runtime without a backward pass returns outputs that autograd cannot see through,
    so its weights (and everything before it) would silently stay at their initial values."""
    missing = [f"{owner}.{name}" if owner else name
               for owner, module in modules.items()
               for name, p in module.named_parameters() if p.requires_grad and p.grad is None]
    if missing:
        shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
        raise SystemExit(f"no gradient reached {shown} after loss.backward(): the compiled layer "
                         "has no backward pass in this build of hectorc and its runtime")


class Progress:
    """Per-epoch progress: on a terminal, one line redrawn in place (a bar, the epoch and the
    given fields); otherwise (a log file, a pipe) one plain line per epoch."""

    def __init__(self, total: int, prefix: str = "", stream=None, width: int = 20):
        self.total = total
        self.prefix = prefix
        self.stream = stream or sys.stdout
        self.width = width
        self.tty = self.stream.isatty()
        self.digits = len(str(total))

    def update(self, epoch: int, fields: dict[str, str]) -> None:
        text = (f"epoch {epoch:>{self.digits}}/{self.total}  "
                + "  ".join(f"{k} {v}" for k, v in fields.items()))
        if self.tty:
            done = self.width * epoch // self.total
            bar = "#" * done + "." * (self.width - done)
            # \r returns to the start of the line; \x1b[K clears what a longer line left behind.
            self.stream.write(f"\r{self.prefix}[{bar}] {text}\x1b[K")
        else:
            self.stream.write(f"{self.prefix}{text}\n")
        self.stream.flush()

    def close(self) -> None:
        """Ends the in-place line (call once after the last update)."""
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


class Compiled(torch.nn.Module):
    """A model compiled by hectorc, run on a hector.Graph with the model's extra inputs (RGCN's
    per-edge norm)."""

    def __init__(self, layer: torch.nn.Module, graph, extra_inputs: list[torch.Tensor]):
        super().__init__()
        self.layer = layer
        self.graph = graph
        self.extra_inputs = extra_inputs

    def forward(self, x):
        return self.layer(self.graph, x, *self.extra_inputs)


class PygRGCN(torch.nn.Module):
    """RGCNConv(aggr='mean') x 2 with ReLU between: the two-layer RGCN of rgcn_aifb.hector and
    rgcn_umls.hector, from PyG."""

    def __init__(self, in_dim, hidden, out, num_relations, edge_index, etype):
        super().__init__()
        from torch_geometric.nn import RGCNConv
        self.conv1 = RGCNConv(in_dim, hidden, num_relations, aggr="mean")
        self.conv2 = RGCNConv(hidden, out, num_relations, aggr="mean")
        self.edge_index, self.etype = edge_index, etype

    def forward(self, x):
        x = F.relu(self.conv1(x, self.edge_index, self.etype))
        return self.conv2(x, self.edge_index, self.etype)
