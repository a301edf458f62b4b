//===- hector/graph_holder.h - The TorchScript class of a Graph -*- C++ -*-===//
//
// torch.classes.hector.Graph, the object Python's hector.Graph wraps and the runtime's
// operators (hector::layer_apply, ...) take: a hector::Graph whose lazily built structures
// persist across calls.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "hector/graph.h"

#include <ATen/core/ivalue.h>

namespace hector {

struct GraphHolder : torch::CustomClassHolder {
  Graph graph;
  explicit GraphHolder(Graph g) : graph(std::move(g)) {}
};

/// The Graph of a torch.classes.hector.Graph object (TypeError for none).
inline const Graph &graphOf(const c10::intrusive_ptr<GraphHolder> &holder) {
  TORCH_CHECK_TYPE(holder, "hector: expected a hector.Graph");
  return holder->graph;
}

} // namespace hector
