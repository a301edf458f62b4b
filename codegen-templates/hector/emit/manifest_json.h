//===- hector/emit/manifest_json.h - A manifest as JSON, both ways --------===//
//
// The one writer and the one reader of a LayerManifest (manifest_schema.h) as JSON: hectorc
// writes the manifest.json of a package and the glue's `manifest` operator with
// manifestToJson; the runtime reads the operator's text with manifestFromJson and hands its
// own reading to Python (hector::layer_manifest), so no other code knows the format. Needs
// nlohmann/json (the compiler and the runtime build with it; emitted code never includes it).
//
// The reader checks every field it reads (types, integral dimensions, known graph structures)
// and reports a problem as std::runtime_error("hector manifest of NS: ..."), whatever the text:
// a mutated manifest is refused, never a crash (test/runtime/manifest_fuzz.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_EMIT_MANIFEST_JSON_H
#define HECTOR_EMIT_MANIFEST_JSON_H

#include "hector/emit/manifest_schema.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace hector {
namespace manifest_json {

using Json = nlohmann::ordered_json;

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

inline Json inputJson(const TensorDecl &d, bool backward) {
  Json j = {{"name", d.name}, {"space", d.space}, {"dims", d.dims}, {"head_axis", d.headAxis}};
  if (backward)
    j["used"] = d.used;
  if (d.internalOrder)
    j["order"] = "internal";
  return j;
}

inline Json weightJson(const TensorDecl &d) {
  return {{"name", d.name},
          {"slicing", d.slicing},
          {"dims", d.dims},
          {"head_axis", d.headAxis},
          {"init", d.init}};
}

inline Json outputJson(const TensorDecl &d) {
  if (d.space == "weight")
    return {{"name", d.name},
            {"space", d.space},
            {"slicing", d.slicing},
            {"dims", d.dims},
            {"head_axis", d.headAxis}};
  Json j = {{"name", d.name}, {"space", d.space}, {"dims", d.dims}, {"head_axis", d.headAxis}};
  if (d.saved)
    j["saved"] = true;
  if (d.internalOrder)
    j["order"] = "internal";
  return j;
}

/// The manifest as JSON, in the order of manifest.json. `kernels` (what the emitter knows of
/// the layer's kernels, for people and tools; the runtime does not read it) is written when
/// given.
inline Json manifestToJson(const LayerManifest &m, const Json *kernels = nullptr) {
  Json j;
  j["format"] = kLibraryAbi;
  j["layer"] = m.layer;
  j["entry"] = m.entry;
  Json params = Json::object();
  for (const LayerParam &p : m.params)
    params[p.name] = p.integer ? Json(p.intValue) : Json(p.value);
  j["params"] = params;
  const bool backward = !m.forward.empty();
  j["inputs"] = Json::array();
  for (const TensorDecl &d : m.inputs)
    j["inputs"].push_back(inputJson(d, backward));
  j["weights"] = Json::array();
  for (const TensorDecl &d : m.weights)
    j["weights"].push_back(weightJson(d));
  j["outputs"] = Json::array();
  for (const TensorDecl &d : m.outputs)
    j["outputs"].push_back(outputJson(d));
  auto optional = [&](const char *key, const std::string &value) {
    if (!value.empty())
      j[key] = value;
  };
  optional("backward", m.backward);
  optional("forward", m.forward);
  optional("inference", m.inference);
  optional("inference_of", m.inferenceOf);
  optional("variant", m.variant);
  optional("variant_of", m.variantOf);
  if (!m.variant.empty() && m.variantOf.empty())
    j["variants"] = m.variants;
  j["rewrites"] = m.rewrites;
  std::vector<std::string> terms(costTerms(), costTerms() + kNumCostTerms);
  if (m.hasCost)
    j["cost"] = {{"terms", terms},
                 {"flops", m.flops},
                 {"bytes", m.bytes},
                 {"intermediates", m.intermediates}};
  if (kernels)
    j["kernels"] = *kernels;
  j["memory"] = {{"terms", terms},
                 {"points", m.memoryPoints},
                 {"outputs", m.memoryOutputs},
                 {"wide_points", m.wideMemoryPoints},
                 {"wide_outputs", m.wideMemoryOutputs}};
  j["traffic"] = {
      {"terms", terms}, {"elements", m.trafficElements}, {"wide", m.wideTrafficElements}};
  j["graph"] = Json::array();
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    if (m.structures >> k & 1)
      j["graph"].push_back(graph_schema::graphStructures()[k].name);
  j["cuda"] = m.cuda;
  j["sixteen_bit_storage"] = m.sixteenBitStorage;
  return j;
}

/// The text of manifest.json and of the glue's `manifest` operator.
inline std::string manifestText(const Json &manifest) {
  return manifest.dump(2, ' ', false, Json::error_handler_t::replace);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// A JSON value in an error message (invalid UTF-8 replaced, not thrown on).
inline std::string quoted(const Json &v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

/// Reads fields of one JSON object, naming the manifest and the field in every error.
class FieldReader {
public:
  FieldReader(const Json &object, const std::string &where) : j(object), where(where) {
    if (!j.is_object())
      fail("", "is not an object");
  }

  [[noreturn]] void fail(const std::string &key, const std::string &what) const {
    throw std::runtime_error("hector manifest of " + where + ": " +
                             (key.empty() ? std::string("the manifest") : "'" + key + "'") + " " +
                             what);
  }
  bool has(const char *key) const { return j.contains(key); }
  const Json &at(const char *key) const {
    auto it = j.find(key);
    if (it == j.end())
      fail(key, "is missing");
    return *it;
  }
  std::string str(const char *key, const char *otherwise = nullptr) const {
    if (otherwise && !has(key))
      return otherwise;
    const Json &v = at(key);
    if (!v.is_string())
      fail(key, "is not a string");
    return v.get<std::string>();
  }
  bool boolean(const char *key, bool otherwise) const {
    if (!has(key))
      return otherwise;
    const Json &v = at(key);
    if (!v.is_boolean())
      fail(key, "is not true or false");
    return v.get<bool>();
  }
  /// An integer within +-2^53 (written by the emitter as an integer).
  int64_t integer(const Json &v, const char *key) const {
    constexpr int64_t kExact = int64_t(1) << 53;
    if (v.is_number_unsigned() && v.get<uint64_t>() <= uint64_t(kExact))
      return static_cast<int64_t>(v.get<uint64_t>());
    if (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() >= -kExact &&
        v.get<int64_t>() <= kExact)
      return v.get<int64_t>();
    fail(key, "holds something other than an integer");
  }
  double number(const Json &v, const char *key) const {
    if (!v.is_number())
      fail(key, "holds something other than a number");
    const double d = v.get<double>();
    if (!std::isfinite(d))
      fail(key, "holds a non-finite number");
    return d;
  }
  const Json &array(const char *key) const {
    const Json &v = at(key);
    if (!v.is_array())
      fail(key, "is not an array");
    return v;
  }
  std::vector<std::string> strings(const char *key) const {
    std::vector<std::string> out;
    if (!has(key))
      return out;
    for (const Json &v : array(key)) {
      if (!v.is_string())
        fail(key, "holds something other than a string");
      out.push_back(v.get<std::string>());
    }
    return out;
  }
  std::vector<double> numbers(const char *key) const {
    std::vector<double> out;
    for (const Json &v : array(key))
      out.push_back(number(v, key));
    return out;
  }
  std::vector<std::vector<double>> rows(const char *key) const {
    std::vector<std::vector<double>> out;
    for (const Json &row : array(key)) {
      if (!row.is_array())
        fail(key, "holds something other than an array");
      out.emplace_back();
      for (const Json &v : row)
        out.back().push_back(number(v, key));
    }
    return out;
  }

private:
  const Json &j;
  std::string where;
};

/// One input, weight or output. `list` is "inputs", "weights" or "outputs".
inline TensorDecl declFromJson(const Json &item, const std::string &where, const char *list) {
  FieldReader f(item, where + " (an entry of '" + list + "')");
  TensorDecl d;
  d.name = f.str("name");
  const bool weight = std::string(list) == "weights";
  if (!weight)
    d.space = f.str("space");
  if (weight || d.space == "weight")
    d.slicing = f.str("slicing");
  for (const Json &dim : f.array("dims")) {
    d.dims.push_back(f.integer(dim, "dims"));
    if (d.dims.back() < 0)
      f.fail("dims", "holds a negative dimension");
  }
  d.headAxis = f.integer(f.at("head_axis"), "head_axis");
  if (d.headAxis < -1 || d.headAxis >= static_cast<int64_t>(d.dims.size()))
    f.fail("head_axis", "is not an axis of 'dims' or -1");
  if (weight)
    d.init = f.str("init");
  d.saved = f.boolean("saved", false);
  d.used = f.boolean("used", true);
  const std::string order = f.str("order", "user");
  if (order != "user" && order != "internal")
    f.fail("order", "is neither 'user' nor 'internal'");
  d.internalOrder = order == "internal";
  return d;
}

/// Reads the manifest `text` of the layer registered in operator namespace `ns`; throws
/// std::runtime_error naming what is wrong (malformed JSON, a missing or mistyped field,
/// another format, an unknown graph structure).
inline LayerManifest manifestFromJson(const std::string &ns, const std::string &text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    throw std::runtime_error("hector manifest of " + ns + ": not valid JSON");
  FieldReader f(j, ns);
  const Json &format = f.at("format");
  if (!format.is_number_integer() || format.get<int64_t>() != kLibraryAbi)
    throw std::runtime_error("hector manifest of " + ns + ": format " + quoted(format) +
                             " is not this runtime's (" + std::to_string(kLibraryAbi) +
                             "); rebuild the library with this hectorc");
  LayerManifest m;
  m.ns = ns;
  m.layer = f.str("layer");
  m.entry = f.boolean("entry", false);
  if (f.has("params")) {
    FieldReader params(f.at("params"), ns + " ('params')");
    for (const auto &item : f.at("params").items()) {
      LayerParam p;
      p.name = item.key();
      p.integer = item.value().is_number_integer();
      if (p.integer)
        p.value = static_cast<double>(p.intValue = params.integer(item.value(), "params"));
      else
        p.value = params.number(item.value(), "params");
      m.params.push_back(std::move(p));
    }
  }
  for (const Json &item : f.array("inputs"))
    m.inputs.push_back(declFromJson(item, ns, "inputs"));
  for (const Json &item : f.array("weights"))
    m.weights.push_back(declFromJson(item, ns, "weights"));
  for (const Json &item : f.array("outputs"))
    m.outputs.push_back(declFromJson(item, ns, "outputs"));
  m.backward = f.str("backward", "");
  m.forward = f.str("forward", "");
  m.inference = f.str("inference", "");
  m.inferenceOf = f.str("inference_of", "");
  m.variant = f.str("variant", "");
  m.variantOf = f.str("variant_of", "");
  m.variants = f.strings("variants");
  m.rewrites = f.strings("rewrites");
  if ((m.hasCost = f.has("cost"))) {
    FieldReader cost(f.at("cost"), ns + " ('cost')");
    m.flops = cost.numbers("flops");
    m.bytes = cost.numbers("bytes");
    m.intermediates = cost.rows("intermediates");
  }
  FieldReader memory(f.at("memory"), ns + " ('memory')");
  m.memoryPoints = memory.rows("points");
  m.memoryOutputs = memory.numbers("outputs");
  // A library built before wide values stored every tensor of a 16-bit call in one size.
  if (memory.has("wide_points")) {
    m.wideMemoryPoints = memory.rows("wide_points");
    m.wideMemoryOutputs = memory.numbers("wide_outputs");
    if (m.wideMemoryPoints.size() != m.memoryPoints.size())
      memory.fail("wide_points", "must have as many points as 'points'");
  }
  // A library built before the traffic was recorded: its 16-bit calls are costed as float32.
  if (f.has("traffic")) {
    FieldReader traffic(f.at("traffic"), ns + " ('traffic')");
    m.trafficElements = traffic.numbers("elements");
    m.wideTrafficElements = traffic.numbers("wide");
  }
  for (const Json &item : f.array("graph")) {
    const int k =
        item.is_string() ? graph_schema::graphStructureIndex(item.get<std::string>().c_str()) : -1;
    if (k < 0)
      f.fail("graph", "names an unknown graph structure " + quoted(item) +
                          "; rebuild the library with this hectorc");
    m.structures |= graph_schema::GraphStructureMask(1) << k;
  }
  m.cuda = f.boolean("cuda", false);
  m.sixteenBitStorage = f.boolean("sixteen_bit_storage", false);
  return m;
}

} // namespace manifest_json
} // namespace hector

#endif // HECTOR_EMIT_MANIFEST_JSON_H
