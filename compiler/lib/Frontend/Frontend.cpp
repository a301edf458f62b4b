//===- Frontend.cpp - Front-end entry point and printing helpers ----------===//
//
// checkSource: lex, parse, check; plus the spellings shared by diagnostics and printChecked.
//
//===----------------------------------------------------------------------===//

#include "hector/Frontend/Frontend.h"
#include "hector/Frontend/Lexer.h"
#include "hector/Frontend/Parser.h"
#include "hector/Frontend/Sema.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hector {
namespace frontend {

std::optional<CheckedModule> checkSource(const std::string &filename, const std::string &text,
                                         DiagnosticEngine &diags, const FrontendOptions &options) {
  size_t first = diags.diagnostics().size();
  std::vector<Token> tokens = lex(filename, text, diags);
  Module module = parse(filename, tokens, diags);
  std::optional<CheckedModule> result;
  if (!diags.limitReached())
    result = analyze(filename, module, diags, options);
  diags.sortByLocation(first);
  if (diags.hasErrors() || diags.limitReached())
    return std::nullopt;
  return result;
}

const char *spaceName(Space space) {
  switch (space) {
  case Space::Node:
    return "node";
  case Space::Src:
    return "src";
  case Space::Dst:
    return "dst";
  case Space::Edge:
    return "edge";
  case Space::UniqueSrc:
    return "unique_src";
  case Space::UniqueDst:
    return "unique_dst";
  case Space::Relation:
    return "relation";
  case Space::NType:
    return "ntype";
  case Space::None:
    return "none";
  }
  return "?";
}

const char *slicingName(Slicing slicing) {
  switch (slicing) {
  case Slicing::None:
    return "none";
  case Slicing::Relation:
    return "relation";
  case Slicing::NType:
    return "ntype";
  }
  return "?";
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.dims.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(shape.dims[i]);
    if (static_cast<int>(i) == shape.headAxis)
      s += 'h';
  }
  return s + "]";
}

const char *opKindName(OpKind kind) {
  switch (kind) {
  case OpKind::Input:
    return "input";
  case OpKind::Weight:
    return "weight";
  case OpKind::WeightMatmul:
    return "weight_matmul";
  case OpKind::Src:
    return "src";
  case OpKind::Dst:
    return "dst";
  case OpKind::Slice:
    return "slice";
  case OpKind::SrcRow:
    return "src_row";
  case OpKind::Linear:
    return "linear";
  case OpKind::Dot:
    return "dot";
  case OpKind::Add:
    return "add";
  case OpKind::Sub:
    return "sub";
  case OpKind::Mul:
    return "mul";
  case OpKind::Div:
    return "div";
  case OpKind::Neg:
    return "neg";
#define HECTOR_UNARY_FUNCTION(kind, spelling)                                                      \
  case OpKind::kind:                                                                               \
    return spelling;
#include "hector/Frontend/UnaryFunctions.def"
  case OpKind::LeakyRelu:
    return "leaky_relu";
  case OpKind::Constant:
    return "constant";
  case OpKind::Aggregate:
    return "aggregate";
  case OpKind::Softmax:
    return "softmax";
  case OpKind::Concat:
    return "concat";
  case OpKind::SplitHeads:
    return "split_heads";
  case OpKind::MergeHeads:
    return "merge_heads";
  case OpKind::Output:
    return "output";
  }
  return "?";
}

std::string formatNumber(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  return buf;
}

void printChecked(std::ostream &os, const CheckedModule &module) {
  for (const CheckedLayer &layer : module.layers) {
    os << "layer " << layer.name << "(";
    bool first = true;
    for (const auto &[name, value] : layer.params) {
      os << (first ? "" : ", ") << name << " = " << formatNumber(value);
      first = false;
    }
    os << ")\n";
    for (size_t i = 0; i < layer.instrs.size(); ++i) {
      const Instr &in = layer.instrs[i];
      os << "  ";
      if (in.kind != OpKind::Output)
        os << "%" << i << " = ";
      os << opKindName(in.kind);
      if (in.kind == OpKind::Aggregate)
        os << (in.aggregate == AggregateKind::Sum    ? " sum"
               : in.aggregate == AggregateKind::Mean ? " mean"
                                                     : " max");
      if (in.kind == OpKind::Input || in.kind == OpKind::Weight || in.kind == OpKind::Output)
        os << " \"" << in.name << "\"";
      for (size_t j = 0; j < in.operands.size(); ++j)
        os << (j ? ", %" : " %") << in.operands[j];
      if (in.kind == OpKind::Constant)
        os << " " << formatNumber(in.number);
      if (in.kind == OpKind::LeakyRelu)
        os << " slope " << formatNumber(in.number);
      if (in.kind == OpKind::SplitHeads)
        os << " heads " << in.heads;
      if (in.kind == OpKind::Weight)
        os << " init " << in.init;
      if (in.kind != OpKind::Output) {
        os << " : ";
        if (in.isWeight)
          os << "weight " << slicingName(in.slicing) << " " << shapeString(in.shape);
        else
          os << spaceName(in.space) << " " << shapeString(in.shape);
      }
      if (!in.valueName.empty() && in.kind != OpKind::Input)
        os << "  // " << in.valueName;
      os << "\n";
    }
  }
}

} // namespace frontend
} // namespace hector
