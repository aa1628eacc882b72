// lib/ops/ctc_prefix_kernels.h
// One step of the CTC prefix recursion (Watanabe et al. 2017, Algorithm 2, lines 10-13) over
// every (hypothesis, candidate) column at once: a CPU loop and a CUDA kernel on raw pointers.
#pragma once

#include <cstdint>

namespace masr::ops {

// All float32, contiguous. T frames, N hypotheses, K candidate tokens per hypothesis.
struct CtcPrefixStep {
  int64_t frames = 0, rows = 0, cols = 0;
  int64_t start = 1;                 // first frame of the recursion (max(1, prefix length))
  bool first = false;                // the prefix is empty: r^n_0(c) = p_0(c)
  const float* xn = nullptr;         // (T, N, K) log p_t(c) of each candidate c
  const float* xb = nullptr;         // (T, N) log p_t(blank)
  const float* r_prev = nullptr;     // (T, 2, N) ln r^n_t(g), ln r^b_t(g) of the prefix g
  const uint8_t* repeats = nullptr;  // (N, K) 1 where c equals g's last token
  float* r = nullptr;                // out (T, 2, N, K): ln r^n_t(g+c), ln r^b_t(g+c)
  float* psi = nullptr;              // out (N, K): ln psi(g+c) before the eos/blank rules
  float minus_inf = -1e20f;          // the finite "impossible" score the scorer uses
};

void ctc_prefix_step_cpu(const CtcPrefixStep& s);

// Launch on `stream` (a cudaStream_t). Return null, or the CUDA error's text.
const char* ctc_prefix_step_cuda(const CtcPrefixStep& s, void* stream);

}  // namespace masr::ops
