//===- checksum.cu - Row-block checksums on the GPU and host registration --===//
//
// Blocks that cuFile read straight into GPU memory are verified where they are: one thread per
// block runs the table-driven CRC32C (the reflected Castagnoli polynomial, as on the host).
//
//===----------------------------------------------------------------------===//
#include "fs_cuda.h"

#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>

namespace hector::fs::cuda {

namespace {

__constant__ uint32_t crcTable[256];

__device__ uint32_t crcBytes(uint32_t c, const unsigned char *p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    c = (c >> 8) ^ crcTable[(c ^ p[i]) & 0xff];
  return c;
}

__global__ void blockChecksumKernel(const unsigned char *blocks, int64_t stride, const int64_t *ids,
                                    const int64_t *lengths, int64_t n, int64_t *out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n)
    return;
  unsigned char index[8];
  const uint64_t id = static_cast<uint64_t>(ids[i]);
  for (int b = 0; b < 8; ++b)
    index[b] = static_cast<unsigned char>(id >> (8 * b));
  uint32_t c = 0xFFFFFFFFu;
  c = crcBytes(c, index, 8);
  c = crcBytes(c, blocks + i * stride, lengths[i]);
  out[i] = static_cast<int64_t>(~c);
}

void uploadTable() {
  uint32_t table[256];
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  C10_CUDA_CHECK(cudaMemcpyToSymbol(crcTable, table, sizeof table));
}

} // namespace

at::Tensor blockChecksums(const at::Tensor &blocks, const at::Tensor &blockIds,
                          const at::Tensor &lengths) {
  TORCH_INTERNAL_ASSERT(blocks.is_cuda() && blocks.dim() == 2 && blocks.is_contiguous() &&
                        blocks.scalar_type() == at::kByte);
  const c10::cuda::CUDAGuard guard(blocks.device());
  // The constant table lives per device: upload it once for each.
  static std::mutex mutex;
  static bool uploaded[64] = {};
  {
    std::lock_guard<std::mutex> lock(mutex);
    const int d = blocks.device().index();
    if (d >= 0 && d < 64 && !uploaded[d]) {
      uploadTable();
      uploaded[d] = true;
    }
  }
  const at::Tensor ids = blockIds.to(blocks.device(), at::kLong).contiguous();
  const at::Tensor lens = lengths.to(blocks.device(), at::kLong).contiguous();
  const int64_t n = blocks.size(0);
  at::Tensor out = at::empty({n}, blocks.options().dtype(at::kLong));
  if (n == 0)
    return out;
  const int threads = 128;
  const auto grid = static_cast<unsigned>((n + threads - 1) / threads);
  blockChecksumKernel<<<grid, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      blocks.const_data_ptr<uint8_t>(), blocks.stride(0), ids.const_data_ptr<int64_t>(),
      lens.const_data_ptr<int64_t>(), n, out.data_ptr<int64_t>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

bool hostRegister(void *ptr, size_t bytes, std::string &why) {
  const cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterDefault);
  if (err == cudaSuccess)
    return true;
  (void)cudaGetLastError(); // clear the sticky-free error state
  why = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
  return false;
}

void hostUnregister(void *ptr) {
  if (cudaHostUnregister(ptr) != cudaSuccess)
    (void)cudaGetLastError();
}

void synchronizeCurrentStream(const c10::Device &device) {
  c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
}

} // namespace hector::fs::cuda
