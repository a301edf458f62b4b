# Names are data: random byte strings as input names, from both front ends (dialect text with
# `hectorc -x mlir`, model files), through to the emitted C++ and to a built library.
#
# Oracles: a regular expression of the documented name rule (docs/language.md, "Names"), written
# here independently of hector/Dialect/Names.h; the C++ compiler (a library with unusual valid
# names is built, loaded, and its messages name the tensors exactly); and the injection input of
# the report, which must build nothing.
import os
import pathlib
import random
import re
import subprocess

import pytest
import torch

import hector
from conftest import BUILD, _repo

HECTORC = str(BUILD / "bin" / "hectorc")
TENSOR_NAME = re.compile(rb"(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+))*")
IDENT = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
INJECTION = b'" + std::to_string(std::system("touch F")) + "'
# The other argument names of examples/rgcn.hector (inputs and weights share one namespace).
TAKEN = {b"norm", b"W", b"root", b"bias"}


def random_names(seed, count):
    rng = random.Random(seed)
    special = b"\"\\'\n\r\t\0?/*(){}#;+.:@%$ \x7f\xff\xc3\xa9"
    names = [INJECTION, b"a\nb", b"\xff", b"x.", b".x", b"a..b", b"9a", b"conv1.W", b"saved.0",
             b"grad.x", b"_", b"a" * 300]
    while len(names) < count:
        kind = rng.random()
        n = rng.randint(1, 16)
        if kind < 0.4:    # any bytes
            name = bytes(rng.randrange(256) for _ in range(n))
        elif kind < 0.7:  # the bytes that matter to C++ and to the rule
            name = bytes(rng.choice(special) for _ in range(n))
        else:             # from the name alphabet: mostly valid, some not
            name = bytes(rng.choice(b"aZ_09..") for _ in range(n))
        names.append(name)
    return names


def mlir_escape(name: bytes) -> str:
    return "".join(f"\\{b:02X}" for b in name)


@pytest.fixture(scope="module")
def rgcn_mlir():
    r = subprocess.run([HECTORC, str(_repo / "examples" / "rgcn.hector"), "-P", "in=4", "-P",
                        "out=3", "--emit=hector"], capture_output=True, text=True, check=True)
    assert r.stdout.count('hector.input "x"') == 1
    return r.stdout


def run_hectorc(args, stdin, tmp_path):
    r = subprocess.run([HECTORC, *args], input=stdin, capture_output=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode in (0, 1), f"hectorc {args}: exit {r.returncode}\n{r.stderr[-2000:]}"
    assert b"Stack dump" not in r.stderr and b"terminate called" not in r.stderr
    return r


def test_dialect_names_are_checked_or_escaped(rgcn_mlir, tmp_path):
    """Every name the rule refuses is a verifier error (exit 1, no output file); every name it
    accepts compiles, and reaches the emitted C++ only inside string literals."""
    accepted = refused = 0
    for i, name in enumerate(random_names(0, 250)):
        text = rgcn_mlir.replace('hector.input "x"', f'hector.input "{mlir_escape(name)}"')
        out = tmp_path / f"m{i}.cpp"
        r = run_hectorc(["-x", "mlir", "-", "--emit=cpp", "--target=cpu", "-o", str(out)],
                        text.encode(), tmp_path)
        valid = TENSOR_NAME.fullmatch(name) is not None and name not in TAKEN
        if valid and name.startswith((b"saved.", b"grad.")):
            # The prefixes of the names the compiler gives the backward layer's tensors: such a
            # name may collide there (a clear error) or not; either way no crash (run_hectorc).
            continue
        if valid:
            accepted += 1
            assert r.returncode == 0, (name, r.stderr[-1000:])
            source = out.read_bytes()
            # The name in the input check's message, between the quotes of one literal.
            assert b".forward: input '" + name + b"'\"" in source, name
        else:
            refused += 1
            assert r.returncode == 1, name
            assert b"error:" in r.stderr and not out.exists(), name
            if TENSOR_NAME.fullmatch(name) is None:
                assert b"is not identifiers" in r.stderr, (name, r.stderr[-500:])
        assert sorted(p.name for p in tmp_path.iterdir() if ".tmp-" in p.name) == []
    assert accepted > 20 and refused > 150


def test_model_file_names_are_identifiers(tmp_path):
    """In a model file a name is a lexer identifier: anything else is FILE:LINE:COL: error."""
    source = (_repo / "examples" / "rgcn.hector").read_bytes()
    rng = random.Random(1)
    names = random_names(2, 150) + [b"v_" + bytes(rng.choice(b"abcXYZ_0189") for _ in range(6))
                                    for _ in range(20)]
    accepted = 0
    for i, name in enumerate(names):
        text = re.sub(rb"\bx\b", lambda m: name, source)
        path = tmp_path / f"m{i}.hector"
        path.write_bytes(text)
        out = tmp_path / f"m{i}.cpp"
        r = run_hectorc([str(path), "--emit=cpp", "--target=cpu", "-o", str(out)], None, tmp_path)
        if IDENT.fullmatch(name) is None:
            assert r.returncode == 1 and not out.exists(), name
            assert re.search(rb"m%d\.hector:\d+:\d+: error: " % i, r.stderr), (name, r.stderr)
        elif name.startswith(b"v_"):
            accepted += 1
            assert r.returncode == 0, (name, r.stderr)
            assert b".forward: input '" + name + b"'\"" in out.read_bytes()
    assert accepted == 20


def test_injection_builds_nothing(rgcn_mlir, tmp_path):
    """The report's name, which would have run a command at every forward call: a clear error,
    no library, no package directory, nothing run."""
    text = rgcn_mlir.replace('hector.input "x"', f'hector.input "{mlir_escape(INJECTION)}"')
    for args in (["--emit=cpp", "-o", "m.cpp"], ["--emit=package", "-o", "pkg"],
                 ["-o", "m.so"]):
        r = run_hectorc(["-x", "mlir", "-", "--target=cpu", *args], text.encode(), tmp_path)
        assert r.returncode == 1
        assert b"'hector.input' op name '\" + std::to_string(std::system(\"touch F\")) + \"' " \
               b"is not identifiers" in r.stderr
    assert sorted(os.listdir(tmp_path)) == []


def test_unusual_valid_names_through_a_built_library(rgcn_mlir, tmp_path):
    """A library whose input and weight names use every form of the rule builds, loads, and
    names its tensors exactly in its manifest and its messages."""
    names = {"x": "_0.saved.12.A_b", "norm": "grad.norm_9", "W": "conv1.W", "root": "a" * 200}
    text = rgcn_mlir
    for old, new in names.items():
        for op in ("input", "weight"):
            text = text.replace(f'hector.{op} "{old}"', f'hector.{op} "{new}"')
    lib = tmp_path / "odd.so"
    r = run_hectorc(["-x", "mlir", "-", "--target=cpu", "-o", str(lib)], text.encode(), tmp_path)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    Layer = hector.load(lib)
    assert [i["name"] for i in Layer.manifest["inputs"]] == [names["x"], names["norm"]]
    assert [w["name"] for w in Layer.manifest["weights"]][:2] == [names["W"], names["root"]]
    g = hector.Graph(torch.tensor([0, 1, 2]), torch.tensor([1, 2, 0]), torch.tensor([0, 1, 0]),
                     num_nodes=3, num_relations=2)
    layer = Layer(num_relations=2)
    out = layer(g, torch.randn(3, 4), torch.ones(3))
    assert out.shape == (3, 3)
    with pytest.raises((RuntimeError, ValueError, TypeError)) as info:
        layer(g, torch.randn(3, 5), torch.ones(3))
    assert f"input '{names['x']}'" in str(info.value)
