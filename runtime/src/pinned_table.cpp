//===- pinned_table.cpp - hector::PinnedTable and the CPU gather -----------===//
//
// Pinning policy, index validation, the multithreaded CPU gather (the fallback and the
// "CPU-centric" baseline) and the torch bindings (class torch.classes.hector.PinnedTable and the
// operator hector::cpu_gather). The CUDA side lives in pinned_gather.cu.
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

#include <cstring>

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

/// Why `features` cannot be pinned in place, or "" when it can (as far as can be told before
/// calling cudaHostRegister). `valueError` is set for reasons that are a property of the tensor.
std::string pinBlocker(const at::Tensor &features, const PinnedTableOptions &options,
                       bool &valueError) {
  valueError = true;
  if (!features.is_contiguous())
    return "features are not contiguous (strides " + c10::str(features.strides()) +
           "); pinning in place needs one dense block: pass features.contiguous()";
  if (options.isShared || at::MapAllocator::fromDataPtr(features.storage().data_ptr()))
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

const detail::PinnedTableState &PinnedTable::state() const {
  TORCH_CHECK_VALUE(state_ != nullptr, kWho, "the table was released (closed)");
  return *state_;
}

PinnedMode PinnedTable::mode() const { return state().mode; }
const std::string &PinnedTable::fallbackReason() const { return state().reason; }
const at::Tensor &PinnedTable::features() const { return state().features; }
int64_t PinnedTable::numRows() const { return state().numRows; }
int64_t PinnedTable::rowBytes() const { return state().rowBytes; }
void PinnedTable::release() { state_.reset(); }

at::Tensor PinnedTable::gather(const at::Tensor &index) const {
  const detail::PinnedTableState &s = state();
  checkIndex(index, s.numRows, s.options.checkBounds);
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
    if (n > 0 && s.rowBytes > 0)
      cuda::gatherRows(*s.region, s.offsetBytes, s.rowBytes, index, out, s.options.maxThreads,
                       s.options.sortIndices);
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

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.class_<PinnedTableHandle>("PinnedTable")
      .def(torch::init([](const at::Tensor &features, const std::string &fallback,
                          int64_t maxThreads, bool sortIndices, bool checkBounds, bool isShared) {
        hector::PinnedTableOptions options;
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
}
