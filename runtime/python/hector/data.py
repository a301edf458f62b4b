"""Loaders for the real graphs the examples and benchmarks use.

- :func:`load_entities` reads any dataset in the R-GCN entity-classification layout (AIFB, MUTAG,
  BGS, AM): ``*_stripped.nt.gz`` (N-Triples, parsed with rdflib), ``trainingSet.tsv`` and
  ``testSet.tsv`` (the entity in the first column, a ``label_*`` column).
- :func:`load_triples` reads a knowledge graph given as ``train.tsv``/``valid.tsv``/``test.tsv``
  with ``head<TAB>relation<TAB>tail`` lines (UMLS).

Both number nodes deterministically (sorted by their N-Triples spelling), so node ids are stable
across processes, unlike PyG's ``Entities`` (Python set order). Every RDF term is its own node: a
literal and a URI with the same text stay distinct (PyG merges them by string). As in PyG and DGL,
every predicate p gives two relations: ``2 * p`` for subject -> object and ``2 * p + 1`` for the
inverse edge.
"""
from __future__ import annotations

import csv
import dataclasses
import gzip
import pathlib

import torch


@dataclasses.dataclass
class EntityDataset:
    """A multi-relational graph with labelled entities (node classification)."""

    name: str
    src: torch.Tensor          #: int64 [E], source node of every edge
    dst: torch.Tensor          #: int64 [E], destination node
    etype: torch.Tensor        #: int64 [E], relation (2p: forward, 2p+1: inverse)
    ntype: torch.Tensor        #: int64 [N], node type (rdf:type class, or Literal/Blank/Untyped)
    num_nodes: int
    num_relations: int
    num_ntypes: int
    node_names: list[str]
    relation_names: list[str]
    ntype_names: list[str]
    train_idx: torch.Tensor    #: int64, labelled training nodes
    train_y: torch.Tensor      #: int64 labels of train_idx
    test_idx: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    class_names: list[str]

    @property
    def num_edges(self) -> int:
        return int(self.src.numel())


@dataclasses.dataclass
class TripleDataset:
    """A knowledge graph split into train/valid/test triples (link prediction)."""

    name: str
    train: torch.Tensor        #: int64 [n, 3] (head, relation, tail)
    valid: torch.Tensor
    test: torch.Tensor
    num_nodes: int
    num_relations: int
    node_names: list[str]
    relation_names: list[str]


def _term_key(term, blank_labels=None) -> str:
    """A node's identity: its N-Triples spelling (URIs, literals with datatype/language, blanks).
    Blank nodes are spelt with their label in the file (rdflib draws fresh random ids on every
    parse), so node ids are the same in every process."""
    if blank_labels is not None and term in blank_labels:
        return blank_labels[term]
    return term.n3()


def load_entities(directory: str | pathlib.Path) -> EntityDataset:
    """Reads an R-GCN entity-classification dataset from ``directory``."""
    import rdflib
    from rdflib.namespace import RDF

    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"dataset directory {directory} does not exist")
    graphs = sorted(directory.glob("*_stripped.nt.gz"))
    if len(graphs) != 1:
        raise FileNotFoundError(
            f"{directory}: expected exactly one *_stripped.nt.gz file, found {len(graphs)}")
    for split in ("trainingSet.tsv", "testSet.tsv"):
        if not (directory / split).is_file():
            raise FileNotFoundError(f"{directory}: missing {split}")

    g = rdflib.Graph()
    file_blanks: dict = {}   # the file's blank-node label -> rdflib's BNode
    with gzip.open(graphs[0], "rb") as f:
        g.parse(f, format="nt", bnode_context=file_blanks)
    blank_labels = {node: f"_:{label}" for label, node in file_blanks.items()}

    def key(term):
        return _term_key(term, blank_labels)

    triples = sorted({(key(s), key(p), key(o)) for s, p, o in g})
    node_names = sorted({s for s, _, _ in triples} | {o for _, _, o in triples})
    predicates = sorted({p for _, p, _ in triples})
    node_id = {n: i for i, n in enumerate(node_names)}
    pred_id = {p: i for i, p in enumerate(predicates)}

    s_ids = torch.tensor([node_id[s] for s, _, _ in triples], dtype=torch.int64)
    o_ids = torch.tensor([node_id[o] for _, _, o in triples], dtype=torch.int64)
    p_ids = torch.tensor([pred_id[p] for _, p, _ in triples], dtype=torch.int64)
    src = torch.cat([s_ids, o_ids])
    dst = torch.cat([o_ids, s_ids])
    etype = torch.cat([2 * p_ids, 2 * p_ids + 1])
    relation_names = [name for p in predicates for name in (p, p + "^-1")]

    # Node types: the (smallest) rdf:type class of a URI; literals, blank nodes and untyped URIs
    # get a type of their own.
    rdf_type = _term_key(RDF.type)
    classes: dict[str, str] = {}
    for s, p, o in triples:
        if p == rdf_type and (s not in classes or o < classes[s]):
            classes[s] = o

    def kind(name: str) -> str:
        if name in classes:
            return classes[name]
        if name.startswith('"'):
            return "Literal"
        if name.startswith("_:"):
            return "Blank"
        return "Untyped"

    kinds = [kind(n) for n in node_names]
    ntype_names = sorted(set(kinds))
    ntype_id = {t: i for i, t in enumerate(ntype_names)}
    ntype = torch.tensor([ntype_id[k] for k in kinds], dtype=torch.int64)

    def read_split(path: pathlib.Path):
        with open(path, newline="") as f:
            rows = list(csv.reader(f, delimiter="\t"))
        header, rows = rows[0], [r for r in rows[1:] if r]
        label_cols = [i for i, h in enumerate(header) if h.startswith("label_")]
        if len(label_cols) != 1:
            raise ValueError(f"{path}: expected one label_* column, found {len(label_cols)}")
        return [(r[0], r[label_cols[0]]) for r in rows]

    train_rows = read_split(directory / "trainingSet.tsv")
    test_rows = read_split(directory / "testSet.tsv")
    class_names = sorted({label for _, label in train_rows + test_rows})
    class_id = {c: i for i, c in enumerate(class_names)}

    def to_tensors(rows, split):
        idx, y = [], []
        for entity, label in rows:
            key = rdflib.URIRef(entity).n3()
            if key not in node_id:
                raise ValueError(f"{split}: entity {entity} does not occur in the graph")
            idx.append(node_id[key])
            y.append(class_id[label])
        return torch.tensor(idx, dtype=torch.int64), torch.tensor(y, dtype=torch.int64)

    train_idx, train_y = to_tensors(train_rows, "trainingSet.tsv")
    test_idx, test_y = to_tensors(test_rows, "testSet.tsv")
    return EntityDataset(
        name=directory.name, src=src, dst=dst, etype=etype, ntype=ntype,
        num_nodes=len(node_names), num_relations=2 * len(predicates),
        num_ntypes=len(ntype_names), node_names=node_names, relation_names=relation_names,
        ntype_names=ntype_names, train_idx=train_idx, train_y=train_y, test_idx=test_idx,
        test_y=test_y, num_classes=len(class_names), class_names=class_names)


def load_triples(directory: str | pathlib.Path) -> TripleDataset:
    """Reads a knowledge graph in the train/valid/test ``head<TAB>relation<TAB>tail`` layout."""
    directory = pathlib.Path(directory)
    splits = {}
    for split in ("train", "valid", "test"):
        path = directory / f"{split}.tsv"
        if not path.is_file():
            raise FileNotFoundError(f"{directory}: missing {split}.tsv")
        rows = []
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line:
                    continue
                parts = line.split("\t")
                if len(parts) != 3:
                    raise ValueError(f"{path}:{lineno}: expected 3 tab-separated fields, "
                                     f"got {len(parts)}")
                rows.append(tuple(parts))
        splits[split] = rows
    all_rows = [r for rows in splits.values() for r in rows]
    node_names = sorted({h for h, _, _ in all_rows} | {t for _, _, t in all_rows})
    relation_names = sorted({r for _, r, _ in all_rows})
    node_id = {n: i for i, n in enumerate(node_names)}
    rel_id = {r: i for i, r in enumerate(relation_names)}

    def to_tensor(rows):
        return torch.tensor([[node_id[h], rel_id[r], node_id[t]] for h, r, t in rows],
                            dtype=torch.int64).reshape(-1, 3)

    return TripleDataset(
        name=directory.name, train=to_tensor(splits["train"]), valid=to_tensor(splits["valid"]),
        test=to_tensor(splits["test"]), num_nodes=len(node_names),
        num_relations=len(relation_names), node_names=node_names, relation_names=relation_names)
