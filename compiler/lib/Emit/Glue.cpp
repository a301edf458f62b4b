//===- Glue.cpp - The host glue of a layer --------------------------------===//
//
// Prints the LibTorch glue of every layer (model.cpp): the manifest and the graph structures the
// layer reads; run<T, I>, which permutes edge inputs to the graph's internal order, calls the
// kernels (the CPU ones, or the CUDA launchers for CUDA tensors), releases each intermediate
// after its last reader and permutes edge outputs back; forward, which validates the arguments
// and dispatches on the element and index types; and the registration of the layers' operators.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "hector/Emit/CppString.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

namespace hector {
namespace emit {

/// For a reduction that also drops trailing dimensions: prints `t<index>_pre`, the rows of
/// `value` with the dimensions beyond its first `width` elements summed, and returns its name.
static std::string printPresum(LayerPlan &plan, size_t index, Value value, int64_t width,
                               llvm::raw_ostream &os) {
  std::string pre = "t" + std::to_string(index) + "_pre";
  os << "  const at::Tensor " << pre << " = ::hector::emit::rowView(" << plan.tensors.lookup(value)
     << ", {" << width << ", " << numElements(cast<ValueType>(value.getType()).getDims()) / width
     << "}).sum(2).contiguous();\n";
  return pre;
}

/// The output bit of output `o` in the glue's `needed` mask (outputs from 63 on share bit 63).
static uint64_t outputBit(size_t o) { return uint64_t(1) << std::min<size_t>(o, 63); }

/// For every kernel, the outputs that depend on it (a mask of outputBit): a kernel runs only
/// when one of them is needed.
static std::vector<uint64_t> outputsOfKernels(const LayerPlan &plan) {
  llvm::DenseMap<Operation *, size_t> index;
  for (auto [k, kernel] : llvm::enumerate(plan.kernels))
    index[kernel.op] = k;
  auto producer = [&](Value v) -> std::optional<size_t> {
    auto marker = plan.gathers.find(v);
    if (marker != plan.gathers.end())
      v = marker->second.table;
    if (Operation *def = v.getDefiningOp(); def && index.count(def))
      return index.lookup(def);
    return std::nullopt;
  };
  std::vector<uint64_t> mask(plan.kernels.size(), 0);
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    if (std::optional<size_t> k = producer(OutputOp(plan.outputs[o]).getValue()))
      mask[*k] |= outputBit(o);
  for (size_t k = plan.kernels.size(); k-- > 0;)
    for (Value read : readsOf(plan, plan.kernels[k]))
      if (std::optional<size_t> from = producer(read))
        mask[*from] |= mask[k];
  return mask;
}

/// Prints the opening of the layer's namespace, its manifest (`kManifest`, `manifest()`), the
/// graph structures its kernels read (`kStructures`) and the declarations of its CUDA kernels.
static void printLayerConstants(LayerPlan &plan, const std::string &op, bool cuda,
                                llvm::raw_ostream &os) {
  std::string manifest = manifestOf(plan, cuda);
  os << "namespace " << op << " {\n\n";
  os << "const char *const kManifest =";
  for (StringRef rest = manifest; !rest.empty();) {
    auto [line, tail] = rest.split('\n');
    bool newline = line.size() < rest.size();
    os << "\n    " << cppQuoted(newline ? line.str() + "\n" : line.str());
    rest = tail;
  }
  os << ";\n\n";
  os << "std::string manifest() { return kManifest; }\n\n";
  os << "/// The graph structures the kernels read.\n"
     << "constexpr ::hector::graph_schema::GraphStructureMask kStructures = 0x"
     << llvm::utohexstr(plan.structures) << "ull;\n\n";
  if (cuda) {
    os << "#ifdef HECTOR_WITH_CUDA\nnamespace cuda {\n";
    printCudaSignatures(plan, /*instantiate=*/false, os);
    os << "} // namespace cuda\n#endif\n\n";
  }
}

/// Prints the head of run<T, I>: the tensor options, the graph view and, for CUDA tensors, the
/// device guard, the stream and whether float32 GEMMs may use TF32 tensor cores
/// (`tensorCoresAllowed`, decided by forward).
static void printRunPrologue(const std::string &op, bool cuda, llvm::raw_ostream &os) {
  os << "template <typename T, typename I>\n"
     << "std::vector<at::Tensor> run(const ::hector::Graph &graph, at::TensorList inputs, "
        "at::TensorList weights, std::uint64_t needed, bool tensorCoresAllowed) {\n"
     << "  (void)needed;\n"
     << "  (void)tensorCoresAllowed;\n"
     << "  const at::Device device = graph.device();\n"
     << "  const bool onCuda = device.is_cuda();\n"
     << "  (void)onCuda;\n"
     << "  const auto opts = at::TensorOptions().dtype(c10::CppTypeToScalarType<T>::value)"
        ".device(device);\n"
     << "  // Wide values (softmax logits and what they are computed from) in the accumulation "
        "type.\n"
     << "  const at::ScalarType wideType = "
        "c10::CppTypeToScalarType<::hector::tmpl::AccumType<T>>::value;\n"
     << "  const auto wideOpts = opts.dtype(wideType);\n"
     << "  (void)wideOpts;\n"
     << "  const auto idxOpts = at::TensorOptions().dtype(c10::CppTypeToScalarType<I>::value)"
        ".device(device);\n"
     << "  (void)idxOpts;\n"
     << "  const auto longOpts = at::TensorOptions().dtype(at::kLong).device(device);\n"
     << "  (void)longOpts;\n"
     << "  const ::hector::emit::GraphView<I> g = ::hector::emit::makeGraphView<I>(graph, "
        "kStructures, "
     << cppQuoted(op) << ");\n";
  if (cuda)
    os << "#ifdef HECTOR_WITH_CUDA\n"
       << "  std::optional<c10::cuda::CUDAGuard> guard;\n"
       << "  if (onCuda)\n    guard.emplace(device);\n"
       << "  cudaStream_t stream = onCuda ? c10::cuda::getCurrentCUDAStream().stream() : "
          "nullptr;\n"
       << "  const bool tensorCores = onCuda && !std::is_same_v<T, double> && "
          "tensorCoresAllowed;\n"
       << "  (void)tensorCores;\n"
       << "#endif\n";
}

/// Prints the tensors run<T, I> holds: the inputs (edge inputs in the graph's internal edge
/// order), the weights, and a declaration of every intermediate.
static void printRunTensors(LayerPlan &plan, llvm::raw_ostream &os) {
  for (auto [i, input] : llvm::enumerate(plan.inputs)) {
    if (input.getResult().use_empty()) {
      os << "  // in" << i << " (" << cppQuoted(input.getName()) << ") is not read.\n";
      continue;
    }
    // Saved activations stay in the graph's internal edge order.
    bool edge = input.getResult().getType().getSpace() != Space::Node && !isSavedInput(input);
    if (edge)
      os << "  const at::Tensor in" << i << " = graph.sortEdgeData(inputs[" << i
         << "]).contiguous();\n";
    else
      os << "  const at::Tensor in" << i << " = inputs[" << i << "].contiguous();\n";
  }
  bool needsOne = llvm::any_of(plan.kernels, [](const Kernel &k) {
    return k.kind == KernelKind::WeightGrad && isa<ReduceOp>(k.op);
  });
  if (needsOne)
    os << "  const at::Tensor one = at::ones({1}, opts);\n";
  for (auto [i, weight] : llvm::enumerate(plan.weights))
    os << "  const at::Tensor w" << i << " = weights[" << i << "].contiguous();\n";
  // Every intermediate, assigned by its kernel.
  for (const Kernel &kernel : plan.kernels)
    for (Value result : kernel.op->getResults())
      os << "  at::Tensor " << plan.tensors.lookup(result) << ";\n";
}

/// A tensor a kernel reads or writes, and whether it is wide (float32 in a 16-bit call).
struct KernelTensor {
  std::string name;
  bool wide = false;
};

/// The input tensors of a kernel call (printing the pre-summed input of a reduction first).
static SmallVector<KernelTensor> kernelInputs(LayerPlan &plan, size_t index, const Kernel &kernel,
                                              llvm::raw_ostream &os) {
  Operation *kop = kernel.op;
  SmallVector<KernelTensor> ins;
  auto tensor = [&](Value v) { return KernelTensor{plan.tensors.lookup(v), isWide(plan, v)}; };
  if (kernel.kind == KernelKind::WeightGrad) {
    WeightGradConfig c = *weightGradConfig(kop, plan);
    ins.push_back(c.a ? tensor(c.a) : KernelTensor{"one", false});
    ins.push_back(c.presum ? KernelTensor{printPresum(plan, index, c.c, c.n, os), isWide(plan, c.c)}
                           : tensor(c.c));
  } else if (kernel.kind == KernelKind::RowSum) {
    RowSumConfig c = *rowSumConfig(cast<ReduceOp>(kop));
    Value input = cast<ReduceOp>(kop).getInput();
    ins.push_back(
        c.presum ? KernelTensor{printPresum(plan, index, input, c.width, os), isWide(plan, input)}
                 : tensor(input));
  } else if (auto gemm = dyn_cast<GemmOp>(kop)) {
    ins.push_back(tensor(gemm.getA()));
    ins.push_back(tensor(gemm.getB()));
  } else {
    for (Value operand : kop->getOperands())
      ins.push_back(tensor(operand));
  }
  return ins;
}

/// Prints the allocation of a kernel's results (a GEMM with an accumulator, and a node
/// traversal of plan.inPlace, write into an operand's buffer) and returns their tensors.
static SmallVector<KernelTensor> printResultTensors(LayerPlan &plan, Operation *kop,
                                                    llvm::raw_ostream &os) {
  SmallVector<KernelTensor> outs;
  auto gemm = dyn_cast<GemmOp>(kop);
  for (Value result : kop->getResults()) {
    std::string name = plan.tensors.lookup(result);
    const bool wide = isWide(plan, result);
    const char *opts = wide ? "wideOpts" : "opts";
    outs.push_back({name, wide});
    if (gemm && gemm.getAcc()) {
      // The sum is written into the accumulator's buffer: the lowering folds an addition
      // into the GEMM only where the accumulator has no other reader.
      os << "  " << name << " = " << plan.tensors.lookup(gemm.getAcc()) << ";\n";
    } else if (Value operand = plan.inPlace.lookup(kop)) {
      // The operand's last reader: its rows are overwritten in place (computeInPlace).
      os << "  " << name << " = " << plan.tensors.lookup(operand) << ";\n";
    } else if (auto value = dyn_cast<ValueType>(result.getType())) {
      bool zeroed = gemm && gemm.getScatter() != GemmScatter::Store;
      os << "  " << name << " = ::hector::emit::" << (zeroed ? "newZeros(" : "newTensor(")
         << shapeList(graphRows(value.getSpace()), value.getDims()) << ", " << opts << ");\n";
    } else {
      auto weight = cast<WeightType>(result.getType());
      os << "  " << name << " = ::hector::emit::newTensor("
         << shapeList(sliceCount(weight.getSlicing()), weight.getDims()) << ", " << opts << ");\n";
    }
  }
  return outs;
}

/// Prints the auxiliary index arrays of a weight product and returns their tensors.
static SmallVector<std::string> printWeightProductAux(size_t index, WeightMatmulOp matmul,
                                                      llvm::raw_ostream &os) {
  SmallVector<std::string> aux;
  // Segment offsets (and, for an unsliced lhs with a sliced rhs, the row gather).
  bool lhsSliced = matmul.getLhs().getType().getSlicing() != Slicing::None;
  bool rhsSliced = matmul.getRhs().getType().getSlicing() != Slicing::None;
  int64_t m = numElements(matmul.getLhs().getType().getDims().drop_back());
  std::string slices = sliceCount(matmul.getResult().getType().getSlicing());
  if (slices.empty())
    slices = "1";
  std::string off = "aux" + std::to_string(index) + "_off";
  if (rhsSliced)
    os << "  const at::Tensor " << off << " = at::arange(0, " << slices << " + 1, idxOpts) * " << m
       << ";\n";
  else
    os << "  const at::Tensor " << off << " = at::arange(0, 2, idxOpts) * ("
       << (lhsSliced ? slices : "1") << " * " << m << ");\n";
  aux.push_back(off);
  if (rhsSliced && !lhsSliced) {
    std::string gather = "aux" + std::to_string(index) + "_gather";
    os << "  const at::Tensor " << gather << " = at::arange(0, " << slices << " * " << m
       << ", idxOpts).remainder(" << m << ");\n";
    aux.push_back(gather);
  }
  return aux;
}

/// Prints the call of a kernel on tensors `ins`, `outs` and `aux`: its CPU function or, for CUDA
/// tensors, its launcher, with its workspace.
static void printLaunch(const Kernel &kernel, ArrayRef<KernelTensor> ins,
                        ArrayRef<KernelTensor> outs, ArrayRef<std::string> aux, bool cuda,
                        llvm::raw_ostream &os) {
  // A wide tensor's data, passed as the kernels' T * (they read it as AccumType<T>).
  auto data = [](const KernelTensor &t) {
    return t.wide ? "reinterpret_cast<T *>(" + t.name + ".data_ptr<::hector::tmpl::AccumType<T>>())"
                  : t.name + ".data_ptr<T>()";
  };
  // Each kernel is a torch.profiler event (a flag test when no profiler is active).
  os << "  {\n    RECORD_FUNCTION(" << cppQuoted(kernel.name)
     << ", std::vector<c10::IValue>());\n    const T *in_[] = {";
  for (const KernelTensor &t : ins)
    os << data(t) << ", ";
  os << "nullptr};\n    T *out_[] = {";
  for (const KernelTensor &t : outs)
    os << data(t) << ", ";
  os << "nullptr};\n    const I *aux_[] = {";
  for (const std::string &name : aux)
    os << name << ".data_ptr<I>(), ";
  os << "nullptr};\n";
  if (cuda) {
    // The CUDA kernels exist for every T run<T, I> is instantiated for (printCudaSignatures:
    // float32 and float64, and bfloat16 and float16 for a layer in 16-bit storage).
    os << "    if (onCuda) {\n#ifdef HECTOR_WITH_CUDA\n"
       << "      const std::size_t bytes = cuda::" << kernel.name
       << "_workspace<T, I>(g, in_, out_, aux_);\n"
       << "      at::Tensor workspace = at::empty({static_cast<std::int64_t>(bytes)}, "
          "opts.dtype(at::kByte));\n"
       << "      const cudaError_t error = cuda::" << kernel.name
       << "<T, I>(g, in_, out_, aux_, workspace.data_ptr(), bytes, stream, tensorCores);\n"
       << "      ::hector::emit::checkLaunch(error == cudaSuccess ? nullptr : "
          "cudaGetErrorString(error), "
       << cppQuoted(kernel.name) << ");\n"
       << "#endif\n    } else {\n  ";
  }
  os << "    cpu::" << kernel.name << "<T, I>(g, in_, out_, aux_);\n";
  if (cuda)
    os << "    }\n";
  os << "  }\n";
}

/// Prints the call of the kernel `kernel`, the `index`th of the layer: its inputs, the
/// allocation of its results, its auxiliary arrays and the launch.
static void printKernelCall(LayerPlan &plan, size_t index, const Kernel &kernel, bool cuda,
                            llvm::raw_ostream &os) {
  SmallVector<KernelTensor> ins = kernelInputs(plan, index, kernel, os);
  SmallVector<KernelTensor> outs = printResultTensors(plan, kernel.op, os);
  SmallVector<std::string> aux;
  if (auto matmul = dyn_cast<WeightMatmulOp>(kernel.op))
    aux = printWeightProductAux(index, matmul, os);
  printLaunch(kernel, ins, outs, aux, cuda, os);
}

/// Prints the end of run<T, I>: its results (edge outputs back in the user's edge order; in a
/// backward layer, undefined where not `needed`).
static void printResults(LayerPlan &plan, bool masked, llvm::raw_ostream &os) {
  os << "  std::vector<at::Tensor> results;\n";
  for (auto [o, output] : llvm::enumerate(plan.outputs)) {
    std::string name = plan.tensors.lookup(output.getValue());
    auto value = dyn_cast<ValueType>(output.getValue().getType());
    bool edge = value && value.getSpace() != Space::Node && !isSavedOutput(output);
    bool isInput = isa_and_nonnull<InputOp, WeightOp>(output.getValue().getDefiningOp());
    std::string result = edge      ? "graph.unsortEdgeData(" + name + ")"
                         : isInput ? name + ".clone()"
                                   : name;
    if (masked)
      os << "  results.push_back((needed & 0x" << llvm::utohexstr(outputBit(o)) << "ull) ? "
         << result << " : at::Tensor());\n";
    else
      os << "  results.push_back(" << result << ");\n";
  }
  os << "  return results;\n}\n\n";
}

/// Prints run<T, I>: the layer's tensors and its kernels in order, each intermediate released
/// after its last reader; a backward layer runs only the kernels that serve a needed output.
static void printRun(LayerPlan &plan, const std::string &op, bool cuda, llvm::raw_ostream &os) {
  // Which outputs each kernel serves, and the last kernel that reads each intermediate (it is
  // released right after, so that the peak holds only what is still needed).
  // Only a backward layer computes a subset of its outputs (the gradients autograd needs).
  const bool masked = !plan.forwardOf.empty();
  std::vector<uint64_t> serves = outputsOfKernels(plan);
  std::map<size_t, SmallVector<std::string>> releaseAfter;
  for (auto &[k, values] : releasePlan(plan)) {
    for (Value value : values)
      releaseAfter[k].push_back(plan.tensors.lookup(value));
    llvm::sort(releaseAfter[k]);
  }

  // run<T, I>: the kernels in order.
  printRunPrologue(op, cuda, os);
  printRunTensors(plan, os);

  for (auto [index, kernel] : llvm::enumerate(plan.kernels)) {
    os << (masked ? "  if (needed & 0x" + llvm::utohexstr(serves[index]) + "ull) {\n" : "  {\n");
    if (kernel.kind == KernelKind::Glue)
      printGlueOp(plan, kernel, os);
    else
      printKernelCall(plan, index, kernel, cuda, os);
    for (const std::string &name : releaseAfter[index])
      os << "  " << name << ".reset();\n";
    os << "  }\n";
  }
  printResults(plan, masked, os);
}

/// Prints the checks of forward's arguments as a whole: their numbers, and the dtype and device
/// of the tensor that sets them; declares `dtype`.
static void printCallChecks(LayerPlan &plan, const std::string &op, llvm::raw_ostream &os) {
  auto names = [](auto ops) {
    std::string out;
    for (auto op : ops)
      out += (out.empty() ? "" : ", ") + op.getName().str();
    return out;
  };
  os << "  TORCH_CHECK_VALUE(inputs.size() == " << plan.inputs.size() << ", "
     << cppQuoted(op + ".forward: expected " + std::to_string(plan.inputs.size()) + " inputs (" +
                  names(plan.inputs) + "), got ")
     << ", inputs.size());\n"
     << "  TORCH_CHECK_VALUE(weights.size() == " << plan.weights.size() << ", "
     << cppQuoted(op + ".forward: expected " + std::to_string(plan.weights.size()) + " weights (" +
                  names(plan.weights) + "), got ")
     << ", weights.size());\n";
  // The tensor that sets the call's dtype and device, as messages name it: the first input the
  // layer reads, or the first weight; one the call holds in its own dtype (not wide) where
  // there is one.
  std::string first, firstName;
  auto pick = [&](bool narrowOnly) {
    for (auto [i, input] : llvm::enumerate(plan.inputs))
      if (!input.getResult().use_empty() && !(narrowOnly && isWide(plan, input.getResult()))) {
        first = "inputs[" + std::to_string(i) + "]";
        firstName = "input '" + input.getName().str() + "'";
        return true;
      }
    for (auto [i, weight] : llvm::enumerate(plan.weights))
      if (!(narrowOnly && isWide(plan, weight.getResult()))) {
        first = "weights[" + std::to_string(i) + "]";
        firstName = "weight '" + weight.getName().str() + "'";
        return true;
      }
    return false;
  };
  if (!pick(/*narrowOnly=*/true))
    pick(/*narrowOnly=*/false);
  if (first.empty()) {
    os << "  const at::ScalarType dtype = at::kFloat;\n";
  } else {
    os << "  const at::ScalarType dtype = " << first << ".scalar_type();\n"
       << "  TORCH_CHECK_TYPE(dtype == at::kFloat || dtype == at::kDouble"
       << " || ::hector::emit::isHalfPrecision(dtype), "
       << cppQuoted(op + ".forward: " + firstName +
                    " must be float32, float64, bfloat16 or float16 (the dtype of every tensor "
                    "of the call; a 16-bit call may also hold float32 tensors), got ")
       << ", dtype);\n"
       << "  TORCH_CHECK_VALUE(" << first << ".device() == graph.device(), "
       << cppQuoted(op + ".forward: the graph is on ") << ", graph.device(), "
       << cppQuoted(" but " + firstName + " is on ") << ", " << first << ".device());\n";
  }
}

/// Prints the check of every input the layer reads and of every weight: dtype, device, shape.
static void printArgumentChecks(LayerPlan &plan, const std::string &op, llvm::raw_ostream &os) {
  for (auto [i, input] : llvm::enumerate(plan.inputs)) {
    if (input.getResult().use_empty())
      continue; // not read: may be undefined
    ValueType type = input.getResult().getType();
    Space space = type.getSpace();
    // Rows: N, E, or (saved compacted activations) U_src / U_dst.
    std::string label = space == Space::Node        ? "N"
                        : space == Space::UniqueSrc ? "U_src"
                        : space == Space::UniqueDst ? "U_dst"
                                                    : "E";
    os << "  ::hector::emit::checkArgument(inputs[" << i << "], "
       << cppQuoted(op + ".forward: input '" + input.getName().str() + "'") << ", "
       << (isWide(plan, input.getResult()) ? "::hector::emit::wideDtype(dtype)" : "dtype")
       << ", graph.device(), " << cppQuoted(label) << ", "
       << shapeList(graphRows(space), type.getDims()) << ");\n";
  }
  for (auto [i, weight] : llvm::enumerate(plan.weights)) {
    WeightType type = weight.getResult().getType();
    std::string count = sliceCount(type.getSlicing());
    std::string label = type.getSlicing() == Slicing::Relation ? "R"
                        : type.getSlicing() == Slicing::NType  ? "T"
                                                               : "";
    os << "  ::hector::emit::checkArgument(weights[" << i << "], "
       << cppQuoted(op + ".forward: weight '" + weight.getName().str() + "'") << ", "
       << (isWide(plan, weight.getResult()) ? "::hector::emit::wideDtype(dtype)" : "dtype")
       << ", graph.device(), " << cppQuoted(label) << ", "
       << "std::vector<std::int64_t>" << shapeList(count, type.getDims()) << ");\n";
  }
}

/// The name of the weight whose slice `table` (a src_row's operand, a traversal's block
/// argument after the lowering) reads, or "" when it is not one.
static std::string tableWeightName(Value table) {
  if (auto arg = dyn_cast<BlockArgument>(table))
    if (auto traversal = dyn_cast<TraversalOp>(arg.getOwner()->getParentOp()))
      table = traversal->getOperand(arg.getArgNumber());
  if (auto slice = table.getDefiningOp<SliceOp>())
    if (auto weight = slice.getInput().getDefiningOp<WeightOp>())
      return weight.getName().str();
  return "";
}

/// Prints the check that every src_row reads a row of its table: the graph's node ids are
/// below the table's row count (the kernels read row src unchecked).
static void printTableRowChecks(LayerPlan &plan, const std::string &op, llvm::raw_ostream &os) {
  plan.layer.walk([&](SrcRowOp row) {
    int64_t rows = row.getInput().getType().getDims().front();
    std::string weight = tableWeightName(row.getInput());
    std::string what = weight.empty() ? "a table" : "weight '" + weight + "'";
    os << "  TORCH_CHECK_VALUE(graph.numNodes() <= " << rows << ", "
       << cppQuoted(op + ".forward: src_row reads row src of " + what + ", which has " +
                    std::to_string(rows) + " rows, but the graph has ")
       << ", graph.numNodes(), " << cppQuoted(" nodes") << ");\n";
  });
}

/// Prints the dispatch of forward on the graph's index dtype and the element type (float32,
/// float64, bfloat16, float16).
static void printDispatch(const std::string &op, llvm::raw_ostream &os) {
  auto sixteenBit = [&](const char *index, const char *indent) {
    os << indent << "if (dtype == at::kBFloat16)\n"
       << indent << "  return run<c10::BFloat16, " << index
       << ">(graph, inputs, weights, mask, tensorCores);\n"
       << indent << "if (dtype == at::kHalf)\n"
       << indent << "  return run<c10::Half, " << index
       << ">(graph, inputs, weights, mask, tensorCores);\n";
  };
  os << "  const std::uint64_t mask = static_cast<std::uint64_t>(needed);\n"
     << "  if (graph.indexDtype() == at::kLong) {\n"
     << "#ifdef HECTOR_INDEX64\n";
  sixteenBit("std::int64_t", "    ");
  os << "    if (dtype == at::kDouble)\n"
     << "      return run<double, std::int64_t>(graph, inputs, weights, mask, tensorCores);\n"
     << "    return run<float, std::int64_t>(graph, inputs, weights, mask, tensorCores);\n"
     << "#else\n"
     << "    TORCH_CHECK_VALUE(false, "
     << cppQuoted(op + ".forward: the graph has 64-bit indices (2^31 nodes or edges or more, or "
                       "index_dtype=torch.int64); this library was built for 32-bit ones: "
                       "rebuild it with hectorc --index64")
     << ");\n"
     << "#endif\n"
     << "  }\n";
  sixteenBit("std::int32_t", "  ");
  os << "  if (dtype == at::kDouble)\n"
     << "    return run<double, std::int32_t>(graph, inputs, weights, mask, tensorCores);\n"
     << "  return run<float, std::int32_t>(graph, inputs, weights, mask, tensorCores);\n}\n\n";
}

/// Prints forward: validation, then dispatch on the element and index types (forwardAt). A call
/// with bfloat16 or float16 tensors returns its results in the 16-bit dtype, except gradients,
/// which take the dtype of their tensor. It converts each tensor to its storage (the 16-bit
/// dtype, float32 for a wide one: LayerPlan::wide) and runs the kernels on 16-bit rows, every sum
/// and product in float (on CUDA the GEMMs of 16-bit rows on 16-bit tensor cores).
static void printForward(LayerPlan &plan, const std::string &op, bool cuda, llvm::raw_ostream &os) {
  os << "std::vector<at::Tensor> forwardAt(at::TensorList graphTensors, c10::IntArrayRef "
        "graphSizes, at::TensorList inputs, at::TensorList weights, std::int64_t needed, bool "
        "tensorCores) {\n"
     << "  const ::hector::Graph graph = ::hector::Graph::fromTensors(graphTensors.vec(), "
        "graphSizes.vec());\n";
  printCallChecks(plan, op, os);
  printArgumentChecks(plan, op, os);
  printTableRowChecks(plan, op, os);
  if (!cuda)
    os << "  TORCH_CHECK_VALUE(!graph.device().is_cuda(), "
       << cppQuoted(op + ".forward: this library was built without CUDA kernels") << ");\n";
  printDispatch(op, os);

  auto nameList = [&](auto items) {
    std::string out = "{";
    for (auto [i, item] : llvm::enumerate(items))
      out += (i ? ", " : "") + cppQuoted(item.getName());
    return out + "}";
  };
  os << "std::vector<at::Tensor> forward(at::TensorList graphTensors, c10::IntArrayRef "
        "graphSizes, at::TensorList inputs, at::TensorList weights, std::int64_t needed) {\n"
     << "  const std::optional<at::ScalarType> half = ::hector::emit::halfPrecisionCall(inputs, "
        "weights, "
     << cppQuoted(op) << ", " << nameList(plan.inputs) << ", " << nameList(plan.weights) << ");\n"
     << "  if (!half)\n"
     << "    return forwardAt(graphTensors, graphSizes, inputs, weights, needed, "
        "::hector::emit::tf32Matmul());\n";
  // A gradient takes the dtype of the tensor it is the gradient of (a float32 weight beside
  // 16-bit features keeps a float32 gradient); every other result the call's 16-bit dtype.
  auto dtypeOf = [&](OutputOp output) -> std::string {
    StringRef name = output.getName();
    if (name.consume_front("grad.")) {
      for (auto [i, input] : llvm::enumerate(plan.inputs))
        if (input.getName() == name)
          return "::hector::emit::gradientDtype(inputs[" + std::to_string(i) + "], *half)";
      for (auto [i, weight] : llvm::enumerate(plan.weights))
        if (weight.getName() == name)
          return "::hector::emit::gradientDtype(weights[" + std::to_string(i) + "], *half)";
    }
    return "*half";
  };
  auto printConversions = [&](const char *indent) {
    for (auto [o, output] : llvm::enumerate(plan.outputs))
      if (!isSavedOutput(output))
        os << indent << "results[" << o << "] = ::hector::emit::toDtype(results[" << o << "], "
           << dtypeOf(output) << ");\n";
  };
  // Each tensor in its storage: the call's 16-bit dtype, or float32 for a wide one. The CUDA
  // GEMMs of 16-bit rows always run on 16-bit tensor cores (the launchers ignore the flag);
  // those that read a float32 operand run on TF32 where PyTorch allows it for float32.
  auto flags = [&](auto ops) {
    std::string out = "{";
    for (auto [i, op] : llvm::enumerate(ops))
      out += std::string(i ? ", " : "") + (isWide(plan, op.getResult()) ? "true" : "false");
    return out + "}";
  };
  os << "  std::vector<at::Tensor> results = forwardAt(graphTensors, graphSizes, "
        "::hector::emit::toStorage(inputs, *half, "
     << flags(plan.inputs) << "), ::hector::emit::toStorage(weights, *half, " << flags(plan.weights)
     << "), needed, ::hector::emit::tf32Matmul());\n";
  printConversions("  ");
  os << "  return results;\n}\n\n";
}

void printGlue(LayerPlan &plan, bool cuda, llvm::raw_ostream &os) {
  std::string op = "hector_" + plan.id;
  printLayerConstants(plan, op, cuda, os);
  printRun(plan, op, cuda, os);
  printForward(plan, op, cuda, os);
  os << "} // namespace " << op << "\n\n";

  // Registered by the library's hector::emit::LibraryRegistration (printRegistration).
  os << "namespace " << op << " {\n"
     << "void define(torch::Library &m) {\n"
     << "  m.def(\"manifest() -> str\", &manifest);\n"
     << "  m.def(\"forward(Tensor[] graph, int[] graph_sizes, Tensor[] inputs, Tensor[] weights, "
        "int needed=-1) -> Tensor[]\");\n}\n"
     << "void implement(torch::Library &m) { m.impl(\"forward\", &forward); }\n"
     << "} // namespace " << op << "\n\n";
}

void printRegistration(const std::vector<LayerPlan> &plans, bool cuda, llvm::raw_ostream &os) {
  os << "namespace {\n"
     << "const ::hector::emit::LibraryRegistration registration({\n";
  for (const LayerPlan &plan : plans)
    os << "    {" << cppQuoted("hector_" + plan.id) << ", &hector_" << plan.id
       << "::define, &hector_" << plan.id << "::implement},\n";
  os << "}, /*cudaKernels=*/" << (cuda ? "true" : "false") << ");\n"
     << "} // namespace\n\n"
     << "/// The operator namespaces this library registers, comma-separated.\n"
     << "extern \"C\" __attribute__((visibility(\"default\"))) const char *"
        "hector_library_namespaces() {\n  return ";
  std::string namespaces;
  for (auto [i, plan] : llvm::enumerate(plans))
    namespaces += (i ? "," : "") + ("hector_" + plan.id);
  os << cppQuoted(namespaces) << ";\n}\n\n"
     << "/// The hectorc ABI marker that hector.load and hector::loadLibrary look for before they\n"
     << "/// load a file (docs/architecture.md, \"The emitted library and its ABI\").\n"
     << "extern \"C\" __attribute__((visibility(\"default\"), used, section("
     << cppQuoted(kAbiSection) << "))) const char hector_library_abi[] = "
     << cppQuoted(kAbiPrefix + std::to_string(kLibraryAbi)) << ";\n";
}

} // namespace emit
} // namespace hector
