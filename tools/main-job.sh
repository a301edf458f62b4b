#!/usr/bin/env bash
# The main job: bootstrap, build, compile a two-layer RGCN with hectorc (hector.nn.RGCNConv: the
# model files it ships, built by hector.compile) and train it on AIFB for entity classification
# at the R-GCN paper's featureless setting (examples/train_entities.py: one-hot input, 16 hidden,
# no bias, no basis decomposition, no L2, Adam 0.01, 50 epochs, 10 seeds). Ends with the line
#   test accuracy: XX.XX% (mean over 10 seeds, std S.SS), time per epoch: Y.Y ms
# Extra arguments go to the training script (e.g. --seeds 1, --device cuda).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HECTOR_BUILD_DIR:-$root/build}
export HECTOR_BUILD_DIR=$build

echo "== bootstrap and build ($build)"
mkdir -p "$build"
log="$build/main-job-build.log"
bash "$root/tools/build.sh" >"$log" 2>&1 || { cat "$log"; echo "main-job: the build failed"; exit 1; }

echo "== compile the RGCN layers and train them on AIFB (featureless)"
"$root/.venv/bin/python" "$root/examples/train_entities.py" --model rgcn --impl hector \
  --input featureless --data "$root/../shared/data/aifb" --seeds 10 "$@"
