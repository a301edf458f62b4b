"""Activation spilling to SSD (SSDTrain) for any PyTorch model.

``with hector.spill(dir="/nvme/tmp"):`` installs the runtime's C++ spilling engine
through :func:`torch.autograd.graph.saved_tensors_hooks`: every tensor autograd
saves in forward is handed to the engine, which writes it to a few large files in
the background and reads it back ahead of backward. Compiled hector layers use
the same engine while the context is active. See docs/spilling.md.
"""
import atexit
import os
import tempfile
import weakref

import torch

from ._native import load_runtime

__all__ = ["spill"]

_live = weakref.WeakSet()


@atexit.register
def _close_all():
    # Interpreter exit with a store still open (e.g. a graph kept alive): remove its files.
    for ctx in list(_live):
        ctx.close()


class spill:
    """Context manager that spills saved activations to files in ``dir``.

    Args:
        dir: directory for the spill files (default ``$HECTOR_SPILL_DIR`` or the
            system temporary directory). Use a directory on a fast local SSD.
        threshold_bytes: storages smaller than this stay in memory (default 1 MiB).
        prefetch: spilled storages read ahead of backward, in backward order (default 2).
        adaptive: profile write bandwidth against forward time and keep in memory
            the latest activations the disk could not absorb during forward (default on).
        keep_last: the last ``keep_last`` spillable storages of each forward stay in
            memory, since backward needs them first (default 1).
        io_threads: background I/O threads, also the number of spill files (default 2).
        direct_io: O_DIRECT (bypasses the page cache, so spilled memory is really
            freed); buffered I/O is used where the file system refuses it.
        use_uring: io_uring where the kernel allows it.
        use_cufile: GPUDirect Storage (cuFile) for CUDA tensors where available.
        chunk_bytes: size of each I/O request (default 4 MiB).
        anonymous_files: unlink the files right after creating them (nothing can be
            left behind even on SIGKILL; the files are then invisible).
        model: a module whose qualified submodule names are used to name saved
            tensors in messages (otherwise the class names are used).
        faults: fault injection for tests, e.g. ``"corrupt:1"`` (see docs/spilling.md).

    After the block, ``ctx.stats`` holds the engine's counters.
    """

    def __init__(self, dir=None, threshold_bytes=1 << 20, prefetch=2, adaptive=True,
                 keep_last=1, io_threads=2, direct_io=True, use_uring=True, use_cufile=True,
                 chunk_bytes=4 << 20, anonymous_files=False, model=None, faults=""):
        self.dir = str(dir or os.environ.get("HECTOR_SPILL_DIR") or tempfile.gettempdir())
        self._args = (self.dir, int(threshold_bytes), int(prefetch), bool(adaptive),
                      int(keep_last), int(io_threads), bool(direct_io), bool(use_uring),
                      bool(use_cufile), int(chunk_bytes), bool(anonymous_files), str(faults))
        self._model = model
        self._store = None
        self._hooks = None
        self._module_hooks = []
        self._names = {}
        self._scope = []
        self._count = 0
        self._final_stats = None

    # -- context protocol ---------------------------------------------------------------
    def __enter__(self):
        if self._store is not None:
            raise RuntimeError("hector.spill: this context is already active")
        load_runtime()
        self._store = torch.classes.hector.SpillStore(*self._args)
        self._store.install()
        if self._model is not None:
            self._names = {id(m): name or type(m).__name__
                           for name, m in self._model.named_modules()}
        mm = torch.nn.modules.module
        self._module_hooks = [mm.register_module_forward_pre_hook(self._enter_module),
                              mm.register_module_forward_hook(self._leave_module)]
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        _live.add(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._hooks.__exit__(exc_type, exc, tb)
        for h in self._module_hooks:
            h.remove()
        self._module_hooks = []
        self._store.uninstall()
        if exc_type is not None:
            # Forward or backward failed: drop everything and remove the files now.
            # (A graph built inside the block cannot be used after this.)
            self.close()
        else:
            # Backward may still run after the block; the store lives on in the
            # handles autograd holds and removes its files when the last one goes.
            self._final_stats = None
        return False

    def close(self):
        """Drops every saved tensor this context holds and removes its files."""
        if self._store is not None:
            self._final_stats = self.stats
            self._store.close()
            _live.discard(self)

    # -- information ---------------------------------------------------------------------
    @property
    def stats(self):
        """The engine's counters (dict): bytes written/read, peak resident saved bytes,
        spilled/kept/deduplicated/forwarded counts, prefetches, write failures."""
        if self._final_stats is not None:
            return dict(self._final_stats)
        if self._store is None:
            return {}
        return dict(self._store.stats())

    @property
    def io_mode(self):
        """How the files are accessed ("direct" or "buffered", "+io_uring", "+cufile")."""
        return self._store.io_mode() if self._store is not None else ""

    def files(self):
        """The spill files that exist now."""
        return list(self._store.files()) if self._store is not None else []

    def synchronize(self):
        """Waits until no write or read is in flight."""
        if self._store is not None:
            self._store.synchronize()

    def inject_fault(self, kind, nth=1):
        """Test hook: makes the ``nth`` write or read from now fail. ``kind`` is one of
        enospc, short_write, read_error, corrupt, truncate."""
        self._store.inject_fault(kind, int(nth))

    # -- hooks ---------------------------------------------------------------------------
    def _enter_module(self, module, args):
        self._scope.append(self._names.get(id(module)) or type(module).__name__)

    def _leave_module(self, module, args, output):
        if self._scope:
            self._scope.pop()

    def _pack(self, tensor):
        self._count += 1
        where = self._scope[-1] if self._scope else "<top>"
        tag = f"{where} #{self._count} {str(tensor.dtype).replace('torch.', '')}{list(tensor.shape)}"
        return self._store.save(tensor, tag, True)

    @staticmethod
    def _unpack(handle):
        return handle.load()


class _CallableModule(type(os)):
    """Importing the submodule ``hector.spill`` rebinds the package attribute of the
    same name to this module; making the module callable keeps ``hector.spill(...)``
    the context manager however the package was imported."""

    def __call__(self, *args, **kwargs):
        return spill(*args, **kwargs)


import sys as _sys  # noqa: E402

_sys.modules[__name__].__class__ = _CallableModule
