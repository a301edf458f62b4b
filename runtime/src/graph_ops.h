//===- graph_ops.h - The runtime operators that take a graph ----*- C++ -*-===//
//
// Implemented where their logic lives (autograd.cpp, variants.cpp) and registered in graph.cpp
// right after torch.classes.hector.Graph, whose type their schemas name: schemas are parsed at
// registration, and registration order across files is not defined.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/graph_holder.h"

#include <string>
#include <vector>

namespace hector {

/// hector::layer_apply: runs a compiled layer as one differentiable operation (applyLayer).
std::vector<at::Tensor> layerApplyOp(const std::string &ns,
                                     const c10::intrusive_ptr<GraphHolder> &graph,
                                     std::vector<at::Tensor> inputs,
                                     std::vector<at::Tensor> weights, const std::string &variant);
/// hector::layer_apply's kernel under torch.autocast on `Device` (CPU, CUDA): floating inputs
/// and weights other than float64 cast to the autocast dtype (bfloat16 or float16, as for
/// `linear`), the call made with autocast off.
template <c10::DeviceType Device>
std::vector<at::Tensor>
layerApplyAutocast(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                   std::vector<at::Tensor> inputs, std::vector<at::Tensor> weights,
                   const std::string &variant);
/// hector::layer_prepare: builds the graph structures the variant a call would run reads
/// (prepareLayer); returns that variant's name.
std::string layerPrepareOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                           bool training, const std::string &variant);
/// hector::layer_memory: the estimated peak bytes of a call (estimatePeakBytes) of the variant
/// `variant` ("auto": the one a call would run) with elements of `elementBytes`.
double layerMemoryOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                     bool training, const std::string &variant, int64_t elementBytes);
/// hector::layer_variant: the variant a call with elements of `elementBytes` would run
/// (chooseVariant).
std::string layerVariantOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph,
                           bool training, const std::string &request, int64_t elementBytes);
/// hector::layer_explain: the cost model's comparison of the variants (explainVariants).
std::string layerExplainOp(const std::string &ns, const c10::intrusive_ptr<GraphHolder> &graph);

} // namespace hector
