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

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
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

std::string human_bytes(uint64_t n) {
  std::ostringstream os;
  if (n >= (1ull << 20))
    os << (n >> 20) << " MiB";
  else
    os << n << " bytes";
  return os.str();
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
  void forward_begin();
  void backward_begin();
  void backward_end();
  ActivationStats stats() const;
  void synchronize();
  void close();
  std::vector<std::string> files() const;
  void inject_fault(SpillFault fault, int64_t nth);
  std::string io_mode() const;
  const SpillOptions &options() const { return options_; }

private:
  // All *_locked functions run under mutex_.
  void begin_forward_locked();
  void begin_backward_locked();
  void maybe_end_step_locked();
  void pump_locked();
  void prefetch_locked(uint64_t below_seq);
  void set_storage_locked(Record &rec, c10::Storage storage);
  void drop_storage_locked(Record &rec, Graveyard &grave);
  void free_record_locked(Record &rec, Graveyard &grave);
  void ensure_files_locked();
  /// I/O threads never drop a storage that a Python object refers to (that needs
  /// the GIL, which a caller thread waiting on this store may hold): such storages
  /// move to `deferred_` and a caller thread drops them.
  void defer_python_owned_locked(Graveyard &grave);
  void emit_warning_locked();
  bool take_fault_locked(SpillFault kind, int64_t count);

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
  at::Tensor materialize(const Entry &entry, const c10::Storage &storage) const;
  std::string describe(const Record &rec, const SpillFile *file) const;

  SpillOptions options_;
  const uint64_t store_id_;
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
  std::map<uint64_t, int64_t> on_disk_; ///< seq -> record written and not in memory.
  std::deque<int64_t> pending_;         ///< Keep window, save order.
  uint64_t pending_bytes_ = 0;
  int64_t in_flight_ = 0;               ///< Jobs queued or running.
  int64_t writes_running_ = 0;
  bool closed_ = false, stopping_ = false;
  bool writes_disabled_ = false;        ///< After a write failure, until the step ends.
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
  double write_bandwidth_ = 0; ///< Bytes/s while at least one write runs (EMA).
  Clock::time_point busy_since_{};
  double busy_seconds_ = 0;
  uint64_t busy_bytes_ = 0;

  // Faults: absolute counts of record writes/reads at which each armed fault fires.
  std::vector<std::pair<SpillFault, int64_t>> faults_;
  int64_t write_count_ = 0, read_count_ = 0;
  CuFile *cufile_ = nullptr;
  bool cufile_probed_ = false;
  bool used_uring_ = false;
};

SpillFault parse_spill_fault(const std::string &name) {
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
    : options_(std::move(options)), store_id_(next_store_id++) {
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
    inject_fault(parse_spill_fault(item.substr(0, colon)), nth);
  }
  for (int64_t i = 0; i < options_.io_threads; ++i)
    threads_.emplace_back([this, i] { worker(static_cast<int>(i)); });
}

SpillEngine::~SpillEngine() {
  try {
    close();
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

void SpillEngine::free_record_locked(Record &rec, Graveyard &grave) {
  drop_storage_locked(rec, grave);
  if (rec.state == State::OnDisk && rec.file >= 0 && rec.file < static_cast<int>(files_.size()))
    files_[rec.file]->punch_hole(rec.offset, rec.span);
  on_disk_.erase(rec.seq);
  auto it = by_storage_.find(rec.key);
  if (it != by_storage_.end() && it->second == rec.id)
    by_storage_.erase(it);
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
    std::ostringstream path;
    path << options_.dir << "/hector-spill-" << ::getpid() << "-" << store_id_ << "-" << lane
         << ".bin";
    files_.push_back(
        std::make_unique<SpillFile>(path.str(), options_.direct_io, options_.anonymous_files));
    cufile_handles_.push_back(nullptr);
  }
}

void SpillEngine::emit_warning_locked() {
  if (warning_.empty())
    return;
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

void SpillEngine::inject_fault(SpillFault fault, int64_t nth) {
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

void SpillEngine::begin_forward_locked() {
  phase_ = Phase::Forward;
  forward_start_ = Clock::now();
  step_spillable_bytes_ = 0;
}

void SpillEngine::begin_backward_locked() {
  if (phase_ == Phase::Forward && options_.adaptive) {
    const double forward_seconds =
        std::chrono::duration<double>(Clock::now() - forward_start_).count();
    if (write_bandwidth_ > 0) {
      // What the disk could take during forward (with a margin) is spilled;
      // the rest (the latest saves) stays in memory next step.
      const double writable = write_bandwidth_ * forward_seconds * 0.9;
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
  if (!records_.empty() || phase_ == Phase::Forward)
    return;
  phase_ = Phase::Idle;
  writes_disabled_ = false;
  // Every record is gone, so no I/O uses the files: remove them.
  for (size_t i = 0; i < files_.size(); ++i)
    if (cufile_ && cufile_handles_[i])
      cufile_->deregister(cufile_handles_[i]);
  cufile_handles_.clear();
  files_.clear();
  on_disk_.clear();
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
  int64_t budget = options_.prefetch;
  // Reads already running count against the distance.
  for (const Job &job : reads_)
    if (job.read)
      --budget;
  auto it = on_disk_.lower_bound(below_seq);
  while (budget > 0 && it != on_disk_.begin()) {
    --it;
    auto rit = records_.find(it->second);
    if (rit == records_.end())
      continue;
    Record &rec = *rit->second;
    if (rec.reading || rec.storage)
      continue;
    rec.reading = true;
    rec.prefetched = true;
    reads_.push_back({true, rec.id});
    ++in_flight_;
    ++stats_.prefetched;
    --budget;
    work_cv_.notify_one();
  }
}

//===----------------------------------------------------------------------===//
// save / load / release
//===----------------------------------------------------------------------===//

ActivationHandle SpillEngine::save(const at::Tensor &tensor, const std::string &tag,
                                   bool spillable) {
  Graveyard grave;
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(!closed_, "hector.spill: save() on a closed store");
  emit_warning_locked();
  std::move(deferred_.begin(), deferred_.end(), std::back_inserter(grave.storages));
  deferred_.clear();
  if (phase_ != Phase::Forward)
    begin_forward_locked();
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
      // The same storage, alive, and unchanged since it was recorded: reuse.
      auto alive = rec.identity.lock();
      if (alive.get() == key && entry.version == rec.version &&
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
  rec->external = tensor.is_leaf() && tensor.requires_grad();
  set_storage_locked(*rec, storage);
  if (rec->device.is_cuda()) {
    c10::impl::VirtualGuardImpl guard(c10::DeviceType::CUDA);
    rec->ready = std::make_shared<c10::Event>(c10::DeviceType::CUDA);
    rec->ready->record(guard.getStream(rec->device));
  }
  // Scalars (the loss) are never spilled, whatever the threshold.
  const bool spill = spillable && !rec->external && tensor.dim() > 0 &&
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
  const Entry &entry = eit->second;
  check_saved_version(entry.counter, entry.version, entry.tag);
  ++stats_.loaded;
  if (entry.record < 0)
    return entry.tensor;

  Record *rec = records_.at(entry.record).get();
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
      if (rec.state == State::Pending) {
        pending_.erase(std::find(pending_.begin(), pending_.end(), rec.id));
        pending_bytes_ -= rec.nbytes;
        rec.state = State::Resident;
      }
      if (rec.state == State::Writing || rec.reading) {
        drop_storage_locked(rec, grave); // The I/O thread frees the record when done.
      } else {
        free_record_locked(rec, grave);
      }
    }
  }
  if (entries_.empty())
    maybe_end_step_locked();
}

void SpillEngine::forward_begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  begin_forward_locked();
}

void SpillEngine::backward_begin() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (phase_ != Phase::Backward)
    begin_backward_locked();
}

void SpillEngine::backward_end() {
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
}

std::vector<std::string> SpillEngine::files() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto &f : files_)
    out.push_back(f->path());
  return out;
}

std::string SpillEngine::io_mode() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string mode = files_.empty() ? (options_.direct_io ? "direct" : "buffered")
                                    : (files_.front()->direct() ? "direct" : "buffered");
  if (used_uring_)
    mode += "+io_uring";
  if (cufile_)
    mode += "+cufile";
  return mode;
}

void SpillEngine::close() {
  Graveyard grave;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (closed_)
      return;
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
  stats_.resident_bytes = 0;
  for (size_t i = 0; i < cufile_handles_.size(); ++i)
    if (cufile_ && cufile_handles_[i])
      cufile_->deregister(cufile_handles_[i]);
  cufile_handles_.clear();
  files_.clear();
  on_disk_.clear();
  done_cv_.notify_all();
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
      rec.state = State::Resident;
      free_record_locked(rec, grave);
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
    if (rec.device.is_cuda() && options_.use_cufile) {
      // cuFile is loaded on the first CUDA record only: it is costly and noisy
      // to initialise on machines without a GPU.
      if (!cufile_probed_) {
        cufile_probed_ = true;
        cufile_ = CuFile::get();
      }
      if (cufile_ && !cufile_handles_[rec.file])
        cufile_handles_[rec.file] = cufile_->register_fd(file->fd());
    }
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
    if (writes_running_++ == 0)
      busy_since_ = Clock::now();
  }

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
  if (--writes_running_ == 0)
    busy_seconds_ += std::chrono::duration<double>(Clock::now() - busy_since_).count();
  auto it = records_.find(id);
  if (it == records_.end())
    return;
  Record &rec = *it->second;
  storage = c10::Storage(); // Not the last reference: the record or the grave holds one.
  if (rc == 0) {
    busy_bytes_ += rec.nbytes;
    if (busy_seconds_ > 0.0)
      write_bandwidth_ = static_cast<double>(busy_bytes_) / busy_seconds_;
    rec.state = State::OnDisk;
    rec.checksum = checksum;
    rec.checksum_kind = kind;
    ++stats_.spilled;
    stats_.bytes_written += static_cast<int64_t>(rec.nbytes);
    if (rec.refs == 0) {
      free_record_locked(rec, grave);
    } else if (phase_ != Phase::Backward) {
      drop_storage_locked(rec, grave); // The point of it all: the memory is free.
      on_disk_.emplace(rec.seq, rec.id);
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
  if (entries_.empty())
    maybe_end_step_locked(); // The last record of the step was freed here.
  done_cv_.notify_all();
  defer_python_owned_locked(grave);
  std::swap(late, grave);
}

int64_t SpillEngine::write_record(const c10::Storage &storage, const Record &snap,
                                  SpillFile &file, IoQueue &queue, uint64_t &checksum,
                                  uint32_t &kind, bool enospc, bool short_write) {
  if (enospc)
    return -ENOSPC;
  const size_t n = snap.nbytes;
  const uint64_t payload_at = snap.offset + kAlign;
  const size_t chunk = static_cast<size_t>(options_.chunk_bytes);
  thread_local AlignedBuffer stage[2];
  for (auto &b : stage)
    if (b.size() < chunk)
      b = AlignedBuffer(chunk);
  const int cuda_lane = snap.file;
  void *cufile_handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (snap.device.is_cuda() && cuda_lane < static_cast<int>(cufile_handles_.size()))
      cufile_handle = cufile_handles_[cuda_lane];
  }

  auto write_header = [&](uint64_t sum, uint32_t sum_kind) -> int64_t {
    std::memset(stage[0].data(), 0, kAlign);
    RecordHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.store_id = store_id_;
    h.record_id = static_cast<uint64_t>(snap.id);
    h.nbytes = n;
    h.checksum = sum;
    h.checksum_kind = sum_kind;
    h.header_crc = crc32c(0, &h, offsetof(RecordHeader, header_crc));
    std::memcpy(stage[0].data(), &h, sizeof h);
    const int64_t rc = IoQueue::pwrite_full(file.fd(), stage[0].data(), kAlign, snap.offset);
    return rc < 0 ? rc : 0;
  };

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
      const int64_t rc = cufile_->write(cufile_handle, storage.data(), n, payload_at);
      if (rc < 0 || static_cast<size_t>(rc) != n)
        return rc < 0 ? -EIO : -ENOSPC;
      checksum = digest;
      kind = 1;
      return write_header(digest, 1);
    }
    // A pinned bounce buffer: device -> pinned (async on the I/O stream) -> file.
    at::Tensor pinned =
        at::empty({static_cast<int64_t>(chunk)}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
    uint32_t crc = 0;
    for (size_t off = 0; off < n; off += chunk) {
      const size_t len = std::min(chunk, n - off);
      pinned.narrow(0, 0, static_cast<int64_t>(len))
          .copy_(bytes.narrow(0, static_cast<int64_t>(off), static_cast<int64_t>(len)), true);
      stream.synchronize();
      std::memcpy(stage[0].data(), pinned.data_ptr(), len);
      crc = crc32c(crc, stage[0].data(), len);
      const size_t padded = align_up(len);
      std::memset(stage[0].data() + len, 0, padded - len);
      const int64_t rc =
          IoQueue::pwrite_full(file.fd(), stage[0].data(), padded, payload_at + off);
      if (rc < 0)
        return rc;
    }
    checksum = crc;
    kind = 0;
    return write_header(crc, 0);
  }

  // CPU: copy into aligned staging buffers (checksumming on the way) and keep
  // two requests in flight, so copying overlaps writing.
  const char *src = static_cast<const char *>(storage.data());
  for (int attempt = 0; attempt < 2; ++attempt) {
    uint32_t crc = 0;
    int64_t rc = 0;
    int slot = 0;
    for (size_t off = 0; off < n && rc >= 0; off += chunk, slot ^= 1) {
      if (queue.pending() == 2 && (rc = queue.wait_oldest()) < 0)
        break;
      const size_t len = std::min(chunk, n - off);
      char *buf = stage[slot].data();
      std::memcpy(buf, src + off, len);
      crc = crc32c(crc, buf, len);
      const size_t padded = align_up(len);
      std::memset(buf + len, 0, padded - len);
      if (short_write && off == 0) {
        // Fault injection: the device takes part of the request, then is full.
        (void)IoQueue::pwrite_full(file.fd(), buf, kAlign, payload_at);
        rc = -ENOSPC;
        break;
      }
      queue.submit_write(file.fd(), buf, padded, payload_at + off);
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
    if (rc < 0)
      return rc;
    checksum = crc;
    kind = 0;
    return write_header(crc, 0);
  }
  return -EIO;
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
  int64_t rc = IoQueue::pread_full(file.fd(), header.data(), kAlign, snap.offset);
  if (rc == -EINVAL && file.direct()) {
    file.drop_direct();
    rc = IoQueue::pread_full(file.fd(), header.data(), kAlign, snap.offset);
  }
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
    if (snap.checksum_kind == 1) {
      TORCH_CHECK(cufile_handle, "hector.spill: internal error: cuFile record without cuFile");
      const int64_t got = cufile_->read(cufile_handle, bytes.data_ptr(), n, payload_at);
      if (got < 0)
        return fail("cuFileRead failed with " + std::to_string(got));
      if (static_cast<size_t>(got) < n)
        return fail("the spill file is truncated (" + std::to_string(got) + " of " +
                    std::to_string(n) + " payload bytes present)");
      if (device_digest(bytes) != snap.checksum)
        return fail("checksum mismatch (the file was corrupted)");
    } else {
      AlignedBuffer stage(chunk);
      at::Tensor pinned = at::empty({static_cast<int64_t>(chunk)},
                                    at::TensorOptions().dtype(at::kByte).pinned_memory(true));
      uint32_t crc = 0;
      for (size_t off = 0; off < n; off += chunk) {
        const size_t len = std::min(chunk, n - off);
        const size_t want = align_up(len);
        const int64_t got = IoQueue::pread_full(file.fd(), stage.data(), want, payload_at + off);
        if (got < 0)
          return fail(std::string("read failed: ") + std::strerror(static_cast<int>(-got)));
        if (static_cast<size_t>(got) < len)
          return fail("the spill file is truncated");
        crc = crc32c(crc, stage.data(), len);
        stream.synchronize(); // The previous chunk's copy no longer reads `pinned`.
        std::memcpy(pinned.data_ptr(), stage.data(), len);
        bytes.narrow(0, static_cast<int64_t>(off), static_cast<int64_t>(len))
            .copy_(pinned.narrow(0, 0, static_cast<int64_t>(len)), true);
      }
      stream.synchronize();
      if (crc != snap.checksum)
        return fail("checksum mismatch (the file was corrupted)");
    }
    stream.synchronize();
    return bytes.storage();
  }

  // CPU: read straight into an aligned allocation that becomes the storage.
  void *mem = nullptr;
  if (posix_memalign(&mem, kAlign, std::max<size_t>(padded, kAlign)) != 0)
    return fail("out of memory for the read buffer");
  at::DataPtr data(mem, mem, [](void *p) { std::free(p); }, c10::Device(c10::kCPU));
  rc = IoQueue::pread_full(file.fd(), mem, padded, payload_at);
  if (rc == -EINVAL && file.direct()) {
    file.drop_direct();
    rc = IoQueue::pread_full(file.fd(), mem, padded, payload_at);
  }
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
      if (rec.refs == 0)
        free_record_locked(rec, grave);
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
      stats_.bytes_read += static_cast<int64_t>(rec.nbytes);
      on_disk_.erase(rec.seq);
      set_storage_locked(rec, std::move(storage));
    } else {
      rec.read_error = error;
    }
    if (rec.refs == 0)
      free_record_locked(rec, grave);
  }
  if (entries_.empty())
    maybe_end_step_locked(); // The last record of the step was freed here.
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
void SpillStore::forward_begin() { engine_->forward_begin(); }
void SpillStore::forward_end() {}
void SpillStore::backward_begin() { engine_->backward_begin(); }
void SpillStore::backward_end() { engine_->backward_end(); }
ActivationStats SpillStore::stats() const { return engine_->stats(); }
void SpillStore::synchronize() { engine_->synchronize(); }
void SpillStore::close() { engine_->close(); }
std::vector<std::string> SpillStore::files() const { return engine_->files(); }
void SpillStore::inject_fault(SpillFault fault, int64_t nth) { engine_->inject_fault(fault, nth); }
const SpillOptions &SpillStore::options() const { return engine_->options(); }
std::string SpillStore::io_mode() const { return engine_->io_mode(); }

} // namespace hector
