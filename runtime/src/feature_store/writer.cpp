//===- writer.cpp - Building a feature store file from streamed row blocks -===//
//
// Rows are packed into row blocks in an aligned staging chunk and written with O_DIRECT (two
// chunks in flight on an io_uring) to a partial file next to the destination; finish() appends
// the checksum table, writes the header last, syncs, and renames the file into place. Any error
// removes the partial file, so a store at the path is always complete.
//
//===----------------------------------------------------------------------===//
#include "hector/common.h"
#include "hector/feature_store.h"

#include "../spill/io.h"
#include "format.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace hector {

using spill_io::AlignedBuffer;
using spill_io::IoQueue;
using spill_io::kAlign;

namespace {
constexpr const char *kWho = "hector.FeatureStore.create: ";
constexpr size_t kChunkBytes = size_t{4} << 20; // staging chunk: about 4 MiB of blocks
std::atomic<uint64_t> partialCounter{0};

std::string parentDirectory(const std::string &path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

/// Renames `from` to `to` unless `to` exists (atomically where the file system can).
int renameNoReplace(const std::string &from, const std::string &to) {
#if defined(SYS_renameat2)
  constexpr unsigned kNoReplace = 1; // RENAME_NOREPLACE
  if (::syscall(SYS_renameat2, AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), kNoReplace) == 0)
    return 0;
  if (errno != EINVAL && errno != ENOSYS)
    return -1;
#endif
  // A hard link fails with EEXIST atomically; then the partial name goes.
  if (::link(from.c_str(), to.c_str()) != 0)
    return -1;
  ::unlink(from.c_str());
  return 0;
}
} // namespace

struct FeatureStoreWriter::State {
  std::string path, partial;
  FeatureStoreWriterOptions options;
  int fd = -1;
  bool direct = false;
  bool finished = false, aborted = false;
  std::unique_ptr<IoQueue> queue;
  int64_t faultEnospcAfter = -1;

  // Layout, fixed by the first block.
  bool haveLayout = false;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> rowShape;
  int64_t rowBytes = 0, rowsPerBlock = 0, blockStride = 0;
  int64_t chunkBlocks = 0;

  AlignedBuffer chunks[2];
  int current = 0; ///< chunk being filled
  bool inFlight[2] = {false, false};
  int64_t blocksInChunk = 0; ///< complete blocks in the current chunk
  int64_t rowsInBlock = 0;   ///< rows of the block being filled
  int64_t blocksWritten = 0; ///< blocks handed to the queue
  int64_t rows = 0, appended = 0;
  std::vector<uint32_t> checksums;

  [[noreturn]] void fail(const std::string &what) {
    const std::string name = path;
    abort();
    TORCH_CHECK(false, kWho, "writing ", name, " failed: ", what,
                "; no store was written (the partial file was removed)");
  }

  void abort() {
    if (aborted)
      return;
    aborted = true;
    if (queue) {
      while (queue->pending())
        (void)queue->wait_oldest();
      queue.reset();
    }
    if (fd >= 0) {
      ::close(fd);
      fd = -1;
    }
    if (!finished && !partial.empty()) {
      ::unlink(partial.c_str());
      spill_io::unregister_cleanup_path(partial);
    }
  }

  /// A write the kernel refused because of O_DIRECT: switch the descriptor to buffered I/O.
  void dropDirect() {
    if (!direct)
      return;
    direct = false;
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0)
      ::fcntl(fd, F_SETFL, flags & ~O_DIRECT);
  }

  /// Synchronous write of [buf, buf + size) at `offset`, retried buffered after EINVAL.
  void writeNow(const void *buf, size_t size, uint64_t offset) {
    int64_t rc = IoQueue::pwrite_full(fd, buf, size, offset);
    if (rc == -EINVAL && direct) {
      dropDirect();
      rc = IoQueue::pwrite_full(fd, buf, size, offset);
    }
    if (rc < 0)
      fail(std::strerror(static_cast<int>(-rc)));
  }

  /// Chunks whose writes are in flight, oldest first (the queue completes in order).
  std::deque<int> order;
  int64_t pendingSize[2] = {0, 0}, pendingOffset[2] = {0, 0};
  int64_t submitted = 0; ///< bytes of data handed to the queue (for the ENOSPC fault)

  /// Waits for the write of chunk `c` if one is in flight.
  void waitChunk(int c) {
    while (inFlight[c]) {
      const int oldest = order.front();
      order.pop_front();
      const int64_t rc = queue->wait_oldest();
      inFlight[oldest] = false;
      if (rc == -EINVAL && direct) {
        // The kernel refused O_DIRECT: redo it buffered (the data is still in its chunk).
        dropDirect();
        writeNow(chunks[oldest].data(), static_cast<size_t>(pendingSize[oldest]),
                 static_cast<uint64_t>(pendingOffset[oldest]));
      } else if (rc < 0) {
        fail(std::strerror(static_cast<int>(-rc)));
      }
    }
  }

  /// Hands the current chunk's complete blocks to the queue and switches chunks; the `last`
  /// chunk, with nothing else to overlap, is written at once.
  void flushChunk(bool last = false) {
    if (blocksInChunk == 0)
      return;
    const size_t size = static_cast<size_t>(blocksInChunk * blockStride);
    const uint64_t offset = fs::kHeaderBytes + static_cast<uint64_t>(blocksWritten * blockStride);
    if (faultEnospcAfter >= 0 && submitted + static_cast<int64_t>(size) > faultEnospcAfter) {
      // Injected: the disk fills in the middle of this write (what got there stays in the file).
      const size_t part = static_cast<size_t>((faultEnospcAfter - submitted) / kAlign * kAlign);
      for (int c = 0; c < 2; ++c)
        waitChunk(c);
      if (part)
        (void)IoQueue::pwrite_full(fd, chunks[current].data(), part, offset);
      fail(std::strerror(ENOSPC));
    }
    const int c = current;
    // At most two writes in flight: the other chunk's must have finished before it is reused.
    const int other = 1 - c;
    waitChunk(other);
    if (last) {
      writeNow(chunks[c].data(), size, offset);
      submitted += static_cast<int64_t>(size);
      blocksWritten += blocksInChunk;
      blocksInChunk = 0;
      return;
    }
    pendingSize[c] = static_cast<int64_t>(size);
    pendingOffset[c] = static_cast<int64_t>(offset);
    queue->submit_write(fd, chunks[c].data(), size, offset);
    order.push_back(c);
    inFlight[c] = true;
    submitted += static_cast<int64_t>(size);
    blocksWritten += blocksInChunk;
    blocksInChunk = 0;
    current = other;
  }

  /// Completes the block being filled: zero padding, checksum.
  void closeBlock() {
    char *block = chunks[current].data() + blocksInChunk * blockStride;
    const int64_t used = rowsInBlock * rowBytes;
    std::memset(block + used, 0, static_cast<size_t>(blockStride - used));
    checksums.push_back(fs::blockChecksum(static_cast<uint64_t>(checksums.size()), block,
                                          static_cast<size_t>(used)));
    rowsInBlock = 0;
    if (++blocksInChunk == chunkBlocks)
      flushChunk();
  }

  void setLayout(const at::Tensor &rows) {
    TORCH_CHECK_TYPE(fs::dtypeCode(rows.scalar_type()) != 0, kWho, "dtype ",
                     dtypeName(rows.scalar_type()),
                     " cannot be stored (floating, integer and bool dtypes can)");
    TORCH_CHECK_VALUE(static_cast<uint32_t>(rows.dim() - 1) <= fs::kMaxRowDims, kWho, "rows of ",
                      rows.dim() - 1, " dimensions; at most ", fs::kMaxRowDims);
    dtype = rows.scalar_type();
    rowShape.assign(rows.sizes().begin() + 1, rows.sizes().end());
    int64_t width = 1;
    for (int64_t d : rowShape)
      width *= d;
    rowBytes = width * static_cast<int64_t>(rows.element_size());
    TORCH_CHECK_VALUE(rowBytes > 0, kWho, "rows of shape [", c10::Join(", ", rowShape),
                      "] hold no bytes: a store needs at least one element per row");
    rowsPerBlock = std::max<int64_t>(1, options.blockBytes / rowBytes);
    blockStride =
        static_cast<int64_t>(spill_io::align_up(static_cast<size_t>(rowsPerBlock * rowBytes)));
    chunkBlocks = std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes) / blockStride);
    for (auto &c : chunks)
      c = AlignedBuffer(static_cast<size_t>(chunkBlocks * blockStride));
    haveLayout = true;
  }
};

FeatureStoreWriter::FeatureStoreWriter(std::string path, FeatureStoreWriterOptions options)
    : s_(std::make_unique<State>()) {
  State &s = *s_;
  TORCH_CHECK_VALUE(!path.empty(), kWho, "the path is empty");
  TORCH_CHECK_VALUE(options.blockBytes >= static_cast<int64_t>(kAlign) &&
                        options.blockBytes % static_cast<int64_t>(kAlign) == 0,
                    kWho, "block_bytes must be a positive multiple of 4096, got ",
                    options.blockBytes);
  s.path = std::move(path);
  s.options = std::move(options);
  if (!s.options.faults.empty()) {
    const std::string key = "enospc_after=";
    TORCH_CHECK_VALUE(s.options.faults.rfind(key, 0) == 0, kWho, "unknown fault \"",
                      s.options.faults, "\" (known: enospc_after=BYTES)");
    char *end = nullptr;
    const std::string value = s.options.faults.substr(key.size());
    s.faultEnospcAfter = std::strtoll(value.c_str(), &end, 10);
    TORCH_CHECK_VALUE(!value.empty() && *end == '\0' && s.faultEnospcAfter >= 0, kWho,
                      "fault enospc_after needs a byte count, got \"", value, "\"");
  }
  struct stat st {};
  if (!s.options.overwrite && ::stat(s.path.c_str(), &st) == 0)
    TORCH_CHECK(false, kWho, s.path, " exists (pass overwrite=True to replace it)");
  s.partial = s.path + ".partial-" + std::to_string(::getpid()) + "-" +
              std::to_string(partialCounter.fetch_add(1));
  s.fd = spill_io::open_maybe_direct(s.partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                                     s.options.directIo, s.direct, 0644);
  TORCH_CHECK(s.fd >= 0, kWho, "cannot create ", s.partial, " (next to ", s.path,
              "): ", std::strerror(errno));
  spill_io::register_cleanup_path(s.partial);
  s.queue = std::make_unique<IoQueue>(s.options.useUring);
}

FeatureStoreWriter::~FeatureStoreWriter() {
  if (s_)
    s_->abort();
}

int64_t FeatureStoreWriter::rows() const { return s_->rows; }
const std::string &FeatureStoreWriter::path() const { return s_->path; }

void FeatureStoreWriter::abort() { s_->abort(); }

void FeatureStoreWriter::append(const at::Tensor &block) {
  State &s = *s_;
  TORCH_CHECK(!s.aborted && !s.finished, kWho, "the writer of ", s.path,
              s.finished ? " has finished" : " was aborted");
  const int64_t number = s.appended;
  try {
    TORCH_CHECK_TYPE(block.defined(), kWho, "row block ", number, " is undefined (None)");
    TORCH_CHECK_TYPE(block.device().is_cpu(), kWho, "row block ", number,
                     " must be a CPU tensor, got one on ", deviceName(block.device()));
    TORCH_CHECK_VALUE(block.dim() >= 1, kWho, "row block ", number,
                      " must have at least one dimension (rows), got a 0-d tensor");
    if (!s.haveLayout) {
      s.setLayout(block);
    } else {
      TORCH_CHECK_VALUE(block.scalar_type() == s.dtype, kWho, "row block ", number, " has dtype ",
                        dtypeName(block.scalar_type()), " but the store's (from block 0) is ",
                        dtypeName(s.dtype));
      TORCH_CHECK_VALUE(block.sizes().slice(1) == c10::IntArrayRef(s.rowShape), kWho, "row block ",
                        number, " has rows of shape [", c10::Join(", ", block.sizes().slice(1)),
                        "] but the store's (from block 0) are [", c10::Join(", ", s.rowShape), "]");
    }
  } catch (...) {
    s.abort();
    throw;
  }
  ++s.appended;
  const at::Tensor rows = block.contiguous();
  const char *src = static_cast<const char *>(rows.const_data_ptr());
  int64_t left = rows.size(0);
  while (left > 0) {
    const int64_t take = std::min(left, s.rowsPerBlock - s.rowsInBlock);
    char *dst =
        s.chunks[s.current].data() + s.blocksInChunk * s.blockStride + s.rowsInBlock * s.rowBytes;
    std::memcpy(dst, src, static_cast<size_t>(take * s.rowBytes));
    src += take * s.rowBytes;
    left -= take;
    s.rowsInBlock += take;
    s.rows += take;
    if (s.rowsInBlock == s.rowsPerBlock)
      s.closeBlock();
  }
}

void FeatureStoreWriter::finish() {
  State &s = *s_;
  TORCH_CHECK(!s.aborted && !s.finished, kWho, "the writer of ", s.path,
              s.finished ? " has finished" : " was aborted");
  if (!s.haveLayout) {
    s.abort();
    TORCH_CHECK_VALUE(false, kWho, "no row blocks were given for ", s.path,
                      ": nothing fixes the store's dtype and row shape");
  }
  if (s.rowsInBlock > 0)
    s.closeBlock();
  s.flushChunk(/*last=*/true);
  for (int c = 0; c < 2; ++c)
    s.waitChunk(c);

  const uint64_t numBlocks = s.checksums.size();
  fs::FileHeader h{};
  std::memcpy(h.magic, fs::kMagic, sizeof fs::kMagic);
  h.version = fs::kVersion;
  h.headerBytes = fs::kHeaderBytes;
  h.dtypeCode = fs::dtypeCode(s.dtype);
  h.elementBytes = static_cast<uint32_t>(c10::elementSize(s.dtype));
  h.rowDims = static_cast<uint32_t>(s.rowShape.size());
  for (size_t d = 0; d < s.rowShape.size(); ++d)
    h.rowShape[d] = static_cast<uint64_t>(s.rowShape[d]);
  h.flags = fs::kFlagComplete;
  h.numRows = static_cast<uint64_t>(s.rows);
  h.rowBytes = static_cast<uint64_t>(s.rowBytes);
  h.rowsPerBlock = static_cast<uint64_t>(s.rowsPerBlock);
  h.blockStride = static_cast<uint64_t>(s.blockStride);
  h.numBlocks = numBlocks;
  h.dataOffset = fs::kHeaderBytes;
  h.checksumOffset = fs::kHeaderBytes + numBlocks * h.blockStride;
  h.checksumBytes = numBlocks * 4;
  h.fileBytes = h.checksumOffset + spill_io::align_up(h.checksumBytes);
  h.checksumTableCrc = spill_io::crc32c(0, s.checksums.data(), h.checksumBytes);
  if (::getrandom(h.uuid, sizeof h.uuid, 0) != static_cast<ssize_t>(sizeof h.uuid)) {
    // No entropy source: the time and the process still make the id unique enough.
    const uint64_t a = static_cast<uint64_t>(::getpid()),
                   b = static_cast<uint64_t>(
                       std::chrono::steady_clock::now().time_since_epoch().count());
    std::memcpy(h.uuid, &a, 8);
    std::memcpy(h.uuid + 8, &b, 8);
  }

  if (numBlocks) {
    AlignedBuffer table(static_cast<size_t>(h.checksumBytes));
    std::memset(table.data(), 0, table.size());
    std::memcpy(table.data(), s.checksums.data(), h.checksumBytes);
    if (s.faultEnospcAfter >= 0 &&
        s.submitted + static_cast<int64_t>(table.size()) > s.faultEnospcAfter)
      s.fail(std::strerror(ENOSPC));
    s.writeNow(table.data(), table.size(), h.checksumOffset);
  }
  AlignedBuffer header(fs::kHeaderBytes);
  fs::encodeHeader(h, header.data());
  s.writeNow(header.data(), fs::kHeaderBytes, 0);
  if (::ftruncate(s.fd, static_cast<off_t>(h.fileBytes)) != 0)
    s.fail(std::string("ftruncate: ") + std::strerror(errno));
  if (s.options.sync && ::fdatasync(s.fd) != 0)
    s.fail(std::string("fdatasync: ") + std::strerror(errno));
  s.queue.reset();
  ::close(s.fd);
  s.fd = -1;
  const int rc = s.options.overwrite ? ::rename(s.partial.c_str(), s.path.c_str())
                                     : renameNoReplace(s.partial, s.path);
  if (rc != 0) {
    const int err = errno;
    s.fail(err == EEXIST ? s.path + " appeared while the store was written (pass "
                                    "overwrite=True to replace it)"
                         : std::string("rename: ") + std::strerror(err));
  }
  s.finished = true;
  spill_io::unregister_cleanup_path(s.partial);
  // The rename itself is durable once the directory is synced.
  if (s.options.sync) {
    const int dir = ::open(parentDirectory(s.path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      (void)::fsync(dir);
      ::close(dir);
    }
  }
}

} // namespace hector
