// lib/ops/ctc_prefix_cpu.cpp
// The CTC prefix recursion step on the CPU: hypotheses in parallel, the candidates of one
// hypothesis as the inner (vectorizable) loop, frames in order.
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

#include "ops/ctc_prefix_kernels.h"

namespace masr::ops {
namespace {

inline float log_add(float a, float b) {
  const float m = a > b ? a : b;
  return m + std::log1p(std::exp(-std::fabs(a - b)));
}

void step_rows(const CtcPrefixStep& s, int64_t n_begin, int64_t n_end) {
  const int64_t N = s.rows, K = s.cols, NK = N * K;
  std::vector<float> rn(K), rb(K), psi(K);
  for (int64_t n = n_begin; n < n_end; ++n) {
    const uint8_t* repeats = s.repeats + n * K;
    for (int64_t t = 0; t < s.start; ++t) {
      float* rn_t = s.r + (t * 2) * NK + n * K;
      float* rb_t = rn_t + NK;
      for (int64_t k = 0; k < K; ++k) {
        rn_t[k] = (t == 0 && s.first) ? s.xn[n * K + k] : s.minus_inf;
        rb_t[k] = s.minus_inf;
      }
    }
    const float* r0 = s.r + ((s.start - 1) * 2) * NK + n * K;
    for (int64_t k = 0; k < K; ++k) rn[k] = psi[k] = r0[k], rb[k] = r0[NK + k];
    for (int64_t t = s.start; t < s.frames; ++t) {
      const float gn = s.r_prev[((t - 1) * 2) * N + n], gb = s.r_prev[((t - 1) * 2 + 1) * N + n];
      const float g_sum = log_add(gn, gb), blank = s.xb[t * N + n];
      const float* x = s.xn + t * NK + n * K;
      float* rn_t = s.r + (t * 2) * NK + n * K;
      float* rb_t = rn_t + NK;
      for (int64_t k = 0; k < K; ++k) {
        const float phi = repeats[k] ? gb : g_sum;
        psi[k] = log_add(psi[k], phi + x[k]);
        rb_t[k] = rb[k] = log_add(rn[k], rb[k]) + blank;
        rn_t[k] = rn[k] = log_add(rn[k], phi) + x[k];
      }
    }
    for (int64_t k = 0; k < K; ++k) s.psi[n * K + k] = psi[k];
  }
}

}  // namespace

void ctc_prefix_step_cpu(const CtcPrefixStep& s) {
  if (s.rows == 0 || s.cols == 0 || s.frames == 0) return;
  // A grain of a few hypotheses: one is T x K updates, microseconds.
  at::parallel_for(0, s.rows, 4, [&](int64_t begin, int64_t end) { step_rows(s, begin, end); });
}

}  // namespace masr::ops
