//===- Manifest.cpp - The manifest of a layer -----------------------------===//
//
// The manifest the runtime loads a layer by (manifest.json, and the glue's kManifest): the ABI,
// the layer's inputs, weights and outputs, the layers it names (backward, inference, variants),
// the cost model's estimate, its kernels, the memory of a call and the graph structures it reads.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "hector/Dialect/LayerRelations.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <nlohmann/json.hpp>

using namespace mlir;

namespace hector {
namespace emit {

using Json = nlohmann::ordered_json;

std::string manifestText(const Json &manifest) {
  return manifest.dump(2, ' ', false, Json::error_handler_t::replace);
}

static Json shapeJson(RowShape shape) {
  return Json(std::vector<int64_t>(shape.dims.begin(), shape.dims.end()));
}

/// The layer's integer and float parameters.
static Json paramsJson(LayerOp layer) {
  Json params = Json::object();
  if (DictionaryAttr dict = layer.getParamsAttr())
    for (NamedAttribute attr : dict) {
      if (auto i = dyn_cast<IntegerAttr>(attr.getValue()))
        params[attr.getName().str()] = i.getInt();
      else if (auto f = dyn_cast<FloatAttr>(attr.getValue()))
        params[attr.getName().str()] = f.getValueAsDouble();
    }
  return params;
}

static Json inputsJson(const LayerPlan &plan) {
  Json inputs = Json::array();
  for (InputOp input : plan.inputs) {
    ValueType type = input.getResult().getType();
    Json decl = {{"name", input.getName().str()},
                 {"space", stringifySpace(type.getSpace()).str()},
                 {"dims", shapeJson(type.getShape())},
                 {"head_axis", type.getHeadAxis()}};
    if (!plan.forwardOf.empty())
      decl["used"] = !input.getResult().use_empty();
    if (isSavedInput(input))
      decl["order"] = "internal";
    inputs.push_back(decl);
  }
  return inputs;
}

static Json weightsJson(const LayerPlan &plan) {
  Json weights = Json::array();
  for (WeightOp weight : plan.weights) {
    WeightType type = weight.getResult().getType();
    weights.push_back({{"name", weight.getName().str()},
                       {"slicing", stringifySlicing(type.getSlicing()).str()},
                       {"dims", shapeJson(type.getShape())},
                       {"head_axis", type.getHeadAxis()},
                       {"init", stringifyWeightInit(weight.getInit()).str()}});
  }
  return weights;
}

static Json outputsJson(const LayerPlan &plan) {
  Json outputs = Json::array();
  for (OutputOp output : plan.outputs) {
    if (auto weight = dyn_cast<WeightType>(output.getValue().getType())) {
      outputs.push_back({{"name", output.getName().str()},
                         {"space", "weight"},
                         {"slicing", stringifySlicing(weight.getSlicing()).str()},
                         {"dims", shapeJson(weight.getShape())},
                         {"head_axis", weight.getHeadAxis()}});
      continue;
    }
    auto type = cast<ValueType>(output.getValue().getType());
    // Saved activations keep their own rows (compaction saves unique-pair rows).
    Space space = type.getSpace() == Space::Node ? Space::Node : Space::Edge;
    if (isSavedOutput(output))
      space = type.getSpace() == Space::Src || type.getSpace() == Space::Dst ? Space::Edge
                                                                             : type.getSpace();
    Json decl = {{"name", output.getName().str()},
                 {"space", stringifySpace(space).str()},
                 {"dims", shapeJson(type.getShape())},
                 {"head_axis", type.getHeadAxis()}};
    if (isSavedOutput(output)) {
      decl["saved"] = true;
      decl["order"] = "internal";
    }
    outputs.push_back(decl);
  }
  return outputs;
}

/// Adds the namespaces of the layers `plan`'s layer names to `m`.
static void addRelatedLayers(const LayerPlan &plan, Json &m) {
  // Training: the forward layer names its backward layer's namespace and vice versa.
  if (!plan.backwardOf.empty())
    m["backward"] = plan.backwardOf;
  if (!plan.forwardOf.empty())
    m["forward"] = plan.forwardOf;
  if (!plan.inference.empty())
    m["inference"] = plan.inference;
  if (!plan.inferenceOf.empty())
    m["inference_of"] = plan.inferenceOf;
  // Optimisation variants.
  if (!plan.variant.empty())
    m["variant"] = plan.variant;
  if (!plan.variantOf.empty())
    m["variant_of"] = plan.variantOf;
  if (!plan.variant.empty() && plan.variantOf.empty())
    m["variants"] = plan.variants;
}

/// The cost model's estimate (the layer's `hector.cost`), which the runtime chooses among
/// variants by: coefficients of N, E, U_src, U_dst, R, T, 1.
static Json costJson(DictionaryAttr cost) {
  auto coefficients = [](Attribute attr) {
    std::vector<double> values;
    if (auto array = dyn_cast_or_null<DenseF64ArrayAttr>(attr))
      values.assign(array.asArrayRef().begin(), array.asArrayRef().end());
    return values;
  };
  Json c;
  c["terms"] = {"N", "E", "U_src", "U_dst", "R", "T", "1"};
  c["flops"] = coefficients(cost.get("flops"));
  c["bytes"] = coefficients(cost.get("bytes"));
  c["intermediates"] = Json::array();
  if (auto list = dyn_cast_or_null<ArrayAttr>(cost.get("intermediates")))
    for (Attribute item : list)
      c["intermediates"].push_back(coefficients(item));
  return c;
}

/// A kernel: its name, the template it instantiates and that instance's configuration.
static Json kernelJson(const LayerPlan &plan, const Kernel &kernel) {
  Json k;
  k["name"] = kernel.name;
  if (kernel.kind == KernelKind::Glue) {
    k["template"] = "glue";
    k["op"] = kernel.op->getName().getStringRef().str();
  } else if (kernel.kind == KernelKind::RowSum) {
    k["template"] = "traversal";
    k["kind"] = "segment_sum";
    k["N"] = rowSumConfig(cast<ReduceOp>(kernel.op))->width;
  } else if (kernel.kind == KernelKind::WeightGrad) {
    WeightGradConfig c = *weightGradConfig(kernel.op, plan);
    k["template"] = "weight_grad";
    k["op"] = kernel.op->getName().getStringRef().str();
    k["heads"] = c.heads;
    k["K"] = c.k;
    k["N"] = c.n;
  } else if (auto traversal = dyn_cast<TraversalOp>(kernel.op)) {
    k["template"] = "traversal";
    k["kind"] = stringifyTraversalKind(traversal.getKind()).str();
    k["passes"] = passesOf(traversal);
    k["results"] = traversal.getNumResults();
  } else {
    GemmConfig c = configOf(kernel);
    k["template"] = "gemm";
    if (auto gemm = dyn_cast<GemmOp>(kernel.op)) {
      k["segment"] = stringifySlicing(gemm.getSegment()).str();
      k["gather"] = stringifyGemmGather(gemm.getGather()).str();
      k["scatter"] = stringifyGemmScatter(gemm.getScatter()).str();
      k["transpose_b"] = gemm.getTransposeB();
    } else {
      k["operands"] = "weights";
    }
    k["heads"] = c.heads;
    k["K"] = c.k;
    k["N"] = c.n;
  }
  return k;
}

Json manifestOf(LayerPlan &plan, bool cuda) {
  Json m;
  m["format"] = kLibraryAbi; // the runtime ABI (see kLibraryAbi)
  m["layer"] = plan.layer.getSymName().str();
  m["entry"] = plan.entry;
  m["params"] = paramsJson(plan.layer);
  m["inputs"] = inputsJson(plan);
  m["weights"] = weightsJson(plan);
  m["outputs"] = outputsJson(plan);
  addRelatedLayers(plan, m);
  if (auto lines = plan.layer->getAttrOfType<ArrayAttr>(kRewritesAttrName)) {
    m["rewrites"] = Json::array();
    for (Attribute line : lines)
      if (auto text = dyn_cast<StringAttr>(line))
        m["rewrites"].push_back(text.getValue().str());
  }
  if (auto cost = plan.layer->getAttrOfType<DictionaryAttr>(kCostAttrName))
    m["cost"] = costJson(cost);
  m["kernels"] = Json::array();
  for (const Kernel &kernel : plan.kernels)
    m["kernels"].push_back(kernelJson(plan, kernel));
  m["memory"] = {{"terms", {"N", "E", "U_src", "U_dst", "R", "T", "1"}},
                 {"points", plan.memory},
                 {"outputs", plan.outputElements}};
  m["graph"] = Json::array();
  for (int k = 0; k < graph_schema::kNumGraphStructures; ++k)
    if (plan.structures >> k & 1)
      m["graph"].push_back(graph_schema::graphStructures()[k].name);
  m["cuda"] = cuda;
  return m;
}

} // namespace emit
} // namespace hector
