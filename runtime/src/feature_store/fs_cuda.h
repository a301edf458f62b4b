//===- fs_cuda.h - CUDA side of the feature store (internal) ---*- C++ -*-===//
//
// Implemented in checksum.cu; only in builds with CUDA (HECTOR_WITH_CUDA).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <string>

namespace hector::fs::cuda {

/// CRC32C of row blocks in GPU memory: entry i covers the 8-byte little-endian `blockIds[i]`
/// followed by `lengths[i]` bytes at the start of `blocks[i]` (`blocks`: uint8 [n, stride];
/// `blockIds`, `lengths`: int64 [n]; all on one CUDA device). Returns int64 [n] on that device.
/// Equal to fs::blockChecksum on the host.
at::Tensor blockChecksums(const at::Tensor &blocks, const at::Tensor &blockIds,
                          const at::Tensor &lengths);

/// Page-locks [ptr, ptr + bytes) with cudaHostRegister; false (and `why`) when refused.
bool hostRegister(void *ptr, size_t bytes, std::string &why);
void hostUnregister(void *ptr);

/// Waits for the work queued so far on `device`'s current stream.
void synchronizeCurrentStream(const c10::Device &device);

} // namespace hector::fs::cuda
