//===- pinned_table.cpp - hector::PinnedTable and the CPU gather -----------===//
//
// Pinning policy, index validation, the multithreaded CPU gather (the fallback and the
// "CPU-centric" baseline) and the torch bindings (class torch.classes.hector.PinnedTable, the
// operator hector::cpu_gather, and hector::_zero_copy_launch for tests). The CUDA side lives in
// pinned_gather.cu.
//
//===----------------------------------------------------------------------===//
#include "hector/pinned_table.h"
#include "hector/common.h"

#ifdef HECTOR_WITH_CUDA
#include "pinned_cuda.h"
#endif

#include <ATen/MapAllocator.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

namespace hector {
namespace detail {

/// What every copy of a PinnedTable shares.
struct PinnedTableState {
  at::Tensor features;
  PinnedTableOptions options;
  PinnedMode mode = PinnedMode::kCpuGather;
  std::string reason;
  int64_t numRows = 0;
  int64_t rowBytes = 0;
  /// Byte offset of features' first element from the start of its storage.
  int64_t offsetBytes = 0;
#ifdef HECTOR_WITH_CUDA
  std::shared_ptr<cuda::HostRegion> region;
#endif
};

} // namespace detail

namespace {

constexpr const char *kWho = "hector.PinnedTable: ";

/// Whether every row of `t` (the sub-tensor t[i]) is contiguous in memory.
bool rowsContiguous(const at::Tensor &t) {
  int64_t expected = 1;
  for (int64_t d = t.dim() - 1; d >= 1; --d) {
    if (t.size(d) != 1 && t.stride(d) != expected)
      return false;
    expected *= t.size(d);
  }
  return true;
}

/// Whether any byte of [data, data + bytes) lies in a MAP_SHARED mapping of this process. That
/// is what Tensor.share_memory_() makes under either sharing strategy; the file_system one
/// allocates through libshm, whose allocator LibTorch cannot identify from a DataPtr, so the
/// mapping itself is asked. One read of /proc/self/maps per table; false where there is none.
bool inSharedMapping(const void *data, size_t bytes) {
#ifdef __linux__
  if (bytes == 0)
    return false;
  const uintptr_t first = reinterpret_cast<uintptr_t>(data), last = first + bytes - 1;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode [path]", perms e.g. "rw-s" (s: shared, p: private).
    unsigned long long start = 0, end = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &start, &end, perms) != 3)
      continue;
    if (end > first && start <= last && perms[3] == 's')
      return true;
  }
#else
  (void)data;
  (void)bytes;
#endif
  return false;
}

/// Why `features` cannot be pinned in place, or "" when it can (as far as can be told before
/// calling cudaHostRegister). `valueError` is set for reasons that are a property of the tensor.
std::string pinBlocker(const at::Tensor &features, const PinnedTableOptions &options,
                       bool &valueError) {
  valueError = true;
  if (!features.is_contiguous())
    return "features are not contiguous (strides " + c10::str(features.strides()) +
           "); pinning in place needs one dense block: pass features.contiguous()";
  const c10::Storage &storage = features.storage();
  if (options.isShared || at::MapAllocator::fromDataPtr(storage.data_ptr()) ||
      inSharedMapping(storage.data(), storage.nbytes()))
    return "features live in shared or file-mapped memory (Tensor.share_memory_(), a DataLoader "
           "worker, torch.from_file), which cudaHostRegister cannot reliably pin; pass a private "
           "copy (features.clone())";
  valueError = false;
#ifndef HECTOR_WITH_CUDA
  return "this runtime was built without CUDA";
#else
  std::string why;
  if (!cuda::deviceAvailable(why))
    return why;
  return "";
#endif
}

/// Validates a gather index against a table of `numRows` rows; throws before anything runs.
void checkIndex(const at::Tensor &index, int64_t numRows, bool checkBounds,
                const char *who = kWho) {
  TORCH_CHECK_TYPE(index.defined(), who, "index is undefined (None)");
  TORCH_CHECK_TYPE(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, who,
                   "index must be torch.int64 or torch.int32, got ",
                   dtypeName(index.scalar_type()));
  TORCH_CHECK_VALUE(index.dim() == 1, who, "index must be 1-D, got shape ", index.sizes());
  TORCH_CHECK_VALUE(index.is_cpu() || index.is_cuda(), who,
                    "index must be on the CPU or a CUDA device, got ", deviceName(index.device()));
  if (!checkBounds || index.numel() == 0)
    return;
  // One host round trip for both bounds.
  auto [lo, hi] = at::aminmax(index);
  at::Tensor bounds = at::stack({lo.to(at::kLong), hi.to(at::kLong)}).cpu();
  const int64_t *b = bounds.const_data_ptr<int64_t>();
  if (b[0] >= 0 && b[1] < numRows)
    return;
  at::Tensor bad = index.lt(0).logical_or_(index.ge(numRows));
  int64_t pos = bad.to(at::kByte).argmax().item<int64_t>();
  TORCH_CHECK_VALUE(false, who, "index[", pos, "] = ", index[pos].item<int64_t>(),
                    " is out of range [0, ", numRows, ") (the table has ", numRows, " rows)");
}

/// Output shape of a gather of `n` rows.
std::vector<int64_t> gatherShape(const at::Tensor &features, int64_t n) {
  std::vector<int64_t> shape(features.sizes().begin(), features.sizes().end());
  shape[0] = n;
  return shape;
}

template <typename IndexT>
void cpuGatherTyped(const char *base, int64_t rowStride, int64_t rowBytes, const IndexT *idx,
                    int64_t n, char *out) {
  // Chunks of roughly 64 KiB per task keep the pool busy without per-row overhead.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(rowBytes, 1));
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      std::memcpy(out + k * rowBytes, base + static_cast<int64_t>(idx[k]) * rowStride, rowBytes);
  });
}

} // namespace

void cpuGatherRows(const at::Tensor &table, const at::Tensor &index, at::Tensor &out) {
  TORCH_CHECK(table.is_cpu() && index.is_cpu() && out.is_cpu() && out.is_contiguous(),
              "hector::cpuGatherRows: CPU tensors and a contiguous output expected");
  TORCH_CHECK(out.scalar_type() == table.scalar_type() && out.size(0) == index.numel(),
              "hector::cpuGatherRows: output of the wrong dtype or size");
  const int64_t n = index.numel();
  if (n == 0 || out.numel() == 0)
    return;
  if (!rowsContiguous(table)) {
    // Rows with inner strides: let ATen do the strided copy.
    at::index_select_out(out, table, 0, index.to(at::kLong));
    return;
  }
  const int64_t elem = table.element_size();
  const int64_t rowBytes = out.numel() / n * elem;
  const char *base = static_cast<const char *>(table.const_data_ptr());
  const int64_t rowStride = table.stride(0) * elem;
  char *dst = static_cast<char *>(out.data_ptr());
  at::Tensor idx = index.contiguous();
  if (idx.scalar_type() == at::kLong)
    cpuGatherTyped(base, rowStride, rowBytes, idx.const_data_ptr<int64_t>(), n, dst);
  else
    cpuGatherTyped(base, rowStride, rowBytes, idx.const_data_ptr<int32_t>(), n, dst);
}

PinnedTable::PinnedTable(const at::Tensor &features, const PinnedTableOptions &options) {
  TORCH_CHECK_TYPE(features.defined(), kWho, "features are undefined (None)");
  TORCH_CHECK_TYPE(features.is_cpu(), kWho, "features must be a CPU tensor, got one on ",
                   deviceName(features.device()),
                   " (features already on a GPU need no zero-copy table: use index_select)");
  TORCH_CHECK_VALUE(features.dim() >= 1, kWho,
                    "features must have at least one dimension (rows), got a 0-d tensor");
  TORCH_CHECK_VALUE(options.maxThreads >= 0, kWho, "max_threads must be >= 0, got ",
                    options.maxThreads);
  auto s = std::make_shared<detail::PinnedTableState>();
  s->features = features;
  s->options = options;
  s->numRows = features.size(0);
  s->rowBytes = c10::multiply_integers(features.sizes().slice(1)) * features.element_size();
  s->offsetBytes = features.storage_offset() * features.element_size();

  if (options.mode == PinnedMode::kCpuGather) {
    // The CPU-centric path by request: nothing is pinned and `fallback` does not apply.
    s->reason = "the CPU gather was asked for (mode cpu_gather)";
    state_ = std::move(s);
    return;
  }
  bool valueError = false;
  std::string why = pinBlocker(features, options, valueError);
#ifdef HECTOR_WITH_CUDA
  if (why.empty()) {
    if (features.storage().nbytes() == 0) {
      // Nothing to pin: an empty table serves only empty gathers.
      s->mode = PinnedMode::kZeroCopy;
    } else {
      s->region = cuda::registerStorage(features.storage(), why);
      if (s->region)
        s->mode = PinnedMode::kZeroCopy;
    }
  }
#endif
  if (s->mode != PinnedMode::kZeroCopy) {
    if (options.fallback == PinnedFallback::kError) {
      if (valueError)
        TORCH_CHECK_VALUE(false, kWho, "cannot pin the table in place: ", why,
                          " (or choose fallback=\"cpu_gather\")");
      TORCH_CHECK(false, kWho, "cannot pin the table in place: ", why,
                  " (or choose fallback=\"cpu_gather\")");
    }
    s->reason = why;
  }
  state_ = std::move(s);
}

PinnedTable::PinnedTable(const PinnedTable &other) : state_(other.load()) {}

PinnedTable::PinnedTable(PinnedTable &&other) noexcept {
  std::lock_guard<std::mutex> lock(other.mutex_);
  state_ = std::move(other.state_);
}

PinnedTable &PinnedTable::operator=(const PinnedTable &other) {
  if (this != &other) {
    std::shared_ptr<detail::PinnedTableState> previous, held = other.load();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      previous = std::exchange(state_, std::move(held));
    }
    // `previous` (possibly the last reference: its region may wait for kernels) goes here,
    // outside the lock.
  }
  return *this;
}

PinnedTable &PinnedTable::operator=(PinnedTable &&other) noexcept {
  if (this != &other) {
    std::shared_ptr<detail::PinnedTableState> taken, previous;
    {
      std::lock_guard<std::mutex> lock(other.mutex_);
      taken = std::move(other.state_);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    previous = std::exchange(state_, std::move(taken));
  } // the lock is released before `previous` goes (see the copy assignment)
  return *this;
}

PinnedTable::~PinnedTable() = default;

std::shared_ptr<detail::PinnedTableState> PinnedTable::load() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

std::shared_ptr<detail::PinnedTableState> PinnedTable::state() const {
  std::shared_ptr<detail::PinnedTableState> held = load();
  TORCH_CHECK_VALUE(held != nullptr, kWho, "the table was released (closed)");
  return held;
}

PinnedMode PinnedTable::mode() const { return state()->mode; }
std::string PinnedTable::fallbackReason() const { return state()->reason; }
at::Tensor PinnedTable::features() const { return state()->features; }
int64_t PinnedTable::numRows() const { return state()->numRows; }
int64_t PinnedTable::rowBytes() const { return state()->rowBytes; }

bool PinnedTable::released() const { return load() == nullptr; }

void PinnedTable::release() {
  std::shared_ptr<detail::PinnedTableState> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = std::move(state_);
  }
  // The last reference ends the registration, which waits for the gathers that read it: not
  // under the handle's lock, so that other threads' calls fail fast ("released") meanwhile.
}

at::Tensor PinnedTable::gather(const at::Tensor &index) const {
  // Our own reference for the whole gather: the region it holds stays registered until the
  // kernel below has recorded its use, whatever release() another thread calls meanwhile.
  const std::shared_ptr<detail::PinnedTableState> held = state();
  const detail::PinnedTableState &s = *held;
  // A table without rows is checked regardless of checkBounds: any index is out of range, and
  // an empty table has no registration to read from.
  checkIndex(index, s.numRows, s.options.checkBounds || s.numRows == 0);
  const int64_t n = index.numel();
  const std::vector<int64_t> shape = gatherShape(s.features, n);

  if (index.is_cpu()) {
    at::Tensor out = at::empty(shape, s.features.options());
    cpuGatherRows(s.features, index, out);
    return out;
  }

  at::TensorOptions deviceOptions = s.features.options().device(index.device());
#ifdef HECTOR_WITH_CUDA
  if (s.mode == PinnedMode::kZeroCopy) {
    at::Tensor out = at::empty(shape, deviceOptions);
    if (n > 0 && s.rowBytes > 0) {
      // numRows > 0 here (checked above), so the storage is not empty and was registered.
      TORCH_INTERNAL_ASSERT(s.region != nullptr, kWho, "zero-copy table without a registration");
      cuda::gatherRows(*s.region, s.offsetBytes, s.rowBytes, index, out, s.options.maxThreads,
                       s.options.sortIndices);
    }
    return out;
  }
#endif
  // CPU-centric path: threaded gather into pinned staging memory, then one asynchronous copy
  // (the caching host allocator keeps the staging buffer until the copy has finished).
  at::Tensor hostIndex = index.cpu();
  at::Tensor staging = at::empty(shape, s.features.options().pinned_memory(true));
  cpuGatherRows(s.features, hostIndex, staging);
  return staging.to(index.device(), /*non_blocking=*/true);
}

} // namespace hector

namespace {

/// The TorchScript-visible handle of a PinnedTable (torch.classes.hector.PinnedTable).
struct PinnedTableHandle : torch::CustomClassHolder {
  hector::PinnedTable table;
  explicit PinnedTableHandle(hector::PinnedTable t) : table(std::move(t)) {}
};

hector::PinnedMode parseMode(const std::string &name) {
  if (name == "zero_copy")
    return hector::PinnedMode::kZeroCopy;
  if (name == "cpu_gather")
    return hector::PinnedMode::kCpuGather;
  TORCH_CHECK_VALUE(false,
                    "hector.PinnedTable: mode must be \"zero_copy\" or \"cpu_gather\", got \"",
                    name, "\"");
}

hector::PinnedFallback parseFallback(const std::string &name) {
  if (name == "cpu_gather")
    return hector::PinnedFallback::kCpuGather;
  if (name == "error")
    return hector::PinnedFallback::kError;
  TORCH_CHECK_VALUE(false,
                    "hector.PinnedTable: fallback must be \"cpu_gather\" or \"error\", got \"",
                    name, "\"");
}

/// hector::cpu_gather: the multithreaded CPU gather alone (the baseline, for benchmarks),
/// validated like a table gather.
at::Tensor cpuGatherOp(const at::Tensor &table, const at::Tensor &index, bool pinOutput) {
  TORCH_CHECK_TYPE(table.is_cpu(), "hector.cpu_gather: table must be a CPU tensor");
  TORCH_CHECK_VALUE(table.dim() >= 1, "hector.cpu_gather: table must have at least one dimension");
  hector::checkIndex(index, table.size(0), /*checkBounds=*/true, "hector.cpu_gather: ");
  TORCH_CHECK_VALUE(index.is_cpu(), "hector.cpu_gather: index must be on the CPU");
  std::vector<int64_t> shape(table.sizes().begin(), table.sizes().end());
  shape[0] = index.numel();
  at::Tensor out = at::empty(shape, table.options().pinned_memory(pinOutput));
  hector::cpuGatherRows(table, index, out);
  return out;
}

/// hector::_zero_copy_launch: the launch shape the zero-copy gather would use (host arithmetic
/// only, so tests can check the thread cap without a GPU): [vector bytes, threads per row, aligned
/// start (0/1), blocks, threads per block].
std::vector<int64_t> zeroCopyLaunchOp(int64_t tableAddress, int64_t outAddress, int64_t rowBytes,
                                      int64_t n, int64_t maxThreads) {
#ifdef HECTOR_WITH_CUDA
  TORCH_CHECK_VALUE(rowBytes > 0 && n > 0 && maxThreads >= 0,
                    "hector._zero_copy_launch: row_bytes and n must be positive, max_threads >= 0");
  const hector::cuda::GatherLaunch c =
      hector::cuda::gatherLaunch(static_cast<uintptr_t>(tableAddress),
                                 static_cast<uintptr_t>(outAddress), rowBytes, n, maxThreads);
  return {c.vectorBytes, c.groupThreads, c.alignedStart ? 1 : 0, c.blocks, c.blockThreads};
#else
  (void)tableAddress, (void)outAddress, (void)rowBytes, (void)n, (void)maxThreads;
  TORCH_CHECK(false, "hector._zero_copy_launch: this runtime was built without CUDA");
#endif
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.class_<PinnedTableHandle>("PinnedTable")
      .def(torch::init([](const at::Tensor &features, const std::string &fallback,
                          int64_t maxThreads, bool sortIndices, bool checkBounds, bool isShared,
                          const std::string &mode) {
        hector::PinnedTableOptions options;
        options.mode = parseMode(mode);
        options.fallback = parseFallback(fallback);
        options.maxThreads = maxThreads;
        options.sortIndices = sortIndices;
        options.checkBounds = checkBounds;
        options.isShared = isShared;
        return c10::make_intrusive<PinnedTableHandle>(hector::PinnedTable(features, options));
      }))
      .def("gather", [](const c10::intrusive_ptr<PinnedTableHandle> &self,
                        const at::Tensor &index) { return self->table.gather(index); })
      .def("mode",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) -> std::string {
             return self->table.mode() == hector::PinnedMode::kZeroCopy ? "zero_copy"
                                                                        : "cpu_gather";
           })
      .def("reason",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) -> std::string {
             return self->table.fallbackReason();
           })
      .def("features",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) { return self->table.features(); })
      .def("row_bytes",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) { return self->table.rowBytes(); })
      .def("released",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) { return self->table.released(); })
      .def("release",
           [](const c10::intrusive_ptr<PinnedTableHandle> &self) { self->table.release(); });
  m.def("cpu_gather(Tensor table, Tensor index, bool pin_output=False) -> Tensor", &cpuGatherOp);
  m.def("_zero_copy_launch(int table_address, int out_address, int row_bytes, int n, "
        "int max_threads) -> int[]",
        &zeroCopyLaunchOp);
}
