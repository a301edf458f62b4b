//===- device_io.cpp - cuFile loader and the on-device digest -------------===//
#include "device_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>

namespace hector::spill_io {

namespace {
// The subset of cufile.h used here (ABI of libcufile.so.0).
struct CUfileError {
  int err; // CUfileOpError; 0 is CU_FILE_SUCCESS
  int cu_err;
};
struct CUfileDescr {
  int type; // CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
  union {
    int fd;
    void *handle;
  } handle;
  const void *fs_ops;
};
using DriverOpenFn = CUfileError (*)();
using HandleRegisterFn = CUfileError (*)(void **, CUfileDescr *);
using HandleDeregisterFn = void (*)(void *);
using WriteFn = long (*)(void *, const void *, size_t, long, long);
using ReadFn = long (*)(void *, void *, size_t, long, long);
} // namespace

CuFile *CuFile::get() {
#if defined(HECTOR_WITH_CUDA)
  static CuFile *instance = []() -> CuFile * {
    const char *name = std::getenv("HECTOR_CUFILE_LIBRARY");
    void *lib = ::dlopen(name && *name ? name : "libcufile.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return nullptr;
    auto *api = new CuFile;
    api->lib_ = lib;
    auto open = reinterpret_cast<DriverOpenFn>(::dlsym(lib, "cuFileDriverOpen"));
    api->handle_register_ = ::dlsym(lib, "cuFileHandleRegister");
    api->handle_deregister_ = ::dlsym(lib, "cuFileHandleDeregister");
    api->write_ = ::dlsym(lib, "cuFileWrite");
    api->read_ = ::dlsym(lib, "cuFileRead");
    if (!open || !api->handle_register_ || !api->handle_deregister_ || !api->write_ ||
        !api->read_ || open().err != 0) {
      delete api;
      return nullptr;
    }
    return api; // The driver stays open for the life of the process.
  }();
  return instance;
#else
  return nullptr;
#endif
}

void *CuFile::register_fd(int fd) {
  CUfileDescr descr{};
  descr.type = 1;
  descr.handle.fd = fd;
  void *handle = nullptr;
  const CUfileError rc = reinterpret_cast<HandleRegisterFn>(handle_register_)(&handle, &descr);
  return rc.err == 0 ? handle : nullptr;
}

void CuFile::deregister(void *handle) {
  if (handle)
    reinterpret_cast<HandleDeregisterFn>(handle_deregister_)(handle);
}

int64_t CuFile::write(void *handle, const void *device_ptr, size_t size, uint64_t offset) {
  return reinterpret_cast<WriteFn>(write_)(handle, device_ptr, size, static_cast<long>(offset), 0);
}

int64_t CuFile::read(void *handle, void *device_ptr, size_t size, uint64_t offset) {
  return reinterpret_cast<ReadFn>(read_)(handle, device_ptr, size, static_cast<long>(offset), 0);
}

uint64_t device_digest(const at::Tensor &bytes) {
  TORCH_INTERNAL_ASSERT(bytes.scalar_type() == at::kByte && bytes.dim() == 1 && bytes.is_contiguous());
  const int64_t n = bytes.numel();
  const int64_t words = n / 8;
  uint64_t digest = 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(n);
  constexpr int64_t kChunk = 1 << 22; // words per step: bounds the temporaries
  const auto opts = bytes.options().dtype(at::kLong);
  for (int64_t start = 0; start < words; start += kChunk) {
    const int64_t len = std::min(kChunk, words - start);
    at::Tensor w = bytes.narrow(0, start * 8, len * 8).view(at::kLong);
    at::Tensor idx = at::arange(start, start + len, opts);
    // Odd multipliers are bijections modulo 2^64, so each term changes whenever
    // its word changes; the xor with a position key makes the sum order-dependent.
    at::Tensor h = at::bitwise_xor(w, idx.mul_(static_cast<int64_t>(0x9E3779B97F4A7C15ull)));
    h.mul_(static_cast<int64_t>(0xBF58476D1CE4E5B9ull));
    digest += static_cast<uint64_t>(h.sum().item<int64_t>());
  }
  if (n % 8) {
    at::Tensor tail = bytes.narrow(0, words * 8, n % 8).cpu();
    for (int64_t i = 0; i < tail.numel(); ++i)
      digest = (digest ^ tail.data_ptr<uint8_t>()[i]) * 0x100000001B3ull;
  }
  return digest;
}

} // namespace hector::spill_io
