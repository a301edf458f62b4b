# hector.spill under compiled layers with inputs reused across steps and shared between layers
# (test/python/spill_stress.py): one saved storage referenced by many saved records, some of
# them released while their writes run. Every threshold and prefetch setting, a few repetitions
# each in this process; the oracle is the same training without a store (bit-identical weights).
# tools/stress_spill.py runs hundreds of repetitions, each in its own process. The C++ engine
# test (test/runtime/spill_stress.cpp) drives the store directly in the same pattern.
import subprocess

import pytest
import torch

import spill_stress
from conftest import BUILD, _repo


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return spill_stress.compile_libraries(str(BUILD / "bin" / "hectorc"), _repo,
                                          tmp_path_factory.mktemp("stress"))


@pytest.fixture(scope="module")
def expected(libs):
    return {dtype: spill_stress.train(libs, None, dtype) for dtype in (torch.float32,)}


def test_reported_configuration_repeated(libs, expected, tmp_path):
    """The report's case: float32, threshold_bytes=0, prefetch=0; several trainings in one
    process (each of STEPS steps)."""
    spill_stress.check(libs, spill_stress.FAILING, spill_dir=tmp_path, repetitions=4,
                       expected=expected[torch.float32])


@pytest.mark.parametrize("setting", spill_stress.SETTINGS,
                         ids=lambda s: "t{threshold_bytes}-p{prefetch}-k{keep_last}".format(**s))
def test_every_setting(libs, expected, tmp_path, setting):
    spill_stress.check(libs, setting, spill_dir=tmp_path, expected=expected[torch.float32])


def test_float64_and_the_plain_variant(libs, tmp_path):
    spill_stress.check(libs, spill_stress.FAILING, torch.float64, variant="none",
                       spill_dir=tmp_path)


def test_engine_stress_program():
    """The C++ driver of the engine: every setting, drops without backward, releases from
    another thread, each load compared with the bytes saved."""
    program = BUILD / "bin" / "hector-spill-stress"
    if not program.exists():
        pytest.skip("hector-spill-stress not built")
    r = subprocess.run([str(program), "2", "6"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout


def test_write_failure_warning_reaches_python_under_compiled_layers(libs, expected, tmp_path):
    """The documented UserWarning of a failed spill write reaches Python's warnings machinery
    (not only stderr) when compiled layers did the saving, every time: the engine holds it back
    inside the layers' operator calls and emits it at the next call Python makes."""
    import warnings

    import hector

    failed = 0
    for attempt in range(8):
        stats = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = spill_stress.train(libs, dict(threshold_bytes=0, prefetch=0,
                                                faults=f"enospc:{1 + attempt}"),
                                     spill_dir=tmp_path, steps=2, stats=stats)
        spill_warnings = [w for w in caught if "hector.spill" in str(w.message)]
        for a, b in zip(got, expected[torch.float32]):   # nothing lost
            assert all(torch.equal(p, q) for p, q in zip(a, b))
        # The fault hits the N-th write: once N is past the run's writes, nothing fails and
        # nothing may be reported.
        if stats["write_failures"] == 0:
            assert spill_warnings == [], (attempt, stats)
            continue
        failed += 1
        assert len(spill_warnings) >= 1, (attempt, stats)
        assert all(issubclass(w.category, UserWarning) for w in spill_warnings)
        assert "No space left on device" in str(spill_warnings[0].message)
    assert failed >= 4, failed
