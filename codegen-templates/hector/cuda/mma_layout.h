//===- hector/cuda/mma_layout.h - Tensor-core fragments of the GEMM tile --===//
//
// Where each lane's registers of `mma.sync.aligned.m16n8k8.row.col.f32.tf32.
// tf32.f32` sit in its matrices (the PTX ISA's fragment layout for .tf32
// m16n8k8), and how the warps of a block split a GEMM tile into such
// products. Plain host/device functions without CUDA headers, so that the
// CPU tests can check the mapping (test/templates/mma_layout_test.cpp) and
// the CUDA template (segmented_gemm.cuh) uses the very same functions.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H
#define HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H

#include "hector/kernel_common.h"

namespace hector {
namespace tmpl {
namespace gpu {
namespace mma {

/// The shape of one product: D (kM x kN) = A (kM x kK) * B (kK x kN) + C.
constexpr int kM = 16, kN = 8, kK = 8;
/// Registers per lane: A and C/D four, B two.
constexpr int kARegs = 4, kBRegs = 2, kCRegs = 4;

/// A position in one of the fragment's matrices.
struct Element {
  int row, col;
};

/// Lane `lane`'s register `i` of A (kM x kK, row-major): rows group and group + 8, columns
/// member and member + 4, where group = lane / 4 and member = lane % 4.
HECTOR_HD Element aElement(int lane, int i) {
  return {(lane >> 2) + (i & 1) * 8, (lane & 3) + (i >> 1) * 4};
}

/// Lane `lane`'s register `i` of B (kK x kN, column-major): row (k) member and member + 4,
/// column group.
HECTOR_HD Element bElement(int lane, int i) { return {(lane & 3) + i * 4, lane >> 2}; }

/// Lane `lane`'s register `i` of C and D (kM x kN): rows group and group + 8, columns
/// 2 * member and 2 * member + 1.
HECTOR_HD Element cElement(int lane, int i) {
  return {(lane >> 2) + (i >> 1) * 8, (lane & 3) * 2 + (i & 1)};
}

/// How the warps of a block compute a Tile::BM x Tile::BN tile over Tile::BK: kWarpsM x
/// kWarpsN warps, warp w at rows rowOf(w) and columns colOf(w), each owning kTilesM x
/// kTilesN products of kM x kN and stepping kSteps products of depth kK per tile step.
template <typename Tile> struct WarpTiling {
  static constexpr int kWarps = Tile::kThreads / 32;
  static constexpr int kWarpsM = (kWarps % 2 == 0 && Tile::BM % (2 * kM) == 0) ? 2 : 1;
  static constexpr int kWarpsN = kWarps / kWarpsM;
  static constexpr int kWarpRows = Tile::BM / kWarpsM, kWarpCols = Tile::BN / kWarpsN;
  static constexpr int kTilesM = kWarpRows / kM, kTilesN = kWarpCols / kN;
  static constexpr int kSteps = Tile::BK / kK;
  static_assert(Tile::kThreads % 32 == 0, "whole warps");
  static_assert(Tile::BM % (kWarpsM * kM) == 0 && Tile::BN % (kWarpsN * kN) == 0,
                "the tile must split into the warps' 16 x 8 products");
  static_assert(Tile::BK % kK == 0, "the tile's depth must be a multiple of 8");
  HECTOR_HD static int rowOf(int warp) { return (warp / kWarpsN) * kWarpRows; }
  HECTOR_HD static int colOf(int warp) { return (warp % kWarpsN) * kWarpCols; }

  /// The shared-memory element {k, m} of the k-major A tile (As[k][m]) that lane `lane` of
  /// warp `warp` holds in A register `r` of its piece `i` (0 <= i < kTilesM) in step `kk`.
  HECTOR_HD static Element aAt(int warp, int lane, int i, int r, int kk) {
    const Element e = aElement(lane, r);
    return {kk * kK + e.col, rowOf(warp) + i * kM + e.row};
  }
  /// The element {k, n} of the k-major B tile (Bs[k][n]) in B register `r` of piece `j`.
  HECTOR_HD static Element bAt(int warp, int lane, int j, int r, int kk) {
    const Element e = bElement(lane, r);
    return {kk * kK + e.row, colOf(warp) + j * kN + e.col};
  }
  /// The output {m, n} of the tile in accumulator register `r` of piece (i, j).
  HECTOR_HD static Element cAt(int warp, int lane, int i, int j, int r) {
    const Element e = cElement(lane, r);
    return {rowOf(warp) + i * kM + e.row, colOf(warp) + j * kN + e.col};
  }
};

} // namespace mma
} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H
