//===- victim.cpp - The victim buffer (private or in shared memory) -------===//
#include "victim.h"

#include "../spill/io.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace hector::fs {

namespace {
constexpr char kVictimMagic[8] = {'H', 'F', 'S', 'V', 'I', 'C', 'T', '2'};
constexpr int kMaxWays = 8;
constexpr const char *kWho = "hector.FeatureStore: ";

uint64_t mixRow(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

size_t roundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

bool validName(const std::string &name) {
  if (name.empty() || name.size() > 200)
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return name != "." && name != "..";
}
} // namespace

struct VictimBuffer::Header {
  char magic[8];
  unsigned char uuid[16];
  uint64_t rowBytes, sets, ways, setsOffset, dataOffset, totalBytes;
  std::atomic<uint64_t> clock;
  std::atomic<uint32_t> ready;
  std::atomic<int32_t> users;
};

struct alignas(64) VictimBuffer::Set {
  pthread_mutex_t mutex;
  int64_t rows[kMaxWays];
  uint64_t stamps[kMaxWays];
  uint16_t levels[kMaxWays]; ///< static levels of the rows (replacement by level)
};

VictimBuffer::VictimBuffer(int64_t rows, int64_t rowBytes, const unsigned char *uuid,
                           const std::string &sharedName)
    : rowBytes_(rowBytes) {
  TORCH_INTERNAL_ASSERT(rows > 0 && rowBytes > 0);
  ways_ = std::min<int64_t>(kMaxWays, rows);
  sets_ = rows / ways_;
  const size_t setsOffset = roundUp(sizeof(Header), 64);
  const size_t dataOffset = roundUp(setsOffset + sizeof(Set) * static_cast<size_t>(sets_), 4096);
  size_t total = dataOffset + static_cast<size_t>(sets_ * ways_ * rowBytes_);

  const bool sharedMode = !sharedName.empty();
  int fd = -1;
  bool init = true;
  if (sharedMode) {
    TORCH_CHECK_VALUE(validName(sharedName), kWho,
                      "shared_victim must be a name of letters, "
                      "digits, '.', '_' and '-' (at most 200), got \"",
                      sharedName, "\"");
    shmName_ = "/hector-fs-" + sharedName;
    shmPath_ = "/dev/shm" + shmName_;
    fd = ::shm_open(shmName_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      creator_ = true;
      spill_io::register_cleanup_path(shmPath_);
      if (::ftruncate(fd, static_cast<off_t>(total)) != 0) {
        const int err = errno;
        ::close(fd);
        ::shm_unlink(shmName_.c_str());
        spill_io::unregister_cleanup_path(shmPath_);
        TORCH_CHECK(false, kWho, "cannot size the shared victim buffer ", shmPath_, " to ", total,
                    " bytes: ", std::strerror(err));
      }
    } else {
      TORCH_CHECK(errno == EEXIST, kWho, "cannot create the shared victim buffer ", shmPath_, ": ",
                  std::strerror(errno));
      fd = ::shm_open(shmName_.c_str(), O_RDWR | O_CLOEXEC, 0600);
      TORCH_CHECK(fd >= 0, kWho, "cannot open the shared victim buffer ", shmPath_, ": ",
                  std::strerror(errno));
      init = false;
      // The creator sizes it right after creating it: wait for that.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      struct stat st {};
      while (::fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) < sizeof(Header) &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      total = static_cast<size_t>(st.st_size);
      if (total < sizeof(Header)) {
        ::close(fd);
        TORCH_CHECK(false, kWho, "the shared victim buffer ", shmPath_,
                    " was never initialised (did the process creating it die?); remove it");
      }
    }
    mapping_ = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      if (creator_) {
        ::shm_unlink(shmName_.c_str());
        spill_io::unregister_cleanup_path(shmPath_);
      }
      TORCH_CHECK(false, kWho, "cannot map the shared victim buffer ", shmPath_, ": ",
                  std::strerror(err));
    }
  } else {
    mapping_ = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      TORCH_CHECK(false, kWho, "cannot allocate a victim buffer of ", total,
                  " bytes: ", std::strerror(errno));
    }
  }
  mappingBytes_ = total;
  header_ = static_cast<Header *>(mapping_);

  if (init) {
    Header *h = header_;
    std::memcpy(h->magic, kVictimMagic, sizeof kVictimMagic);
    std::memcpy(h->uuid, uuid, 16);
    h->rowBytes = static_cast<uint64_t>(rowBytes_);
    h->sets = static_cast<uint64_t>(sets_);
    h->ways = static_cast<uint64_t>(ways_);
    h->setsOffset = setsOffset;
    h->dataOffset = dataOffset;
    h->totalBytes = total;
    new (&h->clock) std::atomic<uint64_t>(1);
    new (&h->users) std::atomic<int32_t>(1);
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    if (sharedMode) {
      pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
      pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
    }
    auto *sets = reinterpret_cast<Set *>(static_cast<char *>(mapping_) + setsOffset);
    for (int64_t i = 0; i < sets_; ++i) {
      pthread_mutex_init(&sets[i].mutex, &attr);
      for (int w = 0; w < kMaxWays; ++w) {
        sets[i].rows[w] = -1;
        sets[i].stamps[w] = 0;
        sets[i].levels[w] = 0;
      }
    }
    pthread_mutexattr_destroy(&attr);
    new (&h->ready) std::atomic<uint32_t>(0);
    h->ready.store(1, std::memory_order_release);
  } else {
    Header *h = header_;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (h->ready.load(std::memory_order_acquire) != 1 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::string why;
    if (h->ready.load(std::memory_order_acquire) != 1)
      why = "was never initialised (did the process creating it die?); remove it";
    else if (std::memcmp(h->magic, kVictimMagic, sizeof kVictimMagic) != 0)
      why = "is not a hector victim buffer";
    else if (std::memcmp(h->uuid, uuid, 16) != 0)
      why = "belongs to another store file (a different uuid): open every process on the same "
            "file, or choose another shared_victim name";
    else if (h->rowBytes != static_cast<uint64_t>(rowBytes_))
      why = "holds rows of " + std::to_string(h->rowBytes) + " bytes, not " +
            std::to_string(rowBytes_);
    else if (h->totalBytes != total || h->ways == 0 || h->ways > kMaxWays ||
             h->dataOffset + h->sets * h->ways * h->rowBytes != total)
      why = "has an inconsistent layout";
    if (!why.empty()) {
      ::munmap(mapping_, mappingBytes_);
      mapping_ = nullptr;
      TORCH_CHECK(false, kWho, "the shared victim buffer ", shmPath_, " ", why);
    }
    sets_ = static_cast<int64_t>(h->sets);
    ways_ = static_cast<int64_t>(h->ways);
    h->users.fetch_add(1);
  }
  setsBase_ = reinterpret_cast<Set *>(static_cast<char *>(mapping_) + header_->setsOffset);
  data_ = static_cast<char *>(mapping_) + header_->dataOffset;
}

VictimBuffer::~VictimBuffer() {
  if (!mapping_)
    return;
  const bool last = header_->users.fetch_sub(1) == 1;
  ::munmap(mapping_, mappingBytes_);
  if (shared()) {
    if (last)
      ::shm_unlink(shmName_.c_str());
    if (creator_)
      spill_io::unregister_cleanup_path(shmPath_);
  }
}

VictimBuffer::Set &VictimBuffer::set(int64_t row) const {
  return setsBase_[mixRow(static_cast<uint64_t>(row)) % static_cast<uint64_t>(sets_)];
}

void VictimBuffer::lock(Set &s) const {
  const int rc = pthread_mutex_lock(&s.mutex);
  if (rc == EOWNERDEAD) {
    // Its holder died, perhaps in the middle of a copy: forget the set's rows.
    for (int w = 0; w < kMaxWays; ++w)
      s.rows[w] = -1;
    pthread_mutex_consistent(&s.mutex);
  } else {
    TORCH_CHECK(rc == 0, kWho, "locking the victim buffer failed: ", std::strerror(rc));
  }
}

char *VictimBuffer::slot(const Set &s, int way) const {
  const int64_t index = (&s - setsBase_) * ways_ + way;
  return data_ + index * rowBytes_;
}

bool VictimBuffer::lookup(int64_t row, void *dst) {
  Set &s = set(row);
  lock(s);
  bool found = false;
  for (int w = 0; w < ways_; ++w) {
    if (s.rows[w] == row) {
      std::memcpy(dst, slot(s, w), static_cast<size_t>(rowBytes_));
      s.stamps[w] = header_->clock.fetch_add(1, std::memory_order_relaxed);
      found = true;
      break;
    }
  }
  pthread_mutex_unlock(&s.mutex);
  return found;
}

bool VictimBuffer::insert(int64_t row, const void *src, uint16_t level, bool byLevel) {
  Set &s = set(row);
  lock(s);
  int target = -1, empty = -1;
  for (int w = 0; w < ways_; ++w) {
    if (s.rows[w] == row) { // Present: the bytes are the same (rows never change).
      s.stamps[w] = header_->clock.fetch_add(1, std::memory_order_relaxed);
      pthread_mutex_unlock(&s.mutex);
      return true;
    }
    if (s.rows[w] < 0) {
      if (empty < 0)
        empty = w;
      continue;
    }
    if (target < 0) {
      target = w;
      continue;
    }
    // The replacement candidate: the least recently used row (of the lowest level, byLevel).
    const bool before = byLevel && s.levels[w] != s.levels[target]
                            ? s.levels[w] < s.levels[target]
                            : s.stamps[w] < s.stamps[target];
    if (before)
      target = w;
  }
  if (empty >= 0)
    target = empty;
  else if (byLevel && s.levels[target] > level)
    target = -1; // every row of the set has a higher level: keep them
  if (target >= 0) {
    s.rows[target] = -1; // A reader never sees the row while its bytes change.
    std::memcpy(slot(s, target), src, static_cast<size_t>(rowBytes_));
    s.rows[target] = row;
    s.levels[target] = level;
    s.stamps[target] = header_->clock.fetch_add(1, std::memory_order_relaxed);
  }
  pthread_mutex_unlock(&s.mutex);
  return target >= 0;
}

void VictimBuffer::erase(int64_t row) {
  Set &s = set(row);
  lock(s);
  for (int w = 0; w < ways_; ++w)
    if (s.rows[w] == row)
      s.rows[w] = -1;
  pthread_mutex_unlock(&s.mutex);
}

} // namespace hector::fs
