#!/usr/bin/env bash
# Configures and builds hectorc and its runtime into $HECTOR_BUILD_DIR (default: build/).
# Runs the bootstrap first, so it works on a fresh machine.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$root/tools/bootstrap.sh"
build=${HECTOR_BUILD_DIR:-$root/build}
args=(-G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
      -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir
      -DLLVM_EXTERNAL_LIT="$root/.venv/bin/lit")
if [ -x /usr/local/cuda/bin/nvcc ]; then
  args+=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake "${args[@]}" >"${build}.configure.log" 2>&1 || { cat "${build}.configure.log"; exit 1; }
fi
cmake --build "$build" -j "$(nproc)"
