#!/usr/bin/env bash
# Runs the front-end fuzz target for a bounded time on a scratch copy of the committed corpus
# (test/fuzz/corpus: malformed inputs) and seeds (test/fuzz/seeds: valid models). Exits non-zero
# if the target crashes, hangs or leaks; the crashing input is left in the artifact directory.
#
#   test/fuzz/run_fuzzer.sh [FUZZER] [SECONDS] [CORPUS_DIR...]
#     FUZZER      default: $HECTOR_FUZZER, else build/bin/hector-frontend-fuzzer
#     SECONDS     default: $HECTOR_FUZZ_SECONDS, else 60
#     CORPUS_DIR  default: test/fuzz/corpus and test/fuzz/seeds (hector-mlir-fuzzer:
#                 test/fuzz/mlir-corpus); inputs up to $HECTOR_FUZZ_MAX_LEN bytes (default 8192,
#                 65536 for the dialect text of hector-mlir-fuzzer)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
fuzzer="${1:-${HECTOR_FUZZER:-$root/build/bin/hector-frontend-fuzzer}}"
seconds="${2:-${HECTOR_FUZZ_SECONDS:-60}}"
shift $(( $# < 2 ? $# : 2 ))
dirs=("$@")
[[ ${#dirs[@]} -gt 0 ]] || dirs=("$here/corpus" "$here/seeds")
max_len=8192
[[ "$(basename "$fuzzer")" == *mlir* ]] && max_len=65536
if [[ ! -x "$fuzzer" ]]; then
  echo "run_fuzzer.sh: no fuzz target at $fuzzer (build the hector-frontend-fuzzer target)" >&2
  exit 2
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/hector-fuzz.XXXXXX")"
trap 'rm -rf "$work/corpus"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
for d in "${dirs[@]}"; do cp "$d"/* "$work/corpus/"; done
echo "run_fuzzer.sh: fuzzing for ${seconds}s (artifacts in $work/artifacts)"
status=0
"$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
  -max_len="${HECTOR_FUZZ_MAX_LEN:-$max_len}" -close_fd_mask=3 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
  >"$work/fuzz.log" 2>&1 || status=$?
tail -n 15 "$work/fuzz.log"
if [[ $status -ne 0 ]]; then
  echo "run_fuzzer.sh: FAILED (exit $status); log: $work/fuzz.log; inputs:" >&2
  ls -l "$work/artifacts" >&2
  exit 1
fi
echo "run_fuzzer.sh: no crash"
rm -rf "$work"
