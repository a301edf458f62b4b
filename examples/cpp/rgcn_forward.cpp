//===- rgcn_forward.cpp - A compiled RGCN layer used from C++ ---*- C++ -*-===//
//
// Loads a library built from examples/rgcn.hector, builds a small graph with the awkward cases
// (an isolated node, a node without incoming edges, a relation without edges, a self-loop, a
// duplicate edge), runs the compiled layer in float64 and compares it, and its gradients (the
// compiled backward through autograd), with a plain ATen reference written here. Prints the
// parameter names and the largest differences; exits 1 when one is above 1e-10.
//
//   rgcn_forward rgcn.so
//
//===----------------------------------------------------------------------===//
#include "hector/graph.h"
#include "hector/model.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: rgcn_forward MODEL.so\n";
    return 2;
  }
  try {
    std::vector<hector::LayerManifest> layers = hector::loadLibrary(argv[1]);
    const hector::LayerManifest &rgcn = layers.front();
    const int64_t numNodes = 12, numRelations = 4;
    // (src, dst, relation); node 11 is isolated, node 0 receives nothing, relation 3 is empty.
    std::vector<int64_t> src = {1, 2, 3, 4, 5, 5, 6, 7, 8, 9, 10, 2, 4, 4};
    std::vector<int64_t> dst = {2, 3, 4, 5, 6, 6, 7, 8, 9, 10, 1, 2, 9, 1};
    std::vector<int64_t> rel = {0, 1, 2, 0, 1, 1, 2, 0, 1, 2, 0, 0, 1, 2};
    auto tensor = [](const std::vector<int64_t> &v) {
      return at::tensor(v, at::TensorOptions().dtype(at::kLong));
    };
    hector::GraphOptions options;
    options.numNodes = numNodes;
    options.numRelations = numRelations;
    hector::Graph graph = hector::Graph::build(tensor(src), tensor(dst), tensor(rel), options);

    at::manual_seed(0);
    auto f64 = at::TensorOptions().dtype(at::kDouble);
    hector::CompiledLayer layer(rgcn, numRelations, 1, f64);
    for (const auto &p : layer.named_parameters())
      std::cout << "parameter " << p.key() << " " << p.value().sizes() << "\n";
    int64_t in = rgcn.inputs[0].dims[0];
    at::Tensor x = at::randn({numNodes, in}, f64);
    // 1 / |N_r(i)|, counted here.
    std::map<std::pair<int64_t, int64_t>, int> count;
    for (size_t e = 0; e < src.size(); ++e)
      ++count[{dst[e], rel[e]}];
    std::vector<double> normValues;
    for (size_t e = 0; e < src.size(); ++e)
      normValues.push_back(1.0 / count[{dst[e], rel[e]}]);
    at::Tensor norm = at::tensor(normValues, f64);

    at::Tensor out = layer.forward(graph, {x, norm}).at(0);

    at::Tensor s = tensor(src), d = tensor(dst), r = tensor(rel);
    auto reference = [&](const at::Tensor &x, const std::vector<at::Tensor> &w) {
      // W [R, in, out], root [in, out], bias [out]
      at::Tensor msg = at::bmm(x.index_select(0, s).unsqueeze(1), w[0].index_select(0, r))
                           .squeeze(1) * norm.unsqueeze(1);
      return at::zeros({numNodes, w[1].size(1)}, f64).index_add(0, d, msg) + x.mm(w[1]) + w[2];
    };
    std::vector<at::Tensor> w = layer.weights();
    at::Tensor expected = reference(x, w);
    double err = (out - expected).abs().max().item<double>();
    std::cout << "max |compiled - reference| = " << err << "\n";
    // Every optimisation variant the library carries gives the same result.
    std::vector<std::string> variants = {"none"};
    for (const std::string &ns : rgcn.variants)
      variants.push_back(hector::manifestOf(ns).variant);
    for (const std::string &v : variants) {
      layer.variant = v;
      double e = (layer.forward(graph, {x, norm}).at(0) - expected).abs().max().item<double>();
      std::cout << "variant " << v << ": max |compiled - reference| = " << e << "\n";
      err = std::max(err, e);
    }
    layer.variant = "auto";

    // Training from C++: the layer's call is an autograd node whose backward runs the compiled
    // backward layer; its gradients equal autograd's through the reference.
    at::Tensor up = at::randn_like(out);
    at::Tensor xg = x.clone().requires_grad_(true);
    (layer.forward(graph, {xg, norm}).at(0) * up).sum().backward();
    at::Tensor xr = x.clone().requires_grad_(true);
    std::vector<at::Tensor> wr;
    for (const at::Tensor &t : w)
      wr.push_back(t.detach().clone().requires_grad_(true));
    (reference(xr, wr) * up).sum().backward();
    double gradErr = (xg.grad() - xr.grad()).abs().max().item<double>();
    for (size_t i = 0; i < w.size(); ++i)
      gradErr = std::max(gradErr, (w[i].grad() - wr[i].grad()).abs().max().item<double>());
    std::cout << "max |compiled - reference| gradient = " << gradErr << "\n";
    return err <= 1e-10 && gradErr <= 1e-10 ? 0 : 1;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
