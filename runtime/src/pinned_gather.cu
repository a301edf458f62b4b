//===- pinned_gather.cu - Zero-copy row gather from host memory ------------===//
//
// The CUDA side of hector::PinnedTable: in-place page-locking of a host storage (shared by every
// table over it, unregistered exactly once after the last gather that read it), and the gather
// kernel that reads rows over PCIe straight into a device tensor.
//
//===----------------------------------------------------------------------===//
#include "pinned_cuda.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <limits>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace hector::cuda {

namespace {

std::string cudaErrorText(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

/// Our registrations by host address, so that tables over memory inside one of them share it (a
/// second cudaHostRegister of the same pages would fail). An entry stays until its region has
/// unregistered: an entry whose region is expired belongs to a region being destroyed (waiting
/// for its last gathers, then unregistering), and registerStorage() waits for it to go rather
/// than mistake the still page-locked memory for someone else's pinned memory.
struct RegistryEntry {
  size_t bytes;
  std::weak_ptr<HostRegion> region;
};

// Never destroyed: a region may end during static destruction at process exit.
std::mutex &registryMutex() {
  static auto *mutex = new std::mutex();
  return *mutex;
}
/// Notified whenever an entry leaves the registry.
std::condition_variable &registryChanged() {
  static auto *changed = new std::condition_variable();
  return *changed;
}
std::unordered_map<char *, RegistryEntry> &registry() {
  static auto *map = new std::unordered_map<char *, RegistryEntry>();
  return *map;
}

} // namespace

struct HostRegion {
  /// Keeps the memory alive at least as long as the registration.
  c10::Storage storage;
  char *host = nullptr;
  size_t bytes = 0;
  /// Whether we called cudaHostRegister (and so must unregister).
  bool owned = false;
  /// The registration this region lies in, when it is not its own.
  std::shared_ptr<HostRegion> parent;

  std::mutex mutex;
  /// Device address per device index (nullptr: not queried yet).
  std::vector<void *> devicePointers;
  /// The last gather on each stream that read this region: waited for before unregistering.
  struct Use {
    cudaStream_t stream;
    c10::DeviceIndex device;
    cudaEvent_t event;
  };
  std::vector<Use> uses;

  ~HostRegion() {
    // Without the registry lock: registering other memory need not wait for our kernels. Until
    // the entry is erased below, registerStorage() for this memory waits (the entry is expired).
    for (const Use &use : uses) {
      cudaError_t err = cudaEventSynchronize(use.event);
      if (err == cudaSuccess)
        err = cudaEventDestroy(use.event);
      // At process exit the CUDA runtime may already be gone; nothing can read the memory then.
      if (err != cudaSuccess && err != cudaErrorCudartUnloading)
        std::fprintf(stderr, "hector.PinnedTable: waiting for the last gather failed (%s)\n",
                     cudaErrorText(err).c_str());
    }
    if (owned) {
      {
        std::lock_guard<std::mutex> lock(registryMutex());
        cudaError_t err = cudaHostUnregister(host);
        if (err != cudaSuccess && err != cudaErrorCudartUnloading)
          std::fprintf(stderr, "hector.PinnedTable: cudaHostUnregister failed (%s)\n",
                       cudaErrorText(err).c_str());
        // The entry at `host` is ours: nothing registers over an entry while it exists.
        registry().erase(host);
      }
      registryChanged().notify_all();
    }
    (void)cudaGetLastError();
  }

  /// The device-side address of `host` on `device` (never assumed equal to the host address).
  char *devicePointer(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex);
    if (devicePointers.size() <= static_cast<size_t>(device))
      devicePointers.resize(device + 1, nullptr);
    if (!devicePointers[device]) {
      c10::cuda::CUDAGuard guard(device);
      void *ptr = nullptr;
      cudaError_t err = cudaHostGetDevicePointer(&ptr, host, 0);
      if (err != cudaSuccess) {
        (void)cudaGetLastError();
        TORCH_CHECK(false,
                    "hector.PinnedTable: cudaHostGetDevicePointer failed on cuda:", int(device),
                    " (", cudaErrorText(err), ")");
      }
      devicePointers[device] = ptr;
    }
    return static_cast<char *>(devicePointers[device]);
  }

  /// Records that work just queued on `stream` reads this region.
  void recordUse(const c10::cuda::CUDAStream &stream) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = std::find_if(uses.begin(), uses.end(),
                           [&](const Use &u) { return u.stream == stream.stream(); });
    if (it == uses.end()) {
      cudaEvent_t event;
      C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      uses.push_back({stream.stream(), stream.device_index(), event});
      it = uses.end() - 1;
    }
    C10_CUDA_CHECK(cudaEventRecord(it->event, stream.stream()));
  }
};

bool deviceAvailable(std::string &why) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    why = "no usable CUDA device (cudaGetDeviceCount: " + cudaErrorText(err) + ")";
    return false;
  }
  if (count == 0) {
    why = "no CUDA device";
    return false;
  }
  int canMap = 0;
  int device = c10::cuda::current_device();
  if (cudaDeviceGetAttribute(&canMap, cudaDevAttrCanMapHostMemory, device) != cudaSuccess ||
      !canMap) {
    (void)cudaGetLastError();
    why = "cuda:" + std::to_string(device) + " cannot map host memory";
    return false;
  }
  return true;
}

/// Whether `address` lies in page-locked host memory.
static bool isPageLocked(const void *address) {
  cudaPointerAttributes attributes{};
  cudaError_t err = cudaPointerGetAttributes(&attributes, address);
  (void)cudaGetLastError();
  return err == cudaSuccess && attributes.type == cudaMemoryTypeHost;
}

std::shared_ptr<HostRegion> registerStorage(const c10::Storage &storage, std::string &why) {
  char *host = static_cast<char *>(const_cast<void *>(storage.data()));
  const size_t bytes = storage.nbytes();
  auto region = std::make_shared<HostRegion>();
  region->storage = storage;
  region->host = host;
  region->bytes = bytes;
  // References taken while scanning the registry; declared before the lock so that a region whose
  // last reference they turn out to be is destroyed (and takes the lock) after it is released.
  std::vector<std::shared_ptr<HostRegion>> seen;
  std::unique_lock<std::mutex> lock(registryMutex());

  for (;;) {
    bool dying = false;
    for (auto &[start, entry] : registry()) {
      if (!(host < start + entry.bytes && start < host + bytes))
        continue;
      std::shared_ptr<HostRegion> live = entry.region.lock();
      if (!live) {
        // Its last reference is gone and its destructor is on the way to unregistering: the
        // pages still look page-locked, but will not be for long. Wait, then look again.
        dying = true;
        break;
      }
      seen.push_back(live);
      if (host >= start && host + bytes <= start + entry.bytes) {
        // Inside one of our live registrations (a view of the same storage, or a storage that
        // shares its pages): ride on it and keep it alive.
        region->parent = std::move(live);
        return region;
      }
      why = "the memory partly overlaps memory another table registered";
      return nullptr;
    }
    if (!dying)
      break;
    registryChanged().wait(lock);
  }
  if (isPageLocked(host) && isPageLocked(host + bytes - 1)) {
    // Page-locked by its owner (torch's pinned allocator, or other code): use as is and leave
    // unregistering to the owner; holding the storage keeps the memory alive.
    return region;
  }
  cudaError_t err =
      cudaHostRegister(host, bytes, cudaHostRegisterPortable | cudaHostRegisterMapped);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    why = "cudaHostRegister of " + std::to_string(bytes) + " bytes failed (" + cudaErrorText(err) +
          ")";
    if (err == cudaErrorHostMemoryAlreadyRegistered)
      why += "; part of this memory is already registered by other code";
    return nullptr;
  }
  region->owned = true;
  registry()[host] = RegistryEntry{bytes, region};
  return region;
}

namespace {

constexpr int kBlockThreads = 512;
constexpr int kLineBytes = 128;

} // namespace

GatherLaunch gatherLaunch(uintptr_t table, uintptr_t out, int64_t rowBytes, int64_t n,
                          int64_t maxThreads) {
  GatherLaunch c{};
  c.vectorBytes = 16;
  while (c.vectorBytes > 1 &&
         (rowBytes % c.vectorBytes != 0 || table % c.vectorBytes != 0 || out % c.vectorBytes != 0))
    c.vectorBytes /= 2;
  const int64_t words = rowBytes / c.vectorBytes;
  c.alignedStart = rowBytes > kLineBytes;
  int groupShift = 0;
  // A warp per row once the row needs it; smaller groups share a warp between short rows.
  while (groupShift < 5 && ((int64_t{1} << groupShift) < words || c.alignedStart))
    ++groupShift;
  int64_t blockThreads = kBlockThreads;
  if (maxThreads > 0) {
    // The cap holds below one full block too: the group shrinks to fit (a group of any size
    // copies a row correctly, only with fewer loads in flight) and a block holds whole groups.
    while ((int64_t{1} << groupShift) > maxThreads)
      --groupShift;
    blockThreads = std::min<int64_t>(kBlockThreads, maxThreads);
    blockThreads -= blockThreads % (int64_t{1} << groupShift);
  }
  c.groupThreads = 1 << groupShift;
  c.blockThreads = static_cast<int>(blockThreads);
  const int64_t threads = n << groupShift;
  c.blocks = (threads + blockThreads - 1) / blockThreads;
  if (maxThreads > 0)
    c.blocks = std::min(c.blocks, std::max<int64_t>(1, maxThreads / blockThreads));
  c.blocks = std::min<int64_t>(c.blocks, std::numeric_limits<int32_t>::max());
  return c;
}

namespace {

template <int Bytes> struct VectorOf;
template <> struct VectorOf<16> { using type = uint4; };
template <> struct VectorOf<8> { using type = uint2; };
template <> struct VectorOf<4> { using type = unsigned int; };
template <> struct VectorOf<2> { using type = unsigned short; };
template <> struct VectorOf<1> { using type = unsigned char; };

/// out[dest[k]] = table[rows[k]] (dest == nullptr: out[k]), rows of rowBytes bytes. A group of
/// 2^groupShift threads copies one row with V-byte loads; groups stride over the rows, so a
/// capped grid covers any number of rows. With alignedStart the group's first load starts at the
/// 128-byte line containing the row's first byte, so every PCIe read covers whole lines.
template <int V, typename IndexT>
__global__ void __launch_bounds__(kBlockThreads)
    gatherRowsKernel(const char *__restrict__ table, int64_t rowBytes,
                     const IndexT *__restrict__ rows, const int64_t *__restrict__ dest, int64_t n,
                     char *__restrict__ out, int groupShift, bool alignedStart) {
  // blockDim.x is a multiple of the group size (gatherLaunch), so no group spans two blocks.
  using Vec = typename VectorOf<V>::type;
  const int64_t thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t groupSize = int64_t{1} << groupShift;
  const int64_t lane = thread & (groupSize - 1);
  const int64_t numGroups = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> groupShift;
  const int64_t step = groupSize * V;
  for (int64_t k = thread >> groupShift; k < n; k += numGroups) {
    const char *from = table + static_cast<int64_t>(rows[k]) * rowBytes;
    char *to = out + (dest ? dest[k] : k) * rowBytes;
    const int64_t shift =
        alignedStart ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(from) & (kLineBytes - 1))
                     : 0;
    for (int64_t off = lane * V - shift; off < rowBytes; off += step) {
      if (off >= 0)
        *reinterpret_cast<Vec *>(to + off) = *reinterpret_cast<const Vec *>(from + off);
    }
  }
}

template <int V, typename IndexT>
void launchWith(const GatherLaunch &c, const char *table, int64_t rowBytes, const IndexT *rows,
                const int64_t *dest, int64_t n, char *out, cudaStream_t stream) {
  const int groupShift = __builtin_ctz(static_cast<unsigned>(c.groupThreads));
  gatherRowsKernel<V, IndexT>
      <<<dim3(static_cast<unsigned>(c.blocks)), dim3(static_cast<unsigned>(c.blockThreads)), 0,
         stream>>>(table, rowBytes, rows, dest, n, out, groupShift, c.alignedStart);
}

template <typename IndexT>
void launch(const GatherLaunch &c, const char *table, int64_t rowBytes, const IndexT *rows,
            const int64_t *dest, int64_t n, char *out, cudaStream_t stream) {
  switch (c.vectorBytes) {
  case 16:
    launchWith<16>(c, table, rowBytes, rows, dest, n, out, stream);
    break;
  case 8:
    launchWith<8>(c, table, rowBytes, rows, dest, n, out, stream);
    break;
  case 4:
    launchWith<4>(c, table, rowBytes, rows, dest, n, out, stream);
    break;
  case 2:
    launchWith<2>(c, table, rowBytes, rows, dest, n, out, stream);
    break;
  default:
    launchWith<1>(c, table, rowBytes, rows, dest, n, out, stream);
    break;
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

} // namespace

void gatherRows(HostRegion &region, int64_t offsetBytes, int64_t rowBytes, const at::Tensor &index,
                at::Tensor &out, int64_t maxThreads, bool sortIndices) {
  const c10::DeviceIndex device = index.device().index();
  c10::cuda::CUDAGuard guard(device);
  c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(device);
  const char *table = region.devicePointer(device) + offsetBytes;
  const int64_t n = index.numel();

  at::Tensor rows = index.contiguous();
  at::Tensor dest;
  if (sortIndices && n > 1) {
    // Read rows in address order; write each to the position it was asked for.
    std::tie(rows, dest) = at::sort(rows, /*stable=*/std::optional<bool>(false), /*dim=*/0);
  }
  const GatherLaunch c =
      gatherLaunch(reinterpret_cast<uintptr_t>(table), reinterpret_cast<uintptr_t>(out.data_ptr()),
                   rowBytes, n, maxThreads);
  const int64_t *destPtr = dest.defined() ? dest.const_data_ptr<int64_t>() : nullptr;
  char *outPtr = static_cast<char *>(out.data_ptr());
  if (rows.scalar_type() == at::kLong)
    launch(c, table, rowBytes, rows.const_data_ptr<int64_t>(), destPtr, n, outPtr, stream);
  else
    launch(c, table, rowBytes, rows.const_data_ptr<int32_t>(), destPtr, n, outPtr, stream);
  region.recordUse(stream);
}

} // namespace hector::cuda
