//===- mma_layout_test.cpp - Tests of the tensor-core fragment layout -----===//
//
// The TF32 tensor-core math of the CUDA GEMM (segmented_gemm.cuh) loads its
// operands and visits its outputs through hector/cuda/mma_layout.h. Without a
// GPU, these tests run a warp-level model of `mma.sync.aligned.m16n8k8.row.
// col.f32.tf32.tf32.f32` on the CPU: each lane's registers are gathered from
// the shared-memory tiles exactly as the kernel gathers them, the product is
// formed from the registers as the PTX ISA places them (its fragment tables,
// written out below independently of the header), and the outputs are
// scattered as the kernel's `visit` scatters them. Every output of the tile
// must be visited exactly once and equal the tile product.
//
//===----------------------------------------------------------------------===//
#include "hector/cuda/mma_layout.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

using namespace hector::tmpl::gpu;

namespace {

/// The PTX ISA's fragment tables for .tf32 m16n8k8 ("Matrix Fragments for mma.m16n8k8"),
/// spelled as the ISA states them: groupID = laneid >> 2, threadID_in_group = laneid % 4.
struct PtxTables {
  static mma::Element a(int lane, int reg) {
    const int group = lane >> 2, member = lane % 4;
    const int row = (reg == 0 || reg == 2) ? group : group + 8;
    const int col = (reg == 0 || reg == 1) ? member : member + 4;
    return {row, col};
  }
  static mma::Element b(int lane, int reg) {
    const int group = lane >> 2, member = lane % 4;
    return {reg == 0 ? member : member + 4, group};
  }
  static mma::Element c(int lane, int reg) {
    const int group = lane >> 2, member = lane % 4;
    const int row = reg < 2 ? group : group + 8;
    return {row, member * 2 + (reg & 1)};
  }
};

template <int BM_, int BN_, int BK_, int Threads> struct TestTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, kThreads = Threads;
};

/// The tile product of As [BK][BM] and Bs [BK][BN] computed the way the kernel's TF32 math
/// does, one modelled mma at a time; returns C [BM][BN] and counts the visits of each output.
template <typename Tile>
void modelTile(const std::vector<double> &As, const std::vector<double> &Bs, std::vector<double> &C,
               std::vector<int> &visits) {
  using W = mma::WarpTiling<Tile>;
  C.assign(Tile::BM * Tile::BN, 0.0);
  visits.assign(Tile::BM * Tile::BN, 0);
  for (int warp = 0; warp < W::kWarps; ++warp) {
    // acc[lane][i][j][r], as each lane's registers.
    std::vector<double> acc(32 * W::kTilesM * W::kTilesN * mma::kCRegs, 0.0);
    auto accAt = [&](int lane, int i, int j, int r) -> double & {
      return acc[((lane * W::kTilesM + i) * W::kTilesN + j) * mma::kCRegs + r];
    };
    for (int kk = 0; kk < W::kSteps; ++kk)
      for (int i = 0; i < W::kTilesM; ++i)
        for (int j = 0; j < W::kTilesN; ++j) {
          // The registers of the warp, gathered as the kernel gathers them.
          double a[32][mma::kARegs], b[32][mma::kBRegs];
          for (int lane = 0; lane < 32; ++lane) {
            for (int r = 0; r < mma::kARegs; ++r) {
              const mma::Element e = W::aAt(warp, lane, i, r, kk);
              a[lane][r] = As[e.row * Tile::BM + e.col];
            }
            for (int r = 0; r < mma::kBRegs; ++r) {
              const mma::Element e = W::bAt(warp, lane, j, r, kk);
              b[lane][r] = Bs[e.row * Tile::BN + e.col];
            }
          }
          // The mma as the ISA defines it: matrices assembled from the registers.
          double A[mma::kM][mma::kK] = {}, B[mma::kK][mma::kN] = {};
          int seenA[mma::kM][mma::kK] = {}, seenB[mma::kK][mma::kN] = {};
          for (int lane = 0; lane < 32; ++lane) {
            for (int r = 0; r < mma::kARegs; ++r) {
              const mma::Element e = PtxTables::a(lane, r);
              A[e.row][e.col] = a[lane][r];
              ++seenA[e.row][e.col];
            }
            for (int r = 0; r < mma::kBRegs; ++r) {
              const mma::Element e = PtxTables::b(lane, r);
              B[e.row][e.col] = b[lane][r];
              ++seenB[e.row][e.col];
            }
          }
          for (int m = 0; m < mma::kM; ++m)
            for (int k = 0; k < mma::kK; ++k)
              REQUIRE(seenA[m][k] == 1);
          for (int k = 0; k < mma::kK; ++k)
            for (int n = 0; n < mma::kN; ++n)
              REQUIRE(seenB[k][n] == 1);
          for (int lane = 0; lane < 32; ++lane)
            for (int r = 0; r < mma::kCRegs; ++r) {
              const mma::Element e = PtxTables::c(lane, r);
              double sum = 0;
              for (int k = 0; k < mma::kK; ++k)
                sum += A[e.row][k] * B[k][e.col];
              accAt(lane, i, j, r) += sum;
            }
        }
    // The kernel's visit.
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < W::kTilesM; ++i)
        for (int j = 0; j < W::kTilesN; ++j)
          for (int r = 0; r < mma::kCRegs; ++r) {
            const mma::Element e = W::cAt(warp, lane, i, j, r);
            REQUIRE(e.row >= 0);
            REQUIRE(e.row < Tile::BM);
            REQUIRE(e.col >= 0);
            REQUIRE(e.col < Tile::BN);
            C[e.row * Tile::BN + e.col] = accAt(lane, i, j, r);
            ++visits[e.row * Tile::BN + e.col];
          }
  }
}

template <typename Tile> void checkTile() {
  std::mt19937_64 rng(17);
  std::uniform_int_distribution<int> small(-8, 8); // exact products and sums in double
  std::vector<double> As(Tile::BK * Tile::BM), Bs(Tile::BK * Tile::BN);
  for (double &x : As)
    x = small(rng);
  for (double &x : Bs)
    x = small(rng);
  std::vector<double> C;
  std::vector<int> visits;
  modelTile<Tile>(As, Bs, C, visits);
  for (int m = 0; m < Tile::BM; ++m)
    for (int n = 0; n < Tile::BN; ++n) {
      double want = 0;
      for (int k = 0; k < Tile::BK; ++k)
        want += As[k * Tile::BM + m] * Bs[k * Tile::BN + n];
      INFO("output (" << m << ", " << n << ")");
      REQUIRE(visits[m * Tile::BN + n] == 1);
      REQUIRE(C[m * Tile::BN + n] == want);
    }
}

} // namespace

TEST_CASE("tensor-core fragments: the header's tables are the PTX ISA's", "[cuda][mma]") {
  for (int lane = 0; lane < 32; ++lane) {
    for (int r = 0; r < mma::kARegs; ++r) {
      REQUIRE(mma::aElement(lane, r).row == PtxTables::a(lane, r).row);
      REQUIRE(mma::aElement(lane, r).col == PtxTables::a(lane, r).col);
    }
    for (int r = 0; r < mma::kBRegs; ++r) {
      REQUIRE(mma::bElement(lane, r).row == PtxTables::b(lane, r).row);
      REQUIRE(mma::bElement(lane, r).col == PtxTables::b(lane, r).col);
    }
    for (int r = 0; r < mma::kCRegs; ++r) {
      REQUIRE(mma::cElement(lane, r).row == PtxTables::c(lane, r).row);
      REQUIRE(mma::cElement(lane, r).col == PtxTables::c(lane, r).col);
    }
  }
}

TEST_CASE("tensor-core fragments: a modelled warp computes every tile's product once",
          "[cuda][mma]") {
  // The CUDA template's tiles: the forward's default (64 x 64 x 16, 256 threads), the weight
  // gradient's (64 x 64 over 16 rows), and the other tiles the CUDA tests instantiate.
  checkTile<TestTile<64, 64, 16, 256>>();
  checkTile<TestTile<32, 32, 8, 256>>();
  checkTile<TestTile<128, 64, 8, 256>>();
  checkTile<TestTile<64, 32, 8, 128>>();  // four warps
  checkTile<TestTile<16, 64, 16, 256>>(); // one warp row
}
