//===- pinned_cuda.h - CUDA side of the zero-copy table (internal) -*- C++ -*-===//
//
// Implemented in pinned_gather.cu; only used when the runtime is built with CUDA.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hector::cuda {

/// A host storage page-locked with cudaHostRegister (or found already page-locked). Shared by
/// every table over the same storage; the destructor waits for the last gather that read it and
/// then unregisters (only what it registered itself).
struct HostRegion;

/// The launch shape of one zero-copy gather.
struct GatherLaunch {
  int vectorBytes;   ///< bytes per load: 16, 8, 4, 2 or 1
  int groupThreads;  ///< threads per row: a power of two, at most a warp
  bool alignedStart; ///< groups start at the 128-byte line below the row
  int64_t blocks;
  int blockThreads; ///< a multiple of groupThreads, at most 512
};

/// Whether a CUDA device can be used; otherwise `why` says why not.
bool deviceAvailable(std::string &why);

/// Page-locks `storage` in place (or joins an existing registration of the same storage).
/// Returns null and sets `why` when that fails.
std::shared_ptr<HostRegion> registerStorage(const c10::Storage &storage, std::string &why);

/// The launch shape of a gather of `n` rows of `rowBytes` bytes from the device address
/// `tableAddress` to `outAddress`: blocks * blockThreads <= maxThreads when maxThreads > 0.
GatherLaunch gatherLaunch(uintptr_t tableAddress, uintptr_t outAddress, int64_t rowBytes, int64_t n,
                          int64_t maxThreads);

/// The zero-copy gather: rows `index` (int32/int64, on a CUDA device, validated) of the table of
/// `numRows` rows of `rowBytes` bytes starting `offsetBytes` into the region, into `out`
/// (contiguous, on index's device, index.numel() * rowBytes bytes). Runs on the current stream.
void gatherRows(HostRegion &region, int64_t offsetBytes, int64_t rowBytes, const at::Tensor &index,
                at::Tensor &out, int64_t maxThreads, bool sortIndices);

} // namespace hector::cuda
