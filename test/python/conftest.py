# pytest configuration: makes the `hector` package (runtime/python) importable and points it at the
# built runtime library ($HECTOR_BUILD_DIR, default build/); compiles example models once per
# session for every test file that needs them.
import fcntl
import hashlib
import os
import pathlib
import subprocess
import sys

import pytest

_repo = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(_repo / "runtime" / "python"))
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", _repo / "build"))


@pytest.fixture(scope="session")
def compiled_library(tmp_path_factory):
    """compiled_library(example, "in=8", ...) -> path of examples/<example>.hector built by
    hectorc with those parameters (CPU kernels), cached for the session. Under pytest-xdist the
    workers share one cache directory: the first worker to need a library builds it (under a
    file lock), the others wait for it and load the same file."""
    cache = {}
    base = tmp_path_factory.getbasetemp()
    # xdist gives each worker its own basetemp (.../popen-gw0) under one shared directory.
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "libraries"
    shared.mkdir(parents=True, exist_ok=True)

    def build(example, *params):
        key = (example, params)
        if key not in cache:
            digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
            out = shared / f"{example}-{digest}" / f"{example}.so"
            with open(shared / f"{example}-{digest}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not out.exists():
                    out.parent.mkdir(exist_ok=True)
                    cmd = [str(BUILD / "bin" / "hectorc"),
                           str(_repo / "examples" / f"{example}.hector"), "--target=cpu", "-o",
                           str(out)]
                    for p in params:
                        cmd += ["-P", p]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    assert r.returncode == 0, f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}"
            cache[key] = out
        return cache[key]

    return build


@pytest.fixture(scope="session")
def compile_model(compiled_library):
    """compile_model(example, "in=8", ...) -> the module class of its entry layer."""
    import hector

    return lambda example, *params: hector.load(compiled_library(example, *params))
