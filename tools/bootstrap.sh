#!/usr/bin/env bash
# hectorc bootstrap: installs what the build and the tests need, and nothing that is already there.
# Idempotent: a second run checks, finds everything present, and returns in seconds.
#   Debian packages: MLIR/LLVM 19, clang 19 (libFuzzer), nlohmann/json, CLI11, Catch2, liburing,
#                    ccache, ninja, cmake.
#   Python:          a project-local virtual environment (.venv) with torch, torch_geometric, rdflib,
#                    pytest, pytest-xdist, lit, numpy.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

debs=(llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools clang-19 libclang-rt-19-dev
      nlohmann-json3-dev libcli11-dev catch2 liburing-dev ccache ninja-build cmake g++ python3-venv)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages, pinned to what the GPU check machine has (torch 2.11, torch-geometric 2.8).
venv="$root/.venv"
py_reqs=(torch==2.11.0 torch_geometric==2.8.1 rdflib pytest pytest-xdist lit numpy)
stamp="$venv/.hector-bootstrap"
want="${py_reqs[*]}"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: creating the Python environment in $venv"
  base_py=$(command -v python3)
  [ -x "$venv/bin/python" ] || "$base_py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$venv/bin/python" -m pip install -q "${py_reqs[@]}"
  echo "$want" >"$stamp"
fi
