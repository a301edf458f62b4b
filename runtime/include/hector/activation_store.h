//===- hector/activation_store.h - Where saved activations live -----------===//
//
// The interface through which compiled layers keep the tensors they save in
// forward for backward, and the default store that simply holds them in memory.
// A spilling store (hector/spill.h) plugs in behind the same interface.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace hector {

/// Identifies one saved tensor inside an ActivationStore. Handles are never
/// reused by the store that issued them.
using ActivationHandle = int64_t;

/// Counters a store reports. A store leaves at zero what it does not do.
struct ActivationStats {
  int64_t saved = 0;               ///< save() calls.
  int64_t loaded = 0;              ///< load() calls.
  int64_t resident_bytes = 0;      ///< Bytes of saved storages held in memory now.
  int64_t peak_resident_bytes = 0; ///< Maximum of resident_bytes since creation.
  int64_t bytes_written = 0;       ///< Payload bytes written to spill files.
  int64_t bytes_read = 0;          ///< Payload bytes read back.
  int64_t spilled = 0;             ///< Storages written to disk (and dropped).
  int64_t kept = 0;                ///< Storages kept in memory by policy.
  int64_t deduplicated = 0;        ///< Saves that reused an already-saved storage.
  int64_t forwarded = 0;           ///< Loads served from memory although spilling was scheduled.
  int64_t prefetched = 0;          ///< Reads started ahead of the load that needs them.
  int64_t prefetch_hits = 0;       ///< Loads whose read had already been started ahead.
  int64_t demand_reads = 0;        ///< Loads that had to start their own read.
  int64_t write_failures = 0;      ///< Writes that failed; their storages stayed in memory.
  int64_t adaptive_keep_bytes = 0; ///< Bytes the adaptive policy keeps in memory this step.
};

/// Where compiled layers put what they save for backward.
///
/// Protocol of one training step: forwardBegin(); save() per tensor;
/// forwardEnd(); backwardBegin(); load() per saved tensor (roughly in reverse
/// order of saving) and release() once a handle is no longer needed;
/// backwardEnd(). A store infers missing phase calls (the first save after a
/// backward begins a forward, the first load begins a backward, releasing the
/// last handle ends the step), so Python's saved-tensor hooks, which give no
/// phase notifications, drive the same store.
///
/// Every store checks on load() that the tensor was not modified in place since
/// it was saved (the tensor's version counter) and raises a c10::Error naming
/// the tensor otherwise, as PyTorch does for its own saved tensors.
class ActivationStore {
public:
  virtual ~ActivationStore();

  /// Saves `tensor` for backward under a human-readable `tag` (used in error
  /// messages). `spillable=false` pins it in memory (the loss, tiny scalars).
  /// Returns at once; any I/O runs in the background.
  virtual ActivationHandle save(const at::Tensor &tensor, const std::string &tag,
                                bool spillable = true) = 0;
  /// Returns the saved tensor (same values, sizes, strides, dtype, device).
  /// May be called more than once per handle until release().
  virtual at::Tensor load(ActivationHandle handle) = 0;
  /// Forgets `handle`; the last release of a storage frees its memory or file space.
  virtual void release(ActivationHandle handle) = 0;

  /// Phase notifications (optional; see the class comment).
  virtual void forwardBegin() {}
  virtual void forwardEnd() {}
  virtual void backwardBegin() {}
  virtual void backwardEnd() {}

  /// Statistics since creation.
  virtual ActivationStats stats() const = 0;
};

/// Raises the PyTorch-style in-place modification error when `tensor`'s version
/// counter no longer equals `saved_version`.
void checkSavedVersion(const c10::VariableVersion &counter, uint32_t saved_version,
                       const std::string &tag);

/// The default store: keeps every saved tensor in memory, exactly as autograd does.
class MemoryStore final : public ActivationStore {
public:
  ActivationHandle save(const at::Tensor &tensor, const std::string &tag,
                        bool spillable = true) override;
  at::Tensor load(ActivationHandle handle) override;
  void release(ActivationHandle handle) override;
  ActivationStats stats() const override;

private:
  struct Entry {
    at::Tensor tensor;
    std::string tag;
    uint32_t version = 0;
  };
  mutable std::mutex mutex_;
  std::unordered_map<ActivationHandle, Entry> entries_;
  std::unordered_map<const void *, int64_t> storage_refs_; ///< For resident-byte accounting.
  ActivationHandle next_ = 1;
  ActivationStats stats_;
};

/// While one is alive on a thread, stores hold back the warnings they would emit on that thread
/// (a spill write failure, SpillStore::reportWarnings) until a later call on a thread without
/// one. The compiled layers' autograd node runs inside a torch operator call, where no Python
/// warning handler is installed and a TORCH_WARN would reach only stderr; the warning then comes
/// from the next call Python makes (a saved-tensor hook, the end of the `hector.spill` block).
class DeferStoreWarnings {
public:
  DeferStoreWarnings();
  ~DeferStoreWarnings();
  DeferStoreWarnings(const DeferStoreWarnings &) = delete;
  DeferStoreWarnings &operator=(const DeferStoreWarnings &) = delete;
  /// Whether warnings are held back on the calling thread.
  static bool active();

private:
  bool previous_;
};

/// The store compiled layers use in this process (a MemoryStore unless one was installed).
std::shared_ptr<ActivationStore> currentActivationStore();
/// Installs `store` as the current one (nullptr restores the default MemoryStore);
/// returns the previous one.
std::shared_ptr<ActivationStore> setCurrentActivationStore(std::shared_ptr<ActivationStore> store);

/// Installs a store for the lifetime of the scope and restores the previous one.
class ActivationStoreScope {
public:
  explicit ActivationStoreScope(std::shared_ptr<ActivationStore> store)
      : previous_(setCurrentActivationStore(std::move(store))) {}
  ~ActivationStoreScope() { setCurrentActivationStore(std::move(previous_)); }
  ActivationStoreScope(const ActivationStoreScope &) = delete;
  ActivationStoreScope &operator=(const ActivationStoreScope &) = delete;

private:
  std::shared_ptr<ActivationStore> previous_;
};

} // namespace hector
