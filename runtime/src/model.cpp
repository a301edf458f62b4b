//===- model.cpp - Loading compiled layers from C++ -------------*- C++ -*-===//
//
// dlopen()s a library built by hectorc, finds the operator namespaces it registers, parses each
// layer's manifest (a small reader for the manifest's JSON subset) and runs the layer's
// `forward` operator through the dispatcher.
//
//===----------------------------------------------------------------------===//
#include "hector/model.h"

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
namespace {

//===----------------------------------------------------------------------===//
// A reader for the manifest's JSON
//===----------------------------------------------------------------------===//

/// A JSON value: null, bool, number, string, array or object.
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string, std::vector<Json>,
               std::map<std::string, Json>>
      v;

  const Json &at(const std::string &key) const {
    const auto *obj = std::get_if<std::map<std::string, Json>>(&v);
    if (!obj || !obj->count(key))
      throw std::runtime_error("hector manifest: missing field '" + key + "'");
    return obj->at(key);
  }
  bool has(const std::string &key) const {
    const auto *obj = std::get_if<std::map<std::string, Json>>(&v);
    return obj && obj->count(key);
  }
  const std::vector<Json> &array() const {
    if (const auto *a = std::get_if<std::vector<Json>>(&v))
      return *a;
    throw std::runtime_error("hector manifest: expected an array");
  }
  const std::string &str() const {
    if (const auto *s = std::get_if<std::string>(&v))
      return *s;
    throw std::runtime_error("hector manifest: expected a string");
  }
  double num() const {
    if (const auto *d = std::get_if<double>(&v))
      return *d;
    throw std::runtime_error("hector manifest: expected a number");
  }
  bool boolean() const {
    if (const auto *b = std::get_if<bool>(&v))
      return *b;
    throw std::runtime_error("hector manifest: expected true or false");
  }
};

/// Recursive-descent reader of one JSON document (no surrogate pairs beyond the BMP needed:
/// manifests hold ASCII names).
class JsonReader {
public:
  explicit JsonReader(const std::string &text) : s(text) {}

  Json document() {
    Json value = parse(0);
    skip();
    if (pos != s.size())
      fail("trailing characters");
    return value;
  }

private:
  const std::string &s;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string &what) const {
    throw std::runtime_error("hector manifest: " + what + " at offset " + std::to_string(pos));
  }
  void skip() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
      ++pos;
  }
  bool eat(char c) {
    skip();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c))
      fail(std::string("expected '") + c + "'");
  }
  bool word(const char *w) {
    size_t n = std::char_traits<char>::length(w);
    if (s.compare(pos, n, w) == 0) {
      pos += n;
      return true;
    }
    return false;
  }

  Json parse(int depth) {
    if (depth > 64)
      fail("nesting too deep");
    skip();
    if (pos >= s.size())
      fail("unexpected end");
    char c = s[pos];
    if (c == '{') {
      ++pos;
      std::map<std::string, Json> obj;
      if (!eat('}')) {
        do {
          skip();
          std::string key = string();
          expect(':');
          obj[key] = parse(depth + 1);
        } while (eat(','));
        expect('}');
      }
      return Json{std::move(obj)};
    }
    if (c == '[') {
      ++pos;
      std::vector<Json> arr;
      if (!eat(']')) {
        do
          arr.push_back(parse(depth + 1));
        while (eat(','));
        expect(']');
      }
      return Json{std::move(arr)};
    }
    if (c == '"')
      return Json{string()};
    if (word("true"))
      return Json{true};
    if (word("false"))
      return Json{false};
    if (word("null"))
      return Json{nullptr};
    size_t end = pos;
    while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) ||
                              (s[end] != '\0' && std::strchr("+-.eE", s[end]))))
      ++end;
    if (end == pos)
      fail("unexpected character");
    double d = std::strtod(s.substr(pos, end - pos).c_str(), nullptr);
    pos = end;
    return Json{d};
  }

  std::string string() {
    if (pos >= s.size() || s[pos] != '"')
      fail("expected a string");
    ++pos;
    std::string out;
    while (pos < s.size() && s[pos] != '"') {
      char c = s[pos++];
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (pos >= s.size())
        fail("unterminated escape");
      char e = s[pos++];
      switch (e) {
      case 'n': out.push_back('\n'); break;
      case 't': out.push_back('\t'); break;
      case 'r': out.push_back('\r'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'u': {
        if (pos + 4 > s.size() ||
            !std::all_of(s.begin() + pos, s.begin() + pos + 4,
                         [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); }))
          fail("bad \\u escape");
        unsigned code = static_cast<unsigned>(std::stoul(s.substr(pos, 4), nullptr, 16));
        pos += 4;
        if (code < 0x80) {
          out.push_back(static_cast<char>(code));
        } else if (code < 0x800) {
          out.push_back(static_cast<char>(0xC0 | (code >> 6)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        } else {
          out.push_back(static_cast<char>(0xE0 | (code >> 12)));
          out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
        }
        break;
      }
      default: out.push_back(e);
      }
    }
    if (pos >= s.size())
      fail("unterminated string");
    ++pos;
    return out;
  }
};

/// A whole number of the manifest (a dimension, an axis): finite, integral and within
/// +-2^53, so that the conversion is exact (a cast of another double is undefined behaviour).
int64_t integer(const Json &value, const char *what) {
  const double v = value.num();
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9007199254740992.0)
    throw std::runtime_error(std::string("hector manifest: ") + what + " is not an integer");
  return static_cast<int64_t>(v);
}

std::vector<TensorDecl> decls(const Json &list, const char *kindKey) {
  std::vector<TensorDecl> out;
  for (const Json &item : list.array()) {
    TensorDecl d;
    d.name = item.at("name").str();
    d.kind = item.at(kindKey).str();
    for (const Json &dim : item.at("dims").array())
      d.dims.push_back(integer(dim, "a dimension"));
    d.headAxis = integer(item.at("head_axis"), "head_axis");
    if (item.has("init"))
      d.init = item.at("init").str();
    d.saved = item.has("saved") && item.at("saved").boolean();
    d.used = !item.has("used") || item.at("used").boolean();
    d.internalOrder = item.has("order") && item.at("order").str() == "internal";
    out.push_back(std::move(d));
  }
  return out;
}

} // namespace

LayerManifest parseManifest(const std::string &ns, const std::string &json) {
  Json m = JsonReader(json).document();
  if (m.at("format").num() != 3)
    throw std::runtime_error("hector manifest of " + ns + ": format " +
                             std::to_string(m.at("format").num()) +
                             " is not this runtime's (3); rebuild the library with this hectorc");
  LayerManifest out;
  out.layer = m.at("layer").str();
  out.ns = ns;
  out.entry = m.has("entry") && m.at("entry").boolean();
  out.inputs = decls(m.at("inputs"), "space");
  out.weights = decls(m.at("weights"), "slicing");
  out.outputs = decls(m.at("outputs"), "space");
  if (m.has("backward"))
    out.backward = m.at("backward").str();
  if (m.has("forward"))
    out.forward = m.at("forward").str();
  if (m.has("inference"))
    out.inference = m.at("inference").str();
  if (m.has("inference_of"))
    out.inferenceOf = m.at("inference_of").str();
  if (m.has("variant"))
    out.variant = m.at("variant").str();
  if (m.has("variant_of"))
    out.variantOf = m.at("variant_of").str();
  if (m.has("variants"))
    for (const Json &item : m.at("variants").array())
      out.variants.push_back(item.str());
  if (m.has("rewrites"))
    for (const Json &item : m.at("rewrites").array())
      out.rewrites.push_back(item.str());
  if (m.has("cost")) {
    auto numbers = [](const Json &list) {
      std::vector<double> values;
      for (const Json &item : list.array())
        values.push_back(item.num());
      return values;
    };
    const Json &cost = m.at("cost");
    out.flops = numbers(cost.at("flops"));
    out.bytes = numbers(cost.at("bytes"));
    for (const Json &item : cost.at("intermediates").array())
      out.intermediates.push_back(numbers(item));
  }
  {
    auto numbers = [](const Json &list) {
      std::vector<double> values;
      for (const Json &item : list.array())
        values.push_back(item.num());
      return values;
    };
    const Json &memory = m.at("memory");
    for (const Json &point : memory.at("points").array())
      out.memoryPoints.push_back(numbers(point));
    out.memoryOutputs = numbers(memory.at("outputs"));
  }
  for (const Json &item : m.at("graph").array()) {
    const int k = graph_schema::graphStructureIndex(item.str().c_str());
    if (k < 0)
      throw std::runtime_error("hector manifest of " + ns + ": unknown graph structure '" +
                               item.str() + "'; rebuild the library with this hectorc");
    out.structures |= GraphStructureMask(1) << k;
  }
  out.json = json;
  return out;
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

std::vector<LayerManifest> loadLibrary(const std::string &path) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<LayerManifest>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved))
    throw std::runtime_error("hector::loadLibrary: " + path + " does not exist");
  std::string key(resolved);
  if (auto it = loaded.find(key); it != loaded.end())
    return it->second;

  if (std::string problem = checkLibraryFile(key); !problem.empty())
    throw std::runtime_error("hector::loadLibrary: " + problem);
  std::set<std::string> before = layerNamespaces();
  void *handle = dlopen(key.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *err = dlerror();
    throw std::runtime_error("hector::loadLibrary: cannot load " + path + ": " +
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
    throw std::runtime_error("hector::loadLibrary: " + path + " registers layers (operator "
                             "namespaces " + taken + ") that are already loaded in this process "
                             "from " + where + ": the same model built for the same target by "
                             "hectorc. PyTorch cannot replace loaded operators; load that file "
                             "instead, or this one in a new process");
  std::vector<LayerManifest> layers;
  for (const std::string &ns : after)
    if (!before.count(ns)) {
      owners[ns] = key;
      const LayerManifest &manifest = manifestOf(ns);
      // Backward layers, inference copies and variants are run by applyLayer only.
      if (manifest.forward.empty() && manifest.inferenceOf.empty() && manifest.variantOf.empty())
        layers.push_back(manifest);
    }
  if (layers.empty())
    throw std::runtime_error("hector::loadLibrary: " + path +
                             " registers no hector layer (not built by hectorc)");
  std::stable_sort(layers.begin(), layers.end(), [](const LayerManifest &a,
                                                    const LayerManifest &b) {
    return a.entry > b.entry;
  });
  loaded[key] = layers;
  return layers;
}

CompiledLayer::CompiledLayer(LayerManifest manifest, int64_t numRelations, int64_t numNtypes,
                             const at::TensorOptions &options)
    : manifest_(std::move(manifest)), numRelations_(numRelations), numNtypes_(numNtypes) {
  TORCH_CHECK_VALUE(numRelations >= 0 && numNtypes >= 1, "hector::CompiledLayer ",
                    manifest_.layer, ": numRelations must be >= 0 and numNtypes >= 1, got ",
                    numRelations, " and ", numNtypes);
  for (const TensorDecl &d : manifest_.weights) {
    std::vector<int64_t> shape;
    if (d.kind == "relation")
      shape.push_back(numRelations);
    else if (d.kind == "ntype")
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
}
