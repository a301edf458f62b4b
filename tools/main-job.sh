#!/usr/bin/env bash
# The main job: bootstrap, build, compile the two-layer RGCN of examples/rgcn_aifb.hector with
# hectorc and train it on AIFB for entity classification (examples/train_entities.py: the R-GCN
# paper's setup, 50 epochs, 5 seeds). Ends with the line
#   test accuracy: XX.XX% (mean over 5 seeds, std S.SS), time per epoch: Y.Y ms
# Extra arguments go to the training script (e.g. --seeds 1, --device cuda).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HECTOR_BUILD_DIR:-$root/build}
export HECTOR_BUILD_DIR=$build

echo "== bootstrap and build ($build)"
mkdir -p "$build"
log="$build/main-job-build.log"
bash "$root/tools/build.sh" >"$log" 2>&1 || { cat "$log"; echo "main-job: the build failed"; exit 1; }

echo "== compile examples/rgcn_aifb.hector and train it on AIFB"
"$root/.venv/bin/python" "$root/examples/train_entities.py" --model rgcn --impl hector \
  --data "$root/../shared/data/aifb" --seeds 5 "$@"
