//===- model.cpp - Loading compiled layers from C++ -------------*- C++ -*-===//
//
// dlopen()s a library built by hectorc, finds the operator namespaces it registers, parses each
// layer's manifest (hector/emit/manifest_json.h, the reader the emitter's writer pairs with) and
// runs the layer's `forward` operator through the dispatcher. hector.load (Python) loads through
// the same code (the operators hector::load_library and hector::layer_manifest).
//
//===----------------------------------------------------------------------===//
#include "hector/model.h"

#include "hector/emit/manifest_json.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>
#include <c10/util/Exception.h>

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>
#include <variant>

namespace hector {

LayerManifest parseManifest(const std::string &ns, const std::string &json) {
  try {
    return manifest_json::manifestFromJson(ns, json);
  } catch (const nlohmann::json::exception &e) {
    // The reader checks what it reads; this is a last guard, so that no text ends the process.
    throw std::runtime_error("hector manifest of " + ns + ": " + e.what());
  }
}

namespace {

/// The operator namespaces that hold a `manifest` operator of a compiled layer.
std::set<std::string> layerNamespaces() {
  std::set<std::string> out;
  for (const c10::OperatorName &op : c10::Dispatcher::singleton().getAllOpNames()) {
    const std::string &name = op.name;
    size_t sep = name.find("::");
    if (sep != std::string::npos && name.compare(0, 7, "hector_") == 0 &&
        name.compare(sep, std::string::npos, "::manifest") == 0 && op.overload_name.empty())
      out.insert(name.substr(0, sep));
  }
  return out;
}

c10::Stack callOp(const std::string &qualified, c10::Stack stack) {
  c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualified.c_str(), "");
  op.callBoxed(&stack);
  return stack;
}

/// PyG's initialisers on one weight (`dims`: one slice's dimensions): Glorot-uniform over
/// (first dimension, product of the rest) of a slice. The one implementation: C++ layers call it
/// directly, Python layers through the operator hector::init_weight.
void initialise(at::Tensor &w, const std::string &init, const std::vector<int64_t> &dims,
                const std::string &name) {
  at::NoGradGuard guard;
  if (init == "zeros") {
    w.zero_();
  } else if (init == "ones") {
    w.fill_(1.0);
  } else if (init == "normal") {
    w.normal_(0.0, 1.0);
  } else if (init == "uniform") {
    double bound = 1.0 / std::sqrt(dims.empty() ? 1.0 : static_cast<double>(dims[0]));
    w.uniform_(-bound, bound);
  } else if (init == "glorot") {
    double fanIn = 1, fanOut = dims.empty() ? 1 : static_cast<double>(dims[0]);
    if (dims.size() >= 2) {
      fanIn = static_cast<double>(dims[0]);
      fanOut = static_cast<double>(std::accumulate(dims.begin() + 1, dims.end(), int64_t{1},
                                                   std::multiplies<int64_t>()));
    }
    double bound = std::sqrt(6.0 / (fanIn + fanOut));
    w.uniform_(-bound, bound);
  } else {
    TORCH_CHECK_VALUE(false, "hector: weight '", name, "' has an unknown initialiser '", init,
                      "'");
  }
}

void initialise(at::Tensor &w, const TensorDecl &d) { initialise(w, d.init, d.dims, d.name); }

} // namespace

const LayerManifest &manifestOf(const std::string &ns) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<LayerManifest>> parsed;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = parsed.find(ns);
  if (it == parsed.end()) {
    if (!c10::Dispatcher::singleton().findSchema({ns + "::manifest", ""}))
      throw std::runtime_error("hector: no compiled layer is registered as '" + ns +
                               "' (load its library first)");
    c10::Stack out = callOp(ns + "::manifest", {});
    it = parsed.emplace(ns, std::make_unique<LayerManifest>(
                                parseManifest(ns, out.at(0).toStringRef()))).first;
  }
  return *it->second;
}

namespace {

/// loadLibrary, with `caller` (hector::loadLibrary, hector.load) opening its errors.
std::vector<LayerManifest> loadLibraryFor(const std::string &path, const std::string &caller) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<LayerManifest>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved))
    throw std::runtime_error(caller + ": " + path + " does not exist");
  std::string key(resolved);
  if (auto it = loaded.find(key); it != loaded.end())
    return it->second;

  if (std::string problem = checkLibraryFile(key); !problem.empty())
    throw std::runtime_error(caller + ": " + problem);
  std::set<std::string> before = layerNamespaces();
  void *handle = dlopen(key.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *err = dlerror();
    throw std::runtime_error(caller + ": cannot load " + path + ": " +
                             (err ? err : "unknown error"));
  }
  std::set<std::string> after = layerNamespaces();
  // The namespaces the library registers itself; those registered before it came from another
  // file (its registration left them out rather than end the process).
  static std::map<std::string, std::string> owners;
  std::string taken, where;
  if (auto own = reinterpret_cast<const char *(*)()>(dlsym(handle, "hector_library_namespaces"))) {
    std::stringstream list(own());
    std::set<std::string> places;
    for (std::string ns; std::getline(list, ns, ',');)
      if (!ns.empty() && before.count(ns)) {
        taken += (taken.empty() ? "" : ", ") + ns;
        auto owner = owners.find(ns);
        places.insert(owner == owners.end() ? "another library" : owner->second);
      }
    for (const std::string &place : places)
      where += (where.empty() ? "" : ", ") + place;
  }
  if (!taken.empty())
    throw std::runtime_error(caller + ": " + path +
                             " registers layers (operator "
                             "namespaces " +
                             taken +
                             ") that are already loaded in this process "
                             "from " +
                             where +
                             ": the same model built for the same target by "
                             "hectorc. PyTorch cannot replace loaded operators; load that file "
                             "instead, or this one in a new process");
  std::vector<LayerManifest> layers;
  for (const std::string &ns : after)
    if (!before.count(ns)) {
      owners[ns] = key;
      const LayerManifest &manifest = manifestOf(ns);
      // Backward layers, inference copies and variants are run by applyLayer only.
      if (manifest.userFacing())
        layers.push_back(manifest);
    }
  if (layers.empty())
    throw std::runtime_error(caller + ": " + path +
                             " registers no hector layer (not a library built by hectorc)");
  std::stable_sort(layers.begin(), layers.end(), [](const LayerManifest &a,
                                                    const LayerManifest &b) {
    return a.entry > b.entry;
  });
  loaded[key] = layers;
  return layers;
}

} // namespace

std::vector<LayerManifest> loadLibrary(const std::string &path) {
  return loadLibraryFor(path, "hector::loadLibrary");
}

CompiledLayer::CompiledLayer(LayerManifest manifest, int64_t numRelations, int64_t numNtypes,
                             const at::TensorOptions &options)
    : manifest_(std::move(manifest)), numRelations_(numRelations), numNtypes_(numNtypes) {
  TORCH_CHECK_VALUE(numRelations >= 0 && numNtypes >= 1, "hector::CompiledLayer ",
                    manifest_.layer, ": numRelations must be >= 0 and numNtypes >= 1, got ",
                    numRelations, " and ", numNtypes);
  for (const TensorDecl &d : manifest_.weights) {
    std::vector<int64_t> shape;
    if (d.slicing == "relation")
      shape.push_back(numRelations);
    else if (d.slicing == "ntype")
      shape.push_back(numNtypes);
    shape.insert(shape.end(), d.dims.begin(), d.dims.end());
    at::Tensor w = at::empty(shape, options);
    initialise(w, d);
    // Sub-layer weights ("conv1.W") live in submodules, so their parameter names keep the dots.
    torch::nn::Module *owner = this;
    std::string rest = d.name;
    for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) {
      std::string child = rest.substr(0, dot);
      std::shared_ptr<torch::nn::Module> sub;
      for (const auto &item : owner->named_children())
        if (item.key() == child)
          sub = item.value();
      if (!sub)
        sub = owner->register_module(child, std::make_shared<torch::nn::Module>(child));
      owner = sub.get();
    }
    weights_.push_back(owner->register_parameter(rest, w));
  }
}

std::vector<at::Tensor> CompiledLayer::weights() const { return weights_; }

std::vector<at::Tensor> CompiledLayer::forward(const Graph &graph,
                                               const std::vector<at::Tensor> &inputs) {
  const std::string &name = manifest_.layer;
  TORCH_CHECK_TYPE(inputs.size() == manifest_.inputs.size(), name, ".forward: expected ",
                   manifest_.inputs.size(), " inputs, got ", inputs.size());
  TORCH_CHECK_VALUE(graph.numRelations() == numRelations_, name, ".forward: the graph has ",
                    graph.numRelations(), " relations but the layer was built for ",
                    numRelations_);
  TORCH_CHECK_VALUE(graph.numNtypes() == numNtypes_, name, ".forward: the graph has ",
                    graph.numNtypes(), " node types but the layer was built for ", numNtypes_);
  return applyLayer(manifest_, graph, inputs, weights_, variant);
}

} // namespace hector

// hector.load (Python) checks the file with the same code before torch.ops.load_library.
TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.def("check_library(str path) -> str",
        [](const std::string &path) { return hector::checkLibraryFile(path); });
  // hector.load's weights (Python) are initialised by the same code as CompiledLayer's.
  m.def("init_weight(Tensor(a!) weight, str init, int[] slice_dims, str name) -> ()",
        [](at::Tensor weight, const std::string &init, const std::vector<int64_t> &dims,
           const std::string &name) { hector::initialise(weight, init, dims, name); });
  // hector.load loads a library with the same code as hector::loadLibrary: the operator
  // namespaces of its layers that the user calls, the entry layer first.
  m.def("load_library(str path, str caller) -> str[]",
        [](const std::string &path, const std::string &caller) {
          std::vector<std::string> namespaces;
          for (const hector::LayerManifest &layer : hector::loadLibraryFor(path, caller))
            namespaces.push_back(layer.ns);
          return namespaces;
        });
  // The runtime's reading of a layer's manifest, for Python: what hector::manifestOf parsed
  // and checked, written back as JSON (without the kernels), with the namespace added.
  m.def("layer_manifest(str ns) -> str", [](const std::string &ns) {
    const hector::LayerManifest &layer = hector::manifestOf(ns);
    hector::manifest_json::Json json = hector::manifest_json::manifestToJson(layer);
    json["namespace"] = layer.ns;
    return hector::manifest_json::manifestText(json);
  });
}
