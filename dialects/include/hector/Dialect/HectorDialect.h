//===- HectorDialect.h - The Hector dialect ---------------------*- C++ -*-===//
//
// The dialect class. Include HectorOps.h for the ops and HectorTypes.h for the types.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_DIALECT_HECTORDIALECT_H
#define HECTOR_DIALECT_HECTORDIALECT_H

#include "mlir/IR/Dialect.h"

#include "hector/Dialect/HectorOpsDialect.h.inc"

#endif // HECTOR_DIALECT_HECTORDIALECT_H
