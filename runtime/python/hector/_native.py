"""Locating and loading libhector_runtime.so (the runtime's torch operators)."""
import os
import pathlib

import torch

_loaded = None


def library_path():
    """Where the runtime library is: $HECTOR_RUNTIME_LIBRARY, else $HECTOR_BUILD_DIR/lib, else the
    repository's build/lib."""
    explicit = os.environ.get("HECTOR_RUNTIME_LIBRARY")
    if explicit:
        return pathlib.Path(explicit)
    build = os.environ.get("HECTOR_BUILD_DIR")
    if build:
        return pathlib.Path(build) / "lib" / "libhector_runtime.so"
    repo = pathlib.Path(__file__).resolve().parents[3]
    return repo / "build" / "lib" / "libhector_runtime.so"


def load_runtime():
    """Loads the runtime library once; returns ``torch.ops.hector``."""
    global _loaded
    if _loaded is None:
        path = library_path()
        if not path.is_file():
            raise RuntimeError(
                f"hector: the runtime library {path} does not exist; build it (cmake --build build) "
                "or point HECTOR_RUNTIME_LIBRARY at it")
        torch.ops.load_library(str(path))
        _loaded = torch.ops.hector
    return _loaded
