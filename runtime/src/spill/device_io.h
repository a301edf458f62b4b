//===- device_io.h - CUDA-side helpers of the spilling engine -------------===//
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace hector::spill_io {

/// GPUDirect Storage through libcufile.so.0, resolved with dlopen/dlsym so that
/// the runtime has no link dependency on it. Only in HECTOR_WITH_CUDA builds.
class CuFile {
public:
  /// The loaded library with its driver open, or nullptr where it is absent or
  /// the driver refuses to open ($HECTOR_CUFILE_LIBRARY overrides the name).
  /// Loads it on the first call (thread-safe; can take long).
  static CuFile *get();
  /// "loaded", or why get() returns nullptr ("not loaded yet" before the first call).
  static std::string status();
  /// Points libcufile's log away from the working directory, where it would
  /// otherwise create ./cufile.log: unless $CUFILE_LOGFILE_PATH or
  /// $CUFILE_ENV_PATH_JSON (a configuration that sets the log directory) is set,
  /// sets CUFILE_LOGFILE_PATH=<temp dir>/hector-cufile-<pid>.log, a file removed
  /// at exit when empty. Idempotent. Call on a thread that may call setenv (no
  /// other thread reading the environment), before get().
  static void prepare_environment();
  /// Registers a file descriptor; nullptr where cuFile cannot use it (then
  /// `error`, if given, receives cuFile's error code).
  void *register_fd(int fd, int *error = nullptr);
  void deregister(void *handle);
  /// Device-memory transfers; bytes transferred or a negative error.
  int64_t write(void *handle, const void *device_ptr, size_t size, uint64_t offset);
  int64_t read(void *handle, void *device_ptr, size_t size, uint64_t offset);

private:
  CuFile() = default;
  void *lib_ = nullptr;
  void *handle_register_ = nullptr, *handle_deregister_ = nullptr;
  void *write_ = nullptr, *read_ = nullptr;
};

/// A 64-bit position-dependent digest of a uint8 tensor's bytes, computed where
/// the tensor lives (ATen integer ops, exact and deterministic on every device).
/// Any change of a single 8-byte word changes it.
uint64_t device_digest(const at::Tensor &bytes);

} // namespace hector::spill_io
