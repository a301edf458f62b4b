#!/usr/bin/env bash
# The installed package, used as a user would (test/install/check_installed.py): from a directory
# outside the repository, with no HECTOR_* variables, hector.compile and hector.nn against plain
# PyTorch.
#
#   tools/check-install.sh             installs the build tree ($HECTOR_BUILD_DIR, default build/)
#                                      with `cmake --install --component hector` into a temporary
#                                      prefix and checks it with .venv's python (CI; seconds plus
#                                      two model builds)
#   tools/check-install.sh --pip VENV  `pip install .` into the virtual environment VENV (which
#                                      must have torch: python -m venv VENV &&
#                                      VENV/bin/pip install torch), then the same checks with VENV's
#                                      python (a full build of hectorc and the runtime: ~15 min on
#                                      2 cores)
# Exits non-zero on any failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/hector-install-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cwd" "$work/cache"
cp "$root/test/install/check_installed.py" "$work/check_installed.py"
# The user's environment: none of the build's variables.
for v in $(env | sed -n 's/^\(HECTOR[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset PYTHONPATH

if [ "${1:-}" = "--pip" ]; then
  venv=$(cd "${2:?--pip needs a virtual environment}" && pwd)
  python=$venv/bin/python
  "$python" -c "import torch" || { echo "check-install: $venv has no torch (pip install torch)"; exit 1; }
  (cd "$root" && "$python" -m pip install --quiet "$root")
  prefix=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
  cd "$work/cwd"
  HECTOR_CACHE_DIR=$work/cache "$python" "$work/check_installed.py" "$prefix" "$root"
else
  build=${HECTOR_BUILD_DIR:-$root/build}
  cmake --install "$build" --component hector --prefix "$work/prefix" > "$work/install.log" ||
    { cat "$work/install.log"; exit 1; }
  cd "$work/cwd"
  PYTHONPATH=$work/prefix HECTOR_CACHE_DIR=$work/cache \
    "$root/.venv/bin/python" "$work/check_installed.py" "$work/prefix" "$root"
fi
