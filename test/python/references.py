"""Oracles for the numerical tests: awkward random graphs, plain-PyTorch references of the three
models, and the PyG peers built with given weights.

Weight layouts follow the model files (docs/language.md): a relation-sliced weight `relation[a, b]`
is a tensor [R, a, b]; an ntype-sliced one [T, ...]; heads are the leading per-row dimension
([H, d] rows, flattened head-major as h * d + c).
"""
from __future__ import annotations

import dataclasses
import math

import torch


@dataclasses.dataclass
class TestGraph:
    src: torch.Tensor
    dst: torch.Tensor
    etype: torch.Tensor
    ntype: torch.Tensor
    num_nodes: int
    num_relations: int
    num_ntypes: int
    rel_src_type: list[int]   #: node type of every relation's sources
    rel_dst_type: list[int]   #: node type of every relation's destinations


def awkward_graph(seed: int = 0, num_nodes: int = 40, num_edges: int = 160,
                  num_relations: int = 5, num_ntypes: int = 3) -> TestGraph:
    """A random typed multigraph with every awkward case of docs/architecture.md's test policy:
    isolated nodes, nodes without incoming edges, a relation without edges, self-loops, duplicate
    edges, a node type without nodes (the last one), and relations whose endpoints respect node
    types. `num_relations=1` gives the single-relation graph."""
    g = torch.Generator().manual_seed(seed)
    used_types = max(1, num_ntypes - 1)          # the last node type has no nodes
    # Nodes: a few isolated ones at the end (never an endpoint).
    num_isolated = 3
    active = num_nodes - num_isolated
    ntype = torch.randint(0, used_types, (num_nodes,), generator=g)
    ntype[:used_types] = torch.arange(used_types)  # every used type has a node
    rel_src_type = [int(torch.randint(0, used_types, (1,), generator=g)) for _ in range(num_relations)]
    rel_dst_type = [int(torch.randint(0, used_types, (1,), generator=g)) for _ in range(num_relations)]
    nodes_of = [torch.nonzero(ntype[:active] == t).flatten() for t in range(num_ntypes)]
    # Destinations never receiving: keep the first active node of each type out of dst lists.
    src, dst, et = [], [], []
    empty_relation = num_relations - 1 if num_relations > 1 else None
    for _ in range(num_edges):
        r = int(torch.randint(0, num_relations, (1,), generator=g))
        if r == empty_relation:
            continue
        s_pool, d_pool = nodes_of[rel_src_type[r]], nodes_of[rel_dst_type[r]]
        if len(d_pool) > 1:
            d_pool = d_pool[1:]
        s = int(s_pool[torch.randint(0, len(s_pool), (1,), generator=g)])
        d = int(d_pool[torch.randint(0, len(d_pool), (1,), generator=g)])
        src.append(s), dst.append(d), et.append(r)
    # Self-loops (where a relation's endpoint types agree) and duplicates.
    for r in range(num_relations):
        if r != empty_relation and rel_src_type[r] == rel_dst_type[r]:
            n = int(nodes_of[rel_src_type[r]][-1])
            src.append(n), dst.append(n), et.append(r)
    for i in range(0, min(len(src), 12), 3):
        src.append(src[i]), dst.append(dst[i]), et.append(et[i])
    return TestGraph(torch.tensor(src), torch.tensor(dst), torch.tensor(et), ntype, num_nodes,
                     num_relations, num_ntypes, rel_src_type, rel_dst_type)


def edge_softmax(scores: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Softmax of per-edge scores [E, ...] over the incoming edges of each destination."""
    shape = (num_nodes,) + scores.shape[1:]
    idx = dst.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    mx = torch.full(shape, -math.inf, dtype=scores.dtype).scatter_reduce(0, idx, scores, "amax")
    ex = (scores - mx.gather(0, idx)).exp()
    den = torch.zeros(shape, dtype=scores.dtype).scatter_add(0, idx, ex)
    return ex / den.gather(0, idx)


def rgcn_norm(g: TestGraph) -> torch.Tensor:
    """1 / |N_r(i)| per edge (PyG RGCNConv's mean aggregation)."""
    key = g.dst * g.num_relations + g.etype
    counts = torch.bincount(key, minlength=g.num_nodes * g.num_relations)
    return 1.0 / counts[key].to(torch.float64)


def rgcn_reference(g, x, W, root, bias, norm=None):
    """h'_i = root^T h_i + sum_e norm_e W_r^T h_j + b (norm = None: aggr='add')."""
    msg = torch.bmm(x[g.src].unsqueeze(1), W[g.etype]).squeeze(1)
    if norm is not None:
        msg = msg * norm.unsqueeze(1).to(msg.dtype)
    out = torch.zeros(g.num_nodes, W.shape[-1], dtype=x.dtype).index_add(0, g.dst, msg)
    return out + x @ root + bias


def rgcn_pyg(g, x, W, root, bias, aggr="mean", comp=None, bases=None):
    """PyG RGCNConv with the given weights (bases: V [B, in, out], comp [R, B])."""
    import torch_geometric
    from torch_geometric.nn import RGCNConv
    torch_geometric.backend.use_segment_matmul = False  # per-relation mean (models.md)
    conv = RGCNConv(x.shape[1], root.shape[1], g.num_relations, aggr=aggr,
                    num_bases=None if bases is None else bases.shape[0]).to(x.dtype)
    with torch.no_grad():
        if bases is None:
            conv.weight.copy_(W)
        else:
            conv.weight.copy_(bases)
            conv.comp.copy_(comp)
        conv.root.copy_(root)
        conv.bias.copy_(bias)
    return conv, conv(x, torch.stack([g.src, g.dst]), g.etype)


def rgat_hector_reference(g, x, W, a_src, a_dst, slope=0.2):
    """Hector's RGAT: per-relation attention vectors, softmax over all incoming edges."""
    z = torch.einsum("ei,eihd->ehd", x[g.src], W[g.etype])
    zd = torch.einsum("ei,eihd->ehd", x[g.dst], W[g.etype])
    s = (a_src[g.etype] * z).sum(-1) + (a_dst[g.etype] * zd).sum(-1)
    alpha = edge_softmax(torch.nn.functional.leaky_relu(s, slope), g.dst, g.num_nodes)
    out = torch.zeros(g.num_nodes, *z.shape[1:], dtype=x.dtype).index_add(
        0, g.dst, alpha.unsqueeze(-1) * z)
    return out.reshape(g.num_nodes, -1)


def rgat_pyg(g, x, W, q, k, bias, slope=0.2):
    """PyG RGATConv (across-relation, additive self-attention) with W [R, in, H, d]."""
    from torch_geometric.nn import RGATConv
    R, fin, H, d = W.shape
    conv = RGATConv(fin, d, g.num_relations, heads=H, negative_slope=slope,
                    attention_mechanism="across-relation",
                    attention_mode="additive-self-attention", dropout=0.0).to(x.dtype)
    with torch.no_grad():
        conv.weight.copy_(W.reshape(R, fin, H * d))
        conv.q.copy_(q)
        conv.k.copy_(k)
        conv.bias.copy_(bias)
    conv.eval()
    return conv, conv(x, torch.stack([g.src, g.dst]), g.etype)


def hgt_reference(g, x, K, Kb, Q, Qb, V, Vb, Watt, Wmsg, mu, A, Ab, skip=None, gelu=True):
    """HGT on the typed homogeneous graph (models.md). K/Q/V: [T, in, H, d], biases [T, H, d];
    Watt/Wmsg: [R, H, d, d]; mu: [R, H]; A: [T, H*d, out], Ab: [T, out]; skip: [T] or None."""
    t = g.ntype
    k = torch.einsum("ni,nihd->nhd", x, K[t]) + Kb[t]
    q = torch.einsum("ni,nihd->nhd", x, Q[t]) + Qb[t]
    v = torch.einsum("ni,nihd->nhd", x, V[t]) + Vb[t]
    d = k.shape[-1]
    kw = torch.einsum("ehd,ehdc->ehc", k[g.src], Watt[g.etype])
    att = (kw * q[g.dst]).sum(-1) * mu[g.etype] / math.sqrt(d)
    alpha = edge_softmax(att, g.dst, g.num_nodes)
    msg = torch.einsum("ehd,ehdc->ehc", v[g.src], Wmsg[g.etype])
    m = torch.zeros_like(v).index_add(0, g.dst, alpha.unsqueeze(-1) * msg).reshape(g.num_nodes, -1)
    if gelu:
        m = torch.nn.functional.gelu(m)
    out = torch.einsum("ni,nio->no", m, A[t]) + Ab[t]
    if skip is not None:
        s = torch.sigmoid(skip[t]).unsqueeze(-1)
        out = s * out + (1 - s) * x
    return out


def hgt_pyg(g, x, layer, heads, skip=True, return_module=False):
    """PyG HGTConv on the heterogeneous form of g with the compiled layer's weights; returns the
    output in global node order and a mask of the nodes PyG gives an output to (with
    return_module, also the module and its input dictionaries). PyG's edge types
    are the (source type, relation, destination type) triples that occur; each gets its
    relation's W_att, W_msg and mu."""
    from torch_geometric.nn import HGTConv
    T = g.num_ntypes
    out_dim = layer.A.shape[-1]
    in_dim = x.shape[1]
    ntypes = [f"t{t}" for t in range(T)]
    triples = sorted({(int(a), int(r), int(b)) for a, r, b in zip(
        g.ntype[g.src].tolist(), g.etype.tolist(), g.ntype[g.dst].tolist())})
    etypes = [(f"t{a}", f"r{r}", f"t{b}") for a, r, b in triples]
    conv = HGTConv(in_dim, out_dim, (ntypes, etypes), heads=heads).to(x.dtype)
    local = torch.empty(g.num_nodes, dtype=torch.int64)
    members = []
    for t in range(T):
        idx = torch.nonzero(g.ntype == t).flatten()
        local[idx] = torch.arange(idx.numel())
        members.append(idx)
    n_et = len(etypes)
    with torch.no_grad():
        for t, name in enumerate(ntypes):
            lin = conv.kqv_lin.lins[name]
            w = torch.cat([layer.Wk[t].reshape(in_dim, -1), layer.Wq[t].reshape(in_dim, -1),
                           layer.Wv[t].reshape(in_dim, -1)], dim=1)
            lin.weight.copy_(w.t())
            lin.bias.copy_(torch.cat([layer.bk[t].reshape(-1), layer.bq[t].reshape(-1),
                                      layer.bv[t].reshape(-1)]))
            conv.out_lin.lins[name].weight.copy_(layer.A[t].t())
            conv.out_lin.lins[name].bias.copy_(layer.bA[t] if hasattr(layer, "bA")
                                                else torch.zeros(out_dim))
            conv.skip[name].fill_(float(layer.skip[t]) if skip else 0.0)
        for i, ((_, r, _), et) in enumerate(zip(triples, etypes)):
            for h in range(heads):
                conv.k_rel.weight[h * n_et + i].copy_(layer.W_att[r, h])
                conv.v_rel.weight[h * n_et + i].copy_(layer.W_msg[r, h])
            conv.p_rel["__".join(et)].copy_(layer.mu[r].view(1, heads))
    x_dict = {name: x[members[t]] for t, name in enumerate(ntypes)}
    ei = {}
    for (a, r, b), et in zip(triples, etypes):
        m = (g.etype == r) & (g.ntype[g.src] == a) & (g.ntype[g.dst] == b)
        ei[et] = torch.stack([local[g.src[m]], local[g.dst[m]]])
    out_dict = conv(x_dict, ei)
    out = torch.zeros(g.num_nodes, out_dim, dtype=x.dtype)
    mask = torch.zeros(g.num_nodes, dtype=torch.bool)
    for t, name in enumerate(ntypes):
        if out_dict.get(name) is not None:
            out[members[t]] = out_dict[name]
            mask[members[t]] = True
    if return_module:
        return out, mask, conv, x_dict, ei
    return out, mask
