#!/usr/bin/env bash
# Prepares the GPU check on a machine with hectorc: writes the emitted source packages the GPU
# machine (no MLIR) builds, into gpu-packages/ (git-ignored; pass it to the GPU machine).
#   check-*: the examples at the sizes of the numerical tests (CUDA vs CPU vs PyG)
#   bench-*: RGCN, RGAT, HGT at Hector's evaluation sizes (in = out = 64, 1 head) for timing
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hectorc=${HECTORC:-${HECTOR_BUILD_DIR:-$root/build}/bin/hectorc}
out=$root/gpu-packages
rm -rf "$out" && mkdir -p "$out"
emit() {  # name example params...
  local name=$1 example=$2; shift 2
  local args=()
  for p in "$@"; do args+=(-P "$p"); done
  "$hectorc" "$root/examples/$example.hector" "${args[@]}" --target=cuda --emit=package -o "$out/$name"
}
emit check-rgcn rgcn in=8 out=4
emit check-rgcn_bases rgcn_bases in=8 out=4 bases=3
emit check-rgat rgat in=8 d=3 H=2
emit check-rgat_pyg rgat_pyg in=8 d=3 H=2
emit check-hgt hgt in=8 out=8 H=2
emit check-hgt_simplified hgt_simplified in=8 out=8 H=2
emit bench-rgcn rgcn in=64 out=64
emit bench-rgat_pyg rgat_pyg in=64 d=64 H=1
emit bench-hgt hgt in=64 out=64 H=1
# The real graphs, preprocessed here (the GPU machine has neither ../shared/data nor rdflib).
mkdir -p "$out/graphs"
PYTHONPATH="$root/runtime/python:$root/test/python" "$root/.venv/bin/python" - "$out/graphs" <<'PY'
import dataclasses, pathlib, sys, torch
from test_models import real_graph
for name in ("aifb", "umls"):
    torch.save(dataclasses.asdict(real_graph(name)), pathlib.Path(sys.argv[1]) / f"{name}.pt")
PY
echo "wrote $(ls -d "$out"/*-* | wc -l) packages and $(ls "$out/graphs" | wc -l) graphs to $out"
