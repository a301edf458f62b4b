# Property-based checks of what a user hands the runtime at construction and call time: random
# hostile hector.Graph arguments (dtypes, shapes, lengths, values, counts, devices) and random
# hostile layer inputs (dtypes, shapes, strides, devices, non-finite values, wrong counts).
#
# Properties: every case either succeeds or raises TypeError/ValueError/RuntimeError/IndexError
# with a message (never a crash: the cases run in a child process, so a signal fails the test
# with the case that caused it); a graph that is accepted has ids in range, in the oracle's
# sense (the same edges as the input, each endpoint below num_nodes); a layer call that is
# accepted on a non-contiguous input gives exactly what it gives on the contiguous copy; an input
# of a wrong dtype, shape or row count is refused with a message naming the input (a meta tensor
# gets the dispatcher's NotImplementedError, a RuntimeError).
# (Graph internals changed after construction, and ids near 2^31 or num_nodes=10**12, belong to
# the graph's own tests.)
import json
import subprocess
import sys

from conftest import BUILD, _repo

CHILD = r"""
import json, random, sys
sys.path.insert(0, {python!r})
import torch, hector
ALLOWED = (TypeError, ValueError, RuntimeError, IndexError)
rng = random.Random({seed})
out = {{"graph_ok": 0, "graph_refused": 0, "layer_ok": 0, "layer_refused": 0, "bad": []}}

DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
          torch.float32, torch.float64, torch.float16, torch.complex64]

def ids(n, high):
    kind = rng.random()
    if kind < 0.85:
        t = torch.randint(0, max(high, 1), (n,))
    elif kind < 0.88:
        t = torch.randint(-5, 0, (n,))                 # negative ids
    elif kind < 0.91:
        t = torch.randint(high, high + 50, (n,))       # ids past num_nodes
    elif kind < 0.94:
        t = torch.randint(0, max(high, 1), (n, 2))     # 2-d
    elif kind < 0.97:
        t = torch.tensor(3)                            # 0-d
    else:
        t = torch.randint(0, max(high, 1), (n + rng.randint(1, 3),))   # another length
    if rng.random() < 0.08:
        t = t.to(rng.choice(DTYPES))
    if rng.random() < 0.04 and t.dim() == 1 and t.numel() > 1:
        t = t[::2]                                     # non-contiguous (and shorter)
    if rng.random() < 0.02:
        t = t.to("meta")
    return t

def count(default):
    if rng.random() < 0.8:
        return rng.choice([default, None])
    return rng.choice([0, -1, default + 3, 2.5, "3", True])

for case in range({cases}):
    n = rng.randint(0, 30)
    e = rng.randint(0, 80)
    R, T = rng.randint(1, 4), rng.randint(1, 3)
    args = dict(src=ids(e, n), dst=ids(e, n), etype=ids(e, R),
                num_nodes=count(n), ntype=ids(n, T) if rng.random() < 0.5 else None,
                num_relations=count(R), num_ntypes=count(T))
    what = {{k: (str(v.dtype), list(v.shape), str(v.device)) if isinstance(v, torch.Tensor) else v
             for k, v in args.items()}}
    try:
        g = hector.Graph(args["src"], args["dst"], args["etype"], num_nodes=args["num_nodes"],
                         ntype=args["ntype"], num_relations=args["num_relations"],
                         num_ntypes=args["num_ntypes"])
    except ALLOWED as exc:
        if not str(exc):
            out["bad"].append(("graph: empty message", what))
        out["graph_refused"] += 1
        continue
    except Exception as exc:
        out["bad"].append(("graph: " + type(exc).__name__ + ": " + str(exc)[:200], what))
        continue
    out["graph_ok"] += 1
    # The oracle: the accepted graph holds the given edges, every endpoint below num_nodes.
    src, dst = args["src"].long(), args["dst"].long()
    if not (g.num_nodes > max(int(src.max()) if src.numel() else -1,
                              int(dst.max()) if dst.numel() else -1)
            and (src.numel() == 0 or int(src.min()) >= 0) and (dst.numel() == 0 or int(dst.min()) >= 0)
            and g.num_edges == src.numel()):
        out["bad"].append(("graph accepted with ids out of range", what))

Layer = hector.load({library!r})
g = hector.Graph(torch.tensor([0, 1, 2, 3, 1]), torch.tensor([1, 2, 3, 0, 1]),
                 torch.tensor([0, 1, 0, 1, 1]), num_nodes=4, num_relations=2)
layer = Layer(num_relations=2)
N, E, IN = 4, 5, 6
for case in range({cases}):
    x = torch.randn(N, IN)
    norm = torch.rand(E)
    kind = rng.randrange(9)
    expect_ok = kind in (0, 1, 2)
    if kind == 1:     # non-contiguous, same values
        x = torch.randn(IN, N).t()
    elif kind == 2:   # non-finite values are data
        x[rng.randrange(N), rng.randrange(IN)] = rng.choice([float("nan"), float("inf")])
    elif kind == 3:   # (float16 and bfloat16 features are valid: test_precision.py)
        x = x.to(rng.choice([torch.int64, torch.int8, torch.bool, torch.complex64]))
    elif kind == 4:
        x = torch.randn(N + rng.choice([-1, 1, 5]), IN)
    elif kind == 5:
        x = torch.randn(N, IN + rng.choice([-1, 1]))
    elif kind == 6:
        x = rng.choice([torch.randn(N), torch.randn(N, IN, 2), torch.tensor(1.0)])
    elif kind == 7:
        norm = rng.choice([torch.rand(E + 1), torch.rand(E, 2), norm.double(), norm.to("meta")])
    elif kind == 8:
        x = x.to("meta")
    try:
        y = layer(g, x, norm)
    except ALLOWED as exc:
        msg = str(exc)
        if expect_ok:
            out["bad"].append(("valid call refused: " + msg[:200], kind))
        elif kind in (3, 4, 5, 6) and "'x'" not in msg:
            out["bad"].append(("message does not name x: " + msg[:200], kind))
        out["layer_refused"] += 1
        continue
    except Exception as exc:
        out["bad"].append(("layer: " + type(exc).__name__ + ": " + str(exc)[:200], kind))
        continue
    out["layer_ok"] += 1
    if not expect_ok:
        out["bad"].append(("hostile call accepted", kind))
    elif kind == 1 and not torch.equal(y, layer(g, x.contiguous(), norm)):
        out["bad"].append(("non-contiguous input gives another result", kind))
print(json.dumps(out))
"""


def test_hostile_graphs_and_layer_inputs(compiled_library):
    lib = compiled_library("rgcn", "in=6", "out=5")
    code = CHILD.format(python=str(_repo / "runtime" / "python"), seed=19, cases=400,
                        library=str(lib))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={"HECTOR_BUILD_DIR": str(BUILD), "PATH": "/usr/bin:/bin",
                            "OMP_NUM_THREADS": "1"})
    assert r.returncode == 0, f"the child died (exit {r.returncode}):\n{r.stderr[-3000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["bad"] == [], out["bad"][:10]
    # Both outcomes are exercised, for the graph and for the layer.
    assert out["graph_ok"] > 20 and out["graph_refused"] > 100, out
    assert out["layer_ok"] > 50 and out["layer_refused"] > 150, out
