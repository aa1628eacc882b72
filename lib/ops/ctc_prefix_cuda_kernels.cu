// lib/ops/ctc_prefix_cuda_kernels.cu
// The CTC prefix recursion step on the GPU: one thread per (hypothesis, candidate) column walks
// the frames, so a decoding step is one launch instead of a few small kernels per frame.
#include <cuda_runtime.h>

#include "ops/ctc_prefix_kernels.h"

namespace masr::ops {
namespace {

__device__ __forceinline__ float log_add(float a, float b) {
  const float m = fmaxf(a, b);
  return m + log1pf(expf(-fabsf(a - b)));
}

__global__ void ctc_prefix_step_kernel(CtcPrefixStep s) {
  const int64_t column = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t N = s.rows, K = s.cols, NK = N * K;
  if (column >= NK) return;
  const int64_t n = column / K;
  const bool repeat = s.repeats[column] != 0;
  // Frames before the recursion's start: impossible, except r^n_0 of an empty prefix.
  for (int64_t t = 0; t < s.start; ++t) {
    s.r[(t * 2) * NK + column] = (t == 0 && s.first) ? s.xn[column] : s.minus_inf;
    s.r[(t * 2 + 1) * NK + column] = s.minus_inf;
  }
  float rn = s.r[((s.start - 1) * 2) * NK + column];
  float rb = s.r[((s.start - 1) * 2 + 1) * NK + column];
  float psi = rn;
  for (int64_t t = s.start; t < s.frames; ++t) {
    const float gn = s.r_prev[((t - 1) * 2) * N + n], gb = s.r_prev[((t - 1) * 2 + 1) * N + n];
    const float phi = repeat ? gb : log_add(gn, gb);
    const float x = s.xn[t * NK + column];
    psi = log_add(psi, phi + x);
    const float next_rb = log_add(rn, rb) + s.xb[t * N + n];
    rn = log_add(rn, phi) + x;
    rb = next_rb;
    s.r[(t * 2) * NK + column] = rn;
    s.r[(t * 2 + 1) * NK + column] = rb;
  }
  s.psi[column] = psi;
}

}  // namespace

const char* ctc_prefix_step_cuda(const CtcPrefixStep& s, void* stream) {
  const int64_t columns = s.rows * s.cols;
  if (columns == 0 || s.frames == 0) return nullptr;
  constexpr int kThreads = 128;
  const unsigned blocks = static_cast<unsigned>((columns + kThreads - 1) / kThreads);
  ctc_prefix_step_kernel<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(s);
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}

}  // namespace masr::ops
