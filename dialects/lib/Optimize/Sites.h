//===- Sites.h - Cost-checked rewrite sites (internal) ----------*- C++ -*-===//
//
// The machinery the two rewrites share: a pattern base class that checks a site's legality,
// asks the cost policy (by rewriting a copy of the layer), then rewrites; a driver applying such
// patterns to a layer until none applies; and dead-op removal.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_LIB_OPTIMIZE_SITES_H
#define HECTOR_LIB_OPTIMIZE_SITES_H

#include "hector/Optimize/CostModel.h"

#include "mlir/IR/PatternMatch.h"

#include <string>

namespace hector {

/// Erases the pure ops of `layer` whose results are unused.
void eraseDeadOps(LayerOp layer);

/// The type of a value like `type` in `space`.
inline ValueType inSpace(mlir::Type type, Space space) {
  return mlir::cast<ValueType>(type).withSpace(space);
}

/// Applies `patterns` to the ops of `layer` in program order, one rewrite at a time, until none
/// applies; records, from the last sweep, each site left alone with the reason its pattern gave
/// to notifyMatchFailure (the patterns record their rewrites). Returns the number of rewrites.
unsigned applySites(LayerOp layer, mlir::RewritePatternSet &patterns, RewriteLog *log);

/// A rewrite site rooted at an op named `rootName`. `check` decides legality without changing
/// the IR: plain failure() when the op is not a site at all, notifyMatchFailure(op, reason) when
/// it is a site that cannot be rewritten. `apply` rewrites a site `check` accepted and describes
/// it in one line. The cost policy is consulted between the two, on a copy of the layer.
class SitePattern : public mlir::RewritePattern {
public:
  SitePattern(llvm::StringRef rootName, mlir::MLIRContext *context, const CostPolicy &policy,
              RewriteLog *log)
      : mlir::RewritePattern(rootName, /*benefit=*/1, context), policy(policy), log(log) {}

  virtual llvm::LogicalResult check(mlir::Operation *op,
                                    mlir::PatternRewriter &rewriter) const = 0;
  virtual std::string apply(mlir::Operation *op, mlir::PatternRewriter &rewriter) const = 0;

  llvm::LogicalResult matchAndRewrite(mlir::Operation *op,
                                      mlir::PatternRewriter &rewriter) const final;

private:
  /// Rewrites the site on a copy of its layer and compares the estimates.
  bool pays(mlir::Operation *op) const;

  CostPolicy policy;
  RewriteLog *log;
};

/// A SitePattern rooted at ops of type OpT.
template <typename OpT>
class OpSitePattern : public SitePattern {
public:
  OpSitePattern(mlir::MLIRContext *context, const CostPolicy &policy, RewriteLog *log)
      : SitePattern(OpT::getOperationName(), context, policy, log) {}

  virtual llvm::LogicalResult checkSite(OpT op, mlir::PatternRewriter &rewriter) const = 0;
  virtual std::string applySite(OpT op, mlir::PatternRewriter &rewriter) const = 0;

  llvm::LogicalResult check(mlir::Operation *op,
                            mlir::PatternRewriter &rewriter) const final {
    return checkSite(mlir::cast<OpT>(op), rewriter);
  }
  std::string apply(mlir::Operation *op, mlir::PatternRewriter &rewriter) const final {
    return applySite(mlir::cast<OpT>(op), rewriter);
  }
};

} // namespace hector

#endif // HECTOR_LIB_OPTIMIZE_SITES_H
