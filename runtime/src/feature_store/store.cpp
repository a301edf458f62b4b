//===- store.cpp - hector::FeatureStore: tiers, gathers and the prefetcher -===//
//
// A gather looks every distinct row up in the prefetches' claims, the device cache and the victim
// buffer, reads the row blocks of the rest from the file (io_uring, O_DIRECT; cuFile into GPU
// memory where asked and working), verifies each block's checksum, assembles the output, and
// then offers the rows it did not find in the cache to the cache's policy: an admitted row may
// evict another, which goes to the victim buffer, as does a row the policy does not admit.
// Gathers hold the store's lock (they are serialised); a prefetch's reads run on a background
// thread without it.
//
//===----------------------------------------------------------------------===//
#include "hector/common.h"
#include "hector/feature_store.h"

#include "../spill/device_io.h"
#include "../spill/io.h"
#include "cache.h"
#include "format.h"
#include "victim.h"
#ifdef HECTOR_WITH_CUDA
#include "fs_cuda.h"
#endif

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>

namespace hector {

using spill_io::AlignedBuffer;
using spill_io::ReadQueue;

std::string cachePolicyName(CachePolicy policy) {
  switch (policy) {
  case CachePolicy::kStatic:
    return "static";
  case CachePolicy::kDynamic:
    return "dynamic";
  case CachePolicy::kHybrid:
    return "hybrid";
  }
  return "?";
}

CachePolicy parseCachePolicy(const std::string &name) {
  if (name == "static")
    return CachePolicy::kStatic;
  if (name == "dynamic")
    return CachePolicy::kDynamic;
  if (name == "hybrid")
    return CachePolicy::kHybrid;
  TORCH_CHECK_VALUE(false,
                    "hector.FeatureStore: policy must be \"static\", \"dynamic\" or "
                    "\"hybrid\", got \"",
                    name, "\"");
}

namespace detail {

namespace {
constexpr const char *kWho = "hector.FeatureStore: ";
constexpr size_t kMaxReadBytes = size_t{1} << 20; // adjacent blocks merge into reads up to 1 MiB

using Clock = std::chrono::steady_clock;
int64_t nanosSince(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}
} // namespace

/// Row blocks a prefetch reads on the background thread.
struct PrefetchJob {
  std::vector<int64_t> blocks; ///< sorted, distinct
  std::vector<int> claims;     ///< per block: rows of it that prefetches claim
  AlignedBuffer data;          ///< blocks.size() * blockStride bytes
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
};

/// What a prefetch found for one row, for the first gather that needs it.
struct Pending {
  int64_t slot = -1;                       ///< the row's cache slot, pinned (a cache hit)
  std::shared_ptr<PrefetchJob> job;        ///< read from the file: bytes at job->data + offset
  std::shared_ptr<std::vector<char>> copy; ///< copied out of the victim buffer: copy + offset
  size_t offset = 0;
  size_t blockPos = 0; ///< with job: the row's block in job->blocks
  int claims = 1;      ///< prefetches of the row not yet matched by a gather
};

struct FeatureStoreImpl {
  FeatureStoreInfo info;
  FeatureStoreOptions options;
  std::vector<uint32_t> checksums;
  unsigned char uuid[16] = {};
  int fd = -1;
  std::atomic<bool> direct{false};
  std::string ioNote; ///< what was asked for and is not in use, and why (under noteMutex)
  mutable std::mutex noteMutex;

  // The device cache: bookkeeping, and the rows' bytes ([slots, rowBytes] uint8).
  std::unique_ptr<fs::CacheIndex> index;
  at::Tensor cache;
  char *cacheHost = nullptr; ///< cache's bytes on the pointer path (CPU cache, !tensorPath)
  bool tensorPath = false;

  std::unique_ptr<fs::VictimBuffer> victim;
  bool victimRegistered = false;

  // Reads of gathers (under `mutex`).
  std::unique_ptr<ReadQueue> demandQueue;
  AlignedBuffer demandBuffer;
  spill_io::CuFile *cufile = nullptr;
  void *cufileHandle = nullptr;

  // Prefetches.
  std::unordered_map<int64_t, Pending> pending;
  int64_t pendingBytes = 0;
  /// The row blocks prefetch jobs read, while a claim on a row of the block is outstanding: a
  /// gather or a later prefetch that needs another row of such a block takes it from there
  /// instead of reading the block again (rows smaller than a block). Only while claimed: a
  /// buffer kept for nothing else would be a cache beyond the tiers' capacities.
  std::unordered_map<int64_t, std::weak_ptr<PrefetchJob>> pendingBlocks;
  std::thread worker;
  std::mutex workMutex;
  std::condition_variable workCv;
  std::deque<std::shared_ptr<PrefetchJob>> work;
  bool stopping = false;

  std::mutex mutex; ///< the store's lock: cache, victim bookkeeping, pending, stats
  FeatureStoreStats stats;
  std::atomic<int64_t> bytesRead{0}, blocksRead{0}, readRequests{0};
  bool closed = false;

  ~FeatureStoreImpl() { shutdown(); }

  int64_t rowBytes() const { return info.rowBytes; }
  int64_t stride() const { return info.blockStride; }

  [[noreturn]] void blockError(int64_t block, const std::string &what) const {
    const int64_t first = block * info.rowsPerBlock;
    const int64_t last = std::min(info.numRows, first + info.rowsPerBlock) - 1;
    TORCH_CHECK(false, kWho, info.path, ": row block ", block, " (rows ", first, "..", last,
                "): ", what, "; no features were returned");
  }

  void dropDirect(const std::string &why) {
    if (!direct.exchange(false))
      return;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
      ::fcntl(fd, F_SETFL, flags & ~O_DIRECT);
    TORCH_WARN("hector.FeatureStore: ", info.path, ": O_DIRECT reads refused (", why,
               "); reading through the page cache");
    std::lock_guard<std::mutex> lock(noteMutex);
    ioNote += (ioNote.empty() ? "" : "; ") + std::string("O_DIRECT refused: ") + why;
  }

  /// Reads row blocks `blocks[0, nb)` (sorted, distinct) into `dst` (nb * stride bytes,
  /// 4096-aligned) and verifies their checksums. Throws naming the file and the block.
  void readBlocks(ReadQueue &queue, const int64_t *blocks, size_t nb, char *dst) {
    if (nb == 0)
      return;
    const auto blockStride = static_cast<size_t>(stride());
    std::vector<ReadQueue::Read> reads;
    std::vector<size_t> first;
    for (size_t i = 0; i < nb;) {
      size_t j = i + 1;
      while (j < nb && blocks[j] == blocks[j - 1] + 1 && (j - i + 1) * blockStride <= kMaxReadBytes)
        ++j;
      ReadQueue::Read r;
      r.fd = fd;
      r.buf = dst + i * blockStride;
      r.size = (j - i) * blockStride;
      r.offset = fs::kHeaderBytes + static_cast<uint64_t>(blocks[i]) * blockStride;
      reads.push_back(r);
      first.push_back(i);
      i = j;
    }
    queue.run(reads.data(), reads.size());
    for (size_t k = 0; k < reads.size(); ++k) {
      ReadQueue::Read &r = reads[k];
      if (r.result == -EINVAL && direct.load()) {
        dropDirect(std::strerror(EINVAL));
        r.result = spill_io::IoQueue::pread_full(r.fd, r.buf, r.size, r.offset);
      }
      if (r.result < 0)
        blockError(blocks[first[k]],
                   std::string("read failed: ") + std::strerror(static_cast<int>(-r.result)));
      if (static_cast<size_t>(r.result) < r.size) {
        const size_t bad = first[k] + static_cast<size_t>(r.result) / blockStride;
        blockError(blocks[bad], "short read at offset " +
                                    std::to_string(r.offset + static_cast<uint64_t>(r.result)) +
                                    ": got " + std::to_string(r.result) + " of " +
                                    std::to_string(r.size) +
                                    " bytes (the file is shorter than its header says)");
      }
    }
    bytesRead += static_cast<int64_t>(nb * blockStride);
    blocksRead += static_cast<int64_t>(nb);
    readRequests += static_cast<int64_t>(reads.size());
    for (size_t i = 0; i < nb; ++i)
      verifyBlock(blocks[i], dst + i * blockStride);
  }

  int64_t rowsIn(int64_t block) const {
    return std::min(info.rowsPerBlock, info.numRows - block * info.rowsPerBlock);
  }

  void verifyBlock(int64_t block, const char *data) const {
    const uint32_t crc = fs::blockChecksum(static_cast<uint64_t>(block), data,
                                           static_cast<size_t>(rowsIn(block) * rowBytes()));
    const uint32_t stored = checksums[static_cast<size_t>(block)];
    if (crc != stored)
      blockError(block, "checksum mismatch (stored " + hex32(stored) + ", computed " + hex32(crc) +
                            "): the file is corrupt");
  }

  /// Puts `row` into the victim buffer, by static level under kStatic and kHybrid (LRU under
  /// kDynamic); returns whether it is there now.
  bool putVictim(int64_t row, const char *data) {
    return victim->insert(row, data, index->level(row), options.policy != CachePolicy::kDynamic);
  }

  /// A claim on a row of a prefetch's block is gone: the block serves other rows no more once
  /// no claim is left on it.
  void releaseBlock(const std::shared_ptr<PrefetchJob> &job, size_t pos) {
    if (!job || --job->claims[pos] > 0)
      return;
    auto it = pendingBlocks.find(job->blocks[pos]);
    if (it != pendingBlocks.end() && it->second.lock() == job)
      pendingBlocks.erase(it);
  }

  /// The live prefetch job reading `block` and the block's position in it, if any.
  std::shared_ptr<PrefetchJob> jobReading(int64_t block, size_t &pos) {
    auto it = pendingBlocks.find(block);
    if (it == pendingBlocks.end())
      return nullptr;
    std::shared_ptr<PrefetchJob> job = it->second.lock();
    if (!job) {
      pendingBlocks.erase(it);
      return nullptr;
    }
    pos = static_cast<size_t>(std::lower_bound(job->blocks.begin(), job->blocks.end(), block) -
                              job->blocks.begin());
    return job;
  }

  /// Byte offset of `row` within a buffer holding its block at block position `pos`.
  size_t rowOffset(int64_t row, size_t pos) const {
    return pos * static_cast<size_t>(stride()) +
           static_cast<size_t>((row % info.rowsPerBlock) * rowBytes());
  }

  void startWorker() {
    if (worker.joinable())
      return;
    worker = std::thread([this] {
      ReadQueue queue(static_cast<unsigned>(options.ioDepth), options.useUring);
      while (true) {
        std::shared_ptr<PrefetchJob> job;
        {
          std::unique_lock<std::mutex> lock(workMutex);
          workCv.wait(lock, [&] { return stopping || !work.empty(); });
          if (work.empty())
            return;
          job = std::move(work.front());
          work.pop_front();
        }
        try {
          readBlocks(queue, job->blocks.data(), job->blocks.size(), job->data.data());
        } catch (...) {
          job->error = std::current_exception();
        }
        {
          std::lock_guard<std::mutex> lock(job->mutex);
          job->done = true;
        }
        job->cv.notify_all();
      }
    });
  }

  static void waitFor(PrefetchJob &job) {
    std::unique_lock<std::mutex> lock(job.mutex);
    job.cv.wait(lock, [&] { return job.done; });
  }

  /// Drops every claim (under `mutex`); returns the rows no gather used.
  int64_t dropPending() {
    int64_t unused = 0;
    for (auto &[row, p] : pending) {
      if (p.slot >= 0)
        index->unpin(p.slot);
      ++unused;
      if (p.job)
        waitFor(*p.job);
    }
    pending.clear();
    pendingBlocks.clear();
    pendingBytes = 0;
    return unused;
  }

  void shutdown() {
    {
      std::lock_guard<std::mutex> lock(workMutex);
      stopping = true;
    }
    workCv.notify_all();
    if (worker.joinable())
      worker.join();
    if (index)
      dropPending();
#ifdef HECTOR_WITH_CUDA
    if (victimRegistered && victim)
      fs::cuda::hostUnregister(victim->data());
#endif
    victimRegistered = false;
    if (cufile && cufileHandle)
      cufile->deregister(cufileHandle);
    cufileHandle = nullptr;
    victim.reset();
    cache = at::Tensor();
    cacheHost = nullptr;
    if (fd >= 0)
      ::close(fd);
    fd = -1;
  }

  at::Tensor gatherLocked(const at::Tensor &uniq, const at::Tensor &inverse, int64_t n,
                          const at::Device &outDevice);
#ifdef HECTOR_WITH_CUDA
  /// Rows u[rows[k]] read with cuFile into GPU memory and verified there ([k, rowBytes]), or
  /// an undefined tensor when cuFile failed (the caller reads them through host memory).
  at::Tensor readRowsCufile(const int64_t *u, const std::vector<int64_t> &rows);
#endif
  void prefetchLocked(const at::Tensor &uniq);
};

namespace {

/// Checks a gather or prefetch index: 1-D int32/int64 on the CPU or a CUDA device, in range.
/// Returns it as a contiguous CPU int64 tensor.
at::Tensor checkedIndex(const at::Tensor &index, int64_t numRows, const char *what) {
  TORCH_CHECK_TYPE(index.defined(), kWho, what, ": index is undefined (None)");
  TORCH_CHECK_TYPE(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, kWho, what,
                   ": index must be torch.int64 or torch.int32, got ",
                   dtypeName(index.scalar_type()));
  TORCH_CHECK_VALUE(index.dim() == 1, kWho, what, ": index must be 1-D, got shape ", index.sizes());
  TORCH_CHECK_VALUE(index.is_cpu() || index.is_cuda(), kWho, what,
                    ": index must be on the CPU or a CUDA device, got ",
                    deviceName(index.device()));
  at::Tensor idx = index.to(at::kCPU).to(at::kLong).contiguous();
  if (idx.numel() == 0)
    return idx;
  const int64_t *p = idx.const_data_ptr<int64_t>();
  const int64_t n = idx.numel();
  for (int64_t k = 0; k < n; ++k)
    TORCH_CHECK_VALUE(p[k] >= 0 && p[k] < numRows, kWho, what, ": index[", k, "] = ", p[k],
                      " is out of range [0, ", numRows, ") (the store has ", numRows, " rows)");
  return idx;
}

/// The static scores as levels 0..65535 on a logarithmic scale: level = 65535 * log1p(score -
/// lowest) / log1p(highest - lowest). Heavy-tailed scores (degrees, sampling counts) keep their
/// orders of magnitude apart where caching is decided, among the few rows of high score; ranks
/// would give a row of score 1 nearly the level of the top row. Equal scores, equal levels.
std::vector<uint16_t> levelsOf(const at::Tensor &scores, int64_t numRows) {
  TORCH_CHECK_TYPE(scores.defined(), kWho,
                   "the static and hybrid policies need static_scores "
                   "(one score per row, e.g. FeatureStore.degree_scores"
                   "(graph))");
  TORCH_CHECK_TYPE(!scores.is_complex() && scores.scalar_type() != at::kBool, kWho,
                   "static_scores must be real or integer, got ", dtypeName(scores.scalar_type()));
  TORCH_CHECK_VALUE(scores.dim() == 1 && scores.size(0) == numRows, kWho,
                    "static_scores must have shape [", numRows, "] (one per row), got ",
                    scores.sizes());
  const at::Tensor s = scores.to(at::kCPU).to(at::kDouble).contiguous();
  const double *v = s.const_data_ptr<double>();
  double lo = 0, hi = 0;
  for (int64_t i = 0; i < numRows; ++i) {
    TORCH_CHECK_VALUE(std::isfinite(v[i]), kWho, "static_scores[", i, "] = ", v[i],
                      " is not finite");
    lo = i ? std::min(lo, v[i]) : v[i];
    hi = i ? std::max(hi, v[i]) : v[i];
  }
  std::vector<uint16_t> levels(static_cast<size_t>(numRows), 0);
  if (numRows == 0 || hi == lo)
    return levels;
  const double top = std::log1p(hi - lo);
  for (int64_t i = 0; i < numRows; ++i)
    levels[static_cast<size_t>(i)] =
        static_cast<uint16_t>(std::lround(std::log1p(v[i] - lo) / top * 65535.0));
  return levels;
}

} // namespace

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

at::Tensor FeatureStoreImpl::gatherLocked(const at::Tensor &uniq, const at::Tensor &inverse,
                                          int64_t n, const at::Device &outDevice) {
  const int64_t U = uniq.numel();
  const int64_t *u = uniq.const_data_ptr<int64_t>();
  const auto rb = static_cast<size_t>(rowBytes());
  enum Tier : uint8_t { kCache, kVictim, kStorage };
  std::vector<int64_t> slotOf(static_cast<size_t>(U), -1);
  std::vector<const char *> hostPtr(static_cast<size_t>(U), nullptr);
  std::vector<uint8_t> tier(static_cast<size_t>(U), kCache);
  std::vector<uint8_t> fromPrefetch(static_cast<size_t>(U), 0);
  std::vector<std::shared_ptr<PrefetchJob>> jobs;
  std::vector<std::shared_ptr<std::vector<char>>> copies;
  std::vector<int64_t> unpin, rest;
  std::vector<std::pair<std::shared_ptr<PrefetchJob>, size_t>> released;
  FeatureStoreStats &st = stats;
  st.gathers += 1;
  st.rows += n;
  st.uniqueRows += U;

  // Claims of earlier prefetches, then the cache.
  for (int64_t j = 0; j < U; ++j) {
    const int64_t row = u[j];
    auto it = pending.find(row);
    if (it != pending.end()) {
      Pending &p = it->second;
      st.prefetchedRows += 1;
      fromPrefetch[static_cast<size_t>(j)] = 1;
      const bool last = --p.claims == 0;
      if (p.slot >= 0) {
        slotOf[static_cast<size_t>(j)] = p.slot;
        index->touch(p.slot);
        st.cacheHits += 1;
        if (last)
          unpin.push_back(p.slot);
      } else if (p.job) {
        hostPtr[static_cast<size_t>(j)] = p.job->data.data() + p.offset;
        tier[static_cast<size_t>(j)] = kStorage;
        st.storageRows += 1;
        if (jobs.empty() || jobs.back() != p.job)
          jobs.push_back(p.job);
      } else {
        hostPtr[static_cast<size_t>(j)] = p.copy->data() + p.offset;
        tier[static_cast<size_t>(j)] = kVictim;
        st.victimHits += 1;
        if (copies.empty() || copies.back() != p.copy)
          copies.push_back(p.copy);
      }
      if (last) {
        if (p.slot < 0)
          pendingBytes -= rowBytes();
        if (p.job) // released after this gather's own reads, which may use the block
          released.emplace_back(p.job, p.blockPos);
        pending.erase(it);
      }
      continue;
    }
    const int64_t slot = index->lookup(row);
    if (slot >= 0) {
      slotOf[static_cast<size_t>(j)] = slot;
      index->touch(slot);
      st.cacheHits += 1;
      continue;
    }
    rest.push_back(j);
  }
  // Slots whose last claim this gather used are released however it ends.
  struct Unpin {
    fs::CacheIndex &index;
    std::vector<int64_t> &slots;
    ~Unpin() {
      for (int64_t s : slots)
        index.unpin(s);
    }
  } unpinGuard{*index, unpin};

  // The victim buffer, then the file.
  std::vector<int64_t> fromFile;
  std::vector<char> victimCopies; // grows with the hits; pointers are taken once it is complete
  if (!rest.empty()) {
    if (victim) {
      std::vector<int64_t> hits;
      for (int64_t j : rest) {
        victimCopies.resize((hits.size() + 1) * rb);
        if (victim->lookup(u[j], victimCopies.data() + hits.size() * rb)) {
          hits.push_back(j);
          tier[static_cast<size_t>(j)] = kVictim;
          st.victimHits += 1;
        } else {
          fromFile.push_back(j);
        }
      }
      for (size_t k = 0; k < hits.size(); ++k)
        hostPtr[static_cast<size_t>(hits[k])] = victimCopies.data() + k * rb;
    } else {
      fromFile = rest;
    }
  }
  const auto started = Clock::now();
  // With cuFile the file's rows go straight into GPU memory (fileRows, in fromFile's order).
  at::Tensor fileRows;
#ifdef HECTOR_WITH_CUDA
  if (!fromFile.empty() && cufile && tensorPath && cache.is_cuda()) {
    fileRows = readRowsCufile(u, fromFile);
    if (fileRows.defined()) {
      for (int64_t j : fromFile)
        tier[static_cast<size_t>(j)] = kStorage;
      st.storageRows += static_cast<int64_t>(fromFile.size());
    }
  }
#endif
  if (!fromFile.empty() && !fileRows.defined() && !pendingBlocks.empty()) {
    // Rows of blocks that a prefetch reads anyway (for other rows of the same block).
    std::vector<int64_t> still;
    for (int64_t j : fromFile) {
      size_t pos = 0;
      if (auto job = jobReading(u[j] / info.rowsPerBlock, pos)) {
        hostPtr[static_cast<size_t>(j)] = job->data.data() + rowOffset(u[j], pos);
        tier[static_cast<size_t>(j)] = kStorage;
        st.storageRows += 1;
        st.prefetchedRows += 1;
        if (std::find(jobs.begin(), jobs.end(), job) == jobs.end())
          jobs.push_back(std::move(job));
      } else {
        still.push_back(j);
      }
    }
    fromFile.swap(still);
  }
  for (const auto &[job, pos] : released)
    releaseBlock(job, pos);
  if (!fromFile.empty() && !fileRows.defined()) {
    std::vector<int64_t> blocks;
    std::vector<size_t> blockPos(fromFile.size());
    for (size_t k = 0; k < fromFile.size(); ++k) {
      const int64_t b = u[fromFile[k]] / info.rowsPerBlock;
      if (blocks.empty() || blocks.back() != b)
        blocks.push_back(b); // rows are sorted, so blocks are too
      blockPos[k] = blocks.size() - 1;
    }
    const size_t need = blocks.size() * static_cast<size_t>(stride());
    if (demandBuffer.size() < need)
      demandBuffer = AlignedBuffer(std::max(need, demandBuffer.size() * 3 / 2));
    readBlocks(*demandQueue, blocks.data(), blocks.size(), demandBuffer.data());
    for (size_t k = 0; k < fromFile.size(); ++k) {
      const int64_t j = fromFile[k];
      hostPtr[static_cast<size_t>(j)] = demandBuffer.data() + rowOffset(u[j], blockPos[k]);
      tier[static_cast<size_t>(j)] = kStorage;
    }
    st.storageRows += static_cast<int64_t>(fromFile.size());
  }
  for (const auto &job : jobs) {
    waitFor(*job);
    if (job->error)
      std::rethrow_exception(job->error);
  }
  st.stallNs += nanosSince(started);

  // The output.
  const int64_t *inv = inverse.const_data_ptr<int64_t>();
  std::vector<int64_t> shape{n};
  shape.insert(shape.end(), info.rowShape.begin(), info.rowShape.end());
  const bool shared = victim && victim->shared();
  // A row the cache does not admit goes to the victim buffer, unless it was found there just now
  // (then it is still there, renewed).
  auto keepsInVictim = [&](int64_t j) {
    return tier[static_cast<size_t>(j)] != kVictim || fromPrefetch[static_cast<size_t>(j)];
  };
  at::Tensor out;
  if (!tensorPath) {
    std::vector<const char *> src(static_cast<size_t>(U));
    for (int64_t j = 0; j < U; ++j)
      src[static_cast<size_t>(j)] = slotOf[static_cast<size_t>(j)] >= 0
                                        ? cacheHost + slotOf[static_cast<size_t>(j)] * rb
                                        : hostPtr[static_cast<size_t>(j)];
    const bool pin = outDevice.is_cuda();
    at::Tensor bytes =
        at::empty({n, static_cast<int64_t>(rb)}, at::TensorOptions(at::kByte).pinned_memory(pin));
    char *dst = static_cast<char *>(bytes.data_ptr());
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / static_cast<int64_t>(rb));
    at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
      for (int64_t k = begin; k < end; ++k)
        std::memcpy(dst + k * rb, src[static_cast<size_t>(inv[k])], rb);
    });
    out = bytes.view(info.dtype).view(shape);
    // Admission: in row order, each row not found in the cache is offered to the policy.
    for (int64_t j = 0; j < U; ++j) {
      if (slotOf[static_cast<size_t>(j)] >= 0)
        continue;
      const int64_t row = u[j];
      const char *data = hostPtr[static_cast<size_t>(j)];
      int64_t evicted = -1;
      const int64_t slot = index->admit(row, evicted);
      if (slot >= 0) {
        char *cell = cacheHost + slot * static_cast<int64_t>(rb);
        if (evicted >= 0) {
          st.cacheEvictions += 1;
          if (victim && putVictim(evicted, cell))
            st.victimInserts += 1;
        }
        std::memcpy(cell, data, rb);
        st.cacheAdmissions += 1;
        if (tier[static_cast<size_t>(j)] == kVictim && victim && !shared)
          victim->erase(row); // exclusive: the row now lives in the cache
      } else if (victim && keepsInVictim(j)) {
        if (putVictim(row, data))
          st.victimInserts += 1;
      }
      if (shared && slot >= 0 && tier[static_cast<size_t>(j)] == kStorage) {
        if (putVictim(row, data)) // the other processes find it without reading it again
          st.victimInserts += 1;
      }
    }
    return outDevice.is_cpu() ? out : out.to(outDevice, /*non_blocking=*/true);
  }

  // The device-cache path: ATen index operations on the cache tensor (GPU memory on CUDA).
  const at::Device dev = cache.device();
  const auto byteOpts = at::TensorOptions(at::kByte).device(dev);
  const auto longOpts = at::TensorOptions(at::kLong);
  auto onDevice = [&](const std::vector<int64_t> &v) { return at::tensor(v, longOpts).to(dev); };
  // Rows not found in the cache, in row order, with their bytes in `staged` (same order): from
  // host memory (victim buffer, prefetches, reads into host memory), or from fileRows (cuFile).
  std::vector<int64_t> hitPos, hitSlot, otherPos, hostK, hostJ, fileK;
  std::vector<char> isFile(static_cast<size_t>(U), 0);
  if (fileRows.defined())
    for (int64_t j : fromFile)
      isFile[static_cast<size_t>(j)] = 1;
  for (int64_t j = 0; j < U; ++j) {
    if (slotOf[static_cast<size_t>(j)] >= 0) {
      hitPos.push_back(j);
      hitSlot.push_back(slotOf[static_cast<size_t>(j)]);
      continue;
    }
    const auto k = static_cast<int64_t>(otherPos.size());
    otherPos.push_back(j);
    if (isFile[static_cast<size_t>(j)]) {
      fileK.push_back(k);
    } else {
      hostK.push_back(k);
      hostJ.push_back(j);
    }
  }
  at::Tensor rowsU = at::empty({U, static_cast<int64_t>(rb)}, byteOpts);
  if (!hitPos.empty())
    rowsU.index_copy_(0, onDevice(hitPos), cache.index_select(0, onDevice(hitSlot)));
  at::Tensor staged;
  if (!otherPos.empty()) {
    staged = at::empty({static_cast<int64_t>(otherPos.size()), static_cast<int64_t>(rb)}, byteOpts);
    if (!hostK.empty()) {
      at::Tensor host = at::empty({static_cast<int64_t>(hostK.size()), static_cast<int64_t>(rb)},
                                  at::TensorOptions(at::kByte).pinned_memory(dev.is_cuda()));
      char *h = static_cast<char *>(host.data_ptr());
      for (size_t k = 0; k < hostJ.size(); ++k)
        std::memcpy(h + k * rb, hostPtr[static_cast<size_t>(hostJ[k])], rb);
      staged.index_copy_(0, onDevice(hostK), host.to(dev, /*non_blocking=*/true));
    }
    if (!fileK.empty())
      staged.index_copy_(0, onDevice(fileK), fileRows);
    rowsU.index_copy_(0, onDevice(otherPos), staged);
  }
  out = rowsU.index_select(0, inverse.to(dev)).view(info.dtype).view(shape);

  // Admission, decided first on the bookkeeping, then applied to the tensor: the evicted rows
  // that were cached before this gather are read out before anything overwrites their slots.
  std::vector<int64_t> oldSlots, oldRows;            // evicted rows cached before this gather
  std::unordered_map<int64_t, int64_t> admittedHere; // row -> k (position in otherPos)
  std::vector<int64_t> toVictim;                     // k
  std::unordered_map<int64_t, int64_t> finalWrite;   // slot -> k
  for (size_t k = 0; k < otherPos.size(); ++k) {
    const int64_t j = otherPos[k];
    const int64_t row = u[j];
    int64_t evicted = -1;
    const int64_t slot = index->admit(row, evicted);
    if (slot < 0) {
      if (victim && keepsInVictim(j))
        toVictim.push_back(static_cast<int64_t>(k));
      continue;
    }
    st.cacheAdmissions += 1;
    if (evicted >= 0) {
      st.cacheEvictions += 1;
      auto it = admittedHere.find(evicted);
      if (it != admittedHere.end()) {
        toVictim.push_back(it->second);
        admittedHere.erase(it);
      } else {
        oldSlots.push_back(slot);
        oldRows.push_back(evicted);
      }
    }
    admittedHere[row] = static_cast<int64_t>(k);
    finalWrite[slot] = static_cast<int64_t>(k);
    if (tier[static_cast<size_t>(j)] == kVictim && victim && !shared)
      victim->erase(row);
    if (shared && tier[static_cast<size_t>(j)] == kStorage)
      toVictim.push_back(static_cast<int64_t>(k));
  }
  if (victim && !oldSlots.empty()) {
    const at::Tensor old = cache.index_select(0, onDevice(oldSlots)).cpu();
    const char *o = static_cast<const char *>(old.const_data_ptr());
    for (size_t k = 0; k < oldRows.size(); ++k)
      if (putVictim(oldRows[k], o + k * rb))
        st.victimInserts += 1;
  }
  if (!finalWrite.empty()) {
    std::vector<int64_t> slots, positions;
    for (const auto &[slot, k] : finalWrite) {
      slots.push_back(slot);
      positions.push_back(k);
    }
    cache.index_copy_(0, onDevice(slots), staged.index_select(0, onDevice(positions)));
  }
  if (victim && !toVictim.empty()) {
    // Bytes of rows that only exist on the device (cuFile) come back in one copy.
    std::vector<int64_t> deviceOnly;
    for (int64_t k : toVictim)
      if (isFile[static_cast<size_t>(otherPos[static_cast<size_t>(k)])])
        deviceOnly.push_back(k);
    at::Tensor back;
    std::unordered_map<int64_t, size_t> backAt;
    if (!deviceOnly.empty()) {
      back = staged.index_select(0, onDevice(deviceOnly)).cpu();
      for (size_t i = 0; i < deviceOnly.size(); ++i)
        backAt[deviceOnly[i]] = i;
    }
    for (int64_t k : toVictim) {
      const int64_t j = otherPos[static_cast<size_t>(k)];
      const char *data = isFile[static_cast<size_t>(j)]
                             ? static_cast<const char *>(back.const_data_ptr()) + backAt[k] * rb
                             : hostPtr[static_cast<size_t>(j)];
      if (putVictim(u[j], data))
        st.victimInserts += 1;
    }
  }
#ifdef HECTOR_WITH_CUDA
  // The cache's slots are rewritten by later gathers, perhaps on other streams: finish reading
  // them here.
  if (dev.is_cuda())
    fs::cuda::synchronizeCurrentStream(dev);
#endif
  return out.device() == outDevice ? out : out.to(outDevice);
}

#ifdef HECTOR_WITH_CUDA
at::Tensor FeatureStoreImpl::readRowsCufile(const int64_t *u, const std::vector<int64_t> &rows) {
  // The rows' blocks (sorted, distinct), read with cuFile into one GPU buffer.
  std::vector<int64_t> blocks, blockPos, within, lengths;
  for (int64_t j : rows) {
    const int64_t b = u[j] / info.rowsPerBlock;
    if (blocks.empty() || blocks.back() != b)
      blocks.push_back(b);
    blockPos.push_back(static_cast<int64_t>(blocks.size()) - 1);
    within.push_back(u[j] % info.rowsPerBlock);
  }
  const auto nb = static_cast<int64_t>(blocks.size());
  const at::Device dev = cache.device();
  at::Tensor buffer = at::empty({nb, stride()}, at::TensorOptions(at::kByte).device(dev));
  char *base = static_cast<char *>(buffer.data_ptr());
  fs::cuda::synchronizeCurrentStream(dev); // cuFile reads are not stream-ordered
  for (int64_t i = 0; i < nb;) {
    int64_t k = i + 1;
    while (k < nb && blocks[k] == blocks[k - 1] + 1 &&
           static_cast<size_t>((k - i + 1) * stride()) <= kMaxReadBytes)
      ++k;
    const auto size = static_cast<size_t>((k - i) * stride());
    const uint64_t offset = fs::kHeaderBytes + static_cast<uint64_t>(blocks[i] * stride());
    const int64_t got = cufile->read(cufileHandle, base + i * stride(), size, offset);
    if (got < 0) {
      // cuFile itself failed: this store stops using it (the reads go through host memory).
      const std::string why = "cuFileRead failed with " + std::to_string(got);
      TORCH_WARN("hector.FeatureStore: ", info.path, ": ", why,
                 "; reading with io_uring into pinned host memory from now on");
      {
        std::lock_guard<std::mutex> lock(noteMutex);
        ioNote += (ioNote.empty() ? "" : "; ") + why;
      }
      cufile->deregister(cufileHandle);
      cufileHandle = nullptr;
      cufile = nullptr;
      return at::Tensor();
    }
    if (static_cast<size_t>(got) < size)
      blockError(blocks[i + got / stride()],
                 "short read at offset " + std::to_string(offset + static_cast<uint64_t>(got)) +
                     ": got " + std::to_string(got) + " of " + std::to_string(size) +
                     " bytes (the file is shorter than its header says)");
    i = k;
  }
  bytesRead += nb * stride();
  blocksRead += nb;
  // Checksums where the bytes are.
  for (int64_t b : blocks)
    lengths.push_back(rowsIn(b) * rowBytes());
  std::vector<int64_t> expected;
  for (int64_t b : blocks)
    expected.push_back(static_cast<int64_t>(checksums[static_cast<size_t>(b)]));
  const auto longOpts = at::TensorOptions(at::kLong);
  const at::Tensor crc =
      fs::cuda::blockChecksums(buffer, at::tensor(blocks, longOpts), at::tensor(lengths, longOpts));
  const at::Tensor want = at::tensor(expected, longOpts).to(dev);
  const at::Tensor bad = crc.ne(want);
  if (bad.any().item<bool>()) {
    const int64_t i = bad.to(at::kByte).argmax().item<int64_t>();
    blockError(blocks[static_cast<size_t>(i)],
               "checksum mismatch (stored " +
                   hex32(static_cast<uint32_t>(expected[static_cast<size_t>(i)])) + ", computed " +
                   hex32(static_cast<uint32_t>(crc[i].item<int64_t>())) +
                   ", on the GPU): the file is corrupt");
  }
  // Row r of block position p sits at p * stride + within * rowBytes.
  const at::Tensor view =
      buffer.as_strided({nb, info.rowsPerBlock, rowBytes()}, {stride(), rowBytes(), 1});
  return view.index({at::tensor(blockPos, longOpts).to(dev), at::tensor(within, longOpts).to(dev)});
}
#endif

//===----------------------------------------------------------------------===//
// Prefetch
//===----------------------------------------------------------------------===//

void FeatureStoreImpl::prefetchLocked(const at::Tensor &uniq) {
  const int64_t U = uniq.numel();
  const int64_t *u = uniq.const_data_ptr<int64_t>();
  const auto rb = static_cast<size_t>(rowBytes());
  stats.prefetches += 1;
  std::vector<int64_t> candidates;
  for (int64_t j = 0; j < U; ++j) {
    const int64_t row = u[j];
    auto it = pending.find(row);
    if (it != pending.end()) {
      it->second.claims += 1;
      continue;
    }
    const int64_t slot = index->lookup(row);
    if (slot >= 0) {
      index->pin(slot);
      Pending p;
      p.slot = slot;
      pending.emplace(row, std::move(p));
      continue;
    }
    if (pendingBytes + static_cast<int64_t>(candidates.size() + 1) * rowBytes() >
        options.prefetchBytes)
      continue; // over the bound: the gather reads it itself
    candidates.push_back(row);
  }
  if (candidates.empty())
    return;
  // The victim buffer now, before the gathers in between can push the rows out of it.
  std::vector<int64_t> fromFile;
  if (victim) {
    // The copies grow with the hits (claims keep offsets, not pointers): the buffer holds
    // only the rows found, not room for every candidate.
    auto copy = std::make_shared<std::vector<char>>();
    size_t used = 0;
    for (int64_t row : candidates) {
      copy->resize((used + 1) * rb);
      if (victim->lookup(row, copy->data() + used * rb)) {
        Pending p;
        p.copy = copy;
        p.offset = used * rb;
        pending.emplace(row, std::move(p));
        pendingBytes += rowBytes();
        ++used;
      } else {
        fromFile.push_back(row);
      }
    }
    copy->resize(used * rb);
    copy->shrink_to_fit();
  } else {
    fromFile = std::move(candidates);
  }
  if (fromFile.empty())
    return;
  if (pendingBlocks.size() > 4096) // forget the blocks of jobs no claim keeps
    for (auto it = pendingBlocks.begin(); it != pendingBlocks.end();)
      it = it->second.expired() ? pendingBlocks.erase(it) : std::next(it);
  auto job = std::make_shared<PrefetchJob>();
  std::vector<size_t> blockPos(fromFile.size());
  std::vector<std::shared_ptr<PrefetchJob>> owner(fromFile.size());
  for (size_t k = 0; k < fromFile.size(); ++k) {
    const int64_t b = fromFile[k] / info.rowsPerBlock;
    size_t pos = 0;
    if (auto earlier = jobReading(b, pos)) { // an earlier prefetch reads this block already
      owner[k] = std::move(earlier);
      blockPos[k] = pos;
      continue;
    }
    if (job->blocks.empty() || job->blocks.back() != b)
      job->blocks.push_back(b);
    blockPos[k] = job->blocks.size() - 1;
  }
  job->data = AlignedBuffer(job->blocks.size() * static_cast<size_t>(stride()));
  job->claims.assign(job->blocks.size(), 0);
  for (size_t k = 0; k < fromFile.size(); ++k) {
    Pending p;
    p.job = owner[k] ? owner[k] : job;
    p.offset = rowOffset(fromFile[k], blockPos[k]);
    p.blockPos = blockPos[k];
    p.job->claims[blockPos[k]] += 1;
    pending.emplace(fromFile[k], std::move(p));
    pendingBytes += rowBytes();
  }
  if (job->blocks.empty())
    return;
  for (int64_t b : job->blocks)
    pendingBlocks[b] = job;
  startWorker();
  {
    std::lock_guard<std::mutex> lock(workMutex);
    work.push_back(std::move(job));
  }
  workCv.notify_one();
}

} // namespace detail

//===----------------------------------------------------------------------===//
// FeatureStore
//===----------------------------------------------------------------------===//

FeatureStore::FeatureStore(const std::string &path, FeatureStoreOptions options)
    : impl_(std::make_unique<detail::FeatureStoreImpl>()) {
  using detail::kWho;
  auto &s = *impl_;
  TORCH_CHECK_VALUE(options.cacheBytes >= 0 && options.victimBytes >= 0, kWho,
                    "cache_bytes and victim_bytes must be >= 0, got ", options.cacheBytes, " and ",
                    options.victimBytes);
  TORCH_CHECK_VALUE(options.ioDepth >= 1 && options.ioDepth <= 4096, kWho,
                    "io_depth must be in [1, 4096], got ", options.ioDepth);
  TORCH_CHECK_VALUE(options.prefetchBytes >= 0, kWho, "prefetch_bytes must be >= 0");
  TORCH_CHECK_VALUE(std::isfinite(options.staticWeight) && options.staticWeight >= 0 &&
                        options.staticWeight <= 254,
                    kWho, "static_weight must be in [0, 254], got ", options.staticWeight);
  TORCH_CHECK_VALUE(options.cacheDevice.is_cpu() || options.cacheDevice.is_cuda(), kWho,
                    "cache_device must be the CPU or a CUDA device, got ",
                    deviceName(options.cacheDevice));
  s.info.path = path;
  bool isDirect = false;
  s.fd =
      spill_io::open_maybe_direct(path.c_str(), O_RDONLY | O_CLOEXEC, options.directIo, isDirect);
  TORCH_CHECK(s.fd >= 0, kWho, "cannot open ", path, ": ", std::strerror(errno));
  s.direct = isDirect;
  if (options.directIo && !isDirect)
    s.ioNote = "O_DIRECT refused by the file system";

  auto fail = [&](const std::string &why) {
    ::close(s.fd);
    s.fd = -1;
    TORCH_CHECK(false, kWho, path, ": ", why);
  };
  AlignedBuffer header(fs::kHeaderBytes);
  const int64_t got = spill_io::IoQueue::pread_full(s.fd, header.data(), fs::kHeaderBytes, 0);
  if (got < 0)
    fail(std::string("cannot read the header: ") + std::strerror(static_cast<int>(-got)));
  if (got < static_cast<int64_t>(fs::kHeaderBytes))
    fail("too short for a store (" + std::to_string(got) + " bytes, no complete header)");
  fs::FileHeader h{};
  const std::string bad = fs::decodeHeader(header.data(), h);
  if (!bad.empty())
    fail(bad);
  struct stat st {};
  if (::fstat(s.fd, &st) != 0)
    fail(std::string("fstat: ") + std::strerror(errno));
  if (static_cast<uint64_t>(st.st_size) < h.fileBytes)
    fail("the file has " + std::to_string(st.st_size) + " bytes but its header says " +
         std::to_string(h.fileBytes) + " (truncated?)");
  fs::dtypeFromCode(h.dtypeCode, s.info.dtype);
  s.info.numRows = static_cast<int64_t>(h.numRows);
  s.info.rowShape.assign(h.rowShape, h.rowShape + h.rowDims);
  s.info.width = static_cast<int64_t>(h.rowBytes / h.elementBytes);
  s.info.rowBytes = static_cast<int64_t>(h.rowBytes);
  s.info.rowsPerBlock = static_cast<int64_t>(h.rowsPerBlock);
  s.info.blockStride = static_cast<int64_t>(h.blockStride);
  s.info.numBlocks = static_cast<int64_t>(h.numBlocks);
  s.info.fileBytes = static_cast<int64_t>(h.fileBytes);
  std::memcpy(s.uuid, h.uuid, 16);
  char hex[33];
  for (int i = 0; i < 16; ++i)
    std::snprintf(hex + 2 * i, 3, "%02x", h.uuid[i]);
  s.info.uuid = hex;

  // The layout asked for must be the file's.
  if ((options.expectWidth && *options.expectWidth != s.info.width) ||
      (options.expectDtype && *options.expectDtype != s.info.dtype)) {
    const std::string asked =
        std::string(options.expectWidth ? "width " + std::to_string(*options.expectWidth) : "") +
        (options.expectWidth && options.expectDtype ? ", " : "") +
        (options.expectDtype ? dtypeName(*options.expectDtype) : "");
    ::close(s.fd);
    s.fd = -1;
    TORCH_CHECK_VALUE(false, kWho, path, " holds rows of width ", s.info.width, " (shape ",
                      fs::rowShapeText(s.info.rowShape), ") and dtype ", dtypeName(s.info.dtype),
                      " but was opened as ", asked, ": refused");
  }

  // The checksum table.
  if (h.numBlocks) {
    AlignedBuffer table(static_cast<size_t>(h.checksumBytes));
    const int64_t n =
        spill_io::IoQueue::pread_full(s.fd, table.data(), table.size(), h.checksumOffset);
    if (n < static_cast<int64_t>(table.size()))
      fail("cannot read the checksum table" +
           (n < 0 ? std::string(": ") + std::strerror(static_cast<int>(-n)) : " (short read)"));
    if (spill_io::crc32c(0, table.data(), h.checksumBytes) != h.checksumTableCrc)
      fail("the checksum table is corrupt (its CRC32C does not match the header's)");
    s.checksums.resize(h.numBlocks);
    std::memcpy(s.checksums.data(), table.data(), h.checksumBytes);
  }

  // Tiers.
  s.options = options;
  const int64_t cacheRows = std::min(options.cacheBytes / s.info.rowBytes, s.info.numRows);
  const int64_t victimRows = std::min(options.victimBytes / s.info.rowBytes, s.info.numRows);
  std::vector<uint16_t> levels;
  if (options.policy != CachePolicy::kDynamic)
    levels = detail::levelsOf(options.staticScores, s.info.numRows);
  s.index = std::make_unique<fs::CacheIndex>(cacheRows, options.policy, std::move(levels),
                                             options.staticWeight);
  s.tensorPath = options.cacheDevice.is_cuda() || options.tensorPath;
  if (options.cacheDevice.is_cuda()) {
    TORCH_CHECK(at::hasCUDA(), kWho, "cache_device ", deviceName(options.cacheDevice),
                " asked for, but CUDA is not available (this runtime or this machine has none)");
  }
  s.cache = at::empty({cacheRows, s.info.rowBytes},
                      at::TensorOptions(at::kByte).device(options.cacheDevice));
  if (!s.tensorPath)
    s.cacheHost = static_cast<char *>(s.cache.data_ptr());
  if (victimRows > 0) {
    s.victim = std::make_unique<fs::VictimBuffer>(victimRows, s.info.rowBytes, s.uuid,
                                                  options.sharedVictim);
#ifdef HECTOR_WITH_CUDA
    if (options.cacheDevice.is_cuda()) {
      std::string why;
      s.victimRegistered = fs::cuda::hostRegister(s.victim->data(), s.victim->dataBytes(), why);
      if (!s.victimRegistered)
        s.ioNote += (s.ioNote.empty() ? "" : "; ") + ("victim buffer not page-locked: " + why);
    }
#endif
  } else {
    TORCH_CHECK_VALUE(options.sharedVictim.empty(), kWho,
                      "shared_victim needs victim_bytes of at least one row (", s.info.rowBytes,
                      " bytes)");
  }
  s.demandQueue =
      std::make_unique<ReadQueue>(static_cast<unsigned>(options.ioDepth), options.useUring);
  if (options.useUring && !s.demandQueue->uring())
    s.ioNote += (s.ioNote.empty() ? "" : "; ") + std::string("io_uring not available");
  if (options.cacheDevice.is_cuda() && options.useCufile) {
    spill_io::CuFile::prepare_environment();
    std::string why;
    s.cufile = spill_io::CuFile::get();
    if (!s.cufile) {
      why = spill_io::CuFile::status();
    } else {
      int err = 0;
      s.cufileHandle = s.cufile->register_fd(s.fd, &err);
      if (!s.cufileHandle)
        why = "cuFileHandleRegister refused the store file (error " + std::to_string(err) + ")";
    }
    if (!why.empty()) {
      s.cufile = nullptr;
      s.ioNote += (s.ioNote.empty() ? "" : "; ") + ("cuFile not used: " + why);
      TORCH_WARN("hector.FeatureStore: ", path, ": cuFile not used (", why,
                 "); misses are read with ", s.demandQueue->uring() ? "io_uring" : "pread",
                 " into pinned host memory");
    }
  }
}

FeatureStore::~FeatureStore() = default;

detail::FeatureStoreImpl &FeatureStore::impl() const {
  TORCH_CHECK(impl_ && !impl_->closed, detail::kWho, "the store is closed");
  return *impl_;
}

at::Tensor FeatureStore::gather(const at::Tensor &index) {
  auto &s = impl();
  const at::Tensor idx = detail::checkedIndex(index, s.info.numRows, "gather");
  const int64_t n = idx.numel();
  if (n == 0) {
    std::vector<int64_t> shape{0};
    shape.insert(shape.end(), s.info.rowShape.begin(), s.info.rowShape.end());
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stats.gathers += 1;
    return at::empty(shape, at::TensorOptions(s.info.dtype).device(index.device()));
  }
  auto [uniq, inverse, counts] = at::_unique2(idx, /*sorted=*/true, /*return_inverse=*/true,
                                              /*return_counts=*/false);
  (void)counts;
  std::lock_guard<std::mutex> lock(s.mutex);
  TORCH_CHECK(!s.closed, detail::kWho, "the store is closed");
  return s.gatherLocked(uniq.contiguous(), inverse.contiguous(), n, index.device());
}

void FeatureStore::prefetch(const at::Tensor &index) {
  auto &s = impl();
  const at::Tensor idx = detail::checkedIndex(index, s.info.numRows, "prefetch");
  if (idx.numel() == 0)
    return;
  const at::Tensor uniq = std::get<0>(at::_unique2(idx, true, false, false)).contiguous();
  std::lock_guard<std::mutex> lock(s.mutex);
  TORCH_CHECK(!s.closed, detail::kWho, "the store is closed");
  s.prefetchLocked(uniq);
}

void FeatureStore::cancelPrefetch() {
  auto &s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.prefetchUnusedRows += s.dropPending();
}

const FeatureStoreInfo &FeatureStore::info() const { return impl().info; }

FeatureStoreStats FeatureStore::stats() const {
  auto &s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  FeatureStoreStats out = s.stats;
  out.bytesRead = s.bytesRead.load();
  out.blocksRead = s.blocksRead.load();
  out.readRequests = s.readRequests.load();
  return out;
}

void FeatureStore::resetStats() {
  auto &s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats = FeatureStoreStats{};
  s.bytesRead = 0;
  s.blocksRead = 0;
  s.readRequests = 0;
}

int64_t FeatureStore::cacheRows() const { return impl().index->slots(); }

int64_t FeatureStore::victimRows() const {
  auto &s = impl();
  return s.victim ? s.victim->capacity() : 0;
}

std::string FeatureStore::ioMode() const {
  auto &s = impl();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string mode = s.cufile ? "cuFile (misses of gathers), " : "";
  mode += s.demandQueue->uring() ? "io_uring" : "pread";
  mode += s.direct.load() ? ", O_DIRECT" : ", buffered";
  std::lock_guard<std::mutex> noteLock(s.noteMutex);
  if (!s.ioNote.empty())
    mode += " (" + s.ioNote + ")";
  return mode;
}

std::string FeatureStore::victimName() const {
  auto &s = impl();
  return s.victim && s.victim->shared() ? s.victim->path() : "";
}

void FeatureStore::close() {
  if (!impl_ || impl_->closed)
    return;
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->closed = true;
  }
  impl_->shutdown();
}

} // namespace hector
