"""hector.PinnedTable: gathers equal index_select bit for bit; validation; pinning policy;
thread safety of close() and of the registration's end."""
import gc
import threading
import time

import warnings

import pytest
import torch

import hector
from hector.pinned import cpu_gather

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
NO_CUDA = pytest.mark.skipif(torch.cuda.is_available(), reason="behaviour without a CUDA device")

ROW_SIZES = [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256,
             257, 1023, 1024, 1025, 4097]
DTYPES = [torch.float32, torch.bfloat16, torch.float64]


def bits(t):
    """The raw bytes of a tensor, so that comparisons are bit for bit (NaN payloads included)."""
    return t.contiguous().view(torch.uint8)


def assert_same_bits(got, expected):
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert torch.equal(bits(got.cpu()), bits(expected.cpu()))


def table_data(rows, width, dtype, offset=0, seed=0):
    """A [rows, width] table; with offset > 0 its data starts `offset` elements into its storage
    (a misaligned base pointer)."""
    g = torch.Generator().manual_seed(seed)
    flat = torch.randn(rows * width + offset, generator=g, dtype=torch.float64).to(dtype)
    return flat[offset:].view(rows, width)


def awkward_index(rows, n=300, seed=1, dtype=torch.int64):
    """Unsorted indices with duplicates, the first and the last row."""
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, rows, (n,), generator=g)
    idx[:4] = torch.tensor([rows - 1, 0, rows - 1, 0])
    return idx.to(dtype)


# --- CPU gather ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", ROW_SIZES)
def test_cpu_gather_bit_exact(dtype, width):
    features = table_data(97, width, dtype)
    table = hector.PinnedTable(features)
    idx = awkward_index(97)
    assert_same_bits(table.gather(idx), features.index_select(0, idx))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1, 3])
@pytest.mark.parametrize("width", [1, 3, 33, 1025])
def test_cpu_gather_misaligned_base(dtype, offset, width):
    features = table_data(50, width, dtype, offset=offset)
    assert features.storage_offset() == offset
    table = hector.PinnedTable(features)
    idx = awkward_index(50, n=120, dtype=torch.int32)
    assert_same_bits(table.gather(idx), features.index_select(0, idx))


def test_cpu_gather_empty_index_and_empty_table():
    features = table_data(10, 5, torch.float32)
    table = hector.PinnedTable(features)
    for dtype in (torch.int64, torch.int32):
        out = table.gather(torch.empty(0, dtype=dtype))
        assert out.shape == (0, 5) and out.dtype == torch.float32
    empty = hector.PinnedTable(torch.empty(0, 4, dtype=torch.float64))
    assert empty.gather(torch.empty(0, dtype=torch.int64)).shape == (0, 4)
    with pytest.raises(ValueError, match=r"index\[0\] = 0 is out of range \[0, 0\)"):
        empty.gather(torch.zeros(1, dtype=torch.int64))
    zero_width = hector.PinnedTable(torch.empty(6, 0))
    assert zero_width.gather(torch.tensor([5, 1])).shape == (2, 0)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
def test_empty_table_checks_bounds_even_when_told_not_to(device):
    # A table without rows has nothing any index could read (and, zero-copy, no registration):
    # check_bounds=False must not turn a gather of n > 0 rows into a wild read.
    empty = hector.PinnedTable(torch.empty(0, 4), check_bounds=False)
    with pytest.raises(ValueError, match=r"index\[0\] = 0 is out of range \[0, 0\)"):
        empty.gather(torch.zeros(3, dtype=torch.int64, device=device))
    assert empty.gather(torch.empty(0, dtype=torch.int32, device=device)).shape == (0, 4)


def test_cpu_gather_other_shapes_and_dtypes():
    one_d = torch.arange(10, dtype=torch.int16)
    assert torch.equal(hector.PinnedTable(one_d).gather(torch.tensor([9, 2, 2])),
                       torch.tensor([9, 2, 2], dtype=torch.int16))
    three_d = torch.randn(8, 3, 5)
    idx = torch.tensor([7, 0, 3, 3])
    assert_same_bits(hector.PinnedTable(three_d).gather(idx), three_d[idx])
    booleans = torch.rand(9, 7) > 0.5
    assert torch.equal(hector.PinnedTable(booleans).gather(idx), booleans[idx])


def test_cpu_gather_large_multithreaded():
    features = table_data(20000, 24, torch.float32)
    idx = torch.randint(0, 20000, (100000,))
    assert_same_bits(hector.PinnedTable(features).gather(idx), features[idx])
    assert_same_bits(cpu_gather(features, idx), features[idx])


def test_table_shares_memory_with_features():
    features = table_data(10, 4, torch.float32)
    table = hector.PinnedTable(features)
    assert table.features.data_ptr() == features.data_ptr()
    features[3] = 42.0
    assert (table.gather(torch.tensor([3])) == 42.0).all()
    assert len(table) == 10 and table.num_rows == 10 and table.row_bytes == 16


def test_non_contiguous_features_fall_back():
    base = table_data(12, 20, torch.float64)
    for view in (base.t(), base[:, ::2], base[::3]):
        table = hector.PinnedTable(view, fallback="cpu_gather")
        assert table.mode == "cpu_gather"
        assert "not contiguous" in table.reason
        idx = awkward_index(view.shape[0], n=40)
        assert_same_bits(table.gather(idx), view.index_select(0, idx))


def test_shared_memory_features_fall_back():
    features = table_data(10, 3, torch.float32).clone().share_memory_()
    table = hector.PinnedTable(features)
    assert table.mode == "cpu_gather" and "shared" in table.reason
    idx = torch.tensor([4, 4, 0])
    assert_same_bits(table.gather(idx), features[idx])


def test_cpu_gather_mode_by_request():
    features = table_data(30, 6, torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # asked for: no "not pinned" warning
        table = hector.PinnedTable(features, mode="cpu_gather", fallback="error")
    assert table.mode == "cpu_gather" and "asked for" in table.reason
    assert not features.is_pinned()
    idx = awkward_index(30, n=50)
    assert_same_bits(table.gather(idx), features[idx])


def test_file_system_sharing_strategy_is_detected():
    # libshm's file_system strategy is invisible to at::MapAllocator; the runtime must see the
    # MAP_SHARED mapping itself (the Python wrapper's is_shared() is bypassed here on purpose).
    import torch.multiprocessing as mp
    previous = mp.get_sharing_strategy()
    mp.set_sharing_strategy("file_system")
    try:
        features = table_data(10, 3, torch.float32).clone().share_memory_()
    finally:
        mp.set_sharing_strategy(previous)
    hector.load_runtime()
    with pytest.raises(ValueError, match="shared or file-mapped memory"):
        torch.classes.hector.PinnedTable(features, "error", 0, True, True, False, "zero_copy")
    raw = torch.classes.hector.PinnedTable(features, "cpu_gather", 0, True, True, False,
                                           "zero_copy")
    assert raw.mode() == "cpu_gather" and "shared" in raw.reason()


def zero_copy_launch(**kw):
    try:
        return hector.load_runtime()._zero_copy_launch(**kw)
    except RuntimeError as error:
        if "built without CUDA" in str(error):
            pytest.skip("the runtime was built without CUDA")
        raise


@pytest.mark.parametrize("row_bytes", [1, 4, 100, 128, 129, 4096, 16388])
@pytest.mark.parametrize("max_threads", [0, 1, 7, 31, 32, 100, 256, 511, 512, 513, 10240])
def test_zero_copy_launch_respects_the_thread_cap(row_bytes, max_threads):
    # Host arithmetic only: runs wherever the runtime was built with CUDA, GPU or not.
    for n in (1, 5, 1000, 10**6):
        vector, group, aligned, blocks, block = zero_copy_launch(
            table_address=4096, out_address=8192, row_bytes=row_bytes, n=n,
            max_threads=max_threads)
        assert vector in (1, 2, 4, 8, 16) and row_bytes % vector == 0
        assert group in (1, 2, 4, 8, 16, 32) and block % group == 0 and 0 < block <= 512
        assert aligned == (row_bytes > 128)
        assert blocks >= 1
        if max_threads:
            assert blocks * block <= max_threads
        else:
            assert blocks * block >= n * group   # uncapped: a thread group for every row


def test_zero_copy_launch_vector_width_follows_alignment():
    def vector(table, out, row_bytes):
        return zero_copy_launch(table_address=table, out_address=out, row_bytes=row_bytes, n=10,
                                max_threads=0)[0]
    assert vector(4096, 8192, 256) == 16
    assert vector(4096 + 4, 8192, 256) == 4      # a view with a storage offset
    assert vector(4096, 8192, 254) == 2
    assert vector(4096 + 1, 8192, 256) == 1      # uint8 table at an odd offset


def test_close_while_other_threads_gather():
    # close() on one thread while others gather: every gather either completes correctly or
    # raises "released (closed)"; nothing reads freed or unregistered memory.
    device = "cuda" if torch.cuda.is_available() else "cpu"
    features = table_data(5000, 33, torch.float32)
    idx = awkward_index(5000, n=4000).to(device)
    expected = features[idx.cpu()]
    for _ in range(5):
        table = hector.PinnedTable(features)
        errors, done = [], []

        def hammer():
            try:
                while True:
                    out = table.gather(idx)
                    if not torch.equal(out.cpu(), expected):
                        errors.append("wrong rows")
                    done.append(1)
            except ValueError as error:
                if "closed" not in str(error):
                    errors.append(str(error))

        threads = [threading.Thread(target=hammer) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.02)
        table.close()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads) and not errors
    if device == "cuda":
        torch.cuda.synchronize()
        gc.collect()
        assert not features.is_pinned()


def test_close_and_context_manager():
    with hector.PinnedTable(torch.randn(4, 2)) as table:
        table.gather(torch.tensor([1]))
    assert table.closed and repr(table) == "hector.PinnedTable(closed)"
    with pytest.raises(ValueError, match="closed"):
        table.gather(torch.tensor([1]))
    table.close()  # closing twice is harmless


def test_repr():
    text = repr(hector.PinnedTable(torch.zeros(5, 2, 3, dtype=torch.bfloat16)))
    assert text.startswith("hector.PinnedTable(rows=5, row_shape=(2, 3), dtype=torch.bfloat16")


# --- validation -------------------------------------------------------------------------------

@pytest.mark.parametrize("index, exc, message", [
    (torch.tensor([1.0]), TypeError,
     "hector.PinnedTable: index must be torch.int64 or torch.int32, got torch.float32"),
    (torch.tensor([1], dtype=torch.int16), TypeError,
     "index must be torch.int64 or torch.int32, got torch.int16"),
    ([1, 2], TypeError, "hector.PinnedTable: index must be a torch.Tensor, got list"),
    (torch.tensor([[1]]), ValueError, "hector.PinnedTable: index must be 1-D, got shape [1, 1]"),
    (torch.tensor(1), ValueError, "index must be 1-D, got shape []"),
    (torch.tensor([0, 3, 10, 11]), ValueError,
     "hector.PinnedTable: index[2] = 10 is out of range [0, 10) (the table has 10 rows)"),
    (torch.tensor([0, -1], dtype=torch.int32), ValueError, "index[1] = -1 is out of range [0, 10)"),
    (torch.empty(2, dtype=torch.int64, device="meta"), ValueError,
     "index must be on the CPU or a CUDA device, got meta"),
])
def test_index_validation(index, exc, message):
    table = hector.PinnedTable(torch.randn(10, 3))
    with pytest.raises(exc) as info:
        table.gather(index)
    assert message in str(info.value)


@pytest.mark.parametrize("features, kwargs, exc, message", [
    ([1.0], {}, TypeError, "hector.PinnedTable: features must be a torch.Tensor, got list"),
    (torch.tensor(1.0), {}, ValueError, "features must have at least one dimension"),
    (torch.randn(3, 2), dict(fallback="copy"), ValueError,
     "fallback must be one of ('cpu_gather', 'error'), got 'copy'"),
    (torch.randn(3, 2), dict(max_threads=-1), ValueError, "max_threads must be a non-negative int"),
    (torch.randn(3, 2), dict(mode="pinned"), ValueError,
     "mode must be one of ('zero_copy', 'cpu_gather'), got 'pinned'"),
    (torch.randn(3, 2).t(), dict(fallback="error"), ValueError,
     "cannot pin the table in place: features are not contiguous"),
    (torch.randn(3, 2).share_memory_(), dict(fallback="error"), ValueError,
     "features live in shared or file-mapped memory"),
    (torch.empty(3, 2, device="meta"), {}, TypeError,
     "features must be a CPU tensor, got one on meta"),
])
def test_construction_errors(features, kwargs, exc, message):
    with pytest.raises(exc) as info:
        hector.PinnedTable(features, **kwargs)
    assert message in str(info.value)


@NO_CUDA
def test_without_cuda():
    table = hector.PinnedTable(torch.randn(3, 2))
    assert table.mode == "cpu_gather"
    assert "CUDA" in table.reason
    with pytest.raises(RuntimeError, match="cannot pin the table in place: .*CUDA"):
        hector.PinnedTable(torch.randn(3, 2), fallback="error")


def test_cpu_gather_op_validation():
    with pytest.raises(ValueError, match=r"hector.cpu_gather: index\[0\] = 5 is out of range"):
        cpu_gather(torch.randn(5, 2), torch.tensor([5]))


# --- CUDA: zero-copy --------------------------------------------------------------------------

@CUDA
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("width", ROW_SIZES)
def test_zero_copy_bit_exact(dtype, width):
    features = table_data(97, width, dtype)
    table = hector.PinnedTable(features, fallback="error")
    assert table.mode == "zero_copy" and table.reason == ""
    idx = awkward_index(97)
    out = table.gather(idx.cuda())
    assert out.device.type == "cuda"
    assert_same_bits(out, features.index_select(0, idx))


@CUDA
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("offset", [1, 3, 5])
@pytest.mark.parametrize("width", [1, 3, 4, 31, 32, 33, 1023, 4097])
def test_zero_copy_misaligned_base(dtype, offset, width):
    features = table_data(60, width, dtype, offset=offset)
    table = hector.PinnedTable(features, fallback="error")
    idx = awkward_index(60, n=150, dtype=torch.int32)
    assert_same_bits(table.gather(idx.cuda()), features.index_select(0, idx))


@CUDA
@pytest.mark.parametrize("kwargs", [dict(sort_indices=False), dict(max_threads=256),
                                    dict(max_threads=0), dict(max_threads=32),
                                    dict(max_threads=1), dict(max_threads=100)])
def test_zero_copy_options(kwargs):
    features = table_data(5000, 65, torch.float32)
    table = hector.PinnedTable(features, fallback="error", **kwargs)
    idx = awkward_index(5000, n=20000)
    assert_same_bits(table.gather(idx.cuda()), features[idx])


@CUDA
def test_zero_copy_empty_and_cpu_index():
    features = table_data(10, 7, torch.float64)
    table = hector.PinnedTable(features, fallback="error")
    out = table.gather(torch.empty(0, dtype=torch.int64, device="cuda"))
    assert out.shape == (0, 7) and out.device.type == "cuda"
    idx = torch.tensor([3, 3, 1])
    cpu_out = table.gather(idx)  # a CPU index: CPU gather, CPU result
    assert cpu_out.device.type == "cpu"
    assert_same_bits(cpu_out, features[idx])


@CUDA
def test_zero_copy_pins_in_place_and_unregisters_once():
    features = table_data(1000, 16, torch.float32)
    assert not features.is_pinned()
    table = hector.PinnedTable(features, fallback="error")
    assert features.is_pinned()  # registered in place, no copy
    second = hector.PinnedTable(features[10:], fallback="error")  # same storage: shared
    idx = awkward_index(990, n=5000).cuda()
    out = second.gather(idx)
    table.close()
    del table
    gc.collect()
    assert features.is_pinned()  # the second table still holds the registration
    out2 = second.gather(idx)
    del second
    gc.collect()
    torch.cuda.synchronize()
    assert not features.is_pinned()
    assert_same_bits(out, features[10:][idx.cpu()])
    assert_same_bits(out2, features[10:][idx.cpu()])


@CUDA
def test_zero_copy_unregister_waits_for_gathers():
    features = table_data(200000, 64, torch.float32)
    idx = torch.randint(0, 200000, (400000,)).cuda()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = hector.PinnedTable(features, fallback="error").gather(idx)
        # the table is gone at once; its registration must outlive the running kernel
    gc.collect()
    stream.synchronize()
    assert_same_bits(out, features[idx.cpu()])


@CUDA
def test_already_pinned_tensor_is_used_as_is():
    features = table_data(100, 8, torch.float32).pin_memory()
    table = hector.PinnedTable(features, fallback="error")
    assert table.mode == "zero_copy"
    idx = awkward_index(100).cuda()
    assert_same_bits(table.gather(idx), features[idx.cpu()])
    del table
    gc.collect()
    torch.cuda.synchronize()
    assert features.is_pinned()  # not ours to unregister


@CUDA
def test_fallback_gather_to_cuda():
    base = table_data(40, 9, torch.bfloat16)
    with pytest.warns(RuntimeWarning, match="not pinned"):
        table = hector.PinnedTable(base.t().contiguous().t(), fallback="cpu_gather")
    idx = awkward_index(40, n=100).cuda()
    out = table.gather(idx)
    assert out.device.type == "cuda" and table.mode == "cpu_gather"
    assert_same_bits(out, base[idx.cpu()])


@CUDA
def test_cuda_index_validation_before_kernel():
    table = hector.PinnedTable(torch.randn(10, 3), fallback="error")
    with pytest.raises(ValueError, match=r"index\[1\] = 10 is out of range \[0, 10\)"):
        table.gather(torch.tensor([2, 10, 11], device="cuda"))
    # the CUDA context is intact afterwards
    idx = torch.tensor([9, 0], device="cuda")
    assert_same_bits(table.gather(idx), table.features[idx.cpu()])


@CUDA
def test_cpu_gather_pinned_output():
    features = table_data(100, 5, torch.float32)
    out = cpu_gather(features, torch.tensor([1, 2, 99]), pin_output=True)
    assert out.is_pinned()
    assert_same_bits(out, features[[1, 2, 99]])


@CUDA
@pytest.mark.parametrize("dtype", [torch.uint8, torch.bool])
@pytest.mark.parametrize("offset", [1, 3])
@pytest.mark.parametrize("width", [1, 2, 16, 33, 129, 4097])
def test_zero_copy_byte_loads(dtype, offset, width):
    # An odd storage offset (and odd row sizes) leave only 1-byte loads: the V=1 kernel.
    g = torch.Generator().manual_seed(width)
    flat = torch.randint(0, 256, (60 * width + offset,), generator=g, dtype=torch.uint8)
    if dtype == torch.bool:
        flat = flat > 127
    features = flat[offset:].view(60, width)
    table = hector.PinnedTable(features, fallback="error")
    idx = awkward_index(60, n=150)
    assert_same_bits(table.gather(idx.cuda()), features.index_select(0, idx))


@CUDA
def test_cpu_gather_mode_to_cuda():
    features = table_data(200, 17, torch.float64)
    table = hector.PinnedTable(features, mode="cpu_gather")
    assert table.mode == "cpu_gather" and not features.is_pinned()
    idx = awkward_index(200, n=500).cuda()
    out = table.gather(idx)
    assert out.device.type == "cuda"
    assert_same_bits(out, features[idx.cpu()])


@CUDA
def test_new_table_while_the_last_one_unregisters():
    # The old registration's end waits for a slow gather (one 32-thread block) on another
    # thread; a table made over the same memory meanwhile must not take the still page-locked
    # pages for someone else's (which the old region would then unregister under it): it waits
    # and registers anew, so the memory stays pinned while it lives.
    features = table_data(400000, 64, torch.float32)
    idx = torch.randint(0, 400000, (300000,)).cuda()
    for _ in range(3):
        old = hector.PinnedTable(features, fallback="error", max_threads=32)
        out_old = old.gather(idx)
        closer = threading.Thread(target=old.close)   # the last handle: waits for the gather
        closer.start()
        time.sleep(0.005)
        new = hector.PinnedTable(features, fallback="error")
        closer.join()
        torch.cuda.synchronize()
        assert features.is_pinned(), "the new table's registration was ended by the old table"
        assert_same_bits(new.gather(idx[:1000]), features[idx[:1000].cpu()])
        assert_same_bits(out_old, features[idx.cpu()])
        new.close()
        del old, new
        gc.collect()
        torch.cuda.synchronize()
        assert not features.is_pinned()
