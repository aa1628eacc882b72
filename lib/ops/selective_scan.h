// lib/ops/selective_scan.h
// The Mamba (S6) selective scan, with padding handled per utterance.
//
//   h_t[d,n] = exp(delta_t[d] * A[d,n]) * h_{t-1}[d,n] + delta_t[d] * B_t[n] * u_t[d]
//   y_t[d]   = sum_n C_t[n] * h_t[d,n] + D[d] * u_t[d]
//   out_t[d] = y_t[d] * silu(z_t[d])                       (when z is given)
// with delta <- softplus(delta + delta_bias) when options.delta_softplus.
#pragma once

#include <ATen/Tensor.h>

#include <utility>

namespace masr::ops {

struct ScanOptions {
  bool delta_softplus = true;
  // Scan from each utterance's last valid frame (lengths[b] - 1) down to frame 0. The input stays
  // in its original time order: no flipped copies, and padding never reaches real frames.
  bool reverse = false;
  // The output is output_scale * out (BiMamba averages its two directions: 0.5 each, applied
  // inside the scan instead of two extra passes over the outputs and their gradients).
  double output_scale = 1.0;
};

// Shapes: u, delta, z: (batch, channels, time); A: (channels, state); B, C: (batch, state, time);
// D, delta_bias: (channels); lengths: int64 (batch), valid frames per utterance.
// z, D, delta_bias and lengths may be undefined tensors (absent; no lengths = all frames valid).
// Returns (batch, channels, time) in u's dtype; the state is kept in float32 (float64 for double
// inputs); outputs at frames >= lengths[b] are zero. Differentiable in every floating input.
at::Tensor selective_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                          const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                          const at::Tensor& z, const at::Tensor& delta_bias,
                          const at::Tensor& lengths, const ScanOptions& options = {});

// BiMamba's two directions: one scan in time order, one from each utterance's last valid frame
// (ScanOptions::reverse), each with its own inputs and parameters, over the same z and lengths.
// Returns {forward output, reverse output}. On CUDA both run in one kernel launch, forward and
// backward; elsewhere they are two selective_scan calls (the definition the tests compare with).
struct ScanDirection {
  at::Tensor u, delta, A, B, C, D, delta_bias;  // as selective_scan's (D, delta_bias optional)
  // Instead of delta, its low-rank factors (Mamba's dt_proj): delta = delta_weight @ delta_low,
  // delta_weight (channels, R), delta_low (R, batch * time) with column b * time + t for frame t
  // of utterance b. The CUDA scan then keeps only the factors for the backward pass and
  // recomputes delta there (as mamba_ssm's checkpoint level 1 does), which saves a
  // (batch, channels, time) tensor per direction and layer of training memory.
  at::Tensor delta_low, delta_weight;
};
// delta as a (batch, channels, time) tensor: `delta`, or the product of the low-rank factors (a
// view of a (channels, batch * time) matrix).
at::Tensor delta_of(const ScanDirection& s);
// weight @ low in low's dtype, as a (batch, channels, time) view of the (channels, batch * time)
// product; unchecked (delta_of checks the factors' shapes).
at::Tensor low_rank_delta(const at::Tensor& low, const at::Tensor& weight, int64_t batch,
                          int64_t time);
// Both outputs are multiplied by output_scale (ScanOptions::output_scale).
std::pair<at::Tensor, at::Tensor> selective_scan_bidirectional(const ScanDirection& forward,
                                                               const ScanDirection& reverse,
                                                               const at::Tensor& z,
                                                               const at::Tensor& lengths,
                                                               bool delta_softplus = true,
                                                               double output_scale = 1.0);

// The same computation written step by step with tensor operations (autograd through LibTorch):
// slow, simple and obviously right; the reference that tests compare selective_scan against.
at::Tensor selective_scan_reference(const at::Tensor& u, const at::Tensor& delta,
                                    const at::Tensor& A, const at::Tensor& B, const at::Tensor& C,
                                    const at::Tensor& D, const at::Tensor& z,
                                    const at::Tensor& delta_bias, const at::Tensor& lengths,
                                    const ScanOptions& options = {});

}  // namespace masr::ops
