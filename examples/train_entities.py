"""Entity classification (node classification) on an RDF graph in the R-GCN benchmark layout —
AIFB by default — with a two-layer RGCN, RGAT or HGT, compiled by hectorc or built from PyG.

    python examples/train_entities.py                            # RGCN on AIFB, compiled layers
    python examples/train_entities.py --model rgat --impl pyg    # the same architecture from PyG
    python examples/train_entities.py --model hgt --seeds 5 --device cuda
    python examples/train_entities.py --model rgat --seeds 5 --autocast bfloat16

The setup is the R-GCN paper's (Schlichtkrull et al. 2018): two layers, 16 hidden units, the
whole graph in every step (full batch), Adam with learning rate 0.01, 50 epochs, cross-entropy on
the labelled training entities, accuracy on the test entities after the last epoch.

Input (--input): rgcn's default is the paper's featureless one — one-hot node identity, so the
first layer's relation weights have one row per node (in = 8285 on AIFB) and a node's message
along a relation-r edge is row j of W_r. The layers are hector.nn.RGCNConv (PyG's RGCNConv
interface: x=None, bias=False as in the paper's formula, no basis decomposition, the paper's
setting for AIFB), compiled by hector.compile from the model files shipped with the runtime; the
weight rows are gathered, never a one-hot matrix. --impl pyg runs torch_geometric.nn.RGCNConv
with the same arguments and initial weights. --input embedding (and rgat, hgt always) feeds a
learned node embedding (nn.Embedding, --embed-dim wide) to the model file's compiled layers,
whose first-layer weights then multiply it: a low-rank factorisation of the paper's first-layer
weight.

Models (both implementations have the same layers, weight shapes and initialisation):

- rgcn: featureless, hector.nn.RGCNConv x 2 (bias=False), ReLU between; with --input embedding,
  examples/rgcn_aifb.hector; PyG RGCNConv(aggr='mean') x 2 either way.
- rgat: examples/rgat_aifb.hector; PyG RGATConv (across-relation, additive self-attention) x 2,
  --heads heads in the first layer and one in the second, ReLU between.
- hgt: examples/hgt_aifb.hector; PyG HGTConv x 2 and a linear classifier. The relations are the
  (source type, predicate, destination type) triples, as in HGT; the embedding is --hidden wide
  (HGTConv's gated skip connection needs equal input and output widths).

Defaults, chosen on AIFB (the same for both implementations): no L2 penalty, the R-GCN paper's
setting for AIFB (it uses 5e-4 on MUTAG, BGS and AM; on AIFB 5e-4 costs RGCN about 1.5 points
and HGT about 25). Per model:

- rgcn: featureless; with --input embedding a 64-wide embedding whose rows have unit expected
  norm, as one-hot rows do (normal, std 1/8); no dropout.
- rgat, hgt: the attention models fit the embeddings of the 140 training entities perfectly and
  generalise worse; dropout 0.5 on the embedding and N(0, 1) rows help them most. rgat's
  embedding is 64 wide, hgt's 16 (= --hidden).

Prints the loss, training accuracy and time of every epoch (one line redrawn in place on a
terminal, one line per epoch otherwise), the test accuracy of every seed and a summary line:

    test accuracy: 93.89% (mean over 5 seeds, std 1.52), time per epoch: 40.1 ms

The time per epoch is the wall time of one training step (forward, loss, backward, Adam), the mean
over all seeds without each run's first epoch, which pays one-time costs.
"""
from __future__ import annotations

import argparse
import contextlib
import time
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

import _common
from _common import (Compiled, Progress, PygRGCN, check_gradients, mean_std, seed_everything,
                     synchronize)

# Per model: its file in examples/ and its defaults (None for embed_dim: --hidden; None for
# embed_std: 1/sqrt(embed_dim)).
MODELS = {
    "rgcn": dict(file="rgcn_aifb", embed_dim=64, embed_std=None, dropout=0.0, heads=None),
    "rgat": dict(file="rgat_aifb", embed_dim=64, embed_std=1.0, dropout=0.5, heads=2),
    "hgt": dict(file="hgt_aifb", embed_dim=None, embed_std=1.0, dropout=0.5, heads=2),
}


# --- the models: a learned embedding, then the layers ----------------------------------------

class EntityClassifier(nn.Module):
    """A learned embedding row per node (normal with std embed_std), dropout, then `body`;
    forward() gives every node's logits."""

    def __init__(self, num_nodes: int, embed_dim: int, embed_std: float, dropout: float,
                 body: nn.Module):
        super().__init__()
        self.embedding = nn.Embedding(num_nodes, embed_dim)
        nn.init.normal_(self.embedding.weight, std=embed_std)
        self.dropout = dropout
        self.body = body

    def forward(self) -> torch.Tensor:
        return self.body(F.dropout(self.embedding.weight, self.dropout, self.training))


class FeaturelessRGCN(nn.Module):
    """The paper's featureless RGCN: conv2(relu(conv1(None))), each an RGCNConv with PyG's
    interface (hector.nn's or torch_geometric.nn's), no bias, no basis decomposition;
    forward() gives every node's logits."""

    def __init__(self, Conv, num_nodes, hidden, classes, num_relations, edge_index, etype):
        super().__init__()
        self.conv1 = Conv(num_nodes, hidden, num_relations, aggr="mean", bias=False)
        self.conv2 = Conv(hidden, classes, num_relations, aggr="mean", bias=False)
        self.edge_index, self.etype = edge_index, etype

    def forward(self) -> torch.Tensor:
        x = F.relu(self.conv1(None, self.edge_index, self.etype))
        return self.conv2(x, self.edge_index, self.etype)


class PygRGAT(nn.Module):
    """RGATConv (across-relation, additive self-attention, concat) x 2 with ReLU between:
    rgat_aifb.hector."""

    def __init__(self, in_dim, hidden, classes, num_relations, heads, edge_index, etype):
        super().__init__()
        from torch_geometric.nn import RGATConv
        kw = dict(attention_mechanism="across-relation", attention_mode="additive-self-attention",
                  concat=True, negative_slope=0.2, dropout=0.0, bias=True)
        self.conv1 = RGATConv(in_dim, hidden // heads, num_relations, heads=heads, **kw)
        self.conv2 = RGATConv(hidden, classes, num_relations, heads=1, **kw)
        self.edge_index, self.etype = edge_index, etype

    def forward(self, x):
        x = F.relu(self.conv1(x, self.edge_index, self.etype))
        return self.conv2(x, self.edge_index, self.etype)


class PygHGT(nn.Module):
    """HGTConv x 2 and a linear classifier on the heterogeneous form of the graph: node type t is
    "t{t}", meta-relation r (a type triple) the edge type ("t{a}", "r{r}", "t{b}"):
    hgt_aifb.hector."""

    def __init__(self, hidden, classes, heads, ntype, num_ntypes, src, dst, etype,
                 num_relations):
        super().__init__()
        from torch_geometric.nn import HGTConv, Linear
        self.ntypes = [f"t{t}" for t in range(num_ntypes)]
        self.members = [torch.nonzero(ntype == t).flatten() for t in range(num_ntypes)]
        local = torch.empty_like(ntype)
        for idx in self.members:
            local[idx] = torch.arange(idx.numel(), device=idx.device)
        # Node order of the concatenated per-type outputs, and its inverse.
        self.order_inv = torch.argsort(torch.cat(self.members))
        self.edge_index_dict = {}
        for r in range(num_relations):
            m = etype == r
            a, b = int(ntype[src[m][0]]), int(ntype[dst[m][0]])
            self.edge_index_dict[(f"t{a}", f"r{r}", f"t{b}")] = torch.stack(
                [local[src[m]], local[dst[m]]])
        metadata = (self.ntypes, list(self.edge_index_dict))
        self.conv1 = HGTConv(hidden, hidden, metadata, heads=heads)
        self.conv2 = HGTConv(hidden, hidden, metadata, heads=heads)
        for conv in (self.conv1, self.conv2):
            init_like_hector(conv, hidden, hidden, heads)
            for rel in (conv.k_rel, conv.v_rel):
                rel.forward_naive = types.MethodType(_hetero_linear_naive, rel)
        self.lin = Linear(hidden, classes, weight_initializer="glorot", bias_initializer="zeros")

    def forward(self, x):
        xs = {name: x[idx] for name, idx in zip(self.ntypes, self.members)}
        for conv in (self.conv1, self.conv2):
            xs = conv(xs, self.edge_index_dict)
        # Every node type receives messages (every edge has its inverse), so none is None.
        h = torch.cat([xs[name] for name in self.ntypes])[self.order_inv]
        return self.lin(h)


def _hetero_linear_naive(self, x: torch.Tensor, type_ptr: torch.Tensor) -> torch.Tensor:
    """PyG HeteroLinear.forward_naive (its path without pyg-lib's segment_matmul): the same
    per-type products, over one split of x and concatenated, instead of a slice read and a slice
    write per type. HGTConv runs it on one copy of the source type's nodes per (edge type, head),
    about 1,100 types and 1.4 M rows on AIFB, and autograd's backward of every slice read or
    write touches the whole tensor: one backward pass took minutes, now well under a second."""
    parts = torch.split(x, torch.diff(type_ptr).tolist())
    return torch.cat([part @ self.weight[i] for i, part in enumerate(parts)])


def init_like_hector(conv, in_dim: int, out: int, heads: int) -> None:
    """Initialises a PyG HGTConv as the runtime initialises hgt.hector's weights: Glorot-uniform
    over a slice's first dimension and the product of the others (Wk, Wq, Wv: [in, H, d];
    W_att, W_msg: [H, d, d]; A: [out, out]), zero biases; mu and skip are ones in both. PyG's
    own initialisation (Kaiming-uniform weights, uniform biases) would start the two
    implementations from different distributions."""
    d = out // heads

    def glorot_(weight, fan_in, fan_out):
        bound = (6.0 / (fan_in + fan_out)) ** 0.5
        weight.uniform_(-bound, bound)

    with torch.no_grad():
        for lin in conv.kqv_lin.lins.values():      # weight [3 * out, in]: k, q, v
            glorot_(lin.weight, in_dim, out)
            lin.bias.zero_()
        for lin in conv.out_lin.lins.values():
            glorot_(lin.weight, out, out)
            lin.bias.zero_()
        for rel in (conv.k_rel, conv.v_rel):        # weight [H * edge types, d, d]
            glorot_(rel.weight, heads, d * d)


def meta_relations(data) -> tuple[torch.Tensor, int]:
    """Relabels the edges by their (source type, relation, destination type) triple: HGT's
    meta-relations, PyG's heterogeneous edge types."""
    key = (data.ntype[data.src] * data.num_relations + data.etype) * data.num_ntypes \
        + data.ntype[data.dst]
    triples, etype = torch.unique(key, return_inverse=True)
    return etype, int(triples.numel())


def prepare(args, data, dtype, device):
    """Everything the seeds share — the relations, the graph on the device and, for hector, the
    compiled model's class — and returns (make, description): make() builds a freshly initialised
    model (from the current RNG state) on device in dtype."""
    etype, R = data.etype, data.num_relations
    if args.model == "hgt":
        etype, R = meta_relations(data)
    src, dst = data.src.to(device), data.dst.to(device)
    etype, ntype = etype.to(device), data.ntype.to(device)
    N, T, C = data.num_nodes, data.num_ntypes, data.num_classes
    if args.impl == "pyg":
        import torch_geometric
        # RGCNConv's segment-matmul path (pyg-lib) averages over all incoming edges at once;
        # the per-relation loop gives the per-(destination, relation) mean of the paper.
        torch_geometric.backend.use_segment_matmul = False
    if args.input == "featureless":
        if args.impl == "hector":
            from hector.nn import RGCNConv
            what = "hector.nn.RGCNConv"
        else:
            from torch_geometric.nn import RGCNConv
            what = "torch_geometric.nn.RGCNConv"
        edge_index = torch.stack([src, dst])

        def make_featureless():
            return FeaturelessRGCN(RGCNConv, N, args.hidden, C, R, edge_index,
                                   etype).to(device=device, dtype=dtype)
        return make_featureless, f"{args.model} ({args.impl}: {what} x 2, featureless), {R} relations"
    if args.impl == "hector":
        import hector
        params = {"in": args.embed_dim, "hidden": args.hidden, "classes": C}
        if args.heads:
            params["att_heads"] = args.heads
        path = _common.compile_model(MODELS[args.model]["file"], params,
                                     target="cuda" if device == "cuda" else "cpu")
        Layer = hector.load(path)
        graph = hector.Graph(src, dst, etype, num_nodes=N, ntype=ntype, num_relations=R,
                             num_ntypes=T)
        # RGCN's edge input: 1/|N_r(i)| per edge, in the user's edge order.
        extra = [graph.edge_norm("relation", dtype)] if args.model == "rgcn" else []

        def make_body():
            layer = Layer(num_relations=R, num_ntypes=T, dtype=dtype, device=device)
            return Compiled(layer, graph, extra)
        what = _common.relative(path)
    else:
        edge_index = torch.stack([src, dst])

        def make_body():
            if args.model == "rgcn":
                return PygRGCN(args.embed_dim, args.hidden, C, R, edge_index, etype)
            if args.model == "rgat":
                return PygRGAT(args.embed_dim, args.hidden, C, R, args.heads, edge_index, etype)
            return PygHGT(args.hidden, C, args.heads, ntype, T, src, dst, etype, R)
        what = "PyG layers"

    def make():
        return EntityClassifier(N, args.embed_dim, args.embed_std, args.dropout,
                                make_body()).to(device=device, dtype=dtype)
    return make, f"{args.model} ({args.impl}: {what}), {R} relations"


# --- training ----------------------------------------------------------------------------------

def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    return float((logits.argmax(dim=1) == y).float().mean())


def autocast(args, device):
    """torch.autocast to --autocast's dtype around the model's forward, or nothing."""
    if args.autocast is None:
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=getattr(torch, args.autocast))


def train_one(args, data, make, seed, device) -> tuple[float, float, list[float]]:
    """Trains a fresh model with this seed; returns (test accuracy, final training accuracy,
    seconds per epoch)."""
    seed_everything(seed)
    model = make()
    train_idx, train_y = data.train_idx.to(device), data.train_y.to(device)
    test_idx, test_y = data.test_idx.to(device), data.test_y.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    progress = Progress(args.epochs, prefix=f"seed {seed}  " if args.seeds > 1 else "")
    times = []
    for epoch in range(1, args.epochs + 1):
        synchronize(device)
        start = time.perf_counter()
        model.train()
        opt.zero_grad()
        with autocast(args, device):
            logits = model()[train_idx]
        loss = F.cross_entropy(logits, train_y)
        loss.backward()
        if epoch == 1 and args.impl == "hector":
            check_gradients({"": model})
        opt.step()
        synchronize(device)
        times.append(time.perf_counter() - start)
        progress.update(epoch, {"loss": f"{loss.item():.4f}",
                                "train": f"{accuracy(logits, train_y):7.2%}",
                                "time": f"{times[-1] * 1e3:.1f} ms"})
    progress.close()
    model.eval()
    with torch.no_grad(), autocast(args, device):
        logits = model()
    return accuracy(logits[test_idx], test_y), accuracy(logits[train_idx], train_y), times


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(MODELS), default="rgcn")
    _common.add_common_args(parser, data="aifb", epochs=50, lr=0.01, weight_decay=0.0,
                            hidden=16, embed_dim=None, seeds=1,
                            notes={"embed_dim": "rgcn, rgat 64; hgt --hidden"})
    parser.add_argument("--input", choices=["featureless", "embedding"], default=None,
                        help="the input: one-hot node identity (the paper's; rgcn only, its "
                             "default) or a learned embedding (rgat, hgt)")
    parser.add_argument("--embed-std", type=float, default=None,
                        help="standard deviation of the embedding's initial values "
                             "(default: rgcn 1/sqrt(--embed-dim); rgat, hgt 1)")
    parser.add_argument("--dropout", type=float, default=None,
                        help="dropout on the embedding while training (default: rgcn 0; "
                             "rgat, hgt 0.5)")
    parser.add_argument("--autocast", choices=["bfloat16", "float16"], default=None,
                        help="run the forward under torch.autocast to this dtype (float32 "
                             "parameters, the layers' products in the lower precision; the "
                             "loss in float32)")
    parser.add_argument("--heads", type=int, default=None,
                        help="attention heads of rgat's first layer and of hgt's layers "
                             "(default 2; must divide --hidden)")
    args = parser.parse_args()
    defaults = MODELS[args.model]
    if args.input is None:
        args.input = "featureless" if args.model == "rgcn" else "embedding"
    if args.input == "featureless" and args.model != "rgcn":
        parser.error(f"--input featureless: only rgcn ({args.model} takes an embedding)")
    for name in ("embed_dim", "dropout", "heads"):
        if getattr(args, name) is None:
            setattr(args, name, defaults[name])
    if args.model == "hgt":
        if args.embed_dim is None:
            args.embed_dim = args.hidden
        elif args.embed_dim != args.hidden:
            parser.error("--embed-dim: hgt's input must be --hidden wide "
                         "(HGTConv's skip connection)")
    _common.check_args(parser, args)
    if args.embed_std is None:
        args.embed_std = defaults["embed_std"] or args.embed_dim ** -0.5
    if not 0 <= args.dropout < 1:
        parser.error("--dropout must be in [0, 1)")
    if args.autocast is not None and args.dtype != "float32":
        parser.error("--autocast: the parameters must be float32 (--dtype float32)")
    if args.model == "rgcn" and args.heads is not None:
        parser.error("--heads: rgcn has no attention heads")
    if args.heads is not None and (args.heads < 1 or args.hidden % args.heads):
        parser.error(f"--heads {args.heads} must divide --hidden {args.hidden}")
    return args


def main() -> None:
    args = parse_args()
    dtype, device = _common.DTYPES[args.dtype], args.device

    from hector.data import load_entities
    start = time.perf_counter()
    data = load_entities(args.data)
    print(f"{data.name}: {data.num_nodes} nodes, {data.num_edges} edges, {data.num_relations} "
          f"relations, {data.num_ntypes} node types; {len(data.train_idx)} training and "
          f"{len(data.test_idx)} test entities, {data.num_classes} classes "
          f"(loaded in {time.perf_counter() - start:.1f} s)")
    make, what = prepare(args, data, dtype, device)
    print(f"model: {what}; 2 layers, hidden {args.hidden}"
          + (f", {args.heads} heads" if args.heads else "")
          + ("; featureless input (one-hot node identity)" if args.input == "featureless" else
             f"; embedding {args.embed_dim} (std {args.embed_std:.3g}, dropout {args.dropout:g})")
          + f"; {args.dtype}" + (f" under {args.autocast} autocast" if args.autocast else "")
          + f" on {device}; Adam lr {args.lr:g}, weight decay "
          f"{args.weight_decay:g}, {args.epochs} epochs, full batch")

    test_accs, epoch_times = [], []
    for seed in range(args.seeds):
        test_acc, train_acc, times = train_one(args, data, make, seed, device)
        test_accs.append(test_acc)
        # The first epoch of a run pays one-time costs (allocations, lazy initialisation).
        epoch_times += times[1:] if len(times) > 1 else times
        print(f"seed {seed}: test accuracy {test_acc:.2%}, train accuracy {train_acc:.2%}, "
              f"{sum(times) / len(times) * 1e3:.1f} ms per epoch")
    mean, std = mean_std([100 * a for a in test_accs])
    ms = sum(epoch_times) / len(epoch_times) * 1e3
    over = f"mean over {args.seeds} seeds, std {std:.2f}" if args.seeds > 1 else "1 seed"
    print(f"test accuracy: {mean:.2f}% ({over}), time per epoch: {ms:.1f} ms")


if __name__ == "__main__":
    main()
