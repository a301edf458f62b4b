#!/usr/bin/env bash
# The sanitizer runs (tools/run-tests.sh --sanitize=LIST calls this):
#
#   address,undefined  builds hectorc, the runtime, the unit and template tests and the fuzz
#                      targets with clang 19 and -fsanitize=address,undefined into
#                      build-sanitize-address-undefined/ (CUDA off); the libraries hectorc builds
#                      there are instrumented too. Runs lit, Catch2, both fuzz targets over the
#                      committed corpora (and a bounded fuzzing run), and pytest with the
#                      sanitizer runtime preloaded (PyTorch is not instrumented: python must load
#                      the runtime first, and leak detection is off: CPython frees little at exit).
#   thread             builds the spill engine's stress program with -fsanitize=thread (the
#                      engine's sources; LibTorch uninstrumented) and runs it with many
#                      repetitions: the engine's I/O threads against the caller threads.
#
# Any report ends the program that made it (halt_on_error, -fno-sanitize-recover), so a report
# is a failed test. Suppressions: tools/sanitizer/*.supp, each entry justified there.
# Ends with `N passed, N failed, N skipped`. Environment: HECTOR_FUZZ_SECONDS (default 60),
# HECTOR_SANITIZE_BUILD_DIR (default build-sanitize-<list>), HECTOR_TSAN_REPETITIONS (default 6).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list=${1:?usage: sanitize-tests.sh address,undefined|thread}
supp="$root/tools/sanitizer"
status=()

run_suite() {  # name, command...
  local name=$1; shift
  echo "=== $name"
  "$@"
  local rc=$?
  status+=("$name:$rc")
}

summary() {
  "$root/.venv/bin/python" "$root/tools/test_summary.py" "$results" "${status[@]}"
}

bash "$root/tools/bootstrap.sh" || { echo "bootstrap failed"; echo "0 passed, 1 failed"; exit 1; }
# clang's OpenMP runtime (the clang-built runtime, template tests and emitted libraries use it).
if [ "$list" != thread ] && ! dpkg-query -W -f='${Status}' libomp-19-dev 2>/dev/null | grep -q "install ok installed"; then
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq \
    --no-install-recommends libomp-19-dev >/dev/null || { echo "cannot install libomp-19-dev"; echo "0 passed, 1 failed"; exit 1; }
fi

case "$list" in
thread)
  # The normal tree holds the TSan target (its sources only are instrumented).
  build=${HECTOR_BUILD_DIR:-$root/build}
  export HECTOR_BUILD_DIR=$build
  results="$build/test-results-tsan"
  rm -rf "$results" && mkdir -p "$results"
  if ! bash "$root/tools/build.sh" >/dev/null || \
     ! cmake --build "$build" -j "$(nproc)" --target hector-spill-stress-tsan; then
    echo "build failed"; echo "0 passed, 1 failed"; exit 1
  fi
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  export OMP_NUM_THREADS=1
  run_suite spill-tsan "$build/bin/hector-spill-stress-tsan" "${HECTOR_TSAN_REPETITIONS:-6}" 8
  summary
  exit $?
  ;;
address,undefined|undefined,address|address)
  ;;
*)
  echo "sanitize-tests.sh: unknown sanitizer list '$list' (address,undefined or thread)" >&2
  echo "0 passed, 1 failed"
  exit 2
  ;;
esac

build=${HECTOR_SANITIZE_BUILD_DIR:-$root/build-sanitize-${list//,/-}}
results="$build/test-results"
export HECTOR_BUILD_DIR=$build
args=(-G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
      -DHECTOR_SANITIZE="$list" -DHECTOR_ENABLE_CUDA=OFF
      -DMLIR_DIR=/usr/lib/llvm-19/lib/cmake/mlir -DLLVM_EXTERNAL_LIT="$root/.venv/bin/lit")
if [ ! -f "$build/build.ninja" ]; then
  cmake "${args[@]}" >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; echo "0 passed, 1 failed"; exit 1; }
fi
if ! cmake --build "$build" -j "$(nproc)"; then
  echo "build failed"; echo "0 passed, 1 failed"; exit 1
fi
rm -rf "$results" && mkdir -p "$results"

asan_rt=$(clang++-19 -print-file-name=libclang_rt.asan-x86_64.so)
# detect_leaks=0: CPython and LibTorch keep their allocations at exit. allocator_may_return_null:
# tests ask for impossible sizes on purpose and expect an error, not an ASan abort.
# detect_odr_violation=0: LibTorch's wheel and our libraries both define some inline globals of
# the c10 headers (the same definition, one copy per library), which ASan's ODR check reports.
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:detect_odr_violation=0:halt_on_error=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
export LSAN_OPTIONS="detect_leaks=0"

run_suite lit "$root/.venv/bin/lit" -sv "$build/test" --xunit-xml-output "$results/lit.xml"
for t in hector-unit-tests hector-template-tests; do
  [ -x "$build/bin/$t" ] && run_suite "$t" "$build/bin/$t" -r junit -o "$results/$t.xml"
done
# The committed corpora, each input once, then bounded fuzzing from them.
corpus_replay() {  # fuzzer, corpus dirs...
  local fuzzer=$1; shift
  "$fuzzer" -runs=0 -close_fd_mask=3 -rss_limit_mb=4096 "$@" 2>&1 | tail -n 3
  return "${PIPESTATUS[0]}"
}
if [ -x "$build/bin/hector-frontend-fuzzer" ]; then
  run_suite frontend-corpus corpus_replay "$build/bin/hector-frontend-fuzzer" \
    "$root/test/fuzz/corpus" "$root/test/fuzz/seeds"
fi
if [ -x "$build/bin/hector-mlir-fuzzer" ]; then
  run_suite mlir-corpus corpus_replay "$build/bin/hector-mlir-fuzzer" "$root/test/fuzz/mlir-corpus"
  run_suite mlir-fuzz bash "$root/test/fuzz/run_fuzzer.sh" "$build/bin/hector-mlir-fuzzer" \
    "${HECTOR_FUZZ_SECONDS:-60}" "$root/test/fuzz/mlir-corpus"
fi
# Python: the sanitizer runtime first in the process (PyTorch's own libraries are not built with
# it); every child (hectorc, the library builds, the C++ example) inherits the preload.
run_suite pytest env LD_PRELOAD="$asan_rt" "$root/.venv/bin/python" -m pytest -q -rs \
  "$root/test/python" --junitxml="$results/pytest.xml" -p no:cacheprovider
summary
