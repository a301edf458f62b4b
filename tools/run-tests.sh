#!/usr/bin/env bash
# Builds everything, then runs every test suite: lit (dialect, front end, examples), Catch2 (unit,
# templates), the front-end fuzzer (bounded time), pytest (runtime, end to end), and the
# reliability subset: the spill engine's stress program under ThreadSanitizer and a slice of the
# hectorc mutation run (tools/fuzz_mutants.py).
# Ends with one line `N passed, N failed, N skipped`; exits non-zero on any failure.
#
#   tools/run-tests.sh                               the suites above
#   tools/run-tests.sh --sanitize=address,undefined  everything built with ASan+UBSan (own tree)
#   tools/run-tests.sh --sanitize=thread             the spill engine under TSan, many repetitions
# (the sanitizer runs: tools/sanitize-tests.sh; docs/development.md, "Reliability checks").
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for arg in "$@"; do
  case "$arg" in
  --sanitize=*) exec bash "$root/tools/sanitize-tests.sh" "${arg#--sanitize=}" ;;
  *) echo "run-tests.sh: unknown argument '$arg'" >&2; echo "0 passed, 1 failed"; exit 2 ;;
  esac
done
build=${HECTOR_BUILD_DIR:-$root/build}
export HECTOR_BUILD_DIR=$build
if ! bash "$root/tools/build.sh"; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi
results="$build/test-results"
rm -rf "$results" && mkdir -p "$results"
status=()   # "suite:exit-code" pairs for the summary

run_suite() {  # name, command...
  local name=$1; shift
  echo "=== $name"
  "$@"
  local rc=$?
  status+=("$name:$rc")
}

run_suite lit "$root/.venv/bin/lit" -sv "$build/test" --xunit-xml-output "$results/lit.xml"
for t in hector-unit-tests hector-template-tests hector-template-native-tests; do
  if [ -x "$build/bin/$t" ]; then
    run_suite "$t" "$build/bin/$t" -r junit -o "$results/$t.xml"
  fi
done
if [ -x "$root/test/fuzz/run_fuzzer.sh" ] && [ -x "$build/bin/hector-frontend-fuzzer" ]; then
  run_suite fuzz bash -c "'$root/test/fuzz/run_fuzzer.sh' '$build/bin/hector-frontend-fuzzer' \
    ${HECTOR_FUZZ_SECONDS:-60} > '$results/fuzz.log' 2>&1; rc=\$?; tail -n 5 '$results/fuzz.log'; exit \$rc"
fi
# HECTOR_PYTEST_WORKERS=N: pytest on N workers (pytest-xdist, one test file per worker at a
# time, so module fixtures are built once; the workers share the compiled example libraries,
# conftest.py). The default is one worker per core, at most 2 (the suite's peak memory is a few
# GiB per worker); 0 runs pytest in this process.
cores=$(nproc)
workers=${HECTOR_PYTEST_WORKERS:-$((cores < 2 ? 0 : 2))}
xdist=()
if [ "$workers" != 0 ] && "$root/.venv/bin/python" -c "import xdist" 2>/dev/null; then
  xdist=(-n "$workers" --dist loadfile)
fi
run_suite pytest "$root/.venv/bin/python" -m pytest -q -rs "${xdist[@]}" "$root/test/python" \
  --junitxml="$results/pytest.xml" -p no:cacheprovider
# The installed package (cmake --install of this build), used from outside the repository.
run_suite install bash "$root/tools/check-install.sh"
# The reliability subset (a few minutes): the spill engine under ThreadSanitizer, and 2 x 150
# mutants of dialect text and model files through every --emit stage.
run_suite spill-tsan bash -c "cmake --build '$build' -j $(nproc) --target hector-spill-stress-tsan \
  > '$results/spill-tsan-build.log' 2>&1 || { tail -n 30 '$results/spill-tsan-build.log'; exit 1; }
  TSAN_OPTIONS='halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tools/sanitizer/tsan.supp' \
  OMP_NUM_THREADS=1 '$build/bin/hector-spill-stress-tsan' 1 6"
run_suite mutants "$root/.venv/bin/python" "$root/tools/fuzz_mutants.py" --mutants \
  "${HECTOR_MUTANTS:-150}" --seed "${HECTOR_MUTANTS_SEED:-1}" \
  --findings "$results/mutant-findings"

"$root/.venv/bin/python" "$root/tools/test_summary.py" "$results" "${status[@]}"
