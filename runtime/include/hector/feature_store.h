//===- hector/feature_store.h - Storage-backed node features ---*- C++ -*-===//
//
// hector::FeatureStore serves row gathers from a node-feature table kept in a file (on NVMe),
// through three tiers: a device cache (GPU memory with a CUDA cache device, host memory
// otherwise), a victim buffer in (pinned) host memory that receives the rows the cache evicts or
// does not admit (optionally shared by the processes of one machine), and the file, read with
// io_uring and O_DIRECT (cuFile on a GPU where it works). The cache's eviction policy is static
// (a per-row score from the graph), dynamic (CLOCK) or a hybrid of both; a prefetcher reads the
// next batch's rows in the background. The file format is in docs/runtime.md ("Storage-backed
// features").
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hector {

/// The cache's eviction policy.
enum class CachePolicy {
  /// Keep the rows of highest static score: a row is admitted only in place of a cached row of a
  /// lower score (which it evicts); use does not matter. The victim buffer replaces only rows of
  /// no higher score.
  kStatic,
  /// CLOCK: every row read is admitted; the hand evicts the first row not used since its last
  /// pass (one credit per use).
  kDynamic,
  /// CLOCK whose credits grow with the static score, with an admission filter: a use gives a row
  /// 1 + round(staticWeight * s) credits, s in [0, 1] its static score on a logarithmic scale
  /// (log1p(score - lowest) / log1p(highest - lowest)), so a row of high score survives that
  /// many more passes of the hand unused; and a row is admitted only in place of a row of no
  /// higher score (the one the hand stopped at). The victim buffer, too, then replaces only
  /// rows of no higher score.
  kHybrid,
};

/// How FeatureStoreWriter lays the file out.
struct FeatureStoreWriterOptions {
  /// Target bytes of one row block, the unit of reads and checksums (a multiple of 4096): as many
  /// whole rows as fit, at least one; each block starts 4096-aligned.
  int64_t blockBytes = 4096;
  /// Replace an existing file at the path (otherwise creating over one is an error).
  bool overwrite = false;
  /// Write with O_DIRECT where the file system allows it.
  bool directIo = true;
  /// Use io_uring for the writes (two in flight) where the kernel allows it.
  bool useUring = true;
  /// Sync the file and its directory before finish() returns, so that the store survives a
  /// crash of the machine (a crash of the process never leaves a partial store either way).
  bool sync = true;
  /// Fault injection for tests: "enospc_after=BYTES" makes the write that crosses BYTES fail
  /// with ENOSPC after writing part of its data.
  std::string faults;
};

/// Builds a store file from row blocks streamed in order; nothing appears at the path until
/// finish() has written, synced and renamed the complete file. On any error (a full disk, a
/// block of the wrong dtype or row shape) or without finish(), the partial file is removed.
class FeatureStoreWriter {
public:
  /// Starts a store at `path` (throws c10::Error if it exists and !options.overwrite, or if the
  /// partial file cannot be created next to it).
  FeatureStoreWriter(std::string path, FeatureStoreWriterOptions options = {});
  ~FeatureStoreWriter();
  FeatureStoreWriter(const FeatureStoreWriter &) = delete;
  FeatureStoreWriter &operator=(const FeatureStoreWriter &) = delete;

  /// Appends rows `rows` ([k, ...], CPU). The first block fixes the dtype and the row shape
  /// (rows[0].sizes()); later blocks must match (c10::ValueError naming the block, and the
  /// writer is aborted). Rows of no bytes (a zero in the row shape) are refused.
  void append(const at::Tensor &rows);
  /// Writes the checksums and the header, syncs and publishes the file at the path.
  void finish();
  /// Removes the partial file (idempotent; finish() afterwards throws).
  void abort();
  /// Rows appended so far.
  int64_t rows() const;
  const std::string &path() const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

/// What a store file holds (from its header).
struct FeatureStoreInfo {
  std::string path;
  int64_t numRows = 0;
  std::vector<int64_t> rowShape; ///< sizes of one row ([] for a 1-D table)
  at::ScalarType dtype = at::kFloat;
  int64_t width = 0;    ///< elements per row
  int64_t rowBytes = 0; ///< bytes per row
  int64_t rowsPerBlock = 0;
  int64_t blockStride = 0; ///< bytes between row blocks (a multiple of 4096)
  int64_t numBlocks = 0;
  int64_t fileBytes = 0;
  std::string uuid; ///< the store's identity (32 hex digits), new for every file built
};

/// Options of FeatureStore::open.
struct FeatureStoreOptions {
  /// Capacity of the device cache in bytes (whole rows; 0: no cache).
  int64_t cacheBytes = 0;
  /// Capacity of the victim buffer in bytes (whole rows; 0: none).
  int64_t victimBytes = 0;
  CachePolicy policy = CachePolicy::kDynamic;
  /// Static score of every row ([numRows], real or integer dtype, CPU), required by kStatic and
  /// kHybrid: e.g. how many in-neighbourhoods a node belongs to, or how often a sampler drew it.
  /// They are mapped once to 16-bit levels on a logarithmic scale (see kHybrid).
  at::Tensor staticScores;
  /// kHybrid's mix: extra CLOCK credits of the row of highest score.
  double staticWeight = 4.0;
  /// Where the device cache lives: the CPU (host memory) or a CUDA device.
  c10::Device cacheDevice = c10::Device(at::kCPU);
  /// Name of a victim buffer in shared memory (/dev/shm/hector-fs-NAME) that every process
  /// opening the same store with the same name shares; "" for a private one.
  std::string sharedVictim;
  bool directIo = true;
  bool useUring = true;
  /// Read misses with cuFile straight into GPU memory when the cache device is CUDA and cuFile
  /// works (otherwise io_uring into pinned host memory, with the reason logged once).
  bool useCufile = true;
  /// Reads in flight per io_uring.
  int64_t ioDepth = 64;
  /// Bound on the bytes of rows that prefetches hold for gathers that have not come yet.
  int64_t prefetchBytes = int64_t{1} << 30;
  /// Serve a CPU cache through the device-cache code (ATen index ops on a cache tensor), which a
  /// CUDA cache uses; for testing that code on a machine without a GPU.
  bool tensorPath = false;
  /// Refuse the file unless its header agrees (c10::ValueError): elements per row, dtype.
  std::optional<int64_t> expectWidth;
  std::optional<at::ScalarType> expectDtype;
};

/// Counters since open (or resetStats).
struct FeatureStoreStats {
  int64_t gathers = 0;        ///< gather calls
  int64_t rows = 0;           ///< index entries gathered
  int64_t uniqueRows = 0;     ///< distinct rows per gather, summed
  int64_t cacheHits = 0;      ///< distinct rows found in the cache
  int64_t victimHits = 0;     ///< ... in the victim buffer
  int64_t storageRows = 0;    ///< ... read from the file
  int64_t prefetchedRows = 0; ///< of those, rows a prefetch had already looked up or read
  int64_t bytesRead = 0;      ///< bytes read from the file (whole row blocks)
  int64_t blocksRead = 0;
  int64_t readRequests = 0; ///< read requests issued (adjacent blocks are merged)
  int64_t cacheAdmissions = 0;
  int64_t cacheEvictions = 0;
  int64_t victimInserts = 0;
  int64_t prefetches = 0;         ///< prefetch calls
  int64_t prefetchUnusedRows = 0; ///< rows prefetched but cancelled before any gather used them
  int64_t stallNs =
      0; ///< time gathers waited for the file (their own reads, unfinished prefetches)
};

namespace detail {
struct FeatureStoreImpl;
} // namespace detail

/// A store file opened for gathers. Thread-safe: gathers and prefetches may come from several
/// threads (the mini-batch loader's thread and the caller's).
class FeatureStore {
public:
  /// Opens `path`: checks the header's magic, version and checksum, the checksum table and the
  /// file's size, and options.expectWidth / expectDtype (c10::ValueError naming both layouts).
  FeatureStore(const std::string &path, FeatureStoreOptions options = {});
  ~FeatureStore();
  FeatureStore(const FeatureStore &) = delete;
  FeatureStore &operator=(const FeatureStore &) = delete;

  /// Rows `index` on index's device: bit-identical to features.index_select(0, index) on the
  /// whole table. `index` is a 1-D int32/int64 tensor on the CPU or a CUDA device (checked:
  /// dtype, shape, device, range). A checksum mismatch or a short read throws c10::Error naming
  /// the file and the row block; nothing wrong is returned.
  at::Tensor gather(const at::Tensor &index);
  /// Announces a later gather of `index` (the next batch): its rows in the cache are kept there
  /// until that gather, those in the victim buffer are copied out now, and the others are read
  /// from the file on a background thread. The first gather that needs a row uses what the
  /// prefetch found. Errors of the background reads are thrown by that gather.
  void prefetch(const at::Tensor &index);
  /// Drops what prefetches hold for gathers that have not come (waits for their reads).
  void cancelPrefetch();

  const FeatureStoreInfo &info() const;
  FeatureStoreStats stats() const;
  void resetStats();
  int64_t cacheRows() const;
  int64_t victimRows() const;
  /// How the file is read ("io_uring, O_DIRECT", "pread, buffered", "cuFile", ...) and, where
  /// something asked for was not available, why.
  std::string ioMode() const;
  /// Whether the victim buffer is shared memory, and its name there.
  std::string victimName() const;
  /// Releases the caches and the file (idempotent; later calls throw).
  void close();

private:
  std::unique_ptr<detail::FeatureStoreImpl> impl_;
  detail::FeatureStoreImpl &impl() const;
};

/// The name of a CachePolicy ("static", "dynamic", "hybrid") and its inverse (c10::ValueError).
std::string cachePolicyName(CachePolicy policy);
CachePolicy parseCachePolicy(const std::string &name);

} // namespace hector
