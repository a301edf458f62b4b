//===- mma_layout_test.cpp - Tests of the tensor-core fragment layout -----===//
//
// The tensor-core math of the CUDA GEMM (segmented_gemm.cuh) loads its
// operands and visits its outputs through hector/cuda/mma_layout.h, for both
// of its fragment policies:
//   - mma::Tf32:    `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`, one
//                   element per 32-bit register;
//   - mma::Sixteen: `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.
//                   {bf16,f16}.f32`, two 16-bit elements per register.
// Without a GPU, these tests run a warp-level model of the product on the
// CPU: each lane's registers are gathered from the shared-memory tiles
// exactly as the kernel gathers them (element e of the header's fragment into
// register e / kPack, half e % kPack), the product is formed from the
// registers as the PTX ISA places them (its fragment tables and its packing of
// elements into registers, written out below independently of the header),
// and the outputs are scattered as the kernel's `visit` scatters them. Every
// output of the tile must be visited exactly once and equal the tile product;
// a deliberately wrong mapping must make the modelled product wrong.
//
//===----------------------------------------------------------------------===//
#include "hector/cuda/mma_layout.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace hector::tmpl::gpu;

namespace {

/// The PTX ISA's C and D fragment (16 x 8, .f32) of both products, spelled as the ISA states it:
/// groupID = laneid >> 2, threadID_in_group = laneid % 4; row groupID for ci with i < 2, else
/// groupID + 8; column threadID_in_group * 2 + (i & 1).
mma::Element ptxC(int lane, int i) {
  const int group = lane >> 2, member = lane % 4;
  const int row = i < 2 ? group : group + 8;
  return {row, member * 2 + (i & 1)};
}

/// The PTX ISA's fragment tables for .tf32 m16n8k8 ("Matrix Fragments for mma.m16n8k8"), in
/// terms of its elements a0..a3 and b0..b1, one per .b32 register (ai in register i).
struct PtxTf32 {
  static constexpr int kK = 8;
  static constexpr int kAElems = 4, kBElems = 2;
  /// Elements per .b32 register.
  static constexpr int kPerReg = 1;
  static mma::Element a(int lane, int i) {
    const int group = lane >> 2, member = lane % 4;
    const int row = (i == 0 || i == 2) ? group : group + 8;
    const int col = (i == 0 || i == 1) ? member : member + 4;
    return {row, col};
  }
  static mma::Element b(int lane, int i) {
    const int group = lane >> 2, member = lane % 4;
    return {i == 0 ? member : member + 4, group};
  }
};

/// The PTX ISA's fragment tables for .bf16 / .f16 m16n8k16 ("Matrix Fragments for
/// mma.m16n8k16 with floating point type"), in terms of its elements a0..a7 and b0..b3; the ISA
/// packs a0, a1 into the first .b32 register (a0 in the low half), a2, a3 into the second, and
/// so on, and likewise b0, b1 and b2, b3.
struct PtxSixteen {
  static constexpr int kK = 16;
  static constexpr int kAElems = 8, kBElems = 4;
  static constexpr int kPerReg = 2;
  static mma::Element a(int lane, int i) {
    const int group = lane >> 2, member = lane % 4;
    const int row = ((0 <= i && i < 2) || (4 <= i && i < 6)) ? group : group + 8;
    const int col = i < 4 ? member * 2 + (i & 1) : member * 2 + (i & 1) + 8;
    return {row, col};
  }
  static mma::Element b(int lane, int i) {
    const int group = lane >> 2, member = lane % 4;
    const int row = i < 2 ? member * 2 + (i & 1) : member * 2 + (i & 1) + 8;
    return {row, group};
  }
};

/// The ISA's tables for the product a fragment policy of the header issues.
template <typename Frag> struct PtxOf;
template <> struct PtxOf<mma::Tf32> { using type = PtxTf32; };
template <> struct PtxOf<mma::Sixteen> { using type = PtxSixteen; };

/// Deliberately wrong policies: the header's, with two elements of A exchanged. In Tf32 the two
/// registers of a column pair (rows group and group + 8); in Sixteen the two halves of each
/// register (columns 2 * member and 2 * member + 1).
struct SwappedTf32 : mma::Tf32 {
  static mma::Element aElement(int lane, int i) { return mma::Tf32::aElement(lane, i ^ 1); }
};
struct SwappedHalves : mma::Sixteen {
  static mma::Element aElement(int lane, int i) { return mma::Sixteen::aElement(lane, i ^ 1); }
};

template <int BM_, int BN_, int BK_, int Threads> struct TestTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, kThreads = Threads;
};

/// What the model computed: C [BM][BN], the visits of each output, and how often a
/// fragment's matrix was not assembled from the warp's registers with each of its elements
/// exactly once, or the kernel would read or write outside the tile.
struct Model {
  std::vector<double> C;
  std::vector<int> visits;
  int badFragments = 0, outside = 0;
};

/// The tile product of As [BK][BM] and Bs [BK][BN] computed the way the kernel's tensor-core
/// math with fragment policy Frag does, one modelled mma at a time, the mma being the one the
/// ISA defines in Isa.
template <typename Tile, typename Frag, typename Isa = typename PtxOf<Frag>::type>
Model modelTile(const std::vector<double> &As, const std::vector<double> &Bs) {
  using W = mma::WarpTiling<Tile, Frag>;
  static_assert(Frag::kPack == Isa::kPerReg && Frag::kAElems == Isa::kAElems &&
                    Frag::kBElems == Isa::kBElems && Frag::kK == Isa::kK,
                "the policy's registers must be the ISA's");
  static_assert(Frag::kARegs * Frag::kPack == Frag::kAElems &&
                    Frag::kBRegs * Frag::kPack == Frag::kBElems,
                "every half of every register holds an element");
  constexpr int kARegs = Frag::kARegs, kBRegs = Frag::kBRegs, kPack = Frag::kPack;
  constexpr int kK = Isa::kK;
  Model out;
  out.C.assign(Tile::BM * Tile::BN, 0.0);
  out.visits.assign(Tile::BM * Tile::BN, 0);
  for (int warp = 0; warp < W::kWarps; ++warp) {
    // acc[lane][i][j][r], as each lane's registers.
    std::vector<double> acc(32 * W::kTilesM * W::kTilesN * mma::kCRegs, 0.0);
    auto accAt = [&](int lane, int i, int j, int r) -> double & {
      return acc[((lane * W::kTilesM + i) * W::kTilesN + j) * mma::kCRegs + r];
    };
    for (int kk = 0; kk < W::kSteps; ++kk)
      for (int i = 0; i < W::kTilesM; ++i)
        for (int j = 0; j < W::kTilesN; ++j) {
          // The registers of the warp, [lane][register][half], gathered as the kernel gathers
          // them: element e into register e / kPack, half e % kPack.
          double a[32][kARegs][kPack] = {}, b[32][kBRegs][kPack] = {};
          for (int lane = 0; lane < 32; ++lane) {
            for (int e = 0; e < Frag::kAElems; ++e) {
              const mma::Element x = W::aAt(warp, lane, i, e, kk);
              if (x.row < 0 || x.row >= Tile::BK || x.col < 0 || x.col >= Tile::BM) {
                ++out.outside;
                continue;
              }
              a[lane][e / kPack][e % kPack] = As[x.row * Tile::BM + x.col];
            }
            for (int e = 0; e < Frag::kBElems; ++e) {
              const mma::Element x = W::bAt(warp, lane, j, e, kk);
              if (x.row < 0 || x.row >= Tile::BK || x.col < 0 || x.col >= Tile::BN) {
                ++out.outside;
                continue;
              }
              b[lane][e / kPack][e % kPack] = Bs[x.row * Tile::BN + x.col];
            }
          }
          // The mma as the ISA defines it: matrices assembled from the registers, half h of
          // register r being the ISA's element r * kPerReg + h.
          double A[mma::kM][kK] = {}, B[kK][mma::kN] = {};
          int seenA[mma::kM][kK] = {}, seenB[kK][mma::kN] = {};
          for (int lane = 0; lane < 32; ++lane) {
            for (int r = 0; r < kARegs; ++r)
              for (int h = 0; h < Isa::kPerReg; ++h) {
                const mma::Element x = Isa::a(lane, r * Isa::kPerReg + h);
                A[x.row][x.col] = a[lane][r][h];
                ++seenA[x.row][x.col];
              }
            for (int r = 0; r < kBRegs; ++r)
              for (int h = 0; h < Isa::kPerReg; ++h) {
                const mma::Element x = Isa::b(lane, r * Isa::kPerReg + h);
                B[x.row][x.col] = b[lane][r][h];
                ++seenB[x.row][x.col];
              }
          }
          for (int m = 0; m < mma::kM; ++m)
            for (int k = 0; k < kK; ++k)
              out.badFragments += seenA[m][k] != 1;
          for (int k = 0; k < kK; ++k)
            for (int n = 0; n < mma::kN; ++n)
              out.badFragments += seenB[k][n] != 1;
          for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < mma::kCRegs; ++r) {
              const mma::Element x = ptxC(lane, r);
              double sum = 0;
              for (int k = 0; k < kK; ++k)
                sum += A[x.row][k] * B[k][x.col];
              accAt(lane, i, j, r) += sum;
            }
        }
    // The kernel's visit.
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < W::kTilesM; ++i)
        for (int j = 0; j < W::kTilesN; ++j)
          for (int r = 0; r < mma::kCRegs; ++r) {
            const mma::Element x = W::cAt(warp, lane, i, j, r);
            if (x.row < 0 || x.row >= Tile::BM || x.col < 0 || x.col >= Tile::BN) {
              ++out.outside;
              continue;
            }
            out.C[x.row * Tile::BN + x.col] = accAt(lane, i, j, r);
            ++out.visits[x.row * Tile::BN + x.col];
          }
  }
  return out;
}

/// Random operands of a tile: small integers, so that every product and sum is exact in
/// double and representable in .tf32, .bf16 and .f16.
template <typename Tile> void randomOperands(std::vector<double> &As, std::vector<double> &Bs) {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> small(-8, 8);
  As.resize(Tile::BK * Tile::BM);
  Bs.resize(Tile::BK * Tile::BN);
  for (double &x : As)
    x = small(rng);
  for (double &x : Bs)
    x = small(rng);
}

template <typename Tile>
double wantAt(const std::vector<double> &As, const std::vector<double> &Bs, int m, int n) {
  double want = 0;
  for (int k = 0; k < Tile::BK; ++k)
    want += As[k * Tile::BM + m] * Bs[k * Tile::BN + n];
  return want;
}

template <typename Tile, typename Frag> void checkTile() {
  INFO("tile " << Tile::BM << " x " << Tile::BN << " x " << Tile::BK << ", " << Tile::kThreads
               << " threads, " << Frag::kK << "-deep products");
  std::vector<double> As, Bs;
  randomOperands<Tile>(As, Bs);
  const Model got = modelTile<Tile, Frag>(As, Bs);
  REQUIRE(got.outside == 0);
  REQUIRE(got.badFragments == 0);
  for (int m = 0; m < Tile::BM; ++m)
    for (int n = 0; n < Tile::BN; ++n) {
      INFO("output (" << m << ", " << n << ")");
      REQUIRE(got.visits[m * Tile::BN + n] == 1);
      REQUIRE(got.C[m * Tile::BN + n] == wantAt<Tile>(As, Bs, m, n));
    }
}

/// The model with a wrong policy Wrong (for the ISA's product Isa) still assembles whole
/// fragments and visits every output once, but must get some output wrong.
template <typename Tile, typename Wrong, typename Isa> void checkWrongTileFails() {
  std::vector<double> As, Bs;
  randomOperands<Tile>(As, Bs);
  const Model got = modelTile<Tile, Wrong, Isa>(As, Bs);
  REQUIRE(got.outside == 0);
  REQUIRE(got.badFragments == 0);
  int wrong = 0;
  for (int m = 0; m < Tile::BM; ++m)
    for (int n = 0; n < Tile::BN; ++n) {
      REQUIRE(got.visits[m * Tile::BN + n] == 1);
      wrong += got.C[m * Tile::BN + n] != wantAt<Tile>(As, Bs, m, n);
    }
  REQUIRE(wrong > 0);
}

/// The header's tables of policy Frag are the ISA's, element by element, and its registers
/// hold the ISA's number of elements.
template <typename Frag> void checkTables() {
  using Isa = typename PtxOf<Frag>::type;
  REQUIRE(Frag::kK == Isa::kK);
  REQUIRE(Frag::kAElems == Isa::kAElems);
  REQUIRE(Frag::kBElems == Isa::kBElems);
  REQUIRE(Frag::kPack == Isa::kPerReg);
  REQUIRE(Frag::kARegs == Isa::kAElems / Isa::kPerReg);
  REQUIRE(Frag::kBRegs == Isa::kBElems / Isa::kPerReg);
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    for (int e = 0; e < Frag::kAElems; ++e) {
      INFO("a" << e);
      REQUIRE(Frag::aElement(lane, e).row == Isa::a(lane, e).row);
      REQUIRE(Frag::aElement(lane, e).col == Isa::a(lane, e).col);
    }
    for (int e = 0; e < Frag::kBElems; ++e) {
      INFO("b" << e);
      REQUIRE(Frag::bElement(lane, e).row == Isa::b(lane, e).row);
      REQUIRE(Frag::bElement(lane, e).col == Isa::b(lane, e).col);
    }
  }
}

} // namespace

TEST_CASE("tensor-core fragments: the header's tables are the PTX ISA's", "[cuda][mma]") {
  REQUIRE(mma::kM == 16);
  REQUIRE(mma::kN == 8);
  REQUIRE(mma::kCRegs == 4);
  for (int lane = 0; lane < 32; ++lane)
    for (int r = 0; r < mma::kCRegs; ++r) {
      REQUIRE(mma::cElement(lane, r).row == ptxC(lane, r).row);
      REQUIRE(mma::cElement(lane, r).col == ptxC(lane, r).col);
    }
  SECTION(".tf32 m16n8k8") { checkTables<mma::Tf32>(); }
  SECTION(".bf16 / .f16 m16n8k16") { checkTables<mma::Sixteen>(); }
}

TEST_CASE("tensor-core fragments: a modelled warp computes every tile's product once",
          "[cuda][mma]") {
  SECTION(".tf32 m16n8k8") {
    // The CUDA template's tiles: the forward's default (64 x 64 x 16, 256 threads), the weight
    // gradient's (64 x 64 over 16 rows), and the other tiles the CUDA tests instantiate.
    checkTile<TestTile<64, 64, 16, 256>, mma::Tf32>();
    checkTile<TestTile<32, 32, 8, 256>, mma::Tf32>();
    checkTile<TestTile<128, 64, 8, 256>, mma::Tf32>();
    checkTile<TestTile<64, 32, 8, 128>, mma::Tf32>();  // four warps
    checkTile<TestTile<16, 64, 16, 256>, mma::Tf32>(); // one warp row
  }
  SECTION(".bf16 / .f16 m16n8k16") {
    // Depths are multiples of 16: the 16-bit forward's default (64 x 64 x 32, 256 threads),
    // and the other shapes above, deepened where needed.
    checkTile<TestTile<64, 64, 32, 256>, mma::Sixteen>();
    checkTile<TestTile<64, 64, 16, 256>, mma::Sixteen>();
    checkTile<TestTile<32, 32, 16, 256>, mma::Sixteen>();
    checkTile<TestTile<128, 64, 32, 256>, mma::Sixteen>();
    checkTile<TestTile<64, 32, 16, 128>, mma::Sixteen>(); // four warps
    checkTile<TestTile<16, 64, 32, 256>, mma::Sixteen>(); // one warp row
  }
}

TEST_CASE("tensor-core fragments: the model catches a wrong mapping", "[cuda][mma]") {
  SECTION(".tf32 m16n8k8: rows group and group + 8 of A exchanged") {
    checkWrongTileFails<TestTile<64, 64, 16, 256>, SwappedTf32, PtxTf32>();
  }
  SECTION(".bf16 / .f16 m16n8k16: the halves of A's registers exchanged") {
    checkWrongTileFails<TestTile<64, 64, 32, 256>, SwappedHalves, PtxSixteen>();
  }
}
