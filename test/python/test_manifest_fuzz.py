# The runtime's manifest reader (hector::parseManifest, the C++ side of hector.load) on mutated
# manifests: every mutant parses or is refused with a "hector manifest" runtime_error; never a
# crash, another exception type, or undefined behaviour (a double cast to an integer out of
# range, a NUL read as part of a number). Seeds: the manifests of a compiled layer, its backward
# layer and a variant (test/runtime/manifest_fuzz.cpp does the mutating).
import subprocess

import pytest
import torch

import hector
from conftest import BUILD


@pytest.mark.parametrize("which", ["forward", "backward", "variant"])
def test_mutated_manifests_are_parsed_or_refused(compiled_library, tmp_path, which):
    program = BUILD / "bin" / "hector-manifest-fuzz"
    if not program.exists():
        pytest.skip("hector-manifest-fuzz not built")
    Layer = hector.load(compiled_library("rgat", "in=6", "d=3", "H=2"))
    ns = {"forward": Layer.manifest["namespace"], "backward": Layer.manifest["backward"],
          "variant": (Layer.manifest.get("variants") or [Layer.manifest["namespace"]])[0]}[which]
    seed = tmp_path / "manifest.json"
    seed.write_text(getattr(torch.ops, ns).manifest())
    r = subprocess.run([str(program), str(seed), "20000", "7"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ": ok" in r.stdout
    parsed, refused = [int(w) for w in r.stdout.replace(",", "").split() if w.isdigit()][1:3]
    assert parsed > 0 and refused > 10000   # both outcomes exercised
