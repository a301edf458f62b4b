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
#include "hector/model.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

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

double objective(const LayerManifest &m, const std::vector<double> &terms, double balance) {
  return evaluate(m.flops, terms) + balance * evaluate(m.bytes, terms);
}

Estimate estimate(const LayerManifest &m, const std::vector<double> &terms, double balance) {
  Estimate e;
  e.layer = &m;
  e.flops = evaluate(m.flops, terms);
  e.bytes = evaluate(m.bytes, terms);
  e.train = objective(m, terms, balance);
  if (!m.backward.empty())
    e.train += objective(manifestOf(m.backward), terms, balance);
  e.inference = m.inference.empty() ? objective(m, terms, balance)
                                    : objective(manifestOf(m.inference), terms, balance);
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

} // namespace

const LayerManifest &chooseVariant(const LayerManifest &layer, const Graph &graph, bool training,
                                   const std::string &request) {
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
  std::vector<Estimate> estimates;
  for (const LayerManifest *m : variants) {
    if (m->flops.empty()) // a library without estimates: the layer as written
      return *variants.front();
    estimates.push_back(estimate(*m, terms, balance));
  }
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
  std::vector<Estimate> estimates;
  for (const LayerManifest *m : variants) {
    if (m->flops.empty()) {
      os << "  " << variantName(*m) << ": no cost estimate in this library\n";
      continue;
    }
    Estimate e = estimate(*m, terms, balance);
    double base = estimates.empty() ? 0 : estimates.front().train;
    os << "  " << variantName(*m) << ": train=" << format(e.train)
       << " inference=" << format(e.inference) << " largest=" << format(e.largest);
    if (!estimates.empty() && e.train > 0)
      os << " (train " << format(base / e.train) << "x)";
    os << "\n    forward: flops=" << format(e.flops) << " bytes=" << format(e.bytes) << "\n";
    for (const std::string &line : m->rewrites)
      os << "    " << line << "\n";
    estimates.push_back(e);
  }
  if (estimates.size() == variants.size() && !estimates.empty())
    os << "  choice: training " << variantName(*cheapest(estimates, true)) << ", inference "
       << variantName(*cheapest(estimates, false)) << "\n";
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

std::string layerVariantOp(const std::string &ns, std::vector<at::Tensor> graphTensors,
                           std::vector<int64_t> graphSizes, bool training,
                           const std::string &request) {
  Graph graph = Graph::fromTensors(std::move(graphTensors), std::move(graphSizes));
  return variantName(chooseVariant(layerNamed(ns), graph, training, request));
}

std::string layerExplainOp(const std::string &ns, std::vector<at::Tensor> graphTensors,
                           std::vector<int64_t> graphSizes) {
  Graph graph = Graph::fromTensors(std::move(graphTensors), std::move(graphSizes));
  return explainVariants(layerNamed(ns), graph);
}

} // namespace
} // namespace hector

TORCH_LIBRARY_FRAGMENT(hector, m) {
  m.def("layer_variant(str layer, Tensor[] graph, int[] graph_sizes, bool training, "
        "str variant=\"auto\") -> str",
        &hector::layerVariantOp);
  m.def("layer_explain(str layer, Tensor[] graph, int[] graph_sizes) -> str",
        &hector::layerExplainOp);
}
