# hector.load reads a file's ELF headers before dlopen: an empty, truncated, damaged or foreign
# file, or a library of another hectorc ABI, is a RuntimeError naming the file and the problem,
# and the process lives on (each case runs in this process; a second load of the good library
# still works). dlopen of a truncated library faults (SIGBUS) in the loader without the check.
import pathlib
import shutil
import subprocess

import pytest
import torch

import hector
from conftest import BUILD, _repo


@pytest.fixture(scope="module")
def good_library(compiled_library):
    return compiled_library("rgcn", "in=6", "out=5")


def copy(src, dst, data=None):
    dst.write_bytes(src.read_bytes() if data is None else data)
    return dst


def expect_refused(path, *fragments):
    with pytest.raises(RuntimeError) as info:
        hector.load(path)
    text = str(info.value)
    assert text.startswith("hector.load: ") and str(path) in text, text
    for f in fragments:
        assert f in text, text
    return text


def test_the_built_library_carries_the_marker(good_library):
    hector.load_runtime()   # registers torch.ops.hector (the test may run alone)
    assert torch.ops.hector.check_library(str(good_library)) == ""
    data = pathlib.Path(good_library).read_bytes()
    assert b"hectorc library abi 3\0" in data


def test_empty_file(tmp_path):
    expect_refused(copy(tmp_path, tmp_path / "empty.so", b""), "the file is empty")


def test_not_elf(tmp_path):
    expect_refused(copy(tmp_path, tmp_path / "text.so", b"#!/bin/sh\necho hello\n" * 10),
                   "not an ELF file")
    expect_refused(copy(tmp_path, tmp_path / "tiny.so", b"\x7fELF"), "too small")


@pytest.mark.parametrize("fraction", [0.001, 0.1, 0.5, 0.9, 0.999])
def test_truncated_library(good_library, tmp_path, fraction):
    data = pathlib.Path(good_library).read_bytes()
    cut = copy(tmp_path, tmp_path / "cut.so", data[:max(64, int(len(data) * fraction))])
    expect_refused(cut, "truncated or damaged")


def test_truncated_by_one_byte(good_library, tmp_path):
    data = pathlib.Path(good_library).read_bytes()
    expect_refused(copy(tmp_path, tmp_path / "cut1.so", data[:-1]), "truncated")


def test_foreign_shared_libraries(tmp_path):
    # The runtime library itself and a C library: ELF shared objects without the marker.
    runtime = BUILD / "lib" / "libhector_runtime.so"
    expect_refused(copy(runtime, tmp_path / "runtime.so"), "no hectorc ABI marker")
    src = tmp_path / "f.c"
    src.write_text("int f(void) { return 1; }\n")
    lib = tmp_path / "libforeign.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    expect_refused(lib, "no hectorc ABI marker")


def test_executable_is_not_a_library(tmp_path):
    exe = shutil.which("true")
    text = expect_refused(copy(pathlib.Path(exe), tmp_path / "true.so"))
    assert "not a shared library" in text or "no hectorc ABI marker" in text


def test_other_abi_and_foreign_machine(good_library, tmp_path):
    data = pathlib.Path(good_library).read_bytes()
    other = data.replace(b"hectorc library abi 3\0", b"hectorc library abi 7\0")
    assert other != data
    expect_refused(copy(tmp_path, tmp_path / "abi7.so", other),
                   "library ABI 7", "reads ABI 3", "rebuild")
    arm = bytearray(data)
    arm[18:20] = (183).to_bytes(2, "little")     # e_machine = EM_AARCH64
    expect_refused(copy(tmp_path, tmp_path / "arm.so", bytes(arm)), "another machine")


def test_a_directory_and_a_missing_file(tmp_path):
    with pytest.raises((FileNotFoundError, RuntimeError)):
        hector.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        hector.load(tmp_path / "missing.so")


def test_process_lives_on_and_loads_the_good_library(good_library):
    Layer = hector.load(good_library)
    assert Layer.manifest["layer"] == "rgcn"


def test_truncated_library_in_a_fresh_process(good_library, tmp_path):
    """Without any earlier load in the process (the loader's state is fresh), as the report
    ran it: a Python exception and exit code 0, never SIGBUS."""
    data = pathlib.Path(good_library).read_bytes()
    cut = copy(tmp_path, tmp_path / "cut.so", data[:len(data) // 3])
    code = (f"import sys; sys.path.insert(0, {str(_repo / 'runtime' / 'python')!r})\n"
            "import hector\n"
            f"try:\n    hector.load({str(cut)!r})\nexcept RuntimeError as e:\n"
            "    print('refused:', e)\n")
    r = subprocess.run([str(_repo / ".venv" / "bin" / "python"), "-c", code], capture_output=True,
                       text=True, timeout=300, env={"HECTOR_BUILD_DIR": str(BUILD),
                                                    "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert "refused:" in r.stdout and "truncated" in r.stdout
