//===- bindings.cpp - torch.classes.hector.SpillStore / SpillHandle -------===//
//
// The Python front (hector.spill) drives the C++ engine through these classes:
// a pack hook calls SpillStore.save() and gets a SpillHandle, whose destruction
// (autograd dropping the saved variable) releases the saved tensor.
//
//===----------------------------------------------------------------------===//
#include "hector/spill.h"

#include <torch/custom_class.h>
#include <torch/library.h>

namespace hector {
namespace {

/// A handle that releases its saved tensor when it dies.
struct SpillHandle : torch::CustomClassHolder {
  SpillHandle(std::shared_ptr<ActivationStore> store, ActivationHandle id)
      : store(std::move(store)), id(id) {}
  ~SpillHandle() override {
    try {
      store->release(id);
    } catch (...) {
    }
  }
  at::Tensor load() { return store->load(id); }
  std::shared_ptr<ActivationStore> store;
  ActivationHandle id;
};

/// The Python-visible store.
struct SpillStoreHolder : torch::CustomClassHolder {
  explicit SpillStoreHolder(SpillOptions options)
      : store(std::make_shared<SpillStore>(std::move(options))) {}
  std::shared_ptr<SpillStore> store;
  std::shared_ptr<ActivationStore> previous;
  bool installed = false;
};

SpillOptions make_options(const std::string &dir, int64_t threshold_bytes, int64_t prefetch,
                          bool adaptive, int64_t keep_last, int64_t io_threads, bool direct_io,
                          bool use_uring, bool use_cufile, int64_t chunk_bytes,
                          bool anonymous_files, const std::string &faults) {
  SpillOptions o;
  o.dir = dir;
  o.threshold_bytes = threshold_bytes;
  o.prefetch = prefetch;
  o.adaptive = adaptive;
  o.keep_last = keep_last;
  o.io_threads = io_threads;
  o.direct_io = direct_io;
  o.use_uring = use_uring;
  o.use_cufile = use_cufile;
  o.chunk_bytes = chunk_bytes;
  o.anonymous_files = anonymous_files;
  o.faults = faults;
  return o;
}

c10::Dict<std::string, int64_t> stats_dict(const ActivationStats &s) {
  c10::Dict<std::string, int64_t> d;
  d.insert("saved", s.saved);
  d.insert("loaded", s.loaded);
  d.insert("resident_bytes", s.resident_bytes);
  d.insert("peak_resident_bytes", s.peak_resident_bytes);
  d.insert("bytes_written", s.bytes_written);
  d.insert("bytes_read", s.bytes_read);
  d.insert("spilled", s.spilled);
  d.insert("kept", s.kept);
  d.insert("deduplicated", s.deduplicated);
  d.insert("forwarded", s.forwarded);
  d.insert("prefetched", s.prefetched);
  d.insert("prefetch_hits", s.prefetch_hits);
  d.insert("demand_reads", s.demand_reads);
  d.insert("write_failures", s.write_failures);
  d.insert("adaptive_keep_bytes", s.adaptive_keep_bytes);
  return d;
}

} // namespace
} // namespace hector

TORCH_LIBRARY_FRAGMENT(hector, m) {
  using hector::SpillHandle;
  using hector::SpillStoreHolder;
  m.class_<SpillHandle>("SpillHandle")
      .def("load", &SpillHandle::load)
      .def("id", [](const c10::intrusive_ptr<SpillHandle> &self) { return self->id; });

  m.class_<SpillStoreHolder>("SpillStore")
      .def(torch::init([](std::string dir, int64_t threshold_bytes, int64_t prefetch, bool adaptive,
                          int64_t keep_last, int64_t io_threads, bool direct_io, bool use_uring,
                          bool use_cufile, int64_t chunk_bytes, bool anonymous_files,
                          std::string faults) {
        return c10::make_intrusive<SpillStoreHolder>(hector::make_options(
            dir, threshold_bytes, prefetch, adaptive, keep_last, io_threads, direct_io,
            use_uring, use_cufile, chunk_bytes, anonymous_files, faults));
      }))
      .def("save",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self, const at::Tensor &tensor,
              const std::string &tag, bool spillable) {
             return c10::make_intrusive<SpillHandle>(self->store,
                                                     self->store->save(tensor, tag, spillable));
           })
      .def("stats",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) {
             return hector::stats_dict(self->store->stats());
           })
      .def("files",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { return self->store->files(); })
      .def("io_mode",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { return self->store->ioMode(); })
      .def("synchronize",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->synchronize(); })
      .def("forward_begin",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->forwardBegin(); })
      .def("backward_begin",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->backwardBegin(); })
      .def("backward_end",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->backwardEnd(); })
      .def("inject_fault",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self, const std::string &kind,
              int64_t nth) { self->store->injectFault(hector::parseSpillFault(kind), nth); })
      // Makes this store the one compiled layers use (hector::currentActivationStore).
      .def("install",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) {
             if (!self->installed) {
               self->previous = hector::setCurrentActivationStore(self->store);
               self->installed = true;
             }
           })
      .def("uninstall",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) {
             if (self->installed) {
               hector::setCurrentActivationStore(std::move(self->previous));
               self->installed = false;
             }
           })
      .def("close", [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->close(); })
      .def("close_if_unused",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) {
             return self->store->closeIfUnused();
           })
      .def("report_warnings",
           [](const c10::intrusive_ptr<SpillStoreHolder> &self) { self->store->reportWarnings(); })
      .def("cufile_status", [](const c10::intrusive_ptr<SpillStoreHolder> &self) {
        return self->store->cufileStatus();
      });
}
