//===- Kernels.cpp - The kernels of a layer -------------------------------===//
//
// Prints the kernels of a layer for the CPU (model.cpp) and CUDA (model_cuda.cu), function
// templates over the element and index types: the problems of the segmented GEMM template and of
// its weight-gradient form, the traversals with their functors, the run sums; and the CUDA
// launchers' declarations and instantiations.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

using namespace mlir;

namespace hector {
namespace emit {

/// The parameters every kernel takes: the graph's arrays, the input and output tensors, the
/// kernel's auxiliary index arrays.
static const char *const kKernelParams =
    "const ::hector::emit::GraphView<I> &g, const T *const *in, T *const *out, "
    "const I *const *aux";

/// The tile math a CUDA GEMM launcher asks for: TF32 tensor cores when its `tensorCores`
/// argument allows them (the template computes double in double whatever it is asked).
static const char *const kMathPath = "tensorCores ? ::hector::tmpl::gpu::MathPath::kTensorTf32 : "
                                     "::hector::tmpl::gpu::MathPath::kSimt";

/// What a kernel's function templates begin with.
static const char *const kHead = "template <typename T, typename I> ";

/// `expr`, a kernel argument (const T * or T *), as a pointer to `type` (an element type of
/// elementTypeOf: T itself, or the accumulation type of a wide value's storage).
static std::string pointerTo(const std::string &type, const std::string &expr, bool isConst) {
  if (type == "T")
    return expr;
  return "reinterpret_cast<" + std::string(isConst ? "const " : "") + type + " *>(" + expr + ")";
}

/// The element types of a GEMM kernel's A, B and C (of a weight gradient's A, dC and dB).
struct OperandTypes {
  std::string a = "T", b = "T", c = "T";
  bool uniform() const { return a == "T" && b == "T" && c == "T"; }
  /// The problem's template arguments: `T, I` where every operand is T.
  std::string arguments() const { return uniform() ? "T, I" : a + ", I, " + b + ", " + c; }
};

/// The operand types of a GEMM or weight-product kernel.
static OperandTypes gemmTypes(const LayerPlan &plan, const Kernel &kernel) {
  OperandTypes t;
  if (auto gemm = dyn_cast<GemmOp>(kernel.op)) {
    t.a = elementTypeOf(plan, gemm.getA());
    t.b = elementTypeOf(plan, gemm.getB());
  } else {
    auto matmul = cast<WeightMatmulOp>(kernel.op);
    t.a = elementTypeOf(plan, matmul.getLhs());
    t.b = elementTypeOf(plan, matmul.getRhs());
  }
  t.c = elementTypeOf(plan, kernel.op->getResult(0));
  return t;
}

/// Prints `NAME_problem<T, I>(g, in, out, aux)`, building the GemmProblem of a GEMM kernel.
static void printProblem(const Kernel &kernel, const GemmConfig &c, const OperandTypes &types,
                         llvm::raw_ostream &os) {
  std::string problem = "::hector::tmpl::GemmProblem<" + types.arguments() + ">";
  os << "template <typename T, typename I>\n"
     << problem << " " << kernel.name << "_problem(" << kKernelParams << ") {\n"
     << "  (void)aux;\n"
     << "  " << problem << " p;\n";
  if (c.weightProduct) {
    auto matmul = cast<WeightMatmulOp>(kernel.op);
    bool lhsSliced = matmul.getLhs().getType().getSlicing() != Slicing::None;
    bool rhsSliced = matmul.getRhs().getType().getSlicing() != Slicing::None;
    int64_t m = numElements(matmul.getLhs().getType().getDims().drop_back());
    Slicing slicing = matmul.getResult().getType().getSlicing();
    std::string slices = slicing == Slicing::Relation ? "g.numRelations"
                         : slicing == Slicing::NType  ? "g.numNtypes"
                                                      : "1";
    os << "  p.numSegments = " << (rhsSliced ? slices : "1") << ";\n"
       << "  p.segOffsets = aux[0];\n"
       << "  p.numRows = " << ((lhsSliced || rhsSliced) ? slices : "1") << " * " << m << ";\n"
       << "  p.gather = " << (rhsSliced && !lhsSliced ? "aux[1]" : "nullptr") << ";\n";
  } else {
    os << "  p.numSegments = " << c.numSegments << ";\n"
       << "  p.segOffsets = " << c.segOffsets << ";\n"
       << "  p.numRows = " << c.numRows << ";\n"
       << "  p.rows = " << c.rows << ";\n"
       << "  p.gather = " << c.gather << ";\n";
  }
  os << "  p.K = " << c.k << ";\n  p.N = " << c.n << ";\n  p.heads = " << c.heads << ";\n"
     << "  p.A = " << pointerTo(types.a, "in[0]", true) << ";\n  p.lda = " << c.heads * c.k << ";\n"
     << "  p.B = " << pointerTo(types.b, "in[1]", true) << ";\n  p.strideB = " << c.strideB << ";\n"
     << "  p.C = " << pointerTo(types.c, "out[0]", false) << ";\n  p.ldc = " << c.heads * c.n
     << ";\n"
     << "  p.scatter = " << c.scatter << ";\n  return p;\n}\n\n";
}

/// The template's operation on B: as stored, or transposed.
static std::string bop(const GemmConfig &c) {
  return c.transposeB ? "::hector::tmpl::BOp::kTranspose" : "::hector::tmpl::BOp::kIdentity";
}

/// The pointer fields of a traversal functor, set from the uniform kernel arguments.
static void printFunctorSetup(const LayerPlan &plan, const Kernel &kernel, const Functor &functor,
                              llvm::raw_ostream &os) {
  auto traversal = cast<TraversalOp>(kernel.op);
  os << "  " << kernel.name << "_f<T, I> f;\n";
  for (auto [i, operand] : llvm::enumerate(traversal.getInputs()))
    os << "  f.in" << i << " = "
       << pointerTo(elementTypeOf(plan, operand), "in[" + std::to_string(i) + "]", true) << ";\n";
  for (auto [i, result] : llvm::enumerate(traversal->getResults()))
    os << "  f.out" << i << " = "
       << pointerTo(elementTypeOf(plan, result), "out[" + std::to_string(i) + "]", false) << ";\n";
  for (const auto &[member, field] : functor.members)
    os << "  f." << member << " = " << field << ";\n";
}

/// Prints `NAME_problem<T, I>(g, in, out, aux)`, building the WeightGradProblem of a weight
/// gradient or row sum (in[0] = A, in[1] = dC, out[0] = dB).
static void printWeightGradProblem(const Kernel &kernel, const WeightGradConfig &c,
                                   const OperandTypes &types, llvm::raw_ostream &os) {
  bool reduce = isa<ReduceOp>(kernel.op);
  std::string problem = "::hector::tmpl::WeightGradProblem<" + types.arguments() + ">";
  os << "template <typename T, typename I>\n"
     << problem << " " << kernel.name << "_problem(" << kKernelParams << ") {\n"
     << "  (void)aux;\n"
     << "  " << problem << " p;\n"
     << "  p.numSegments = " << c.numSegments << ";\n"
     << "  p.segOffsets = " << c.segOffsets << ";\n"
     << "  p.numRows = " << c.numRows << ";\n"
     << "  p.K = " << c.k << ";\n  p.N = " << c.n << ";\n  p.heads = " << c.heads << ";\n"
     << "  p.A = " << pointerTo(types.a, "in[0]", true)
     << ";\n  p.lda = " << (reduce ? 0 : c.heads * c.k) << ";\n"
     << "  p.rows = " << c.rows << ";\n"
     << "  p.gatherA = " << c.gatherA << ";\n"
     << "  p.dC = " << pointerTo(types.b, "in[1]", true) << ";\n  p.ldc = " << c.heads * c.n
     << ";\n"
     << "  p.gatherC = " << c.gatherC << ";\n"
     << "  p.dB = " << pointerTo(types.c, "out[0]", false)
     << ";\n  p.strideB = " << c.heads * c.k * c.n << ";\n"
     << "  return p;\n}\n\n";
}

/// Prints the run sum of a hector.reduce into or from unique pairs (traversal template). Its
/// input and result have one storage (planModule keeps a layer where they would not in float32
/// storage).
static void printRowSumKernel(const LayerPlan &plan, const Kernel &kernel, bool cuda,
                              llvm::raw_ostream &os) {
  RowSumConfig c = *rowSumConfig(cast<ReduceOp>(kernel.op));
  std::string type = elementTypeOf(plan, kernel.op->getResult(0));
  std::string args = c.csr + ", " + pointerTo(type, "in[0]", true) + ", " +
                     std::to_string(c.width) + ", " + pointerTo(type, "out[0]", false) + ", " +
                     (c.toNodes ? "true" : "false");
  if (!cuda) {
    os << kHead << "void " << kernel.name << "(" << kKernelParams << ") {\n"
       << "  (void)aux;\n"
       << "  ::hector::tmpl::cpu::runSum<" << type << ", I>(" << args << ");\n}\n\n";
  } else {
    os << kHead << "std::size_t " << kernel.name << "_workspace(" << kKernelParams
       << ") {\n  (void)g;\n  (void)in;\n  (void)out;\n  (void)aux;\n"
       << "  return 0;\n}\n\n";
    os << kHead << "cudaError_t " << kernel.name << "(" << kKernelParams
       << ", void *, std::size_t, cudaStream_t stream, bool) {\n  (void)aux;\n"
       << "  return ::hector::tmpl::gpu::launchRunSum<" << type << ", I>(" << args
       << ", stream);\n}\n\n";
  }
}

/// Prints a weight gradient or row-summing reduction: its problem and the template's
/// weight-gradient form.
static void printWeightGradKernel(const LayerPlan &plan, const Kernel &kernel, bool cuda,
                                  llvm::raw_ostream &os) {
  WeightGradConfig config = *weightGradConfig(kernel.op, plan);
  OperandTypes types;
  if (config.a) // else the glue's `one`, of type T
    types.a = elementTypeOf(plan, config.a);
  types.b = elementTypeOf(plan, config.c);
  types.c = elementTypeOf(plan, kernel.op->getResult(0));
  printWeightGradProblem(kernel, config, types, os);
  std::string modes = types.a + ", ::hector::tmpl::BOp::kIdentity, ::hector::tmpl::Assign::kStore";
  std::string problem = kernel.name + "_problem<T, I>(g, in, out, aux)";
  if (!cuda) {
    os << kHead << "void " << kernel.name << "(" << kKernelParams << ") {\n"
       << "  ::hector::tmpl::cpu::segmentedWeightGrad<" << modes << ">(" << problem << ");\n}\n\n";
  } else {
    os << kHead << "std::size_t " << kernel.name << "_workspace(" << kKernelParams << ") {\n"
       << "  const auto p = " << problem << ";\n"
       << "  return ::hector::tmpl::gpu::segmentedWeightGradWorkspaceBytes(p, "
          "::hector::tmpl::gpu::defaultWgradChunkRows(p.numRows));\n}\n\n";
    os << kHead << "cudaError_t " << kernel.name << "(" << kKernelParams
       << ", void *workspace, std::size_t workspaceBytes, cudaStream_t stream, bool tensorCores) "
          "{\n"
       << "  const auto p = " << problem << ";\n"
       << "  return ::hector::tmpl::gpu::launchSegmentedWeightGrad<" << modes
       << ">(p, ::hector::tmpl::gpu::defaultWgradChunkRows(p.numRows), workspace, "
          "workspaceBytes, stream, "
       << kMathPath << ");\n}\n\n";
  }
}

/// Prints a traversal: its functor, and the edge, node or pair traversal that calls it.
static LogicalResult printTraversalKernel(const LayerPlan &plan, const Kernel &kernel,
                                          TraversalOp traversal, bool cuda, llvm::raw_ostream &os) {
  FailureOr<Functor> functor = printFunctor(plan, traversal, kernel.name);
  if (failed(functor))
    return failure();
  os << functor->text;
  bool edge = traversal.getKind() == TraversalKind::Edge;
  std::string csr = functor->by == EdgeEnd::Src ? "g.outCsr()" : "g.inCsr()";
  // An edge traversal over compacted rows runs over the unique pairs instead.
  std::string edges = "g.edges()";
  if (std::optional<Space> pairs = pairSpaceOf(traversal))
    edges = *pairs == Space::UniqueSrc ? "g.uniqueSrcPairs()" : "g.uniqueDstPairs()";
  // A node traversal over unique pairs: the runs of the CSR by source (source pairs) or
  // by destination.
  std::string pairs;
  if (functor->pairSums)
    pairs = *functor->pairSums == Space::UniqueSrc ? "g.outPairCsr()" : "g.inPairCsr()";
  if (!cuda) {
    os << kHead << "void " << kernel.name << "(" << kKernelParams << ") {\n"
       << "  (void)aux;\n";
    printFunctorSetup(plan, kernel, *functor, os);
    if (edge)
      os << "  ::hector::tmpl::cpu::edgeMap(" << edges << ", f);\n}\n\n";
    else if (!pairs.empty())
      os << "  ::hector::emit::cpu::pairTraversal(" << pairs << ", f);\n}\n\n";
    else
      os << "  ::hector::emit::cpu::nodeTraversal<" << functor->passes << ">(" << csr
         << ", f);\n}\n\n";
  } else {
    os << kHead << "std::size_t " << kernel.name << "_workspace(" << kKernelParams
       << ") {\n  (void)g;\n  (void)in;\n  (void)out;\n  (void)aux;\n"
       << "  return 0;\n}\n\n";
    os << kHead << "cudaError_t " << kernel.name << "(" << kKernelParams
       << ", void *, std::size_t, cudaStream_t stream, bool) {\n  (void)aux;\n";
    printFunctorSetup(plan, kernel, *functor, os);
    if (edge)
      os << "  return ::hector::tmpl::gpu::launchEdgeMap(" << edges << ", f, stream);\n}\n\n";
    else if (!pairs.empty())
      os << "  return ::hector::emit::gpu::launchPairTraversal(" << pairs << ", f, stream);\n}\n\n";
    else
      os << "  return ::hector::emit::gpu::launchNodeTraversal<" << functor->passes << ">(" << csr
         << ", f, stream);\n}\n\n";
  }
  return success();
}

/// Prints a GEMM or weight product: its problem and the segmented GEMM template.
static void printGemmKernel(const LayerPlan &plan, const Kernel &kernel, bool cuda,
                            llvm::raw_ostream &os) {
  GemmConfig c = configOf(kernel);
  OperandTypes types = gemmTypes(plan, kernel);
  printProblem(kernel, c, types, os);
  std::string mode = "::hector::tmpl::Scatter::" + c.scatterMode;
  std::string problem = kernel.name + "_problem<T, I>(g, in, out, aux)";
  if (!cuda) {
    os << kHead << "void " << kernel.name << "(" << kKernelParams << ") {\n"
       << "  ::hector::tmpl::cpu::segmentedGemm<" << types.a << ", " << bop(c) << ", " << mode
       << ">(" << problem << ");\n}\n\n";
  } else {
    os << kHead << "std::size_t " << kernel.name << "_workspace(" << kKernelParams << ") {\n"
       << "  return ::hector::tmpl::gpu::segmentedGemmWorkspaceBytes<" << types.a << ", " << mode
       << ">(" << problem << ");\n}\n\n";
    os << kHead << "cudaError_t " << kernel.name << "(" << kKernelParams
       << ", void *workspace, std::size_t workspaceBytes, cudaStream_t stream, bool tensorCores) "
          "{\n"
       << "  return ::hector::tmpl::gpu::launchSegmentedGemm<" << types.a << ", " << bop(c) << ", "
       << mode << ">(" << problem << ", workspace, workspaceBytes, stream, " << kMathPath
       << ");\n}\n\n";
  }
}

LogicalResult printKernels(LayerPlan &plan, bool cuda, llvm::raw_ostream &os) {
  for (const Kernel &kernel : plan.kernels) {
    if (kernel.kind == KernelKind::Glue)
      continue;
    os << "// " << kernel.name << "\n";
    if (kernel.kind == KernelKind::RowSum) {
      printRowSumKernel(plan, kernel, cuda, os);
    } else if (kernel.kind == KernelKind::WeightGrad) {
      printWeightGradKernel(plan, kernel, cuda, os);
    } else if (auto traversal = dyn_cast<TraversalOp>(kernel.op)) {
      if (failed(printTraversalKernel(plan, kernel, traversal, cuda, os)))
        return failure();
    } else {
      printGemmKernel(plan, kernel, cuda, os);
    }
  }
  return success();
}

void printCudaSignatures(LayerPlan &plan, bool instantiate, llvm::raw_ostream &os) {
  auto print = [&](StringRef type, StringRef index) {
    std::string t = type.str(), i = index.str();
    std::string params = "const ::hector::emit::GraphView<" + i + "> &, const " + t +
                         " *const *, " + t + " *const *, const " + i + " *const *";
    std::string prefix = instantiate ? "template " : "template <typename T, typename I> ";
    std::string args = instantiate ? "<" + t + ", " + i + ">" : "";
    for (const Kernel &kernel : plan.kernels)
      if (kernel.kind != KernelKind::Glue)
        os << prefix << "std::size_t " << kernel.name << "_workspace" << args << "(" << params
           << ");\n"
           << prefix << "cudaError_t " << kernel.name << args << "(" << params
           << ", void *, std::size_t, cudaStream_t, bool);\n";
  };
  if (!instantiate) {
    print("T", "I");
    return;
  }
  // bfloat16 and float16 calls run on 16-bit rows on CUDA too.
  const StringRef types[] = {"float", "double", "c10::BFloat16", "c10::Half"};
  for (StringRef type : types)
    print(type, "std::int32_t");
  os << "#ifdef HECTOR_INDEX64\n";
  for (StringRef type : types)
    print(type, "std::int64_t");
  os << "#endif\n";
}

} // namespace emit
} // namespace hector
