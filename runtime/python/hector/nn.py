"""``hector.nn``: drop-in replacements of PyG's relational layers, run by compiled kernels.

    from hector.nn import RGCNConv          # instead of: from torch_geometric.nn import RGCNConv
    conv = RGCNConv(in_channels, out_channels, num_relations, num_bases=30)
    out = conv(x, edge_index, edge_type)

``RGCNConv``, ``FastRGCNConv``, ``RGATConv`` and ``HGTConv`` take PyG's constructor arguments
and forward arguments and hold PyG's parameters under PyG's names, so ``state_dict`` keys and
shapes are PyG's: a PyG checkpoint loads into these layers and the other way round. The message
passing runs as one compiled layer built from the model files in ``hector/models`` by
:func:`hector.compile` (per width and target, cached on disk); the layer forms the kernel's
weights from PyG's parameters with differentiable tensor operations (bases, blocks, the split
of HGT's fused k/q/v linear), so gradients reach PyG's parameters. Arguments PyG offers that the
model language cannot express raise ``NotImplementedError`` naming the argument.

The graph preprocessing (a :class:`hector.Graph` and its degree norms) is cached per
``edge_index``/``edge_type`` tensor (identity and version counter) and node count, so a layer
called every epoch with the same edges prepares them once, and the layers of one model share it.
"""
from __future__ import annotations

import collections
import math
import os
import pathlib
import threading
import weakref

import torch

__all__ = ["RGCNConv", "FastRGCNConv", "RGATConv", "HGTConv", "clear_graph_cache"]

_MODELS = pathlib.Path(__file__).resolve().parent / "models"
_classes: dict[tuple, type] = {}


def _target(device: torch.device) -> str:
    explicit = os.environ.get("HECTOR_TARGET")
    if explicit:
        return explicit
    return "cuda" if device.type == "cuda" or torch.cuda.is_available() else "cpu"


def _compiled(model: str, device: torch.device, **params) -> type:
    """The module class of hector/models/<model>.hector at ``params`` (hector.compile)."""
    target = _target(device)
    key = (model, target, tuple(sorted(params.items())))
    if key not in _classes:
        from ._compile import compile as compile_model
        _classes[key] = compile_model(_MODELS / f"{model}.hector", target=target, **params)
    return _classes[key]


def _run(cls: type, graph, inputs, weights):
    outs = torch.ops.hector.layer_apply(cls.manifest["namespace"], graph._impl, list(inputs),
                                        list(weights), cls.variant)
    return outs[0]


_manifests: dict[str, dict] = {}


@torch._dynamo.assume_constant_result
def _namespace(model: str, device_type: str, params: tuple) -> str:
    """The operator namespace of hector/models/<model>.hector at ``params`` (compiled on first
    use); a constant for torch.compile, which calls it eagerly."""
    cls = _compiled(model, torch.device(device_type), **dict(params))
    _manifests[cls.manifest["namespace"]] = cls.manifest
    return cls.manifest["namespace"]


# --- the operators torch.compile sees ----------------------------------------------------
#
# Eager calls run torch.ops.hector.layer_apply (one autograd node over the compiled forward and
# backward layers). Under torch.compile the layers call hector_nn::apply instead: a custom
# operator with a fake (meta) kernel, which prepares (and caches) the graph from
# edge_index/edge_type inside the operator, so that tracing sees tensors only, and runs the
# layer's inference copy. Its backward, hector_nn::apply_backward, runs the forward again with
# the activations the compiled backward layer needs and then that backward layer (the forward's
# cost once more per training step: the operator keeps no state between the two calls).


def _prepared_graph(where, edges, spec, device):
    """The cached graph of a graph spec: ``spec = [0, N, R]`` with ``edges = [edge_index,
    edge_type]``, or ``spec = [1, T, R, n_0 .. n_{T-1}, (a, r, b) per edge tensor]`` with
    ``edges`` one [2, E] tensor per (source type a, relation r, destination type b), ids local
    to their types (the stacked layout of hector.pyg)."""
    if spec[0] == 0:
        return _homogeneous_graph(where, edges[0], edges[1], spec[1], spec[2], device)
    from .pyg import HeteroLayout, from_hetero_dicts
    T, R = spec[1], spec[2]
    counts = spec[3:3 + T]
    triples = [tuple(spec[3 + T + 3 * i:6 + T + 3 * i]) for i in range(len(edges))]
    names = list(range(T))
    layout = HeteroLayout(names, triples, dict(zip(names, counts)))
    layout.edge_type_id = {t: t[1] for t in triples}
    layout.edge_types = [None] * R

    def build():
        return _Prepared(from_hetero_dicts(layout, dict(zip(triples, edges)), where).to(device))

    return _graph_cache.get(tuple(edges), (tuple(spec), str(device)), build)


def _layer_inputs(ns, edges, spec, norm, inputs):
    manifest = _manifests[ns]
    device = inputs[0].device
    prepared = _prepared_graph(manifest["layer"], edges, spec, device)
    ins = list(inputs)
    # A float16/bfloat16 call computes in float32 inside: it gets float32 norms, not norms
    # rounded to its precision (under autocast too).
    dtype = torch.promote_types(inputs[0].dtype, torch.float32)
    if norm == "mean":
        ins.append(prepared.norm("relation", dtype))
    elif norm == "add":
        ins.append(torch.ones(prepared.graph.num_edges, dtype=dtype, device=device))
    return prepared.graph, ins


@torch.library.custom_op("hector_nn::apply", mutates_args=())
def _apply_op(ns: str, edges: list[torch.Tensor], spec: list[int], norm: str,
              inputs: list[torch.Tensor], weights: list[torch.Tensor]) -> list[torch.Tensor]:
    graph, ins = _layer_inputs(ns, edges, spec, norm, inputs)
    with torch.no_grad():
        return list(torch.ops.hector.layer_apply(ns, graph._impl, ins, list(weights), "auto"))


def _results(ns):
    """The manifest's outputs a call returns (the saved activations are internal)."""
    return [o for o in _manifests[ns]["outputs"] if not o.get("saved")]


@_apply_op.register_fake
def _apply_fake(ns, edges, spec, norm, inputs, weights):
    num_nodes = spec[1] if spec[0] == 0 else sum(spec[3:3 + spec[1]])
    num_edges = edges[0].shape[-1] if spec[0] == 0 else sum(e.shape[-1] for e in edges)
    return [inputs[0].new_empty((num_edges if o["space"] == "edge" else num_nodes,
                                 math.prod(o["dims"]))) for o in _results(ns)]


@torch.library.custom_op("hector_nn::apply_backward", mutates_args=())
def _apply_backward_op(ns: str, edges: list[torch.Tensor], spec: list[int], norm: str,
                       grads: list[torch.Tensor], inputs: list[torch.Tensor],
                       weights: list[torch.Tensor]) -> list[torch.Tensor]:
    graph, ins = _layer_inputs(ns, edges, spec, norm, inputs)
    leaves = [t.detach().requires_grad_() for t in list(inputs) + list(weights)]
    with torch.enable_grad():
        outs = torch.ops.hector.layer_apply(ns, graph._impl,
                                            leaves[:len(inputs)] + ins[len(inputs):],
                                            leaves[len(inputs):], "auto")
        result = torch.autograd.grad(list(outs), leaves, [g.contiguous() for g in grads],
                                     allow_unused=True)
    return [g.contiguous() if g is not None else torch.zeros(t.shape, dtype=t.dtype,
                                                              device=t.device)
            for g, t in zip(result, leaves)]


@_apply_backward_op.register_fake
def _apply_backward_fake(ns, edges, spec, norm, grads, inputs, weights):
    return [torch.empty_like(t, memory_format=torch.contiguous_format)
            for t in list(inputs) + list(weights)]


def _setup_context(ctx, inputs, output):
    ns, edges, spec, norm, ins, ws = inputs
    ctx.args = (ns, list(spec), norm)
    ctx.counts = (len(edges), len(ins))
    # Shape, dtype and device of each output (a zero gradient for one the loss does not reach).
    ctx.result_meta = [(o.shape, o.dtype, o.device) for o in output]
    ctx.save_for_backward(*edges, *ins, *ws)


def _backward(ctx, grads):
    ns, spec, norm = ctx.args
    e, k = ctx.counts
    tensors = ctx.saved_tensors
    edges, ins, ws = tensors[:e], tensors[e:e + k], tensors[e + k:]
    # An output the loss does not reach has no gradient: zeros of its shape.
    grads = [g if g is not None else torch.zeros(shape, dtype=dtype, device=device)
             for g, (shape, dtype, device) in zip(grads, ctx.result_meta)]
    g = _apply_backward_op(ns, list(edges), spec, norm, grads, list(ins), list(ws))
    return None, [None] * e, None, None, g[:k], g[k:]


_apply_op.register_autograd(_backward, setup_context=_setup_context)

# torch.autocast: the layers are on autocast's lower-precision list, as `linear` is. Floating
# inputs and weights other than float64 are cast to the autocast dtype of their device, the
# layer runs with autocast off (its glue's ATen calls keep the kernels' dtypes) and its degree
# norms, made inside the call, stay float32. torch.library.register_autocast takes one fixed
# dtype; this kernel reads the autocast dtype in force. Eager calls do the same in _apply.
_AUTOCAST_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
                  | torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA))


def _autocast_cast(tensors, device_type):
    dtype = torch.get_autocast_dtype(device_type)
    return [t.to(dtype) if (t.is_floating_point() and t.dtype is not torch.float64
                            and t.device.type == device_type) else t for t in tensors]


def _apply_autocast_kernel(device_type):
    def kernel(_keyset, ns, edges, spec, norm, inputs, weights):
        inputs, weights = _autocast_cast(inputs, device_type), _autocast_cast(weights, device_type)
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
            return _apply_op._opoverload(ns, edges, spec, norm, inputs, weights)
    return kernel


_autocast_lib = torch.library.Library("hector_nn", "FRAGMENT")
_autocast_lib.impl("apply", _apply_autocast_kernel("cpu"), "AutocastCPU", with_keyset=True)
_autocast_lib.impl("apply", _apply_autocast_kernel("cuda"), "AutocastCUDA", with_keyset=True)


def _apply_homogeneous(model, params, x, edge_index, edge_type, num_relations, norm, inputs,
                       weights, all_outputs=False):
    """Runs hector/models/<model>.hector on (edge_index, edge_type): layer_apply when eager,
    hector_nn::apply under torch.compile. Its first output, or all (``all_outputs``)."""
    where = f"hector.nn.{model}"
    if edge_type is None:
        raise ValueError(f"{where}: edge_type is required (a [E] tensor of relation ids)")
    if not isinstance(edge_index, torch.Tensor):
        raise NotImplementedError(f"{where}: edge_index must be a [2, E] tensor (SparseTensor "
                                  "adjacencies are not supported)")
    return _apply(model, params, x, [edge_index, edge_type], [0, x.shape[0], num_relations],
                  norm, inputs, weights, all_outputs)


def _apply(model, params, x, edges, spec, norm, inputs, weights, all_outputs=False):
    """Runs hector/models/<model>.hector: its first output, or all (``all_outputs``)."""
    ns = _namespace(model, x.device.type, params)
    if torch.compiler.is_compiling():
        outs = _apply_op(ns, list(edges), list(spec), norm, list(inputs), list(weights))
        return outs if all_outputs else outs[0]
    device_type = x.device.type
    if device_type in ("cpu", "cuda") and torch.is_autocast_enabled(device_type):
        # As hector_nn::apply's autocast kernel: inputs and weights cast, norms float32.
        inputs = _autocast_cast(list(inputs), device_type)
        weights = _autocast_cast(list(weights), device_type)
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
            graph, ins = _layer_inputs(ns, edges, spec, norm, inputs)
            outs = torch.ops.hector.layer_apply(ns, graph._impl, ins, list(weights), "auto")
    else:
        graph, ins = _layer_inputs(ns, edges, spec, norm, inputs)
        outs = torch.ops.hector.layer_apply(ns, graph._impl, ins, list(weights), "auto")
    return list(outs) if all_outputs else outs[0]


# --- the graph cache ----------------------------------------------------------------------

class _GraphCache:
    """Prepared graphs keyed on the identity and version counter of the tensors they were built
    from (weak references guard against reused ids), least recently used first out."""

    def __init__(self, capacity=16):
        self.capacity = capacity
        self.entries: collections.OrderedDict = collections.OrderedDict()
        self.lock = threading.Lock()
        self.builds = 0

    def get(self, tensors, extra, build):
        key = tuple((id(t), t._version) for t in tensors) + tuple(extra)
        with self.lock:
            entry = self.entries.get(key)
            if entry is not None and all(r() is t for r, t in zip(entry[0], tensors)):
                self.entries.move_to_end(key)
                return entry[1]
        value = build()
        with self.lock:
            self.builds += 1
            self.entries[key] = ([weakref.ref(t) for t in tensors], value)
            while len(self.entries) > self.capacity:
                self.entries.popitem(last=False)
        return value


_graph_cache = _GraphCache()


def clear_graph_cache():
    """Drops every prepared graph (they are rebuilt on the next call)."""
    with _graph_cache.lock:
        _graph_cache.entries.clear()


class _Prepared:
    """A graph on one device and what the layers derive from it (norms), made once."""

    def __init__(self, graph):
        self.graph = graph
        self.norms = {}

    def norm(self, kind, dtype):
        if (kind, dtype) not in self.norms:
            self.norms[(kind, dtype)] = self.graph.edge_norm(kind, dtype, order="user")
        return self.norms[(kind, dtype)]


def _homogeneous_graph(where, edge_index, edge_type, num_nodes, num_relations, device):
    from .pyg import from_edge_index
    if edge_type is None:
        raise ValueError(f"{where}: edge_type is required (a [E] tensor of relation ids)")
    if not isinstance(edge_index, torch.Tensor):
        raise NotImplementedError(f"{where}: edge_index must be a [2, E] tensor (SparseTensor "
                                  "adjacencies are not supported)")

    def build():
        graph = from_edge_index(edge_index, edge_type, num_nodes, num_relations, where)
        return _Prepared(graph.to(device))

    return _graph_cache.get((edge_index, edge_type), (num_nodes, num_relations, str(device)),
                            build)


# --- initialisers (PyG's) -----------------------------------------------------------------

def _glorot(t):
    if t is not None:
        bound = math.sqrt(6.0 / (t.size(-2) + t.size(-1)))
        with torch.no_grad():
            t.uniform_(-bound, bound)


def _unsupported(where, name, value, why=""):
    raise NotImplementedError(f"{where}: {name}={value!r} is not supported{why}")


# --- RGCN ---------------------------------------------------------------------------------

class RGCNConv(torch.nn.Module):
    """PyG ``RGCNConv`` (``aggr`` 'mean'/'add'/'sum', ``num_bases``, ``num_blocks``,
    ``root_weight``, ``bias``; ``x`` float features). Parameters ``weight``, ``comp``, ``root``,
    ``bias`` as PyG's."""

    # PyG's RGCNConv sums into a float tensor of the default dtype (see _finish).
    _default_dtype_accumulator = True

    def __init__(self, in_channels, out_channels, num_relations, num_bases=None, num_blocks=None,
                 aggr="mean", root_weight=True, is_sorted=False, bias=True, **kwargs):
        super().__init__()
        name = type(self).__name__
        for key, value in kwargs.items():
            _unsupported(name, key, value)
        if isinstance(in_channels, (tuple, list)):
            _unsupported(name, "in_channels", in_channels,
                         " (bipartite source/destination widths)")
        if aggr not in ("mean", "add", "sum"):
            _unsupported(name, "aggr", aggr, " (only 'mean', 'add' and 'sum')")
        if num_bases is not None and num_blocks is not None:
            raise ValueError("Can not apply both basis-decomposition and "
                             "block-diagonal-decomposition at the same time.")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.num_relations, self.num_bases, self.num_blocks = num_relations, num_bases, num_blocks
        self.aggr, self.is_sorted = aggr, is_sorted
        self.in_channels_l = self.in_channels
        if num_bases is not None:
            self.weight = torch.nn.Parameter(torch.empty(num_bases, in_channels, out_channels))
            self.comp = torch.nn.Parameter(torch.empty(num_relations, num_bases))
        elif num_blocks is not None:
            if in_channels % num_blocks or out_channels % num_blocks:
                raise ValueError(f"{name}: in_channels and out_channels must be multiples of "
                                 f"num_blocks, got {in_channels}, {out_channels} and {num_blocks}")
            self.weight = torch.nn.Parameter(torch.empty(
                num_relations, num_blocks, in_channels // num_blocks, out_channels // num_blocks))
            self.register_parameter("comp", None)
        else:
            self.weight = torch.nn.Parameter(torch.empty(num_relations, in_channels,
                                                         out_channels))
            self.register_parameter("comp", None)
        if root_weight:
            self.root = torch.nn.Parameter(torch.empty(in_channels, out_channels))
        else:
            self.register_parameter("root", None)
        if bias:
            self.bias = torch.nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        _glorot(self.weight)
        _glorot(self.comp)
        _glorot(self.root)
        if self.bias is not None:
            with torch.no_grad():
                self.bias.zero_()

    def relation_weight(self):
        """The [R, in, out] relation weights the kernel reads, formed from the parameters."""
        w = self.weight
        if self.num_bases is not None:
            return (self.comp @ w.reshape(self.num_bases, -1)).view(
                self.num_relations, self.in_channels, self.out_channels)
        if self.num_blocks is not None:
            return torch.stack([torch.block_diag(*w[r].unbind(0))
                                for r in range(self.num_relations)])
        return w

    def forward(self, x, edge_index, edge_type=None):
        name = type(self).__name__
        if x is None or (isinstance(x, torch.Tensor) and not torch.is_floating_point(x)):
            return self._featureless(x, edge_index, edge_type)
        if isinstance(x, tuple):
            _unsupported(name, "x", "a tuple", " (bipartite input)")
        if x.dim() != 2 or x.shape[1] != self.in_channels:
            raise ValueError(f"{name}: x must have shape [num_nodes, {self.in_channels}], got "
                             f"{list(x.shape)}")
        root = self.root if self.root is not None else torch.zeros(
            self.in_channels, self.out_channels, dtype=x.dtype, device=x.device)
        out = _apply_homogeneous("rgcn_conv", (("in", self.in_channels),
                                               ("out", self.out_channels)),
                                 x, edge_index, edge_type, self.num_relations,
                                 "mean" if self.aggr == "mean" else "add", [x],
                                 [self.relation_weight(), root])
        return self._finish(out)

    def _finish(self, out, featureless=False):
        """The bias, and the output's dtype as PyG's: its ``RGCNConv`` sums the relations into
        ``torch.zeros`` of the default dtype, so a bfloat16 sum (under autocast) comes out in
        float32 with or without a bias; its ``FastRGCNConv`` has no such accumulator, but its
        featureless form sums rows of the float32 weights (no product for autocast to cast)."""
        if self._default_dtype_accumulator or featureless:
            dtype = torch.promote_types(out.dtype, torch.get_default_dtype())
            if dtype != out.dtype:
                out = out.to(dtype)
        if self.bias is not None:
            out = out + self.bias
        return out

    def _featureless(self, x, edge_index, edge_type):
        """PyG's featureless input: ``x=None`` (node v's input is row v of the weights) or an
        index tensor (node v's is row ``x[v]``); no one-hot matrix and no [N, N] tensor.
        With ``x=None`` the kernels read row ``j`` of the edge's relation weight themselves
        (``src_row``, rgcn_conv_featureless.hector): nothing of E rows is gathered. An index
        tensor's rows are gathered as PyG does (W viewed as [R * in, out], row
        ``r * in + x[j]`` per edge, a PyTorch index_select of [E, out]; root rows ``x[i]``)
        and summed compiled (rgcn_conv_rows.hector)."""
        name = type(self).__name__
        if self.num_blocks is not None:
            raise ValueError("Block-diagonal decomposition not supported for non-continuous "
                             "input features.")
        fused = x is None
        if not fused and x.dim() != 1:
            raise ValueError(f"{name}: an index tensor x must be 1-D, got {list(x.shape)}")
        if edge_type is None:
            raise ValueError(f"{name}: edge_type is required (a [E] tensor of relation ids)")
        num_nodes = self.in_channels if fused else x.shape[0]
        if not torch.compiler.is_compiling():
            from .pyg import _check_edge_index
            _check_edge_index(edge_index, edge_type, num_nodes, f"{name}.forward")
            if not fused and x.numel() and (int(x.min()) < 0 or
                                            int(x.max()) >= self.in_channels):
                raise ValueError(f"{name}: x holds node indices outside [0, "
                                 f"{self.in_channels}) (in_channels)")
        aggr = "mean" if self.aggr == "mean" else "add"
        if fused:
            root = (self.root if self.root is not None else
                    self.weight.new_zeros(self.in_channels, self.out_channels))
            out = _apply("rgcn_conv_featureless", (("in", self.in_channels),
                                                   ("out", self.out_channels)), root,
                         [edge_index, edge_type], [0, self.in_channels, self.num_relations],
                         aggr, [root], [self.relation_weight()])
            return self._finish(out, featureless=True)
        x = x.long()
        w = self.relation_weight().reshape(-1, self.out_channels)
        msg = w.index_select(0, edge_type.long() * self.in_channels + x[edge_index[0].long()])
        root = (self.root.index_select(0, x) if self.root is not None else
                w.new_zeros(x.shape[0], self.out_channels))
        out = _apply("rgcn_conv_rows", (("out", self.out_channels),), root,
                     [edge_index, edge_type], [0, x.shape[0], self.num_relations],
                     aggr, [msg, root], [])
        return self._finish(out, featureless=True)

    def __repr__(self):
        return (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
                f"num_relations={self.num_relations})")


class FastRGCNConv(RGCNConv):
    """PyG ``FastRGCNConv``: the same layer as :class:`RGCNConv` (PyG's variant differs in how
    it computes it, not in what); here both run the same compiled kernels. Its output keeps the
    dtype the kernels computed in, as PyG's does."""

    _default_dtype_accumulator = False


# --- RGAT ---------------------------------------------------------------------------------

class RGATConv(torch.nn.Module):
    """PyG ``RGATConv`` with ``attention_mechanism='across-relation'``, either
    ``attention_mode`` (``heads``, ``concat``, ``negative_slope``,
    ``dropout`` of the attention coefficients in training mode, ``edge_dim`` with
    ``edge_attr``, ``num_bases``, ``num_blocks``, ``bias``; ``return_attention_weights``
    returns ``(out, (edge_index, alpha))`` as PyG's). Parameters as PyG's (``w``, ``l1``,
    ``b1``, ``l2``, ``b2`` are kept for ``state_dict`` compatibility; they only serve PyG's
    ``mod`` options)."""

    def __init__(self, in_channels, out_channels, num_relations, num_bases=None, num_blocks=None,
                 mod=None, attention_mechanism="across-relation",
                 attention_mode="additive-self-attention", heads=1, dim=1, concat=True,
                 negative_slope=0.2, dropout=0.0, edge_dim=None, bias=True, **kwargs):
        super().__init__()
        name = type(self).__name__
        for key, value in kwargs.items():
            if key == "aggr" and value == "add":
                continue
            _unsupported(name, key, value)
        if attention_mechanism not in ("within-relation", "across-relation"):
            raise ValueError('attention mechanism must either be "within-relation" or '
                             '"across-relation"')
        if attention_mode not in ("additive-self-attention", "multiplicative-self-attention"):
            raise ValueError('attention mode must either be "additive-self-attention" or '
                             '"multiplicative-self-attention"')
        if attention_mechanism != "across-relation":
            _unsupported(name, "attention_mechanism", attention_mechanism,
                         ": the model language's softmax normalises over all incoming edges "
                         "of a node, not per relation")
        if dim != 1:
            _unsupported(name, "dim", dim)
        if mod is not None:
            _unsupported(name, "mod", mod)
        if not 0.0 <= float(dropout) <= 1.0:
            raise ValueError(f"{name}: dropout probability has to be between 0 and 1, but got "
                             f"{dropout}")
        if num_bases is not None and num_blocks is not None:
            raise ValueError("Can not apply both basis-decomposition and "
                             "block-diagonal-decomposition at the same time.")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.num_relations, self.num_bases, self.num_blocks = num_relations, num_bases, num_blocks
        self.heads, self.dim, self.concat = heads, dim, concat
        self.negative_slope, self.dropout, self.mod = negative_slope, dropout, mod
        self.attention_mechanism, self.attention_mode = attention_mechanism, attention_mode
        self.edge_dim = edge_dim
        hc = heads * out_channels
        self.q = torch.nn.Parameter(torch.empty(hc, heads * dim))
        self.k = torch.nn.Parameter(torch.empty(hc, heads * dim))
        if bias and concat:
            self.bias = torch.nn.Parameter(torch.empty(heads * dim * out_channels))
        elif bias:
            self.bias = torch.nn.Parameter(torch.empty(dim * out_channels))
        else:
            self.register_parameter("bias", None)
        if edge_dim is not None:
            # PyG's order: e among the parameters here, lin_edge.weight after them.
            self.lin_edge = _Linear(edge_dim, hc, bias=False)
            self.e = torch.nn.Parameter(torch.empty(hc, heads * dim))
        else:
            self.lin_edge = None
            self.register_parameter("e", None)
        if num_bases is not None:
            self.att = torch.nn.Parameter(torch.empty(num_relations, num_bases))
            self.basis = torch.nn.Parameter(torch.empty(num_bases, in_channels, hc))
        elif num_blocks is not None:
            if in_channels % num_blocks or hc % num_blocks:
                raise ValueError("both 'in_channels' and 'heads * out_channels' must be multiple "
                                 "of 'num_blocks' used")
            self.weight = torch.nn.Parameter(torch.empty(
                num_relations, num_blocks, in_channels // num_blocks, hc // num_blocks))
        else:
            self.weight = torch.nn.Parameter(torch.empty(num_relations, in_channels, hc))
        self.w = torch.nn.Parameter(torch.ones(out_channels))
        self.l1 = torch.nn.Parameter(torch.empty(1, out_channels))
        self.b1 = torch.nn.Parameter(torch.empty(1, out_channels))
        self.l2 = torch.nn.Parameter(torch.empty(out_channels, out_channels))
        self.b2 = torch.nn.Parameter(torch.empty(1, out_channels))
        self.reset_parameters()

    def reset_parameters(self):
        if self.num_bases is not None:
            _glorot(self.basis)
            _glorot(self.att)
        else:
            _glorot(self.weight)
        _glorot(self.q)
        _glorot(self.k)
        if self.lin_edge is not None:
            self.lin_edge.reset_parameters()
            _glorot(self.e)
        with torch.no_grad():
            if self.bias is not None:
                self.bias.zero_()
            self.w.fill_(1.0)
            self.l1.fill_(1.0)
            self.b1.zero_()
            self.l2.fill_(1.0 / self.out_channels)
            self.b2.zero_()

    def relation_weight(self):
        """The [R, in, heads * out] relation weights the kernel reads."""
        if self.num_bases is not None:
            return (self.att @ self.basis.reshape(self.num_bases, -1)).view(
                self.num_relations, self.in_channels, self.heads * self.out_channels)
        if self.num_blocks is not None:
            return torch.stack([torch.block_diag(*self.weight[r].unbind(0))
                                for r in range(self.num_relations)])
        return self.weight

    def forward(self, x, edge_index, edge_type=None, edge_attr=None, size=None,
                return_attention_weights=None):
        name = type(self).__name__
        if edge_attr is not None and self.lin_edge is None:
            raise ValueError(f"{name}: edge_attr needs the layer built with edge_dim = "
                             "edge_attr.size(-1)")
        if not isinstance(x, torch.Tensor) or not torch.is_floating_point(x):
            _unsupported(name, "x", type(x).__name__ if not isinstance(x, torch.Tensor)
                         else "an index tensor", ": pass float node features")
        if size is not None and tuple(size) != (x.shape[0], x.shape[0]):
            _unsupported(name, "size", size, " (bipartite graphs)")
        if x.dim() != 2 or x.shape[1] != self.in_channels:
            raise ValueError(f"{name}: x must have shape [num_nodes, {self.in_channels}], got "
                             f"{list(x.shape)}")
        # additive: LeakyReLU(q_i + k_j (+ edge term)); multiplicative: q_i k_j (x edge term),
        # the rgat_conv_mul* models (no slope).
        additive = self.attention_mode == "additive-self-attention"
        model = "rgat_conv" if additive else "rgat_conv_mul"
        params = (("H", self.heads), ("d", self.out_channels), ("in", self.in_channels))
        if additive:
            params += (("slope", float(self.negative_slope)),)
        weights = [self.relation_weight(), self.q, self.k]
        dropout = self.training and self.dropout > 0
        # PyG returns the coefficients whenever return_attention_weights is a bool, either one.
        attention = isinstance(return_attention_weights, bool)
        alpha = None
        if dropout or attention or edge_attr is not None:
            # rgat_conv_edge / rgat_conv_attention: the dropout mask and the edge features'
            # logit term as edge inputs (ones and zeros where the layer has none).
            num_edges = edge_index.shape[-1] if isinstance(edge_index, torch.Tensor) else 0
            keep = x.new_ones(num_edges, self.heads)
            if dropout:
                # PyG drops attention coefficients with F.dropout: the same call on ones
                # draws the same mask (0 or 1 / (1 - p) per edge and head), which the layer
                # multiplies into the coefficients after the softmax.
                keep = torch.nn.functional.dropout(keep, p=self.dropout, training=True)
            if edge_attr is None:  # the identity of the edge term: added, or multiplied
                ae = (x.new_zeros if additive else x.new_ones)(num_edges, self.heads)
            else:
                ae = self._edge_logits(edge_attr, num_edges)
            if attention:
                out, alpha = _apply_homogeneous(
                    model + "_attention", params, x, edge_index, edge_type, self.num_relations,
                    "none", [x, keep, ae], weights, all_outputs=True)
            else:
                out = _apply_homogeneous(model + "_edge", params, x, edge_index, edge_type,
                                         self.num_relations, "none", [x, keep, ae], weights)
        else:
            out = _apply_homogeneous(model, params, x, edge_index, edge_type,
                                     self.num_relations, "none", [x], weights)
        if not self.concat:
            out = out.view(-1, self.heads, self.out_channels).mean(dim=1)
        if self.bias is not None:
            out = out + self.bias
        if attention:
            return out, (edge_index, alpha)
        return out

    def _edge_logits(self, edge_attr, num_edges):
        """PyG's edge term of the logits, ``lin_edge(edge_attr) e``: [E, heads] (added to the
        additive logits, multiplied into the multiplicative ones)."""
        name = type(self).__name__
        if not isinstance(edge_attr, torch.Tensor) or not torch.is_floating_point(edge_attr):
            raise TypeError(f"{name}: edge_attr must be a floating tensor, got "
                            f"{getattr(edge_attr, 'dtype', type(edge_attr).__name__)}")
        if edge_attr.dim() == 1:
            edge_attr = edge_attr.view(-1, 1)
        if edge_attr.dim() != 2 or edge_attr.shape != (num_edges, self.edge_dim):
            raise ValueError(f"{name}: edge_attr must have shape [num_edges, edge_dim] = "
                             f"[{num_edges}, {self.edge_dim}], got {list(edge_attr.shape)}")
        return self.lin_edge(edge_attr) @ self.e

    def __repr__(self):
        return (f"{type(self).__name__}({self.in_channels}, {self.out_channels}, "
                f"heads={self.heads})")


# --- HGT ----------------------------------------------------------------------------------

class _Linear(torch.nn.Module):
    """A ``weight`` [out, in] and ``bias`` [out] pair with PyG ``Linear``'s state_dict keys
    (``bias=False``: the weight alone, glorot-initialised, as RGATConv's ``lin_edge``)."""

    def __init__(self, fin, fout, bias=True):
        super().__init__()
        self.in_channels, self.out_channels = fin, fout
        self.weight = torch.nn.Parameter(torch.empty(fout, fin))
        if bias:
            self.bias = torch.nn.Parameter(torch.empty(fout))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.bias is None:
            _glorot(self.weight)
            return
        torch.nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        bound = 1.0 / math.sqrt(self.in_channels) if self.in_channels else 0.0
        with torch.no_grad():
            self.bias.uniform_(-bound, bound)

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


class _HeteroDictLinear(torch.nn.Module):
    """PyG ``HeteroDictLinear``'s parameters: one ``_Linear`` per type, ``fin`` an int or a
    ``{type: width}`` dict (its order is the state_dict's, as in PyG)."""

    def __init__(self, fin, fout, types=None):
        super().__init__()
        widths = fin if isinstance(fin, dict) else {t: fin for t in types}
        self.lins = torch.nn.ModuleDict()
        for t, width in widths.items():
            self.lins[t] = _Linear(width, fout)


class _HeteroLinear(torch.nn.Module):
    """PyG ``HeteroLinear(bias=False)``'s parameter: ``weight`` [types, in, out]."""

    def __init__(self, fin, fout, num_types):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(num_types, fin, fout))
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.weight.size(1))
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)


class HGTConv(torch.nn.Module):
    """PyG ``HGTConv(in_channels, out_channels, metadata, heads)``: ``forward(x_dict,
    edge_index_dict)`` returns the outputs of the node types that are destinations of an edge
    type. ``in_channels`` is one width for every node type or a ``{node type: width}`` dict
    (known widths; PyG's lazy ``-1`` is not supported): the compiled layer reads one table of
    the widest width, narrower types' features and k/q/v weights padded with zero columns and
    rows, which adds nothing to any product. Parameters as PyG's (``kqv_lin``, ``out_lin``,
    ``k_rel``, ``v_rel``, ``skip``, ``p_rel``)."""

    def __init__(self, in_channels, out_channels, metadata, heads=1, **kwargs):
        super().__init__()
        name = type(self).__name__
        for key, value in kwargs.items():
            if key == "aggr" and value == "add":
                continue
            _unsupported(name, key, value)
        if out_channels % heads != 0:
            raise ValueError(f"'out_channels' (got {out_channels}) must be divisible by the "
                             f"number of heads (got {heads})")
        node_types, edge_types = metadata
        if not isinstance(in_channels, dict):
            in_channels = {t: in_channels for t in node_types}
        in_channels = dict(in_channels)
        missing = [t for t in node_types if t not in in_channels]
        if missing:
            raise ValueError(f"{name}: in_channels has no width for node types {missing}")
        for t, width in in_channels.items():
            if isinstance(width, bool) or not isinstance(width, int) or width < 0:
                _unsupported(name, "in_channels", in_channels,
                             ": every node type needs a known width (an int >= 0; lazy -1 "
                             "widths are not supported)")
        self.in_channels = in_channels
        # The compiled layer's input width: the widest node type's.
        self._in = max((in_channels[t] for t in node_types), default=0)
        self.out_channels, self.heads = out_channels, heads
        self.node_types = list(node_types)
        self.edge_types = [tuple(e) for e in edge_types]
        self.edge_types_map = {e: i for i, e in enumerate(self.edge_types)}
        self.dst_node_types = {e[-1] for e in self.edge_types}
        self.kqv_lin = _HeteroDictLinear(self.in_channels, out_channels * 3)
        self.out_lin = _HeteroDictLinear(out_channels, out_channels, self.node_types)
        d = out_channels // heads
        self.k_rel = _HeteroLinear(d, d, heads * len(self.edge_types))
        self.v_rel = _HeteroLinear(d, d, heads * len(self.edge_types))
        # Inserted one by one: a ParameterDict built from a plain dict sorts its keys.
        self.skip = torch.nn.ParameterDict()
        for t in self.node_types:
            self.skip[t] = torch.nn.Parameter(torch.ones(1))
        self.p_rel = torch.nn.ParameterDict()
        for e in self.edge_types:
            self.p_rel["__".join(e)] = torch.nn.Parameter(torch.ones(1, heads))

    def kernel_weights(self):
        """The compiled layer's weights (hgt_conv.hector's order), formed from the parameters."""
        H, F = self.heads, self.out_channels
        d, n_et = F // H, len(self.edge_types)
        lins = [self.kqv_lin.lins[t] for t in self.node_types]
        # [T, 3F, in], a narrower type's weight padded with zero columns (its features with
        # zero columns in forward).
        w = torch.stack([torch.nn.functional.pad(lin.weight, (0, self._in - lin.in_channels))
                         for lin in lins])
        b = torch.stack([lin.bias for lin in lins])             # [T, 3F]
        T = len(lins)
        parts = []
        for i in range(3):                                      # k, q, v
            parts.append(w[:, i * F:(i + 1) * F].transpose(1, 2).reshape(T, self._in, H, d))
            parts.append(b[:, i * F:(i + 1) * F].reshape(T, H, d))
        w_att = self.k_rel.weight.view(H, n_et, d, d).transpose(0, 1)
        w_msg = self.v_rel.weight.view(H, n_et, d, d).transpose(0, 1)
        mu = torch.stack([self.p_rel["__".join(e)].view(H) for e in self.edge_types])
        outs = [self.out_lin.lins[t] for t in self.node_types]
        a = torch.stack([lin.weight.t() for lin in outs])
        ba = torch.stack([lin.bias for lin in outs])
        return [t.contiguous() for t in parts + [w_att, w_msg, mu, a, ba]]

    def forward(self, x_dict, edge_index_dict):
        from .pyg import HeteroLayout
        name = type(self).__name__
        where = f"{name}.forward"
        for t in x_dict:
            if t not in self.in_channels:
                raise ValueError(f"{where}: unknown node type {t!r} in x_dict (the metadata's "
                                 f"node types are {self.node_types})")
        for t in self.node_types:
            if t not in x_dict:
                raise ValueError(f"{where}: x_dict has no features for node type {t!r}")
            x = x_dict[t]
            width = self.in_channels[t]
            if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != width:
                shape = list(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
                raise ValueError(f"{where}: x_dict[{t!r}] must have shape [n, {width}], "
                                 f"got {shape}")
        layout = HeteroLayout(self.node_types, self.edge_types,
                              {t: x_dict[t].shape[0] for t in self.node_types})
        keys = [tuple(k) if isinstance(k, list) else k for k in edge_index_dict]
        for k in keys:
            if isinstance(k, tuple) and len(k) == 3:
                for t in (k[0], k[2]):
                    if t not in layout.node_type_id:
                        raise ValueError(f"{where}: unknown node type {t!r} in edge_index_dict "
                                         f"key {k} (the metadata's node types are "
                                         f"{self.node_types})")
        for k in keys:
            if k not in self.edge_types_map:
                raise ValueError(f"{where}: unknown edge type {k} in edge_index_dict (the "
                                 f"metadata's edge types are {self.edge_types})")
        T = len(self.node_types)
        spec = [1, T, len(self.edge_types)] + [x_dict[t].shape[0] for t in self.node_types]
        for a, r, b in keys:
            spec += [layout.node_type_id[a], self.edge_types_map[(a, r, b)],
                     layout.node_type_id[b]]
        x = layout.stack({t: torch.nn.functional.pad(x_dict[t], (0, self._in - x_dict[t].shape[1]))
                          if x_dict[t].shape[1] < self._in else x_dict[t]
                          for t in self.node_types}, where)
        out = _apply("hgt_conv", (("H", self.heads), ("in", self._in),
                                  ("out", self.out_channels)),
                     x, list(edge_index_dict.values()), spec, "none", [x],
                     self.kernel_weights())
        parts = layout.unstack(out)
        result = {}
        # PyG's order: its kqv_lin's (in_channels' order) over the destination types.
        for t in self.kqv_lin.lins:
            if t not in self.dst_node_types or t not in x_dict:
                continue
            a = parts[t]
            if a.shape[-1] == x_dict[t].shape[-1]:
                alpha = self.skip[t].sigmoid()
                a = alpha * a + (1 - alpha) * x_dict[t]
            result[t] = a
        return result

    def __repr__(self):
        return f"{type(self).__name__}(-1, {self.out_channels}, heads={self.heads})"
