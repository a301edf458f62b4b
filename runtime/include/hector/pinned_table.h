//===- hector/pinned_table.h - Zero-copy feature table ---------*- C++ -*-===//
//
// hector::PinnedTable keeps a node-feature table in host memory and serves row gathers to the GPU
// without a CPU gather (PyTorch-Direct): the host tensor is page-locked in place with
// cudaHostRegister and a CUDA kernel reads the requested rows over PCIe. Where that is impossible
// (no CUDA, a non-contiguous or shared-memory tensor, registration refused) the table falls back,
// if the user allows it, to a multithreaded CPU gather into a staging buffer plus one copy; that
// "CPU-centric" path can also be asked for outright (PinnedTableOptions::mode), as a baseline.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace hector {

/// What a PinnedTable does when it cannot pin the table in place.
enum class PinnedFallback {
  /// Serve gathers with the multithreaded CPU gather (+ one copy to the index's device).
  kCpuGather,
  /// Throw: c10::ValueError for a tensor that cannot be pinned (non-contiguous, shared memory),
  /// c10::Error otherwise (no CUDA, cudaHostRegister failed).
  kError,
};

/// How a PinnedTable serves gathers.
enum class PinnedMode {
  /// Pinned in place; gathers to a CUDA device run the zero-copy kernel.
  kZeroCopy,
  /// Not pinned; every gather is a CPU gather (plus one copy when the index is on a GPU).
  kCpuGather,
};

/// Construction options of a PinnedTable.
struct PinnedTableOptions {
  /// The mode asked for. kZeroCopy pins the table in place where possible (otherwise `fallback`
  /// decides); kCpuGather never pins: every gather is the CPU-centric path (threaded gather into
  /// a page-locked staging buffer, then one copy), the baseline benchmarks compare zero-copy with.
  PinnedMode mode = PinnedMode::kZeroCopy;
  PinnedFallback fallback = PinnedFallback::kCpuGather;
  /// Upper bound on the threads of one zero-copy gather launch (0: no bound), block size
  /// included: a cap below one 512-thread block launches one smaller block. A small gather that
  /// occupies a few SMs saturates PCIe and leaves the rest of the GPU to compute kernels.
  int64_t maxThreads = 10240;
  /// Sort the indices before a zero-copy gather (rows are then read in address order, which
  /// helps PCIe and TLB locality; results are scattered back through the permutation).
  bool sortIndices = true;
  /// Check 0 <= index < numRows() before every gather (one small device-to-host copy for CUDA
  /// indices). An out-of-range zero-copy read is an illegal memory access that poisons the CUDA
  /// context, so only turn this off for indices known to be valid. (A table without rows checks
  /// regardless: it has nothing that any index could read.)
  bool checkBounds = true;
  /// Treat the tensor as living in shared memory, which is never pinned (see `fallback`). The
  /// table detects on its own file-mapped storages (at::MapAllocator: torch.from_file, the
  /// file_descriptor sharing strategy) and, on Linux, any storage inside a MAP_SHARED mapping
  /// (Tensor.share_memory_() under either sharing strategy, including libshm's file_system one,
  /// whose allocator LibTorch cannot identify). Set this for shared memory it cannot see, e.g. on
  /// other systems; Python passes Tensor.is_shared().
  bool isShared = false;
};

namespace detail {
struct PinnedTableState;
} // namespace detail

/// A feature table ([numRows, ...], any dtype) in host memory that serves row gathers.
///
/// Copies share the table; the registration is released exactly once, after the last copy is
/// gone and after every gather kernel that read it has finished. One handle may be used from
/// several threads at once: gather() holds its own reference to the table while it queues the
/// kernel, so a concurrent release() (or the last other copy going away) cannot end the
/// registration under it.
class PinnedTable {
public:
  /// Pins `features` (a CPU tensor with at least one dimension) in place, or falls back as
  /// options.fallback says. Throws c10::TypeError if `features` is not a CPU tensor.
  explicit PinnedTable(const at::Tensor &features, const PinnedTableOptions &options = {});
  PinnedTable(const PinnedTable &other);
  PinnedTable(PinnedTable &&other) noexcept;
  PinnedTable &operator=(const PinnedTable &other);
  PinnedTable &operator=(PinnedTable &&other) noexcept;
  ~PinnedTable();

  /// Rows `index` of the table, on index's device: out[k] = features[index[k]]. `index` is a 1-D
  /// int32 or int64 tensor on the CPU or a CUDA device; it is validated (dtype, shape, device,
  /// range) before anything runs. A CUDA gather runs on the current stream and allocates its
  /// output from the caching allocator.
  at::Tensor gather(const at::Tensor &index) const;

  /// How gathers are served.
  PinnedMode mode() const;
  /// Why the table is not zero-copy (empty when it is).
  std::string fallbackReason() const;
  /// The table (the caller's tensor, not a copy).
  at::Tensor features() const;
  int64_t numRows() const;
  /// Bytes of one row.
  int64_t rowBytes() const;
  /// Drops this handle's reference; later calls on this handle throw. The registration ends
  /// when the last handle is released (and the gathers that read it have finished).
  void release();
  /// Whether release() was called.
  bool released() const;

private:
  /// This handle's reference (guarded by mutex_, which release() takes too).
  mutable std::mutex mutex_;
  std::shared_ptr<detail::PinnedTableState> state_;
  /// A copy of state_, taken under the lock (null once released).
  std::shared_ptr<detail::PinnedTableState> load() const;
  /// A reference of the caller's own to the shared state; throws when released.
  std::shared_ptr<detail::PinnedTableState> state() const;
};

/// Multithreaded CPU gather: out[k] = table[index[k]] for a CPU `table` whose rows are each
/// contiguous, a CPU int32/int64 `index` known to be in range, and a contiguous CPU `out` of shape
/// [index.numel(), table.sizes()[1:]] and table's dtype (pinned or not).
void cpuGatherRows(const at::Tensor &table, const at::Tensor &index, at::Tensor &out);

} // namespace hector
