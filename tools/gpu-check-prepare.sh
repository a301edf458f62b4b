#!/usr/bin/env bash
# Prepares the GPU check on a machine with hectorc: writes the emitted source packages the GPU
# machine (no MLIR) builds, into gpu-packages/ (git-ignored; pass it to the GPU machine).
#   check-*: the examples at the sizes of the numerical tests (CUDA vs CPU vs PyG)
#   bench-*: RGCN, RGAT, HGT at Hector's evaluation sizes (in = out = 64, 1 head) for timing
#   scale-*: RGCN, both RGATs, HGT at tools/bench_scale.py's sizes (64 wide, 4 heads)
#   minibatch-rgcn: the two-layer RGCN of the mini-batch example at in = 256 (hidden 64, AIFB's 4
#     classes), for tools/bench_minibatch.py (the benchmark and its --check on AIFB)
#   user-models: the models of test/python/user_models, CUDA vs CPU (the last step of the check)
#
#   tools/gpu-check-prepare.sh           writes gpu-packages/ (with STAMP)
#   tools/gpu-check-prepare.sh --stamp   prints the hash of the sources the packages come from
#                                        (gpu-check.sh compares it with gpu-packages/STAMP)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
stamp() {  # the compiler, the examples, the templates and the runtime's headers
  (cd "$root" && find compiler dialects codegen-templates runtime/include examples \
     test/python/user_models -type f \
     \( -name '*.h' -o -name '*.cuh' -o -name '*.cpp' -o -name '*.td' -o -name '*.hector' \) \
     -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
}
if [ "${1:-}" = "--stamp" ]; then
  stamp
  exit 0
fi
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
emit minibatch-rgcn rgcn_aifb in=256 hidden=64 classes=4
# scale-*: the models of tools/bench_scale.py at its default sizes (--hidden 64 --heads 4), for its
# --device cuda run on the ogbn-mag-size graph and twice it (gpu-check.sh step bench-scale)
emit scale-rgcn rgcn in=64 out=64
emit scale-rgat rgat in=64 d=16 H=4
emit scale-rgat_pyg rgat_pyg in=64 d=16 H=4
emit scale-hgt hgt in=64 out=64 H=4
# user-models: every model of test/python/user_models in one library (tools/gpu_models.py
# --select user-models: each layer's CUDA outputs and gradients against the CPU path).
cat "$root"/test/python/user_models/*.hector >"$out/user_models.hector"
"$hectorc" "$out/user_models.hector" --target=cuda --emit=package -o "$out/user-models"
rm "$out/user_models.hector"
# The real graphs, preprocessed here (the GPU machine has neither ../shared/data nor rdflib);
# aifb-entities.pt adds AIFB's labelled entities (the mini-batch check trains on them).
mkdir -p "$out/graphs"
PYTHONPATH="$root/runtime/python:$root/test/python" "$root/.venv/bin/python" - "$out/graphs" <<'PY'
import dataclasses, pathlib, sys, torch
from hector.data import load_entities
from test_models import DATA, real_graph
out = pathlib.Path(sys.argv[1])
for name in ("aifb", "umls"):
    torch.save(dataclasses.asdict(real_graph(name)), out / f"{name}.pt")
d = load_entities(DATA / "aifb")
torch.save({k: getattr(d, k) for k in ("name", "src", "dst", "etype", "num_nodes", "num_relations",
                                      "train_idx", "train_y", "test_idx", "test_y",
                                      "num_classes")}, out / "aifb-entities.pt")
PY
# nlohmann/json (the runtime's manifest reader): the GPU machine has no package of it.
nlohmann=$(printf '#include <nlohmann/json.hpp>\n' | c++ -x c++ -E -M - 2>/dev/null |
           tr ' \\' '\n\n' | grep -m1 '/nlohmann/json.hpp$' || true)
if [ -n "$nlohmann" ]; then
  mkdir -p "$out/include"
  cp -r "$(dirname "$nlohmann")" "$out/include/nlohmann"
fi
stamp >"$out/STAMP"
echo "wrote $(ls -d "$out"/*-* | wc -l) packages and $(ls "$out/graphs" | wc -l) graphs to $out"
