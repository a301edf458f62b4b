//===- cache.cpp - The device cache's bookkeeping and eviction ------------===//
#include "cache.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cmath>

namespace hector::fs {

//===----------------------------------------------------------------------===//
// RowMap
//===----------------------------------------------------------------------===//

namespace {
uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}
} // namespace

RowMap::RowMap(int64_t entries) {
  size_t capacity = 16;
  while (capacity < static_cast<size_t>(std::max<int64_t>(entries, 0)) * 2)
    capacity *= 2;
  keys_.assign(capacity, -1);
  values_.assign(capacity, -1);
  mask_ = capacity - 1;
}

size_t RowMap::home(int64_t row) const { return mix(static_cast<uint64_t>(row)) & mask_; }

int64_t RowMap::find(int64_t row) const {
  for (size_t i = home(row);; i = (i + 1) & mask_) {
    if (keys_[i] == row)
      return values_[i];
    if (keys_[i] < 0)
      return -1;
  }
}

void RowMap::insert(int64_t row, int64_t value) {
  TORCH_INTERNAL_ASSERT(row >= 0 && size_ * 2 < static_cast<int64_t>(keys_.size()),
                        "RowMap over capacity");
  for (size_t i = home(row);; i = (i + 1) & mask_) {
    if (keys_[i] == row) {
      values_[i] = value;
      return;
    }
    if (keys_[i] < 0) {
      keys_[i] = row;
      values_[i] = value;
      ++size_;
      return;
    }
  }
}

void RowMap::erase(int64_t row) {
  size_t i = home(row);
  while (keys_[i] != row) {
    if (keys_[i] < 0)
      return;
    i = (i + 1) & mask_;
  }
  // Backward shift: move later entries of the probe run into the hole when their home allows.
  size_t hole = i;
  for (size_t j = (hole + 1) & mask_; keys_[j] >= 0; j = (j + 1) & mask_) {
    const size_t h = home(keys_[j]);
    // Entry j may move to `hole` if its home is not in the cyclic range (hole, j].
    const bool inRange = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
    if (!inRange) {
      keys_[hole] = keys_[j];
      values_[hole] = values_[j];
      hole = j;
    }
  }
  keys_[hole] = -1;
  values_[hole] = -1;
  --size_;
}

void RowMap::clear() {
  std::fill(keys_.begin(), keys_.end(), -1);
  std::fill(values_.begin(), values_.end(), -1);
  size_ = 0;
}

//===----------------------------------------------------------------------===//
// CacheIndex
//===----------------------------------------------------------------------===//

CacheIndex::CacheIndex(int64_t slots, CachePolicy policy, std::vector<uint16_t> level,
                       double staticWeight)
    : slots_(slots), policy_(policy), level_(std::move(level)), staticWeight_(staticWeight),
      map_(slots) {
  TORCH_INTERNAL_ASSERT(slots >= 0);
  TORCH_INTERNAL_ASSERT(policy == CachePolicy::kDynamic || !level_.empty() || slots == 0,
                        "static and hybrid caches need the rows' levels");
  const auto n = static_cast<size_t>(slots);
  rows_.assign(n, -1);
  credits_.assign(n, 0);
  pins_.assign(n, 0);
  if (policy_ == CachePolicy::kStatic)
    heapPos_.assign(n, -1);
}

uint8_t CacheIndex::creditFor(int64_t row) const {
  if (policy_ != CachePolicy::kHybrid)
    return 1;
  const double s = level_[static_cast<size_t>(row)] / 65535.0;
  return static_cast<uint8_t>(std::min(255.0, 1.0 + std::round(staticWeight_ * s)));
}

uint64_t CacheIndex::key(int64_t slot) const {
  const int64_t row = rows_[static_cast<size_t>(slot)];
  return (static_cast<uint64_t>(level_[static_cast<size_t>(row)]) << 48) |
         static_cast<uint64_t>(row);
}

void CacheIndex::touch(int64_t slot) {
  if (policy_ != CachePolicy::kStatic)
    credits_[static_cast<size_t>(slot)] = creditFor(rows_[static_cast<size_t>(slot)]);
}

uint16_t CacheIndex::level(int64_t row) const {
  return level_.empty() ? 0 : level_[static_cast<size_t>(row)];
}

int64_t CacheIndex::admit(int64_t row, int64_t &evicted) {
  evicted = -1;
  if (slots_ == 0 || pinnedSlots_ == slots_)
    return -1;
  int64_t slot = -1;
  if (used_ < slots_) {
    slot = used_++;
  } else if (policy_ == CachePolicy::kStatic) {
    if (heap_.empty())
      return -1;
    const int64_t least = heap_[0];
    const uint64_t incoming = (static_cast<uint64_t>(level_[static_cast<size_t>(row)]) << 48) |
                              static_cast<uint64_t>(row);
    // Ties go to the row already cached only when its row id is larger (keys are distinct).
    if (incoming <= key(least))
      return -1;
    slot = least;
    heapRemove(slot);
  } else {
    // CLOCK: the hand takes one credit from each row it passes and stops at one with none.
    // Pinned slots are passed over untouched; not every slot is pinned, so the sweep ends.
    while (true) {
      const int64_t s = hand_;
      hand_ = hand_ + 1 == slots_ ? 0 : hand_ + 1;
      if (pins_[static_cast<size_t>(s)])
        continue;
      uint8_t &c = credits_[static_cast<size_t>(s)];
      if (c) {
        --c;
        continue;
      }
      slot = s;
      break;
    }
    // kHybrid admits a row only in place of one of no higher static level (TinyLFU's filter,
    // with the static score as the frequency estimate): one-time rows do not flush the cache.
    if (policy_ == CachePolicy::kHybrid &&
        level_[static_cast<size_t>(row)] < level_[static_cast<size_t>(rows_[slot])])
      return -1;
  }
  const auto i = static_cast<size_t>(slot);
  if (rows_[i] >= 0) {
    evicted = rows_[i];
    map_.erase(evicted);
  }
  rows_[i] = row;
  map_.insert(row, slot);
  credits_[i] = creditFor(row);
  if (policy_ == CachePolicy::kStatic)
    heapPush(slot);
  return slot;
}

void CacheIndex::pin(int64_t slot) {
  const auto i = static_cast<size_t>(slot);
  if (pins_[i]++ == 0) {
    ++pinnedSlots_;
    if (policy_ == CachePolicy::kStatic)
      heapRemove(slot);
  }
}

void CacheIndex::unpin(int64_t slot) {
  const auto i = static_cast<size_t>(slot);
  TORCH_INTERNAL_ASSERT(pins_[i] > 0, "unpinning a slot that is not pinned");
  if (--pins_[i] == 0) {
    --pinnedSlots_;
    if (policy_ == CachePolicy::kStatic)
      heapPush(slot);
  }
}

void CacheIndex::heapSwap(size_t a, size_t b) {
  std::swap(heap_[a], heap_[b]);
  heapPos_[static_cast<size_t>(heap_[a])] = static_cast<int64_t>(a);
  heapPos_[static_cast<size_t>(heap_[b])] = static_cast<int64_t>(b);
}

void CacheIndex::heapUp(size_t i) {
  while (i > 0) {
    const size_t parent = (i - 1) / 2;
    if (key(heap_[parent]) <= key(heap_[i]))
      break;
    heapSwap(i, parent);
    i = parent;
  }
}

void CacheIndex::heapDown(size_t i) {
  const size_t n = heap_.size();
  while (true) {
    size_t least = i;
    for (size_t c = 2 * i + 1; c <= 2 * i + 2 && c < n; ++c)
      if (key(heap_[c]) < key(heap_[least]))
        least = c;
    if (least == i)
      return;
    heapSwap(i, least);
    i = least;
  }
}

void CacheIndex::heapPush(int64_t slot) {
  if (heapPos_[static_cast<size_t>(slot)] >= 0 || pins_[static_cast<size_t>(slot)])
    return;
  heap_.push_back(slot);
  heapPos_[static_cast<size_t>(slot)] = static_cast<int64_t>(heap_.size() - 1);
  heapUp(heap_.size() - 1);
}

void CacheIndex::heapRemove(int64_t slot) {
  const int64_t pos = heapPos_[static_cast<size_t>(slot)];
  if (pos < 0)
    return;
  const auto i = static_cast<size_t>(pos);
  const size_t last = heap_.size() - 1;
  if (i != last)
    heapSwap(i, last);
  heap_.pop_back();
  heapPos_[static_cast<size_t>(slot)] = -1;
  if (i < heap_.size()) {
    heapUp(i);
    heapDown(i);
  }
}

} // namespace hector::fs
