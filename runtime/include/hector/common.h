//===- hector/common.h - Small helpers shared by the runtime ---*- C++ -*-===//
//
// Python-style spellings of dtypes and devices for error messages, and the checked conversions
// every runtime entry point uses.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace hector {

/// The Python spelling of a dtype ("torch.float32"), so that error messages read as the user wrote
/// the code.
inline std::string dtypeName(at::ScalarType type) {
  switch (type) {
  case at::kByte:
    return "torch.uint8";
  case at::kChar:
    return "torch.int8";
  case at::kShort:
    return "torch.int16";
  case at::kInt:
    return "torch.int32";
  case at::kLong:
    return "torch.int64";
  case at::kHalf:
    return "torch.float16";
  case at::kBFloat16:
    return "torch.bfloat16";
  case at::kFloat:
    return "torch.float32";
  case at::kDouble:
    return "torch.float64";
  case at::kBool:
    return "torch.bool";
  case at::kComplexFloat:
    return "torch.complex64";
  case at::kComplexDouble:
    return "torch.complex128";
  default:
    return std::string("torch.") + c10::toString(type);
  }
}

/// The Python spelling of a device ("cpu", "cuda:0").
inline std::string deviceName(const at::Device &device) { return device.str(); }

/// True for the integer dtypes an index tensor may have (bool is not an integer here).
inline bool isIndexDtype(at::ScalarType type) {
  return at::isIntegralType(type, /*includeBool=*/false);
}

/// Copies a 0-d tensor (or a one-element tensor) to the host and returns it as int64.
inline int64_t scalarToHost(const at::Tensor &t) { return t.item<int64_t>(); }

} // namespace hector
