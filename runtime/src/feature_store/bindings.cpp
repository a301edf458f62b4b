//===- bindings.cpp - torch.classes.hector.FeatureStore / FeatureStoreWriter -===//
//
// The Python front (runtime/python/hector/feature_store.py) drives the C++ store through these
// classes.
//
//===----------------------------------------------------------------------===//
#include "hector/common.h"
#include "hector/feature_store.h"

#include <torch/custom_class.h>
#include <torch/library.h>

namespace {

struct WriterHolder : torch::CustomClassHolder {
  explicit WriterHolder(std::unique_ptr<hector::FeatureStoreWriter> w) : writer(std::move(w)) {}
  std::unique_ptr<hector::FeatureStoreWriter> writer;
};

struct StoreHolder : torch::CustomClassHolder {
  explicit StoreHolder(std::unique_ptr<hector::FeatureStore> s) : store(std::move(s)) {}
  std::unique_ptr<hector::FeatureStore> store;
};

/// The dtype whose Python spelling is `name` ("torch.float32").
at::ScalarType parseDtype(const std::string &name) {
  for (at::ScalarType t : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16, at::kChar, at::kByte,
                           at::kShort, at::kInt, at::kLong, at::kBool})
    if (hector::dtypeName(t) == name)
      return t;
  TORCH_CHECK_TYPE(false, "hector.FeatureStore: a store cannot hold dtype ", name);
}

c10::Dict<std::string, int64_t> statsDict(const hector::FeatureStoreStats &s) {
  c10::Dict<std::string, int64_t> d;
  d.insert("gathers", s.gathers);
  d.insert("rows", s.rows);
  d.insert("unique_rows", s.uniqueRows);
  d.insert("cache_hits", s.cacheHits);
  d.insert("victim_hits", s.victimHits);
  d.insert("storage_rows", s.storageRows);
  d.insert("prefetched_rows", s.prefetchedRows);
  d.insert("bytes_read", s.bytesRead);
  d.insert("blocks_read", s.blocksRead);
  d.insert("read_requests", s.readRequests);
  d.insert("cache_admissions", s.cacheAdmissions);
  d.insert("cache_evictions", s.cacheEvictions);
  d.insert("victim_inserts", s.victimInserts);
  d.insert("prefetches", s.prefetches);
  d.insert("prefetch_unused_rows", s.prefetchUnusedRows);
  d.insert("stall_ns", s.stallNs);
  return d;
}

} // namespace

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.class_<WriterHolder>("FeatureStoreWriter")
      .def(torch::init([](const std::string &path, int64_t blockBytes, bool overwrite,
                          bool directIo, bool useUring, bool sync, const std::string &faults) {
        hector::FeatureStoreWriterOptions o;
        o.sync = sync;
        o.blockBytes = blockBytes;
        o.overwrite = overwrite;
        o.directIo = directIo;
        o.useUring = useUring;
        o.faults = faults;
        return c10::make_intrusive<WriterHolder>(
            std::make_unique<hector::FeatureStoreWriter>(path, o));
      }))
      .def("append", [](const c10::intrusive_ptr<WriterHolder> &self,
                        const at::Tensor &rows) { self->writer->append(rows); })
      .def("finish", [](const c10::intrusive_ptr<WriterHolder> &self) { self->writer->finish(); })
      .def("abort", [](const c10::intrusive_ptr<WriterHolder> &self) { self->writer->abort(); })
      .def("rows",
           [](const c10::intrusive_ptr<WriterHolder> &self) { return self->writer->rows(); });

  m.class_<StoreHolder>("FeatureStore")
      .def(torch::init([](const std::string &path, int64_t cacheBytes, int64_t victimBytes,
                          const std::string &policy, const c10::optional<at::Tensor> &scores,
                          double staticWeight, const std::string &cacheDevice,
                          const std::string &sharedVictim, bool directIo, bool useUring,
                          bool useCufile, int64_t ioDepth, int64_t prefetchBytes, bool tensorPath,
                          int64_t expectWidth, const std::string &expectDtype) {
        hector::FeatureStoreOptions o;
        o.cacheBytes = cacheBytes;
        o.victimBytes = victimBytes;
        o.policy = hector::parseCachePolicy(policy);
        if (scores)
          o.staticScores = *scores;
        o.staticWeight = staticWeight;
        o.cacheDevice = c10::Device(cacheDevice);
        o.sharedVictim = sharedVictim;
        o.directIo = directIo;
        o.useUring = useUring;
        o.useCufile = useCufile;
        o.ioDepth = ioDepth;
        o.prefetchBytes = prefetchBytes;
        o.tensorPath = tensorPath;
        if (expectWidth >= 0)
          o.expectWidth = expectWidth;
        if (!expectDtype.empty())
          o.expectDtype = parseDtype(expectDtype);
        return c10::make_intrusive<StoreHolder>(std::make_unique<hector::FeatureStore>(path, o));
      }))
      .def("gather", [](const c10::intrusive_ptr<StoreHolder> &self,
                        const at::Tensor &index) { return self->store->gather(index); })
      .def("prefetch", [](const c10::intrusive_ptr<StoreHolder> &self,
                          const at::Tensor &index) { self->store->prefetch(index); })
      .def("cancel_prefetch",
           [](const c10::intrusive_ptr<StoreHolder> &self) { self->store->cancelPrefetch(); })
      .def("stats",
           [](const c10::intrusive_ptr<StoreHolder> &self) {
             return statsDict(self->store->stats());
           })
      .def("reset_stats",
           [](const c10::intrusive_ptr<StoreHolder> &self) { self->store->resetStats(); })
      .def("num_rows",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->info().numRows; })
      .def("row_shape",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->info().rowShape; })
      .def("dtype_name",
           [](const c10::intrusive_ptr<StoreHolder> &self) {
             return hector::dtypeName(self->store->info().dtype);
           })
      .def("layout",
           [](const c10::intrusive_ptr<StoreHolder> &self) {
             const auto &i = self->store->info();
             c10::Dict<std::string, int64_t> d;
             d.insert("num_rows", i.numRows);
             d.insert("width", i.width);
             d.insert("row_bytes", i.rowBytes);
             d.insert("rows_per_block", i.rowsPerBlock);
             d.insert("block_stride", i.blockStride);
             d.insert("num_blocks", i.numBlocks);
             d.insert("file_bytes", i.fileBytes);
             return d;
           })
      .def("uuid",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->info().uuid; })
      .def("path",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->info().path; })
      .def("cache_rows",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->cacheRows(); })
      .def("victim_rows",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->victimRows(); })
      .def("io_mode",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->ioMode(); })
      .def("victim_name",
           [](const c10::intrusive_ptr<StoreHolder> &self) { return self->store->victimName(); })
      .def("close", [](const c10::intrusive_ptr<StoreHolder> &self) { self->store->close(); });
}
