"""The installed hector package, used as a user would: from a directory outside the repository,
with no HECTOR_* variables (tools/check-install.sh runs this).

Checks that the package, its hectorc and its runtime library are the installed ones, that
``hector.compile`` builds a model from its text (and a second call finds it in the cache), and that
``hector.nn.RGCNConv`` (aggr='mean', root weight, bias) gives, in float64, the output and gradients
of a plain PyTorch computation of the same layer on a graph with an isolated node, a self-loop, a
duplicate edge and an empty relation. Prints one line per check; exits non-zero on the first
failure."""
import os
import pathlib
import sys
import time

import torch

prefix = pathlib.Path(sys.argv[1]).resolve()
repo = pathlib.Path(sys.argv[2]).resolve()

import hector  # noqa: E402
from hector import _compile, _native  # noqa: E402


def check(ok, what):
    print(("ok     " if ok else "FAILED ") + what, flush=True)
    if not ok:
        sys.exit(1)


package = pathlib.Path(hector.__file__).resolve().parent
check(package.is_relative_to(prefix), f"hector is imported from the installation ({package})")
hectorc = _compile.find_hectorc().resolve()
check(hectorc.is_relative_to(prefix), f"hector.compile runs the installed hectorc ({hectorc})")
library = _native.library_path().resolve()
check(library.is_relative_to(prefix), f"the runtime library is the installed one ({library})")
check(not any(k.startswith("HECTOR_") and k != "HECTOR_CACHE_DIR" for k in os.environ),
      "no HECTOR_* variable is set but HECTOR_CACHE_DIR")
check(not pathlib.Path.cwd().resolve().is_relative_to(repo), "the working directory is outside the "
      "repository")

model = """
layer probe(in = 3, out = 2) {
  input x: node[in];
  input norm: edge[];
  weight W: relation[in, out];
  edge m = norm * linear(src.x, W);
  node h = sum(m);
  output h;
}
"""
start = time.monotonic()
cls = hector.compile(model, target="cpu")
first = time.monotonic() - start
start = time.monotonic()
hector.compile(model, target="cpu")
second = time.monotonic() - start
check(second < 1.0 and cls.__name__ == "probe", f"hector.compile from text: built in {first:.1f} s, "
      f"then from the cache in {second:.3f} s")

torch.manual_seed(0)
# 6 nodes, node 5 isolated; relation 2 has no edges; a self-loop (3->3) and a duplicate (0->1 twice).
src = torch.tensor([0, 0, 2, 3, 4, 1, 0])
dst = torch.tensor([1, 1, 1, 3, 0, 2, 4])
etype = torch.tensor([0, 0, 1, 1, 0, 3, 3])
R, N, cin, cout = 4, 6, 5, 3
layer = hector.nn.RGCNConv(cin, cout, R, aggr="mean").double()
x = torch.randn(N, cin, dtype=torch.float64, requires_grad=True)
out = layer(x, torch.stack([src, dst]), etype)


def reference(x, weight, root, bias):
    y = x @ root + bias
    for r in range(R):
        m = etype == r
        if not m.any():
            continue
        msg = x[src[m]] @ weight[r]
        total = torch.zeros(N, cout, dtype=x.dtype).index_add(0, dst[m], msg)
        count = torch.zeros(N, dtype=x.dtype).index_add(0, dst[m], torch.ones(int(m.sum()),
                                                                             dtype=x.dtype))
        y = y + total / count.clamp(min=1).unsqueeze(1)
    return y


params = [layer.weight, layer.root, layer.bias]
want = reference(x, *params)
check(torch.allclose(out, want, rtol=1e-10, atol=1e-10),
      f"RGCNConv output equals plain PyTorch (max diff {(out - want).abs().max().item():.2e})")
seed = torch.randn_like(out)
got = torch.autograd.grad(out, [x] + params, seed)
ref = torch.autograd.grad(want, [x] + params, seed)
worst = max((g - r).abs().max().item() for g, r in zip(got, ref))
check(all(torch.allclose(g, r, rtol=1e-10, atol=1e-10) for g, r in zip(got, ref)),
      f"RGCNConv gradients equal plain PyTorch (max diff {worst:.2e})")
print("all checks passed")
