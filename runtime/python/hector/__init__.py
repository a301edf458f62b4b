"""hector: the runtime of the hectorc compiler.

Loads compiled relational-GNN layers as ``torch.nn.Module`` classes and provides what they need:

- :class:`Graph` — validated graph preprocessing (relation-sorted edges, CSR by destination and
  source, unique (node, relation) maps, node-type segments, degree norms).
- :class:`PinnedTable` — zero-copy (PyTorch-Direct) row gathers from host-resident features.
- :func:`load` — a library built by ``hectorc`` as ``torch.nn.Module`` classes.
- :func:`spill` — a context that spills saved activations to SSD (SSDTrain).
- :class:`NeighborSampler`, :class:`MiniBatchLoader` (``hector.minibatch``) — mini-batch training
  on per-batch relational subgraphs with features gathered from host memory, prepared ahead.

The native part, ``libhector_runtime.so``, registers its operators under ``torch.ops.hector``.
"""
from ._native import library_path, load_runtime  # noqa: F401

__all__ = ["Graph", "PinnedTable", "spill", "load", "load_all", "library_path", "load_runtime",
           "NeighborSampler", "MiniBatchLoader", "partition_nodes"]


def __getattr__(name):
    # Submodules are imported on first use so that `import hector` stays cheap.
    if name == "Graph":
        from .graph import Graph
        return Graph
    if name == "PinnedTable":
        from .pinned import PinnedTable
        return PinnedTable
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
