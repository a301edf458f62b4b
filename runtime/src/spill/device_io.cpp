//===- device_io.cpp - cuFile loader and the on-device digest -------------===//
#include "device_io.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

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

#if defined(HECTOR_WITH_CUDA)
namespace {
std::mutex status_mutex;
std::string load_status = "not loaded yet";

void set_status(std::string status) {
  std::lock_guard<std::mutex> lock(status_mutex);
  load_status = std::move(status);
}

char log_path[512];
void remove_empty_log() {
  struct stat st {};
  if (::stat(log_path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
    ::unlink(log_path);
}
} // namespace
#endif

void CuFile::prepare_environment() {
#if defined(HECTOR_WITH_CUDA)
  static std::once_flag once;
  std::call_once(once, [] {
    if (std::getenv("CUFILE_LOGFILE_PATH") || std::getenv("CUFILE_ENV_PATH_JSON"))
      return; // The user chose where the log goes.
    // libcufile wants an absolute path.
    const char *tmp = std::getenv("TMPDIR");
    const std::string dir = tmp && tmp[0] == '/' ? tmp : "/tmp";
    const std::string path = dir + "/hector-cufile-" + std::to_string(::getpid()) + ".log";
    if (path.size() >= sizeof log_path)
      return;
    std::memcpy(log_path, path.c_str(), path.size() + 1);
    ::setenv("CUFILE_LOGFILE_PATH", log_path, /*overwrite=*/0);
    // Only a log that says something is worth keeping.
    std::atexit(remove_empty_log);
  });
#endif
}

std::string CuFile::status() {
#if defined(HECTOR_WITH_CUDA)
  std::lock_guard<std::mutex> lock(status_mutex);
  return load_status;
#else
  return "not available (the runtime was built without CUDA)";
#endif
}

CuFile *CuFile::get() {
#if defined(HECTOR_WITH_CUDA)
  static CuFile *instance = []() -> CuFile * {
    prepare_environment(); // Normally done already, by the store's constructor.
    const char *env = std::getenv("HECTOR_CUFILE_LIBRARY");
    const std::string name = env && *env ? env : "libcufile.so.0";
    void *lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *why = ::dlerror();
      set_status("cannot load " + name + (why ? std::string(": ") + why : std::string()));
      return nullptr;
    }
    auto *api = new CuFile;
    api->lib_ = lib;
    auto open = reinterpret_cast<DriverOpenFn>(::dlsym(lib, "cuFileDriverOpen"));
    api->handle_register_ = ::dlsym(lib, "cuFileHandleRegister");
    api->handle_deregister_ = ::dlsym(lib, "cuFileHandleDeregister");
    api->write_ = ::dlsym(lib, "cuFileWrite");
    api->read_ = ::dlsym(lib, "cuFileRead");
    if (!open || !api->handle_register_ || !api->handle_deregister_ || !api->write_ ||
        !api->read_) {
      set_status(name + " lacks the cuFile API");
      delete api;
      return nullptr;
    }
    const CUfileError rc = open();
    if (rc.err != 0) {
      set_status("cuFileDriverOpen failed with error " + std::to_string(rc.err) +
                 " (CUDA error " + std::to_string(rc.cu_err) + ")");
      delete api;
      return nullptr;
    }
    set_status("loaded");
    return api; // The driver stays open for the life of the process.
  }();
  return instance;
#else
  return nullptr;
#endif
}

void *CuFile::register_fd(int fd, int *error) {
  CUfileDescr descr{};
  descr.type = 1;
  descr.handle.fd = fd;
  void *handle = nullptr;
  const CUfileError rc = reinterpret_cast<HandleRegisterFn>(handle_register_)(&handle, &descr);
  if (error)
    *error = rc.err;
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
