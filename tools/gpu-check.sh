#!/usr/bin/env bash
# The GPU check: run on a machine with an NVIDIA GPU, LibTorch (the torch wheel) and CUDA, but no
# MLIR. It builds the runtime and the kernel-template check without the compiler, builds the
# emitted source packages that `tools/gpu-check-prepare.sh` wrote on a machine with hectorc,
# checks every CUDA result against the CPU path, and times ours against PyG and the zero-copy
# feature table (PyTorch-Direct) against a CPU gather + copy and against features on the GPU.
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
# The whole check stays within $GPU_CHECK_BUDGET seconds (default 470: under 8 minutes). Each step
# has its own limit; a step gets at most what is left, and a step with under 20 s left is skipped
# (and counts as a failure), so one slow step cannot take the results of the others with it.
budget_end=$((SECONDS + ${GPU_CHECK_BUDGET:-470}))
# GPU_CHECK_STEPS=name,name,... runs only those steps (and the configure and build steps they
# need), e.g. GPU_CHECK_STEPS=feature-store-tests,bench-featurestore; steps left out do not fail.
step() {  # name, limit in seconds, command...: runs one step, logs it, remembers failures
  local name=$1 limit=$2; shift 2
  local left=$((budget_end - SECONDS))
  if [ -n "${GPU_CHECK_STEPS:-}" ] && [ "$name" != configure ] && [ "$name" != build-runtime ] &&
     [[ ",$GPU_CHECK_STEPS," != *",$name,"* ]]; then
    echo "=== $name: not selected (GPU_CHECK_STEPS)"
    return 0
  fi
  echo "=== $name"
  if [ $left -lt 20 ]; then
    echo "    skipped: the check's time budget is spent"
    status=1
    return 1
  fi
  [ $limit -le $left ] || limit=$left
  local t0=$SECONDS
  timeout "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "    exit $rc in $((SECONDS - t0)) s$([ $rc -eq 124 ] && echo " (stopped at its limit, $limit s)")"
  tail -n 15 "$out/$name.log"
  [ $rc -eq 0 ] || status=1
  return $rc
}

# One CUDA compiler for everything (CMake, the template check, the packages in gpu_models.py).
export CUDACXX=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
export PATH=$(dirname "$CUDACXX"):$PATH
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$out/gpu.txt" 2>&1
torch_dir=$("$py" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)')

# The packages must come from this tree: they carry copies of the runtime's headers and the
# templates, and a package from another revision fails at load (manifest format) or, worse,
# disagrees with this runtime's graph layout. gpu-check-prepare.sh stamps them with the hash of
# the sources they come from.
if [ ! -d "$root/gpu-packages" ]; then
  echo "gpu-check: $root/gpu-packages is missing: run tools/gpu-check-prepare.sh on a machine" \
       "with hectorc and bring gpu-packages/ along" >&2
  exit 1
fi
if [ "$(bash "$root/tools/gpu-check-prepare.sh" --stamp)" != "$(cat "$root/gpu-packages/STAMP" 2>/dev/null)" ]; then
  echo "gpu-check: gpu-packages/ was prepared from other sources than this tree's: rerun" \
       "tools/gpu-check-prepare.sh" >&2
  exit 1
fi

step configure 120 cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DHECTOR_BUILD_COMPILER=OFF -DCMAKE_PREFIX_PATH="$torch_dir" \
  -DCMAKE_CUDA_COMPILER="$CUDACXX" -DHECTOR_CUDA_ARCHITECTURES=90 \
  -DHECTOR_NLOHMANN_INCLUDE="$root/gpu-packages/include" || exit 1
# The template check compiles (one nvcc, about a minute) while the runtime builds.
timeout 240 "$CUDACXX" -std=c++17 -O2 -arch=sm_90 -Xcompiler -fopenmp -I"$root/codegen-templates" \
  "$root/test/templates/cuda_check.cu" -lcublas -o "$build/cuda_check" >"$out/template-compile.log" 2>&1 &
template_compile=$!
step build-runtime 240 cmake --build "$build" -j "$(nproc)" || exit 1
export HECTOR_BUILD_DIR=$build

# 1. Kernel templates: every CUDA template against the CPU template.
wait $template_compile
template_rc=$?
if [ $template_rc -eq 0 ]; then
  step template-check 120 "$build/cuda_check"
else
  echo "=== template-check: compiling test/templates/cuda_check.cu failed (exit $template_rc)"
  tail -n 15 "$out/template-compile.log"
  status=1
fi

# 2. Runtime tests with CUDA (graph preprocessing on the device, zero-copy gathers, the
#    mini-batch loader's side stream).
step runtime-tests 200 "$py" -m pytest -q -rs "$root/test/python/test_graph.py" \
  "$root/test/python/test_pinned.py" "$root/test/python/test_spill.py" \
  "$root/test/python/test_minibatch.py::test_loader_on_cuda_zero_copy_side_stream" \
  -p no:cacheprovider

# 3. Compiled models: packages prepared on a machine with hectorc (gpu-packages/), built here,
#    CUDA outputs against the CPU path, and timings against PyG.
step models 240 "$py" "$root/tools/gpu_models.py" --packages "$root/gpu-packages" \
  --runtime "$build" --json "$out/models.json"

# 4. Mini-batch training with a zero-copy feature table: the same losses, parameters and test
#    accuracy as with the features on the GPU (AIFB; loader thread, side stream). Uses the
#    minibatch-rgcn package (built by step 3 when it ran, else here); bounded in time so that the
#    whole check stays within its budget.
minibatch_pkg=$root/gpu-packages/minibatch-rgcn
if [ -f "$minibatch_pkg/manifest.json" ]; then
  step minibatch-check 90 "$py" "$root/tools/bench_minibatch.py" --check \
    --package "$minibatch_pkg" --json "$out/minibatch-check.json"
else
  echo "=== minibatch-check, bench-minibatch: $minibatch_pkg missing: run tools/gpu-check-prepare.sh"
  status=1
fi

# 5. Benchmarks that have a GPU mode.
step bench-gather 60 "$py" "$root/tools/bench_gather.py" --json "$out/gather.json"
if [ -f "$minibatch_pkg/manifest.json" ]; then
  step bench-minibatch 120 "$py" "$root/tools/bench_minibatch.py" \
    --package "$minibatch_pkg" --json "$out/minibatch.json"
fi
if [ -f "$root/tools/bench_spill.py" ]; then
  step bench-spill 120 "$py" "$root/tools/bench_spill.py" --device cuda --dim 1024 \
    --layers 12 --seq 1024 --batch 4 --warmup 1 --steps 3 --budget 8 --json "$out/spill.json"
fi

# 5b. Full-graph training at the sizes of real graphs (tools/bench_scale.py --device cuda): the
#    synthetic ogbn-mag graph (1.94M nodes, 21.1M edges) and twice it, ours (the scale-* packages,
#    built here) against PyG, one process per row; GPU memory is torch.cuda.max_memory_allocated.
#    The graphs are generated on the first run (cached in build/bench-scale-cache).
step bench-scale 240 env HECTOR_BUILD_DIR="$build" "$py" "$root/tools/bench_scale.py" \
  --device cuda --scales 1,2 --models rgcn,rgat_pyg,hgt,rgat --impls hector,pyg \
  --packages "$root/gpu-packages" --repeats 2 --budget 5 --timeout 150 --json "$out/scale.json"

# 5c. Float32 against bfloat16 autocast (tools/bench_precision.py): the same graph at full size,
#    ours and PyG's, training-step time, peak GPU memory and the 16-bit run's error, with
#    cuBLAS's own GEMM rates (torch.mm) at the graph's shapes beside them.
step bench-precision 150 env HECTOR_BUILD_DIR="$build" "$py" "$root/tools/bench_precision.py" \
  --device cuda --scales 1 --models rgcn,rgat_pyg,hgt --impls hector,pyg \
  --packages "$root/gpu-packages" --repeats 2 --budget 5 --timeout 60 --json "$out/precision.json"

# 5d. The same graph with TF32 allowed for float32 matrix products (--tf32: ours computes its
#    GEMMs on TF32 tensor cores, PyTorch's cuBLAS and PyG likewise), checked against PyG at TF32
#    resolution.
step bench-scale-tf32 150 env HECTOR_BUILD_DIR="$build" "$py" "$root/tools/bench_scale.py" \
  --device cuda --scales 1 --models rgcn,rgat_pyg,hgt --impls hector,pyg --tf32 \
  --packages "$root/gpu-packages" --repeats 2 --budget 5 --timeout 60 --json "$out/scale-tf32.json"

# 6. The user models (test/python/user_models, one library): every layer and variant, CUDA
#    outputs and gradients against the CPU path on the awkward graphs. Late: the steps above
#    matter more if time runs short.
step user-models 200 "$py" "$root/tools/gpu_models.py" --packages "$root/gpu-packages" \
  --runtime "$build" --select user-models --json "$out/user-models.json"

# 7. Storage-backed features (hector.FeatureStore): the tests with the cache in GPU memory and
#    cuFile (reads straight into GPU memory, checksums verified there), then the benchmark with
#    the GPU cache (static/dynamic/hybrid x prefetcher off/on) on the minibatch-rgcn model (built
#    by step 3, else here). Last, so the first to go when time runs short: run them alone with
#    GPU_CHECK_STEPS=feature-store-tests,bench-featurestore. Without a GPU the CUDA tests skip
#    and the benchmark runs its CPU half.
step feature-store-tests 120 "$py" -m pytest -q -rs "$root/test/python/test_feature_store.py" \
  -k "gpu or awkward_indices or prefetch or checksum or short_read" -p no:cacheprovider
fs_device=$("$py" -c 'import torch; print("cuda" if torch.cuda.is_available() else "cpu")')
if [ -f "$minibatch_pkg/manifest.json" ]; then
  step bench-featurestore 150 "$py" "$root/tools/bench_featurestore.py" --device "$fs_device" \
    --package "$minibatch_pkg" --nodes 500000 --memory-limit 0 --policies dynamic,hybrid \
    --static-scores sampled --batches 20 --epochs 1 --json "$out/featurestore.json"
fi
exit $status
