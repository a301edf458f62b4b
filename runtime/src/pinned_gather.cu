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
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace hector::cuda {

namespace {

std::string cudaErrorText(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

/// Our live registrations by host address, so that tables over memory inside one of them share
/// it (a second cudaHostRegister of the same pages would fail).
std::mutex registryMutex;
std::unordered_map<void *, std::weak_ptr<HostRegion>> &registry() {
  static auto *map = new std::unordered_map<void *, std::weak_ptr<HostRegion>>();
  return *map;
}

} // namespace

struct HostRegion {
  /// Keeps the memory alive at least as long as the registration.
  c10::Storage storage;
  void *host = nullptr;
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
      std::lock_guard<std::mutex> lock(registryMutex);
      cudaError_t err = cudaHostUnregister(host);
      if (err != cudaSuccess && err != cudaErrorCudartUnloading)
        std::fprintf(stderr, "hector.PinnedTable: cudaHostUnregister failed (%s)\n",
                     cudaErrorText(err).c_str());
      auto it = registry().find(host);
      if (it != registry().end() && it->second.expired())
        registry().erase(it);
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
  std::unique_lock<std::mutex> lock(registryMutex);

  // Inside one of our live registrations (a view of the same storage, or a storage that shares
  // its pages): ride on it and keep it alive.
  for (auto &[start, weak] : registry()) {
    std::shared_ptr<HostRegion> live = weak.lock();
    if (!live)
      continue;
    seen.push_back(live);
    char *liveHost = static_cast<char *>(live->host);
    if (host >= liveHost && host + bytes <= liveHost + live->bytes) {
      region->parent = std::move(live);
      return region;
    }
    if (host < liveHost + live->bytes && liveHost < host + bytes) {
      why = "the memory partly overlaps memory another table registered";
      return nullptr;
    }
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
  registry()[host] = region;
  return region;
}

namespace {

constexpr int kBlockThreads = 512;
constexpr int kLineBytes = 128;

/// The launch configuration of one gather.
struct GatherConfig {
  int vectorBytes;   ///< bytes per load: 16, 8, 4, 2 or 1
  int groupShift;    ///< log2 of the threads per row (<= 5: at most a warp per row)
  bool alignedStart; ///< groups start at the 128-byte line below the row
  int64_t blocks;
};

GatherConfig makeConfig(uintptr_t table, uintptr_t out, int64_t rowBytes, int64_t n,
                        int64_t maxThreads) {
  GatherConfig c{};
  c.vectorBytes = 16;
  while (c.vectorBytes > 1 &&
         (rowBytes % c.vectorBytes != 0 || table % c.vectorBytes != 0 || out % c.vectorBytes != 0))
    c.vectorBytes /= 2;
  const int64_t words = rowBytes / c.vectorBytes;
  c.alignedStart = rowBytes > kLineBytes;
  c.groupShift = 0;
  // A warp per row once the row needs it; smaller groups share a warp between short rows.
  while (c.groupShift < 5 && ((int64_t{1} << c.groupShift) < words || c.alignedStart))
    ++c.groupShift;
  const int64_t threads = n << c.groupShift;
  c.blocks = (threads + kBlockThreads - 1) / kBlockThreads;
  if (maxThreads > 0)
    c.blocks = std::min(c.blocks, std::max<int64_t>(1, maxThreads / kBlockThreads));
  c.blocks = std::min<int64_t>(c.blocks, std::numeric_limits<int32_t>::max());
  return c;
}

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

template <typename IndexT>
void launch(const GatherConfig &c, const char *table, int64_t rowBytes, const IndexT *rows,
            const int64_t *dest, int64_t n, char *out, cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(c.blocks)), block(kBlockThreads);
  switch (c.vectorBytes) {
  case 16:
    gatherRowsKernel<16, IndexT><<<grid, block, 0, stream>>>(table, rowBytes, rows, dest, n, out,
                                                             c.groupShift, c.alignedStart);
    break;
  case 8:
    gatherRowsKernel<8, IndexT><<<grid, block, 0, stream>>>(table, rowBytes, rows, dest, n, out,
                                                            c.groupShift, c.alignedStart);
    break;
  case 4:
    gatherRowsKernel<4, IndexT><<<grid, block, 0, stream>>>(table, rowBytes, rows, dest, n, out,
                                                            c.groupShift, c.alignedStart);
    break;
  case 2:
    gatherRowsKernel<2, IndexT><<<grid, block, 0, stream>>>(table, rowBytes, rows, dest, n, out,
                                                            c.groupShift, c.alignedStart);
    break;
  default:
    gatherRowsKernel<1, IndexT><<<grid, block, 0, stream>>>(table, rowBytes, rows, dest, n, out,
                                                            c.groupShift, c.alignedStart);
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
  const GatherConfig c =
      makeConfig(reinterpret_cast<uintptr_t>(table), reinterpret_cast<uintptr_t>(out.data_ptr()),
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
