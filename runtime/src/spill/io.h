//===- io.h - Files, checksums and I/O primitives of the spilling engine --===//
//
// Shared with the feature store (runtime/src/feature_store): CRC32C, aligned buffers, O_DIRECT
// opening and the batched io_uring reader (ReadQueue).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hector::spill_io {

/// Alignment of O_DIRECT buffers, offsets and lengths.
constexpr size_t kAlign = 4096;
inline size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// CRC32C (Castagnoli), hardware-accelerated on x86-64 with SSE4.2.
uint32_t crc32c(uint32_t crc, const void *data, size_t size);

/// A posix_memalign'ed buffer (kAlign), freed on destruction.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer &&other) noexcept;
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept;
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  char *data() const { return data_; }
  size_t size() const { return size_; }

private:
  char *data_ = nullptr;
  size_t size_ = 0;
};

/// One spill file: records are appended at kAlign-aligned offsets.
class SpillFile {
public:
  /// Creates `path` exclusively. With `direct`, tries O_DIRECT and falls back to
  /// buffered I/O when the file system refuses it. With `anonymous`, the file has
  /// no name: created with O_TMPFILE in `path`'s directory where supported, else
  /// created as `path` and unlinked at once. Throws c10::Error on failure.
  SpillFile(std::string path, bool direct, bool anonymous);
  ~SpillFile();
  SpillFile(const SpillFile &) = delete;
  SpillFile &operator=(const SpillFile &) = delete;

  int fd() const { return fd_; }
  const std::string &path() const { return path_; }
  bool direct() const { return direct_.load(); }
  /// Reserves `size` bytes (a multiple of kAlign) at the end; returns their offset.
  uint64_t allocate(uint64_t size) { return tail_.fetch_add(size); }
  /// Switches the descriptor to buffered I/O (after the kernel refused an O_DIRECT request).
  void drop_direct();
  /// Returns the space of [offset, offset+size) to the file system (best effort).
  void punch_hole(uint64_t offset, uint64_t size);
  /// Removes the directory entry (idempotent).
  void unlink_now();

private:
  std::string path_;
  int fd_ = -1;
  std::atomic<bool> direct_{false};
  std::atomic<uint64_t> tail_{0};
  bool linked_ = false;
};

/// Synchronous and asynchronous (io_uring) positional I/O on one thread.
class IoQueue {
public:
  /// Sets up an io_uring when `use_uring` and the kernel allows it.
  explicit IoQueue(bool use_uring);
  ~IoQueue();
  IoQueue(const IoQueue &) = delete;
  IoQueue &operator=(const IoQueue &) = delete;
  bool uring() const { return ring_ != nullptr; }

  /// Starts writing; with no io_uring the write happens here. At most two requests in flight.
  void submit_write(int fd, const void *buf, size_t size, uint64_t offset);
  /// Waits for the oldest outstanding request; returns its result (bytes or -errno).
  int64_t wait_oldest();
  /// Outstanding requests.
  int pending() const { return count_; }

  /// Blocking helpers that loop over short transfers (and EINTR); return bytes or -errno.
  static int64_t pwrite_full(int fd, const void *buf, size_t size, uint64_t offset);
  static int64_t pread_full(int fd, void *buf, size_t size, uint64_t offset);

private:
  struct Request {
    int fd = -1;
    const void *buf = nullptr;
    size_t size = 0;
    uint64_t offset = 0;
  };
  void *ring_ = nullptr;
  Request writes_[2];
  int64_t results_[2] = {0, 0};
  uint64_t tags_[2] = {0, 0};
  int head_ = 0, count_ = 0;
  uint64_t next_tag_ = 1;
};

/// Batched positional reads on one thread: up to `depth` requests in flight on an io_uring, or
/// one blocking pread after another where there is none. Not thread-safe: one per thread.
class ReadQueue {
public:
  /// One read: `result` receives the bytes read (less than `size` only when the file ended
  /// first) or -errno.
  struct Read {
    int fd = -1;
    void *buf = nullptr;
    size_t size = 0;
    uint64_t offset = 0;
    int64_t result = 0;
  };
  /// Sets up an io_uring of `depth` entries when `use_uring` and the kernel allows it.
  ReadQueue(unsigned depth, bool use_uring);
  ~ReadQueue();
  ReadQueue(const ReadQueue &) = delete;
  ReadQueue &operator=(const ReadQueue &) = delete;
  bool uring() const { return ring_ != nullptr; }
  unsigned depth() const { return depth_; }
  /// Runs every read of `reads[0, n)` to completion. A short transfer before the end of the file
  /// is continued; EINTR and EAGAIN are retried. A single read, and the reads left when the ring
  /// itself fails (not a read), run with pread.
  void run(Read *reads, size_t n);

private:
  void *ring_ = nullptr;
  unsigned depth_ = 1;
};

/// open() with O_DIRECT where asked and the file system allows it (EINVAL and EOPNOTSUPP fall
/// back to buffered I/O): returns the descriptor, or -1 with errno set; `is_direct` says whether
/// O_DIRECT is on. The mode of a created file is 0600 unless `mode` says otherwise.
int open_maybe_direct(const char *path, int flags, bool direct, bool &is_direct,
                      unsigned mode = 0600);

/// Signal- and exit-safe registry of the spill files that exist, so that an
/// interrupted process removes them (SIGTERM, SIGHUP, SIGQUIT, SIGABRT and SIGINT
/// where their disposition is the default; std::atexit otherwise).
void register_cleanup_path(const std::string &path);
void unregister_cleanup_path(const std::string &path);
/// Unlinks every registered path now (what the signal and exit handlers do).
void cleanup_all_paths();

} // namespace hector::spill_io
