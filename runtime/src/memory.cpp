//===- memory.cpp - The memory budget of compiled-layer calls --------------===//
//
// How much memory a call may use: a budget set by the user, or a fraction of what the device
// has available now (the CPU: the system's available memory and the room under the process's
// address-space and cgroup limits, plus the tensor pool's unused blocks; CUDA: free device
// memory and the caching allocator's unused blocks). The variant choice keeps every call's
// estimated peak within it.
//
//===----------------------------------------------------------------------===//
#include "hector/model.h"
#include "hector/tensor_pool.h"

#include <torch/library.h>

#include <c10/util/Exception.h>

#ifdef HECTOR_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <string>

namespace hector {
namespace {

std::mutex budgetMutex;
std::optional<int64_t> budgetBytes;
double budgetFraction = 0.9;

/// A field of /proc/self/status or /proc/meminfo in bytes ("VmSize:", "MemAvailable:"), or -1.
int64_t procField(const char *file, const std::string &key) {
  std::ifstream in(file);
  std::string name;
  long long value = 0;
  std::string unit;
  while (in >> name) {
    if (name == key) {
      in >> value;
      return static_cast<int64_t>(value) * 1024;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return -1;
}

/// A number in a cgroup v2 file ("max" or a missing file: -1).
int64_t cgroupValue(const std::string &path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max")
    return -1;
  try {
    return std::stoll(text);
  } catch (...) {
    return -1;
  }
}

int64_t availableHost() {
  int64_t available = procField("/proc/meminfo", "MemAvailable:");
  // The address-space limit (RLIMIT_AS) leaves the difference to what is mapped already.
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    const int64_t mapped = procField("/proc/self/status", "VmSize:");
    if (mapped >= 0) {
      const int64_t room = static_cast<int64_t>(limit.rlim_cur) - mapped;
      available = available < 0 ? room : std::min(available, room);
    }
  }
  // A cgroup v2 memory limit.
  const int64_t max = cgroupValue("/sys/fs/cgroup/memory.max");
  const int64_t current = cgroupValue("/sys/fs/cgroup/memory.current");
  if (max > 0 && current >= 0) {
    const int64_t room = max - current;
    available = available < 0 ? room : std::min(available, room);
  }
  // The tensor pool's unused blocks count as used above but are there for the next call.
  return available < 0 ? available : available + tensorPoolCachedBytes();
}

} // namespace

int64_t availableMemory(const at::Device &device) {
  if (!device.is_cuda())
    return availableHost();
#ifdef HECTOR_WITH_CUDA
  c10::cuda::CUDAGuard guard(device);
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess)
    return -1;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
  const auto &reserved = stats.reserved_bytes[0].current;
  const auto &allocated = stats.allocated_bytes[0].current;
  return static_cast<int64_t>(free) + std::max<int64_t>(0, reserved - allocated);
#else
  return -1;
#endif
}

int64_t memoryBudget(const at::Device &device) {
  std::optional<int64_t> bytes;
  double fraction;
  {
    std::lock_guard<std::mutex> lock(budgetMutex);
    bytes = budgetBytes;
    fraction = budgetFraction;
  }
  if (bytes)
    return *bytes;
  const int64_t available = availableMemory(device);
  if (available < 0)
    return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(fraction * static_cast<double>(available));
}

void setMemoryBudget(std::optional<int64_t> bytes, double fraction) {
  TORCH_CHECK_VALUE(!bytes || *bytes >= 0,
                    "hector.set_memory_budget: bytes must be non-negative, "
                    "got ",
                    *bytes);
  TORCH_CHECK_VALUE(fraction > 0 && fraction <= 1,
                    "hector.set_memory_budget: fraction must be in "
                    "(0, 1], got ",
                    fraction);
  std::lock_guard<std::mutex> lock(budgetMutex);
  budgetBytes = bytes;
  budgetFraction = fraction;
}

} // namespace hector

namespace {

void setMemoryBudgetOp(std::optional<int64_t> bytes, double fraction) {
  hector::setMemoryBudget(bytes, fraction);
}

int64_t memoryBudgetOp(const std::string &device) {
  return hector::memoryBudget(at::Device(device));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.def("set_memory_budget(int? bytes=None, float fraction=0.9) -> ()", &setMemoryBudgetOp);
  m.def("memory_budget(str device=\"cpu\") -> int", &memoryBudgetOp);
}
