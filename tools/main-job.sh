#!/usr/bin/env bash
# The main job: bootstrap, build, then compile every example model and print its Hector IR.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${HECTOR_BUILD_DIR:-$root/build}
export HECTOR_BUILD_DIR=$build
bash "$root/tools/build.sh" >/dev/null
for model in "$root"/examples/*.hector; do
  echo "// ===== $(basename "$model")"
  "$build/bin/hectorc" "$model" --emit=hector
done
