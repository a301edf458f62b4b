"""The main job's model (tools/main-job.sh: examples/train_entities.py, featureless RGCN on AIFB):
hector.nn's layers train exactly as torch_geometric.nn.RGCNConv started from the same weights. Both
implementations run the script for a few epochs in float64; the loss of every epoch and the
final accuracies must agree (PyG is the oracle; the script is the one users run)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data" / "aifb"


def _run(impl: str) -> tuple[list[float], str]:
    cmd = [sys.executable, str(ROOT / "examples" / "train_entities.py"), "--model", "rgcn",
           "--impl", impl, "--input", "featureless", "--data", str(DATA), "--seeds", "1",
           "--epochs", "4", "--dtype", "float64"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    losses = [float(m) for m in re.findall(r"loss[ =:]+([0-9.]+)", r.stdout)]
    final = re.search(r"seed 0: test accuracy ([0-9.]+%), train accuracy ([0-9.]+%)", r.stdout)
    assert len(losses) == 4 and final, r.stdout
    return losses, final.group(0)


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data not present")
def test_featureless_rgcn_trains_as_pyg(tmp_path, monkeypatch):
    pytest.importorskip("torch_geometric")
    monkeypatch.setenv("HECTOR_CACHE_DIR", os.environ.get("HECTOR_CACHE_DIR") or str(tmp_path))
    ours, our_final = _run("hector")
    theirs, their_final = _run("pyg")
    assert ours == pytest.approx(theirs, rel=1e-9), (ours, theirs)
    assert ours[-1] < ours[0]
    assert our_final.split(",")[0] == their_final.split(",")[0]
