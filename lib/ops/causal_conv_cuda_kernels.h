// lib/ops/causal_conv_cuda_kernels.h
// Raw-pointer interface of the fused causal depthwise conv1d + SiLU kernels
// (causal_conv_cuda_kernels.cu): the Mamba block's short convolution. Needs no CUDA or LibTorch
// header, so the kernel file builds with nvcc alone (a CI compile check).
#pragma once

#include <cstdint>

#include "ops/selective_scan_cuda_kernels.h"  // ScanDtype

namespace masr::ops::cuda {

// u[b, d, t] = silu(bias[d] + sum_m w[d, m] * x[b, d, t + s_m]), s_m = m - (width - 1) (causal) or
// (width - 1) - m (reverse: the mirror image, looking ahead), x = 0 outside [0, length[b]).
// x: strides in elements (any layout). Two thread layouts:
//  - channels fastest (time_major = false): u, dx written in (batch, time, channels) order,
//    for x sliced from a (batch, time, 2 * channels) projection;
//  - time fastest (time_major = true, x's time stride 1): u, dx written at u_stride_* and
//    dx_stride_* (time stride 1), for the time-major Mamba block, whose projections are
//    (channels, batch * time) matrices.
// lengths: (batch) int64 on the device, or null (all frames valid); frames t >= lengths[b] of u
// and dx are zero.
struct ConvParams {
  int64_t batch = 0, channels = 0, time = 0;
  int width = 4;
  int64_t x_stride_b = 0, x_stride_d = 0, x_stride_t = 0;
  bool time_major = false;
  int64_t u_stride_b = 0, u_stride_d = 0;   // time_major only (time stride 1)
  int64_t dx_stride_b = 0, dx_stride_d = 0;  // time_major only (time stride 1)
  const int64_t* lengths = nullptr;
  ScanDtype dtype = ScanDtype::kFloat32;
  const void* x = nullptr;
  const float* w = nullptr;     // (channels, width)
  const float* bias = nullptr;  // (channels) or null
  bool reverse = false;
};

// The largest width the kernels take.
int conv_max_width();

// Launch on `stream` (a cudaStream_t). Return null, or the CUDA error's text.
const char* conv_silu_forward(const ConvParams& p, void* u, void* stream);

// gu: d loss / d u with strides gu_stride_{b,d,t}, in p.dtype. gp: batch * time * channels floats
// of workspace (d loss / d pre-activation, in the thread layout's order); partials: conv_partial_rows(p) * channels *
// (width + 1) floats, the per-row-group sums of dw and dbias, which the caller sums over the
// first dimension (a fixed order: no atomics, reproducible). dx in p.dtype.
struct ConvGrads {
  const void* gu = nullptr;
  int64_t gu_stride_b = 0, gu_stride_d = 0, gu_stride_t = 0;
  float* gp = nullptr;
  float* partials = nullptr;
  void* dx = nullptr;
};
int64_t conv_partial_rows(const ConvParams& p);
const char* conv_silu_backward(const ConvParams& p, const ConvGrads& g, void* stream);

}  // namespace masr::ops::cuda
