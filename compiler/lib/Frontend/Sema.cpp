//===- Sema.cpp - Semantic analysis of the model language -----------------===//
//
// Walks each layer's statements in order with a scope of names. Expressions are checked in a
// context (constant, weight, node statement, edge statement) and emitted as Instrs in SSA order;
// constant subexpressions fold. Sub-layers are inlined: an instance declaration creates the
// sub-layer's weights (prefixed "inst."), each call inlines its value statements. A failed
// definition binds its name to a poison value, which silences everything that uses it.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Sema.h"

#include "hector/Dialect/SpaceRules.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace hector {
namespace frontend {

bool isPerEdge(Space space) { return spaces::isPerEdge(space); }

std::optional<Space> joinSpaces(Space a, Space b) { return spaces::join(a, b); }

namespace {

/// Where an expression is evaluated.
enum class Ctx {
  Const, ///< dimensions, parameter values, constant arguments: parameters and numbers only
  Node,  ///< a node statement (or a node input of a sub-layer call)
  Edge,  ///< an edge statement, or the argument of an aggregation
};

/// The result of checking an expression.
struct Val {
  enum class Kind { Poison, Const, Value, Weight };
  Kind kind = Kind::Poison;
  double number = 0.0; ///< Const
  int instr = -1;      ///< Value, Weight
  Space space = Space::None;
  Slicing slicing = Slicing::None;
  Shape shape;

  bool poisoned() const { return kind == Kind::Poison; }
  static Val constant(double v) {
    Val val;
    val.kind = Kind::Const;
    val.number = v;
    return val;
  }
};

struct Instance;

/// What a name in a layer's scope stands for.
struct Sym {
  enum class Kind { Param, Value, Weight, Instance, Poison };
  Kind kind = Kind::Poison;
  bool isHeads = false; ///< Param declared with `heads`
  bool isEdge = false;  ///< Value: an edge input or edge statement
  Val val;
  std::shared_ptr<Instance> inst;
  SourceLoc loc;
};

/// A declared input of a sub-layer instance.
struct InstanceInput {
  std::string name;
  bool isEdge = false;
  Shape shape;
};

/// A sub-layer instance: its layer, bound parameters, weights and nested instances.
struct Instance {
  const Layer *layer = nullptr;
  std::string name;
  std::string prefix;
  std::map<std::string, Sym> syms;
  std::vector<InstanceInput> inputs;
  bool poisoned = false;
};

/// One layer body being walked.
struct Scope {
  const Layer *layer = nullptr;
  std::string prefix;
  std::map<std::string, Sym> syms;
  bool topLevel = true;
  Instance *inst = nullptr;               ///< Declare phase: the instance being filled
  const std::vector<Val> *args = nullptr; ///< Call phase: the input values
  size_t nextArg = 0;
  std::vector<Val> outputs; ///< Call phase
};

enum class Phase {
  Whole,   ///< a top-level layer: every statement
  Declare, ///< a sub-layer instance: params, inputs' shapes, weights, nested instances
  Call,    ///< a sub-layer call: inputs, value statements, outputs
};

/// The OpKind of the elementwise function `name` (UnaryFunctions.def), if it is one.
std::optional<OpKind> unaryFunctionKind(const std::string &name) {
  static const std::map<std::string, OpKind> kinds = {
#define HECTOR_UNARY_FUNCTION(kind, spelling) {spelling, OpKind::kind},
#include "hector/Frontend/UnaryFunctions.def"
  };
  auto it = kinds.find(name);
  return it == kinds.end() ? std::nullopt : std::optional<OpKind>(it->second);
}

const std::set<std::string> &builtinNames() {
  static const std::set<std::string> names = {
#define HECTOR_UNARY_FUNCTION(kind, spelling) spelling,
#include "hector/Frontend/UnaryFunctions.def"
      "leaky_relu", "dot",     "linear", "concat",      "matmul",      "sum",    "mean",
      "max",        "softmax", "sqrt",   "split_heads", "merge_heads", "src_row"};
  return names;
}

std::string shapeStr(const Shape &s) { return shapeString(s); }

std::string plural(size_t n, const char *word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

/// How a value's space reads in a message.
std::string describeSpace(Space s) {
  switch (s) {
  case Space::Node:
    return "a node value";
  case Space::NType:
    return "a per-node-type value";
  case Space::Relation:
    return "a per-relation value";
  case Space::None:
    return "a value that is the same everywhere (constants, unsliced weights)";
  default:
    return "an edge value";
  }
}

class Sema {
public:
  Sema(const std::string &file, const Module &module, DiagnosticEngine &diags,
       const FrontendOptions &options)
      : file(file), module(module), diags(diags), options(options) {}

  std::optional<CheckedModule> run() {
    for (const std::string &name : module.poisonedLayers)
      poisonedLayerNames.insert(name);
    for (const Layer &layer : module.layers) {
      auto it = layerByName.find(layer.name);
      if (it != layerByName.end()) {
        error(layer.loc, "redefinition of layer '" + layer.name + "'");
        diags.note(it->second->loc, "previous definition is here");
        continue;
      }
      layerByName[layer.name] = &layer;
    }
    for (const Layer &layer : module.layers) {
      if (diags.limitReached())
        break;
      checkLayer(layer);
    }
    // Every override must name a parameter of some layer.
    std::set<std::string> declared;
    for (const Layer &layer : module.layers)
      for (const Param &p : layer.params)
        declared.insert(p.name);
    for (const auto &[name, value] : options.paramOverrides)
      if (!declared.count(name))
        error(SourceLoc{file, 0, 0},
              "parameter '" + name + "' is set on the command line but no layer declares it");
    if (errorsReported || diags.hasErrors())
      return std::nullopt;
    CheckedModule result;
    for (const Layer &layer : module.layers)
      result.layers.push_back(states[&layer].checked);
    return result;
  }

private:
  const std::string &file;
  const Module &module;
  DiagnosticEngine &diags;
  const FrontendOptions &options;

  std::map<std::string, const Layer *> layerByName;
  std::set<std::string> poisonedLayerNames;

  struct LayerState {
    enum class State { Unchecked, InProgress, Done };
    State state = State::Unchecked;
    bool ok = false;
    size_t numOutputs = 0;
    unsigned height = 0; ///< sub-layer nesting: 0 without instances
    CheckedLayer checked;
  };
  std::map<const Layer *, LayerState> states;
  std::vector<const Layer *> checkStack;

  // The layer being emitted.
  std::vector<Instr> *instrs = nullptr;
  /// What the current edge context is, for messages: an edge statement, or an aggregation's
  /// argument inside a node statement.
  std::string edgeContext = "an edge statement";
  std::map<std::pair<int, int>, int> memo; ///< (op kind, operand) -> Src/Dst/Slice instr
  const Layer *currentTop = nullptr;
  bool aborted = false;
  /// Instantiation context: a note for each sub-layer instance or call being walked.
  std::vector<std::pair<SourceLoc, std::string>> notes;
  /// How many sub-layer instances deep the current declaration is.
  unsigned instanceDepth = 0;
  /// The current top-level layer's nesting height, and whether it uses a failed layer.
  unsigned height = 0;
  bool usesFailedLayer = false;
  unsigned errorsReported = 0;

  //===--------------------------------------------------------------------===//
  // Diagnostics and emission
  //===--------------------------------------------------------------------===//

  void error(const SourceLoc &loc, const std::string &message) {
    ++errorsReported;
    diags.error(loc, message);
    for (auto it = notes.rbegin(); it != notes.rend(); ++it)
      diags.note(it->first, it->second);
  }

  int emit(Instr instr) {
    if (instrs->size() >= kMaxLayerInstrs && !aborted) {
      aborted = true;
      // About the whole layer: no instantiation notes.
      ++errorsReported;
      diags.error(currentTop->loc, "layer '" + currentTop->name + "' is too large: more than " +
                                       std::to_string(kMaxLayerInstrs) +
                                       " operations after inlining its sub-layers");
    }
    instrs->push_back(std::move(instr));
    return static_cast<int>(instrs->size() - 1);
  }

  Val valueOf(int index) {
    const Instr &in = (*instrs)[index];
    Val v;
    v.kind = in.isWeight ? Val::Kind::Weight : Val::Kind::Value;
    v.instr = index;
    v.space = in.space;
    v.slicing = in.slicing;
    v.shape = in.shape;
    return v;
  }

  Val emitValue(OpKind kind, std::vector<int> operands, Space space, Shape shape,
                const SourceLoc &loc) {
    Instr in;
    in.kind = kind;
    in.operands = std::move(operands);
    in.space = space;
    in.shape = std::move(shape);
    in.loc = loc;
    return valueOf(emit(std::move(in)));
  }

  /// Turns a constant or weight into a value instr (Constant, Slice); poison if impossible.
  Val materialize(Val v, const SourceLoc &loc) {
    if (v.kind == Val::Kind::Const) {
      Instr in;
      in.kind = OpKind::Constant;
      in.number = v.number;
      in.loc = loc;
      return valueOf(emit(std::move(in)));
    }
    if (v.kind == Val::Kind::Weight) {
      if (v.shape.headAxis > 0) {
        error(loc, "a weight used as a value must have its head dimension first, got " +
                       shapeStr(v.shape));
        return Val();
      }
      auto key = std::make_pair(static_cast<int>(OpKind::Slice), v.instr);
      auto it = memo.find(key);
      if (it != memo.end())
        return valueOf(it->second);
      Val s =
          emitValue(OpKind::Slice, {v.instr}, spaces::sliceSpace<Space>(v.slicing), v.shape, loc);
      memo[key] = s.instr;
      return s;
    }
    return v;
  }

  //===--------------------------------------------------------------------===//
  // Layers
  //===--------------------------------------------------------------------===//

  /// Checks a layer on its own (defaults and overrides), once; true if it has no error.
  bool checkLayer(const Layer &layer) {
    LayerState &st = states[&layer];
    if (st.state == LayerState::State::Done)
      return st.ok;
    if (st.state == LayerState::State::InProgress)
      return false;
    st.state = LayerState::State::InProgress;
    checkStack.push_back(&layer);

    // Save the context of a layer whose sub-layer instance triggered this check.
    std::vector<Instr> *savedInstrs = instrs;
    auto savedMemo = std::move(memo);
    const Layer *savedTop = currentTop;
    bool savedAborted = aborted;
    auto savedNotes = std::move(notes);
    unsigned savedDepth = instanceDepth, savedHeight = height;
    bool savedUsesFailed = usesFailedLayer;
    instanceDepth = 0;
    height = 0;
    usesFailedLayer = false;
    memo.clear();
    notes.clear();
    aborted = false;
    currentTop = &layer;

    unsigned errorsBefore = errorsReported;
    CheckedLayer checked;
    checked.name = layer.name;
    checked.loc = layer.loc;
    instrs = &checked.instrs;
    Scope scope;
    scope.layer = &layer;
    bindParams(layer, scope, nullptr, nullptr);
    for (const auto &[name, sym] : scope.syms)
      if (sym.kind == Sym::Kind::Param)
        checked.params[name] = sym.val.number;
    processBody(scope, Phase::Whole);
    size_t numOutputs = 0;
    for (const Instr &in : checked.instrs)
      if (in.kind == OpKind::Output)
        ++numOutputs;
    bool hasOutputStmt = false;
    for (const Stmt &s : layer.body)
      hasOutputStmt |= s.kind == Stmt::Kind::Output;
    if (!hasOutputStmt && !layer.hasSyntaxErrors && !aborted && !usesFailedLayer)
      error(layer.loc, "layer '" + layer.name + "' has no output");

    instrs = savedInstrs;
    memo = std::move(savedMemo);
    currentTop = savedTop;
    aborted = savedAborted;
    notes = std::move(savedNotes);
    unsigned layerHeight = height;
    bool failedDependency = usesFailedLayer;
    instanceDepth = savedDepth;
    height = savedHeight;
    usesFailedLayer = savedUsesFailed;
    checkStack.pop_back();

    LayerState &done = states[&layer];
    done.state = LayerState::State::Done;
    done.height = layerHeight;
    done.ok = errorsReported == errorsBefore && !layer.hasSyntaxErrors && !failedDependency;
    done.numOutputs = numOutputs;
    done.checked = std::move(checked);
    return done.ok;
  }

  /// Defines `name` in `scope`, reporting a redefinition.
  bool define(Scope &scope, const std::string &name, const SourceLoc &loc, Sym sym) {
    auto it = scope.syms.find(name);
    if (it != scope.syms.end()) {
      if (it->second.kind != Sym::Kind::Poison) {
        error(loc, "redefinition of '" + name + "'");
        diags.note(it->second.loc, "previous definition is here");
      }
      return false;
    }
    sym.loc = loc;
    scope.syms.emplace(name, std::move(sym));
    return true;
  }

  void definePoison(Scope &scope, const std::string &name, const SourceLoc &loc) {
    if (!scope.syms.count(name)) {
      Sym sym;
      sym.loc = loc;
      scope.syms.emplace(name, sym);
    }
  }

  /// Binds a layer's parameters: explicit `bindings` (evaluated in `caller`), then overrides,
  /// then defaults (which may use earlier parameters).
  /// Binds `layer`'s parameters in `scope`: the instance's `bindings` (evaluated in `caller`),
  /// else command-line overrides, else the defaults. An error in a binding is reported where it
  /// is written; a bound value the callee rejects (a head count of 0) at the callee's parameter,
  /// with `instanceNote` saying which instance bound it.
  void bindParams(const Layer &layer, Scope &scope, const std::vector<Binding> *bindings,
                  Scope *caller, const std::pair<SourceLoc, std::string> *instanceNote = nullptr) {
    std::map<std::string, double> bound;
    std::set<std::string> poisonedBindings;
    if (bindings) {
      for (const Binding &b : *bindings) {
        bool known = false;
        for (const Param &p : layer.params)
          known |= p.name == b.name;
        if (!known) {
          error(b.loc, "layer '" + layer.name + "' has no parameter '" + b.name + "'");
          continue;
        }
        if (bound.count(b.name) || poisonedBindings.count(b.name)) {
          error(b.loc, "parameter '" + b.name + "' is bound twice");
          continue;
        }
        Val v = eval(*b.value, Ctx::Const, *caller);
        if (v.kind != Val::Kind::Const) {
          poisonedBindings.insert(b.name);
          continue;
        }
        bound[b.name] = v.number;
      }
    }
    struct NoteScope {
      std::vector<std::pair<SourceLoc, std::string>> &notes;
      bool pushed;
      ~NoteScope() {
        if (pushed)
          notes.pop_back();
      }
    } noteScope{notes, instanceNote != nullptr};
    if (instanceNote)
      notes.push_back(*instanceNote);
    for (const Param &p : layer.params) {
      Sym sym;
      sym.kind = Sym::Kind::Param;
      sym.isHeads = p.isHeads;
      double value;
      std::string origin;
      if (poisonedBindings.count(p.name)) {
        definePoison(scope, p.name, p.loc);
        continue;
      }
      if (bound.count(p.name)) {
        value = bound[p.name];
        origin = " (bound in the sub-layer instance)";
      } else if (options.paramOverrides.count(p.name)) {
        value = options.paramOverrides.at(p.name);
        origin = " (set on the command line)";
        if (!std::isfinite(value)) {
          error(p.loc, "parameter '" + p.name + "' is set to a number that is not finite");
          definePoison(scope, p.name, p.loc);
          continue;
        }
      } else {
        Val v = eval(*p.defaultValue, Ctx::Const, scope);
        if (v.kind != Val::Kind::Const) {
          definePoison(scope, p.name, p.loc);
          continue;
        }
        value = v.number;
      }
      if (p.isHeads && !(value >= 1 && value <= kMaxDim && value == std::floor(value))) {
        error(p.loc, "head count '" + p.name + "' must be a positive integer, got " +
                         formatNumber(value) + origin);
        definePoison(scope, p.name, p.loc);
        continue;
      }
      sym.val = Val::constant(value);
      define(scope, p.name, p.loc, sym);
    }
  }

  void processBody(Scope &scope, Phase phase) {
    for (const Stmt &stmt : scope.layer->body) {
      if (aborted || diags.limitReached())
        return;
      unsigned errorsBefore = errorsReported;
      switch (stmt.kind) {
      case Stmt::Kind::Poisoned:
        definePoison(scope, stmt.name, stmt.nameLoc);
        break;
      case Stmt::Kind::Input:
        processInput(scope, stmt, phase);
        break;
      case Stmt::Kind::Weight:
        if (phase != Phase::Call)
          processWeight(scope, stmt);
        break;
      case Stmt::Kind::DerivedWeight:
        if (phase != Phase::Call) {
          Val w = evalWeight(*stmt.expr, std::nullopt, scope);
          if (w.poisoned() || errorsReported != errorsBefore) {
            definePoison(scope, stmt.name, stmt.nameLoc);
            break;
          }
          Instr &root = (*instrs)[w.instr];
          if (root.kind == OpKind::WeightMatmul && root.valueName.empty())
            root.valueName = scope.prefix + stmt.name;
          Sym sym;
          sym.kind = Sym::Kind::Weight;
          sym.val = w;
          define(scope, stmt.name, stmt.nameLoc, sym);
        }
        break;
      case Stmt::Kind::Value:
        if (phase != Phase::Declare)
          processValue(scope, stmt);
        break;
      case Stmt::Kind::Instance:
        if (phase != Phase::Call)
          processInstance(scope, stmt);
        break;
      case Stmt::Kind::Output:
        if (phase != Phase::Declare)
          processOutput(scope, stmt, phase);
        break;
      }
    }
  }

  /// Evaluates a shape's dimensions; a dimension written as a bare `heads` parameter is the head
  /// dimension. With `headFirst`, the head dimension must be the first one.
  std::optional<Shape> evalShape(const std::vector<ExprPtr> &dims, Scope &scope, bool headFirst) {
    Shape shape;
    bool ok = true;
    for (size_t i = 0; i < dims.size(); ++i) {
      const Expr &e = *dims[i];
      if (e.kind == Expr::Kind::Name) {
        auto it = scope.syms.find(e.name);
        if (it != scope.syms.end() && it->second.kind == Sym::Kind::Param && it->second.isHeads) {
          if (shape.headAxis >= 0) {
            error(e.loc,
                  "a shape can have only one head dimension ('" + e.name + "' is the second)");
            ok = false;
          } else if (headFirst && i != 0) {
            error(e.loc, "the head dimension must be the first dimension of a value ('" + e.name +
                             "' is dimension " + std::to_string(i + 1) + ")");
            ok = false;
          }
          shape.headAxis = static_cast<int>(i);
          shape.dims.push_back(static_cast<int64_t>(it->second.val.number));
          continue;
        }
      }
      Val v = eval(e, Ctx::Const, scope);
      if (v.kind != Val::Kind::Const) {
        ok = false;
        continue;
      }
      int64_t dim;
      if (!checkDim(v.number, e.loc, "dimension", dim)) {
        ok = false;
        continue;
      }
      shape.dims.push_back(dim);
    }
    if (!ok)
      return std::nullopt;
    return shape;
  }

  bool checkDim(double v, const SourceLoc &loc, const std::string &what, int64_t &out) {
    if (!(v >= 1) || v != std::floor(v)) {
      error(loc, what + " must be a positive integer, got " + formatNumber(v));
      return false;
    }
    if (v > static_cast<double>(kMaxDim)) {
      error(loc, what + " " + formatNumber(v) + " is too large (the limit is " +
                     std::to_string(kMaxDim) + ")");
      return false;
    }
    out = static_cast<int64_t>(v);
    return true;
  }

  void processInput(Scope &scope, const Stmt &stmt, Phase phase) {
    if (phase == Phase::Call) {
      // Bind the next argument (checked by the caller against the declared input).
      Sym sym;
      sym.isEdge = stmt.isEdge;
      if (!scope.args || scope.nextArg >= scope.args->size() ||
          (*scope.args)[scope.nextArg].poisoned()) {
        ++scope.nextArg;
        definePoison(scope, stmt.name, stmt.nameLoc);
        return;
      }
      sym.kind = Sym::Kind::Value;
      sym.val = (*scope.args)[scope.nextArg++];
      define(scope, stmt.name, stmt.nameLoc, sym);
      return;
    }
    std::optional<Shape> shape = evalShape(stmt.dims, scope, /*headFirst=*/true);
    if (phase == Phase::Declare) {
      scope.inst->inputs.push_back(InstanceInput{stmt.name, stmt.isEdge, shape ? *shape : Shape()});
      if (!shape)
        scope.inst->poisoned = true;
      return;
    }
    if (!shape) {
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    Instr in;
    in.kind = OpKind::Input;
    in.name = stmt.name;
    in.valueName = stmt.name;
    in.space = stmt.isEdge ? Space::Edge : Space::Node;
    in.shape = *shape;
    in.loc = stmt.nameLoc;
    Sym sym;
    sym.kind = Sym::Kind::Value;
    sym.isEdge = stmt.isEdge;
    sym.val = valueOf(emit(std::move(in)));
    define(scope, stmt.name, stmt.nameLoc, sym);
  }

  void processWeight(Scope &scope, const Stmt &stmt) {
    std::optional<Shape> shape = evalShape(stmt.dims, scope, /*headFirst=*/false);
    std::string init = stmt.init.empty() ? "glorot" : stmt.init;
    static const std::set<std::string> inits = {"glorot", "zeros", "ones", "uniform", "normal"};
    bool ok = shape.has_value();
    if (!inits.count(init)) {
      error(stmt.initLoc,
            "unknown init '" + init + "'; expected glorot, zeros, ones, uniform or normal");
      ok = false;
    }
    if (!ok) {
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    Instr in;
    in.kind = OpKind::Weight;
    in.isWeight = true;
    in.name = scope.prefix + stmt.name;
    in.init = init;
    in.slicing = stmt.slicing;
    in.shape = *shape;
    in.loc = stmt.nameLoc;
    Sym sym;
    sym.kind = Sym::Kind::Weight;
    sym.val = valueOf(emit(std::move(in)));
    define(scope, stmt.name, stmt.nameLoc, sym);
  }

  void processValue(Scope &scope, const Stmt &stmt) {
    unsigned errorsBefore = errorsReported;
    Ctx ctx = stmt.isEdge ? Ctx::Edge : Ctx::Node;
    Val v = eval(*stmt.expr, ctx, scope);
    if (!v.poisoned() && errorsReported == errorsBefore) {
      if (v.kind != Val::Kind::Value) {
        v = materialize(v, stmt.expr->loc);
      }
    }
    if (v.poisoned() || errorsReported != errorsBefore) {
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    if (stmt.isEdge && !isPerEdge(v.space)) {
      error(stmt.nameLoc, "edge statement '" + stmt.name + "' does not vary per edge: it is " +
                              describeSpace(v.space) +
                              " (use src., dst., an edge input or an edge value)");
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    if (!stmt.isEdge && v.space != Space::Node) {
      error(stmt.nameLoc, "node statement '" + stmt.name + "' does not vary per node: it is " +
                              describeSpace(v.space) +
                              " (use a node input, a node value or an aggregation)");
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    Instr &root = (*instrs)[v.instr];
    if (root.valueName.empty())
      root.valueName = scope.prefix + stmt.name;
    Sym sym;
    sym.kind = Sym::Kind::Value;
    sym.isEdge = stmt.isEdge;
    sym.val = v;
    define(scope, stmt.name, stmt.nameLoc, sym);
  }

  void processOutput(Scope &scope, const Stmt &stmt, Phase phase) {
    std::set<std::string> seen;
    for (const auto &[name, loc] : stmt.outputs) {
      auto it = scope.syms.find(name);
      if (it == scope.syms.end()) {
        error(loc, "unknown name '" + name + "'");
        continue;
      }
      const Sym &sym = it->second;
      if (sym.kind == Sym::Kind::Poison)
        continue;
      if (sym.kind != Sym::Kind::Value) {
        error(loc, "output '" + name + "' is " +
                       (sym.kind == Sym::Kind::Weight  ? "a weight"
                        : sym.kind == Sym::Kind::Param ? "a parameter"
                                                       : "a sub-layer instance") +
                       "; outputs are node or edge values");
        continue;
      }
      if (phase == Phase::Call) {
        scope.outputs.push_back(sym.val);
        continue;
      }
      bool duplicate = !seen.insert(name).second;
      for (const Instr &in : *instrs)
        duplicate |= in.kind == OpKind::Output && in.name == name;
      if (duplicate) {
        error(loc, "'" + name + "' is already an output");
        continue;
      }
      Instr in;
      in.kind = OpKind::Output;
      in.name = name;
      in.operands = {sym.val.instr};
      in.space = sym.val.space;
      in.shape = sym.val.shape;
      in.loc = loc;
      emit(std::move(in));
    }
  }

  void processInstance(Scope &scope, const Stmt &stmt) {
    if (builtinNames().count(stmt.name)) {
      error(stmt.nameLoc,
            "'" + stmt.name + "' is a builtin function; a sub-layer instance needs another name");
      definePoison(scope, stmt.name, stmt.nameLoc);
      return;
    }
    auto poison = [&] {
      usesFailedLayer = true;
      definePoison(scope, stmt.name, stmt.nameLoc);
    };
    auto it = layerByName.find(stmt.layerName);
    if (it == layerByName.end()) {
      if (!poisonedLayerNames.count(stmt.layerName))
        error(stmt.layerLoc, "unknown layer '" + stmt.layerName + "'");
      return poison();
    }
    const Layer &callee = *it->second;
    for (size_t i = 0; i < checkStack.size(); ++i) {
      if (checkStack[i] != &callee)
        continue;
      std::string cycle;
      for (size_t j = i; j < checkStack.size(); ++j)
        cycle += checkStack[j]->name + " -> ";
      error(stmt.layerLoc, "layer '" + callee.name + "' uses itself through sub-layers (" + cycle +
                               callee.name + ")");
      return poison();
    }
    if (instanceDepth >= kMaxLayerNesting || checkStack.size() > kMaxLayerNesting) {
      error(stmt.layerLoc, "sub-layers are nested too deeply (more than " +
                               std::to_string(kMaxLayerNesting) + " levels)");
      return poison();
    }
    if (!checkLayer(callee))
      return poison();
    unsigned calleeHeight = states[&callee].height;
    if (calleeHeight + 1 > kMaxLayerNesting) {
      error(stmt.layerLoc, "sub-layers are nested too deeply: layer '" + callee.name +
                               "' already nests " + plural(calleeHeight, "level") +
                               " (the limit is " + std::to_string(kMaxLayerNesting) + ")");
      return poison();
    }
    if (instanceDepth == 0)
      height = std::max(height, calleeHeight + 1);
    size_t numOutputs = states[&callee].numOutputs;
    if (numOutputs != 1) {
      error(stmt.layerLoc, "layer '" + callee.name + "' has " + plural(numOutputs, "output") +
                               "; a sub-layer must have exactly one");
      diags.note(callee.loc, "layer '" + callee.name + "' is defined here");
      return poison();
    }
    auto inst = std::make_shared<Instance>();
    inst->layer = &callee;
    inst->name = stmt.name;
    inst->prefix = scope.prefix + stmt.name + ".";
    unsigned errorsBefore = errorsReported;
    Scope sub;
    sub.layer = &callee;
    sub.prefix = inst->prefix;
    sub.topLevel = false;
    sub.inst = inst.get();
    std::pair<SourceLoc, std::string> note{stmt.nameLoc, "in sub-layer instance '" + stmt.name +
                                                             "' of layer '" + callee.name + "'"};
    bindParams(callee, sub, &stmt.bindings, &scope, &note);
    notes.push_back(std::move(note));
    ++instanceDepth;
    if (errorsReported == errorsBefore)
      processBody(sub, Phase::Declare);
    --instanceDepth;
    notes.pop_back();
    inst->syms = std::move(sub.syms);
    if (errorsReported != errorsBefore)
      inst->poisoned = true;
    Sym sym;
    sym.kind = Sym::Kind::Instance;
    sym.inst = inst;
    define(scope, stmt.name, stmt.nameLoc, sym);
  }

  //===--------------------------------------------------------------------===//
  // Expressions
  //===--------------------------------------------------------------------===//

  Val eval(const Expr &e, Ctx ctx, Scope &scope) {
    switch (e.kind) {
    case Expr::Kind::Number:
      if (e.invalid)
        return Val(); // already reported by the lexer
      return Val::constant(e.number);
    case Expr::Kind::Name:
      return evalName(e, ctx, scope);
    case Expr::Kind::Member:
      return evalMember(e, ctx, scope);
    case Expr::Kind::Neg: {
      Val a = eval(*e.args[0], ctx, scope);
      if (a.poisoned())
        return a;
      if (a.kind == Val::Kind::Const)
        return Val::constant(-a.number);
      a = materialize(a, e.args[0]->loc);
      if (a.poisoned())
        return a;
      return emitValue(OpKind::Neg, {a.instr}, a.space, a.shape, e.loc);
    }
    case Expr::Kind::Binary:
      return evalBinary(e, ctx, scope);
    case Expr::Kind::Call:
      return evalCall(e, ctx, scope);
    }
    return Val();
  }

  Val lookupError(const std::string &name, const SourceLoc &loc) {
    if (builtinNames().count(name))
      error(loc, "'" + name + "' is a builtin function; call it as " + name + "(...)");
    else if (layerByName.count(name))
      error(loc, "'" + name + "' is a layer, not a value");
    else if (!poisonedLayerNames.count(name))
      error(loc, "unknown name '" + name + "'");
    return Val();
  }

  /// Rejects a weight whose slicing does not fit the statement (nullopt: any slicing).
  bool checkSlicing(const Val &w, const std::string &name, std::optional<Ctx> ctx,
                    const SourceLoc &loc) {
    if (ctx == Ctx::Node && w.slicing == Slicing::Relation) {
      error(loc, "relation-sliced weight '" + name +
                     "' in a node statement (a relation's slice is chosen by an edge)");
      return false;
    }
    if (ctx == Ctx::Edge && w.slicing == Slicing::NType) {
      error(loc, "node-type-sliced weight '" + name + "' in " + edgeContext +
                     " (use it in a node statement)");
      return false;
    }
    return true;
  }

  Val evalName(const Expr &e, Ctx ctx, Scope &scope) {
    auto it = scope.syms.find(e.name);
    if (it == scope.syms.end())
      return lookupError(e.name, e.loc);
    const Sym &sym = it->second;
    switch (sym.kind) {
    case Sym::Kind::Poison:
      return Val();
    case Sym::Kind::Param:
      return sym.val;
    case Sym::Kind::Instance:
      error(e.loc,
            "sub-layer instance '" + e.name + "' is not a value; call it as " + e.name + "(...)");
      return Val();
    case Sym::Kind::Weight:
      if (ctx == Ctx::Const) {
        error(e.loc,
              "weight '" + e.name + "' in a constant expression (only parameters and numbers)");
        return Val();
      }
      if (!checkSlicing(sym.val, e.name, ctx, e.loc))
        return Val();
      return sym.val;
    case Sym::Kind::Value:
      if (ctx == Ctx::Const) {
        error(e.loc, "'" + e.name + "' is not a constant (only parameters and numbers)");
        return Val();
      }
      if (ctx == Ctx::Node && sym.isEdge) {
        error(e.loc, "edge value '" + e.name +
                         "' in a node statement; aggregate it with sum, mean or max");
        return Val();
      }
      if (ctx == Ctx::Edge && !sym.isEdge) {
        error(e.loc, "node value '" + e.name + "' in " + edgeContext + "; read it as src." +
                         e.name + " or dst." + e.name);
        return Val();
      }
      return sym.val;
    }
    return Val();
  }

  Val evalMember(const Expr &e, Ctx ctx, Scope &scope) {
    std::string spelled = std::string(e.memberDst ? "dst." : "src.") + e.name;
    if (ctx != Ctx::Edge) {
      if (ctx == Ctx::Const)
        error(e.loc, "'" + spelled + "' is not a constant (only parameters and numbers)");
      else
        error(e.loc, "'" + spelled + "' in a node statement; src. and dst. read node values " +
                         "on edges, in edge statements");
      return Val();
    }
    auto it = scope.syms.find(e.name);
    if (it == scope.syms.end())
      return lookupError(e.name, e.nameLoc);
    const Sym &sym = it->second;
    if (sym.kind == Sym::Kind::Poison)
      return Val();
    if (sym.kind != Sym::Kind::Value || sym.isEdge) {
      std::string what = sym.kind == Sym::Kind::Value    ? "an edge value"
                         : sym.kind == Sym::Kind::Weight ? "a weight"
                         : sym.kind == Sym::Kind::Param  ? "a parameter"
                                                         : "a sub-layer instance";
      error(e.nameLoc,
            "'" + spelled + "': '" + e.name + "' is " + what + "; src. and dst. read node values");
      return Val();
    }
    OpKind kind = e.memberDst ? OpKind::Dst : OpKind::Src;
    auto key = std::make_pair(static_cast<int>(kind), sym.val.instr);
    auto m = memo.find(key);
    if (m != memo.end())
      return valueOf(m->second);
    Val v = emitValue(kind, {sym.val.instr}, e.memberDst ? Space::Dst : Space::Src, sym.val.shape,
                      e.loc);
    memo[key] = v.instr;
    return v;
  }

  Val evalBinary(const Expr &e, Ctx ctx, Scope &scope) {
    Val a = eval(*e.args[0], ctx, scope);
    Val b = eval(*e.args[1], ctx, scope);
    if (a.poisoned() || b.poisoned())
      return Val();
    if (a.kind == Val::Kind::Const && b.kind == Val::Kind::Const) {
      double r;
      switch (e.op) {
      case '+':
        r = a.number + b.number;
        break;
      case '-':
        r = a.number - b.number;
        break;
      case '*':
        r = a.number * b.number;
        break;
      default:
        if (b.number == 0.0) {
          error(e.loc, "division by zero in a constant expression");
          return Val();
        }
        r = a.number / b.number;
        break;
      }
      if (!std::isfinite(r)) {
        error(e.loc, "constant expression overflows");
        return Val();
      }
      return Val::constant(r);
    }
    a = materialize(a, e.args[0]->loc);
    if (a.poisoned())
      return a;
    b = materialize(b, e.args[1]->loc);
    if (b.poisoned())
      return b;
    OpKind kind = e.op == '+'   ? OpKind::Add
                  : e.op == '-' ? OpKind::Sub
                  : e.op == '*' ? OpKind::Mul
                                : OpKind::Div;
    return elementwise(kind, a, b, std::string("'") + e.op + "'", e.loc);
  }

  std::optional<Space> join(const Val &a, const Val &b, const std::string &what,
                            const SourceLoc &loc) {
    std::optional<Space> s = joinSpaces(a.space, b.space);
    if (!s)
      error(loc, what + " combines " + describeSpace(a.space) + " and " + describeSpace(b.space));
    return s;
  }

  /// Prefix broadcasting of two row shapes (docs/architecture.md).
  std::optional<Shape> broadcast(const Shape &a, const Shape &b, const std::string &what,
                                 const SourceLoc &loc) {
    if (a == b)
      return a;
    if (a.dims.empty())
      return b;
    if (b.dims.empty())
      return a;
    const Shape &s = a.dims.size() <= b.dims.size() ? a : b;
    const Shape &l = a.dims.size() <= b.dims.size() ? b : a;
    bool dimsMatch = true, headsMatch = true;
    for (size_t i = 0; i < s.dims.size(); ++i) {
      dimsMatch &= s.dims[i] == l.dims[i];
      headsMatch &= (s.headAxis == static_cast<int>(i)) == (l.headAxis == static_cast<int>(i));
    }
    if (dimsMatch && headsMatch)
      return l;
    std::string shapes = shapeStr(a) + " and " + shapeStr(b);
    if (a.headAxis >= 0 && b.headAxis >= 0 && a.dims[a.headAxis] != b.dims[b.headAxis])
      error(loc, what + " mixes " + plural(a.dims[a.headAxis], "head") + " and " +
                     plural(b.dims[b.headAxis], "head") + ": " + shapes);
    else if (dimsMatch)
      error(loc, what + " mixes a head dimension and a plain one: " + shapes);
    else
      error(loc, "shape mismatch in " + what + ": " + shapes +
                     " (shapes must be equal, [] or a prefix of the other)");
    return std::nullopt;
  }

  Val elementwise(OpKind kind, const Val &a, const Val &b, const std::string &what,
                  const SourceLoc &loc) {
    std::optional<Space> space = join(a, b, what, loc);
    if (!space)
      return Val();
    std::optional<Shape> shape = broadcast(a.shape, b.shape, what, loc);
    if (!shape)
      return Val();
    return emitValue(kind, {a.instr, b.instr}, *space, *shape, loc);
  }

  /// Evaluates a weight expression: a weight name or matmul(A, B). `ctx` is the statement's
  /// context, for slicing checks (nullopt in a derived-weight declaration).
  Val evalWeight(const Expr &e, std::optional<Ctx> ctx, Scope &scope) {
    if (e.kind == Expr::Kind::Name) {
      auto it = scope.syms.find(e.name);
      if (it == scope.syms.end())
        return lookupError(e.name, e.loc);
      const Sym &sym = it->second;
      if (sym.kind == Sym::Kind::Poison)
        return Val();
      if (sym.kind != Sym::Kind::Weight) {
        error(e.loc, "'" + e.name + "' is not a weight");
        return Val();
      }
      if (!checkSlicing(sym.val, e.name, ctx, e.loc))
        return Val();
      return sym.val;
    }
    if (e.kind == Expr::Kind::Call && e.name == "matmul")
      return evalMatmul(e, ctx, scope);
    error(e.loc, "expected a weight here (a weight name or matmul(A, B))");
    return Val();
  }

  bool checkArity(const Expr &e, size_t min, size_t max) {
    size_t n = e.args.size();
    if (n >= min && n <= max)
      return true;
    std::string expected = min == max ? plural(min, "argument")
                           : max == SIZE_MAX
                               ? "at least " + plural(min, "argument")
                               : std::to_string(min) + " or " + plural(max, "argument");
    error(e.loc, "'" + e.name + "' takes " + expected + ", got " + std::to_string(n));
    return false;
  }

  Val evalMatmul(const Expr &e, std::optional<Ctx> ctx, Scope &scope) {
    if (!checkArity(e, 2, 2))
      return Val();
    Val a = evalWeight(*e.args[0], ctx, scope);
    Val b = evalWeight(*e.args[1], ctx, scope);
    if (a.poisoned() || b.poisoned())
      return Val();
    std::optional<Slicing> slicing = spaces::productSlicing(a.slicing, b.slicing);
    if (!slicing) {
      error(e.loc, "matmul of a relation-sliced and a node-type-sliced weight");
      return Val();
    }
    const Shape &sa = a.shape, &sb = b.shape;
    std::string shapes = shapeStr(sa) + " and " + shapeStr(sb);
    if (sa.dims.empty() || sb.dims.empty()) {
      error(e.loc, "matmul needs weights with at least one dimension, got " + shapes);
      return Val();
    }
    int ra = static_cast<int>(sa.dims.size());
    if (sa.headAxis == ra - 1 || sb.headAxis == 0) {
      error(e.loc, "matmul would contract a head dimension: " + shapes);
      return Val();
    }
    if (sa.headAxis >= 0 && sb.headAxis >= 0) {
      error(e.loc, "matmul of two weights with head dimensions: " + shapes);
      return Val();
    }
    if (sa.dims.back() != sb.dims.front()) {
      error(e.loc, "shape mismatch in matmul: the last dimension of the first weight (" +
                       std::to_string(sa.dims.back()) +
                       ") differs from the first dimension of the second (" +
                       std::to_string(sb.dims.front()) + "): " + shapes);
      return Val();
    }
    Instr in;
    in.kind = OpKind::WeightMatmul;
    in.isWeight = true;
    in.operands = {a.instr, b.instr};
    in.slicing = *slicing;
    in.shape.dims.assign(sa.dims.begin(), sa.dims.end() - 1);
    in.shape.dims.insert(in.shape.dims.end(), sb.dims.begin() + 1, sb.dims.end());
    if (sa.headAxis >= 0)
      in.shape.headAxis = sa.headAxis;
    else if (sb.headAxis >= 0)
      in.shape.headAxis = ra - 1 + sb.headAxis - 1;
    in.loc = e.loc;
    return valueOf(emit(std::move(in)));
  }

  /// Evaluates argument `i` of a call as a value in `ctx` (materialized).
  Val argValue(const Expr &e, size_t i, Ctx ctx, Scope &scope) {
    Val v = eval(*e.args[i], ctx, scope);
    if (v.poisoned())
      return v;
    return materialize(v, e.args[i]->loc);
  }

  /// Evaluates a constant argument.
  std::optional<double> constArg(const Expr &arg, Scope &scope) {
    Val v = eval(arg, Ctx::Const, scope);
    if (v.kind != Val::Kind::Const)
      return std::nullopt;
    return v.number;
  }

  Val evalCall(const Expr &e, Ctx ctx, Scope &scope) {
    auto it = scope.syms.find(e.name);
    if (it != scope.syms.end()) {
      if (it->second.kind == Sym::Kind::Instance)
        return callInstance(e, ctx, scope, *it->second.inst);
      if (it->second.kind == Sym::Kind::Poison)
        return Val();
      if (!builtinNames().count(e.name)) {
        error(e.loc, "'" + e.name + "' is not a function");
        return Val();
      }
    }
    if (!builtinNames().count(e.name)) {
      if (layerByName.count(e.name))
        error(e.loc, "'" + e.name + "' is a layer; declare an instance (layer NAME = " + e.name +
                         "(...);) and call that");
      else if (!poisonedLayerNames.count(e.name))
        error(e.loc, "unknown function '" + e.name + "'");
      return Val();
    }
    const std::string &f = e.name;
    if (f == "sqrt")
      return evalSqrt(e, ctx, scope);
    if (ctx == Ctx::Const) {
      error(e.loc, "'" + f + "' is not allowed in a constant expression (only + - * / and sqrt)");
      return Val();
    }
    if (f == "matmul")
      return evalMatmul(e, ctx, scope);
    if (unaryFunctionKind(f) || f == "merge_heads" || f == "leaky_relu")
      return evalUnary(e, ctx, scope);
    if (f == "dot") {
      if (!checkArity(e, 2, 2))
        return Val();
      Val a = argValue(e, 0, ctx, scope);
      Val b = argValue(e, 1, ctx, scope);
      if (a.poisoned() || b.poisoned())
        return Val();
      return dot(a, b, e.loc);
    }
    if (f == "linear") {
      if (!checkArity(e, 2, 2))
        return Val();
      Val x = argValue(e, 0, ctx, scope);
      Val w = evalWeight(*e.args[1], ctx, scope);
      if (x.poisoned() || w.poisoned())
        return Val();
      return linear(x, w, e.loc);
    }
    if (f == "concat") {
      if (!checkArity(e, 2, SIZE_MAX))
        return Val();
      std::vector<Val> vals;
      bool ok = true;
      for (size_t i = 0; i < e.args.size(); ++i) {
        vals.push_back(argValue(e, i, ctx, scope));
        ok &= !vals.back().poisoned();
      }
      if (!ok)
        return Val();
      return concat(vals, e.loc);
    }
    if (f == "split_heads") {
      if (!checkArity(e, 2, 2))
        return Val();
      Val a = argValue(e, 0, ctx, scope);
      std::optional<double> heads = constArg(*e.args[1], scope);
      if (a.poisoned() || !heads)
        return Val();
      return splitHeads(a, *heads, e.loc, e.args[1]->loc);
    }
    if (f == "sum" || f == "mean" || f == "max")
      return evalAggregate(e, ctx, scope);
    if (f == "src_row")
      return evalSrcRow(e, ctx, scope);
    return evalSoftmax(e, ctx, scope);
  }

  /// src_row(W): the featureless input, row `src` of W (of the edge's relation's slice of a
  /// relation-sliced W), in an edge statement.
  Val evalSrcRow(const Expr &e, Ctx ctx, Scope &scope) {
    if (!checkArity(e, 1, 1))
      return Val();
    if (ctx != Ctx::Edge) {
      error(e.loc, "'src_row' outside an edge statement (it reads the row of each edge's "
                   "source node)");
      return Val();
    }
    Val w = evalWeight(*e.args[0], ctx, scope);
    if (w.poisoned())
      return w;
    std::optional<Space> space = spaces::srcRowSpace<Space>(w.slicing);
    if (!space) {
      error(e.args[0]->loc, "'src_row' needs a relation-sliced or unsliced weight, got an "
                            "ntype-sliced one");
      return Val();
    }
    if (w.shape.dims.empty() || w.shape.headAxis >= 0) {
      error(e.args[0]->loc, "'src_row' needs a table of rows (a weight [rows, dims...] without "
                            "a head dimension), got " +
                                shapeStr(w.shape));
      return Val();
    }
    Val table = materialize(w, e.loc);
    if (table.poisoned())
      return table;
    Shape row;
    row.dims.assign(w.shape.dims.begin() + 1, w.shape.dims.end());
    return emitValue(OpKind::SrcRow, {table.instr}, *space, row, e.loc);
  }

  /// sqrt(x): constant expressions only.
  Val evalSqrt(const Expr &e, Ctx ctx, Scope &scope) {
    if (!checkArity(e, 1, 1))
      return Val();
    Val a = eval(*e.args[0], ctx, scope);
    if (a.poisoned())
      return a;
    if (a.kind != Val::Kind::Const) {
      error(e.loc, "sqrt is only allowed in constant expressions (parameters and numbers)");
      return Val();
    }
    if (a.number < 0) {
      error(e.loc, "sqrt of a negative number (" + formatNumber(a.number) + ")");
      return Val();
    }
    return Val::constant(std::sqrt(a.number));
  }

  /// The row-wise functions of one value: those of UnaryFunctions.def, leaky_relu (with its
  /// optional constant slope) and merge_heads.
  Val evalUnary(const Expr &e, Ctx ctx, Scope &scope) {
    const std::string &f = e.name;
    if (f != "leaky_relu") {
      if (!checkArity(e, 1, 1))
        return Val();
      Val a = argValue(e, 0, ctx, scope);
      if (a.poisoned())
        return a;
      if (f == "merge_heads")
        return mergeHeads(a, e.loc);
      return emitValue(*unaryFunctionKind(f), {a.instr}, a.space, a.shape, e.loc);
    }
    if (!checkArity(e, 1, 2))
      return Val();
    Val a = argValue(e, 0, ctx, scope);
    std::optional<double> slope = 0.01;
    if (e.args.size() == 2)
      slope = constArg(*e.args[1], scope);
    if (a.poisoned() || !slope)
      return Val();
    Val r = emitValue(OpKind::LeakyRelu, {a.instr}, a.space, a.shape, e.loc);
    (*instrs)[r.instr].number = *slope;
    return r;
  }

  /// sum, mean and max of an edge value into the nodes, in a node statement.
  Val evalAggregate(const Expr &e, Ctx ctx, Scope &scope) {
    const std::string &f = e.name;
    if (!checkArity(e, 1, 1))
      return Val();
    if (ctx != Ctx::Node) {
      error(e.loc, "aggregation '" + f + "' outside a node statement (sum, mean and max " +
                       "reduce edge values into nodes)");
      return Val();
    }
    std::string outer = std::exchange(edgeContext, "the argument of '" + f + "'");
    Val a = argValue(e, 0, Ctx::Edge, scope);
    edgeContext = std::move(outer);
    if (a.poisoned())
      return a;
    if (!isPerEdge(a.space)) {
      error(e.args[0]->loc, "'" + f + "' needs an edge value, got " + describeSpace(a.space));
      return Val();
    }
    Val r = emitValue(OpKind::Aggregate, {a.instr}, Space::Node, a.shape, e.loc);
    (*instrs)[r.instr].aggregate = f == "sum"    ? AggregateKind::Sum
                                   : f == "mean" ? AggregateKind::Mean
                                                 : AggregateKind::Max;
    return r;
  }

  /// softmax of an edge value over the incoming edges of each node, in an edge statement.
  Val evalSoftmax(const Expr &e, Ctx ctx, Scope &scope) {
    if (!checkArity(e, 1, 1))
      return Val();
    if (ctx != Ctx::Edge) {
      error(e.loc, "softmax of a node value (softmax normalises edge values over the incoming "
                   "edges of each node; use it in an edge statement)");
      return Val();
    }
    Val a = argValue(e, 0, ctx, scope);
    if (a.poisoned())
      return a;
    if (!isPerEdge(a.space)) {
      error(e.args[0]->loc, "'softmax' needs an edge value, got " + describeSpace(a.space));
      return Val();
    }
    return emitValue(OpKind::Softmax, {a.instr}, Space::Edge, a.shape, e.loc);
  }

  Val dot(const Val &a, const Val &b, const SourceLoc &loc) {
    std::string shapes = shapeStr(a.shape) + " and " + shapeStr(b.shape);
    if (a.shape.dims.empty() || b.shape.dims.empty()) {
      error(loc, "dot needs vectors, got " + shapes);
      return Val();
    }
    if (a.shape != b.shape) {
      if (a.shape.dims == b.shape.dims)
        error(loc, "dot mixes a head dimension and a plain one: " + shapes);
      else if (a.shape.headAxis >= 0 && b.shape.headAxis >= 0 && a.shape.dims[0] != b.shape.dims[0])
        error(loc, "dot mixes " + plural(a.shape.dims[0], "head") + " and " +
                       plural(b.shape.dims[0], "head") + ": " + shapes);
      else
        error(loc, "shape mismatch in dot: " + shapes + " (shapes must be equal)");
      return Val();
    }
    if (a.shape.headAxis == static_cast<int>(a.shape.dims.size()) - 1) {
      error(loc, "dot would contract the head dimension: " + shapes);
      return Val();
    }
    std::optional<Space> space = join(a, b, "dot", loc);
    if (!space)
      return Val();
    Shape r = a.shape;
    r.dims.pop_back();
    return emitValue(OpKind::Dot, {a.instr, b.instr}, *space, r, loc);
  }

  Val linear(const Val &x, const Val &w, const SourceLoc &loc) {
    const Instr &wi = (*instrs)[w.instr];
    std::string wname = wi.kind == OpKind::Weight ? "weight '" + wi.name + "'" : "weight";
    std::optional<Space> linearRows = spaces::linearSpace(x.space, w.slicing);
    if (!linearRows) {
      error(loc, std::string("linear with ") +
                     (w.slicing == Slicing::Relation ? "relation-sliced " : "node-type-sliced ") +
                     wname + " needs " + (w.slicing == Slicing::Relation ? "an edge" : "a node") +
                     " value, got " + describeSpace(x.space));
      return Val();
    }
    Space space = *linearRows;
    const Shape &xs = x.shape, &ws = w.shape;
    std::string shapes = shapeStr(xs) + " . " + shapeStr(ws);
    Shape r;
    if (xs.headAxis < 0) {
      if (xs.dims.size() != 1) {
        error(loc, "linear needs a value of shape [k] or [Hh, k], got " + shapeStr(xs));
        return Val();
      }
      if (ws.dims.empty() || ws.headAxis == 0) {
        error(loc, ws.dims.empty()
                       ? "linear needs a weight with dimensions, got " + shapes
                       : "linear would contract the head dimension of the weight: " + shapes);
        return Val();
      }
      if (ws.dims[0] != xs.dims[0]) {
        error(loc, "shape mismatch in linear: the value's last dimension (" +
                       std::to_string(xs.dims[0]) + ") differs from the " + wname + "'s first (" +
                       std::to_string(ws.dims[0]) + "): " + shapes);
        return Val();
      }
      if (ws.headAxis > 1) {
        error(loc, "linear: the head dimension of the " + wname +
                       " must come right after the contracted one, so that it is first in "
                       "the result: " +
                       shapes);
        return Val();
      }
      r.dims.assign(ws.dims.begin() + 1, ws.dims.end());
      r.headAxis = ws.headAxis == 1 ? 0 : -1;
    } else {
      if (xs.headAxis != 0 || xs.dims.size() != 2) {
        error(loc, "linear needs a value of shape [k] or [Hh, k], got " + shapeStr(xs));
        return Val();
      }
      if (ws.headAxis != 0 || ws.dims.size() < 3) {
        error(loc,
              "linear of a value with heads needs a per-head weight [Hh, k, m], got " + shapes);
        return Val();
      }
      if (ws.dims[0] != xs.dims[0]) {
        error(loc, "linear mixes " + plural(xs.dims[0], "head") + " and " +
                       plural(ws.dims[0], "head") + ": " + shapes);
        return Val();
      }
      if (ws.dims[1] != xs.dims[1]) {
        error(loc, "shape mismatch in linear: the value's last dimension (" +
                       std::to_string(xs.dims[1]) + ") differs from the " + wname + "'s (" +
                       std::to_string(ws.dims[1]) + "): " + shapes);
        return Val();
      }
      r.dims.push_back(xs.dims[0]);
      r.dims.insert(r.dims.end(), ws.dims.begin() + 2, ws.dims.end());
      r.headAxis = 0;
    }
    return emitValue(OpKind::Linear, {x.instr, w.instr}, space, r, loc);
  }

  Val concat(const std::vector<Val> &vals, const SourceLoc &loc) {
    const Shape &first = vals[0].shape;
    Space space = vals[0].space;
    int64_t last = 0;
    std::vector<int> operands;
    for (const Val &v : vals) {
      const Shape &s = v.shape;
      if (s.dims.empty() || s.headAxis == static_cast<int>(s.dims.size()) - 1) {
        error(loc, s.dims.empty() ? "concat needs vectors, got " + shapeStr(s)
                                  : "concat along the head dimension: " + shapeStr(s));
        return Val();
      }
      bool same = s.dims.size() == first.dims.size() && s.headAxis == first.headAxis &&
                  std::equal(s.dims.begin(), s.dims.end() - 1, first.dims.begin());
      if (!same) {
        error(loc, "shape mismatch in concat: " + shapeStr(first) + " and " + shapeStr(s) +
                       " (all dimensions but the last must agree)");
        return Val();
      }
      std::optional<Space> j = joinSpaces(space, v.space);
      if (!j) {
        error(loc, "concat combines " + describeSpace(space) + " and " + describeSpace(v.space));
        return Val();
      }
      space = *j;
      last += s.dims.back();
      if (last > kMaxDim) {
        error(loc, "concat result is too large (the limit is " + std::to_string(kMaxDim) + ")");
        return Val();
      }
      operands.push_back(v.instr);
    }
    Shape r = first;
    r.dims.back() = last;
    return emitValue(OpKind::Concat, operands, space, r, loc);
  }

  Val splitHeads(const Val &a, double heads, const SourceLoc &loc, const SourceLoc &headsLoc) {
    if (a.shape.dims.size() != 1 || a.shape.headAxis >= 0) {
      error(loc, "split_heads needs a value of shape [k] without heads, got " + shapeStr(a.shape));
      return Val();
    }
    int64_t h;
    if (!checkDim(heads, headsLoc, "the head count of split_heads", h))
      return Val();
    int64_t k = a.shape.dims[0];
    if (k % h != 0) {
      error(loc,
            "split_heads: " + std::to_string(k) + " is not divisible into " + plural(h, "head"));
      return Val();
    }
    Shape r;
    r.dims = {h, k / h};
    r.headAxis = 0;
    Val v = emitValue(OpKind::SplitHeads, {a.instr}, a.space, r, loc);
    (*instrs)[v.instr].heads = h;
    return v;
  }

  Val mergeHeads(const Val &a, const SourceLoc &loc) {
    if (a.shape.headAxis != 0 || a.shape.dims.size() != 2) {
      error(loc, "merge_heads needs a value of shape [Hh, d], got " + shapeStr(a.shape));
      return Val();
    }
    int64_t n = a.shape.dims[0] * a.shape.dims[1];
    if (n > kMaxDim) {
      error(loc, "merge_heads result is too large (the limit is " + std::to_string(kMaxDim) + ")");
      return Val();
    }
    Shape r;
    r.dims = {n};
    return emitValue(OpKind::MergeHeads, {a.instr}, a.space, r, loc);
  }

  Val callInstance(const Expr &e, Ctx ctx, Scope &scope, Instance &inst) {
    if (ctx == Ctx::Const) {
      error(e.loc, "sub-layer call '" + e.name + "' in a constant expression");
      return Val();
    }
    if (inst.poisoned)
      return Val();
    const std::vector<InstanceInput> &inputs = inst.inputs;
    if (e.args.size() != inputs.size()) {
      error(e.loc, "'" + e.name + "' (layer '" + inst.layer->name + "') takes " +
                       plural(inputs.size(), "input") + ", got " + std::to_string(e.args.size()));
      return Val();
    }
    std::vector<Val> args;
    bool ok = true;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const InstanceInput &in = inputs[i];
      std::string outer = edgeContext;
      if (in.isEdge && ctx == Ctx::Node)
        edgeContext = "edge input '" + in.name + "' of '" + e.name + "'";
      Val v = argValue(e, i, in.isEdge ? Ctx::Edge : Ctx::Node, scope);
      edgeContext = std::move(outer);
      std::string declared = "input '" + in.name + "' of layer '" + inst.layer->name + "' is " +
                             (in.isEdge ? "edge" : "node") + shapeStr(in.shape);
      if (!v.poisoned()) {
        if (in.isEdge ? !isPerEdge(v.space) : v.space != Space::Node) {
          error(e.args[i]->loc, "argument " + std::to_string(i + 1) + " of '" + e.name + "' is " +
                                    describeSpace(v.space) + ", but " + declared);
          v = Val();
        } else if (v.shape != in.shape) {
          error(e.args[i]->loc, "argument " + std::to_string(i + 1) + " of '" + e.name +
                                    "' has shape " + shapeStr(v.shape) + ", but " + declared);
          v = Val();
        }
      }
      ok &= !v.poisoned();
      args.push_back(v);
    }
    if (!ok)
      return Val();
    Scope sub;
    sub.layer = inst.layer;
    sub.prefix = inst.prefix;
    sub.topLevel = false;
    sub.syms = inst.syms;
    sub.args = &args;
    notes.emplace_back(e.loc, "in a call of '" + e.name + "' (layer '" + inst.layer->name + "')");
    unsigned errorsBefore = errorsReported;
    processBody(sub, Phase::Call);
    notes.pop_back();
    if (errorsReported != errorsBefore || sub.outputs.size() != 1 || aborted)
      return Val();
    Val out = sub.outputs[0];
    bool nodeOut = out.space == Space::Node;
    if (ctx == Ctx::Edge && nodeOut) {
      error(e.loc, "'" + e.name + "' returns a node value; call it in a node statement");
      return Val();
    }
    if (ctx == Ctx::Node && !nodeOut) {
      error(e.loc, "'" + e.name + "' returns an edge value; call it in an edge statement");
      return Val();
    }
    return out;
  }
};

} // namespace

std::optional<CheckedModule> analyze(const std::string &file, const Module &module,
                                     DiagnosticEngine &diags, const FrontendOptions &options) {
  return Sema(file, module, diags, options).run();
}

} // namespace frontend
} // namespace hector
