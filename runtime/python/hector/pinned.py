"""hector.PinnedTable: zero-copy (PyTorch-Direct) row gathers from host-resident features."""
import warnings

import torch

from ._native import load_runtime

__all__ = ["PinnedTable", "cpu_gather"]

_FALLBACKS = ("cpu_gather", "error")
_MODES = ("zero_copy", "cpu_gather")


class PinnedTable:
    """A feature table in host memory that serves row gathers to the GPU without a CPU gather.

    On a CUDA machine the CPU tensor ``features`` is page-locked *in place* (``cudaHostRegister``,
    no copy) and :meth:`gather` with a CUDA index runs a kernel that reads exactly the requested
    rows over PCIe into a new tensor on the index's device (current stream, caching allocator).
    The registration is released exactly once, after the last handle to the table is gone and
    after every gather kernel that read it has finished; the table keeps ``features`` alive.
    Writes to ``features`` after construction are visible to later gathers; do not resize it.

    When the table cannot be pinned (no CUDA, a non-contiguous tensor, a tensor in shared memory,
    ``cudaHostRegister`` refused), ``fallback`` decides:

    - ``"cpu_gather"`` (default): gathers run the multithreaded CPU gather into a pinned staging
      buffer followed by one copy to the index's device; :attr:`mode` is ``"cpu_gather"`` and
      :attr:`reason` says why. A warning is issued when CUDA is available but pinning failed.
    - ``"error"``: raise — ``ValueError`` for a tensor that cannot be pinned (non-contiguous,
      shared memory), ``RuntimeError`` otherwise (no CUDA, registration failed).

    ``mode="cpu_gather"`` asks for that CPU path outright: nothing is pinned, ``fallback`` does not
    apply and no warning is issued (the "CPU-centric" baseline that benchmarks compare zero-copy
    with). A gather with a CPU index always runs the multithreaded CPU gather and returns a CPU
    tensor.

    One table may be used from several threads; :meth:`close` on one thread while another
    gathers lets that gather finish safely (later calls raise).

    Args:
        features: CPU tensor ``[num_rows, ...]`` of any dtype.
        fallback: ``"cpu_gather"`` or ``"error"``.
        mode: ``"zero_copy"`` (default: pin in place where possible) or ``"cpu_gather"``.
        max_threads: upper bound on the threads one zero-copy gather launches, counted over
            whole blocks (0: none; below 512 the launch is one smaller block). The default
            occupies a few SMs, which saturates PCIe while leaving the GPU to compute kernels.
        sort_indices: read rows in sorted order (results are scattered back).
        check_bounds: validate every index before the gather (recommended: an out-of-range
            zero-copy read corrupts the CUDA context). A table without rows always checks.

    Note:
        A registration belongs to the process that made it; create tables after forking data
        loader workers, not before.
    """

    def __init__(self, features, fallback="cpu_gather", *, mode="zero_copy", max_threads=10240,
                 sort_indices=True, check_bounds=True):
        if not isinstance(features, torch.Tensor):
            raise TypeError(
                f"hector.PinnedTable: features must be a torch.Tensor, got {type(features).__name__}")
        if fallback not in _FALLBACKS:
            raise ValueError(
                f"hector.PinnedTable: fallback must be one of {_FALLBACKS}, got {fallback!r}")
        if mode not in _MODES:
            raise ValueError(f"hector.PinnedTable: mode must be one of {_MODES}, got {mode!r}")
        if isinstance(max_threads, bool) or not isinstance(max_threads, int) or max_threads < 0:
            raise ValueError(
                f"hector.PinnedTable: max_threads must be a non-negative int, got {max_threads!r}")
        load_runtime()
        shared = features.device.type == "cpu" and features.is_shared()
        self._table = torch.classes.hector.PinnedTable(
            features, fallback, max_threads, bool(sort_indices), bool(check_bounds), shared, mode)
        if mode == "zero_copy" and self.mode != "zero_copy" and torch.cuda.is_available():
            warnings.warn(f"hector.PinnedTable: not pinned ({self.reason}); gathers fall back to "
                          "a CPU gather plus a copy", RuntimeWarning, stacklevel=2)

    def gather(self, index):
        """Rows ``index`` of the table on ``index``'s device: ``features[index]``.

        ``index`` is a 1-D ``torch.int64``/``torch.int32`` tensor on the CPU or a CUDA device; a
        wrong dtype raises ``TypeError``, a wrong shape, device or an out-of-range entry
        ``ValueError``, before anything runs.
        """
        if not isinstance(index, torch.Tensor):
            raise TypeError(
                f"hector.PinnedTable: index must be a torch.Tensor, got {type(index).__name__}")
        return self._table.gather(index)

    __call__ = gather

    @property
    def mode(self):
        """How gathers are served: ``"zero_copy"`` or ``"cpu_gather"``."""
        return self._table.mode()

    @property
    def reason(self):
        """Why the table is not zero-copy (``""`` when it is)."""
        return self._table.reason()

    @property
    def features(self):
        """The table (the caller's tensor, not a copy)."""
        return self._table.features()

    @property
    def num_rows(self):
        return self.features.shape[0]

    @property
    def row_bytes(self):
        return self._table.row_bytes()

    @property
    def closed(self):
        return self._table.released()

    def close(self):
        """Releases this handle; the registration ends once no handle and no gather uses it."""
        self._table.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self):
        return self.num_rows

    def __repr__(self):
        if self.closed:
            return "hector.PinnedTable(closed)"
        f = self.features
        return (f"hector.PinnedTable(rows={f.shape[0]}, row_shape={tuple(f.shape[1:])}, "
                f"dtype={f.dtype}, mode={self.mode!r})")


def cpu_gather(table, index, pin_output=False):
    """The multithreaded CPU gather alone: ``table[index]`` for a CPU table and CPU index, into a
    pinned buffer when ``pin_output`` (the CPU-centric baseline of the benchmarks)."""
    return load_runtime().cpu_gather(table, index, bool(pin_output))
