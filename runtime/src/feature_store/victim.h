//===- victim.h - The victim buffer: a set-associative row cache in host memory -*- C++ -*-===//
//
// Rows the device cache evicts (or does not admit) land here. Each row maps to one set of up to
// eight ways (LRU within the set); a robust process-shared mutex guards each set, so that the
// buffer can live in shared memory (/dev/shm) and be used by every process of one machine that
// opens the same store: a process that dies holding a set's lock leaves the set empty, never
// torn. Rows are immutable (the store file does not change), so a row found is always right.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace hector::fs {

class VictimBuffer {
public:
  /// A buffer of up to `rows` rows of `rowBytes` bytes for the store `uuid` (16 bytes). With a
  /// `sharedName`, it lives in /dev/shm/hector-fs-<sharedName>: the first process creates it
  /// (with its capacity), later ones join it (whatever capacity they ask for) after checking it
  /// belongs to the same store. Throws c10::Error naming the segment on a mismatch.
  VictimBuffer(int64_t rows, int64_t rowBytes, const unsigned char *uuid,
               const std::string &sharedName);
  ~VictimBuffer();
  VictimBuffer(const VictimBuffer &) = delete;
  VictimBuffer &operator=(const VictimBuffer &) = delete;

  int64_t capacity() const { return sets_ * ways_; }
  bool shared() const { return !shmPath_.empty(); }
  /// "/dev/shm/hector-fs-NAME" for a shared buffer, "" otherwise.
  const std::string &path() const { return shmPath_; }
  /// Copies `row` into `dst` if the buffer holds it (and renews it); returns whether it did.
  bool lookup(int64_t row, void *dst);
  /// Stores (or renews) `row` from `src`, replacing the least recently used row of its set; with
  /// `byLevel`, the set's row of lowest `level` (the least recently used among those), and only
  /// if that level is not above `level`. Returns whether the row is in the buffer now.
  bool insert(int64_t row, const void *src, uint16_t level = 0, bool byLevel = false);
  void erase(int64_t row);
  /// The rows' memory (for page-locking it on a CUDA machine).
  void *data() const { return data_; }
  size_t dataBytes() const { return static_cast<size_t>(capacity() * rowBytes_); }

private:
  struct Header;
  struct Set;
  Set &set(int64_t row) const;
  void lock(Set &s) const;
  char *slot(const Set &s, int way) const;

  int64_t rowBytes_ = 0, sets_ = 0, ways_ = 0;
  void *mapping_ = nullptr;
  size_t mappingBytes_ = 0;
  Header *header_ = nullptr;
  Set *setsBase_ = nullptr;
  char *data_ = nullptr;
  std::string shmPath_, shmName_;
  bool creator_ = false;
};

} // namespace hector::fs
