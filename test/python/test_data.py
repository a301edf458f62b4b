"""The dataset loaders against the published sizes of the real graphs and on small handmade files."""
import gzip
import pathlib

import pytest
import torch

from hector.data import load_entities, load_triples

DATA = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "aifb").is_dir(), reason="../shared/data not present")


@needs_data
def test_aifb_matches_published_sizes():
    d = load_entities(DATA / "aifb")
    # R-GCN paper / PyG Entities('AIFB'): 8,285 nodes, 58,086 edges, 90 relations (with inverses),
    # 140 training and 36 test people, 4 classes.
    assert (d.num_nodes, d.num_edges, d.num_relations) == (8285, 58086, 90)
    assert (len(d.train_idx), len(d.test_idx), d.num_classes) == (140, 36, 4)
    assert set(d.train_idx.tolist()).isdisjoint(d.test_idx.tolist())
    # Every edge has its inverse, with the paired relation id.
    fwd = d.etype % 2 == 0
    a = set(zip(d.src[fwd].tolist(), d.dst[fwd].tolist(), (d.etype[fwd] // 2).tolist()))
    b = set(zip(d.dst[~fwd].tolist(), d.src[~fwd].tolist(), (d.etype[~fwd] // 2).tolist()))
    assert a == b
    assert int(d.etype.max()) < d.num_relations and int(d.ntype.max()) < d.num_ntypes


def test_blank_nodes_get_the_same_ids_on_every_load(tmp_path):
    """rdflib draws fresh random blank-node ids on every parse; the loader numbers blank nodes by
    their label in the file, so two loads (or two processes) agree on every id."""
    d = tmp_path / "blanks"
    d.mkdir()
    lines = [f"_:b{i} <http://x/p> _:b{(i * 7) % 12} .\n" for i in range(12)]
    lines += ["<http://x/e1> <http://x/p> _:b3 .\n", "<http://x/e2> <http://x/q> _:b5 .\n"]
    with gzip.open(d / "blanks_stripped.nt.gz", "wt") as f:
        f.writelines(lines)
    for split in ("trainingSet.tsv", "testSet.tsv"):
        (d / split).write_text("person\tid\tlabel_x\nhttp://x/e1\t1\ta\nhttp://x/e2\t2\tb\n")
    first, second = load_entities(d), load_entities(d)
    assert first.node_names == second.node_names
    assert torch.equal(first.src, second.src) and torch.equal(first.dst, second.dst)
    assert "_:b3" in first.node_names


@needs_data
def test_umls_matches_published_sizes():
    k = load_triples(DATA / "umls")
    assert (k.num_nodes, k.num_relations) == (135, 46)
    assert (len(k.train), len(k.valid), len(k.test)) == (5216, 652, 661)


def _write_dataset(tmp_path, triples, train, test):
    with gzip.open(tmp_path / "toy_stripped.nt.gz", "wt") as f:
        f.write("\n".join(triples) + "\n")
    for name, rows in (("trainingSet.tsv", train), ("testSet.tsv", test)):
        with open(tmp_path / name, "w") as f:
            f.write("person\tid\tlabel_group\n")
            f.writelines(f"{p}\t{i}\t{label}\n" for i, (p, label) in enumerate(rows))


def test_literals_blank_nodes_and_duplicates(tmp_path):
    t = [
        '<http://x/a> <http://x/knows> <http://x/b> .',
        '<http://x/a> <http://x/knows> <http://x/b> .',                       # duplicate line
        '<http://x/a> <http://x/name> "A \\"quoted\\" name, with spaces"@en .',
        '<http://x/b> <http://x/name> "http://x/a" .',                        # literal == URI text
        '_:n1 <http://x/knows> <http://x/a> .',
        '<http://x/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://x/Person> .',
    ]
    _write_dataset(tmp_path, t, [("http://x/a", "g1")], [("http://x/b", "g2")])
    d = load_entities(tmp_path)
    # Nodes: a, b, Person, two literals, one blank node (the literal "http://x/a" is not the URI).
    assert d.num_nodes == 6
    assert d.num_edges == 2 * 5 and d.num_relations == 2 * 3
    names = d.node_names
    assert '"http://x/a"' in names and "<http://x/a>" in names
    kinds = {names[i]: d.ntype_names[int(d.ntype[i])] for i in range(d.num_nodes)}
    assert kinds["<http://x/a>"] == "<http://x/Person>"
    assert kinds["<http://x/b>"] == "Untyped"
    assert kinds['"http://x/a"'] == "Literal"
    assert any(v == "Blank" for v in kinds.values())
    assert d.train_y.tolist() == [0] and d.test_y.tolist() == [1]


def test_missing_files_and_unknown_entities(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_entities(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="_stripped.nt.gz"):
        load_entities(tmp_path)
    _write_dataset(tmp_path, ['<http://x/a> <http://x/p> <http://x/b> .'],
                   [("http://x/zzz", "g")], [("http://x/a", "g")])
    with pytest.raises(ValueError, match="does not occur in the graph"):
        load_entities(tmp_path)


def test_triples_bad_line(tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"{split}.tsv").write_text("a\tr\tb\n")
    (tmp_path / "valid.tsv").write_text("a\tr\tb\nbroken line\n")
    with pytest.raises(ValueError, match=r"valid.tsv:2: expected 3 tab-separated fields"):
        load_triples(tmp_path)
    (tmp_path / "valid.tsv").write_text("a\tr\tb\n")
    k = load_triples(tmp_path)
    assert k.train.tolist() == [[0, 0, 1]] and k.num_nodes == 2
    assert torch.equal(k.valid, k.train)
