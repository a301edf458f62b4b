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
        threshold_bytes: storages smaller than this stay in memory (default 1 MiB); the
            size compared is that of the saved tensor's whole storage, which is what is
            written and freed, not that of the view.
        prefetch: spilled storages backward reads ahead, in backward order; at most this
            many are held in memory before backward loads them (default 2).
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
        anonymous_files: files without a name (O_TMPFILE, else unlinked right after
            creation): nothing can be left behind even on SIGKILL; the files are invisible.
        model: a module whose qualified submodule names are used to name saved
            tensors in messages (otherwise the class names are used).
        faults: fault injection for tests, e.g. ``"corrupt:1"`` (see docs/spilling.md).

    After the block, ``ctx.stats`` holds the engine's counters. When the block ends
    normally and no saved tensor is left (backward ran, or the graph was dropped),
    the store is closed and no file remains; a graph that outlives the block keeps
    the store alive until it is used or dropped. The object can be entered again
    (not while it is active); each entry starts a new store, and ``stats`` are
    those of the latest.
    """

    def __init__(self, dir=None, threshold_bytes=1 << 20, prefetch=2, adaptive=True,
                 keep_last=1, io_threads=2, direct_io=True, use_uring=True, use_cufile=True,
                 chunk_bytes=4 << 20, anonymous_files=False, model=None, faults=""):
        self.dir = str(dir or os.environ.get("HECTOR_SPILL_DIR") or tempfile.gettempdir())
        self._args = (self.dir, int(threshold_bytes), int(prefetch), bool(adaptive),
                      int(keep_last), int(io_threads), bool(direct_io), bool(use_uring),
                      bool(use_cufile), int(chunk_bytes), bool(anonymous_files), str(faults))
        self._model = model
        self._store = None          # the latest store
        self._open = []             # stores not closed yet (a graph may outlive its block)
        self._active = False
        self._hooks = None
        self._module_hooks = []
        self._names = {}
        self._scope = []
        self._count = 0
        self._final_stats = None

    # -- context protocol ---------------------------------------------------------------
    def __enter__(self):
        if self._active:
            raise RuntimeError("hector.spill: this context is already active")
        load_runtime()
        # Stores of earlier entries whose graphs are gone have nothing left to do.
        self._open = [st for st in self._open if not st.close_if_unused()]
        self._store = torch.classes.hector.SpillStore(*self._args)
        self._open.append(self._store)
        self._final_stats = None
        self._count = 0
        self._scope = []
        self._store.install()
        if self._model is not None:
            self._names = {id(m): name or type(m).__name__
                           for name, m in self._model.named_modules()}
        mm = torch.nn.modules.module
        self._module_hooks = [mm.register_module_forward_pre_hook(self._enter_module),
                              mm.register_module_forward_hook(self._leave_module)]
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        self._active = True
        _live.add(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        self._active = False
        self._hooks.__exit__(exc_type, exc, tb)
        for h in self._module_hooks:
            h.remove()
        self._module_hooks = []
        store = self._store
        store.uninstall()
        if exc_type is not None:
            # Forward or backward failed (or KeyboardInterrupt): drop what this block saved
            # and remove its files now. (A graph built inside the block cannot be used after
            # this.) The close also reports a write failure not reported yet.
            self._final_stats = dict(store.stats())
            store.close()
            self._open.remove(store)
        else:
            # A write that failed after the step's last save or load is reported now.
            store.report_warnings()
            if store.close_if_unused():
                # No saved tensor is left: nothing can load from this store any more.
                self._final_stats = dict(store.stats())
                self._open.remove(store)
            # Otherwise backward may still run after the block; the store lives on in the
            # handles autograd holds and removes its files when the last one goes.
        if not self._open:
            _live.discard(self)
        return False

    def close(self):
        """Drops every saved tensor this context holds and removes its files."""
        if self._store is not None and self._final_stats is None:
            self._final_stats = dict(self._store.stats())
        open_stores, self._open = self._open, []
        for store in open_stores:
            store.close()
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

    def cufile_status(self):
        """Whether CUDA tensors can go through GPUDirect Storage: "loaded" (followed by
        ", but ..." where cuFile refused a spill file), "disabled (...)" or why cuFile is
        not available. Loads libcufile if no CUDA tensor did yet."""
        return self._store.cufile_status() if self._store is not None else ""

    @property
    def io_mode(self):
        """How the files are accessed: "direct" or "buffered", "+io_uring", and "+cufile"
        once a record was written through cuFile."""
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
