"""hector: the runtime of the hectorc compiler.

Loads compiled relational-GNN layers as ``torch.nn.Module`` classes and provides what they need:

- :class:`Graph` — validated graph preprocessing (the CSR by destination, int32 indices; the CSR
  by source, unique (node, relation) pairs and node-type segments built on first use).
- :class:`PinnedTable` — zero-copy (PyTorch-Direct) row gathers from host-resident features.
- :class:`FeatureStore` — node features on disk behind a device cache and a victim buffer, with
  a prefetcher (LSM-GNN), for tables larger than host memory.
- :func:`compile`, :func:`compile_all` — a model file (or its text) built by ``hectorc`` through a
  disk cache and loaded as module classes.
- :mod:`hector.nn` — PyG's ``RGCNConv``, ``FastRGCNConv``, ``RGATConv``, ``HGTConv`` as drop-in
  layers (PyG's arguments and ``state_dict``), run by compiled kernels.
- :func:`load` — a library built by ``hectorc`` as ``torch.nn.Module`` classes.
- :func:`spill` — a context that spills saved activations to SSD (SSDTrain).
- :func:`set_memory_budget`, :func:`memory_budget` — the memory a call may use: the runtime
  runs the fastest variant whose estimated peak fits.
- :func:`tensor_pool_stats`, :func:`empty_tensor_pool`, :func:`configure_tensor_pool` — the
  pool of host memory that compiled layers' large CPU tensors come from and return to.
- :class:`NeighborSampler`, :class:`MiniBatchLoader` (``hector.minibatch``) — mini-batch training
  on per-batch relational subgraphs with features gathered from host memory, prepared ahead.

The native part, ``libhector_runtime.so``, registers its operators under ``torch.ops.hector``.
"""
from ._native import library_path, load_runtime  # noqa: F401

__all__ = ["Graph", "PinnedTable", "FeatureStore", "spill", "load", "load_all", "library_path",
           "load_runtime", "NeighborSampler", "MiniBatchLoader", "partition_nodes",
           "set_memory_budget", "memory_budget", "tensor_pool_stats",
           "empty_tensor_pool", "configure_tensor_pool", "compile", "compile_all", "CompileError", "nn"]


def set_memory_budget(bytes=None, fraction=0.9):
    """Sets the memory budget of compiled-layer calls: ``bytes`` on every device, or (``None``)
    ``fraction`` of the memory available at each call (the default, 0.9: on the CPU the least
    of the system's available memory and the room under the process's address-space and cgroup
    limits; on CUDA the free device memory and what PyTorch's caching allocator holds unused).
    Each call runs the fastest optimisation variant whose estimated peak fits the budget, and
    raises ``torch.OutOfMemoryError`` with the estimates when none does."""
    if bytes is not None and (isinstance(bytes, bool) or not isinstance(bytes, int)):
        raise TypeError(f"hector.set_memory_budget: bytes must be an int or None, got "
                        f"{type(bytes).__name__}")
    load_runtime().set_memory_budget(bytes, float(fraction))


def memory_budget(device="cpu"):
    """The memory budget (bytes) of a call on ``device`` now (see :func:`set_memory_budget`)."""
    import torch
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return int(load_runtime().memory_budget(str(device)))


_POOL_KEYS = ("cached_bytes", "live_bytes", "limit_bytes", "min_bytes", "hits", "misses",
              "released", "poison", "process_wide", "peak_live_bytes")


def tensor_pool_stats():
    """The tensor pool of compiled layers' CPU tensors, as a dict: ``cached_bytes`` (unused
    blocks kept for reuse), ``live_bytes`` (blocks backing live tensors), ``limit_bytes`` (the
    most unused bytes kept), ``min_bytes`` (smaller tensors come from PyTorch's allocator),
    ``hits`` and ``misses`` (allocations served by an unused block, or by a new mapping),
    ``released`` (blocks given back to the system), ``poison``, ``process_wide`` and
    ``peak_live_bytes`` (the most bytes live blocks held at once since the pool was last
    emptied; live and unused blocks together never exceed it, so that the unused blocks do
    not raise the process's peak)."""
    stats = dict(zip(_POOL_KEYS, load_runtime().tensor_pool_stats()))
    stats["poison"] = bool(stats["poison"])
    stats["process_wide"] = bool(stats["process_wide"])
    return stats


def empty_tensor_pool():
    """Gives the tensor pool's unused blocks back to the system (tensors in use keep theirs) and
    restarts ``peak_live_bytes`` at the bytes live now."""
    load_runtime().empty_tensor_pool()


def configure_tensor_pool(limit=None, min_bytes=None, poison=None, process_wide=None):
    """Configures the tensor pool; ``None`` keeps a setting. ``limit``: the most bytes of unused
    blocks kept for reuse (default a quarter of the least of the machine's memory and the
    process's address-space and cgroup limits; 0 keeps none). ``min_bytes``: smaller tensors
    come from PyTorch's allocator (default 1 MiB). ``poison``: fill every block with 0xFF
    bytes (NaN in every float dtype) before use, to show that no kernel reads what it did not
    write (a testing aid; slow). ``process_wide``: the pool serves every CPU tensor of the
    process (PyTorch's CPU allocator is replaced until it is turned off again), so that the
    loss, its gradient and the optimizer's temporaries of a training step are reused too;
    default off (compiled layers' tensors only)."""
    for name, value in (("limit", limit), ("min_bytes", min_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"hector.configure_tensor_pool: {name} must be an int or None, got "
                            f"{type(value).__name__}")
    for name, value in (("poison", poison), ("process_wide", process_wide)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"hector.configure_tensor_pool: {name} must be a bool or None, got "
                            f"{type(value).__name__}")
    current = tensor_pool_stats()
    load_runtime().configure_tensor_pool(
        current["limit_bytes"] if limit is None else limit,
        current["min_bytes"] if min_bytes is None else min_bytes,
        current["poison"] if poison is None else poison)
    if process_wide is not None:
        load_runtime().tensor_pool_process_wide(process_wide)


def __getattr__(name):
    # Submodules are imported on first use so that `import hector` stays cheap.
    if name == "Graph":
        from .graph import Graph
        return Graph
    if name == "PinnedTable":
        from .pinned import PinnedTable
        return PinnedTable
    if name == "FeatureStore":
        from .feature_store import FeatureStore
        return FeatureStore
    if name in ("compile", "compile_all", "CompileError"):
        import importlib
        return getattr(importlib.import_module("._compile", __name__), name)
    if name == "nn":
        import importlib
        return importlib.import_module(".nn", __name__)
    if name in ("load", "load_all"):
        from . import module
        return getattr(module, name)
    if name == "spill":
        from .spill import spill
        return spill
    if name in ("NeighborSampler", "MiniBatchLoader", "partition_nodes"):
        from . import minibatch
        return getattr(minibatch, name)
    raise AttributeError(f"module 'hector' has no attribute {name!r}")
