"""A small GPT-style transformer trained for a few steps with its activations spilled to SSD.

    python examples/transformer_spill.py --dir /tmp --steps 4
    python examples/transformer_spill.py --device cuda --layers 8 --dim 1024 --seq 1024

Any PyTorch model works the same way: wrap forward and backward in ``hector.spill``.
The model and batch builders are reused by the tests and by tools/bench_spill.py.
"""
import argparse
import math
import pathlib
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

_repo = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_repo / "runtime" / "python"))


class Block(nn.Module):
    """Pre-norm transformer block: causal multi-head self-attention and a GELU MLP."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        # Explicit attention (deterministic on every backend).
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attn = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    """Token and position embeddings, `layers` blocks, a final norm and a tied-free LM head."""

    def __init__(self, vocab=512, dim=128, heads=4, layers=4, seq=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, idx, targets):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def build_model(vocab=512, dim=128, heads=4, layers=4, seq=128, dtype=torch.float32,
                device="cpu", seed=0):
    """The example model with deterministic weights."""
    torch.manual_seed(seed)
    return GPT(vocab, dim, heads, layers, seq).to(device=device, dtype=dtype)


def make_batch(batch=8, seq=128, vocab=512, device="cpu", seed=1):
    """Random next-token data (inputs, targets)."""
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, vocab, (batch, seq + 1), generator=g)
    return data[:, :-1].to(device), data[:, 1:].to(device)


def train(model, batch, steps, spill_ctx=None, lr=1e-3):
    """Runs `steps` SGD steps; returns the losses. `spill_ctx` wraps the whole loop."""
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []

    def loop():
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = model(*batch)
            loss.backward()
            opt.step()
            losses.append(loss.item())

    if spill_ctx is None:
        loop()
    else:
        with spill_ctx:
            loop()
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dir", default=None, help="spill directory (default: $HECTOR_SPILL_DIR or /tmp)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threshold", type=int, default=256 << 10, help="threshold_bytes")
    p.add_argument("--no-spill", action="store_true", help="train without spilling (reference)")
    args = p.parse_args()

    import hector

    model = build_model(dim=args.dim, heads=args.heads, layers=args.layers, seq=args.seq,
                        device=args.device)
    batch = make_batch(args.batch, args.seq, device=args.device)
    ctx = None if args.no_spill else hector.spill(dir=args.dir, threshold_bytes=args.threshold,
                                                  model=model)
    start = time.perf_counter()
    losses = train(model, batch, args.steps, ctx)
    elapsed = time.perf_counter() - start
    for i, loss in enumerate(losses):
        print(f"step {i}: loss {loss:.4f}")
    print(f"{args.steps} steps in {elapsed:.2f} s")
    if ctx is not None:
        s = ctx.stats
        print(f"spilled {s['spilled']} storages ({s['bytes_written'] / 2**20:.1f} MiB written, "
              f"{s['bytes_read'] / 2**20:.1f} MiB read), kept {s['kept']}, "
              f"deduplicated {s['deduplicated']}, forwarded {s['forwarded']}, "
              f"peak resident saved {s['peak_resident_bytes'] / 2**20:.1f} MiB, I/O: {ctx.io_mode}")


if __name__ == "__main__":
    main()
