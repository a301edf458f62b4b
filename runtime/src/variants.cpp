//===- variants.cpp - Choosing a layer's optimisation variant per graph ---===//
//
// A library built by hectorc carries every optimisation variant of a layer (the layer as
// written, reordered, compacted, both) with the cost model's estimate of each: FLOPs and bytes
// moved as linear functions of N, E, U_src, U_dst, R, T. Whether compaction or a reordering pays
// depends on E/U, which only the graph knows, so the choice is made here, per call, from the
// graph's sizes: the lowest flops + balance x bytes, forward and backward when training.
// Also registers `hector::layer_variant` and `hector::layer_explain` for Python.
//
//===----------------------------------------------------------------------===//
#include "graph_ops.h"
#include "hector/graph_holder.h"
#include "hector/model.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace hector {
namespace {

/// FLOPs one byte moved is worth, per device: the CPU value is the compiler's default
/// (kDefaultBalance); a GPU streams memory faster relative to its FP32 throughput less than
/// it computes (an H200: ~60 TFLOP/s FP32 over ~4.8 TB/s).
double balanceFor(const at::Device &device) { return device.is_cuda() ? 12.0 : 4.0; }

/// N, E, U_src, U_dst, R, T, 1 of `graph`: the terms of the manifests' cost coefficients.
std::vector<double> termsOf(const Graph &graph) {
  return {static_cast<double>(graph.numNodes()),
          static_cast<double>(graph.numEdges()),
          static_cast<double>(graph.numUniqueSrc()),
          static_cast<double>(graph.numUniqueDst()),
          static_cast<double>(graph.numRelations()),
          static_cast<double>(graph.numNtypes()),
          1.0};
}

double evaluate(const std::vector<double> &coefficients, const std::vector<double> &terms) {
  double value = 0;
  for (size_t i = 0; i < coefficients.size() && i < terms.size(); ++i)
    value += coefficients[i] * terms[i];
  return value;
}

/// One variant's estimates at a graph's sizes.
struct Estimate {
  const LayerManifest *layer = nullptr;
  double train = 0, inference = 0, largest = 0;
  double flops = 0, bytes = 0;
};

/// The factor on the cost model's bytes (counted in float32 elements) for a call with elements
/// of `elementBytes`: 1 except in a 16-bit call of a layer in 16-bit storage, whose kernels move
/// its wide elements in 4 bytes and the others in 2 (LayerManifest::trafficElements). A layer
/// that computes 16-bit calls in float32 storage moves float32 elements (and converts).
double bytesFactor(const LayerManifest &m, const std::vector<double> &terms, int64_t elementBytes) {
  if (elementBytes != 2 || !m.sixteenBitStorage || m.trafficElements.empty())
    return 1.0;
  const double all = evaluate(m.trafficElements, terms);
  if (!(all > 0))
    return 1.0;
  const double wide = std::clamp(evaluate(m.wideTrafficElements, terms), 0.0, all);
  return (2.0 * (all - wide) + 4.0 * wide) / (4.0 * all);
}

double objective(const LayerManifest &m, const std::vector<double> &terms, double balance,
                 int64_t elementBytes) {
  return evaluate(m.flops, terms) +
         balance * bytesFactor(m, terms, elementBytes) * evaluate(m.bytes, terms);
}

/// The estimates of variant `m` for calls with elements of `elementBytes` (4: float32, whose
/// choice the others share except that a 16-bit call weighs bytes by bytesFactor).
Estimate estimate(const LayerManifest &m, const std::vector<double> &terms, double balance,
                  int64_t elementBytes = 4) {
  Estimate e;
  e.layer = &m;
  e.flops = evaluate(m.flops, terms);
  e.bytes = bytesFactor(m, terms, elementBytes) * evaluate(m.bytes, terms);
  const double forward = e.flops + balance * e.bytes;
  e.train = forward;
  if (!m.backward.empty())
    e.train += objective(manifestOf(m.backward), terms, balance, elementBytes);
  e.inference = m.inference.empty()
                    ? forward
                    : objective(manifestOf(m.inference), terms, balance, elementBytes);
  for (const std::vector<double> &value : m.intermediates)
    e.largest = std::max(e.largest, evaluate(value, terms));
  return e;
}

/// The layer as written and its variants, in the library's order (none first).
std::vector<const LayerManifest *> variantsOf(const LayerManifest &layer) {
  const LayerManifest &base = layer.variantOf.empty() ? layer : manifestOf(layer.variantOf);
  std::vector<const LayerManifest *> out = {&base};
  for (const std::string &ns : base.variants)
    out.push_back(&manifestOf(ns));
  return out;
}

std::string variantName(const LayerManifest &m) {
  return m.variant.empty() ? std::string("none") : m.variant;
}

const LayerManifest *cheapest(const std::vector<Estimate> &estimates, bool training) {
  const Estimate *best = &estimates.front();
  for (const Estimate &e : estimates) {
    double cost = training ? e.train : e.inference;
    double bestCost = training ? best->train : best->inference;
    if (cost < bestCost * (1 - 1e-9))
      best = &e;
  }
  return best->layer;
}

std::string format(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", value);
  return buffer;
}

/// Bytes as "1.23 GiB" / "45.6 MiB".
std::string formatBytes(double bytes) {
  char buffer[48];
  if (bytes >= 1024.0 * 1024 * 1024)
    std::snprintf(buffer, sizeof buffer, "%.3g GiB", bytes / (1024.0 * 1024 * 1024));
  else
    std::snprintf(buffer, sizeof buffer, "%.3g MiB", bytes / (1024.0 * 1024));
  return buffer;
}

/// The sizes of a call's elements: `element` bytes, and `wide` bytes for the tensors a 16-bit
/// call stores as float32 (LayerManifest::wideMemoryPoints).
struct ElementSizes {
  double element, wide;
};

/// The bytes of memory point `i` of a layer (or of its outputs, for i = -1).
double pointBytes(const LayerManifest &m, const std::vector<double> &terms, std::ptrdiff_t i,
                  ElementSizes sizes) {
  const std::vector<double> &all = i < 0 ? m.memoryOutputs : m.memoryPoints[i];
  double bytes = evaluate(all, terms) * sizes.element;
  const bool hasWide = i < 0 ? !m.wideMemoryOutputs.empty()
                             : static_cast<std::size_t>(i) < m.wideMemoryPoints.size();
  if (hasWide && sizes.wide != sizes.element)
    bytes += evaluate(i < 0 ? m.wideMemoryOutputs : m.wideMemoryPoints[i], terms) *
             (sizes.wide - sizes.element);
  return bytes;
}

/// The largest of a layer's memory points, in bytes.
double peakBytes(const LayerManifest &m, const std::vector<double> &terms, ElementSizes sizes) {
  double peak = 0;
  for (std::size_t i = 0; i < m.memoryPoints.size(); ++i)
    peak = std::max(peak, pointBytes(m, terms, static_cast<std::ptrdiff_t>(i), sizes));
  return peak;
}

/// The elements of the outputs a forward layer returns to its caller (not its saved ones): the
/// gradients a backward call receives have their sizes.
double returnedElements(const LayerManifest &m, const std::vector<double> &terms) {
  double elements = 0;
  for (const TensorDecl &out : m.outputs) {
    if (out.saved)
      continue;
    double row = 1;
    for (int64_t d : out.dims)
      row *= static_cast<double>(d);
    elements += row * (out.space == "node" ? terms[0] : terms[1]);
  }
  return elements;
}

} // namespace

double estimatePeakBytes(const LayerManifest &m, const Graph &graph, bool training,
                         int64_t elementBytes) {
  // A 16-bit call of a layer not in 16-bit storage computes on float32 conversions; one in
  // 16-bit storage holds its wide values in float32.
  if (elementBytes == 2 && !m.sixteenBitStorage)
    elementBytes = 4;
  const ElementSizes sizes{static_cast<double>(elementBytes),
                           elementBytes == 2 ? 4.0 : static_cast<double>(elementBytes)};
  const std::vector<double> terms = termsOf(graph);
  GraphStructureMask structures = m.structures;
  double bytes = 0;
  if (training && !m.backward.empty()) {
    const LayerManifest &bwd = manifestOf(m.backward);
    structures |= bwd.structures;
    // The forward's outputs (saved ones included) and the output gradients live through the
    // backward call.
    bytes = std::max(peakBytes(m, terms, sizes), pointBytes(m, terms, -1, sizes) +
                                                     returnedElements(m, terms) * sizes.element +
                                                     peakBytes(bwd, terms, sizes));
  } else {
    const LayerManifest &run = m.inference.empty() ? m : manifestOf(m.inference);
    structures |= run.structures;
    bytes = peakBytes(run, terms, sizes);
  }
  return bytes + static_cast<double>(graph.bytesToBuild(structures));
}

const LayerManifest &chooseVariant(const LayerManifest &layer, const Graph &graph, bool training,
                                   const std::string &request, int64_t elementBytes) {
  std::vector<const LayerManifest *> variants = variantsOf(layer);
  std::string wanted = request.empty() ? "auto" : request;
  if (wanted == "auto")
    if (const char *env = std::getenv("HECTOR_VARIANT"); env && *env)
      wanted = env;
  if (wanted != "auto") {
    std::string available;
    for (const LayerManifest *m : variants) {
      if (variantName(*m) == wanted)
        return *m;
      available += (available.empty() ? "" : ", ") + variantName(*m);
    }
    TORCH_CHECK_VALUE(false, layer.layer, ": no variant '", wanted, "' (this library has ",
                      available,
                      "; a variant whose rewrites change nothing for this model is not built; "
                      "request 'auto' to let the cost model choose)");
  }
  if (variants.size() == 1)
    return *variants.front();
  std::vector<double> terms = termsOf(graph);
  double balance = balanceFor(graph.device());
  // The variants whose estimated peak fits the memory budget; the cheapest of them runs.
  const double budget = static_cast<double>(memoryBudget(graph.device()));
  std::vector<Estimate> estimates;
  std::string peaks;
  for (const LayerManifest *m : variants) {
    if (m->flops.empty()) // a library without estimates: the layer as written
      return *variants.front();
    const double peak = estimatePeakBytes(*m, graph, training, elementBytes);
    peaks += (peaks.empty() ? "" : ", ") + variantName(*m) + " " + formatBytes(peak);
    if (peak <= budget)
      estimates.push_back(estimate(*m, terms, balance, elementBytes));
  }
  TORCH_CHECK_WITH(OutOfMemoryError, !estimates.empty(), layer.layer,
                   ": no variant fits the memory budget on ", graph.device().str(), " (",
                   training ? "training" : "inference", " on N=", graph.numNodes(),
                   " E=", graph.numEdges(), "): estimated peaks ", peaks, "; budget ",
                   formatBytes(budget),
                   ". Free memory, raise the budget with hector.set_memory_budget(bytes), or "
                   "force a variant with layer.variant");
  return *cheapest(estimates, training);
}

std::string explainVariants(const LayerManifest &layer, const Graph &graph) {
  std::vector<const LayerManifest *> variants = variantsOf(layer);
  std::vector<double> terms = termsOf(graph);
  double balance = balanceFor(graph.device());
  std::ostringstream os;
  os << "layer " << variants.front()->layer << ": N=" << graph.numNodes()
     << " E=" << graph.numEdges() << " R=" << graph.numRelations() << " T=" << graph.numNtypes()
     << " U_src=" << graph.numUniqueSrc() << " U_dst=" << graph.numUniqueDst()
     << " balance=" << balance << " flop/byte (" << (graph.device().is_cuda() ? "cuda" : "cpu")
     << ")\n";
  const double budget = static_cast<double>(memoryBudget(graph.device()));
  // The estimates of every variant, and those whose peak fits the budget, for float32 calls
  // ([0]) and 16-bit ones ([1]).
  std::vector<Estimate> estimates, trainFits[2], inferenceFits[2];
  for (const LayerManifest *m : variants) {
    if (m->flops.empty()) {
      os << "  " << variantName(*m) << ": no cost estimate in this library\n";
      continue;
    }
    Estimate e = estimate(*m, terms, balance);
    Estimate half = estimate(*m, terms, balance, 2);
    double base = estimates.empty() ? 0 : estimates.front().train;
    os << "  " << variantName(*m) << ": train=" << format(e.train)
       << " inference=" << format(e.inference) << " largest=" << format(e.largest);
    if (!estimates.empty() && e.train > 0)
      os << " (train " << format(base / e.train) << "x)";
    const double trainPeak[2] = {estimatePeakBytes(*m, graph, true, 4),
                                 estimatePeakBytes(*m, graph, true, 2)};
    const double inferencePeak[2] = {estimatePeakBytes(*m, graph, false, 4),
                                     estimatePeakBytes(*m, graph, false, 2)};
    os << "\n    forward: flops=" << format(e.flops) << " bytes=" << format(e.bytes) << "\n"
       << "    peak (float32): train " << formatBytes(trainPeak[0]) << ", inference "
       << formatBytes(inferencePeak[0]) << (trainPeak[0] > budget ? " (training over budget)" : "")
       << "\n"
       << "    16-bit calls (" << (m->sixteenBitStorage ? "16-bit" : "float32")
       << " storage): train=" << format(half.train) << " inference=" << format(half.inference)
       << ", peak train " << formatBytes(trainPeak[1]) << ", inference "
       << formatBytes(inferencePeak[1]) << "\n";
    for (int i = 0; i < 2; ++i) {
      if (trainPeak[i] <= budget)
        trainFits[i].push_back(i == 0 ? e : half);
      if (inferencePeak[i] <= budget)
        inferenceFits[i].push_back(i == 0 ? e : half);
    }
    for (const std::string &line : m->rewrites)
      os << "    " << line << "\n";
    estimates.push_back(e);
  }
  auto choice = [&](int i) {
    return "training " +
           (trainFits[i].empty() ? std::string("(none fits)")
                                 : variantName(*cheapest(trainFits[i], true))) +
           ", inference " +
           (inferenceFits[i].empty() ? std::string("(none fits)")
                                     : variantName(*cheapest(inferenceFits[i], false)));
  };
  os << "  memory budget: " << formatBytes(budget) << "\n";
  if (estimates.size() == variants.size() && !estimates.empty())
    os << "  choice of 16-bit calls: " << choice(1) << "\n"
       << "  choice: " << choice(0) << "\n";
  else
    os << "  choice: none (the layer as written)\n";
  return os.str();
}

namespace {

const LayerManifest &layerNamed(const std::string &ns) {
  try {
    return manifestOf(ns);
  } catch (const std::runtime_error &e) {
    TORCH_CHECK_VALUE(false, e.what());
  }
}

} // namespace

std::string layerVariantOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                           bool training, const std::string &request, int64_t elementBytes) {
  TORCH_CHECK_VALUE(elementBytes == 2 || elementBytes == 4 || elementBytes == 8,
                    "layer_variant: element_bytes must be 2, 4 or 8, not ", elementBytes);
  return variantName(
      chooseVariant(layerNamed(ns), graphOf(graph), training, request, elementBytes));
}

double layerMemoryOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                     bool training, const std::string &variant, int64_t elementBytes) {
  const LayerManifest &layer = layerNamed(ns);
  const Graph &g = graphOf(graph);
  // A forced variant's estimate even when over budget; "auto": the choice within it.
  const LayerManifest *chosen = nullptr;
  if (variant != "auto" && !variant.empty())
    chosen = &chooseVariant(layer, g, training, variant, elementBytes);
  else
    chosen = &chooseVariant(layer, g, training, "auto", elementBytes);
  return estimatePeakBytes(*chosen, g, training, elementBytes);
}

std::string layerExplainOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph) {
  return explainVariants(layerNamed(ns), graphOf(graph));
}

} // namespace hector
