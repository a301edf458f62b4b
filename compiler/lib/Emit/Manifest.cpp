//===- Manifest.cpp - The manifest of a layer -----------------------------===//
//
// The manifest the runtime loads a layer by (manifest.json, and the glue's kManifest): the ABI,
// the layer's inputs, weights and outputs, the layers it names (backward, inference, variants),
// the cost model's estimate, its kernels, the memory of a call and the graph structures it reads.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "hector/Dialect/LayerRelations.h"
#include "hector/emit/manifest_json.h"

#include "mlir/IR/BuiltinAttributes.h"


using namespace mlir;

namespace hector {
namespace emit {

using Json = manifest_json::Json;

static std::vector<int64_t> dimsOf(RowShape shape) {
  return std::vector<int64_t>(shape.dims.begin(), shape.dims.end());
}

/// The layer's integer and float parameters.
static std::vector<LayerParam> paramsOf(LayerOp layer) {
  std::vector<LayerParam> params;
  if (DictionaryAttr dict = layer.getParamsAttr())
    for (NamedAttribute attr : dict) {
      LayerParam p;
      p.name = attr.getName().str();
      if (auto i = dyn_cast<IntegerAttr>(attr.getValue())) {
        p.intValue = i.getInt();
        p.value = static_cast<double>(p.intValue);
      } else if (auto f = dyn_cast<FloatAttr>(attr.getValue())) {
        p.integer = false;
        p.value = f.getValueAsDouble();
      } else {
        continue;
      }
      params.push_back(std::move(p));
    }
  return params;
}

static std::vector<TensorDecl> inputsOf(const LayerPlan &plan) {
  std::vector<TensorDecl> inputs;
  for (InputOp input : plan.inputs) {
    ValueType type = input.getResult().getType();
    TensorDecl d;
    d.name = input.getName().str();
    d.space = stringifySpace(type.getSpace()).str();
    d.dims = dimsOf(type.getShape());
    d.headAxis = type.getHeadAxis();
    d.used = !input.getResult().use_empty();
    d.internalOrder = isSavedInput(input);
    inputs.push_back(std::move(d));
  }
  return inputs;
}

static std::vector<TensorDecl> weightsOf(const LayerPlan &plan) {
  std::vector<TensorDecl> weights;
  for (WeightOp weight : plan.weights) {
    WeightType type = weight.getResult().getType();
    TensorDecl d;
    d.name = weight.getName().str();
    d.slicing = stringifySlicing(type.getSlicing()).str();
    d.dims = dimsOf(type.getShape());
    d.headAxis = type.getHeadAxis();
    d.init = stringifyWeightInit(weight.getInit()).str();
    weights.push_back(std::move(d));
  }
  return weights;
}

static std::vector<TensorDecl> outputsOf(const LayerPlan &plan) {
  std::vector<TensorDecl> outputs;
  for (OutputOp output : plan.outputs) {
    TensorDecl d;
    d.name = output.getName().str();
    if (auto weight = dyn_cast<WeightType>(output.getValue().getType())) {
      d.space = "weight";
      d.slicing = stringifySlicing(weight.getSlicing()).str();
      d.dims = dimsOf(weight.getShape());
      d.headAxis = weight.getHeadAxis();
      outputs.push_back(std::move(d));
      continue;
    }
    auto type = cast<ValueType>(output.getValue().getType());
    // Saved activations keep their own rows (compaction saves unique-pair rows).
    Space space = type.getSpace() == Space::Node ? Space::Node : Space::Edge;
    if (isSavedOutput(output))
      space = type.getSpace() == Space::Src || type.getSpace() == Space::Dst ? Space::Edge
                                                                             : type.getSpace();
    d.space = stringifySpace(space).str();
    d.dims = dimsOf(type.getShape());
    d.headAxis = type.getHeadAxis();
    d.saved = d.internalOrder = isSavedOutput(output);
    outputs.push_back(std::move(d));
  }
  return outputs;
}

/// The namespaces of the layers `plan`'s layer names.
static void addRelatedLayers(const LayerPlan &plan, LayerManifest &m) {
  // Training: the forward layer names its backward layer's namespace and vice versa.
  m.backward = plan.backwardOf;
  m.forward = plan.forwardOf;
  m.inference = plan.inference;
  m.inferenceOf = plan.inferenceOf;
  // Optimisation variants.
  m.variant = plan.variant;
  m.variantOf = plan.variantOf;
  m.variants = plan.variants;
}

/// The cost model's estimate (the layer's `hector.cost`), which the runtime chooses among
/// variants by: coefficients of N, E, U_src, U_dst, R, T, 1.
static void addCost(DictionaryAttr cost, LayerManifest &m) {
  auto coefficients = [](Attribute attr) {
    std::vector<double> values;
    if (auto array = dyn_cast_or_null<DenseF64ArrayAttr>(attr))
      values.assign(array.asArrayRef().begin(), array.asArrayRef().end());
    return values;
  };
  m.hasCost = true;
  m.flops = coefficients(cost.get("flops"));
  m.bytes = coefficients(cost.get("bytes"));
  if (auto list = dyn_cast_or_null<ArrayAttr>(cost.get("intermediates")))
    for (Attribute item : list)
      m.intermediates.push_back(coefficients(item));
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
    k["passes"] = recordedPassesOf(traversal);
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

std::string manifestOf(LayerPlan &plan, bool cuda) {
  LayerManifest m;
  m.layer = plan.layer.getSymName().str();
  m.entry = plan.entry;
  m.params = paramsOf(plan.layer);
  m.inputs = inputsOf(plan);
  m.weights = weightsOf(plan);
  m.outputs = outputsOf(plan);
  addRelatedLayers(plan, m);
  if (auto lines = plan.layer->getAttrOfType<ArrayAttr>(kRewritesAttrName))
    for (Attribute line : lines)
      if (auto text = dyn_cast<StringAttr>(line))
        m.rewrites.push_back(text.getValue().str());
  if (auto cost = plan.layer->getAttrOfType<DictionaryAttr>(kCostAttrName))
    addCost(cost, m);
  for (const std::array<double, kNumCostTerms> &point : plan.memory)
    m.memoryPoints.emplace_back(point.begin(), point.end());
  m.memoryOutputs.assign(plan.outputElements.begin(), plan.outputElements.end());
  for (const std::array<double, kNumCostTerms> &point : plan.wideMemory)
    m.wideMemoryPoints.emplace_back(point.begin(), point.end());
  m.wideMemoryOutputs.assign(plan.wideOutputElements.begin(), plan.wideOutputElements.end());
  m.trafficElements.assign(plan.traffic.begin(), plan.traffic.end());
  m.wideTrafficElements.assign(plan.wideTraffic.begin(), plan.wideTraffic.end());
  m.structures = plan.structures;
  m.cuda = cuda;
  m.sixteenBitStorage = true; // every layer (older libraries may lack it)
  Json kernels = Json::array();
  for (const Kernel &kernel : plan.kernels)
    kernels.push_back(kernelJson(plan, kernel));
  return manifest_json::manifestText(manifest_json::manifestToJson(m, &kernels));
}

} // namespace emit
} // namespace hector
