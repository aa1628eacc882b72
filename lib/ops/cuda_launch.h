// lib/ops/cuda_launch.h
// What the CUDA op wrappers (selective_scan_cuda.cpp, causal_conv.cpp) share on the LibTorch side:
// the kernels' element type for a tensor, the launch-error check, optional tensor arguments.
// Included only in builds with CUDA (MASR_WITH_CUDA).
#pragma once

#include <ATen/Tensor.h>
#include <c10/util/Optional.h>

#include <string>

#include "core/error.h"
#include "ops/selective_scan_cuda_kernels.h"

namespace masr::ops {

// The element types the kernels take: float32, float16, bfloat16.
inline bool cuda_kernel_dtype_supported(at::ScalarType t) {
  return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}
inline cuda::ScanDtype cuda_kernel_dtype(at::ScalarType t) {
  return t == at::kFloat  ? cuda::ScanDtype::kFloat32
         : t == at::kHalf ? cuda::ScanDtype::kFloat16
                          : cuda::ScanDtype::kBFloat16;
}

// A launcher returned the CUDA error's text (or null): an error naming the op and the pass.
inline void check_cuda_launch(const char* error, const char* op, const char* pass) {
  if (error != nullptr) {
    throw_input_error(std::string(op) + ": CUDA " + pass + " kernel failed: " + error);
  }
}

// An optional autograd argument from a possibly undefined tensor.
inline c10::optional<at::Tensor> optional_tensor(const at::Tensor& t) {
  return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt;
}

}  // namespace masr::ops
