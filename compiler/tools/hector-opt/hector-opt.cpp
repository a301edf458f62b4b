//===- hector-opt.cpp - The Hector optimizer driver -------------*- C++ -*-===//
//
// mlir-opt for the Hector dialect: parses, verifies, runs passes (the Hector passes, the
// `hector-pipeline` and `hector-compile` that hectorc runs, hector-prepare-emission, and the
// generic ones) and prints Hector IR.
//
//===----------------------------------------------------------------------===//
#include "hector/Autodiff/Passes.h"
#include "hector/Dialect/HectorDialect.h"
#include "hector/Emit/Passes.h"
#include "hector/Optimize/Passes.h"
#include "hector/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  hector::registerHectorPasses();
  hector::registerHectorAutodiffPasses();
  hector::registerHectorOptimizePasses();
  hector::registerHectorEmitPasses();

  mlir::DialectRegistry registry;
  registry.insert<hector::HectorDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Hector optimizer driver\n", registry));
}
