"""Link prediction on a knowledge graph — UMLS by default — with an RGCN encoder and a DistMult
decoder (Schlichtkrull et al. 2018, section 4), the encoder compiled by hectorc or built from PyG.

    python examples/train_links.py                     # compiled encoder
    python examples/train_links.py --impl pyg          # the same model from PyG's RGCNConv

Encoder: a learned embedding per entity, then two RGCN layers (examples/rgcn_umls.hector; PyG
RGCNConv(aggr='mean')), ReLU between. The message-passing graph holds the training triples only,
each as an edge h -> t of relation 2r and an inverse edge t -> h of relation 2r + 1.
Decoder: DistMult, score(h, r, t) = sum_k z_h[k] R_r[k] z_t[k], with a learned diagonal R_r per
relation. Every epoch is one full-batch step on all training triples and --negatives corrupted
copies of each (head or tail replaced by a uniformly drawn entity, with equal probability),
binary cross-entropy on their scores.

After the last epoch: filtered ranking of the test triples against every entity, on both sides
(the other known true triples of train, valid and test do not count against a test triple; ties
count half), reported as MRR and Hits@1/3/10 — with a summary line

    test MRR: 0.812, Hits@1 71.2%, Hits@3 89.0%, Hits@10 97.4% (mean over 1 seed), time per epoch: 45.1 ms
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import _common
from _common import (Compiled, Progress, PygRGCN, check_gradients, mean_std, seed_everything,
                     synchronize)

MODEL_FILE = "rgcn_umls"


class LinkPredictor(nn.Module):
    """Embedding -> encoder -> DistMult."""

    def __init__(self, num_nodes, embed_dim, encoder, num_relations, out):
        super().__init__()
        self.embedding = nn.Embedding(num_nodes, embed_dim)
        nn.init.normal_(self.embedding.weight, std=embed_dim ** -0.5)   # rows of unit norm
        self.encoder = encoder
        self.rel = nn.Parameter(torch.empty(num_relations, out))
        nn.init.xavier_uniform_(self.rel)

    def encode(self) -> torch.Tensor:
        return self.encoder(self.embedding.weight)

    def score(self, z, h, r, t) -> torch.Tensor:
        return (z[h] * self.rel[r] * z[t]).sum(-1)


def message_graph(train: torch.Tensor):
    """Edges h -> t (relation 2r) and t -> h (relation 2r + 1) of the training triples."""
    h, r, t = train.unbind(1)
    return torch.cat([h, t]), torch.cat([t, h]), torch.cat([2 * r, 2 * r + 1])


def prepare(args, data, dtype, device):
    """What the seeds share (graph, compiled class); returns (make, description)."""
    src, dst, etype = (v.to(device) for v in message_graph(data.train))
    N, R = data.num_nodes, 2 * data.num_relations
    if args.impl == "hector":
        import hector
        path = _common.compile_model(
            MODEL_FILE, {"in": args.embed_dim, "hidden": args.hidden, "out": args.hidden},
            target="cuda" if device == "cuda" else "cpu")
        Layer = hector.load(path)
        graph = hector.Graph(src, dst, etype, num_nodes=N, num_relations=R)
        norm = graph.edge_norm("relation", dtype)

        def make_encoder():
            return Compiled(Layer(num_relations=R, dtype=dtype, device=device), graph, [norm])
        what = _common.relative(path)
    else:
        import torch_geometric
        torch_geometric.backend.use_segment_matmul = False   # per-(destination, relation) mean
        edge_index = torch.stack([src, dst])

        def make_encoder():
            return PygRGCN(args.embed_dim, args.hidden, args.hidden, R, edge_index, etype)
        what = "PyG layers"

    def make():
        return LinkPredictor(N, args.embed_dim, make_encoder(), data.num_relations,
                             args.hidden).to(device=device, dtype=dtype)
    return make, f"RGCN encoder ({args.impl}: {what}), {R} relations, DistMult decoder"


def corrupt(triples: torch.Tensor, k: int, num_nodes: int) -> torch.Tensor:
    """k copies of every triple with the head or the tail (equally likely) replaced by a uniformly
    drawn entity."""
    neg = triples.repeat(k, 1)
    entity = torch.randint(num_nodes, (neg.shape[0],), device=neg.device)
    side = torch.randint(2, (neg.shape[0],), device=neg.device) * 2     # column 0 or 2
    neg[torch.arange(neg.shape[0], device=neg.device), side] = entity
    return neg


def triple_keys(triples: torch.Tensor, num_nodes: int, num_relations: int) -> torch.Tensor:
    h, r, t = triples.unbind(-1)
    return (h * num_relations + r) * num_nodes + t


@torch.no_grad()
def filtered_ranks(model, z, triples, known, num_nodes, num_relations, batch_rows=1 << 22):
    """The filtered rank of every triple's tail among all (h, r, ?) and of its head among all
    (?, r, t): candidates that are other known triples are left out; equal scores count half."""
    ranks = []
    entities = torch.arange(num_nodes, device=z.device)
    step = max(1, batch_rows // num_nodes)
    for start in range(0, triples.shape[0], step):
        h, r, t = triples[start:start + step].unbind(1)
        rows = torch.arange(h.numel(), device=z.device)
        rel = model.rel[r]
        for scores, cand, target in (
                ((z[h] * rel) @ z.T, (h * num_relations + r)[:, None] * num_nodes + entities, t),
                ((z[t] * rel) @ z.T,
                 (entities[None, :] * num_relations + r[:, None]) * num_nodes + t[:, None], h)):
            other = torch.isin(cand, known)
            other[rows, target] = False
            scores = scores.masked_fill(other, float("-inf"))
            true = scores[rows, target][:, None]
            greater = (scores > true).sum(1)
            ties = (scores == true).sum(1) - 1
            ranks.append(1 + greater + ties / 2)
    return torch.cat(ranks).double()


def train_one(args, data, make, seed, device):
    """Trains a fresh model with this seed; returns ({metric: value}, seconds per epoch)."""
    seed_everything(seed)
    model = make()
    train = data.train.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    progress = Progress(args.epochs, prefix=f"seed {seed}  " if args.seeds > 1 else "")
    labels = torch.cat([torch.ones(train.shape[0]), torch.zeros(args.negatives * train.shape[0])])
    labels = labels.to(device=device, dtype=model.rel.dtype)
    times = []
    for epoch in range(1, args.epochs + 1):
        synchronize(device)
        start = time.perf_counter()
        model.train()
        opt.zero_grad()
        batch = torch.cat([train, corrupt(train, args.negatives, data.num_nodes)])
        z = model.encode()
        scores = model.score(z, batch[:, 0], batch[:, 1], batch[:, 2])
        loss = F.binary_cross_entropy_with_logits(scores, labels)
        loss.backward()
        if epoch == 1 and args.impl == "hector":
            check_gradients({"": model})
        opt.step()
        synchronize(device)
        times.append(time.perf_counter() - start)
        progress.update(epoch, {"loss": f"{loss.item():.4f}",
                                "time": f"{times[-1] * 1e3:.1f} ms"})
    progress.close()
    model.eval()
    known = torch.cat([data.train, data.valid, data.test]).to(device)
    known = torch.unique(triple_keys(known, data.num_nodes, data.num_relations))
    with torch.no_grad():
        ranks = filtered_ranks(model, model.encode(), data.test.to(device), known,
                               data.num_nodes, data.num_relations)
    metrics = {"MRR": float((1 / ranks).mean())}
    for k in (1, 3, 10):
        metrics[f"Hits@{k}"] = float((ranks <= k).double().mean())
    return metrics, times


def format_metrics(m: dict[str, float]) -> str:
    return (f"MRR {m['MRR']:.3f}, Hits@1 {m['Hits@1']:.1%}, Hits@3 {m['Hits@3']:.1%}, "
            f"Hits@10 {m['Hits@10']:.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    _common.add_common_args(parser, data="umls", epochs=100, lr=0.01, weight_decay=0.0,
                            hidden=64, embed_dim=None, seeds=1,
                            notes={"embed_dim": "--hidden"})
    parser.add_argument("--negatives", type=int, default=4,
                        help="corrupted triples per training triple (default 4)")
    args = parser.parse_args()
    _common.check_args(parser, args)
    if args.negatives < 1:
        parser.error("--negatives must be at least 1")
    args.embed_dim = args.embed_dim or args.hidden
    dtype, device = _common.DTYPES[args.dtype], args.device

    from hector.data import load_triples
    data = load_triples(args.data)
    print(f"{data.name}: {data.num_nodes} entities, {data.num_relations} relations; "
          f"{len(data.train)} training, {len(data.valid)} validation and {len(data.test)} test "
          "triples")
    make, what = prepare(args, data, dtype, device)
    print(f"model: {what}; 2 layers, hidden {args.hidden}, embedding {args.embed_dim}; "
          f"{args.dtype} on {device}; Adam lr {args.lr}, weight decay {args.weight_decay}, "
          f"{args.epochs} epochs, full batch, {args.negatives} negatives per triple")

    results, epoch_times = [], []
    for seed in range(args.seeds):
        metrics, times = train_one(args, data, make, seed, device)
        results.append(metrics)
        epoch_times += times[1:] if len(times) > 1 else times
        print(f"seed {seed}: test {format_metrics(metrics)}, "
              f"{sum(times) / len(times) * 1e3:.1f} ms per epoch")
    mean = {k: mean_std([r[k] for r in results])[0] for k in results[0]}
    ms = sum(epoch_times) / len(epoch_times) * 1e3
    print(f"test {format_metrics(mean)} (mean over {args.seeds} seed"
          f"{'s' if args.seeds > 1 else ''}), time per epoch: {ms:.1f} ms")


if __name__ == "__main__":
    main()
