//===- HectorDialect.cpp - The Hector dialect -------------------*- C++ -*-===//
//
// Registration of the dialect's types, attributes and ops.
//
//===----------------------------------------------------------------------===//
#include "hector/Dialect/HectorDialect.h"
#include "hector/Dialect/HectorOps.h"
#include "hector/Dialect/HectorTypes.h"

using namespace mlir;
using namespace hector;

#include "hector/Dialect/HectorOpsDialect.cpp.inc"

void HectorDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "hector/Dialect/HectorOps.cpp.inc"
      >();
}

Operation *HectorDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                              Location loc) {
  auto floatValue = dyn_cast<FloatAttr>(value);
  auto valueType = dyn_cast<ValueType>(type);
  if (!floatValue || !valueType || valueType.getSpace() != Space::None ||
      !valueType.getDims().empty())
    return nullptr;
  return builder.create<ConstantOp>(loc, valueType, floatValue);
}
