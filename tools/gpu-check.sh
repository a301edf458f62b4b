#!/usr/bin/env bash
# The GPU check: run on a machine with an NVIDIA GPU, LibTorch (the torch wheel) and CUDA, but no
# MLIR. It builds the runtime and the kernel-template check without the compiler, builds the
# emitted source packages that `tools/gpu-check-prepare.sh` wrote on a machine with hectorc,
# checks every CUDA result against the CPU path, and times ours against PyG.
#
#   tools/gpu-check.sh [OUT_DIR]        (default OUT_DIR: $OUT, else ./gpu-check-out)
#
# Everything it measures goes to OUT_DIR (logs, JSON); the exit code is non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-${OUT:-$root/gpu-check-out}}
mkdir -p "$out"
py=${PYTHON:-python3}
build=$root/build-gpu
status=0
step() {  # name, command...: runs one step, logs it, remembers failures
  local name=$1; shift
  echo "=== $name"
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "    exit $rc in $((SECONDS - t0)) s"
  tail -n 15 "$out/$name.log"
  [ $rc -eq 0 ] || status=1
  return $rc
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$out/gpu.txt" 2>&1
torch_dir=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

step configure cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DHECTOR_BUILD_COMPILER=OFF -DCMAKE_PREFIX_PATH="$torch_dir" \
  -DCMAKE_CUDA_COMPILER="${CUDACXX:-/usr/local/cuda/bin/nvcc}" -DHECTOR_CUDA_ARCHITECTURES=90 || exit 1
step build-runtime cmake --build "$build" -j "$(nproc)" || exit 1
export HECTOR_BUILD_DIR=$build

# 1. Kernel templates: every CUDA template against the CPU template.
step template-check bash -c "nvcc -std=c++17 -O2 -arch=sm_90 -Xcompiler -fopenmp \
  -I'$root/codegen-templates' '$root/test/templates/cuda_check.cu' -o '$build/cuda_check' && '$build/cuda_check'"

# 2. Runtime tests with CUDA (graph preprocessing on the device, zero-copy gathers).
step runtime-tests "$py" -m pytest -q -rs "$root/test/python/test_graph.py" \
  "$root/test/python/test_pinned.py" -p no:cacheprovider

# 3. Compiled models: packages prepared on a machine with hectorc (gpu-packages/), built here,
#    CUDA outputs against the CPU path, and timings against PyG.
if [ -d "$root/gpu-packages" ]; then
  step models "$py" "$root/tools/gpu_models.py" --packages "$root/gpu-packages" \
    --runtime "$build" --json "$out/models.json"
fi

# 4. Benchmarks that have a GPU mode.
step bench-gather "$py" "$root/tools/bench_gather.py" --json "$out/gather.json"
if [ -f "$root/tools/bench_spill.py" ]; then
  step bench-spill "$py" "$root/tools/bench_spill.py" --device cuda --json "$out/spill.json"
fi
exit $status
