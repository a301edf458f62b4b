//===- spill_stress.cpp - The spill engine under the compiled layers' pattern -===//
//
// hector-spill-stress [REPETITIONS] [STEPS]: drives hector::SpillStore as compiled layers do
// (no phase calls: the store infers them), with the inputs that caused a use-after-release in
// the engine: one `norm` and one `x` tensor saved by every layer of every step (so one storage
// is referenced by many saved handles while its write or read runs), plus fresh activations and
// pinned weights. Every threshold, prefetch distance, keep window and adaptive setting; in some
// repetitions the graph of a step is dropped without backward, or released from another thread.
// Every load is compared with a clone taken at save time (the oracle: the bytes saved). Exits
// non-zero on the first mismatch or error. Built plainly and in the ThreadSanitizer tree
// (tools/run-tests.sh --sanitize=thread), where TSan checks the engine's locking.
//
//===----------------------------------------------------------------------===//
#include "hector/spill.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Saved {
  hector::ActivationHandle handle;
  at::Tensor expected;
  std::string tag;
};

int failures = 0;

void check(bool ok, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "hector-spill-stress: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

/// One training step of `layers` layers; returns false when it failed.
void step(hector::SpillStore &store, const at::Tensor &x, const at::Tensor &norm, int layers,
          std::mt19937 &rng, int mode) {
  std::vector<std::vector<Saved>> saved(layers);
  at::Tensor h = x;
  for (int l = 0; l < layers; ++l) {
    auto save = [&](const at::Tensor &t, const std::string &tag, bool spillable = true) {
      saved[l].push_back({store.save(t, tag, spillable), t.clone(), tag});
    };
    // The shared inputs, more than once per layer (a layer reads norm in two places), views of
    // them, and the layer's own activations and weight.
    save(norm, "norm");
    save(norm, "norm again");
    save(norm.narrow(0, 1, norm.size(0) - 1), "norm view");
    save(x, "x");
    save(h, "h");
    at::Tensor w = at::full({16, 16}, 0.01 * (l + 1));
    save(w, "weight", /*spillable=*/false);
    at::Tensor a = at::tanh(h.matmul(w)) * norm.unsqueeze(1);
    save(a, "activation");
    save(at::tensor(0.5), "scalar");
    h = a;
  }
  if (mode == 1) { // the graph is dropped without backward
    for (auto &layer : saved)
      for (Saved &s : layer)
        store.release(s.handle);
    return;
  }
  std::vector<hector::ActivationHandle> late;
  for (int l = layers - 1; l >= 0; --l) {
    std::vector<Saved> &layer = saved[l];
    std::shuffle(layer.begin(), layer.end(), rng); // any order of loads within a node
    for (Saved &s : layer) {
      at::Tensor got = store.load(s.handle);
      check(got.sizes() == s.expected.sizes() && got.strides() == s.expected.strides() &&
                at::equal(got, s.expected),
            "layer " + std::to_string(l) + " '" + s.tag + "' came back different");
      if (rng() % 4 == 0)
        check(at::equal(store.load(s.handle), s.expected), "a second load differs");
    }
    for (Saved &s : layer)
      late.push_back(s.handle);
    if (mode != 2) { // release as autograd does, node by node
      for (auto handle : late)
        store.release(handle);
      late.clear();
    }
  }
  if (mode == 2) { // the last node's buffers freed by another thread
    std::thread([&] {
      for (auto handle : late)
        store.release(handle);
    }).join();
  }
}

} // namespace

int main(int argc, char **argv) {
  const int repetitions = argc > 1 ? std::atoi(argv[1]) : 2;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 6;
  char dir[] = "/tmp/hector-spill-stress-XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("mkdtemp");
    return 2;
  }
  std::mt19937 rng(12345);
  const at::Tensor x = at::randn({64, 16});
  const at::Tensor norm = at::rand({64}) + 0.5;
  int runs = 0;
  for (int64_t threshold : {int64_t(0), int64_t(512), int64_t(1) << 30})
    for (int64_t prefetch : {0, 1, 2, 8})
      for (int keep : {0, 1})
        for (int r = 0; r < repetitions; ++r) {
          hector::SpillOptions options;
          options.dir = dir;
          options.threshold_bytes = threshold;
          options.prefetch = prefetch;
          options.keep_last = keep;
          options.adaptive = keep == 1;
          options.chunk_bytes = 4096;
          try {
            hector::SpillStore store(options);
            for (int s = 0; s < steps; ++s)
              step(store, x, norm, 3, rng, static_cast<int>(rng() % 5 == 0 ? 1 + rng() % 2 : 0));
            store.synchronize();
            const hector::ActivationStats stats = store.stats();
            check(stats.resident_bytes == 0, "resident bytes left after the last step");
            check(stats.write_failures == 0, "a write failed");
            check(store.files().empty(), "spill files left after the last step");
          } catch (const c10::Error &e) {
            check(false, std::string("error: ") + e.what_without_backtrace());
          }
          ++runs;
        }
  std::string command = std::string("rmdir ") + dir;
  const int left = std::system(command.c_str()); // fails if a file was left behind
  check(left == 0, std::string("files left in ") + dir);
  std::printf("hector-spill-stress: %d runs of %d steps: %s\n", runs, steps,
              failures ? "FAILED" : "ok");
  std::fflush(stdout);
  std::fflush(stderr);
  // Without LibTorch's static destructors: their teardown order (a registry mutex unlocked after
  // its library destroyed it) is not under test, and ThreadSanitizer reports it.
  std::_Exit(failures ? 1 : 0);
}
