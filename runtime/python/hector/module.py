"""Loading a library built by ``hectorc`` as ``torch.nn.Module`` classes.

``hector.load("model.so")`` loads the library (its operators register under one torch operator
namespace per layer, docs/architecture.md "The emitted library and its ABI"), reads each layer's
manifest and returns a module class for the entry layer (``load(path, layer=...)`` picks another;
:func:`load_all` returns every layer's class).

An instance owns the layer's weights as parameters, initialised as PyG initialises its layers
(Glorot-uniform for matrices, zeros/ones for biases and gates as the model file says):

    RGCN = hector.load("rgcn.so")
    layer = RGCN(num_relations=graph.num_relations)
    out = layer(graph, x, norm)

Relation-sliced weights are ``[R, dims...]`` and ntype-sliced ones ``[T, dims...]``, so the counts
R and T are constructor arguments, as for PyG's ``RGCNConv(..., num_relations)``. Weights of
sub-layers (``conv1.W``) live in submodules, so ``state_dict()`` keys read ``conv1.W``.
"""
from __future__ import annotations

import json
import os
import pathlib

import torch

from ._native import load_runtime

_libraries: dict[str, dict[str, dict]] = {}   # resolved path -> {layer name -> manifest}


def layer_manifest(ns: str) -> dict:
    """The manifest of the layer registered in operator namespace ``ns``, as the runtime read and
    checked it (hector/emit/manifest_json.h, the one reader; the runtime writes its reading back
    as JSON, with ``namespace`` added)."""
    return json.loads(torch.ops.hector.layer_manifest(ns))


def _load_library(path) -> dict[str, dict]:
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"hector.load: {path} does not exist")
    key = str(path.resolve())
    if key not in _libraries:
        load_runtime()  # the model library links libhector_runtime.so
        # The runtime loads it, as hector::loadLibrary does: it reads the file's headers first
        # (dlopen trusts the file: a truncated one faults in the loader, a foreign one runs its
        # constructors), refuses a library whose layers another file registered, and parses the
        # manifests. The namespaces of the layers the user calls come back, the entry first.
        namespaces = torch.ops.hector.load_library(str(path), "hector.load")
        _libraries[key] = {m["layer"]: m for m in map(layer_manifest, namespaces)}
    return _libraries[key]


def _init_weight(param: torch.Tensor, kind: str, slice_dims: list[int], name: str) -> None:
    """PyG's initialisers (Glorot-uniform over (first dim, product of the rest) of one slice),
    by the runtime's one implementation (hector::init_weight), which C++ layers use too."""
    with torch.no_grad():
        torch.ops.hector.init_weight(param.detach(), kind, [int(d) for d in slice_dims], name)


class CompiledLayer(torch.nn.Module):
    """Base class of the module classes :func:`load` returns. Subclasses carry ``manifest`` and
    ``_op`` (the layer's torch operator namespace)."""

    manifest: dict = {}
    _op = None
    #: Which optimisation variant runs: "auto" (the cost model chooses per graph; the default),
    #: or "none", "reorder", "compact", "both", "both_logits" (see :meth:`variants`). All give
    #: the same results up to rounding. The environment variable HECTOR_VARIANT overrides
    #: "auto".
    variant: str = "auto"

    def __init__(self, num_relations: int = 1, num_ntypes: int = 1, *, dtype=None, device=None):
        super().__init__()
        if int(num_relations) < 0 or int(num_ntypes) < 1:
            raise ValueError(f"{type(self).__name__}: num_relations must be >= 0 and num_ntypes "
                             f">= 1, got {num_relations} and {num_ntypes}")
        self.num_relations = int(num_relations)
        self.num_ntypes = int(num_ntypes)
        dtype = dtype or torch.get_default_dtype()
        self._weight_paths = []
        for w in self.manifest["weights"]:
            lead = {"relation": [self.num_relations], "ntype": [self.num_ntypes], "none": []}
            shape = lead[w["slicing"]] + list(w["dims"])
            param = torch.nn.Parameter(torch.empty(shape, dtype=dtype, device=device))
            _init_weight(param, w["init"], list(w["dims"]), w["name"])
            *owners, leaf = w["name"].split(".")
            module = self
            for owner in owners:
                if not hasattr(module, owner):
                    module.add_module(owner, torch.nn.Module())
                module = getattr(module, owner)
            module.register_parameter(leaf, param)
            self._weight_paths.append(w["name"])

    def weights(self) -> list[torch.Tensor]:
        """The weights in manifest order."""
        return [self.get_parameter(name) for name in self._weight_paths]

    def forward(self, graph, *inputs):
        """Runs the layer on ``graph``; differentiable with respect to the inputs and the weights
        (the compiled backward kernels run in ``backward()``; double backward is not supported).
        """
        from .graph import Graph
        name = type(self).__name__
        if not isinstance(graph, Graph):
            raise TypeError(f"{name}.forward: the first argument must be a hector.Graph, "
                            f"got {type(graph).__name__}")
        decl = self.manifest["inputs"]
        if len(inputs) != len(decl):
            names = ", ".join(d["name"] for d in decl)
            raise TypeError(f"{name}.forward: expected {len(decl)} inputs ({names}), "
                            f"got {len(inputs)}")
        for d, t in zip(decl, inputs):
            if not isinstance(t, torch.Tensor):
                raise TypeError(f"{name}.forward: input '{d['name']}' must be a tensor, "
                                f"got {type(t).__name__}")
        if graph.num_relations != self.num_relations:
            raise ValueError(f"{name}.forward: the graph has {graph.num_relations} relations but "
                             f"the layer was built for {self.num_relations} (build the graph "
                             "with hector.Graph(..., num_relations=...))")
        if graph.num_ntypes != self.num_ntypes:
            raise ValueError(f"{name}.forward: the graph has {graph.num_ntypes} node types but "
                             f"the layer was built for {self.num_ntypes} (build the graph "
                             "with hector.Graph(..., num_ntypes=...))")
        # One differentiable operation: the backward kernels run in loss.backward().
        outs = torch.ops.hector.layer_apply(self.manifest["namespace"], graph._impl,
                                            list(inputs), self.weights(), self.variant)
        return outs[0] if len(outs) == 1 else tuple(outs)

    @classmethod
    def variants(cls) -> list[str]:
        """The optimisation variants the library carries: "none" (the layer as written) and
        those of "reorder", "compact", "both", "both_logits" whose rewrites change the layer."""
        names = [cls.manifest.get("variant", "none")]
        for ns in cls.manifest.get("variants", []):
            names.append(layer_manifest(ns)["variant"])
        return names

    def chosen_variant(self, graph, training: bool | None = None, dtype=None) -> str:
        """The variant a call on ``graph`` runs (``training``: whether gradients are needed;
        default: whether grad mode is on and a weight requires grad) with tensors of ``dtype``
        (default: the weights'; under ``torch.autocast``, pass its dtype). A bfloat16 or float16
        call weighs each variant's memory traffic by its share of 2-byte elements."""
        if training is None:
            training = torch.is_grad_enabled() and any(w.requires_grad for w in self.weights())
        return torch.ops.hector.layer_variant(self.manifest["namespace"], graph._impl,
                                              bool(training), self.variant,
                                              self._element_bytes(dtype))

    def _element_bytes(self, dtype) -> int:
        weights = self.weights()
        dtype = dtype or (weights[0].dtype if weights else torch.get_default_dtype())
        return torch.empty((), dtype=dtype).element_size()

    def prepare(self, graph, training: bool | None = None) -> str:
        """Builds the structures of ``graph`` that the variant a call would run reads (with its
        backward layer's when ``training``; default as :meth:`chosen_variant`), so that the
        next call builds nothing: the graph's one-time preparation. Returns the variant."""
        if training is None:
            training = torch.is_grad_enabled() and any(w.requires_grad for w in self.weights())
        return torch.ops.hector.layer_prepare(self.manifest["namespace"], graph._impl,
                                              bool(training), self.variant)

    def memory_estimate(self, graph, training: bool | None = None, dtype=None) -> int:
        """The cost model's estimate of the peak memory (bytes) one call on ``graph`` allocates
        with the variant it would run: the graph structures it builds and the tensors its
        kernels hold (forward and backward when ``training``), for ``dtype`` (default: the
        weights')."""
        if training is None:
            training = torch.is_grad_enabled() and any(w.requires_grad for w in self.weights())
        return int(torch.ops.hector.layer_memory(self.manifest["namespace"], graph._impl,
                                                 bool(training), self.variant,
                                                 self._element_bytes(dtype)))

    def explain(self, graph) -> str:
        """The cost model's comparison of the variants on ``graph``: for each, the estimated
        training (forward + backward) and inference cost and the largest intermediate at the
        graph's sizes, the rewrites it applies or skips, and the choice."""
        return torch.ops.hector.layer_explain(self.manifest["namespace"], graph._impl)

    def extra_repr(self) -> str:
        params = ", ".join(f"{k}={v}" for k, v in self.manifest.get("params", {}).items())
        return f"{params}, num_relations={self.num_relations}, num_ntypes={self.num_ntypes}"


def _make_class(manifest: dict) -> type:
    layer = manifest["layer"]
    op = getattr(torch.ops, manifest["namespace"])
    doc = (f"The compiled layer '{layer}'. Inputs: "
           + ", ".join(f"{i['name']} ({i['space']}{i['dims']})" for i in manifest["inputs"])
           + ". Outputs: " + ", ".join(o["name"] for o in manifest["outputs"]) + ".")
    return type(layer, (CompiledLayer,), {"manifest": manifest, "_op": op, "__doc__": doc})


def load_all(path: str | os.PathLike) -> dict[str, type]:
    """Every layer of a library built by hectorc, as module classes by layer name."""
    return {name: _make_class(m) for name, m in _load_library(path).items()}


def load(path: str | os.PathLike, layer: str | None = None) -> type:
    """The module class of one layer of a library built by hectorc (default: its entry layer,
    or its only layer)."""
    manifests = _load_library(path)
    if layer is None:
        entries = [m for m in manifests.values() if m.get("entry")] or list(manifests.values())
        if len(entries) != 1:
            raise ValueError(f"hector.load: {path} has layers {sorted(manifests)}; "
                             "choose one with layer=...")
        return _make_class(entries[0])
    if layer not in manifests:
        raise ValueError(f"hector.load: {path} has no layer {layer!r} "
                         f"(it has {sorted(manifests)})")
    return _make_class(manifests[layer])
