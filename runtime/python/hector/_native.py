"""Locating and loading libhector_runtime.so (the runtime's torch operators)."""
import json
import os
import pathlib

import torch

_loaded = None


def library_path():
    """Where the runtime library is: $HECTOR_RUNTIME_LIBRARY, else $HECTOR_BUILD_DIR/lib, else
    lib/ inside this package (an installed package: pip install .), else the repository's
    build/lib."""
    explicit = os.environ.get("HECTOR_RUNTIME_LIBRARY")
    if explicit:
        return pathlib.Path(explicit)
    build = os.environ.get("HECTOR_BUILD_DIR")
    if build:
        return pathlib.Path(build) / "lib" / "libhector_runtime.so"
    here = pathlib.Path(__file__).resolve().parent
    installed = here / "lib" / "libhector_runtime.so"
    if installed.is_file():
        return installed
    return here.parents[2] / "build" / "lib" / "libhector_runtime.so"


def build_info():
    """What an installed package was built with (``_build_info.json``: its version, the torch
    version its runtime links, whether it has CUDA kernels), or None in a source checkout."""
    path = pathlib.Path(__file__).resolve().parent / "_build_info.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text())


def _check_torch(path):
    """An installed runtime loads only into the torch version it was built against: LibTorch has
    no stable C++ ABI, and a mismatch fails with undefined symbols or worse."""
    info = build_info()
    if info is None or path.parent != pathlib.Path(__file__).resolve().parent / "lib":
        return
    built = str(info.get("torch", ""))
    running = torch.__version__.split("+")[0]
    if built and built.split("+")[0] != running:
        raise RuntimeError(
            f"hector: this installation was built against torch {built}, but torch "
            f"{torch.__version__} is installed; reinstall hector (pip install .) with this torch")


def load_runtime():
    """Loads the runtime library once; returns ``torch.ops.hector``."""
    global _loaded
    if _loaded is None:
        path = library_path()
        if not path.is_file():
            raise RuntimeError(
                f"hector: the runtime library {path} does not exist; build it (cmake --build build) "
                "or point HECTOR_RUNTIME_LIBRARY at it")
        _check_torch(path)
        torch.ops.load_library(str(path))
        _loaded = torch.ops.hector
    return _loaded
