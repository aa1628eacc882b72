// lib/ops/causal_conv_cuda_kernels.cu
// Fused causal depthwise conv1d + SiLU (the Mamba block's short convolution), forward and
// backward. One thread per (utterance, frame, channel), channels fastest: the Mamba block's input
// is a channel slice of a (batch, time, 2 * channels) projection, so a warp reads 32 consecutive
// channels of one frame. Memory-bound: a pass moves each value a few times (docs/kernels.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "ops/causal_conv_cuda_kernels.h"

namespace masr::ops::cuda {
namespace {

constexpr int kMaxWidth = 8;
constexpr int kThreads = 256;

__device__ __forceinline__ float load_float(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_float(const __half* p, int64_t i) {
  return __half2float(p[i]);
}
__device__ __forceinline__ float load_float(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ __forceinline__ void store_float(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_float(__half* p, int64_t i, float v) {
  p[i] = __float2half_rn(v);
}
__device__ __forceinline__ void store_float(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

__device__ __forceinline__ float sigmoid(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }

// Time offset of tap m: the frame it reads relative to the output frame.
__device__ __forceinline__ int tap_offset(const ConvParams& p, int m) {
  return p.reverse ? p.width - 1 - m : m - (p.width - 1);
}

// The pre-activation at (b, d, t).
template <typename T>
__device__ __forceinline__ float pre_activation(const ConvParams& p, int64_t b, int64_t d,
                                                int64_t t) {
  const T* x = static_cast<const T*>(p.x);
  const int64_t row = b * p.x_stride_b + d * p.x_stride_d;
  float acc = p.bias ? p.bias[d] : 0.f;
  for (int m = 0; m < p.width; ++m) {
    const int64_t s = t + tap_offset(p, m);
    if (s >= 0 && s < p.time)
      acc = fmaf(p.w[d * p.width + m], load_float(x, row + s * p.x_stride_t), acc);
  }
  return acc;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) forward_kernel(ConvParams p, T* u) {
  // Grid: x over the batch * time rows, y over blocks of channels (no 64-bit division per
  // element: that alone cost more than the memory traffic).
  const int64_t row = blockIdx.x, d = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (d >= p.channels) return;
  const int64_t b = row / p.time, t = row - b * p.time, i = row * p.channels + d;
  const float a = pre_activation<T>(p, b, d, t);
  store_float(u, i, a * sigmoid(a));
}

// gp = gu * silu'(pre), in (batch, time, channels) order.
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_pre_kernel(ConvParams p, ConvGrads g) {
  // Grid: x over the batch * time rows, y over blocks of channels (no 64-bit division per
  // element: that alone cost more than the memory traffic).
  const int64_t row = blockIdx.x, d = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (d >= p.channels) return;
  const int64_t b = row / p.time, t = row - b * p.time, i = row * p.channels + d;
  const float a = pre_activation<T>(p, b, d, t), s = sigmoid(a);
  const float gu = load_float(static_cast<const T*>(g.gu),
                              b * g.gu_stride_b + d * g.gu_stride_d + t * g.gu_stride_t);
  g.gp[i] = gu * s * (1.f + a * (1.f - s));
}

// dx[b, d, t] = sum_m w[d, m] * gp[b, t - s_m, d] (the frames whose tap m read frame t).
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_x_kernel(ConvParams p, ConvGrads g) {
  // Grid: x over the batch * time rows, y over blocks of channels (no 64-bit division per
  // element: that alone cost more than the memory traffic).
  const int64_t row = blockIdx.x, d = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  if (d >= p.channels) return;
  const int64_t b = row / p.time, t = row - b * p.time, i = row * p.channels + d;
  float acc = 0.f;
  for (int m = 0; m < p.width; ++m) {
    const int64_t o = t - tap_offset(p, m);
    if (o >= 0 && o < p.time)
      acc = fmaf(p.w[d * p.width + m], g.gp[(b * p.time + o) * p.channels + d], acc);
  }
  store_float(static_cast<T*>(g.dx), i, acc);
}

// Row group r (a fixed run of the batch * time rows) sums, for each channel, gp * x at every tap
// (dw) and gp (dbias) into partials[r][d][0..width].
template <typename T>
__global__ void __launch_bounds__(kThreads)
    grad_w_kernel(ConvParams p, ConvGrads g, int64_t rows_per_group) {
  const int64_t d = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (d >= p.channels) return;
  const int64_t r = blockIdx.y, rows = p.batch * p.time;
  const int64_t first = r * rows_per_group;
  const int64_t last = first + rows_per_group < rows ? first + rows_per_group : rows;
  const T* x = static_cast<const T*>(p.x);
  float acc[kMaxWidth + 1] = {};
  int64_t b = first / p.time, t = first - b * p.time;
  for (int64_t row = first; row < last; ++row, ++t) {
    if (t == p.time) t = 0, ++b;
    const float gp = g.gp[row * p.channels + d];
    acc[kMaxWidth] += gp;
#pragma unroll
    for (int m = 0; m < kMaxWidth; ++m) {
      if (m >= p.width) break;
      const int64_t s = t + tap_offset(p, m);
      if (s >= 0 && s < p.time) {
        acc[m] =
            fmaf(gp, load_float(x, b * p.x_stride_b + d * p.x_stride_d + s * p.x_stride_t), acc[m]);
      }
    }
  }
  float* out = g.partials + (r * p.channels + d) * (p.width + 1);
  for (int m = 0; m < p.width; ++m) out[m] = acc[m];
  out[p.width] = acc[kMaxWidth];
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
dim3 element_grid(const ConvParams& p) {
  return dim3(static_cast<unsigned>(p.batch * p.time), blocks_for(p.channels));
}

// The grid's limits: rows on x (2^31 - 1), channel blocks on y (65,535); the width.
const char* launch_problem(const ConvParams& p) {
  if (p.batch * p.time > 0x7fffffff || (p.channels + kThreads - 1) / kThreads > 65535) {
    return "conv1d input too large for one launch";
  }
  if (p.width < 1 || p.width > kMaxWidth) return "conv1d width out of range";
  return nullptr;
}

template <typename T>
cudaError_t forward_typed(const ConvParams& p, void* u, cudaStream_t stream) {
  forward_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, static_cast<T*>(u));
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_typed(const ConvParams& p, const ConvGrads& g, cudaStream_t stream) {
  grad_pre_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
  grad_x_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
  const int64_t groups = conv_partial_rows(p), rows = p.batch * p.time;
  const dim3 grid(blocks_for(p.channels), static_cast<unsigned>(groups));
  grad_w_kernel<T><<<grid, kThreads, 0, stream>>>(p, g, (rows + groups - 1) / groups);
  return cudaGetLastError();
}

const char* error_text(cudaError_t err) {
  return err == cudaSuccess ? nullptr : cudaGetErrorString(err);
}

}  // namespace

int conv_max_width() { return kMaxWidth; }

// Row groups for the dw/dbias pass: about 256 K threads in all (two full waves of 2048-thread
// multiprocessors on a large GPU), each summing a run of rows; fewer groups left the pass
// latency-bound (one long dependent loop per thread).
int64_t conv_partial_rows(const ConvParams& p) {
  const int64_t rows = p.batch * p.time;
  int64_t groups = (int64_t(1) << 18) / (p.channels > 0 ? p.channels : 1);
  if (groups > rows) groups = rows;
  return groups > 0 ? groups : 1;
}

namespace {

// Checks the shape, then runs launch(T{}) with T the element type of p.dtype.
template <typename Launch>
const char* launch_typed(const ConvParams& p, Launch&& launch) {
  if (p.batch * p.time * p.channels == 0) return nullptr;
  if (const char* problem = launch_problem(p)) return problem;
  switch (p.dtype) {
    case ScanDtype::kFloat32:
      return error_text(launch(float{}));
    case ScanDtype::kFloat16:
      return error_text(launch(__half{}));
    default:
      return error_text(launch(__nv_bfloat16{}));
  }
}

}  // namespace

const char* conv_silu_forward(const ConvParams& p, void* u, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return launch_typed(p, [&](auto t) { return forward_typed<decltype(t)>(p, u, s); });
}

const char* conv_silu_backward(const ConvParams& p, const ConvGrads& g, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return launch_typed(p, [&](auto t) { return backward_typed<decltype(t)>(p, g, s); });
}

}  // namespace masr::ops::cuda
