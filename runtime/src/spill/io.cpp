//===- io.cpp - Files, checksums and I/O primitives of the spilling engine -===//
#include "io.h"

#include <c10/util/Exception.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/falloc.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#if defined(HECTOR_WITH_URING)
#include <liburing.h>
#endif
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace hector::spill_io {

//===----------------------------------------------------------------------===//
// CRC32C
//===----------------------------------------------------------------------===//

uint32_t crc32c_shift(uint32_t crc, size_t len);

namespace {
/// The linear operator "append `len` zero bytes" on a raw CRC32C register, as a
/// 32x32 GF(2) matrix (column i = image of bit i), so applying it costs 32 steps.
struct ShiftOperator {
  uint32_t column[32];
  explicit ShiftOperator(size_t len) {
    for (int i = 0; i < 32; ++i)
      column[i] = crc32c_shift(1u << i, len);
  }
  uint32_t operator()(uint32_t crc) const {
    uint32_t sum = 0;
    for (int i = 0; crc; crc >>= 1, ++i)
      if (crc & 1)
        sum ^= column[i];
    return sum;
  }
};

struct Crc32cTable {
  uint32_t t[8][256];
  Crc32cTable() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s)
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

uint32_t crc32c_soft(uint32_t crc, const unsigned char *p, size_t n) {
  static const Crc32cTable table;
  const auto &t = table.t;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    v ^= crc;
    crc = t[7][v & 0xff] ^ t[6][(v >> 8) & 0xff] ^ t[5][(v >> 16) & 0xff] ^
          t[4][(v >> 24) & 0xff] ^ t[3][(v >> 32) & 0xff] ^ t[2][(v >> 40) & 0xff] ^
          t[1][(v >> 48) & 0xff] ^ t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n--)
    crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_hw(uint32_t crc, const unsigned char *p,
                                                      size_t n) {
  uint64_t c = crc;
  // Three independent streams hide the instruction's latency.
  constexpr size_t kBlock = 8192;
  while (n >= 3 * kBlock) {
    uint64_t c1 = 0, c2 = 0;
    const unsigned char *p1 = p + kBlock, *p2 = p + 2 * kBlock;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t a, b, d;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p1 + i, 8);
      std::memcpy(&d, p2 + i, 8);
      c = _mm_crc32_u64(c, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, d);
    }
    // Fold the streams: crc(A|B|C) = shift(cA, 2 blocks) ^ shift(cB, 1 block) ^ cC
    // when B and C were started from a zero register.
    static const ShiftOperator shift1(kBlock), shift2(2 * kBlock);
    c = shift2(static_cast<uint32_t>(c)) ^ shift1(static_cast<uint32_t>(c1)) ^
        static_cast<uint32_t>(c2);
    p += 3 * kBlock;
    n -= 3 * kBlock;
  }
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--)
    c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
#endif
} // namespace

// Multiplies `crc` by x^(8*len) modulo the CRC32C polynomial: the register after
// feeding `len` zero bytes with no pre/post conditioning (used to combine streams).
uint32_t crc32c_shift(uint32_t crc, size_t len) {
  // Square-and-multiply over GF(2) matrices, as zlib's crc32_combine.
  auto gf2_times = [](const uint32_t *mat, uint32_t vec) {
    uint32_t sum = 0;
    for (int i = 0; vec; vec >>= 1, ++i)
      if (vec & 1)
        sum ^= mat[i];
    return sum;
  };
  auto gf2_square = [&](uint32_t *square, const uint32_t *mat) {
    for (int n = 0; n < 32; ++n)
      square[n] = gf2_times(mat, mat[n]);
  };
  uint32_t even[32], odd[32];
  odd[0] = 0x82F63B78u;
  for (int n = 1; n < 32; ++n)
    odd[n] = 1u << (n - 1);
  gf2_square(even, odd); // 2 zero bits
  gf2_square(odd, even); // 4 zero bits
  do {
    gf2_square(even, odd);
    if (len & 1)
      crc = gf2_times(even, crc);
    len >>= 1;
    if (!len)
      break;
    gf2_square(odd, even);
    if (len & 1)
      crc = gf2_times(odd, crc);
    len >>= 1;
  } while (len);
  return crc;
}

uint32_t crc32c(uint32_t crc, const void *data, size_t size) {
  const auto *p = static_cast<const unsigned char *>(data);
  crc = ~crc;
#if defined(__x86_64__)
  static const bool hw = __builtin_cpu_supports("sse4.2");
  crc = hw ? crc32c_hw(crc, p, size) : crc32c_soft(crc, p, size);
#else
  crc = crc32c_soft(crc, p, size);
#endif
  return ~crc;
}

//===----------------------------------------------------------------------===//
// Buffers and files
//===----------------------------------------------------------------------===//

AlignedBuffer::AlignedBuffer(size_t size) : size_(align_up(size)) {
  void *p = nullptr;
  if (size_ && posix_memalign(&p, kAlign, size_) != 0)
    TORCH_CHECK(false, "hector.spill: cannot allocate an aligned buffer of ", size_, " bytes");
  data_ = static_cast<char *>(p);
}
AlignedBuffer::~AlignedBuffer() { std::free(data_); }
AlignedBuffer::AlignedBuffer(AlignedBuffer &&other) noexcept
    : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}
AlignedBuffer &AlignedBuffer::operator=(AlignedBuffer &&other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

int open_maybe_direct(const char *path, int flags, bool direct, bool &is_direct, unsigned mode) {
  is_direct = false;
  if (direct) {
    const int fd = ::open(path, flags | O_DIRECT, mode);
    if (fd >= 0) {
      is_direct = true;
      return fd;
    }
    if (errno != EINVAL && errno != EOPNOTSUPP)
      return -1;
  }
  return ::open(path, flags, mode);
}

namespace {

std::string parent_directory(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}
} // namespace

SpillFile::SpillFile(std::string path, bool direct, bool anonymous) : path_(std::move(path)) {
  bool is_direct = false;
#if defined(O_TMPFILE)
  if (anonymous) {
    // An unnamed file in the directory: nothing can be left behind, even on
    // SIGKILL, and there is no window between creating and unlinking.
    fd_ = open_maybe_direct(parent_directory(path_).c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC,
                            direct, is_direct);
    // Kernels or file systems without O_TMPFILE fail with EISDIR or EOPNOTSUPP
    // (or EINVAL): a named file, unlinked at once, follows.
  }
#endif
  if (fd_ < 0) {
    fd_ = open_maybe_direct(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, direct,
                            is_direct);
    TORCH_CHECK(fd_ >= 0, "hector.spill: cannot create spill file ", path_, ": ",
                std::strerror(errno));
    if (anonymous) {
      ::unlink(path_.c_str());
    } else {
      linked_ = true;
      register_cleanup_path(path_);
    }
  }
  direct_ = is_direct;
}

SpillFile::~SpillFile() {
  unlink_now();
  if (fd_ >= 0)
    ::close(fd_);
}

void SpillFile::drop_direct() {
  if (!direct_.exchange(false)) return;
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0)
    ::fcntl(fd_, F_SETFL, flags & ~O_DIRECT);
}

void SpillFile::punch_hole(uint64_t offset, uint64_t size) {
  if (size)
    (void)::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
                      static_cast<off_t>(size));
}

void SpillFile::unlink_now() {
  if (!linked_)
    return;
  linked_ = false;
  ::unlink(path_.c_str());
  unregister_cleanup_path(path_);
}

//===----------------------------------------------------------------------===//
// I/O queue
//===----------------------------------------------------------------------===//

int64_t IoQueue::pwrite_full(int fd, const void *buf, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, static_cast<const char *>(buf) + done, size - done,
                               static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      return -ENOSPC;
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

int64_t IoQueue::pread_full(int fd, void *buf, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pread(fd, static_cast<char *>(buf) + done, size - done,
                              static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return -errno;
    }
    if (n == 0)
      break; // End of file: the caller sees a short count.
    done += static_cast<size_t>(n);
  }
  return static_cast<int64_t>(done);
}

IoQueue::IoQueue(bool use_uring) {
#if defined(HECTOR_WITH_URING)
  if (use_uring) {
    auto *ring = new io_uring;
    if (io_uring_queue_init(4, ring, 0) == 0)
      ring_ = ring;
    else
      delete ring;
  }
#else
  (void)use_uring;
#endif
}

IoQueue::~IoQueue() {
  while (count_)
    (void)wait_oldest();
#if defined(HECTOR_WITH_URING)
  if (ring_) {
    io_uring_queue_exit(static_cast<io_uring *>(ring_));
    delete static_cast<io_uring *>(ring_);
  }
#endif
}

void IoQueue::submit_write(int fd, const void *buf, size_t size, uint64_t offset) {
  TORCH_INTERNAL_ASSERT(count_ < 2);
  const int slot = (head_ + count_) % 2;
  tags_[slot] = next_tag_++;
  writes_[slot] = {fd, buf, size, offset};
#if defined(HECTOR_WITH_URING)
  if (ring_) {
    auto *ring = static_cast<io_uring *>(ring_);
    io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (sqe) {
      io_uring_prep_write(sqe, fd, buf, static_cast<unsigned>(size), offset);
      io_uring_sqe_set_data64(sqe, tags_[slot]);
      if (io_uring_submit(ring) == 1) {
        results_[slot] = INT64_MIN; // Not completed yet.
        ++count_;
        return;
      }
    }
  }
#endif
  results_[slot] = pwrite_full(fd, buf, size, offset);
  ++count_;
}

int64_t IoQueue::wait_oldest() {
  TORCH_INTERNAL_ASSERT(count_ > 0);
  const int slot = head_;
#if defined(HECTOR_WITH_URING)
  auto *ring = static_cast<io_uring *>(ring_);
  while (results_[slot] == INT64_MIN) {
    io_uring_cqe *cqe = nullptr;
    const int rc = io_uring_wait_cqe(ring, &cqe);
    if (rc == -EINTR)
      continue;
    if (rc < 0) {
      results_[slot] = rc;
      break;
    }
    const uint64_t tag = io_uring_cqe_get_data64(cqe);
    for (int s = 0; s < 2; ++s)
      if (tags_[s] == tag)
        results_[s] = cqe->res;
    io_uring_cqe_seen(ring, cqe);
  }
#endif
  int64_t result = results_[slot];
  const Request &w = writes_[slot];
  if (result >= 0 && static_cast<size_t>(result) < w.size) {
    // A short asynchronous write: finish it synchronously.
    const int64_t rest = pwrite_full(w.fd, static_cast<const char *>(w.buf) + result,
                                     w.size - static_cast<size_t>(result), w.offset + result);
    result = rest < 0 ? rest : static_cast<int64_t>(w.size);
  }
  head_ = (head_ + 1) % 2;
  --count_;
  return result;
}

//===----------------------------------------------------------------------===//
// Batched reads
//===----------------------------------------------------------------------===//

ReadQueue::ReadQueue(unsigned depth, bool use_uring) : depth_(depth ? depth : 1) {
#if defined(HECTOR_WITH_URING)
  if (use_uring) {
    auto *ring = new io_uring;
    if (io_uring_queue_init(depth_, ring, 0) == 0)
      ring_ = ring;
    else
      delete ring;
  }
#else
  (void)use_uring;
#endif
}

ReadQueue::~ReadQueue() {
#if defined(HECTOR_WITH_URING)
  if (ring_) {
    io_uring_queue_exit(static_cast<io_uring *>(ring_));
    delete static_cast<io_uring *>(ring_);
  }
#endif
}

void ReadQueue::run(Read *reads, size_t n) {
  size_t next = 0;
#if defined(HECTOR_WITH_URING)
  // One read gains nothing from the ring (and a blocking read needs no kernel worker thread).
  if (ring_ && n > 1) {
    auto *ring = static_cast<io_uring *>(ring_);
    std::vector<size_t> done(n, 0); // Bytes transferred so far, per read.
    unsigned in_flight = 0;
    bool broken = false;
    std::vector<size_t> retry; // Reads to (re)submit before new ones.
    auto prepare = [&](size_t i) {
      io_uring_sqe *sqe = io_uring_get_sqe(ring);
      if (!sqe)
        return false;
      Read &r = reads[i];
      io_uring_prep_read(sqe, r.fd, static_cast<char *>(r.buf) + done[i],
                         static_cast<unsigned>(r.size - done[i]), r.offset + done[i]);
      io_uring_sqe_set_data64(sqe, i);
      return true;
    };
    while (!broken && (next < n || in_flight || !retry.empty())) {
      unsigned queued = 0;
      while (in_flight + queued < depth_ && (!retry.empty() || next < n)) {
        const size_t i = retry.empty() ? next : retry.back();
        if (!prepare(i))
          break;
        if (retry.empty())
          ++next;
        else
          retry.pop_back();
        ++queued;
      }
      if (queued) {
        int rc;
        do
          rc = io_uring_submit(ring);
        while (rc == -EINTR);
        if (rc < 0) {
          // The ring itself failed: what was prepared never ran; finish with pread below.
          broken = true;
          break;
        }
        in_flight += queued;
      }
      if (!in_flight)
        continue;
      io_uring_cqe *cqe = nullptr;
      const int rc = io_uring_wait_cqe(ring, &cqe);
      if (rc == -EINTR)
        continue;
      if (rc < 0) {
        broken = true;
        break;
      }
      const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
      const int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      --in_flight;
      Read &r = reads[i];
      if (res == -EINTR || res == -EAGAIN) {
        retry.push_back(i);
      } else if (res < 0) {
        r.result = res;
      } else if (res == 0) {
        r.result = static_cast<int64_t>(done[i]); // End of file.
      } else {
        done[i] += static_cast<size_t>(res);
        if (done[i] < r.size)
          retry.push_back(i); // A short transfer: continue where it stopped.
        else
          r.result = static_cast<int64_t>(r.size);
      }
    }
    if (broken) {
      // Drain what is still in flight (its results are lost), then redo every read that has no
      // result with pread: the reads are idempotent.
      while (in_flight) {
        io_uring_cqe *cqe = nullptr;
        if (io_uring_wait_cqe(ring, &cqe) < 0)
          break;
        io_uring_cqe_seen(ring, cqe);
        --in_flight;
      }
      next = 0; // Everything is redone below: the reads are idempotent.
    } else {
      return;
    }
  }
#endif
  for (size_t i = next; i < n; ++i)
    reads[i].result =
        IoQueue::pread_full(reads[i].fd, reads[i].buf, reads[i].size, reads[i].offset);
}

//===----------------------------------------------------------------------===//
// Cleanup on exit and on fatal signals
//===----------------------------------------------------------------------===//

namespace {
constexpr int kSlots = 1024;
constexpr int kPathMax = 512;
struct CleanupSlot {
  std::atomic<int> state{0}; // 0 free, 1 being written, 2 live
  char path[kPathMax];
};
CleanupSlot cleanup_slots[kSlots];
std::once_flag handlers_once;
struct sigaction previous_actions[NSIG];

void unlink_registered() {
  for (auto &slot : cleanup_slots)
    if (slot.state.load(std::memory_order_acquire) == 2)
      ::unlink(slot.path); // Async-signal-safe.
}

void on_fatal_signal(int sig) {
  unlink_registered();
  ::sigaction(sig, &previous_actions[sig], nullptr);
  ::raise(sig);
}

void install_handlers() {
  std::atexit(unlink_registered);
  for (int sig : {SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGINT}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0)
      continue;
    // Only where the process would die anyway: a handler someone installed
    // (Python's KeyboardInterrupt) keeps working, and the stores are cleaned up
    // when the exception unwinds.
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL) {
      struct sigaction action {};
      action.sa_handler = on_fatal_signal;
      sigemptyset(&action.sa_mask);
      action.sa_flags = SA_RESETHAND;
      previous_actions[sig] = current;
      ::sigaction(sig, &action, nullptr);
    }
  }
}
} // namespace

void register_cleanup_path(const std::string &path) {
  std::call_once(handlers_once, install_handlers);
  if (path.size() >= kPathMax)
    return; // Still removed by the store itself; only the signal path misses it.
  for (auto &slot : cleanup_slots) {
    int expected = 0;
    if (slot.state.compare_exchange_strong(expected, 1)) {
      std::memcpy(slot.path, path.c_str(), path.size() + 1);
      slot.state.store(2, std::memory_order_release);
      return;
    }
  }
}

void unregister_cleanup_path(const std::string &path) {
  for (auto &slot : cleanup_slots) {
    if (slot.state.load(std::memory_order_acquire) == 2 && path == slot.path) {
      int expected = 2;
      slot.state.compare_exchange_strong(expected, 0);
      return;
    }
  }
}

void cleanup_all_paths() { unlink_registered(); }

} // namespace hector::spill_io
