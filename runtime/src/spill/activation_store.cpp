//===- activation_store.cpp - The in-memory store and the current store ---===//
#include "hector/activation_store.h"

#include <c10/util/Exception.h>

namespace hector {

ActivationStore::~ActivationStore() = default;

void checkSavedVersion(const c10::VariableVersion &counter, uint32_t saved_version,
                       const std::string &tag) {
  if (!counter.enabled())
    return; // Inference tensors carry no version counter.
  const uint32_t now = counter.current_version();
  TORCH_CHECK(now == saved_version,
              "one of the variables needed for gradient computation has been modified by an "
              "inplace operation: saved tensor '", tag, "' is at version ", now,
              "; expected version ", saved_version,
              " instead. Hint: make a copy (.clone()) before modifying it in place, or modify "
              "a copy instead.");
}

namespace {
int64_t storage_bytes(const at::Tensor &t) {
  return t.has_storage() ? static_cast<int64_t>(t.storage().nbytes()) : 0;
}
const void *storage_key(const at::Tensor &t) {
  return t.has_storage() ? static_cast<const void *>(t.storage().unsafeGetStorageImpl()) : nullptr;
}
} // namespace

ActivationHandle MemoryStore::save(const at::Tensor &tensor, const std::string &tag, bool) {
  std::lock_guard<std::mutex> lock(mutex_);
  const ActivationHandle handle = next_++;
  Entry entry{tensor, tag, tensor.defined() ? static_cast<uint32_t>(tensor._version()) : 0u};
  if (const void *key = storage_key(tensor)) {
    if (storage_refs_[key]++ == 0) {
      stats_.resident_bytes += storage_bytes(tensor);
      stats_.peak_resident_bytes = std::max(stats_.peak_resident_bytes, stats_.resident_bytes);
      ++stats_.kept;
    } else {
      ++stats_.deduplicated;
    }
  }
  entries_.emplace(handle, std::move(entry));
  ++stats_.saved;
  return handle;
}

at::Tensor MemoryStore::load(ActivationHandle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(handle);
  TORCH_CHECK(it != entries_.end(), "hector: activation handle ", handle,
              " is unknown or was already released");
  const Entry &entry = it->second;
  if (entry.tensor.defined())
    checkSavedVersion(entry.tensor.unsafeGetTensorImpl()->version_counter(), entry.version,
                      entry.tag);
  ++stats_.loaded;
  return entry.tensor;
}

void MemoryStore::release(ActivationHandle handle) {
  at::Tensor dropped; // Destroyed after the lock is released.
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(handle);
  if (it == entries_.end())
    return;
  dropped = std::move(it->second.tensor);
  entries_.erase(it);
  if (const void *key = storage_key(dropped)) {
    auto ref = storage_refs_.find(key);
    if (ref != storage_refs_.end() && --ref->second == 0) {
      storage_refs_.erase(ref);
      stats_.resident_bytes -= storage_bytes(dropped);
    }
  }
}

ActivationStats MemoryStore::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

namespace {
thread_local bool defer_warnings = false;
} // namespace

DeferStoreWarnings::DeferStoreWarnings() : previous_(defer_warnings) { defer_warnings = true; }
DeferStoreWarnings::~DeferStoreWarnings() { defer_warnings = previous_; }
bool DeferStoreWarnings::active() { return defer_warnings; }

namespace {
std::mutex current_mutex;
std::shared_ptr<ActivationStore> &current_slot() {
  static std::shared_ptr<ActivationStore> slot;
  return slot;
}
} // namespace

std::shared_ptr<ActivationStore> currentActivationStore() {
  std::lock_guard<std::mutex> lock(current_mutex);
  auto &slot = current_slot();
  if (!slot)
    slot = std::make_shared<MemoryStore>();
  return slot;
}

std::shared_ptr<ActivationStore> setCurrentActivationStore(std::shared_ptr<ActivationStore> store) {
  std::lock_guard<std::mutex> lock(current_mutex);
  auto &slot = current_slot();
  std::shared_ptr<ActivationStore> previous = std::move(slot);
  slot = std::move(store);
  return previous;
}

} // namespace hector
