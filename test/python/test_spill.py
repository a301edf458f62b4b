# Tests of activation spilling (hector.spill and the C++ engine behind it): exact gradients,
# deduplication, forwarding, prefetch and its memory bound, thresholds, every injected and real
# fault, in-place detection, and that no file outlives a step, a dropped graph, an exception or an
# interrupt. Nothing here needs hectorc (the compiled-layer test is in test_training.py), so the
# GPU check runs this file as is; the CUDA tests run only where a GPU is present.
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import torch
import torch.utils.checkpoint

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
        grads_of(model, mlp_step(model, torch.float32, ctx=ctx))
    # Each Linear saves its input and (except the first: x needs no gradient) a transposed view
    # of its weight, a parameter's storage; only the input x and the 4 Tanh outputs spill.
    assert ctx.stats["spilled"] == 5


@pytest.mark.parametrize("distance", [0, 1, 2, 4])
def test_prefetch_window_bounds_resident_memory(distance, spill_dir):
    """Backward holds at most the record in use and `distance` records read ahead. Every
    layer's gradient hook waits for the reads in flight before it samples, so the bound is
    checked at its worst (all prefetches done), independently of timing."""
    torch.manual_seed(0)
    width, depth = 256, 16
    layers = [torch.nn.Linear(width, width) for _ in range(depth)]
    x = torch.randn(256, width)
    record = 256 * width * 4
    samples = []
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                      prefetch=distance) as ctx:

        def sample(grad):
            ctx.synchronize()
            samples.append(ctx.stats["resident_bytes"])

        h = x
        for layer in layers:
            h = torch.tanh(layer(h))
            h.register_hook(sample)
        loss = h.square().mean()
        ctx.synchronize()
        assert ctx.stats["resident_bytes"] == 0        # everything is on disk
        loss.backward()
    s = ctx.stats
    assert s["spilled"] == depth + 1                   # x and every tanh output
    assert len(samples) == depth
    # The window is full (prefetch works) but never larger.
    assert max(samples) == (distance + 1) * record
    if distance > 0:
        assert s["demand_reads"] == 0 and s["prefetched"] == depth + 1


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


def test_graph_dropped_without_backward_leaves_no_files(spill_dir):
    model = mlp(torch.float32, depth=8)
    x = torch.randn(256, 256)
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
        y = model(x).sum()
        ctx.synchronize()
        assert len(list(spill_dir.iterdir())) > 0
        del y                                          # the graph is gone: so are the files
        ctx.synchronize()
        assert list(spill_dir.iterdir()) == [] and ctx.stats["resident_bytes"] == 0
        y = model(x).sum()                             # again, without waiting for the writes
        del y
    assert ctx.stats["saved"] > 0
    # One I/O thread with writes still queued when the graph goes: they are abandoned, and the
    # I/O thread that frees the step's last record removes the files.
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                      io_threads=1) as ctx:
        grads_of(model, mlp_step(model, torch.float32))
        y = model(x).sum()
        del y
        ctx.synchronize()
        assert list(spill_dir.iterdir()) == []
        y = model(x).sum()
    del y
    # The graph outlived the block and is gone now. Writes still in flight when it went finish
    # first (the I/O thread owns their buffers); the thread that frees the last record then
    # removes the files. Nothing remains once the I/O is done.
    ctx.synchronize()
    assert ctx.files() == [] and list(spill_dir.iterdir()) == []


def test_partial_backward_then_drop_leaves_no_files(spill_dir):
    # Backward runs only down to an intermediate result, with reads of the records below it
    # prefetched (possibly still queued); then the graph is dropped.
    torch.manual_seed(0)
    layers = [torch.nn.Linear(256, 256) for _ in range(8)]
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                      io_threads=1, prefetch=4) as ctx:
        h = torch.randn(256, 256)
        for i, layer in enumerate(layers):
            h = torch.tanh(layer(h))
            if i == 3:
                middle = h
        loss = h.square().mean()
        ctx.synchronize()
        (g,) = torch.autograd.grad(loss, middle)
        assert ctx.stats["prefetched"] > 0
        del loss, h, middle
        ctx.synchronize()
        assert list(spill_dir.iterdir()) == []
    assert g.shape == (256, 256)


def test_context_can_be_entered_again(spill_dir):
    model = mlp(torch.float32)
    ref = grads_of(model, mlp_step(model, torch.float32))
    ctx = hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False)
    for _ in range(2):
        with ctx:
            assert_same(ref, grads_of(model, mlp_step(model, torch.float32, ctx=ctx)))
            with pytest.raises(RuntimeError, match="already active"):
                with ctx:
                    pass
        assert ctx.stats["spilled"] == 5 and ctx.stats["saved"] == 12   # this entry's counts


def test_late_write_failure_is_reported_at_exit(spill_dir):
    # The step's last write (x and 4 Tanh outputs are spilled; the last output is the last
    # save, since sum() saves nothing) fails after the last save; nothing calls the store
    # afterwards, so the warning comes from the end of the block at the latest.
    model = mlp(torch.float64)
    x = torch.randn(256, 256, dtype=torch.float64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                          faults="enospc:5") as ctx:
            loss = model(x).sum()
            for _ in range(2000):                      # wait without calling into the store
                if ctx.stats["write_failures"]:
                    break
                time.sleep(0.005)
            assert ctx.stats["write_failures"] == 1
            assert not [w for w in caught if "hector.spill" in str(w.message)]
        assert len([w for w in caught if "hector.spill" in str(w.message)]) == 1
        loss.backward()                                # after the block: still exact
    del loss


class _CheckpointedTail(torch.nn.Module):
    """The MLP with all but its first layer under a reentrant checkpoint."""

    def __init__(self, model):
        super().__init__()
        self.head, self.tail = model[:2], model[2:]

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.tail, self.head(x), use_reentrant=True)


def test_saves_during_backward_are_kept(spill_dir):
    """A reentrant checkpoint saves again in backward (its recomputation): such saves belong to
    that backward, start no forward profile and are not spilled, since they are needed at once."""
    model = mlp(torch.float64)
    net = _CheckpointedTail(model)
    x = torch.randn(256, 256, dtype=torch.float64, requires_grad=True)
    net(x).square().mean().backward()
    ref = [p.grad.clone() for p in model.parameters()] + [x.grad.clone()]
    model.zero_grad(set_to_none=True)
    x.grad = None
    with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False) as ctx:
        loss = net(x).square().mean()
        ctx.synchronize()
        before = ctx.stats
        loss.backward()
        ctx.synchronize()
        after = ctx.stats
    assert_same(ref, [p.grad for p in model.parameters()] + [x.grad])
    assert after["saved"] > before["saved"]            # the recomputation saved ...
    assert after["spilled"] == before["spilled"]       # ... and none of it was written


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


@pytest.mark.parametrize("disposition", ["python", "default"])
def test_sigint_inside_the_block_removes_files(disposition, tmp_path):
    """SIGINT with Python's handler raises KeyboardInterrupt, which unwinds through the context;
    with the default disposition the runtime's handler removes the files before the process dies."""
    d = tmp_path / "sig"
    d.mkdir()
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        # Set explicitly: a process started in the background by a shell inherits SIGINT
        # ignored, and Python then installs no KeyboardInterrupt handler of its own.
        signal.signal(signal.SIGINT, signal.SIG_DFL if {disposition == "default"!r}
                      else signal.default_int_handler)
        sys.path.insert(0, {str(REPO / "runtime" / "python")!r})
        import torch, hector
        model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)])
        try:
            with hector.spill(dir={str(d)!r}, threshold_bytes=4096, keep_last=0,
                              adaptive=False) as ctx:
                y = model(torch.randn(256, 256)).sum()
                ctx.synchronize()
                print(len(os.listdir({str(d)!r})), flush=True)
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(30)
        except KeyboardInterrupt:
            print("interrupted", os.listdir({str(d)!r}), flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = out.stdout.split("\n")
    assert int(lines[0]) > 0, out.stderr               # there were files to remove
    if disposition == "python":
        assert out.returncode == 0 and lines[1] == "interrupted []", out.stderr
    else:
        assert out.returncode == -signal.SIGINT, out.stderr
    assert list(d.iterdir()) == []


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


def _spill_file_fds(paths):
    """The descriptors of this process that refer to the given files."""
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") in paths:
                fds.append(int(fd))
        except OSError:
            pass
    return fds


@pytest.mark.parametrize("damage,message", [
    ("directory_fd", "read failed: Is a directory"),
    ("truncated_file", "truncated"),
    ("flipped_byte", "checksum mismatch"),
])
def test_real_file_damage_names_the_tensor(damage, message, spill_dir):
    """Damage done to the files themselves, outside the engine: a descriptor that now refers to
    a directory (every pread really fails), a file cut short, a byte changed on disk."""
    model = mlp(torch.float64)
    x = torch.randn(256, 256, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=message) as info:
        with hector.spill(dir=spill_dir, threshold_bytes=4096, keep_last=0, adaptive=False,
                          io_threads=1, model=model) as ctx:
            loss = model(x).square().mean()
            ctx.synchronize()
            (path,) = ctx.files()
            if damage == "directory_fd":
                (fd,) = _spill_file_fds({path})
                dir_fd = os.open(spill_dir, os.O_RDONLY | os.O_DIRECTORY)
                os.dup2(dir_fd, fd)                    # the engine closes `fd` when it is done
                os.close(dir_fd)
            elif damage == "truncated_file":
                os.truncate(path, 4096 + 100)          # inside the first record's payload
            else:
                with open(path, "r+b") as f:           # the first record's payload
                    f.seek(4096 + 1000)
                    byte = f.read(1)
                    f.seek(4096 + 1000)
                    f.write(bytes([byte[0] ^ 0xFF]))
                    f.flush()
                    os.fsync(f.fileno())
            loss.backward()
    text = str(info.value)
    assert "cannot restore saved tensor '" in text and "float64[256, 256]" in text


def test_no_cufile_log_in_working_directory(tmp_path):
    """libcufile writes ./cufile.log unless told otherwise; the store points it at the temp dir
    before cuFile loads. cufile_status() loads cuFile even without a GPU (where the driver
    fails to open, which is logged)."""
    work, tmp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    code = textwrap.dedent(f"""
        import ctypes, json, os, sys
        sys.path.insert(0, {str(REPO / "runtime" / "python")!r})
        import torch, hector
        model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh())
        with hector.spill(dir={str(tmp_path / "spill")!r}, threshold_bytes=0) as ctx:
            model(torch.randn(256, 256)).sum().backward()
            status = ctx.cufile_status()
        getenv = ctypes.CDLL(None).getenv
        getenv.restype = ctypes.c_char_p
        log = getenv(b"CUFILE_LOGFILE_PATH")
        print(json.dumps(dict(status=status, log=log and log.decode(), pid=os.getpid())))
    """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("CUFILE_LOGFILE_PATH", "CUFILE_ENV_PATH_JSON")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=work, env=dict(env, TMPDIR=str(tmp)), timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert list(work.iterdir()) == [], "a file appeared in the working directory"
    assert list((tmp_path / "spill").iterdir()) == []
    if res["status"].startswith("not available"):
        pytest.skip("runtime built without CUDA: " + res["status"])
    assert res["log"] == str(tmp / f"hector-cufile-{res['pid']}.log")
    # Kept only if cuFile had something to say (the driver failing to open, without a GPU).
    assert [p.name for p in tmp.iterdir()] in ([], [f"hector-cufile-{res['pid']}.log"])


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

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@needs_cuda
@pytest.mark.parametrize("use_cufile,chunk_bytes", [
    (False, 4 << 20),
    (False, 8192),        # many chunks: the double-buffered bounce path in both directions
    (True, 4 << 20),
])
def test_cuda_transformer_bit_identical(use_cufile, chunk_bytes, spill_dir):
    model = tx.build_model(device="cuda", **SMALL)
    batch = tx.make_batch(4, SMALL["seq"], SMALL["vocab"], device="cuda")
    ref = grads_of(model, lambda: model(*batch).backward())
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False,
                      use_cufile=use_cufile, chunk_bytes=chunk_bytes) as ctx:
        for _ in range(2):

            def step():
                loss = model(*batch)
                ctx.synchronize()            # every write done: the loads really read
                loss.backward()

            assert_same(ref, grads_of(model, step))
        mode = ctx.io_mode
    s = ctx.stats
    assert s["spilled"] > 20 and s["bytes_read"] > 0 and s["write_failures"] == 0
    if use_cufile:
        # cuFile takes the files where the machine supports it, else the bounce buffer does.
        assert ("+cufile" in mode) == (ctx.cufile_status() == "loaded"), ctx.cufile_status()
    else:
        assert "+cufile" not in mode


@needs_cuda
@pytest.mark.parametrize("use_cufile", [False, True])
def test_cuda_corruption_is_detected(use_cufile, spill_dir):
    model = tx.build_model(device="cuda", **SMALL)
    batch = tx.make_batch(4, SMALL["seq"], SMALL["vocab"], device="cuda")
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, adaptive=False,
                          io_threads=1, prefetch=0, use_cufile=use_cufile,
                          faults="corrupt:3") as ctx:
            loss = model(*batch)
            ctx.synchronize()
            loss.backward()


@needs_cuda
def test_cuda_cufile_status(spill_dir):
    """Reports (as a skip reason where it is not) whether GPUDirect Storage is used here."""
    with hector.spill(dir=spill_dir, threshold_bytes=0, keep_last=0, use_cufile=True) as ctx:
        x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
        y = x.exp()
        ctx.synchronize()
        y.sum().backward()
        status, mode = ctx.cufile_status(), ctx.io_mode
    assert torch.equal(x.grad, x.detach().exp())
    if "+cufile" not in mode:
        pytest.skip(f"cuFile not used on this machine ({status}); CUDA tensors use the "
                    "pinned bounce buffer")
    assert status == "loaded"
