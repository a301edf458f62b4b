"""``hector.compile``: a model file (or its text) to module classes, through ``hectorc`` and a
disk cache.

    RGCN = hector.compile("examples/rgcn.hector", **{"in": 16, "out": 16}, target="cpu")
    layer = RGCN(num_relations=R)

The library is built once per content hash of (model text, parameters, target, flags, the
``hectorc`` binary, the template/runtime directories it is pointed at, the environment that
changes the build (HECTOR_LIBRARY_CXX_FLAGS, HECTOR_CUDA_ARCHITECTURES), torch's version) and kept
in the cache directory (``$HECTOR_CACHE_DIR``, default ``~/.cache/hector``) as ``<hash>.so``.
Later calls, in this or any other process, load that file. Concurrent callers (DDP ranks,
DataLoader workers) serialise on an exclusive ``flock`` of ``<hash>.lock``: the first builds
into a private temporary file and renames it into place, the others wait and load the result.
A compile error raises :class:`CompileError` with the compiler's ``FILE:LINE:COL: error:``
message; nothing is left in the cache.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

__all__ = ["compile", "compile_all", "compile_library", "find_hectorc", "cache_dir",
           "CompileError"]

_COMPILER_HASHES: dict[tuple, str] = {}


class CompileError(RuntimeError):
    """``hectorc`` rejected the model: the message is the compiler's diagnostics
    (``FILE:LINE:COL: error: ...`` with the source line and a caret)."""


def find_hectorc() -> pathlib.Path:
    """The ``hectorc`` that :func:`compile` runs: ``$HECTORC``, else ``bin/hectorc`` next to the
    package (an installed package), else ``$HECTOR_BUILD_DIR/bin/hectorc``, else the
    repository's ``build/bin/hectorc``, else ``hectorc`` on ``PATH``."""
    tried = []
    explicit = os.environ.get("HECTORC")
    if explicit:
        path = pathlib.Path(explicit)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise RuntimeError(f"hector.compile: HECTORC={explicit} is not an executable file")
    here = pathlib.Path(__file__).resolve().parent
    candidates = [here / "bin" / "hectorc"]
    build = os.environ.get("HECTOR_BUILD_DIR")
    if build:
        candidates.append(pathlib.Path(build) / "bin" / "hectorc")
    if len(here.parents) > 2:  # a source checkout: runtime/python/hector
        candidates.append(here.parents[2] / "build" / "bin" / "hectorc")
    for path in candidates:
        tried.append(str(path))
        if path.is_file() and os.access(path, os.X_OK):
            return path
    on_path = shutil.which("hectorc")
    if on_path:
        return pathlib.Path(on_path)
    tried.append("hectorc on PATH")
    raise RuntimeError("hector.compile: hectorc is not installed: looked for " + ", ".join(tried)
                       + ". Build it (tools/build.sh), install the package (pip install .), or "
                       "set HECTORC to its path")


def cache_dir() -> pathlib.Path:
    """Where compiled libraries are kept: ``$HECTOR_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/hector``, else ``~/.cache/hector``."""
    explicit = os.environ.get("HECTOR_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "hector"


def _compiler_hash(hectorc: pathlib.Path) -> str:
    """sha256 of the hectorc binary (memoised per path, size and modification time)."""
    st = hectorc.stat()
    key = (str(hectorc.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _COMPILER_HASHES:
        digest = hashlib.sha256()
        with open(hectorc, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        _COMPILER_HASHES[key] = digest.hexdigest()
    return _COMPILER_HASHES[key]


def _format_param(name, value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"hector.compile: parameter {name!r} must be an int or a float, got "
                        f"{type(value).__name__}")
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"hector.compile: {name!r} is not a parameter name")
    return f"{name}={value!r}"


def _read_model(model) -> tuple[str, str | None]:
    """(text, path or None): ``model`` is a path to a model file or the model's text."""
    if isinstance(model, os.PathLike) or (isinstance(model, str) and "\n" not in model
                                          and "{" not in model):
        path = pathlib.Path(model)
        if not path.is_file():
            raise FileNotFoundError(f"hector.compile: model file {path} does not exist")
        return path.read_text(), str(path)
    if not isinstance(model, str):
        raise TypeError(f"hector.compile: model must be a path or the text of a .hector file, "
                        f"got {type(model).__name__}")
    return model, None


def _hectorc_env() -> dict:
    """hectorc's environment: the library links the LibTorch of the torch imported here (not the
    one hectorc was configured with, which an installed hectorc may no longer have), and an
    installed environment's own cmake when the shell has not put it on PATH."""
    env = dict(os.environ)
    if not env.get("HECTOR_TORCH_DIR"):
        import torch.utils
        env["HECTOR_TORCH_DIR"] = str(pathlib.Path(torch.utils.cmake_prefix_path) / "Torch")
    scripts = pathlib.Path(sys.executable).parent
    if not env.get("HECTOR_CMAKE") and not shutil.which("cmake") and (scripts / "cmake").is_file():
        env["HECTOR_CMAKE"] = str(scripts / "cmake")
    return env


def compile_library(model, *, target=None, flags=(), **params) -> pathlib.Path:
    """Builds (or finds in the cache) the library of ``model`` and returns its path; see
    :func:`compile`."""
    text, source_path = _read_model(model)
    args = [_format_param(k, v) for k, v in sorted(params.items())]
    if target is not None and target not in ("cpu", "cuda"):
        raise ValueError(f"hector.compile: target must be 'cpu', 'cuda' or None (hectorc's "
                         f"default), got {target!r}")
    flags = [str(f) for f in flags]
    for f in flags:
        if f not in ("--no-backward", "--no-reorder", "--no-compact", "--portable",
                     "--index64", "-O0", "-O1", "-O2", "-O3") and not f.startswith("--entry="):
            raise ValueError(f"hector.compile: unsupported flag {f!r}")
    hectorc = find_hectorc()
    import torch
    key_fields = {
        "text": text, "params": args, "target": target, "flags": flags,
        "hectorc": _compiler_hash(hectorc),
        "env": {k: os.environ.get(k) for k in ("HECTOR_TEMPLATES_DIR", "HECTOR_RUNTIME_DIR",
                                                "HECTOR_TORCH_DIR", "HECTOR_LIBRARY_CXX_FLAGS",
                                                "HECTOR_CUDA_ARCHITECTURES")},
        "torch": torch.__version__,
    }
    key = hashlib.sha256(json.dumps(key_fields, sort_keys=True).encode()).hexdigest()[:40]
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    library = directory / f"{key}.so"
    if library.is_file():
        return library
    with open(directory / f"{key}.lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if library.is_file():  # another process built it while this one waited
                return library
            tmp = directory / f"{key}.tmp-{os.getpid()}.so"
            cmd = [str(hectorc), source_path if source_path else "-", "--emit=library",
                   "-o", str(tmp)]
            if target is not None:
                cmd.append(f"--target={target}")
            for a in args:
                cmd += ["-P", a]
            cmd += flags
            if os.environ.get("HECTOR_COMPILE_VERBOSE"):
                print(f"hector.compile: building {library.name} ({' '.join(cmd)})",
                      file=sys.stderr, flush=True)
            try:
                result = subprocess.run(cmd, input=None if source_path else text,
                                        capture_output=True, text=True, env=_hectorc_env())
                if result.returncode != 0:
                    message = (result.stderr or result.stdout).strip()
                    raise CompileError(message or f"hectorc exited with status "
                                                  f"{result.returncode}")
                os.replace(tmp, library)
            finally:
                if tmp.exists():
                    tmp.unlink()
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return library


def compile_all(model, *, target=None, flags=(), **params) -> dict[str, type]:
    """Every layer of ``model`` as module classes by layer name (see :func:`compile`)."""
    from .module import load_all
    return load_all(compile_library(model, target=target, flags=flags, **params))


def compile(model, *, target=None, layer=None, flags=(), **params) -> type:
    """The module class of ``model``'s entry layer (``layer=``: another), built by ``hectorc``.

    ``model`` is a path to a ``.hector`` file or the text of one; ``params`` override its
    parameter defaults (``hectorc -P NAME=VALUE``; ``**{"in": 8}`` for names that are Python
    keywords); ``target`` is ``"cpu"``, ``"cuda"`` or ``None`` (hectorc's default: CUDA as well
    when it was configured with a CUDA compiler); ``flags`` are further hectorc flags
    (``--no-backward``, ``--no-reorder``, ``--no-compact``, ``--portable``, ``--index64``,
    ``--entry=NAME``, and ``-O0`` to ``-O3``, the kernels' optimisation level, default
    ``-O3``). Raises :class:`CompileError` with the compiler's ``FILE:LINE:COL``
    diagnostics when the model is rejected, ``RuntimeError`` when hectorc is not found."""
    from .module import load
    return load(compile_library(model, target=target, flags=flags, **params), layer=layer)
