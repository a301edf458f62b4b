//===- GlueOps.cpp - The ATen code of glue ops ----------------------------===//
//
// Prints the top-level ops the glue computes with ATen instead of a kernel: work of O(weights)
// or O(R, T) size (weight products and their gradients, linear maps of relation, node-type or
// unsliced rows, elementwise ops on such rows), sums of trailing dimensions, the gradient of a
// max aggregation, and the weight gradient of src_row. Deterministic (no atomics) on the CPU and
// CUDA, except src_row's gradient on CUDA (index_add_ adds with atomics there).
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

using namespace mlir;

namespace hector {
namespace emit {

/// The glue's shape of a top-level value or weight: {rows, dims...} / {slices, dims...}.
static std::string tensorShape(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return shapeList(graphRows(value.getSpace()), value.getDims());
  auto weight = cast<WeightType>(type);
  return shapeList(sliceCount(weight.getSlicing()), weight.getDims());
}

/// Whether a tensor of `type` has a row per slice (a value not in `none` rows, a sliced weight).
static bool isSliced(Type type) {
  if (auto value = dyn_cast<ValueType>(type))
    return value.getSpace() != Space::None;
  return cast<WeightType>(type).getSlicing() != Slicing::None;
}

/// `{v0, v1, ...}`.
static std::string intList(ArrayRef<int64_t> values) {
  std::string out = "{";
  for (int64_t v : values)
    out += (out.size() > 1 ? ", " : "") + std::to_string(v);
  return out + "}";
}

namespace {

/// Prints one glue op: its result tensor assigned from a lambda, called at once, that returns
/// the result computed with ATen.
class GlueOpPrinter {
public:
  GlueOpPrinter(const LayerPlan &plan, Operation *op, llvm::raw_ostream &os)
      : plan(plan), op(op), result(op->getResult(0)), shape(tensorShape(result.getType())), os(os) {
    for (Value operand : op->getOperands())
      mixed |= isWide(plan, operand) != isWide(plan, result);
  }

  /// Prints `<result> = [&] { ... }();`. An op whose operands and result are not all in one
  /// storage (wide values beside 16-bit ones) computes on the operands in the accumulation type
  /// and stores its result in its own.
  void print() {
    os << "  " << plan.tensors.lookup(result) << " = ";
    if (mixed)
      os << "::hector::emit::toDtype(";
    os << "[&] {\n";
    if (auto grad = dyn_cast<AggregateGradOp>(op))
      printMaxAggregateGrad(grad);
    else if (auto gemm = dyn_cast<GemmOp>(op))
      printLinearMap(gemm);
    else if (auto grad = dyn_cast<WeightGradOp>(op))
      printLinearMapGrad(grad);
    else if (isa<SplitHeadsOp, MergeHeadsOp>(op))
      os << "    return " << in(0) << ".reshape(" << shape << ").contiguous();\n";
    else if (isa<DotOp, ConcatOp, NarrowOp>(op))
      printLastDimension();
    else if (auto constant = dyn_cast<ConstantOp>(op))
      os << "    return at::full(" << shape << ", "
         << literal(constant.getValue().convertToDouble()) << ", opts);\n";
    else if (isa<WeightAddOp>(op))
      os << "    return at::add(" << in(0) << ", " << in(1) << ");\n";
    else if (auto grad = dyn_cast<WeightMatmulGradOp>(op))
      printWeightProductGrad(grad);
    else if (isa<WeightDotOp, WeightDotGradOp>(op))
      printWeightDot();
    else if (auto reduce = dyn_cast<ReduceOp>(op))
      printTrailingSum(reduce);
    else if (auto grad = dyn_cast<SrcRowGradOp>(op))
      printSrcRowGrad(grad);
    else
      printElementwise();
    os << "  }()";
    if (mixed)
      os << ", " << (isWide(plan, result) ? "wideType" : "c10::CppTypeToScalarType<T>::value") << ")";
    os << ";\n";
  }

private:
  const LayerPlan &plan;
  Operation *op;
  Value result;
  /// The result's glue shape (tensorShape).
  std::string shape;
  llvm::raw_ostream &os;

  /// Whether the operands and the result are not all in one storage.
  bool mixed = false;

  /// The glue's tensor of operand `i` (in the accumulation type where the op is mixed).
  std::string in(unsigned i) const {
    std::string name = plan.tensors.lookup(op->getOperand(i));
    return mixed ? "::hector::emit::toDtype(" + name + ", wideType)" : name;
  }

  /// The elements of a row (or slice) of `v`.
  static int64_t size(Value v) { return numElements(dimsOf(v.getType())); }

  /// aggregate_grad max: the gradient routed to the first maximal edge of each node
  /// (hector::emit::maxAggregateGrad).
  void printMaxAggregateGrad(AggregateGradOp grad) {
    os << "    return ::hector::emit::maxAggregateGrad(" << in(0) << ", " << in(1) << ", "
       << (grad.getBy() == EdgeEnd::Dst ? "graph.sortedDst()" : "graph.sortedSrc()")
       << ", graph.numNodes(), " << size(grad.getInput()) << ").reshape(" << shape
       << ").contiguous();\n";
  }

  /// src_row_grad: the weight gradient of src_row (hector::emit::srcRowGrad).
  void printSrcRowGrad(SrcRowGradOp grad) {
    WeightType weight = grad.getResult().getType();
    os << "    return ::hector::emit::srcRowGrad(" << in(0) << ", graph.sortedSrc(), "
       << (weight.getSlicing() == Slicing::Relation ? "graph.sortedEtype()" : "at::Tensor()")
       << ", " << weight.getDims().front() << ", " << size(grad.getGrad()) << ", " << shape
       << ");\n";
  }

  /// A gemm over relation, node-type or unsliced rows.
  void printLinearMap(GemmOp gemm) {
    // A linear map of weight-space rows: [S, heads, 1, K] x [1, heads, K, N] per row.
    LinearShape ls = linearShape(gemm.getB().getType(), gemm.getTransposeB());
    std::string h = std::to_string(ls.heads), k = std::to_string(ls.k), n = std::to_string(ls.n);
    os << "    const at::Tensor a = ::hector::emit::rowView(" << in(0) << ", {" << h << ", " << k
       << "}).unsqueeze(2);\n";
    if (gemm.getTransposeB())
      os << "    const at::Tensor b = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << n
         << ", " << k << "}).transpose(2, 3);\n";
    else
      os << "    const at::Tensor b = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << k
         << ", " << n << "});\n";
    os << "    return at::matmul(a, b).reshape(" << shape << ").contiguous();\n";
  }

  /// A weight_grad over relation, node-type or unsliced rows.
  void printLinearMapGrad(WeightGradOp grad) {
    // dW[h] = sum over the rows s of x[s, h]^T dy[s, h].
    LinearShape ls = linearShape(grad.getResult().getType(), false);
    std::string h = std::to_string(ls.heads), k = std::to_string(ls.k), n = std::to_string(ls.n);
    os << "    const at::Tensor x = ::hector::emit::rowView(" << in(0) << ", {" << h << ", " << k
       << "}).permute({1, 2, 0});\n"
       << "    const at::Tensor dy = ::hector::emit::rowView(" << in(1) << ", {" << h << ", " << n
       << "}).permute({1, 0, 2});\n"
       << "    return at::matmul(x, dy).reshape(" << shape << ").contiguous();\n";
  }

  /// dot, narrow and concat, which work on the last dimension.
  void printLastDimension() {
    // On the rows of the result's space, every operand viewed as [rows, P, last dimension]
    // (P: the product of the other dimensions, the same for all operands).
    std::string rows = graphRows(spaceOf(result));
    auto view = [&](unsigned i) {
      ArrayRef<int64_t> dims = dimsOf(op->getOperand(i).getType());
      int64_t m = numElements(dims), last = dims.empty() ? 1 : dims.back();
      return "::hector::emit::broadcastRows(" + in(i) + ", " + std::to_string(m) + ", " + rows +
             ", " + std::to_string(m) + ").reshape({" + rows + ", " + std::to_string(m / last) +
             ", " + std::to_string(last) + "})";
    };
    if (isa<DotOp>(op)) {
      os << "    return (" << view(0) << " * " << view(1) << ").sum(2).reshape(" << shape
         << ").contiguous();\n";
    } else if (auto narrow = dyn_cast<NarrowOp>(op)) {
      os << "    return " << view(0) << ".narrow(2, " << narrow.getOffset() << ", "
         << dimsOf(result.getType()).back() << ").reshape(" << shape << ").contiguous();\n";
    } else {
      os << "    return at::cat({";
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        os << (i ? ", " : "") << view(i);
      os << "}, 2).reshape(" << shape << ").contiguous();\n";
    }
  }

  /// weight_matmul_grad: the gradient of a weight product with respect to one operand.
  void printWeightProductGrad(WeightMatmulGradOp grad) {
    ArrayRef<int64_t> r = dimsOf(result.getType()), o = dimsOf(grad.getOther().getType());
    bool rhs = grad.getRhs();
    int64_t m = rhs ? numElements(o.drop_back()) : numElements(r.drop_back());
    int64_t k = rhs ? o.back() : r.back();
    int64_t n = rhs ? numElements(r.drop_front()) : numElements(o.drop_front());
    os << "    const at::Tensor g = ::hector::emit::rowView(" << in(0) << ", {" << m << ", " << n
       << "});\n";
    if (rhs)
      os << "    at::Tensor r = at::matmul(::hector::emit::rowView(" << in(1) << ", {" << m << ", "
         << k << "}).transpose(1, 2), g);\n";
    else
      os << "    at::Tensor r = at::matmul(g, ::hector::emit::rowView(" << in(1) << ", {" << k
         << ", " << n << "}).transpose(1, 2));\n";
    if (!isSliced(result.getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  }

  /// weight_dot and weight_dot_grad.
  void printWeightDot() {
    // lhs [p..., s..., d] (P x Q x D), rhs [s..., d] (Q x D), result [p..., s...] (P x Q).
    auto dotGrad = dyn_cast<WeightDotGradOp>(op);
    Type lhsType = dotGrad ? (dotGrad.getRhs() ? dotGrad.getOther().getType() : result.getType())
                           : op->getOperand(0).getType();
    Type rhsType = dotGrad ? (dotGrad.getRhs() ? result.getType() : dotGrad.getOther().getType())
                           : op->getOperand(1).getType();
    int64_t d = dimsOf(rhsType).back();
    int64_t q = numElements(dimsOf(rhsType)) / d;
    int64_t p = numElements(dimsOf(lhsType)) / (q * d);
    std::string lhs4 = intList({p, q, d}), rhs4 = intList({1, q, d});
    if (!dotGrad) {
      os << "    at::Tensor r = (::hector::emit::rowView(" << in(0) << ", " << lhs4
         << ") * ::hector::emit::rowView(" << in(1) << ", " << rhs4 << ")).sum(-1);\n";
    } else if (!dotGrad.getRhs()) {
      os << "    at::Tensor r = ::hector::emit::rowView(" << in(0) << ", " << intList({p, q, 1})
         << ") * ::hector::emit::rowView(" << in(1) << ", " << rhs4 << ");\n";
    } else {
      os << "    at::Tensor r = (::hector::emit::rowView(" << in(0) << ", " << intList({p, q, 1})
         << ") * ::hector::emit::rowView(" << in(1) << ", " << lhs4 << ")).sum(1);\n";
    }
    if (dotGrad && !isSliced(result.getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  }

  /// A reduce that keeps the rows (or sums the few rows of relations, node types), summing
  /// trailing dimensions.
  void printTrailingSum(ReduceOp reduce) {
    int64_t n = numElements(dimsOf(result.getType()));
    os << "    at::Tensor r = ::hector::emit::rowView(" << in(0) << ", {" << n << ", "
       << size(reduce.getInput()) / n << "}).sum(2);\n";
    if (!isSliced(result.getType()) && isSliced(reduce.getInput().getType()))
      os << "    r = r.sum(0);\n";
    os << "    return r.reshape(" << shape << ").contiguous();\n";
  }

  /// The elementwise ops and their gradients.
  void printElementwise() {
    // Elementwise on the rows of the result's space (operands: the same rows or one row).
    int64_t n = size(result);
    std::string rows = graphRows(spaceOf(result));
    auto operand = [&](unsigned i) {
      return "::hector::emit::broadcastRows(" + in(i) + ", " +
             std::to_string(size(op->getOperand(i))) + ", " + rows + ", " + std::to_string(n) + ")";
    };
    std::string expr;
    if (isa<AddOp, SubOp, MulOp, DivOp>(op)) {
      const char *fn = isa<AddOp>(op)   ? "add"
                       : isa<SubOp>(op) ? "sub"
                       : isa<MulOp>(op) ? "mul"
                                        : "div";
      expr = std::string("at::") + fn + "(" + operand(0) + ", " + operand(1) + ")";
    } else if (auto leaky = dyn_cast<LeakyReluOp>(op)) {
      expr =
          "at::leaky_relu(" + operand(0) + ", " + literal(leaky.getSlope().convertToDouble()) + ")";
    } else if (auto grad = dyn_cast<LeakyReluGradOp>(op)) {
      // Operands (g, x): g where x > 0, else slope * g (emit::ops::leakyReluGrad).
      expr = "at::leaky_relu_backward(" + operand(0) + ", " + operand(1) + ", " +
             literal(grad.getSlope().convertToDouble()) + ", false)";
    } else if (isa<GeluGradOp>(op)) {
      expr = "at::gelu_backward(" + operand(0) + ", " + operand(1) + ", \"none\")";
    } else {
      // neg, and the functions of one operand (UnaryFunction): ATen's function of the mnemonic.
      expr = "at::" + op->getName().stripDialect().str() + "(" + operand(0) + ")";
    }
    os << "    return " << expr << ".reshape(" << shape << ").contiguous();\n";
  }
};

} // namespace

void printGlueOp(LayerPlan &plan, const Kernel &kernel, llvm::raw_ostream &os) {
  GlueOpPrinter(plan, kernel.op, os).print();
}

} // namespace emit
} // namespace hector
