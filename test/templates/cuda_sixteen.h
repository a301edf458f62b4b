//===- cuda_sixteen.h - 16-bit element types for the CUDA template tests --===//
//
// bfloat16 and float16 elements that convert to and from float on the host
// and the device, as c10::BFloat16 and c10::Half do in emitted code, with the
// std::numeric_limits the CUDA GEMM reads to tell the two formats apart
// (8 and 11 significant bits). Conversions round to nearest even
// (cuda_bf16.h and cuda_fp16.h).
//
//===----------------------------------------------------------------------===//
#ifndef HECTOR_TEST_TEMPLATES_CUDA_SIXTEEN_H
#define HECTOR_TEST_TEMPLATES_CUDA_SIXTEEN_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>

namespace hector {
namespace tmpl {
namespace testing {

struct DevBf16 {
  __nv_bfloat16 v;
  DevBf16() = default;
  __host__ __device__ DevBf16(float f) : v(__float2bfloat16_rn(f)) {}        // NOLINT: like c10
  __host__ __device__ operator float() const { return __bfloat162float(v); } // NOLINT
};

struct DevHalf {
  __half v;
  DevHalf() = default;
  __host__ __device__ DevHalf(float f) : v(__float2half_rn(f)) {}        // NOLINT: like c10
  __host__ __device__ operator float() const { return __half2float(v); } // NOLINT
};

} // namespace testing
} // namespace tmpl
} // namespace hector

namespace std {
template <> class numeric_limits<hector::tmpl::testing::DevBf16> {
public:
  static constexpr bool is_specialized = true;
  static constexpr int digits = 8;
  static constexpr int max_exponent = 128;
};
template <> class numeric_limits<hector::tmpl::testing::DevHalf> {
public:
  static constexpr bool is_specialized = true;
  static constexpr int digits = 11;
  static constexpr int max_exponent = 16;
};
} // namespace std

#endif // HECTOR_TEST_TEMPLATES_CUDA_SIXTEEN_H
