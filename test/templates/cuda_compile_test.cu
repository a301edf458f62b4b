//===- cuda_compile_test.cu - Instantiates every CUDA kernel template -----===//
//
// Compiled (never run) for sm_80 and sm_90: every launch helper for float and
// double, every scatter mode and layout, two tile configurations each, the
// TF32 tensor-core math for float on four tile configurations, the 16-bit
// tensor-core math (and the SIMT math) for bfloat16 and float16 (32-bit
// indices: the index type only changes the gather loads, which float and
// double cover), and the traversal kernels with the functor shapes emitted
// code uses, for 32- and 64-bit indices; problems of mixed element types (16-bit
// A beside float32 B and C) on the SIMT and TF32 math.
//
//===----------------------------------------------------------------------===//
#include "cuda_sixteen.h"
#include "functors.h"
#include "hector/cuda/segmented_gemm.cuh"
#include "hector/cuda/traversal.cuh"
#include "hector/emit/node_traversal.cuh"

namespace hector {
namespace tmpl {
namespace gpu {
namespace {

using testing::AttentionLogit;
using testing::SoftmaxAggregate;
using testing::WeightedSum;

template <typename T, BOp Op, typename Tile, typename Index> void gemmModes(cudaStream_t s) {
  GemmProblem<T, Index> p;
  launchSegmentedGemm<T, Op, Scatter::kStore, Tile>(p, nullptr, 0, s);
  launchSegmentedGemm<T, Op, Scatter::kAccumulate, Tile>(p, nullptr, 0, s);
  launchSegmentedGemm<T, Op, Scatter::kAccumulateIndexPerSegment, Tile>(p, nullptr, 0, s);
  WeightGradProblem<T, Index> w;
  launchSegmentedWeightGrad<T, Op, Assign::kStore>(w, 256, nullptr, 0, s);
  launchSegmentedWeightGrad<T, Op, Assign::kAdd>(w, 256, nullptr, 0, s);
}

template <typename T, typename Index> void traversals(cudaStream_t s) {
  EdgeRows<Index> edges;
  Csr<Index> csr;
  launchEdgeMap(edges, AttentionLogit<T>{}, s);
  emit::gpu::launchNodeTraversal<3>(csr, SoftmaxAggregate<T, 4, 16>{}, s);
  emit::gpu::launchNodeTraversal<1>(csr, WeightedSum<T, 64>{}, s);
  emit::gpu::launchPairTraversal(csr, WeightedSum<T, 64>{}, s);
  launchRunSum<T, Index>(csr, nullptr, 64, nullptr, true, s);
}

/// The TF32 tensor-core math (float only), explicitly and through the run-time choice.
template <BOp Op, typename Tile, typename Index> void tensorCoreModes(cudaStream_t s) {
  GemmProblem<float, Index> p;
  launchSegmentedGemm<float, Op, Scatter::kStore, Tile, MathPath::kTensorTf32>(p, nullptr, 0, s);
  launchSegmentedGemm<float, Op, Scatter::kAccumulate, Tile, MathPath::kTensorTf32>(p, nullptr, 0,
                                                                                    s);
  launchSegmentedGemm<float, Op, Scatter::kAccumulateIndexPerSegment, Tile, MathPath::kTensorTf32>(
      p, nullptr, 0, s);
  launchSegmentedGemm<float, Op, Scatter::kStore>(p, nullptr, 0, s, MathPath::kTensorTf32);
  WeightGradProblem<float, Index> w;
  launchSegmentedWeightGrad<float, Op, Assign::kStore>(w, 256, nullptr, 0, s,
                                                       MathPath::kTensorTf32);
  launchSegmentedWeightGrad<float, Op, Assign::kAdd, WgradTile<32, 32, 8, 2, 2>,
                            MathPath::kTensorTf32>(w, 256, nullptr, 0, s);
}

/// The 16-bit tensor-core math (bfloat16, float16): explicitly on three tiles, through the
/// run-time choice whatever it asks for, and the SIMT math on 16-bit tiles; the run sum.
template <typename T, typename Index> void sixteenBit(cudaStream_t s) {
  GemmProblem<T, Index> p;
  using Tile = typename DefaultGemmTile<T>::type;
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore, Tile, MathPath::kTensor16>(p, nullptr, 0,
                                                                                     s);
  launchSegmentedGemm<T, BOp::kTranspose, Scatter::kAccumulate, Tile, MathPath::kTensor16>(
      p, nullptr, 0, s);
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment,
                      GemmTile<32, 32, 16, 2, 2>, MathPath::kTensor16>(p, nullptr, 0, s);
  launchSegmentedGemm<T, BOp::kTranspose, Scatter::kStore, GemmTile<128, 64, 16, 8, 4>,
                      MathPath::kTensor16>(p, nullptr, 0, s);
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore, Tile, MathPath::kSimt>(p, nullptr, 0, s);
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kAccumulate>(p, nullptr, 0, s, MathPath::kSimt);
  launchSegmentedGemm<T, BOp::kTranspose, Scatter::kAccumulateIndexPerSegment>(
      p, nullptr, 0, s, MathPath::kTensorTf32);
  WeightGradProblem<T, Index> w;
  launchSegmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(w, 256, nullptr, 0, s,
                                                               MathPath::kSimt);
  launchSegmentedWeightGrad<T, BOp::kTranspose, Assign::kAdd>(w, 256, nullptr, 0, s,
                                                              MathPath::kTensor16);
  launchSegmentedWeightGrad<T, BOp::kIdentity, Assign::kAdd, WgradTile<32, 32, 16, 2, 2>,
                            MathPath::kTensor16>(w, 256, nullptr, 0, s);
  launchRunSum<T, Index>(Csr<Index>{}, nullptr, 64, nullptr, false, s);
}

/// Problems whose operands have their own element types (16-bit rows of A beside a float32 B,
/// a float32 or 16-bit C): staged as float, on the SIMT and TF32 math, explicitly and through
/// the run-time choice.
template <typename T, typename Index> void mixedTypes(cudaStream_t s) {
  using Tile = typename DefaultGemmTile<float>::type;
  GemmProblem<T, Index, float, float> wide;
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore, Tile, MathPath::kSimt>(wide, nullptr, 0,
                                                                                 s);
  launchSegmentedGemm<T, BOp::kTranspose, Scatter::kAccumulate, Tile, MathPath::kTensorTf32>(
      wide, nullptr, 0, s);
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kAccumulateIndexPerSegment>(
      wide, nullptr, 0, s, MathPath::kTensorTf32);
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore>(wide, nullptr, 0, s, MathPath::kSimt);
  GemmProblem<T, Index, float, T> rounded;
  launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore>(rounded, nullptr, 0, s,
                                                          MathPath::kTensorTf32);
  GemmProblem<float, Index, T, float> sixteenB;
  launchSegmentedGemm<float, BOp::kTranspose, Scatter::kAccumulate>(sixteenB, nullptr, 0, s,
                                                                    MathPath::kSimt);
  WeightGradProblem<T, Index, float, float> w;
  launchSegmentedWeightGrad<T, BOp::kIdentity, Assign::kStore>(w, 256, nullptr, 0, s,
                                                               MathPath::kSimt);
  launchSegmentedWeightGrad<T, BOp::kTranspose, Assign::kAdd>(w, 256, nullptr, 0, s,
                                                              MathPath::kTensorTf32);
  WeightGradProblem<T, Index, float, T> wRounded;
  launchSegmentedWeightGrad<T, BOp::kIdentity, Assign::kAdd>(wRounded, 256, nullptr, 0, s,
                                                             MathPath::kSimt);
}

template <typename T, typename Index> void everything(cudaStream_t s) {
  gemmModes<T, BOp::kIdentity, typename DefaultGemmTile<T>::type, Index>(s);
  gemmModes<T, BOp::kTranspose, typename DefaultGemmTile<T>::type, Index>(s);
  gemmModes<T, BOp::kIdentity, GemmTile<32, 32, 8, 2, 2>, Index>(s);
  gemmModes<T, BOp::kTranspose, GemmTile<128, 64, 8, 8, 4>, Index>(s);
  launchSegmentedWeightGrad<T, BOp::kIdentity, Assign::kStore, WgradTile<32, 32, 8, 2, 2>>(
      WeightGradProblem<T, Index>{}, 256, nullptr, 0, s);
  traversals<T, Index>(s);
  if constexpr (std::is_same_v<T, float>) {
    tensorCoreModes<BOp::kIdentity, typename DefaultGemmTile<T>::type, Index>(s);
    tensorCoreModes<BOp::kTranspose, typename DefaultGemmTile<T>::type, Index>(s);
    tensorCoreModes<BOp::kIdentity, GemmTile<32, 32, 8, 2, 2>, Index>(s);
    tensorCoreModes<BOp::kTranspose, GemmTile<128, 64, 8, 8, 4>, Index>(s);
  } else {
    // double asks for TF32 and is computed in double.
    launchSegmentedGemm<T, BOp::kIdentity, Scatter::kStore>(GemmProblem<T, Index>{}, nullptr, 0, s,
                                                            MathPath::kTensorTf32);
  }
}

} // namespace

/// Referenced so that nothing above is discarded before code generation.
void instantiateAllTemplates(cudaStream_t s) {
  everything<float, std::int64_t>(s);
  everything<double, std::int64_t>(s);
  everything<float, std::int32_t>(s);
  everything<double, std::int32_t>(s);
  sixteenBit<testing::DevBf16, std::int32_t>(s);
  sixteenBit<testing::DevHalf, std::int32_t>(s);
  mixedTypes<testing::DevBf16, std::int32_t>(s);
  mixedTypes<testing::DevHalf, std::int64_t>(s);
}

} // namespace gpu
} // namespace tmpl
} // namespace hector
