//===- tensor_pool.cpp - Reused host memory for large kernel tensors --------===//
//
// Blocks are anonymous mappings of whole pages, rounded to 64 KiB (under 32 MiB) or 2 MiB.
// An allocation takes the smallest unused block that is at least its size and at most an
// eighth larger; otherwise it maps a new one. Freed blocks go to the back of a queue; the
// front (the block unused longest) is unmapped first when the unused bytes pass the limit,
// when a new mapping would make the pool hold more than the most its live blocks ever held
// (so the pool never raises a process's peak above what live tensors need), when it would
// leave the system short, or when a mapping fails.
//
//===----------------------------------------------------------------------===//
#include "hector/tensor_pool.h"

#include "hector/model.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace hector {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
/// Blocks from this size on are whole huge pages (kHugePage), aligned and advised as such.
constexpr int64_t kLargeBlock = 32 * kMiB, kHugePage = 2 * kMiB;

int64_t roundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

/// A quarter of the least of the machine's memory, the address-space limit and the cgroup's
/// memory limit.
int64_t defaultLimit() {
  int64_t memory = static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    memory = std::min(memory, static_cast<int64_t>(limit.rlim_cur));
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (in >> text && text != "max") {
    try {
      memory = std::min<int64_t>(memory, std::stoll(text));
    } catch (...) {
    }
  }
  return std::max<int64_t>(memory / 4, 0);
}

class Pool {
public:
  /// A block of at least `bytes`, or nullptr when the system has no memory for one.
  void *take(int64_t bytes) {
    const int64_t size = roundUp(bytes, bytes < kLargeBlock ? 64 * kKiB : kHugePage);
    std::vector<Block> evicted;
    void *ptr = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = bySize.lower_bound(size);
      if (it != bySize.end() && it->first <= size + size / 8) {
        const Block block = *it->second;
        unused.erase(it->second);
        bySize.erase(it);
        cached -= block.bytes;
        live.emplace(block.ptr, block.bytes);
        liveBytes += block.bytes;
        peakLive = std::max(peakLive, liveBytes);
        ++hits;
        ptr = block.ptr;
      } else if (cached > 0) {
        // A new mapping. Live and unused blocks together stay within the most that live
        // blocks have needed at once (this one included): unused blocks a call does not take
        // would otherwise sit resident beside the new one and raise the process's peak.
        const int64_t ceiling = std::max(peakLive, liveBytes + size);
        while (!unused.empty() && liveBytes + cached + size > ceiling)
          evicted.push_back(popOldest());
        // Then make room when the system would be left short (the block and as much again).
        const int64_t available = availableMemory(c10::Device(c10::kCPU));
        int64_t room = available < 0 ? INT64_MAX : available - cached.load();
        while (!unused.empty() && room < 2 * size) {
          room += unused.front().bytes;
          evicted.push_back(popOldest());
        }
      }
    }
    unmap(evicted);
    if (ptr) {
      poisonBlock(ptr, size);
      return ptr;
    }
    ptr = map(size);
    if (!ptr) {
      // Out of memory or address space: give back every unused block and try once more.
      emptyAll();
      ptr = map(size);
      if (!ptr)
        return nullptr;
    }
    {
      std::lock_guard<std::mutex> lock(mutex);
      live.emplace(ptr, size);
      liveBytes += size;
      peakLive = std::max(peakLive, liveBytes);
      ++misses;
    }
    poisonBlock(ptr, size);
    return ptr;
  }

  /// Takes back the block of a freed tensor.
  void give(void *ptr) {
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = live.find(ptr);
      TORCH_INTERNAL_ASSERT(it != live.end(), "hector tensor pool: unknown block");
      const Block block{ptr, it->second};
      live.erase(it);
      liveBytes -= block.bytes;
      if (block.bytes > limit) {
        evicted.push_back(block);
        ++released;
      } else {
        unused.push_back(block);
        bySize.emplace(block.bytes, std::prev(unused.end()));
        cached += block.bytes;
        while (cached > limit)
          evicted.push_back(popOldest());
      }
    }
    unmap(evicted);
  }

  void emptyAll() {
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex);
      while (!unused.empty())
        evicted.push_back(popOldest());
      peakLive = liveBytes;
    }
    unmap(evicted);
  }

  void configure(int64_t newLimit, int64_t newMin, bool newPoison) {
    std::vector<Block> evicted;
    {
      std::lock_guard<std::mutex> lock(mutex);
      limit = newLimit;
      minBytes.store(newMin);
      poison.store(newPoison);
      while (cached > limit)
        evicted.push_back(popOldest());
    }
    unmap(evicted);
  }

  TensorPoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex);
    TensorPoolStats s;
    s.cachedBytes = cached;
    s.liveBytes = liveBytes;
    s.peakLiveBytes = peakLive;
    s.limitBytes = limit;
    s.minBytes = minBytes;
    s.hits = hits;
    s.misses = misses;
    s.released = released;
    s.poison = poison;
    return s;
  }

  int64_t cachedBytes() const { return cached.load(); }
  int64_t minimum() const { return minBytes.load(); }
  bool poisoning() const { return poison.load(); }

private:
  struct Block {
    void *ptr;
    int64_t bytes;
  };

  std::mutex mutex;
  std::list<Block> unused; // oldest first
  std::multimap<int64_t, std::list<Block>::iterator> bySize;
  std::unordered_map<void *, int64_t> live;
  std::atomic<int64_t> cached{0};
  int64_t liveBytes = 0;
  int64_t peakLive = 0; // the most bytes live blocks held at once (since the pool was emptied)
  int64_t limit = defaultLimit();
  std::atomic<int64_t> minBytes{kMiB};
  std::atomic<bool> poison{false};
  int64_t hits = 0, misses = 0, released = 0;

  /// Removes the oldest unused block from the queue (the caller holds the mutex).
  Block popOldest() {
    const Block block = unused.front();
    auto range = bySize.equal_range(block.bytes);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second == unused.begin()) {
        bySize.erase(it);
        break;
      }
    unused.pop_front();
    cached -= block.bytes;
    ++released;
    return block;
  }

  /// A new mapping of `bytes` (as take() rounds them). A large block (kLargeBlock or more,
  /// whole huge pages) starts on a huge-page boundary and asks for transparent huge pages
  /// (MADV_HUGEPAGE; honoured where /sys/kernel/mm/transparent_hugepage/enabled is "madvise"
  /// or "always"): the kernels read rows of these tensors at random (gathers, scatters by
  /// node), and with 4 KiB pages a walk over a table of hundreds of MB misses the TLB on
  /// almost every row.
  static void *map(int64_t bytes) {
    const bool large = bytes >= kLargeBlock;
    // A large block maps one huge page more and trims both ends to the boundary.
    const size_t size = static_cast<size_t>(bytes), extra = large ? kHugePage : 0;
    void *raw =
        mmap(nullptr, size + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED || !large)
      return raw == MAP_FAILED ? nullptr : raw;
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + extra - 1) / extra * extra;
    if (aligned > start)
      munmap(raw, aligned - start);
    munmap(reinterpret_cast<void *>(aligned + size), start + extra - aligned); // never empty
#ifdef MADV_HUGEPAGE
    madvise(reinterpret_cast<void *>(aligned), size, MADV_HUGEPAGE); // advice: may be refused
#endif
    return reinterpret_cast<void *>(aligned);
  }

  static void unmap(const std::vector<Block> &blocks) {
    for (const Block &block : blocks)
      munmap(block.ptr, static_cast<size_t>(block.bytes));
  }

  void poisonBlock(void *ptr, int64_t bytes) const {
    if (poison.load())
      std::memset(ptr, 0xFF, static_cast<size_t>(bytes));
  }
};

/// The process's pool; never destroyed, since tensors may outlive static destructors.
Pool &pool() {
  static Pool *instance = new Pool();
  return *instance;
}

void releaseBlock(void *ptr) { pool().give(ptr); }

class PoolAllocator final : public c10::Allocator {
public:
  /// `fallback`: PyTorch's CPU allocator before the pool could replace it.
  explicit PoolAllocator(c10::Allocator *fallback) : fallback(fallback) {}

  c10::DataPtr allocate(size_t n) override {
    if (static_cast<int64_t>(n) < pool().minimum() || n == 0)
      return fallback->allocate(n);
    void *ptr = pool().take(static_cast<int64_t>(n));
    TORCH_CHECK_WITH(OutOfMemoryError, ptr != nullptr, "hector: can't allocate memory: you tried ",
                     "to allocate ", n, " bytes on the CPU (the tensor pool holds none unused)");
    return {ptr, ptr, &releaseBlock, c10::Device(c10::kCPU)};
  }

  void copy_data(void *dest, const void *src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  c10::Allocator *const fallback;
};

PoolAllocator &poolAllocator() {
  static PoolAllocator *instance = new PoolAllocator(c10::GetCPUAllocator());
  return *instance;
}

std::mutex processWideMutex;
bool processWide = false;

} // namespace

at::Tensor pooledEmpty(at::IntArrayRef sizes, const at::TensorOptions &options) {
  TORCH_CHECK(options.device().is_cpu(), "hector::pooledEmpty: CPU tensors only, got ",
              options.device());
  return at::detail::empty_generic(sizes, &poolAllocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::CPU),
                                   options.dtype().toScalarType(), std::nullopt);
}

TensorPoolStats tensorPoolStats() { return pool().stats(); }

int64_t tensorPoolCachedBytes() { return pool().cachedBytes(); }

void emptyTensorPool() { pool().emptyAll(); }

void configureTensorPool(int64_t limitBytes, int64_t minBytes, bool poison) {
  TORCH_CHECK_VALUE(limitBytes >= 0,
                    "hector.configure_tensor_pool: limit must be non-negative, got ", limitBytes);
  TORCH_CHECK_VALUE(minBytes >= 0,
                    "hector.configure_tensor_pool: min_bytes must be non-negative, got ", minBytes);
  pool().configure(limitBytes, minBytes, poison);
}

void setTensorPoolProcessWide(bool on) {
  std::lock_guard<std::mutex> lock(processWideMutex);
  if (on == processWide)
    return;
  PoolAllocator &allocator = poolAllocator();
  // The highest priority, so that no later registration of a default allocator undoes it.
  c10::SetCPUAllocator(on ? &allocator : allocator.fallback, /*priority=*/255);
  processWide = on;
}

bool tensorPoolProcessWide() {
  std::lock_guard<std::mutex> lock(processWideMutex);
  return processWide;
}

} // namespace hector

namespace {

std::vector<int64_t> tensorPoolStatsOp() {
  const hector::TensorPoolStats s = hector::tensorPoolStats();
  return {s.cachedBytes,  s.liveBytes,      s.limitBytes,
          s.minBytes,     s.hits,           s.misses,
          s.released,     s.poison ? 1 : 0, hector::tensorPoolProcessWide() ? 1 : 0,
          s.peakLiveBytes};
}

at::Tensor pooledEmptyOp(std::vector<int64_t> sizes, c10::ScalarType dtype) {
  return hector::pooledEmpty(sizes, at::TensorOptions().dtype(dtype));
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.def("tensor_pool_stats() -> int[]", &tensorPoolStatsOp);
  m.def("empty_tensor_pool() -> ()", &hector::emptyTensorPool);
  m.def("configure_tensor_pool(int limit, int min_bytes, bool poison) -> ()",
        &hector::configureTensorPool);
  m.def("pooled_empty(int[] sizes, ScalarType dtype) -> Tensor", &pooledEmptyOp);
  m.def("tensor_pool_process_wide(bool on) -> ()", &hector::setTensorPoolProcessWide);
}
