// lib/ops/causal_conv_cuda_kernels.cu
// Fused causal depthwise conv1d + SiLU (the Mamba block's short convolution), forward and
// backward. One thread per (utterance, frame, channel), in one of two layouts: channels fastest
// (x a channel slice of a (batch, time, 2 * channels) projection: a warp reads 32 consecutive
// channels of one frame) or time fastest (x a row block of the time-major block's
// (2 * channels, batch * time) projection: a warp reads 32 consecutive frames of one channel).
// Memory-bound: a pass moves each value a few times (docs/kernels.md).
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

// Valid frames of utterance b: lengths[b] clamped to [0, time], or all of them.
__device__ __forceinline__ int64_t length_of(const ConvParams& p, int64_t b) {
  if (p.lengths == nullptr) return p.time;
  const int64_t len = p.lengths[b];
  return len < 0 ? 0 : len > p.time ? p.time : len;
}

// The pre-activation at (b, d, t); frames at or past len read as zeros.
template <typename T>
__device__ __forceinline__ float pre_activation(const ConvParams& p, int64_t b, int64_t d,
                                                int64_t t, int64_t len) {
  const T* x = static_cast<const T*>(p.x);
  const int64_t row = b * p.x_stride_b + d * p.x_stride_d;
  float acc = p.bias ? p.bias[d] : 0.f;
  for (int m = 0; m < p.width; ++m) {
    const int64_t s = t + tap_offset(p, m);
    if (s >= 0 && s < len)
      acc = fmaf(p.w[d * p.width + m], load_float(x, row + s * p.x_stride_t), acc);
  }
  return acc;
}

// Channel-fastest layout: grid x over the batch * time rows, y over blocks of channels (no 64-bit
// division per element: that alone cost more than the memory traffic); i is the element's index in
// (batch, time, channels) order.
struct ChannelMajorIndex {
  int64_t b, t, d, i, len;
  bool in_range;
};
__device__ __forceinline__ ChannelMajorIndex channel_major_index(const ConvParams& p) {
  ChannelMajorIndex x;
  const int64_t row = blockIdx.x;
  x.d = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  x.b = row / p.time;
  x.t = row - x.b * p.time;
  x.i = row * p.channels + x.d;
  x.in_range = x.d < p.channels;
  x.len = length_of(p, x.b);
  return x;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) forward_kernel(ConvParams p, T* u) {
  const ChannelMajorIndex x = channel_major_index(p);
  if (!x.in_range) return;
  const float a = x.t < x.len ? pre_activation<T>(p, x.b, x.d, x.t, x.len) : 0.f;
  store_float(u, x.i, a * sigmoid(a));
}

// gp = gu * silu'(pre), in (batch, time, channels) order.
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_pre_kernel(ConvParams p, ConvGrads g) {
  const ChannelMajorIndex x = channel_major_index(p);
  if (!x.in_range) return;
  if (x.t >= x.len) {
    g.gp[x.i] = 0.f;
    return;
  }
  const float a = pre_activation<T>(p, x.b, x.d, x.t, x.len), s = sigmoid(a);
  const float gu = load_float(static_cast<const T*>(g.gu),
                              x.b * g.gu_stride_b + x.d * g.gu_stride_d + x.t * g.gu_stride_t);
  g.gp[x.i] = gu * s * (1.f + a * (1.f - s));
}

// dx[b, d, t] = sum_m w[d, m] * gp[b, t - s_m, d] (the frames whose tap m read frame t).
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_x_kernel(ConvParams p, ConvGrads g) {
  const ChannelMajorIndex x = channel_major_index(p);
  if (!x.in_range) return;
  float acc = 0.f;
  for (int m = 0; m < p.width && x.t < x.len; ++m) {
    const int64_t o = x.t - tap_offset(p, m);
    if (o >= 0 && o < x.len)
      acc = fmaf(p.w[x.d * p.width + m], g.gp[(x.b * p.time + o) * p.channels + x.d], acc);
  }
  store_float(static_cast<T*>(g.dx), x.i, acc);
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
  int64_t b = first / p.time, t = first - b * p.time, len = length_of(p, b);
  for (int64_t row = first; row < last; ++row, ++t) {
    if (t == p.time) t = 0, ++b, len = length_of(p, b);
    const float gp = g.gp[row * p.channels + d];
    acc[kMaxWidth] += gp;
#pragma unroll
    for (int m = 0; m < kMaxWidth; ++m) {
      if (m >= p.width) break;
      const int64_t s = t + tap_offset(p, m);
      if (s >= 0 && s < len) {
        acc[m] =
            fmaf(gp, load_float(x, b * p.x_stride_b + d * p.x_stride_d + s * p.x_stride_t), acc[m]);
      }
    }
  }
  float* out = g.partials + (r * p.channels + d) * (p.width + 1);
  for (int m = 0; m < p.width; ++m) out[m] = acc[m];
  out[p.width] = acc[kMaxWidth];
}

// Time-fastest layout: grid x over the batch * channels rows, y over blocks of kThreads frames;
// gp in (batch, channels, time) order.
struct TimeMajorIndex {
  int64_t b, d, t, len;
  bool in_range;
};
__device__ __forceinline__ TimeMajorIndex time_major_index(const ConvParams& p) {
  TimeMajorIndex x;
  const int64_t row = blockIdx.x;
  x.t = int64_t(blockIdx.y) * blockDim.x + threadIdx.x;
  x.b = row / p.channels;
  x.d = row - x.b * p.channels;
  x.in_range = x.t < p.time;
  x.len = length_of(p, x.b);
  return x;
}

template <typename T>
__global__ void __launch_bounds__(kThreads) forward_tm_kernel(ConvParams p, T* u) {
  const TimeMajorIndex x = time_major_index(p);
  if (!x.in_range) return;
  const float a = x.t < x.len ? pre_activation<T>(p, x.b, x.d, x.t, x.len) : 0.f;
  store_float(u, x.b * p.u_stride_b + x.d * p.u_stride_d + x.t, a * sigmoid(a));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) grad_pre_tm_kernel(ConvParams p, ConvGrads g) {
  const TimeMajorIndex x = time_major_index(p);
  if (!x.in_range) return;
  const int64_t i = (x.b * p.channels + x.d) * p.time + x.t;
  if (x.t >= x.len) {
    g.gp[i] = 0.f;
    return;
  }
  const float a = pre_activation<T>(p, x.b, x.d, x.t, x.len), s = sigmoid(a);
  const float gu = load_float(static_cast<const T*>(g.gu),
                              x.b * g.gu_stride_b + x.d * g.gu_stride_d + x.t * g.gu_stride_t);
  g.gp[i] = gu * s * (1.f + a * (1.f - s));
}

template <typename T>
__global__ void __launch_bounds__(kThreads) grad_x_tm_kernel(ConvParams p, ConvGrads g) {
  const TimeMajorIndex x = time_major_index(p);
  if (!x.in_range) return;
  const float* gp = g.gp + (x.b * p.channels + x.d) * p.time;
  float acc = 0.f;
  for (int m = 0; m < p.width && x.t < x.len; ++m) {
    const int64_t o = x.t - tap_offset(p, m);
    if (o >= 0 && o < x.len) acc = fmaf(p.w[x.d * p.width + m], gp[o], acc);
  }
  store_float(static_cast<T*>(g.dx), x.b * p.dx_stride_b + x.d * p.dx_stride_d + x.t, acc);
}

// Frames per block of the time-major dw/dbias pass.
constexpr int64_t kFramesPerGroup = 4096;

// Block (d, r) sums gp * x at every tap and gp over frames [r, r + 1) * kFramesPerGroup of the
// batch * time frames of channel d (threads stride over them, then a fixed-order tree in shared
// memory: reproducible) into partials[r][d][0..width].
template <typename T>
__global__ void __launch_bounds__(kThreads) grad_w_tm_kernel(ConvParams p, ConvGrads g) {
  __shared__ float sums[kMaxWidth + 1][kThreads];
  const int64_t d = blockIdx.x, r = blockIdx.y, frames = p.batch * p.time;
  const int64_t first = r * kFramesPerGroup;
  const int64_t last = first + kFramesPerGroup < frames ? first + kFramesPerGroup : frames;
  const T* x = static_cast<const T*>(p.x);
  float acc[kMaxWidth + 1] = {};
  for (int64_t e = first + threadIdx.x; e < last; e += kThreads) {
    const int64_t b = e / p.time, t = e - b * p.time, len = length_of(p, b);
    const float gp = g.gp[(b * p.channels + d) * p.time + t];
    acc[kMaxWidth] += gp;
    const int64_t row = b * p.x_stride_b + d * p.x_stride_d;
#pragma unroll
    for (int m = 0; m < kMaxWidth; ++m) {
      if (m >= p.width) break;
      const int64_t s = t + tap_offset(p, m);
      if (s >= 0 && s < len) acc[m] = fmaf(gp, load_float(x, row + s * p.x_stride_t), acc[m]);
    }
  }
#pragma unroll
  for (int m = 0; m <= kMaxWidth; ++m) sums[m][threadIdx.x] = acc[m];
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
#pragma unroll
      for (int m = 0; m <= kMaxWidth; ++m) sums[m][threadIdx.x] += sums[m][threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    float* out = g.partials + (r * p.channels + d) * (p.width + 1);
    for (int m = 0; m < p.width; ++m) out[m] = sums[m][0];
    out[p.width] = sums[kMaxWidth][0];
  }
}

unsigned blocks_for(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
dim3 element_grid(const ConvParams& p) {
  if (p.time_major) {
    return dim3(static_cast<unsigned>(p.batch * p.channels), blocks_for(p.time));
  }
  return dim3(static_cast<unsigned>(p.batch * p.time), blocks_for(p.channels));
}

// The grid's limits: rows on x (2^31 - 1), blocks of channels (or frames) on y (65,535); the
// width.
const char* launch_problem(const ConvParams& p) {
  const int64_t rows = p.time_major ? p.batch * p.channels : p.batch * p.time;
  const int64_t columns = p.time_major ? p.time : p.channels;
  if (rows > 0x7fffffff || p.batch * p.time > 0x7fffffff ||
      (columns + kThreads - 1) / kThreads > 65535 ||
      (p.time_major && p.channels > 0x7fffffff)) {
    return "conv1d input too large for one launch";
  }
  if (p.width < 1 || p.width > kMaxWidth) return "conv1d width out of range";
  return nullptr;
}

template <typename T>
cudaError_t forward_typed(const ConvParams& p, void* u, cudaStream_t stream) {
  if (p.time_major) {
    forward_tm_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, static_cast<T*>(u));
  } else {
    forward_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, static_cast<T*>(u));
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t backward_typed(const ConvParams& p, const ConvGrads& g, cudaStream_t stream) {
  const int64_t groups = conv_partial_rows(p), rows = p.batch * p.time;
  if (p.time_major) {
    grad_pre_tm_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
    grad_x_tm_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
    const dim3 grid(static_cast<unsigned>(p.channels), static_cast<unsigned>(groups));
    grad_w_tm_kernel<T><<<grid, kThreads, 0, stream>>>(p, g);
    return cudaGetLastError();
  }
  grad_pre_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
  grad_x_kernel<T><<<element_grid(p), kThreads, 0, stream>>>(p, g);
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
  if (p.time_major) return rows > 0 ? (rows + kFramesPerGroup - 1) / kFramesPerGroup : 1;
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
