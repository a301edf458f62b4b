//===- cache.h - The device cache's bookkeeping and eviction (internal) -*- C++ -*-===//
//
// Which row each cache slot holds and which slot the policy gives up next. The rows' bytes live
// elsewhere (a host buffer or a GPU tensor); nothing here touches them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/feature_store.h"

#include <cstdint>
#include <vector>

namespace hector::fs {

/// Row id -> value, open addressing with linear probing and backward-shift deletion.
class RowMap {
public:
  /// Room for `entries` entries at a load factor of at most 1/2.
  explicit RowMap(int64_t entries = 0);
  /// The value of `row`, or -1.
  int64_t find(int64_t row) const;
  void insert(int64_t row, int64_t value);
  void erase(int64_t row);
  int64_t size() const { return size_; }
  void clear();

private:
  size_t home(int64_t row) const;
  std::vector<int64_t> keys_, values_;
  size_t mask_ = 0;
  int64_t size_ = 0;
};

/// The bookkeeping of a cache of `slots` rows under one policy.
class CacheIndex {
public:
  /// `level[row]` (0..65535) is the row's static score as a rank (kStatic, kHybrid; may be empty
  /// for kDynamic).
  CacheIndex(int64_t slots, CachePolicy policy, std::vector<uint16_t> level, double staticWeight);

  int64_t slots() const { return slots_; }
  /// The slot holding `row`, or -1.
  int64_t lookup(int64_t row) const { return map_.find(row); }
  /// The row in `slot` (-1 if free).
  int64_t rowAt(int64_t slot) const { return rows_[static_cast<size_t>(slot)]; }
  /// A use of the row in `slot` (renews its CLOCK credits).
  void touch(int64_t slot);
  /// A slot for `row` (not cached): a free one, or the one the policy evicts (`evicted` receives
  /// its row, else -1). Returns -1 when the policy does not admit `row` (kStatic: a lower level
  /// than every evictable row; kHybrid: a lower level than the row the hand stopped at) or
  /// every slot is pinned.
  int64_t admit(int64_t row, int64_t &evicted);
  /// Pinned slots are never evicted (the prefetcher keeps the next batch's rows).
  void pin(int64_t slot);
  void unpin(int64_t slot);
  int64_t pinned() const { return pinnedSlots_; }
  /// The static level of `row` (0 without levels).
  uint16_t level(int64_t row) const;

private:
  uint8_t creditFor(int64_t row) const;
  uint64_t key(int64_t slot) const; ///< kStatic's order: (level, row)
  void heapPush(int64_t slot);
  void heapRemove(int64_t slot);
  void heapUp(size_t i);
  void heapDown(size_t i);
  void heapSwap(size_t a, size_t b);

  int64_t slots_;
  CachePolicy policy_;
  std::vector<uint16_t> level_;
  double staticWeight_;
  RowMap map_;
  std::vector<int64_t> rows_;
  std::vector<uint8_t> credits_;
  std::vector<uint32_t> pins_;
  int64_t pinnedSlots_ = 0;
  int64_t used_ = 0; ///< slots [0, used_) have held a row
  int64_t hand_ = 0;
  // kStatic: a min-heap of the occupied, unpinned slots by key().
  std::vector<int64_t> heap_;
  std::vector<int64_t> heapPos_; ///< position of a slot in heap_, or -1
};

} // namespace hector::fs
