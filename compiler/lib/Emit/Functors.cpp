//===- Functors.cpp - Traversal bodies as functors ------------------------===//
//
// Prints the functor of a traversal that the edge, node and pair traversal templates call:
// every body value becomes a row array (or a pointer into a table) of compile-time length,
// computed once per scope; the aggregates of a node traversal are kept in registers over its
// passes. The same functor serves the CPU and CUDA kernels.
//
//===----------------------------------------------------------------------===//
#include "EmitterInternal.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <tuple>

using namespace mlir;

namespace hector {
namespace emit {

namespace {

/// Prints the functor of one traversal: every body value becomes a row array (or a pointer
/// into a table) of compile-time length, computed once per scope.
class FunctorPrinter {
public:
  /// `inTypes` / `outTypes`: the element type of each operand and result ("T" where empty).
  FunctorPrinter(TraversalOp op, StringRef name, llvm::raw_ostream &os,
                 ArrayRef<std::string> inTypes = {}, ArrayRef<std::string> outTypes = {})
      : op(op), name(name), os(os), body(op.getBodyRegion().front()),
        inTypes(inTypes.begin(), inTypes.end()), outTypes(outTypes.begin(), outTypes.end()) {
    nodeKind = op.getKind() == TraversalKind::Node;
    pairSpace = pairSpaceOf(op);
    pairSums = pairSumSpaceOf(op);
    for (Operation &inner : body)
      if (isAccumulated(&inner)) {
        aggregateIndex[&inner] = aggregates.size();
        aggregates.push_back(&inner);
        if (auto agg = dyn_cast<AggregateOp>(inner))
          by = agg.getBy();
      }
    for (Operation *agg : aggregates)
      numPasses = std::max(numPasses, passOf(agg) + 1);
  }

  /// Passes over the edges of each node (node traversals).
  int passes() const { return numPasses; }
  /// The end of the edges a node traversal reduces by (the CSR it walks).
  EdgeEnd reducesBy() const { return by; }

  /// Prints the functor. Its index members (the graph arrays the body reads) are the line
  /// kIndexMembers, which the caller replaces (printFunctor).
  LogicalResult print() {
    os << "template <typename T, typename I> struct " << name << "_f {\n"
       << "  using A = ::hector::tmpl::AccumType<T>;\n";
    for (unsigned i = 0; i < op.getInputs().size(); ++i)
      os << "  const " << inType(i) << " *in" << i << ";\n";
    for (unsigned i = 0; i < op.getNumResults(); ++i)
      os << "  " << outType(i) << " *out" << i << ";\n";
    os << kIndexMembers;
    return nodeKind ? printNode() : printEdge();
  }

  /// The placeholder of the index members in print()'s output.
  static constexpr const char *kIndexMembers = "  @index-members@\n";

  /// The unique pairs a node traversal runs over (its body's pair sums), or std::nullopt.
  std::optional<Space> pairSumSpace() const { return pairSums; }

private:
  TraversalOp op;
  StringRef name;
  llvm::raw_ostream &os;
  Block &body;
  /// The element types of the operands and results (see the constructor).
  std::vector<std::string> inTypes, outTypes;

  std::string inType(unsigned i) const { return i < inTypes.size() ? inTypes[i] : "T"; }
  std::string outType(unsigned i) const { return i < outTypes.size() ? outTypes[i] : "T"; }
  bool nodeKind;
  /// An edge traversal over the unique pairs of this space (e is the pair's row, src = dst its
  /// node).
  std::optional<Space> pairSpace;
  /// A node traversal over the unique pairs of this space (v is the pair's row, e its member
  /// edge; src and dst are read from the edge).
  std::optional<Space> pairSums;
  EdgeEnd by = EdgeEnd::Dst;
  /// The reductions kept in registers: hector.aggregate ops, or the pair sums.
  SmallVector<Operation *> aggregates;
  llvm::DenseMap<Operation *, unsigned> aggregateIndex;
  llvm::DenseMap<Operation *, int> passMemo;
  int numPasses = 0;

  // The current scope: memoised values, node variables, emitted text.
  std::map<std::pair<const void *, std::string>, std::string> memo;
  std::string srcVar, dstVar, indent;
  /// The aggregates of passes before this one are finished (their state is readable).
  int readablePasses = 0;
  /// While the edge() of a node traversal is printed: the table rows it reads per edge
  /// (operand, row expression, elements), which prefetch() loads ahead.
  bool collectEdgeRows = false;
  std::vector<std::tuple<unsigned, std::string, int64_t>> edgeRows;
  unsigned counter = 0;
  bool failedScope = false;

  /// Whether `op` accumulates over the edges of the traversal's node or pair.
  static bool isAccumulated(Operation *op) {
    if (auto reduce = dyn_cast_or_null<ReduceOp>(op))
      return reduce.isPairSum();
    return isa_and_nonnull<AggregateOp>(op);
  }

  /// 1 + the latest pass of the aggregates `agg`'s operand depends on (0 when none).
  int passOf(Operation *agg) {
    auto it = passMemo.find(agg);
    if (it != passMemo.end())
      return it->second;
    int pass = 0;
    llvm::DenseSet<Value> seen;
    std::function<void(Value)> walk = [&](Value v) {
      if (!seen.insert(v).second)
        return;
      Operation *def = v.getDefiningOp();
      if (!def)
        return;
      if (isAccumulated(def)) {
        pass = std::max(pass, passOf(def) + 1);
        return;
      }
      for (Value operand : def->getOperands())
        walk(operand);
    };
    walk(agg->getOperand(0));
    passMemo[agg] = pass;
    return pass;
  }

  /// Starts a scope of printed code: nothing memoised, the node variables of the source and
  /// destination, the indentation, and how many passes are finished (their aggregates readable).
  void beginScope(std::string src, std::string dst, std::string ind, int readable) {
    memo.clear();
    srcVar = std::move(src);
    dstVar = std::move(dst);
    indent = std::move(ind);
    readablePasses = readable;
  }

  /// A new variable name.
  std::string fresh() { return "v" + std::to_string(counter++); }
  /// The pointers to stored rows in the code printed so far, with their element types (T, or A
  /// for a wide operand); every other array holds the accumulation type A.
  std::map<std::string, std::string> storedRows;

  /// The elements of a row of `v`.
  static int64_t sizeOf(Value v) { return numElements(cast<ValueType>(v.getType()).getDims()); }

  /// The row expression of a table in `space` read at context `ctx` (a node variable, or "e").
  std::string rowOf(Space space, const std::string &ctx) {
    if (pairSpace &&
        (space == Space::Src || space == Space::Dst || space == Space::Edge ||
         ((space == Space::UniqueSrc || space == Space::UniqueDst) && space != *pairSpace))) {
      op.emitError() << "a traversal over " << stringifySpace(*pairSpace)
                     << " pairs cannot read rows indexed by " << stringifySpace(space);
      failedScope = true;
      return "0";
    }
    if (pairSpace && space == *pairSpace)
      return "e";
    switch (space) {
    case Space::Node:
      return ctx;
    case Space::NType:
      return "ntype[" + ctx + "]";
    case Space::Src:
    case Space::Dst:
    case Space::Edge:
      return "e";
    case Space::Relation:
      return "rel";
    case Space::None:
      return "0";
    case Space::UniqueSrc:
      return "uinvSrc[e]";
    case Space::UniqueDst:
      return "uinvDst[e]";
    }
    llvm_unreachable("unknown space");
  }

  /// A loop header over `n` elements.
  std::string loop(int64_t n) {
    return indent + "for (std::int64_t i = 0; i < " + std::to_string(n) + "; ++i)\n";
  }

  /// The name of an indexable array holding `v`'s row at context `ctx`, printing the code that
  /// computes it into the current scope on first use.
  std::string eval(Value v, const std::string &ctx) {
    auto key = std::make_pair(v.getAsOpaquePointer(), ctx);
    auto it = memo.find(key);
    if (it != memo.end())
      return it->second;
    std::string result = compute(v, ctx);
    memo[key] = result;
    return result;
  }

  /// Prints the code that computes `v`'s row at context `ctx` into the current scope and
  /// returns the name of the array (or pointer) that holds it.
  std::string compute(Value v, const std::string &ctx) {
    int64_t n = sizeOf(v);
    if (auto arg = dyn_cast<BlockArgument>(v))
      return readRow(arg, n, ctx);
    Operation *def = v.getDefiningOp();
    if (auto src = dyn_cast<SrcOp>(def))
      return eval(src.getInput(), srcVar);
    if (auto dst = dyn_cast<DstOp>(def))
      return eval(dst.getInput(), dstVar);
    if (auto expand = dyn_cast<UniqueExpandOp>(def))
      return eval(expand.getInput(), "e");
    if (auto gather = dyn_cast<UniqueGatherOp>(def))
      return eval(gather.getInput(), gather.getSide() == EdgeEnd::Src ? srcVar : dstVar);
    if (isa<SplitHeadsOp, MergeHeadsOp>(def))
      return eval(def->getOperand(0), ctx);
    if (auto row = dyn_cast<SrcRowOp>(def))
      return computeSrcRow(row, ctx);
    if (isAccumulated(def)) {
      if (ctx != "v" || passOf(def) >= readablePasses) {
        def->emitError("this reduction is read where its value is not available in the "
                       "traversal (it must be materialised by the lowering)");
        failedScope = true;
      }
      return "s.g" + std::to_string(aggregateIndex.lookup(def));
    }
    std::string name = fresh();
    if (auto constant = dyn_cast<ConstantOp>(def)) {
      os << indent << "const A " << name << "[1] = {A("
         << literal(constant.getValue().convertToDouble()) << ")};\n";
      return name;
    }
    os << indent << "A " << name << "[" << n << "];\n";
    if (isa<AddOp, SubOp, MulOp, DivOp>(def))
      computeBinary(def, name, n, ctx);
    else if (isa<NegOp, LeakyReluOp>(def) || def->hasTrait<OpTrait::UnaryFunction>())
      computeUnary(def, name, n, ctx);
    else if (isa<LeakyReluGradOp, GeluGradOp>(def))
      computeActivationGrad(def, name, n, ctx);
    else if (auto reduce = dyn_cast<ReduceOp>(def))
      computeRowSum(reduce, name, n, ctx);
    else if (auto narrow = dyn_cast<NarrowOp>(def))
      computeNarrow(narrow, name, n, ctx);
    else if (auto aggGrad = dyn_cast<AggregateGradOp>(def))
      computeMeanGrad(aggGrad, name, n);
    else if (auto dot = dyn_cast<DotOp>(def))
      computeDot(dot, name, n, ctx);
    else if (auto concat = dyn_cast<ConcatOp>(def))
      computeConcat(concat, name, n, ctx);
    else {
      def->emitError("cannot emit this op in a traversal body");
      failedScope = true;
    }
    return name;
  }

  /// A pointer to the row of input table `arg` at context `ctx` (rows of `n` elements). While
  /// the edge() of a node traversal is printed, the rows prefetch() should load are recorded.
  std::string readRow(BlockArgument arg, int64_t n, const std::string &ctx) {
    std::string name = fresh();
    Space space = cast<ValueType>(arg.getType()).getSpace();
    std::string row = rowOf(space, ctx);
    std::string type = inType(arg.getArgNumber());
    os << indent << "const " << type << " *" << name << " = in" << arg.getArgNumber() << " + ("
       << row << ") * " << n << ";\n";
    storedRows[name] = type;
    // Rows that change from edge to edge in no particular order are loaded ahead: not the
    // traversal's node, a relation or a single row, nor an edge's own row where the CSR
    // visits the edges in order (by destination). An edge traversal visits positions in
    // order, by destination: its edge rows, destination rows and (destination, relation)
    // pair rows are streams.
    bool inOrder =
        nodeKind ? row == "e" && !(pairSums ? *pairSums == Space::UniqueSrc : by == EdgeEnd::Src)
                 : row == "e" || row == "dst" || row == "uinvDst[e]";
    if (collectEdgeRows && row != "v" && row != "rel" && row != "0" && !inOrder &&
        row.rfind("ntype[", 0) != 0) {
      auto entry = std::make_tuple(arg.getArgNumber(), row, n);
      if (llvm::find(edgeRows, entry) == edgeRows.end())
        edgeRows.push_back(entry);
    }
    return name;
  }

  /// src_row: a pointer to row `src` of the table (the edge's relation's slice, or the one
  /// table): the weight-row gather of a featureless input, fused into the traversal. The glue
  /// checks that the graph's node ids are rows of the table.
  std::string computeSrcRow(SrcRowOp row, const std::string &ctx) {
    if (srcVar.empty()) {
      row.emitError("src_row is read where the traversal has no edge");
      failedScope = true;
      return "0";
    }
    std::string table = eval(row.getInput(), ctx);
    std::string name = fresh();
    int64_t n = sizeOf(row.getResult());
    auto stored = storedRows.find(table);
    std::string type = stored != storedRows.end() ? stored->second : "T";
    os << indent << "const " << type << " *" << name << " = " << table << " + std::int64_t("
       << srcVar << ") * " << n << ";\n";
    storedRows[name] = type;
    // The rows of a node traversal's edges are scattered in the table, as node rows read
    // through src are: prefetch() loads them ahead (not where the source is the traversal's
    // node).
    auto arg = dyn_cast<BlockArgument>(row.getInput());
    if (collectEdgeRows && arg && srcVar != "v") {
      auto type = cast<ValueType>(arg.getType());
      std::string rowExpr = type.getSpace() == Space::Relation
                                ? "rel * " + std::to_string(type.getDims().front()) + " + " + srcVar
                                : srcVar;
      auto entry = std::make_tuple(arg.getArgNumber(), rowExpr, n);
      if (llvm::find(edgeRows, entry) == edgeRows.end())
        edgeRows.push_back(entry);
    }
    return name;
  }

  /// Element i of a row of `n` elements read from `array`, the row of `operand`: an operand
  /// with fewer elements repeats each of them (prefix broadcasting). An element of a stored row
  /// (type T) is converted to the accumulation type A first, so that arithmetic on 16-bit
  /// elements runs in float.
  std::string element(Value operand, const std::string &array, int64_t n) const {
    int64_t m = sizeOf(operand);
    std::string at = m == n ? array + "[i]" : array + "[i / " + std::to_string(n / m) + "]";
    return storedRows.count(array) ? "A(" + at + ")" : at;
  }

  /// add, sub, mul, div: into `name`, a row of `n` elements.
  void computeBinary(Operation *def, const std::string &name, int64_t n, const std::string &ctx) {
    std::string a = eval(def->getOperand(0), ctx), b = eval(def->getOperand(1), ctx);
    const char *sym = isa<AddOp>(def)   ? " + "
                      : isa<SubOp>(def) ? " - "
                      : isa<MulOp>(def) ? " * "
                                        : " / ";
    os << loop(n) << indent << "  " << name << "[i] = " << element(def->getOperand(0), a, n) << sym
       << element(def->getOperand(1), b, n) << ";\n";
  }

  /// neg, leaky_relu and the functions of one operand (UnaryFunction: the emit::ops function of
  /// the op's mnemonic): into `name`, a row of `n` elements.
  void computeUnary(Operation *def, const std::string &name, int64_t n, const std::string &ctx) {
    std::string a = eval(def->getOperand(0), ctx);
    std::string call;
    if (isa<NegOp>(def))
      call = "-" + (storedRows.count(a) ? "A(" + a + "[i])" : a + "[i]");
    else if (auto leaky = dyn_cast<LeakyReluOp>(def))
      call = "::hector::emit::ops::leakyRelu<A>(" + a + "[i], A(" +
             literal(leaky.getSlope().convertToDouble()) + "))";
    else
      call = "::hector::emit::ops::" + def->getName().stripDialect().str() + "<A>(" + a + "[i])";
    os << loop(n) << indent << "  " << name << "[i] = " << call << ";\n";
  }

  /// The gradients of leaky_relu and gelu (operands g, x): into `name`, a row of `n` elements.
  void computeActivationGrad(Operation *def, const std::string &name, int64_t n,
                             const std::string &ctx) {
    std::string g = eval(def->getOperand(0), ctx), x = eval(def->getOperand(1), ctx);
    std::string call;
    if (auto leaky = dyn_cast<LeakyReluGradOp>(def))
      call = "::hector::emit::ops::leakyReluGrad<A>(" + element(def->getOperand(0), g, n) + ", " +
             element(def->getOperand(1), x, n) + ", A(" +
             literal(leaky.getSlope().convertToDouble()) + "))";
    else
      call = "::hector::emit::ops::geluGrad<A>(" + element(def->getOperand(0), g, n) + ", " +
             element(def->getOperand(1), x, n) + ")";
    os << loop(n) << indent << "  " << name << "[i] = " << call << ";\n";
  }

  /// A row-local reduce: sums trailing dimensions (and forgets the edge end of src/dst rows).
  void computeRowSum(ReduceOp reduce, const std::string &name, int64_t n, const std::string &ctx) {
    std::string a = eval(reduce.getInput(), ctx);
    int64_t ratio = sizeOf(reduce.getInput()) / n;
    os << loop(n) << indent << "  " << name << "[i] = ::hector::emit::ops::sum<A, " << ratio << ">("
       << a << " + i * " << ratio << ");\n";
  }

  /// narrow: a range of the last dimension, into `name`, a row of `n` elements.
  void computeNarrow(NarrowOp narrow, const std::string &name, int64_t n, const std::string &ctx) {
    std::string a = eval(narrow.getInput(), ctx);
    int64_t width = cast<ValueType>(narrow->getResult(0).getType()).getDims().back();
    int64_t inWidth = cast<ValueType>(narrow.getInput().getType()).getDims().back();
    os << indent << "for (std::int64_t r = 0; r < " << n / width << "; ++r)\n"
       << indent << "  for (std::int64_t c = 0; c < " << width << "; ++c)\n"
       << indent << "    " << name << "[r * " << width << " + c] = " << a << "[r * " << inWidth
       << " + " << narrow.getOffset() << " + c];\n";
  }

  /// The gradient of a mean aggregation (the node's gradient over its degree, from the CSR
  /// pointers), into `name`, a row of `n` elements; any other aggregate_grad is an error.
  void computeMeanGrad(AggregateGradOp aggGrad, const std::string &name, int64_t n) {
    bool byDst = aggGrad.getBy() == EdgeEnd::Dst;
    const std::string &node = byDst ? dstVar : srcVar;
    if (aggGrad.getKind() != AggregateKind::Mean || node.empty()) {
      aggGrad->emitError("the gradient of a max aggregation is a kernel of its own, not a "
                         "traversal body op (lower the layer with --hector-lower-to-kernels)");
      failedScope = true;
      return;
    }
    std::string g = eval(aggGrad.getGrad(), node);
    std::string ptr = byDst ? "inPtr" : "outPtr";
    os << indent << "const A " << name << "_deg = A(" << ptr << "[" << node << " + 1] - " << ptr
       << "[" << node << "]);\n"
       << loop(n) << indent << "  " << name << "[i] = " << element(aggGrad.getGrad(), g, n) << " / "
       << name << "_deg;\n";
  }

  /// dot over the last dimension, into `name`, a row of `n` elements.
  void computeDot(DotOp dot, const std::string &name, int64_t n, const std::string &ctx) {
    std::string a = eval(dot.getLhs(), ctx), b = eval(dot.getRhs(), ctx);
    int64_t d = cast<ValueType>(dot.getLhs().getType()).getDims().back();
    os << loop(n) << indent << "  " << name << "[i] = ::hector::emit::ops::dot<A, " << d << ">("
       << a << " + i * " << d << ", " << b << " + i * " << d << ");\n";
  }

  /// concat along the last dimension, into `name`, a row of `n` elements.
  void computeConcat(ConcatOp concat, const std::string &name, int64_t n, const std::string &ctx) {
    int64_t last = cast<ValueType>(concat->getResult(0).getType()).getDims().back();
    int64_t rows = n / last, offset = 0;
    for (Value input : concat.getInputs()) {
      std::string a = eval(input, ctx);
      int64_t width = cast<ValueType>(input.getType()).getDims().back();
      os << indent << "for (std::int64_t r = 0; r < " << rows << "; ++r)\n"
         << indent << "  for (std::int64_t c = 0; c < " << width << "; ++c)\n"
         << indent << "    " << name << "[r * " << last << " + " << offset << " + c] = " << a
         << "[r * " << width << " + c];\n";
      offset += width;
    }
  }

  /// The template's reduction of accumulator `op` (a pair sum is a sum).
  static std::string reduceOp(Operation *op) {
    auto agg = dyn_cast<AggregateOp>(op);
    const char *kind = !agg || agg.getKind() == AggregateKind::Sum ? "kSum"
                       : agg.getKind() == AggregateKind::Mean      ? "kMean"
                                                                   : "kMax";
    return std::string("::hector::tmpl::ReduceOp<::hector::tmpl::Reduce::") + kind + ", A>";
  }

  /// Prints the stores of every yielded value into row `row` of its output.
  void writeResults(const std::string &row) {
    auto yield = cast<YieldOp>(body.getTerminator());
    for (auto [i, value] : llvm::enumerate(yield.getValues())) {
      std::string a = eval(value, nodeKind ? "v" : "e");
      int64_t n = sizeOf(value);
      os << loop(n) << indent << "  out" << i << "[" << row << " * " << n << " + i] = " << a
         << "[i];\n";
    }
  }

  /// Prints the operator() of an edge traversal, over edges or unique pairs, and over edges
  /// the prefetch() of the rows it reads at random (tmpl::cpu::edgeMap calls it a few rows
  /// ahead). Over unique pairs every row is read in pair order: nothing to prefetch.
  LogicalResult printEdge() {
    const char *edgeVars =
        "    const std::int64_t e = er.pos, src = er.src, dst = er.dst, rel = er.rel;\n"
        "    (void)e;\n    (void)src;\n    (void)dst;\n    (void)rel;\n";
    os << "  HECTOR_HD void operator()(const ::hector::tmpl::EdgeRef &er) const {\n" << edgeVars;
    collectEdgeRows = !pairSpace;
    beginScope("src", "dst", "    ", 0);
    writeResults("e");
    collectEdgeRows = false;
    os << "  }\n";
    printPrefetch("const ::hector::tmpl::EdgeRef &er", edgeVars);
    os << "};\n\n";
    return failure(failedScope);
  }

  /// The prefetch(param) of the rows recorded in edgeRows (none: no prefetch()).
  void printPrefetch(const char *param, const std::string &vars) {
    if (edgeRows.empty())
      return;
    os << "  void prefetch(" << param << ") const {\n" << vars;
    for (const auto &[arg, row, n] : edgeRows)
      os << "    ::hector::emit::prefetchRow(in" << arg << " + (" << row << ") * " << n << ", " << n
         << ");\n";
    os << "  }\n";
  }

  /// Prints the State of a node traversal and the protocol of the node traversal templates:
  /// begin, combine, edge (and prefetch), endPass and finish.
  LogicalResult printNode() {
    os << "  struct State {\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    A g" << i << "[" << sizeOf(agg->getResult(0)) << "];\n";
    os << "  };\n";
    os << "  HECTOR_HD void begin(State &s, std::int64_t v) const {\n    (void)s;\n    (void)v;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "      s.g" << i << "[i] = " << reduceOp(agg) << "::identity();\n";
    os << "  }\n";

    // The CUDA traversal splits a node's edges among lanes: each lane's accumulators of a pass
    // are added to another's (a max is a max, a mean a sum until endPass divides it).
    os << "  HECTOR_HD void combine(State &s, const State &o, int pass) const {\n"
       << "    (void)s;\n    (void)o;\n    (void)pass;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    if (pass == " << passOf(agg) << ")\n"
         << "      for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "        s.g" << i << "[i] = " << reduceOp(agg) << "::combine(s.g" << i << "[i], o.g"
         << i << "[i]);\n";
    os << "  }\n";

    bool bySrc = by == EdgeEnd::Src;
    // The variables of one edge, in edge() and prefetch().
    std::string edgeVars;
    if (pairSums)
      // A pair is a run of its node's CSR entries: that node is one end, the neighbour the
      // other.
      edgeVars = std::string("    const std::int64_t e = ce.edge, v = ce.node, rel = etype[e], ") +
                 (*pairSums == Space::UniqueSrc ? "src = ce.csrNode, dst = ce.nbr"
                                                : "src = ce.nbr, dst = ce.csrNode") +
                 ";\n    (void)v;\n    (void)rel;\n    (void)src;\n    (void)dst;\n";
    else
      edgeVars = "    const std::int64_t e = ce.edge, v = ce.node, nbr = ce.nbr, rel = etype[e];\n"
                 "    (void)e;\n    (void)v;\n    (void)nbr;\n    (void)rel;\n";
    os << "  HECTOR_HD void edge(State &s, int pass, const ::hector::tmpl::CsrEdge &ce) const {\n"
       << edgeVars << "    (void)s;\n    (void)pass;\n";
    collectEdgeRows = true;
    for (int pass = 0; pass < numPasses; ++pass) {
      os << "    if (pass == " << pass << ") {\n";
      if (pairSums)
        beginScope("src", "dst", "      ", pass);
      else
        beginScope(bySrc ? "v" : "nbr", bySrc ? "nbr" : "v", "      ", pass);
      for (auto [i, agg] : llvm::enumerate(aggregates)) {
        if (passOf(agg) != pass)
          continue;
        std::string a = eval(agg->getOperand(0), "e");
        os << loop(sizeOf(agg->getResult(0))) << indent << "  s.g" << i << "[i] = " << reduceOp(agg)
           << "::combine(s.g" << i << "[i], " << a << "[i]);\n";
      }
      os << "    }\n";
    }
    os << "  }\n";
    collectEdgeRows = false;
    // The CPU traversals call prefetch() a few edges ahead: the rows an edge reads from node
    // (or pair, or edge) tables through its ends are scattered in memory.
    printPrefetch("const ::hector::tmpl::CsrEdge &ce", edgeVars);

    os << "  HECTOR_HD void endPass(State &s, int pass, std::int64_t v, std::int64_t degree) "
          "const {\n    (void)s;\n    (void)pass;\n    (void)v;\n    (void)degree;\n";
    for (auto [i, agg] : llvm::enumerate(aggregates))
      os << "    if (pass == " << passOf(agg) << ")\n"
         << "      for (std::int64_t i = 0; i < " << sizeOf(agg->getResult(0)) << "; ++i)\n"
         << "        s.g" << i << "[i] = " << reduceOp(agg) << "::finish(s.g" << i
         << "[i], degree);\n";
    os << "  }\n";

    os << "  HECTOR_HD void finish(const State &s, std::int64_t v, std::int64_t degree) const {\n"
       << "    (void)s;\n    (void)degree;\n";
    beginScope("", "", "    ", numPasses);
    writeResults("v");
    os << "  }\n};\n\n";
    return failure(failedScope);
  }
};

} // namespace

int passesOf(TraversalOp op) { return FunctorPrinter(op, "", llvm::nulls()).passes(); }

/// The index members a functor's body reads (of etype, ntype, uinvSrc, uinvDst, inPtr,
/// outPtr) and the GraphView array each is set from.
static const std::pair<const char *, const char *> kFunctorIndexMembers[] = {
    {"etype", "g.sortedEtype"},    {"ntype", "g.ntype"}, {"uinvSrc", "g.uniqueSrcInv"},
    {"uinvDst", "g.uniqueDstInv"}, {"inPtr", "g.inPtr"}, {"outPtr", "g.outPtr"}};

/// Whether `text` uses `name` as an identifier (not as part of a longer one).
static bool mentions(StringRef text, StringRef name) {
  for (size_t at = text.find(name); at != StringRef::npos; at = text.find(name, at + 1)) {
    bool before = at > 0 && (llvm::isAlnum(text[at - 1]) || text[at - 1] == '_');
    size_t end = at + name.size();
    bool after = end < text.size() && (llvm::isAlnum(text[end]) || text[end] == '_');
    if (!before && !after)
      return true;
  }
  return false;
}

/// The functor of `traversal` with the given element types of its operands and results (all T
/// where empty).
static FailureOr<Functor> printFunctorOf(TraversalOp traversal, StringRef name,
                                         ArrayRef<std::string> inTypes,
                                         ArrayRef<std::string> outTypes) {
  Functor f;
  llvm::raw_string_ostream os(f.text);
  FunctorPrinter printer(traversal, name, os, inTypes, outTypes);
  if (failed(printer.print()))
    return failure();
  f.passes = printer.passes();
  f.by = printer.reducesBy();
  f.pairSums = printer.pairSumSpace();
  std::string body = f.text;
  std::string decl;
  for (const auto &member : kFunctorIndexMembers)
    if (mentions(body, member.first)) {
      f.members.push_back(member);
      decl += std::string("  const I *") + member.first + ";\n";
    }
  size_t at = f.text.find(FunctorPrinter::kIndexMembers);
  f.text.replace(at, std::strlen(FunctorPrinter::kIndexMembers), decl);
  return f;
}

FailureOr<Functor> printFunctor(TraversalOp traversal, StringRef name) {
  return printFunctorOf(traversal, name, {}, {});
}

FailureOr<Functor> printFunctor(const LayerPlan &plan, TraversalOp traversal, StringRef name) {
  std::vector<std::string> inTypes, outTypes;
  for (Value operand : traversal.getInputs())
    inTypes.push_back(elementTypeOf(plan, operand));
  for (Value result : traversal->getResults())
    outTypes.push_back(elementTypeOf(plan, result));
  return printFunctorOf(traversal, name, inTypes, outTypes);
}

} // namespace emit
} // namespace hector
