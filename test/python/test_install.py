"""The parts of an installed package that tools/check-install.sh cannot reach: an installed
runtime refuses a torch of another version than the one it was built against."""
import pathlib

import pytest
import torch

from hector import _native


def test_installed_runtime_refuses_another_torch(monkeypatch):
    lib = pathlib.Path(_native.__file__).resolve().parent / "lib" / "libhector_runtime.so"
    monkeypatch.setattr(_native, "build_info", lambda: {"torch": "1.0.0", "version": "0.1.0"})
    with pytest.raises(RuntimeError, match=r"built against torch 1\.0\.0, but torch "
                       + torch.__version__.replace("+", r"\+") + " is installed; reinstall"):
        _native._check_torch(lib)
    # The same version (local tags such as +cpu, +cu130 aside) passes; so does a source checkout's
    # runtime, which has no build information.
    monkeypatch.setattr(_native, "build_info",
                        lambda: {"torch": torch.__version__.split("+")[0] + "+other"})
    _native._check_torch(lib)
    monkeypatch.setattr(_native, "build_info", lambda: None)
    _native._check_torch(lib)
    # A runtime outside the package (HECTOR_BUILD_DIR, HECTOR_RUNTIME_LIBRARY) is not checked.
    monkeypatch.setattr(_native, "build_info", lambda: {"torch": "1.0.0"})
    _native._check_torch(pathlib.Path("/elsewhere/lib/libhector_runtime.so"))
