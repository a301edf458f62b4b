//===- hector/spill.h - Activation spilling to SSD (SSDTrain) -------------===//
//
// SpillStore: an ActivationStore that writes saved activations to a few large
// files in the background during forward and reads them back ahead of backward.
// See docs/spilling.md for the design, the guarantees and the knobs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/activation_store.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hector {

/// Knobs of a SpillStore. The defaults suit an NVMe SSD.
struct SpillOptions {
  /// Directory for the spill files (created if missing). Files are named
  /// `hector-spill-<pid>-<random>-<store>-<lane>.bin` and removed when the step ends.
  std::string dir = "/tmp";
  /// Storages smaller than this stay in memory (writing them costs more than it
  /// saves). Compared with the size of the saved tensor's whole storage, which is
  /// what a record writes and frees, not with the size of the view.
  int64_t threshold_bytes = 1 << 20;
  /// How many spilled storages backward reads ahead, in backward order: at most
  /// this many are in memory (being read or read) before backward loads them.
  int64_t prefetch = 2;
  /// Profile write bandwidth against forward time and keep in memory what could
  /// not be written before backward starts.
  bool adaptive = true;
  /// The last `keep_last` spillable storages of each forward stay in memory
  /// (backward needs them first).
  int64_t keep_last = 1;
  /// I/O threads; also the number of spill files.
  int64_t io_threads = 2;
  /// Use O_DIRECT (falls back to buffered I/O where the file system refuses it).
  bool direct_io = true;
  /// Use io_uring where the kernel allows it (else pwrite/pread).
  bool use_uring = true;
  /// Use cuFile (GPUDirect Storage) for CUDA tensors where libcufile.so.0 loads.
  bool use_cufile = true;
  /// Size of each I/O request and of each staging buffer.
  int64_t chunk_bytes = 4 << 20;
  /// Unnamed files (O_TMPFILE, else unlinked right after creation): nothing can be
  /// left behind even on SIGKILL, but the files are invisible in the directory.
  bool anonymous_files = false;
  /// Fault injection for tests, e.g. "enospc:2,corrupt:1" (see docs/spilling.md);
  /// the environment variable HECTOR_SPILL_FAULTS is appended.
  std::string faults;
};

/// The kinds of injectable faults.
enum class SpillFault {
  Enospc,     ///< The Nth record write fails with ENOSPC.
  ShortWrite, ///< The Nth record write's first request writes only part of its bytes.
  ReadError,  ///< The Nth record read fails with EIO.
  Corrupt,    ///< After the Nth record is written, one payload byte in the file is flipped.
  Truncate,   ///< After the Nth record is written, its file is cut in the middle of it.
};

class SpillEngine; // The implementation (runtime/src/spill).

/// The spilling activation store. Thread-safe.
class SpillStore final : public ActivationStore {
public:
  explicit SpillStore(SpillOptions options);
  ~SpillStore() override;

  ActivationHandle save(const at::Tensor &tensor, const std::string &tag,
                        bool spillable = true) override;
  at::Tensor load(ActivationHandle handle) override;
  void release(ActivationHandle handle) override;
  void forwardBegin() override;
  void forwardEnd() override;
  void backwardBegin() override;
  void backwardEnd() override;
  ActivationStats stats() const override;

  /// Waits until no write or read is in flight, then reports (TORCH_WARN) a write
  /// failure not reported yet.
  void synchronize();
  /// Drops every saved tensor, stops the I/O threads and removes the files.
  /// Later calls to save() fail; load() of an earlier handle fails. Reports a
  /// write failure not reported yet.
  void close();
  /// close() if no handle is left (nothing can be loaded any more); returns
  /// whether the store is closed.
  bool closeIfUnused();
  /// Reports (TORCH_WARN, on the calling thread) a write failure an I/O thread
  /// met after the last save() or load(); save, load and synchronize do it too.
  void reportWarnings();
  /// Whether CUDA tensors can use cuFile: "loaded" (followed by ", but ..." where
  /// cuFile refused a spill file), "disabled (...)", or why it is not available.
  /// Loads libcufile if that was not done yet.
  std::string cufileStatus();
  /// The spill files that exist now.
  std::vector<std::string> files() const;
  /// Arms a fault for the `nth` (1-based, counted from now) write or read.
  void injectFault(SpillFault fault, int64_t nth);
  /// The options in effect (after the environment was consulted).
  const SpillOptions &options() const;
  /// How the files are accessed: "direct" or "buffered", then "+io_uring" where a
  /// thread has a ring and "+cufile" once a record was written through cuFile.
  std::string ioMode() const;

private:
  std::unique_ptr<SpillEngine> engine_;
};

/// Parses a fault name ("enospc", "short_write", "read_error", "corrupt", "truncate").
SpillFault parseSpillFault(const std::string &name);

} // namespace hector
