// lib/ops/causal_conv.h
// The Mamba block's short convolution: a depthwise conv1d over time with `width` taps, followed by
// SiLU. Causal (each frame sees itself and the width - 1 frames before it) or reverse (the mirror
// image: itself and the width - 1 frames after it, as the upstream BiMamba gets by flipping time
// and running the causal conv); zeros outside the utterance.
#pragma once

#include <ATen/Tensor.h>

namespace masr::ops {

// x: (B, D, T), any strides; weight: (D, 1, width) as torch.nn.Conv1d(groups = D) holds it; bias:
// (D) or undefined; lengths: (B) integer or undefined: frames t >= lengths[b] of x are read as
// zeros and are zero in the output. Returns silu(conv) (B, D, T) in x's dtype. On CUDA tensors of
// a build with CUDA (float32, float16, bfloat16, width <= 8) one fused kernel per pass, written
// in (B, T, D) memory order, or in (D, B, T) order when x is time-contiguous (the time-major
// Mamba block); elsewhere LibTorch's conv1d and silu. Differentiable in x, weight and bias either
// way.
at::Tensor causal_conv1d_silu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              bool reverse, const at::Tensor& lengths = {});

// The LibTorch formulation (what the CPU runs), for tests of the fused kernels.
at::Tensor causal_conv1d_silu_reference(const at::Tensor& x, const at::Tensor& weight,
                                        const at::Tensor& bias, bool reverse,
                                        const at::Tensor& lengths = {});

}  // namespace masr::ops
