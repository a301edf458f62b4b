# Tests of activation spilling (hector.spill and the C++ engine behind it): exact gradients,
# deduplication, forwarding, prefetch, thresholds, every injected and real fault, in-place
# detection, and that no file outlives a step, an exception or an interrupt.
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import hector

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "examples"))
import transformer_spill as tx  # noqa: E402

SMALL = dict(vocab=128, dim=64, heads=4, layers=2, seq=32)


@pytest.fixture
def spill_dir(tmp_path):
    d = tmp_path / "spill"
    d.mkdir()
    yield d
    assert list(d.iterdir()) == [], "spill files left behind"


def grads_of(model, step):
    model.zero_grad(set_to_none=True)
    step()
    return [p.grad.clone() for p in model.parameters()]


def assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def transformer_grads(dtype, ctx=None, steps=1):
    model = tx.build_model(dtype=dtype, **SMALL)
    batch = tx.make_batch(4, SMALL["seq"], SMALL["vocab"])

    def step():
        loss = model(*batch)
        if ctx is not None:
            ctx.synchronize()   # every write done: what is spilled does not depend on timing
        loss.backward()

    if ctx is None:
        return grads_of(model, step)
    with ctx:
        for _ in range(steps):            # the same weights: every step's grads must match
            got = grads_of(model, step)
    return got


def mlp(dtype, width=256, depth=4):
    torch.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers).to(dtype)


def mlp_step(model, dtype, batch=256, ctx=None):
    """One forward+backward; with `ctx`, waits for the writes before backward so that what
    is spilled (rather than forwarded from memory) does not depend on timing."""
    x = torch.randn(batch, model[0].in_features, generator=torch.Generator().manual_seed(3)).to(dtype)

    def step():
        loss = model(x).square().mean()
        if ctx is not None:
            ctx.synchronize()
        loss.backward()

    return step


# ---------------------------------------------------------------------------------------------
# Exactness
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_transformer_gradients_bit_identical(dtype, spill_dir):
    ref = transformer_grads(dtype)
    ctx = hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False)
    got = transformer_grads(dtype, ctx, steps=2)
    assert_same(ref, got)
    s = ctx.stats
    assert s["spilled"] > 20 and s["bytes_read"] > 0 and s["write_failures"] == 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["adaptive", "buffered", "pwrite"])
def test_mlp_gradients_bit_identical(dtype, mode, spill_dir):
    model = mlp(dtype)
    ref = grads_of(model, mlp_step(model, dtype))
    opts = dict(adaptive=mode == "adaptive", direct_io=mode != "buffered",
                use_uring=mode != "pwrite", threshold_bytes=4096, keep_last=0)
    with hector.spill(dir=spill_dir, **opts) as ctx:
        for _ in range(3):
            got = grads_of(model, mlp_step(model, dtype))
            assert_same(ref, got)
        mode_str = ctx.io_mode
    assert ctx.stats["spilled"] > 0
    assert mode_str.startswith("buffered" if mode == "buffered" else "direct")
    if mode == "pwrite":
        assert "io_uring" not in mode_str


def test_backward_after_block_and_stats(spill_dir):
    # The graph may outlive the block: backward still works, files vanish afterwards.
    model = mlp(torch.float32)
    ref = grads_of(model, mlp_step(model, torch.float32))
    model.zero_grad(set_to_none=True)
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(3))
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
        loss = model(x).square().mean()
    ctx.synchronize()
    assert ctx.stats["resident_bytes"] < ctx.stats["peak_resident_bytes"]
    loss.backward()
    assert_same(ref, [p.grad for p in model.parameters()])
    assert ctx.stats["loaded"] == ctx.stats["saved"]


# ---------------------------------------------------------------------------------------------
# Deduplication, forwarding, prefetch, thresholds
# ---------------------------------------------------------------------------------------------

def test_dedup_same_tensor_and_views(spill_dir):
    w = torch.randn(512, 512, dtype=torch.float64, requires_grad=True)
    x = torch.randn(512, 512, dtype=torch.float64)

    def f():
        y = x @ w                      # y: one 2 MiB storage
        a = y.sin()                    # saves y
        b = y.cos()                    # saves y again
        c = y.t() * y                  # saves a transposed view of y and y
        d = y[100:300].tanh()          # saves nothing of y (tanh saves its output)
        e = y[7] * y[9]                # saves two row views of y
        return (a + b).sum() + c.sum() + d.sum() + e.sum()

    f().backward()
    ref = w.grad.clone()
    w.grad = None
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False) as ctx:
        loss = f()
        ctx.synchronize()  # every write done: none is skipped by forwarding a resident tensor
        loss.backward()
    assert torch.equal(ref, w.grad)
    s = ctx.stats
    assert s["deduplicated"] == 5      # y again by cos, by the product (twice), the two rows
    nbytes = 512 * 512 * 8
    # Written: x (saved by mm), y once, tanh's result.
    assert s["bytes_written"] == 2 * nbytes + 200 * 512 * 8


def test_dedup_not_across_inplace_change(spill_dir):
    x = torch.randn(256, 256, dtype=torch.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False) as ctx:
            y = x * 2
            a = y.sin()                # saves y at version 0
            ctx.synchronize()
            y.detach().add_(1)         # bumps y's version (shared counter)
            b = y.cos()                # saves y's storage again, at version 1: a new record
            assert ctx.stats["deduplicated"] == 0 and ctx.stats["saved"] == 2
            (a.sum() + b.sum()).backward()


def test_forwarding_keeps_the_last_and_skips_reads(spill_dir):
    model = mlp(torch.float32, depth=6)
    ref = grads_of(model, mlp_step(model, torch.float32))
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=3, adaptive=False,
                      prefetch=0) as ctx:
        got = grads_of(model, mlp_step(model, torch.float32))
    assert_same(ref, got)
    s = ctx.stats
    assert s["forwarded"] >= 3
    assert s["demand_reads"] + s["prefetch_hits"] + s["forwarded"] >= s["spilled"]
    # Whatever was forwarded was never read back.
    assert s["bytes_read"] <= s["bytes_written"]
    assert s["demand_reads"] <= s["spilled"]


@pytest.mark.parametrize("distance", [0, 1, 4])
def test_prefetch_distance(distance, spill_dir):
    model = mlp(torch.float32, depth=8)
    ref = grads_of(model, mlp_step(model, torch.float32))
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                      prefetch=distance) as ctx:
        got = grads_of(model, mlp_step(model, torch.float32, ctx=ctx))
    assert_same(ref, got)
    s = ctx.stats
    if distance == 0:
        assert s["prefetched"] == 0 and s["prefetch_hits"] == 0
        assert s["demand_reads"] > 0
    else:
        assert s["prefetched"] > 0 and s["prefetch_hits"] > 0
        assert s["demand_reads"] <= 1


def test_threshold_and_scalars_stay(spill_dir):
    small = torch.randn(64, 64, requires_grad=True)           # 16 KiB
    big = torch.randn(512, 512, requires_grad=True)           # 1 MiB
    with hector.spill(dir=spill_dir, threshold_bytes=64 << 10, keep_last=0, adaptive=False) as ctx:
        loss = (small.exp().sum() + big.exp().sum())
        loss2 = loss.exp()                                     # saves the 0-dim loss result
        ctx.synchronize()
        loss2.backward()
    s = ctx.stats
    assert s["spilled"] == 1 and s["bytes_written"] == 512 * 512 * 4
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False) as ctx:
        loss = big.sum().exp()                                 # a 0-dim saved tensor
        loss.backward()
    assert ctx.stats["spilled"] == 0 and ctx.stats["kept"] == 1
    with hector.spill(dir=spill_dir, threshold_bytes=1 << 30) as ctx:
        big.exp().sum().backward()
        assert ctx.files() == []
    assert ctx.stats["spilled"] == 0


def test_parameters_are_not_spilled(spill_dir):
    model = mlp(torch.float32)
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False) as ctx:
        grads_of(model, mlp_step(model, torch.float32))
    # Each Linear saves its weight (a parameter) and its input; only inputs/activations spill.
    assert ctx.stats["spilled"] <= ctx.stats["saved"] - 4


# ---------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fault,message", [
    ("corrupt", "checksum mismatch"),
    ("truncate", "truncated|damaged|checksum mismatch"),
    ("read_error", "read failed: Input/output error"),
])
def test_unrecoverable_faults_name_the_tensor(fault, message, spill_dir):
    model = mlp(torch.float64)
    with pytest.raises(RuntimeError, match=message) as info:
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                          io_threads=1, prefetch=0, model=model, faults=f"{fault}:2") as ctx:
            grads_of(model, mlp_step(model, torch.float64, ctx=ctx))
    text = str(info.value)
    assert "cannot restore saved tensor '" in text and "float64[256, 256]" in text
    assert "spill file" in text


@pytest.mark.parametrize("fault", ["enospc", "short_write"])
def test_write_failures_fall_back_to_memory_with_one_warning(fault, spill_dir):
    model = mlp(torch.float64)
    ref = grads_of(model, mlp_step(model, torch.float64))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
            ctx.inject_fault(fault, 2)
            ctx.inject_fault(fault, 3)
            for _ in range(2):
                assert_same(ref, grads_of(model, mlp_step(model, torch.float64, ctx=ctx)))
    spill_warnings = [w for w in caught if "hector.spill" in str(w.message)]
    assert len(spill_warnings) == 1
    assert "No space left on device" in str(spill_warnings[0].message)
    assert ctx.stats["write_failures"] >= 1
    assert ctx.stats["spilled"] > 0        # the second step spilled again


_CHILD = textwrap.dedent("""
    import json, os, resource, signal, sys, warnings
    sys.path.insert(0, {runtime!r})
    import torch, hector
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)]).double()
    x = torch.randn(256, 256, dtype=torch.float64)
    def grads():
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        return [p.grad.clone() for p in model.parameters()]
    ref = grads()
    {limit}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hector.spill(dir={dir!r}, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
            got = grads()
    print(json.dumps(dict(
        equal=all(torch.equal(a, b) for a, b in zip(ref, got)),
        warnings=[str(w.message) for w in caught if "hector.spill" in str(w.message)],
        stats=ctx.stats)))
""")


def run_child(code, **env):
    full_env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=full_env, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_full_disk_file_size_limit(spill_dir):
    # RLIMIT_FSIZE with SIGXFSZ ignored: writes past 1 MiB fail with EFBIG, like a full disk.
    limit = ("signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
             "resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))")
    res = run_child(_CHILD.format(runtime=str(REPO / "runtime" / "python"), dir=str(spill_dir),
                                  limit=limit))
    assert res["equal"]
    assert len(res["warnings"]) == 1 and "File too large" in res["warnings"][0]
    assert res["stats"]["write_failures"] >= 1


def test_full_disk_small_tmpfs(tmp_path):
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        res = run_child(_CHILD.format(runtime=str(REPO / "runtime" / "python"), dir=str(mnt),
                                      limit=""))
        assert res["equal"]
        assert len(res["warnings"]) == 1 and "No space left on device" in res["warnings"][0]
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


# ---------------------------------------------------------------------------------------------
# In-place modification, exceptions, interrupts
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("threshold", [0, 1 << 30])   # spilled / kept in memory
def test_inplace_modification_detected(threshold, spill_dir):
    a = torch.randn(256, 256, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*"
                                            r"is at version 1; expected version 0"):
        with hector.spill(dir=spill_dir, threshold_bytes=threshold, keep_last=0, adaptive=False):
            b = a.sigmoid()            # saves its result b
            b.mul_(2)                  # ...which is then changed in place
            b.sum().backward()


def test_exception_in_forward_leaves_no_files(spill_dir):
    model = mlp(torch.float32)
    x = torch.randn(256, 256)
    with pytest.raises(ValueError):
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
            y = model(x)
            ctx.synchronize()
            assert len(list(spill_dir.iterdir())) > 0
            raise ValueError("boom")
    del y


class _FailingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise ArithmeticError("backward failed")


def test_exception_in_backward_leaves_no_files(spill_dir):
    model = mlp(torch.float32)
    x = torch.randn(256, 256)
    with pytest.raises(ArithmeticError):
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False):
            _FailingBackward.apply(model(x)).sum().backward()


def test_sigterm_removes_files(tmp_path):
    d = tmp_path / "sig"
    d.mkdir()
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(REPO / "runtime" / "python")!r})
        import torch, hector
        ctx = hector.spill(dir={str(d)!r}, threshold_bytes=0, keep_last=0, adaptive=False)
        ctx.__enter__()
        x = torch.randn(512, 512, requires_grad=True)
        y = x.exp().sin()
        ctx.synchronize()
        print("ready", flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert len(list(d.iterdir())) > 0
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
    finally:
        proc.kill()
    assert list(d.iterdir()) == []


def test_anonymous_files_are_invisible(spill_dir):
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False,
                      anonymous_files=True) as ctx:
        x = torch.randn(512, 512, requires_grad=True)
        y = x.exp()
        ctx.synchronize()
        assert ctx.stats["spilled"] == 1 and list(spill_dir.iterdir()) == []
        y.sum().backward()
    assert torch.equal(x.grad, x.detach().exp())


def test_bad_options_are_clear(tmp_path):
    with pytest.raises(RuntimeError, match="io_threads"):
        with hector.spill(dir=tmp_path, io_threads=0):
            pass
    with pytest.raises(RuntimeError, match="unknown fault 'bogus'"):
        with hector.spill(dir=tmp_path, faults="bogus:1"):
            pass
    f = tmp_path / "file"
    f.write_text("")
    with pytest.raises(RuntimeError, match="not a directory|cannot create directory"):
        with hector.spill(dir=f):
            pass


# ---------------------------------------------------------------------------------------------
# CUDA (skipped without a GPU)
# ---------------------------------------------------------------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("use_cufile", [False, True])
def test_cuda_transformer_bit_identical(use_cufile, spill_dir):
    model = tx.build_model(device="cuda", **SMALL)
    batch = tx.make_batch(4, SMALL["seq"], SMALL["vocab"], device="cuda")
    step = lambda: model(*batch).backward()  # noqa: E731
    ref = grads_of(model, step)
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False,
                      use_cufile=use_cufile) as ctx:
        got = grads_of(model, step)
    assert_same(ref, got)
    assert ctx.stats["spilled"] > 0
