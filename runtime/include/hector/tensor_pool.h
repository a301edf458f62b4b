//===- hector/tensor_pool.h - Reused host memory for large kernel tensors ---===//
//
// The tensors that compiled layers allocate on the CPU (results, saved activations and
// temporaries of their kernels) come from a pool of large blocks that outlives the tensors.
// Without it every call of a layer on a large graph maps its big tensors afresh (the C
// library maps blocks over 32 MiB and unmaps them when freed), and the kernel zeroes every
// page on first touch: a fifth of a full-size RGAT training step went there. A block freed
// by one call is reused by a later allocation of about the same size; blocks not reused are
// released, oldest first, when what the pool holds unused passes its limit, when a new block
// would make the pool hold more than its live blocks ever needed at once, or when the
// system runs short of memory. Small tensors (under the pool's minimum) come from PyTorch's
// CPU allocator as usual. The memory budget counts the pool's unused blocks as available.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TENSOR_POOL_H
#define HECTOR_TENSOR_POOL_H

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <cstdint>

namespace hector {

/// An uninitialised CPU tensor of `sizes` with `options`' dtype, contiguous, whose storage
/// comes from the pool (or, under the pool's minimum size, from PyTorch's CPU allocator). Its
/// storage stays resizable. Throws c10::OutOfMemoryError when no memory can be had, after
/// releasing the pool's unused blocks.
at::Tensor pooledEmpty(at::IntArrayRef sizes, const at::TensorOptions &options);

/// What the pool holds and has done.
struct TensorPoolStats {
  int64_t cachedBytes = 0; ///< unused blocks held for reuse
  int64_t liveBytes = 0;   ///< blocks backing live tensors
  int64_t peakLiveBytes = 0; ///< the most bytes live blocks held at once since the pool was
                             ///< last emptied: live and unused blocks together stay within it
  int64_t limitBytes = 0;  ///< the most unused bytes kept
  int64_t minBytes = 0;    ///< smaller allocations bypass the pool
  int64_t hits = 0;        ///< allocations served by an unused block
  int64_t misses = 0;      ///< allocations that mapped a new block
  int64_t released = 0;    ///< blocks given back to the system
  bool poison = false;     ///< blocks are filled with 0xFF bytes before use
};

TensorPoolStats tensorPoolStats();

/// The bytes of unused blocks (cheap; the memory budget adds them to what is available).
int64_t tensorPoolCachedBytes();

/// Gives every unused block back to the system and restarts the peak of live bytes at the
/// bytes live now.
void emptyTensorPool();

/// Sets the most unused bytes the pool keeps (0: keep none; blocks over it are released at
/// once), the size under which allocations bypass it, and whether new and reused blocks are
/// filled with 0xFF bytes (NaN in every float dtype) before use, which tests use to show that
/// no kernel reads memory it did not write.
void configureTensorPool(int64_t limitBytes, int64_t minBytes, bool poison);

/// Makes the pool PyTorch's CPU allocator for every tensor of the process (`on`), or gives the
/// allocator it replaced back. Off by default: the pool serves compiled layers' tensors only.
/// On, the tensors of the rest of a training step (a loss over all nodes, its gradient, the
/// optimizer's temporaries) are reused as well instead of mapped and zeroed afresh.
void setTensorPoolProcessWide(bool on);
bool tensorPoolProcessWide();

} // namespace hector

#endif // HECTOR_TENSOR_POOL_H
