"""The runtime's C++ API (runtime/include/hector/model.h): a C++ program (examples/cpp) loads a
compiled RGCN, runs it and trains through it (autograd from C++), and compares the outputs and
gradients with a plain ATen reference written in the program."""
import os
import pathlib
import subprocess

import pytest
import torch.utils

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("HECTOR_BUILD_DIR", REPO / "build"))


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """examples/cpp built against the runtime."""
    build = tmp_path_factory.mktemp("cpp")
    torch_dir = pathlib.Path(torch.utils.cmake_prefix_path) / "Torch"
    cfg = subprocess.run(["cmake", "-S", str(REPO / "examples" / "cpp"), "-B", str(build),
                          f"-DTorch_DIR={torch_dir}", f"-DHECTOR_RUNTIME_DIR={BUILD}"],
                         capture_output=True, text=True)
    assert cfg.returncode == 0, cfg.stdout + cfg.stderr
    bld = subprocess.run(["cmake", "--build", str(build), "-j", "2"], capture_output=True,
                         text=True)
    assert bld.returncode == 0, bld.stdout + bld.stderr
    return build / "rgcn_forward"


def test_cpp_program_runs_a_compiled_layer(compiled_library, program):
    lib = compiled_library("rgcn", "in=5", "out=3")
    run = subprocess.run([str(program), str(lib)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "parameter W [4, 5, 3]" in run.stdout
    assert "parameter root [5, 3]" in run.stdout
    assert "max |compiled - reference| = " in run.stdout
    assert "max |compiled - reference| gradient = " in run.stdout
    # RGCN's variants at in=5 > out=3, each run from C++. Aggregate-then-transform pays even
    # though in > out: its per-pair sum of the 5-wide inputs is a node traversal over the pairs
    # (no edge row is stored), and the GEMM runs on the pairs.
    for variant in ("none", "reorder", "compact"):
        assert f"variant {variant}: max |compiled - reference| = " in run.stdout


def test_cpp_program_reports_a_bad_library(program, compiled_library, tmp_path):
    """hector::loadLibrary checks the file before dlopen: an exception, never a fault in the
    loader (a truncated library made dlopen raise SIGBUS)."""
    good = pathlib.Path(compiled_library("rgcn", "in=5", "out=3")).read_bytes()
    cases = {"junk.so": (b"not a library\n" * 8, "not an ELF file"),
             "empty.so": (b"", "the file is empty"),
             "cut.so": (good[:len(good) // 2], "is truncated or damaged"),
             "cut1.so": (good[:-1], "is truncated or damaged"),
             "abi9.so": (good.replace(b"hectorc library abi 3\0", b"hectorc library abi 9\0"),
                         "library ABI 9")}
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        run = subprocess.run([str(program), str(tmp_path / name)], capture_output=True,
                             text=True)
        assert run.returncode == 1, (name, run.returncode, run.stderr)
        assert "hector::loadLibrary" in run.stderr and name in run.stderr, run.stderr
        assert message in run.stderr, (name, run.stderr)
