//===- spill_store.cpp - The spilling activation store (SSDTrain) ---------===//
//
// Saved storages become records; a record is written in the background into one
// of a few large files ([4 KiB header][payload padded to 4 KiB]), dropped from
// memory once written, and read back ahead of backward. See docs/spilling.md.
//
//===----------------------------------------------------------------------===//
#include "hector/spill.h"

#include "device_io.h"
#include "io.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace hector {

using namespace spill_io;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kMagic[8] = {'H', 'S', 'P', 'I', 'L', 'L', '0', '1'};

/// The first 4 KiB block of every record; written after the payload, so a record
/// whose header validates was written completely.
struct RecordHeader {
  char magic[8];
  uint64_t store_id;
  uint64_t record_id;
  uint64_t nbytes;
  uint64_t checksum;
  uint32_t checksum_kind; ///< 0: CRC32C of the bytes, 1: device digest.
  uint32_t header_crc;    ///< CRC32C of the fields above.
};

enum class State {
  Resident, ///< Kept in memory (policy, failure, or cancelled at backward begin).
  Pending,  ///< Spillable, waiting in the keep window.
  Writing,  ///< Queued for or being written by an I/O thread.
  OnDisk,   ///< Written; `storage` holds it only if it was read back or forwarded.
};

struct Record {
  int64_t id = 0;
  uint64_t seq = 0; ///< Save order of the first save.
  std::string tag;
  size_t nbytes = 0;
  c10::Device device{c10::kCPU};
  c10::Storage storage; ///< The bytes in memory; empty when only on disk.
  bool counted = false; ///< storage's bytes are in resident_bytes.
  bool external = false; ///< A parameter (leaf requiring grad): not an activation.
  const c10::StorageImpl *key = nullptr;
  c10::weak_intrusive_ptr<c10::StorageImpl> identity{c10::weak_intrusive_ptr<c10::StorageImpl>(
      c10::intrusive_ptr<c10::StorageImpl>())};
  uint32_t version = 0; ///< Version of the first save (deduplication only when unchanged).
  State state = State::Resident;
  bool scheduled = false; ///< Was ever Pending/Writing (loads from memory count as forwarded).
  bool reading = false;
  bool prefetched = false;
  std::string read_error;
  int file = -1;
  uint64_t offset = 0, span = 0, checksum = 0;
  uint32_t checksum_kind = 0;
  int refs = 0;
  std::shared_ptr<c10::Event> ready; ///< CUDA: the producer's work that wrote the bytes.
};

struct Entry {
  int64_t record = -1; ///< -1: `tensor` is held directly.
  at::Tensor tensor;   ///< Detached alias for tensors that cannot be recorded.
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  at::ScalarType dtype = at::kFloat;
  c10::VariableVersion counter{c10::VariableVersion::DISABLED};
  uint32_t version = 0;
  std::string tag;
};

struct Job {
  bool read;
  int64_t record;
};

/// Objects whose destruction is deferred until no lock is held: dropping the last
/// reference of a tensor that Python knows needs the GIL.
struct Graveyard {
  std::vector<c10::Storage> storages;
  std::vector<at::Tensor> tensors;
};

std::atomic<uint64_t> next_store_id{1};

/// The calling I/O thread's two staging buffers, at least `size` bytes each.
AlignedBuffer *staging_buffers(size_t size) {
  thread_local AlignedBuffer stage[2];
  for (auto &b : stage)
    if (b.size() < size)
      b = AlignedBuffer(size);
  return stage;
}

/// pread_full that switches `file` to buffered I/O and retries where the file
/// system refuses an O_DIRECT request.
int64_t pread_retrying(SpillFile &file, void *buf, size_t size, uint64_t offset) {
  int64_t rc = IoQueue::pread_full(file.fd(), buf, size, offset);
  if (rc == -EINVAL && file.direct()) {
    file.drop_direct();
    rc = IoQueue::pread_full(file.fd(), buf, size, offset);
  }
  return rc;
}

} // namespace

//===----------------------------------------------------------------------===//
// The engine
//===----------------------------------------------------------------------===//

class SpillEngine {
public:
  explicit SpillEngine(SpillOptions options);
  ~SpillEngine();

  ActivationHandle save(const at::Tensor &tensor, const std::string &tag, bool spillable);
  at::Tensor load(ActivationHandle handle);
  void release(ActivationHandle handle);
  void forwardBegin();
  void backwardBegin();
  void backwardEnd();
  ActivationStats stats() const;
  void synchronize();
  /// Closes the store; with `only_if_unused`, only when no handle is left (returns
  /// whether it is closed). `report` emits a pending warning on the calling thread.
  bool close(bool only_if_unused, bool report);
  std::vector<std::string> files() const;
  void injectFault(SpillFault fault, int64_t nth);
  std::string ioMode() const;
  std::string cufileStatus();
  void reportWarnings();
  const SpillOptions &options() const { return options_; }

private:
  // All *_locked functions run under mutex_.
  void begin_forward_locked();
  void begin_backward_locked();
  /// Ends the step once no handle and no record is left, in any phase (a graph
  /// dropped without backward ends it too): the files are removed.
  void maybe_end_step_locked();
  void pump_locked();
  void prefetch_locked(uint64_t below_seq);
  /// Adds the busy time (at least one write running) since the last call to the
  /// bandwidth profile.
  void note_busy_locked(Clock::time_point now);
  double write_bandwidth_locked() const;
  void set_storage_locked(Record &rec, c10::Storage storage);
  void drop_storage_locked(Record &rec, Graveyard &grave);
  void free_record_locked(Record &rec, Graveyard &grave);
  /// Makes a record whose last handle was released unreachable for deduplication (it leaves
  /// by_storage_); an I/O job still running on it frees it when done.
  void retire_locked(Record &rec);
  void ensure_files_locked();
  /// I/O threads never drop a storage that a Python object refers to (that needs
  /// the GIL, which a caller thread waiting on this store may hold): such storages
  /// move to `deferred_` and a caller thread drops them.
  void defer_python_owned_locked(Graveyard &grave);
  void emit_warning_locked();
  bool take_fault_locked(SpillFault kind, int64_t count);
  /// Loads cuFile once (CuFile::get() opens the driver, which can take long: never
  /// under mutex_) and registers `lane`'s file with it.
  void prepare_cufile(int lane);

  void worker(int index);
  void write_job(int64_t id, IoQueue &queue);
  void read_job(int64_t id);
  /// Reads a record (no lock held); returns the storage or sets `error`.
  c10::Storage read_record(const Record &snapshot, SpillFile &file, std::string &error,
                           bool inject_error);
  /// Writes a record (no lock held); returns 0 or -errno and sets `checksum`.
  int64_t write_record(const c10::Storage &storage, const Record &snapshot, SpillFile &file,
                       IoQueue &queue, uint64_t &checksum, uint32_t &kind, bool enospc,
                       bool short_write);
  /// Writes the `n`-byte payload at `at` in chunk_bytes requests, two in flight
  /// through the two staging buffers; `fill(index, buffer, length)` puts chunk
  /// `index` into `buffer`. Where the file system refuses O_DIRECT the file goes
  /// buffered and the payload is written again. Returns 0 or -errno.
  template <typename Fill>
  int64_t write_chunks(SpillFile &file, IoQueue &queue, size_t n, uint64_t at, bool short_write,
                       uint32_t &crc, Fill &&fill);
  at::Tensor materialize(const Entry &entry, const c10::Storage &storage) const;
  std::string describe(const Record &rec, const SpillFile *file) const;

  SpillOptions options_;
  const uint64_t store_id_;
  /// Random part of the file names: a file left by a killed process that had
  /// the same pid cannot collide with ours (see ensure_files_locked).
  const uint32_t file_token_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  ///< Wakes the I/O threads.
  std::condition_variable done_cv_;  ///< Signals finished I/O.
  std::vector<std::thread> threads_;
  std::deque<Job> reads_, writes_;
  std::vector<std::unique_ptr<SpillFile>> files_;
  std::vector<void *> cufile_handles_;
  std::unordered_map<int64_t, std::unique_ptr<Record>> records_;
  std::unordered_map<const c10::StorageImpl *, int64_t> by_storage_;
  std::unordered_map<ActivationHandle, Entry> entries_;
  /// seq -> id of the records written to disk in forward that backward has not
  /// loaded yet (whether or not a read has brought them back): the prefetch window
  /// slides over these in backward order.
  std::map<uint64_t, int64_t> unloaded_;
  std::deque<int64_t> pending_;         ///< Keep window, save order.
  uint64_t pending_bytes_ = 0;
  int64_t in_flight_ = 0;               ///< Jobs queued or running.
  int64_t writes_running_ = 0;
  bool closed_ = false, stopping_ = false;
  bool writes_disabled_ = false;        ///< After a write failure, until the next forward.
  bool warned_ = false;
  std::string warning_;                 ///< Emitted by the next call on a caller thread.
  std::vector<c10::Storage> deferred_;  ///< See defer_python_owned_locked.
  ActivationHandle next_handle_ = 1;
  int64_t next_record_ = 1;
  uint64_t next_seq_ = 1;
  ActivationStats stats_;

  // Phases and the adaptive policy.
  enum class Phase { Idle, Forward, Backward } phase_ = Phase::Idle;
  Clock::time_point forward_start_{};
  uint64_t step_spillable_bytes_ = 0;
  uint64_t keep_bytes_ = 0;
  // Write bandwidth: bytes written per second of wall time during which at least
  // one write runs. Both sums carry the earlier steps' share halved at every new
  // forward: an exponential moving average over steps, weighted by writing time.
  double busy_bytes_ = 0;
  double busy_seconds_ = 0;
  Clock::time_point busy_mark_{}; ///< Busy time up to here is in busy_seconds_.

  // Faults: absolute counts of record writes/reads at which each armed fault fires.
  std::vector<std::pair<SpillFault, int64_t>> faults_;
  int64_t write_count_ = 0, read_count_ = 0;
  CuFile *cufile_ = nullptr;
  std::atomic<bool> cufile_probed_{false};
  bool used_uring_ = false;
  bool used_cufile_ = false;       ///< A record was written through cuFile.
  bool cufile_failed_ = false;     ///< cuFileWrite failed: this store stops using cuFile.
  std::string cufile_refusal_;     ///< Why cuFile did not take a spill file, if it did not.
};

SpillFault parseSpillFault(const std::string &name) {
  if (name == "enospc")
    return SpillFault::Enospc;
  if (name == "short_write")
    return SpillFault::ShortWrite;
  if (name == "read_error")
    return SpillFault::ReadError;
  if (name == "corrupt")
    return SpillFault::Corrupt;
  if (name == "truncate")
    return SpillFault::Truncate;
  TORCH_CHECK(false, "hector.spill: unknown fault '", name,
              "' (expected enospc, short_write, read_error, corrupt or truncate)");
}

SpillEngine::SpillEngine(SpillOptions options)
    : options_(std::move(options)), store_id_(next_store_id++),
      file_token_(std::random_device{}()) {
  TORCH_CHECK(!options_.dir.empty(), "hector.spill: dir must not be empty");
  TORCH_CHECK(options_.threshold_bytes >= 0, "hector.spill: threshold_bytes must be >= 0");
  TORCH_CHECK(options_.prefetch >= 0, "hector.spill: prefetch must be >= 0");
  TORCH_CHECK(options_.keep_last >= 0, "hector.spill: keep_last must be >= 0");
  TORCH_CHECK(options_.io_threads >= 1 && options_.io_threads <= 64,
              "hector.spill: io_threads must be in [1, 64]");
  TORCH_CHECK(options_.chunk_bytes >= static_cast<int64_t>(kAlign),
              "hector.spill: chunk_bytes must be at least ", kAlign);
  options_.chunk_bytes = static_cast<int64_t>(align_up(options_.chunk_bytes));
  if (::mkdir(options_.dir.c_str(), 0700) != 0 && errno != EEXIST)
    TORCH_CHECK(false, "hector.spill: cannot create directory ", options_.dir, ": ",
                std::strerror(errno));
  struct stat st {};
  TORCH_CHECK(::stat(options_.dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode),
              "hector.spill: ", options_.dir, " is not a directory");
  std::string spec = options_.faults;
  if (const char *env = std::getenv("HECTOR_SPILL_FAULTS"))
    spec += std::string(spec.empty() ? "" : ",") + env;
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    if (item.empty())
      continue;
    const auto colon = item.find(':');
    const int64_t nth = colon == std::string::npos ? 1 : std::stoll(item.substr(colon + 1));
    injectFault(parseSpillFault(item.substr(0, colon)), nth);
  }
  // libcufile writes its log to ./cufile.log unless told otherwise; the variable
  // must be set before the driver opens, and here, on the caller's thread and
  // before this store's I/O threads exist (setenv is not thread-safe).
  if (options_.use_cufile)
    CuFile::prepare_environment();
  // The I/O threads start with the asynchronous signals blocked (a thread inherits its
  // creator's mask), so that a SIGINT or SIGTERM is delivered to a thread of the application:
  // Python, for one, raises KeyboardInterrupt only when its main thread wakes from a blocking
  // call, which a signal taken by one of our threads would not do.
  sigset_t all, previous;
  sigfillset(&all);
  for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP})
    sigdelset(&all, sync);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  try {
    for (int64_t i = 0; i < options_.io_threads; ++i)
      threads_.emplace_back([this, i] { worker(static_cast<int>(i)); });
  } catch (...) {
    // No thread could be started (a resource limit): stop and join those that were, which
    // the destructor, not run for a constructor that throws, would otherwise leave joinable.
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    close(/*only_if_unused=*/false, /*report=*/false);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

SpillEngine::~SpillEngine() {
  try {
    close(/*only_if_unused=*/false, /*report=*/false);
  } catch (...) {
  }
}

//===----------------------------------------------------------------------===//
// Bookkeeping
//===----------------------------------------------------------------------===//

void SpillEngine::set_storage_locked(Record &rec, c10::Storage storage) {
  rec.storage = std::move(storage);
  if (!rec.counted && !rec.external) {
    rec.counted = true;
    stats_.resident_bytes += static_cast<int64_t>(rec.nbytes);
    stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, stats_.resident_bytes);
  }
}

void SpillEngine::drop_storage_locked(Record &rec, Graveyard &grave) {
  if (rec.storage)
    grave.storages.push_back(std::move(rec.storage));
  rec.storage = c10::Storage();
  if (rec.counted) {
    rec.counted = false;
    stats_.resident_bytes -= static_cast<int64_t>(rec.nbytes);
  }
}

void SpillEngine::retire_locked(Record &rec) {
  auto it = by_storage_.find(rec.key);
  if (it != by_storage_.end() && it->second == rec.id)
    by_storage_.erase(it);
}

void SpillEngine::free_record_locked(Record &rec, Graveyard &grave) {
  drop_storage_locked(rec, grave);
  if (rec.state == State::OnDisk && rec.file >= 0 && rec.file < static_cast<int>(files_.size()))
    files_[rec.file]->punch_hole(rec.offset, rec.span);
  unloaded_.erase(rec.seq);
  retire_locked(rec);
  records_.erase(rec.id); // `rec` is gone from here on.
}

void SpillEngine::defer_python_owned_locked(Graveyard &grave) {
  auto &v = grave.storages;
  for (auto it = v.begin(); it != v.end();) {
    if (it->unsafeGetStorageImpl()->pyobj_slot()->load_pyobj() != nullptr) {
      deferred_.push_back(std::move(*it));
      it = v.erase(it);
    } else {
      ++it;
    }
  }
}

void SpillEngine::ensure_files_locked() {
  if (!files_.empty())
    return;
  for (int64_t lane = 0; lane < options_.io_threads; ++lane) {
    // The names are created exclusively. A file of the same name can only be
    // left by a killed process that had our pid, or belong to a live one in
    // another pid namespace sharing the directory, so it is never removed; the
    // random token makes such a collision practically impossible instead.
    std::ostringstream path;
    path << options_.dir << "/hector-spill-" << ::getpid() << "-" << std::hex << file_token_
         << std::dec << "-" << store_id_ << "-" << lane << ".bin";
    files_.push_back(
        std::make_unique<SpillFile>(path.str(), options_.direct_io, options_.anonymous_files));
    cufile_handles_.push_back(nullptr);
  }
}

void SpillEngine::emit_warning_locked() {
  if (warning_.empty() || DeferStoreWarnings::active())
    return; // Kept for a call from a thread that can show it (see DeferStoreWarnings).
  const std::string message = std::move(warning_);
  warning_.clear();
  TORCH_WARN(message);
}

bool SpillEngine::take_fault_locked(SpillFault kind, int64_t count) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (it->first == kind && it->second == count) {
      faults_.erase(it);
      return true;
    }
  }
  return false;
}

void SpillEngine::injectFault(SpillFault fault, int64_t nth) {
  TORCH_CHECK(nth >= 1, "hector.spill: a fault's ordinal must be >= 1");
  std::lock_guard<std::mutex> lock(mutex_);
  const bool is_read = fault == SpillFault::ReadError;
  faults_.emplace_back(fault, (is_read ? read_count_ : write_count_) + nth);
}

std::string SpillEngine::describe(const Record &rec, const SpillFile *file) const {
  std::ostringstream os;
  os << "(record " << rec.id << ", " << rec.nbytes << " bytes";
  if (file)
    os << ", spill file " << file->path() << " at offset " << rec.offset;
  os << ")";
  return os.str();
}

//===----------------------------------------------------------------------===//
// Phases and policy
//===----------------------------------------------------------------------===//

void SpillEngine::note_busy_locked(Clock::time_point now) {
  if (writes_running_ > 0)
    busy_seconds_ += std::chrono::duration<double>(now - busy_mark_).count();
  busy_mark_ = now;
}

double SpillEngine::write_bandwidth_locked() const {
  // Bytes of writes still running are not counted yet while their time is: an
  // estimate taken mid-burst errs low, which keeps more in memory, not less.
  return busy_seconds_ > 0.0 ? busy_bytes_ / busy_seconds_ : 0.0;
}

void SpillEngine::begin_forward_locked() {
  phase_ = Phase::Forward;
  forward_start_ = Clock::now();
  step_spillable_bytes_ = 0;
  writes_disabled_ = false; // A write failure pauses spilling for one step only.
  // The bandwidth profile is a moving average: earlier steps weigh half as much.
  note_busy_locked(forward_start_);
  busy_bytes_ *= 0.5;
  busy_seconds_ *= 0.5;
}

void SpillEngine::begin_backward_locked() {
  if (phase_ == Phase::Forward && options_.adaptive) {
    const Clock::time_point now = Clock::now();
    note_busy_locked(now);
    const double forward_seconds = std::chrono::duration<double>(now - forward_start_).count();
    const double bandwidth = write_bandwidth_locked();
    if (bandwidth > 0) {
      // What the disk could take during forward (with a margin) is spilled;
      // the rest (the latest saves) stays in memory next step.
      const double writable = bandwidth * forward_seconds * 0.9;
      keep_bytes_ = writable >= static_cast<double>(step_spillable_bytes_)
                        ? 0
                        : step_spillable_bytes_ - static_cast<uint64_t>(writable);
      stats_.adaptive_keep_bytes = static_cast<int64_t>(keep_bytes_);
    }
  }
  phase_ = Phase::Backward;
  // Whatever still waits in the keep window is kept: backward needs it first.
  for (int64_t id : pending_) {
    auto it = records_.find(id);
    if (it != records_.end() && it->second->state == State::Pending) {
      it->second->state = State::Resident;
      ++stats_.kept;
    }
  }
  pending_.clear();
  pending_bytes_ = 0;
  prefetch_locked(UINT64_MAX);
}

void SpillEngine::maybe_end_step_locked() {
  if (!entries_.empty() || !records_.empty())
    return;
  phase_ = Phase::Idle;
  writes_disabled_ = false;
  // Every record is gone, so no I/O uses the files: remove them.
  for (size_t i = 0; i < files_.size(); ++i)
    if (cufile_ && cufile_handles_[i])
      cufile_->deregister(cufile_handles_[i]);
  cufile_handles_.clear();
  files_.clear();
  unloaded_.clear();
  pending_.clear();
  pending_bytes_ = 0;
}

void SpillEngine::pump_locked() {
  while (!pending_.empty()) {
    auto it = records_.find(pending_.front());
    if (it == records_.end() || it->second->state != State::Pending) {
      pending_.pop_front();
      continue;
    }
    Record &rec = *it->second;
    const bool window_full = static_cast<int64_t>(pending_.size()) > options_.keep_last &&
                             pending_bytes_ - rec.nbytes >= keep_bytes_;
    if (!window_full)
      break;
    pending_.pop_front();
    pending_bytes_ -= rec.nbytes;
    if (writes_disabled_) {
      rec.state = State::Resident;
      rec.scheduled = false;
      ++stats_.kept;
      continue;
    }
    rec.state = State::Writing;
    writes_.push_back({false, rec.id});
    ++in_flight_;
    work_cv_.notify_one();
  }
}

void SpillEngine::prefetch_locked(uint64_t below_seq) {
  // The window is exactly the next `prefetch` records backward will load (those
  // below `below_seq` in save order, not loaded yet). Records of the window that
  // are being read or were read already count as well, so at most `prefetch`
  // records are held ahead of backward, however fast the reads are.
  int64_t budget = options_.prefetch;
  for (auto it = unloaded_.lower_bound(below_seq); budget > 0 && it != unloaded_.begin();
       --budget) {
    --it;
    Record &rec = *records_.at(it->second);
    if (rec.reading || rec.storage || !rec.read_error.empty())
      continue;
    rec.reading = true;
    rec.prefetched = true;
    reads_.push_back({true, rec.id});
    ++in_flight_;
    ++stats_.prefetched;
    work_cv_.notify_one();
  }
}

//===----------------------------------------------------------------------===//
// save / load / release
//===----------------------------------------------------------------------===//

ActivationHandle SpillEngine::save(const at::Tensor &tensor, const std::string &tag,
                                   bool spillable) {
  // A save while this thread runs a backward pass (the recomputation of a
  // reentrant checkpoint, a double backward) belongs to that backward: it starts
  // no forward (which would reset the adaptive profile) and is not spilled, since
  // the backward that follows needs it at once.
  const bool in_backward = torch::autograd::get_current_graph_task_id() != -1;
  Graveyard grave;
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!closed_, "hector.spill: save() on a closed store");
  emit_warning_locked();
  std::move(deferred_.begin(), deferred_.end(), std::back_inserter(grave.storages));
  deferred_.clear();
  if (in_backward) {
    if (phase_ == Phase::Forward)
      begin_backward_locked();
  } else if (phase_ != Phase::Forward) {
    begin_forward_locked();
  }
  ++stats_.saved;
  const ActivationHandle handle = next_handle_++;
  Entry entry;
  entry.tag = tag;
  if (!tensor.defined()) {
    entries_.emplace(handle, std::move(entry));
    return handle;
  }
  entry.counter = tensor.unsafeGetTensorImpl()->version_counter();
  entry.version = entry.counter.enabled() ? entry.counter.current_version() : 0;

  const bool recordable = tensor.layout() == at::kStrided && tensor.has_storage() &&
                          !tensor.is_conj() && !tensor.is_neg() &&
                          (tensor.is_cpu() || tensor.is_cuda()) && tensor.storage().data() &&
                          !tensor.is_quantized() && !tensor.unsafeGetTensorImpl()->is_python_dispatch();
  if (!recordable) {
    entry.tensor = tensor.detach(); // Shares storage and version counter, no autograd edge.
    entries_.emplace(handle, std::move(entry));
    ++stats_.kept;
    return handle;
  }
  entry.sizes = tensor.sizes().vec();
  entry.strides = tensor.strides().vec();
  entry.storage_offset = tensor.storage_offset();
  entry.dtype = tensor.scalar_type();

  const c10::Storage &storage = tensor.storage();
  const c10::StorageImpl *key = storage.unsafeGetStorageImpl();
  auto found = by_storage_.find(key);
  if (found != by_storage_.end()) {
    auto rit = records_.find(found->second);
    if (rit != records_.end()) {
      Record &rec = *rit->second;
      // The same storage, alive, and unchanged since it was recorded: reuse. A record whose
      // last handle was released is dead even while its I/O finishes (retire_locked took it
      // out of by_storage_); the check on refs guards that invariant.
      auto alive = rec.identity.lock();
      if (rec.refs > 0 && alive.get() == key && entry.version == rec.version &&
          rec.nbytes == storage.nbytes()) {
        ++rec.refs;
        entry.record = rec.id;
        entries_.emplace(handle, std::move(entry));
        ++stats_.deduplicated;
        return handle;
      }
    }
  }

  auto rec = std::make_unique<Record>();
  rec->id = next_record_++;
  rec->seq = next_seq_++;
  rec->tag = tag;
  rec->nbytes = storage.nbytes();
  rec->device = tensor.device();
  rec->key = key;
  rec->identity = storage.getWeakStorageImpl();
  rec->version = entry.version;
  rec->refs = 1;
  // A parameter, or a view of one (F.linear saves weight.t()): spilling it would
  // free nothing, the parameter holds the storage.
  const at::TensorBase &base = tensor.is_view() ? tensor._base() : tensor;
  rec->external = base.is_leaf() && base.requires_grad();
  set_storage_locked(*rec, storage);
  if (rec->device.is_cuda()) {
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    rec->ready = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
    rec->ready->record(guard.getStream(rec->device));
  }
  // Scalars (the loss) are never spilled, whatever the threshold.
  // The threshold applies to the storage: it is what is written and freed.
  const bool spill = spillable && !in_backward && !rec->external && tensor.dim() > 0 &&
                     static_cast<int64_t>(rec->nbytes) >= options_.threshold_bytes;
  entry.record = rec->id;
  by_storage_[key] = rec->id;
  if (spill) {
    rec->state = State::Pending;
    rec->scheduled = true;
    pending_.push_back(rec->id);
    pending_bytes_ += rec->nbytes;
    step_spillable_bytes_ += rec->nbytes;
  } else {
    rec->state = State::Resident;
    ++stats_.kept;
  }
  entries_.emplace(handle, std::move(entry));
  records_.emplace(rec->id, std::move(rec));
  pump_locked();
  return handle;
}

at::Tensor SpillEngine::materialize(const Entry &entry, const c10::Storage &storage) const {
  at::Tensor out = at::empty({0}, at::TensorOptions().dtype(entry.dtype).device(storage.device()));
  out.set_(storage, entry.storage_offset, entry.sizes, entry.strides);
  return out;
}

at::Tensor SpillEngine::load(ActivationHandle handle) {
  Graveyard grave;
  std::unique_lock<std::mutex> lock(mutex_);
  TORCH_CHECK(!closed_, "hector.spill: load() on a closed store");
  emit_warning_locked();
  std::move(deferred_.begin(), deferred_.end(), std::back_inserter(grave.storages));
  deferred_.clear();
  auto eit = entries_.find(handle);
  TORCH_CHECK(eit != entries_.end(), "hector.spill: activation handle ", handle,
              " is unknown or was already released");
  if (phase_ == Phase::Forward)
    begin_backward_locked();
  // A copy: the wait below releases the lock, and another thread may release the handle
  // (dropping the graph) meanwhile.
  const Entry entry = eit->second;
  checkSavedVersion(entry.counter, entry.version, entry.tag);
  ++stats_.loaded;
  if (entry.record < 0)
    return entry.tensor;

  auto found = records_.find(entry.record);
  TORCH_CHECK(found != records_.end(), "hector.spill: internal error: saved tensor '", entry.tag,
              "' has lost its record ", entry.record);
  Record *rec = found->second.get();
  unloaded_.erase(rec->seq); // Backward has reached it: it leaves the prefetch window.
  if (rec->state == State::Pending) {
    // Backward already needs it: cancel the write.
    rec->state = State::Resident;
    ++stats_.kept;
    pending_.erase(std::find(pending_.begin(), pending_.end(), rec->id));
    pending_bytes_ -= rec->nbytes;
  }
  if (rec->storage) {
    if (rec->scheduled && (rec->state == State::Writing || rec->state == State::Resident ||
                           (rec->state == State::OnDisk && !rec->prefetched)))
      ++stats_.forwarded;
    else if (rec->prefetched)
      ++stats_.prefetch_hits;
  } else {
    // A failed read is final: the message says why the activation is lost.
    TORCH_CHECK(rec->read_error.empty(), rec->read_error);
    TORCH_CHECK(rec->state == State::OnDisk, "hector.spill: internal error: saved tensor '",
                entry.tag, "' (record ", rec->id, ") is neither in memory nor on disk");
    if (rec->reading) {
      ++stats_.prefetch_hits;
    } else {
      ++stats_.demand_reads;
      rec->reading = true;
      reads_.push_front({true, rec->id});
      ++in_flight_;
      work_cv_.notify_one();
    }
    const int64_t id = rec->id;
    done_cv_.wait(lock, [&] {
      auto it = records_.find(id);
      return it == records_.end() || !it->second->reading;
    });
    auto it = records_.find(id);
    TORCH_CHECK(it != records_.end(), "hector.spill: saved tensor '", entry.tag,
                "' was released while it was being read");
    rec = it->second.get();
    if (!rec->read_error.empty()) {
      const std::string message = rec->read_error;
      TORCH_CHECK(false, message);
    }
  }
  // A live record holds its bytes unless they are on disk, and a finished read brings them
  // back or records why not: an empty storage here would be an engine bug, never a segfault.
  TORCH_CHECK(rec->storage, "hector.spill: internal error: saved tensor '", entry.tag,
              "' (record ", rec->id, ") has no bytes after its read");
  c10::Storage storage = rec->storage;
  prefetch_locked(rec->seq);
  at::Tensor out = materialize(entry, storage);
  if (out.is_cuda()) {
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    out.record_stream(guard.getStream(out.device()));
  }
  return out;
}

void SpillEngine::release(ActivationHandle handle) {
  Graveyard grave;
  std::lock_guard<std::mutex> lock(mutex_);
  auto eit = entries_.find(handle);
  if (eit == entries_.end())
    return;
  grave.tensors.push_back(std::move(eit->second.tensor));
  const int64_t id = eit->second.record;
  entries_.erase(eit);
  if (id >= 0) {
    auto rit = records_.find(id);
    if (rit != records_.end() && --rit->second->refs == 0) {
      Record &rec = *rit->second;
      unloaded_.erase(rec.seq); // Never loaded now: not part of the prefetch window.
      if (rec.state == State::Pending) {
        pending_.erase(std::find(pending_.begin(), pending_.end(), rec.id));
        pending_bytes_ -= rec.nbytes;
        rec.state = State::Resident;
      }
      if (rec.state == State::Writing || rec.reading) {
        // The I/O thread frees the record when done. Until then the record is dead: no later
        // save of the same storage may take it up again (its bytes are dropped here, and a
        // queued write of a record without bytes frees it), so it leaves by_storage_ now.
        retire_locked(rec);
        drop_storage_locked(rec, grave);
      } else {
        free_record_locked(rec, grave);
      }
    }
  }
  maybe_end_step_locked();
}

void SpillEngine::forwardBegin() {
  std::lock_guard<std::mutex> lock(mutex_);
  begin_forward_locked();
}

void SpillEngine::backwardBegin() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_ != Phase::Backward)
    begin_backward_locked();
}

void SpillEngine::backwardEnd() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_ == Phase::Backward)
    phase_ = Phase::Idle;
  maybe_end_step_locked();
}

ActivationStats SpillEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void SpillEngine::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return in_flight_ == 0; });
  emit_warning_locked();
}

void SpillEngine::reportWarnings() {
  std::lock_guard<std::mutex> lock(mutex_);
  emit_warning_locked();
}

std::string SpillEngine::cufileStatus() {
  if (!options_.use_cufile)
    return "disabled (use_cufile=False)";
  if (!cufile_probed_.load()) {
    CuFile *api = CuFile::get(); // Not under mutex_: opening the driver can take long.
    std::lock_guard<std::mutex> lock(mutex_);
    cufile_ = api;
    cufile_probed_ = true;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  std::string status = CuFile::status();
  if (!cufile_refusal_.empty())
    status += ", but " + cufile_refusal_ + ": CUDA tensors use the pinned bounce buffer";
  return status;
}

std::vector<std::string> SpillEngine::files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto &f : files_)
    out.push_back(f->path());
  return out;
}

std::string SpillEngine::ioMode() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string mode = files_.empty() ? (options_.direct_io ? "direct" : "buffered")
                                    : (files_.front()->direct() ? "direct" : "buffered");
  if (used_uring_)
    mode += "+io_uring";
  if (used_cufile_)
    mode += "+cufile";
  return mode;
}

bool SpillEngine::close(bool only_if_unused, bool report) {
  Graveyard grave;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (closed_)
      return true;
    if (only_if_unused && !entries_.empty())
      return false;
    closed_ = true;
    stopping_ = true;
    // Queued jobs are dropped; running ones finish.
    in_flight_ -= static_cast<int64_t>(reads_.size() + writes_.size());
    reads_.clear();
    writes_.clear();
    work_cv_.notify_all();
  }
  for (auto &t : threads_)
    t.join();
  threads_.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &[handle, entry] : entries_)
    grave.tensors.push_back(std::move(entry.tensor));
  entries_.clear();
  for (auto &[id, rec] : records_) {
    if (rec->storage)
      grave.storages.push_back(std::move(rec->storage));
  }
  records_.clear();
  by_storage_.clear();
  pending_.clear();
  pending_bytes_ = 0;
  stats_.resident_bytes = 0;
  for (size_t i = 0; i < cufile_handles_.size(); ++i)
    if (cufile_ && cufile_handles_[i])
      cufile_->deregister(cufile_handles_[i]);
  cufile_handles_.clear();
  files_.clear();
  unloaded_.clear();
  done_cv_.notify_all();
  // A failure after the last save or load of the step is reported here at the
  // latest. The destructor, which may run on any thread, neither reports nor
  // drops the storages Python owns (that needs the GIL).
  if (report) {
    std::move(deferred_.begin(), deferred_.end(), std::back_inserter(grave.storages));
    deferred_.clear();
    emit_warning_locked();
  }
  return true;
}

//===----------------------------------------------------------------------===//
// I/O threads
//===----------------------------------------------------------------------===//

void SpillEngine::worker(int index) {
  (void)index;
  IoQueue queue(options_.use_uring);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    used_uring_ = used_uring_ || queue.uring();
  }
  for (;;) {
    Job job{};
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !reads_.empty() || !writes_.empty(); });
      if (stopping_)
        return;
      // Reads first: backward is waiting for them.
      if (!reads_.empty()) {
        job = reads_.front();
        reads_.pop_front();
      } else {
        job = writes_.front();
        writes_.pop_front();
      }
    }
    if (job.read)
      read_job(job.record);
    else
      write_job(job.record, queue);
    std::lock_guard<std::mutex> lock(mutex_);
    --in_flight_;
    done_cv_.notify_all();
  }
}

void SpillEngine::prepare_cufile(int lane) {
  if (!cufile_probed_.load()) {
    CuFile *api = CuFile::get();
    std::lock_guard<std::mutex> lock(mutex_);
    cufile_ = api;
    cufile_probed_ = true;
  }
  int fd = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!cufile_ || cufile_failed_ || lane >= static_cast<int>(files_.size()) ||
        cufile_handles_[lane])
      return;
    fd = files_[lane]->fd();
  }
  // The file outlives this call: the record being written keeps the step alive.
  int error = 0;
  void *handle = cufile_->register_fd(fd, &error);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handle) {
    // Not on this file system (or without O_DIRECT): the bounce buffer is used, and
    // the registration is tried again with the next record of this lane.
    cufile_refusal_ = "cuFileHandleRegister refused the spill file (error " +
                      std::to_string(error) + ")";
  } else if (lane < static_cast<int>(cufile_handles_.size()) && !cufile_handles_[lane]) {
    cufile_handles_[lane] = handle;
  } else {
    cufile_->deregister(handle); // Another I/O thread registered the file first.
  }
}

void SpillEngine::write_job(int64_t id, IoQueue &queue) {
  Graveyard grave;
  Record snapshot;
  c10::Storage storage;
  SpillFile *file = nullptr;
  bool enospc = false, short_write = false, corrupt = false, truncate = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = records_.find(id);
    if (it == records_.end())
      return;
    Record &rec = *it->second;
    if (rec.refs == 0 || !rec.storage) {
      // Released before its write started: nothing to write.
      rec.state = State::Resident;
      free_record_locked(rec, grave);
      maybe_end_step_locked(); // It may have been the step's last record.
      defer_python_owned_locked(grave);
      return;
    }
    try {
      ensure_files_locked();
    } catch (const c10::Error &e) {
      rec.state = State::Resident;
      rec.scheduled = false;
      ++stats_.write_failures;
      ++stats_.kept;
      writes_disabled_ = true;
      if (!warned_) {
        warned_ = true;
        warning_ = std::string("hector.spill: spilling is off for this step, the tensors stay in "
                               "memory: ") + e.what_without_backtrace();
      }
      return;
    }
    rec.file = static_cast<int>(rec.id % static_cast<int64_t>(files_.size()));
    file = files_[rec.file].get();
    rec.span = kAlign + align_up(rec.nbytes);
    rec.offset = file->allocate(rec.span);
    storage = rec.storage;
    snapshot.id = rec.id;
    snapshot.nbytes = rec.nbytes;
    snapshot.device = rec.device;
    snapshot.offset = rec.offset;
    snapshot.span = rec.span;
    snapshot.file = rec.file;
    snapshot.ready = rec.ready;
    const int64_t n = ++write_count_;
    enospc = take_fault_locked(SpillFault::Enospc, n);
    short_write = take_fault_locked(SpillFault::ShortWrite, n);
    corrupt = take_fault_locked(SpillFault::Corrupt, n);
    truncate = take_fault_locked(SpillFault::Truncate, n);
    note_busy_locked(Clock::now());
    ++writes_running_;
  }
  // cuFile is loaded at the first CUDA record only: it is costly and noisy to
  // initialise on machines without a GPU.
  if (snapshot.device.is_cuda() && options_.use_cufile)
    prepare_cufile(snapshot.file);

  uint64_t checksum = 0;
  uint32_t kind = 0;
  std::string failure;
  int64_t rc;
  try {
    rc = write_record(storage, snapshot, *file, queue, checksum, kind, enospc, short_write);
  } catch (const c10::Error &e) {
    rc = -EIO;
    failure = e.what_without_backtrace();
  }
  if (rc == 0 && (corrupt || truncate)) {
    // Fault injection: damage the record on disk after it was written correctly.
    AlignedBuffer block(kAlign);
    const uint64_t at = snapshot.offset + kAlign;
    if (corrupt && IoQueue::pread_full(file->fd(), block.data(), kAlign, at) == kAlign) {
      block.data()[std::min<size_t>(snapshot.nbytes / 2, kAlign - 1)] ^= 0x5A;
      (void)IoQueue::pwrite_full(file->fd(), block.data(), kAlign, at);
    }
    if (truncate)
      (void)::ftruncate(file->fd(),
                        static_cast<off_t>(snapshot.offset + kAlign +
                                           align_up(snapshot.nbytes / 2 + 1) - kAlign));
  }

  Graveyard late; // Declared before the lock: destroyed after it is released.
  std::lock_guard<std::mutex> lock(mutex_);
  note_busy_locked(Clock::now());
  --writes_running_;
  auto it = records_.find(id);
  if (it == records_.end())
    return;
  Record &rec = *it->second;
  storage = c10::Storage(); // Not the last reference: the record or the grave holds one.
  if (rc == 0) {
    busy_bytes_ += static_cast<double>(rec.nbytes);
    rec.state = State::OnDisk;
    rec.checksum = checksum;
    rec.checksum_kind = kind;
    ++stats_.spilled;
    stats_.bytes_written += static_cast<int64_t>(rec.nbytes);
    if (rec.refs == 0) {
      free_record_locked(rec, grave);
    } else if (phase_ != Phase::Backward) {
      drop_storage_locked(rec, grave); // The point of it all: the memory is free.
      unloaded_.emplace(rec.seq, rec.id);
    }
    // In backward the record stays in memory: it will be loaded soon (forwarding).
  } else {
    if (file && rec.span)
      file->punch_hole(rec.offset, rec.span);
    rec.state = State::Resident;
    rec.scheduled = false;
    ++stats_.write_failures;
    ++stats_.kept;
    writes_disabled_ = true;
    if (!warned_) {
      warned_ = true;
      std::ostringstream os;
      os << "hector.spill: writing saved tensor '" << rec.tag << "' " << describe(rec, file)
         << " failed: " << (failure.empty() ? std::strerror(static_cast<int>(-rc)) : failure)
         << ". It and the tensors after it in this step stay in memory (nothing is lost; "
            "this warning is shown once).";
      warning_ = os.str();
    }
    if (rec.refs == 0)
      free_record_locked(rec, grave);
  }
  maybe_end_step_locked(); // The step's last record may have been freed here.
  done_cv_.notify_all();
  defer_python_owned_locked(grave);
  std::swap(late, grave);
}

template <typename Fill>
int64_t SpillEngine::write_chunks(SpillFile &file, IoQueue &queue, size_t n, uint64_t at,
                                  bool short_write, uint32_t &crc, Fill &&fill) {
  const size_t chunk = static_cast<size_t>(options_.chunk_bytes);
  AlignedBuffer *stage = staging_buffers(chunk);
  for (int attempt = 0; attempt < 2; ++attempt) {
    crc = 0;
    int64_t rc = 0;
    for (size_t index = 0, off = 0; off < n && rc >= 0; ++index, off += chunk) {
      // Requests alternate between the buffers: the oldest one uses this slot.
      if (queue.pending() == 2 && (rc = queue.wait_oldest()) < 0)
        break;
      const size_t len = std::min(chunk, n - off);
      char *buf = stage[index % 2].data();
      fill(index, buf, len);
      crc = crc32c(crc, buf, len);
      const size_t padded = align_up(len);
      std::memset(buf + len, 0, padded - len);
      if (short_write && off == 0) {
        // Fault injection: the device takes part of the request, then is full.
        (void)IoQueue::pwrite_full(file.fd(), buf, kAlign, at);
        rc = -ENOSPC;
        break;
      }
      queue.submit_write(file.fd(), buf, padded, at + off);
    }
    while (queue.pending()) {
      const int64_t r = queue.wait_oldest();
      if (rc >= 0 && r < 0)
        rc = r;
    }
    if (rc == -EINVAL && file.direct()) {
      file.drop_direct(); // The file system refused O_DIRECT: go buffered.
      continue;
    }
    return rc < 0 ? rc : 0;
  }
  return -EIO;
}

int64_t SpillEngine::write_record(const c10::Storage &storage, const Record &snap,
                                  SpillFile &file, IoQueue &queue, uint64_t &checksum,
                                  uint32_t &kind, bool enospc, bool short_write) {
  if (enospc)
    return -ENOSPC;
  const size_t n = snap.nbytes;
  const uint64_t payload_at = snap.offset + kAlign;
  const size_t chunk = static_cast<size_t>(options_.chunk_bytes);
  void *cufile_handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (snap.device.is_cuda() && !cufile_failed_ &&
        snap.file < static_cast<int>(cufile_handles_.size()))
      cufile_handle = cufile_handles_[snap.file];
  }

  auto write_header = [&](uint64_t sum, uint32_t sum_kind) -> int64_t {
    AlignedBuffer block(kAlign);
    std::memset(block.data(), 0, kAlign);
    RecordHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.store_id = store_id_;
    h.record_id = static_cast<uint64_t>(snap.id);
    h.nbytes = n;
    h.checksum = sum;
    h.checksum_kind = sum_kind;
    h.header_crc = crc32c(0, &h, offsetof(RecordHeader, header_crc));
    std::memcpy(block.data(), &h, sizeof h);
    int64_t rc = IoQueue::pwrite_full(file.fd(), block.data(), kAlign, snap.offset);
    if (rc == -EINVAL && file.direct()) {
      file.drop_direct();
      rc = IoQueue::pwrite_full(file.fd(), block.data(), kAlign, snap.offset);
    }
    return rc < 0 ? rc : 0;
  };

  uint32_t crc = 0;
  int64_t rc = 0;
  if (snap.device.is_cuda()) {
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    const c10::Stream stream = guard.getStreamFromGlobalPool(snap.device, false);
    c10::StreamGuard stream_guard(stream);
    if (snap.ready)
      snap.ready->block(stream);
    at::Tensor bytes = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(snap.device));
    bytes.set_(storage, 0, {static_cast<int64_t>(n)}, {1});
    if (cufile_handle) {
      // GPUDirect Storage: the payload goes from device memory to the file.
      const uint64_t digest = device_digest(bytes);
      stream.synchronize();
      const int64_t wrote = cufile_->write(cufile_handle, storage.data(), n, payload_at);
      if (wrote >= 0 && static_cast<size_t>(wrote) < n)
        return -ENOSPC; // A short write: the device is full.
      if (wrote >= 0) {
        checksum = digest;
        kind = 1;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          used_cufile_ = true;
        }
        return write_header(digest, 1);
      }
      // cuFile itself failed: the bounce buffer writes this record (a failure of
      // the disk shows there too), and the store no longer uses cuFile.
      std::lock_guard<std::mutex> lock(mutex_);
      cufile_failed_ = true;
      cufile_refusal_ = "cuFileWrite failed with " + std::to_string(wrote);
    }
    // A pinned bounce buffer in two halves: the device-to-host copy of a chunk
    // (asynchronous on the I/O stream, followed by an event) runs two chunks
    // ahead of the file writes, so it overlaps them; a half is refilled as soon
    // as its bytes are in a staging buffer.
    at::Tensor pinned = at::empty({static_cast<int64_t>(2 * chunk)},
                                  at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    c10::Event copied[2] = {c10::Event(c10::DeviceType::CUDA), c10::Event(c10::DeviceType::CUDA)};
    auto start_copy = [&](size_t index) {
      const size_t off = index * chunk;
      if (off >= n)
        return;
      const auto len = static_cast<int64_t>(std::min(chunk, n - off));
      pinned.narrow(0, static_cast<int64_t>((index % 2) * chunk), len)
          .copy_(bytes.narrow(0, static_cast<int64_t>(off), len), /*non_blocking=*/true);
      copied[index % 2].record(stream);
    };
    rc = write_chunks(file, queue, n, payload_at, short_write, crc,
                      [&](size_t index, char *buf, size_t len) {
                        if (index == 0) { // Also on the buffered retry: start over.
                          start_copy(0);
                          start_copy(1);
                        }
                        copied[index % 2].synchronize();
                        std::memcpy(buf, static_cast<const char *>(pinned.data_ptr()) +
                                             (index % 2) * chunk,
                                    len);
                        start_copy(index + 2);
                      });
    stream.synchronize(); // No copy into `pinned` may outlive it (after an error).
  } else {
    // CPU: copy into the staging buffers (the checksum is computed on the way).
    const char *src = static_cast<const char *>(storage.data());
    rc = write_chunks(file, queue, n, payload_at, short_write, crc,
                      [&](size_t index, char *buf, size_t len) {
                        std::memcpy(buf, src + index * chunk, len);
                      });
  }
  if (rc < 0)
    return rc;
  checksum = crc;
  kind = 0;
  return write_header(crc, 0);
}

c10::Storage SpillEngine::read_record(const Record &snap, SpillFile &file, std::string &error,
                                      bool inject_error) {
  const size_t n = snap.nbytes;
  const uint64_t payload_at = snap.offset + kAlign;
  auto fail = [&](const std::string &why) {
    std::ostringstream os;
    os << "hector.spill: cannot restore saved tensor '" << snap.tag << "' " << describe(snap, &file)
       << ": " << why
       << ". The activation is lost, so backward cannot continue (no gradient was computed "
          "from damaged data).";
    error = os.str();
    return c10::Storage();
  };
  if (inject_error)
    return fail(std::string("read failed: ") + std::strerror(EIO));

  // Header: written last, so it proves the record is complete and belongs here.
  AlignedBuffer header(kAlign);
  int64_t rc = pread_retrying(file, header.data(), kAlign, snap.offset);
  if (rc < 0)
    return fail(std::string("read failed: ") + std::strerror(static_cast<int>(-rc)));
  if (rc < static_cast<int64_t>(kAlign))
    return fail("the spill file is truncated (the record's header is missing)");
  RecordHeader h;
  std::memcpy(&h, header.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 ||
      h.header_crc != crc32c(0, &h, offsetof(RecordHeader, header_crc)) ||
      h.store_id != store_id_ || h.record_id != static_cast<uint64_t>(snap.id) ||
      h.nbytes != n || h.checksum != snap.checksum || h.checksum_kind != snap.checksum_kind)
    return fail("the record's header is damaged or belongs to another record");

  const size_t padded = align_up(n);
  const size_t chunk = static_cast<size_t>(options_.chunk_bytes);
  if (snap.device.is_cuda()) {
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    const c10::Stream stream = guard.getStreamFromGlobalPool(snap.device, false);
    c10::StreamGuard stream_guard(stream);
    at::Tensor bytes = at::empty({static_cast<int64_t>(n)},
                                 at::TensorOptions().dtype(at::kByte).device(snap.device));
    void *cufile_handle = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (snap.file < static_cast<int>(cufile_handles_.size()))
        cufile_handle = cufile_handles_[snap.file];
    }
    bool done = false;
    if (snap.checksum_kind == 1 && cufile_handle) {
      const int64_t got = cufile_->read(cufile_handle, bytes.data_ptr(), n, payload_at);
      if (got >= 0 && static_cast<size_t>(got) < n)
        return fail("the spill file is truncated (" + std::to_string(got) + " of " +
                    std::to_string(n) + " payload bytes present)");
      // Where cuFile itself fails, the bounce buffer reads the payload: the
      // record's device digest verifies it just the same.
      done = got >= 0;
    }
    uint32_t crc = 0;
    if (!done) {
      // File -> staging buffer (checksummed) -> one half of a pinned buffer ->
      // device (asynchronous, followed by an event): the host-to-device copy of
      // a chunk overlaps the read of the next; a half is refilled once the copy
      // out of it two chunks ago has finished.
      AlignedBuffer *stage = staging_buffers(chunk);
      at::Tensor pinned = at::empty({static_cast<int64_t>(2 * chunk)},
                                    at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      c10::Event copied[2] = {c10::Event(c10::DeviceType::CUDA),
                              c10::Event(c10::DeviceType::CUDA)};
      std::string error;
      for (size_t index = 0, off = 0; off < n; ++index, off += chunk) {
        const size_t len = std::min(chunk, n - off);
        char *buf = stage[0].data();
        const int64_t got = pread_retrying(file, buf, align_up(len), payload_at + off);
        if (got < 0) {
          error = std::string("read failed: ") + std::strerror(static_cast<int>(-got));
          break;
        }
        if (static_cast<size_t>(got) < len) {
          error = "the spill file is truncated";
          break;
        }
        crc = crc32c(crc, buf, len);
        const size_t half = index % 2;
        if (index >= 2)
          copied[half].synchronize();
        char *dst = static_cast<char *>(pinned.data_ptr()) + half * chunk;
        std::memcpy(dst, buf, len);
        bytes.narrow(0, static_cast<int64_t>(off), static_cast<int64_t>(len))
            .copy_(pinned.narrow(0, static_cast<int64_t>(half * chunk), static_cast<int64_t>(len)),
                   /*non_blocking=*/true);
        copied[half].record(stream);
      }
      stream.synchronize(); // No copy out of `pinned` may outlive it.
      if (!error.empty())
        return fail(error);
    }
    const bool intact = snap.checksum_kind == 1 ? device_digest(bytes) == snap.checksum
                                                : crc == snap.checksum;
    if (!intact)
      return fail("checksum mismatch (the file was corrupted)");
    stream.synchronize();
    return bytes.storage();
  }

  // CPU: read straight into an aligned allocation that becomes the storage.
  void *mem = nullptr;
  if (posix_memalign(&mem, kAlign, std::max<size_t>(padded, kAlign)) != 0)
    return fail("out of memory for the read buffer");
  at::DataPtr data(mem, mem, [](void *p) { std::free(p); }, c10::Device(c10::kCPU));
  rc = pread_retrying(file, mem, padded, payload_at);
  if (rc < 0)
    return fail(std::string("read failed: ") + std::strerror(static_cast<int>(-rc)));
  if (static_cast<size_t>(rc) < n)
    return fail("the spill file is truncated (" + std::to_string(rc) + " of " +
                std::to_string(n) + " payload bytes present)");
  if (crc32c(0, mem, n) != snap.checksum)
    return fail("checksum mismatch (the file was corrupted)");
  return c10::Storage(c10::Storage::use_byte_size_t(), n, std::move(data), nullptr, false);
}

void SpillEngine::read_job(int64_t id) {
  Graveyard grave;
  Record snapshot;
  SpillFile *file = nullptr;
  bool inject = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = records_.find(id);
    if (it == records_.end())
      return;
    Record &rec = *it->second;
    if (rec.refs == 0 || rec.state != State::OnDisk || rec.file < 0 ||
        rec.file >= static_cast<int>(files_.size())) {
      rec.reading = false;
      if (rec.refs == 0) {
        free_record_locked(rec, grave);
        maybe_end_step_locked(); // It may have been the step's last record.
      }
      done_cv_.notify_all();
      defer_python_owned_locked(grave);
      return;
    }
    file = files_[rec.file].get();
    snapshot.id = rec.id;
    snapshot.tag = rec.tag;
    snapshot.nbytes = rec.nbytes;
    snapshot.device = rec.device;
    snapshot.offset = rec.offset;
    snapshot.span = rec.span;
    snapshot.file = rec.file;
    snapshot.checksum = rec.checksum;
    snapshot.checksum_kind = rec.checksum_kind;
    inject = take_fault_locked(SpillFault::ReadError, ++read_count_);
  }
  std::string error;
  c10::Storage storage;
  try {
    storage = read_record(snapshot, *file, error, inject);
  } catch (const c10::Error &e) {
    error = std::string("hector.spill: cannot restore saved tensor '") + snapshot.tag +
            "': " + e.what_without_backtrace();
  }
  Graveyard late;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) {
    grave.storages.push_back(std::move(storage));
  } else {
    Record &rec = *it->second;
    rec.reading = false;
    if (error.empty()) {
      // The record stays in the prefetch window until backward loads it.
      stats_.bytes_read += static_cast<int64_t>(rec.nbytes);
      set_storage_locked(rec, std::move(storage));
    } else {
      rec.read_error = error;
    }
    if (rec.refs == 0)
      free_record_locked(rec, grave);
  }
  maybe_end_step_locked(); // The step's last record may have been freed here.
  done_cv_.notify_all();
  defer_python_owned_locked(grave);
  std::swap(late, grave);
}

//===----------------------------------------------------------------------===//
// SpillStore
//===----------------------------------------------------------------------===//

SpillStore::SpillStore(SpillOptions options)
    : engine_(std::make_unique<SpillEngine>(std::move(options))) {}
SpillStore::~SpillStore() = default;
ActivationHandle SpillStore::save(const at::Tensor &tensor, const std::string &tag,
                                  bool spillable) {
  return engine_->save(tensor, tag, spillable);
}
at::Tensor SpillStore::load(ActivationHandle handle) { return engine_->load(handle); }
void SpillStore::release(ActivationHandle handle) { engine_->release(handle); }
void SpillStore::forwardBegin() { engine_->forwardBegin(); }
void SpillStore::forwardEnd() {}
void SpillStore::backwardBegin() { engine_->backwardBegin(); }
void SpillStore::backwardEnd() { engine_->backwardEnd(); }
ActivationStats SpillStore::stats() const { return engine_->stats(); }
void SpillStore::synchronize() { engine_->synchronize(); }
void SpillStore::close() { engine_->close(/*only_if_unused=*/false, /*report=*/true); }
bool SpillStore::closeIfUnused() {
  return engine_->close(/*only_if_unused=*/true, /*report=*/true);
}
void SpillStore::reportWarnings() { engine_->reportWarnings(); }
std::string SpillStore::cufileStatus() { return engine_->cufileStatus(); }
std::vector<std::string> SpillStore::files() const { return engine_->files(); }
void SpillStore::injectFault(SpillFault fault, int64_t nth) { engine_->injectFault(fault, nth); }
const SpillOptions &SpillStore::options() const { return engine_->options(); }
std::string SpillStore::ioMode() const { return engine_->ioMode(); }

} // namespace hector
