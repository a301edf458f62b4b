"""The optimisation variants side by side, and the cost model's choice among them.

    python tools/bench_variants.py --threads 1 --markdown    # the table in docs/benchmarks.md
    python tools/bench_variants.py --models rgat --graphs synthetic --json out.json

hectorc builds every layer's variants (none: the layer as written; reorder: linear-operator
reordering; compact: compact materialisation over unique (node, relation) pairs; both;
both_logits: both, with every softmax logit computed from the inputs) and the runtime picks one
per graph from the cost model's estimates at the graph's sizes
(docs/architecture.md, "Optimisations"). For every model (examples/rgcn.hector,
rgat_pyg.hector, hgt.hector at --hidden / --heads) and graph, this script runs each variant the
library carries, in one process on the same graph, inputs and weights, and reports per variant:

- fwd+bwd: one forward, an MSE loss against a fixed random target and the backward (input
  features and every weight require grad), median wall milliseconds over --repeats calls;
- peak: the peak of live tensor bytes during that step above the level before it
  (torch.profiler's memory events, as tools/bench_train.py measures it);
- largest: the cost model's largest materialised intermediate of the forward, in elements at
  the graph's sizes (E rows for a per-edge value, U rows once compacted);
- whether it is the cost model's choice for training ("auto", what a layer runs by default),
  and the choice's time over the best variant's (1.00: the choice is the fastest).

Before anything is timed, every variant's output and gradients are compared with the layer as
written (a difference above 1e-4 relative in float32 is an error).

Graphs: AIFB and UMLS (../shared/data), "synthetic" (bench_train's graph: N = 20000, R = 100,
E = 100000 from 50 sources per relation, E / U_src = 20) and "synthetic-unique" (the same sizes
with every edge from its own source: E / U_src = 1, where compaction cannot pay).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bench_train as bt  # noqa: E402  (graphs, compilation, timing, memory)
import hector  # noqa: E402  (bench_train puts runtime/python on the path)
from references import rgcn_norm  # noqa: E402

GRAPHS = ("aifb", "umls", "synthetic", "synthetic-unique")


def load_graph(name: str, args) -> bt.TestGraph:
    if name == "synthetic-unique":
        per_rel = args.synth_edges // args.synth_relations
        return bt.synthetic_graph(args.synth_nodes, args.synth_relations, args.synth_edges,
                                  sources=per_rel)
    return bt.load_graph(name, args)


def variant_manifests(Layer) -> dict[str, dict]:
    """Every variant's manifest by name (the layer as written first)."""
    out = {Layer.manifest.get("variant", "none"): Layer.manifest}
    for ns in Layer.manifest.get("variants", []):
        m = json.loads(getattr(torch.ops, ns).manifest())
        out[m["variant"]] = m
    return out


def largest_intermediate(manifest: dict, graph: hector.Graph) -> float:
    """The cost model's largest materialised intermediate (elements) at the graph's sizes."""
    terms = [graph.num_nodes, graph.num_edges, graph.num_unique_src, graph.num_unique_dst,
             graph.num_relations, graph.num_ntypes, 1]
    values = [sum(c * t for c, t in zip(coeffs, terms))
              for coeffs in manifest.get("cost", {}).get("intermediates", [])]
    return max(values, default=0.0)


def run_one(model: str, gname: str, g: bt.TestGraph, args) -> dict:
    params = bt.model_params(model, args.hidden, args.heads)
    Layer = hector.load(bt.compile_model(model, params, "cpu"))
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                         num_relations=g.num_relations, num_ntypes=g.num_ntypes)
    torch.manual_seed(0)
    layer = Layer(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=args.torch_dtype)
    x = torch.randn(g.num_nodes, args.hidden, dtype=args.torch_dtype)
    extra = [rgcn_norm(g).to(args.torch_dtype)] if model == "rgcn" else []
    target = torch.randn(g.num_nodes, args.hidden, dtype=args.torch_dtype)

    def step():
        xs = x.clone().requires_grad_()
        layer.zero_grad(set_to_none=True)
        out = layer(graph, xs, *extra)
        torch.nn.functional.mse_loss(out, target).backward()
        return out, [xs.grad] + [p.grad for p in layer.weights()]

    manifests = variant_manifests(Layer)
    row = {"model": model, "graph": gname, **bt.describe(g),
           "unique_dst": graph.num_unique_dst, "variants": {}}
    layer.variant = "none"
    ref_out, ref_grads = step()
    for name, manifest in manifests.items():
        layer.variant = name
        out, grads = step()
        err = max([bt.rel_err(out, ref_out)] + [bt.rel_err(a, b) for a, b in zip(grads, ref_grads)
                                                if a is not None])
        if err > args.tol:
            raise RuntimeError(f"{model} on {gname}: variant {name} differs from the layer as "
                               f"written by {err:.3g} (relative)")
        times = bt.timed(step, args)
        with bt.tensors_from_pytorch():   # the tensor pool's blocks are unseen by the profiler
            peak = bt.tensor_peak(step)
        row["variants"][name] = {"ms": times["ms"], "cpu_ms": times["cpu_ms"], "n": times["n"],
                                 "peak_bytes": peak,
                                 "largest": largest_intermediate(manifest, graph),
                                 "max_rel_err": err}
    layer.variant = "auto"
    row["choice"] = layer.chosen_variant(graph, training=True)
    row["explain"] = layer.explain(graph)
    best = min(v["ms"] for v in row["variants"].values())
    row["choice_over_best"] = row["variants"][row["choice"]]["ms"] / best
    return row


def print_rows(rows: list[dict], markdown: bool) -> None:
    if markdown:
        print("| model | graph | E | E/U_src | variant | fwd+bwd ms | peak MiB | largest "
              "(elements) | choice |")
        print("|---|---|---:|---:|---|---:|---:|---:|---|")
    for row in rows:
        ratio = row["edges_per_unique_src"]
        for name, v in row["variants"].items():
            mark = ""
            if name == row["choice"]:
                mark = f"**auto** ({row['choice_over_best']:.2f}x best)"
            cells = [row["model"], row["graph"], str(row["edges"]), f"{ratio:g}", name,
                     f"{v['ms']:.1f}", f"{v['peak_bytes'] / bt.MiB:.1f}", f"{v['largest']:.3g}",
                     mark]
            if markdown:
                print("| " + " | ".join(cells) + " |")
            else:
                print("  ".join(f"{c:>10}" for c in cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="rgcn,rgat,hgt")
    ap.add_argument("--graphs", default=",".join(GRAPHS))
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--threads", type=int, help="CPU threads (default: PyTorch's)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--budget", type=float, default=10.0,
                    help="seconds after which a measurement stops repeating")
    ap.add_argument("--tol", type=float, default=1e-4,
                    help="largest relative difference of a variant from the layer as written")
    ap.add_argument("--synth-nodes", type=int, default=20000)
    ap.add_argument("--synth-relations", type=int, default=100)
    ap.add_argument("--synth-edges", type=int, default=100000)
    ap.add_argument("--synth-sources", type=int, default=50)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--explain", action="store_true", help="print each layer.explain(graph)")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    args.torch_dtype = getattr(torch, args.dtype)
    args.device = "cpu"
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    for gname in args.graphs.split(","):
        g = load_graph(gname, args)
        for model in args.models.split(","):
            print(f"{model} on {gname} ...", file=sys.stderr, flush=True)
            row = run_one(model, gname, g, args)
            if args.explain:
                print(row["explain"], file=sys.stderr)
            rows.append(row)
    print_rows(rows, args.markdown)
    worst = max(r["choice_over_best"] for r in rows)
    print(f"\nthe cost model's choice over the fastest variant: worst {worst:.2f}x "
          f"(threads {torch.get_num_threads()}, {args.dtype}, hidden {args.hidden}, "
          f"heads {args.heads})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
