#!/usr/bin/env bash
# Builds everything, then runs every test suite: lit (dialect, front end, examples), Catch2 (unit,
# templates), the front-end fuzzer (bounded time) and pytest (runtime, end to end).
# Ends with one line `N passed, N failed, N skipped`; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
for t in hector-unit-tests hector-template-tests; do
  if [ -x "$build/bin/$t" ]; then
    run_suite "$t" "$build/bin/$t" -r junit -o "$results/$t.xml"
  fi
done
if [ -x "$root/test/fuzz/run_fuzzer.sh" ] && [ -x "$build/bin/hector-frontend-fuzzer" ]; then
  run_suite fuzz bash -c "'$root/test/fuzz/run_fuzzer.sh' '$build/bin/hector-frontend-fuzzer' \
    ${HECTOR_FUZZ_SECONDS:-60} > '$results/fuzz.log' 2>&1; rc=\$?; tail -n 5 '$results/fuzz.log'; exit \$rc"
fi
run_suite pytest "$root/.venv/bin/python" -m pytest -q -rs "$root/test/python" \
  --junitxml="$results/pytest.xml" -p no:cacheprovider

"$root/.venv/bin/python" "$root/tools/test_summary.py" "$results" "${status[@]}"
