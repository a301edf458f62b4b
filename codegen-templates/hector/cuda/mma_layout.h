//===- hector/cuda/mma_layout.h - Tensor-core fragments of the GEMM tile --===//
//
// Where each lane's registers of the warp-level products the GEMM template
// issues sit in their matrices (the PTX ISA's fragment layouts), and how the
// warps of a block split a GEMM tile into such products:
//   - Tf32:    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, one
//              element per register;
//   - Sixteen: mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32,
//              two 16-bit elements per register (the lower-numbered one in
//              the low half).
// Both accumulate a 16 x 8 FP32 C fragment of four registers. Plain
// host/device functions without CUDA headers, so that the CPU tests can
// check the mapping (test/templates/mma_layout_test.cpp) and the CUDA
// template (segmented_gemm.cuh) uses the very same functions.
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H
#define HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H

#include "hector/kernel_common.h"

namespace hector {
namespace tmpl {
namespace gpu {
namespace mma {

/// The output shape of one product: D (kM x kN) = A (kM x K) * B (K x kN) + C.
constexpr int kM = 16, kN = 8;
/// FP32 accumulator registers per lane (C and D).
constexpr int kCRegs = 4;

/// A position in one of the fragment's matrices.
struct Element {
  int row, col;
};

/// Lane `lane`'s register `i` of C and D (kM x kN): rows group and group + 8, columns
/// 2 * member and 2 * member + 1, where group = lane / 4 and member = lane % 4.
HECTOR_HD Element cElement(int lane, int i) {
  return {(lane >> 2) + (i >> 1) * 8, (lane & 3) * 2 + (i & 1)};
}

/// The .tf32 m16n8k8 product: depth 8, one element per register.
struct Tf32 {
  static constexpr int kK = 8;
  /// Elements per lane (A four, B two) and per 32-bit register.
  static constexpr int kAElems = 4, kBElems = 2, kPack = 1;
  static constexpr int kARegs = kAElems / kPack, kBRegs = kBElems / kPack;

  /// Lane `lane`'s element `i` of A (kM x kK, row-major): rows group and group + 8, columns
  /// member and member + 4.
  HECTOR_HD static Element aElement(int lane, int i) {
    return {(lane >> 2) + (i & 1) * 8, (lane & 3) + (i >> 1) * 4};
  }
  /// Lane `lane`'s element `i` of B (kK x kN, column-major): rows (k) member and member + 4,
  /// column group.
  HECTOR_HD static Element bElement(int lane, int i) { return {(lane & 3) + i * 4, lane >> 2}; }
};

/// The .bf16 / .f16 m16n8k16 product: depth 16, two elements per register; element i is in
/// register i / 2, in its low half when i is even.
struct Sixteen {
  static constexpr int kK = 16;
  static constexpr int kAElems = 8, kBElems = 4, kPack = 2;
  static constexpr int kARegs = kAElems / kPack, kBRegs = kBElems / kPack;

  /// Lane `lane`'s element `i` of A (kM x kK, row-major): registers 0 and 2 on row group,
  /// 1 and 3 on row group + 8; registers 0 and 1 at columns 2 * member and 2 * member + 1,
  /// 2 and 3 eight columns further.
  HECTOR_HD static Element aElement(int lane, int i) {
    return {(lane >> 2) + ((i >> 1) & 1) * 8, (lane & 3) * 2 + (i & 1) + (i >> 2) * 8};
  }
  /// Lane `lane`'s element `i` of B (kK x kN, column-major): column group; register 0 at rows
  /// (k) 2 * member and 2 * member + 1, register 1 eight rows further.
  HECTOR_HD static Element bElement(int lane, int i) {
    return {(lane & 3) * 2 + (i & 1) + (i >> 1) * 8, lane >> 2};
  }
};

/// How the warps of a block compute a Tile::BM x Tile::BN tile over Tile::BK with products of
/// shape Frag (Tf32 or Sixteen): kWarpsM x kWarpsN warps, warp w at rows rowOf(w) and columns
/// colOf(w), each owning kTilesM x kTilesN products of kM x kN and stepping kSteps products of
/// depth Frag::kK per tile step.
template <typename Tile, typename Frag = Tf32> struct WarpTiling {
  static constexpr int kWarps = Tile::kThreads / 32;
  static constexpr int kWarpsM = (kWarps % 2 == 0 && Tile::BM % (2 * kM) == 0) ? 2 : 1;
  static constexpr int kWarpsN = kWarps / kWarpsM;
  static constexpr int kWarpRows = Tile::BM / kWarpsM, kWarpCols = Tile::BN / kWarpsN;
  static constexpr int kTilesM = kWarpRows / kM, kTilesN = kWarpCols / kN;
  static constexpr int kSteps = Tile::BK / Frag::kK;
  static_assert(Tile::kThreads % 32 == 0, "whole warps");
  static_assert(Tile::BM % (kWarpsM * kM) == 0 && Tile::BN % (kWarpsN * kN) == 0,
                "the tile must split into the warps' 16 x 8 products");
  static_assert(Tile::BK % Frag::kK == 0, "the tile's depth must be a multiple of the product's");
  HECTOR_HD static int rowOf(int warp) { return (warp / kWarpsN) * kWarpRows; }
  HECTOR_HD static int colOf(int warp) { return (warp % kWarpsN) * kWarpCols; }

  /// The shared-memory element {k, m} of the k-major A tile (As[k][m]) that lane `lane` of
  /// warp `warp` holds as A element `e` of its piece `i` (0 <= i < kTilesM) in step `kk`.
  HECTOR_HD static Element aAt(int warp, int lane, int i, int e, int kk) {
    const Element x = Frag::aElement(lane, e);
    return {kk * Frag::kK + x.col, rowOf(warp) + i * kM + x.row};
  }
  /// The element {k, n} of the k-major B tile (Bs[k][n]) held as B element `e` of piece `j`.
  HECTOR_HD static Element bAt(int warp, int lane, int j, int e, int kk) {
    const Element x = Frag::bElement(lane, e);
    return {kk * Frag::kK + x.row, colOf(warp) + j * kN + x.col};
  }
  /// The output {m, n} of the tile in accumulator register `r` of piece (i, j).
  HECTOR_HD static Element cAt(int warp, int lane, int i, int j, int r) {
    const Element x = cElement(lane, r);
    return {rowOf(warp) + i * kM + x.row, colOf(warp) + j * kN + x.col};
  }
};

} // namespace mma
} // namespace gpu
} // namespace tmpl
} // namespace hector

#endif // HECTOR_TEMPLATES_CUDA_MMA_LAYOUT_H
