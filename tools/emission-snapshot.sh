#!/usr/bin/env bash
# Snapshots, or compares with a snapshot, everything hectorc emits for the example and user
# models: the dialect as generated, the kernel-level IR, the C++ and CUDA sources and the source
# package (manifest, CMakeLists), with the default flags and inference-only. A refactoring of the
# compiler must leave this output byte-identical, or explain each difference.
#
#   tools/emission-snapshot.sh write DIR      # write the snapshot into DIR (must not exist)
#   tools/emission-snapshot.sh diff DIR       # emit again into a temporary directory, diff -r
#
# HECTORC (default: $HECTOR_BUILD_DIR/bin/hectorc, or build/bin/hectorc) selects the compiler.
set -euo pipefail
mode=${1:-}
dir=${2:-}
if [[ ( $mode != write && $mode != diff ) || -z $dir ]]; then
  echo "usage: $0 write|diff DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
hectorc=${HECTORC:-${HECTOR_BUILD_DIR:-$root/build}/bin/hectorc}
[[ -x $hectorc ]] || { echo "$0: no hectorc at '$hectorc'" >&2; exit 2; }

emit_all() { # OUTDIR
  local out=$1 model name
  mkdir -p "$out"
  for model in "$root"/examples/*.hector "$root"/test/python/user_models/*.hector; do
    name=$(basename "$(dirname "$model")")__$(basename "$model" .hector)
    "$hectorc" "$model" --emit=hector -o "$out/$name.hector.mlir"
    "$hectorc" "$model" --emit=lowered -o "$out/$name.lowered.mlir"
    "$hectorc" "$model" --emit=cpp --target=cuda -o "$out/$name.cpp"
    "$hectorc" "$model" --emit=cuda --target=cuda -o "$out/$name.cu"
    "$hectorc" "$model" --emit=cpp --target=cpu -o "$out/$name.cpu.cpp"
    "$hectorc" "$model" --emit=cpp --no-backward -o "$out/$name.nobackward.cpp"
    "$hectorc" "$model" --emit=package --target=cuda -o "$out/$name.package"
  done
}

if [[ $mode == write ]]; then
  [[ ! -e $dir ]] || { echo "$0: '$dir' exists" >&2; exit 2; }
  emit_all "$dir"
  echo "snapshot written to $dir ($(find "$dir" -type f | wc -l) files)"
else
  [[ -d $dir ]] || { echo "$0: no snapshot at '$dir'" >&2; exit 2; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  emit_all "$tmp/now"
  if diff -r "$dir" "$tmp/now"; then
    echo "emission identical to $dir"
  else
    echo "emission differs from $dir" >&2
    exit 1
  fi
fi
