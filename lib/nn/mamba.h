// lib/nn/mamba.h
// The Mamba (S6) block, unidirectional (mamba_ssm 1.1.3 `Mamba`) or bidirectional "v2" as in
// xi-j/Mamba-ASR modules/mamba/bimamba.py: shared in_proj/out_proj, per-direction conv1d, x_proj,
// dt_proj, A_log, D, and the two directions averaged (if_devide_out=True).
#pragma once

#include <torch/torch.h>

#include "nn/quantized_linear.h"
#include "ops/selective_scan.h"

namespace masr::nn {

struct MambaConfig {
  int64_t d_state = 16;
  int64_t expand = 2;
  int64_t d_conv = 4;
  int64_t dt_rank = 0;  // 0: ceil(d_model / 16), mamba_ssm's "auto"
  bool conv_bias = true;
  bool bias = false;  // in_proj / out_proj
};

struct MambaImpl : torch::nn::Module {
  MambaImpl(int64_t d_model, const MambaConfig& config, bool bidirectional);

  // x: (B, T, d_model); lengths: int64 (B) or undefined (every frame valid) -> (B, T, d_model).
  // With lengths, each utterance is computed as if alone: padding is zeroed before the convs, the
  // backward direction starts at the utterance's own last frame, and outputs at padding are zero
  // before out_proj.
  // On CUDA this is forward_time_major; elsewhere the (B, T, channels) formulation below.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths = {});

  // The same block with every projection computed as a (channels, B * T) matrix, as mamba_ssm
  // lays it out: each (B, channels, T) view then has time contiguous, which the scan and conv
  // kernels read and write in place, so no tensor of the block is transposed or copied, forward
  // or backward. Any device (the CPU runs it in tests against forward's CPU formulation).
  at::Tensor forward_time_major(const at::Tensor& x, const at::Tensor& lengths = {});

  int64_t d_model = 0, d_inner = 0, d_state = 0, d_conv = 0, dt_rank = 0;
  bool bidirectional = false;
  // Decoding on CPUs with int8 matrix products (models/int8_encoder.h sets their int8 copies):
  // forward() then computes in_proj / out_proj with those (an input error in training mode).
  // forward_time_major, the CUDA formulation, and models/mamba_step.h use the float layers.
  OptionalInt8Linear in_proj, out_proj;
  torch::nn::Conv1d conv1d{nullptr}, conv1d_b{nullptr};
  torch::nn::Linear x_proj{nullptr}, x_proj_b{nullptr}, dt_proj{nullptr}, dt_proj_b{nullptr};
  at::Tensor A_log, A_b_log, D, D_b;  // NOLINT: upstream names

 private:
  // One direction's scan inputs from x: (B, d_inner, T); reverse = anti-causal conv (the scan
  // itself runs in reverse through ops::selective_scan_bidirectional or ScanOptions::reverse).
  ops::ScanDirection direction(const at::Tensor& x, torch::nn::Conv1d& conv, torch::nn::Linear& xp,
                               torch::nn::Linear& dtp, const at::Tensor& a_log,
                               const at::Tensor& d, bool reverse) const;
  void init_direction(torch::nn::Linear& dtp, at::Tensor& a_log, at::Tensor& d);
  // forward_time_major's direction: x, the result's u, delta, B, C are (B, C, T) views of
  // (C, B * T) matrices; lengths as forward's (undefined: all frames).
  ops::ScanDirection time_major_direction(const at::Tensor& x, const at::Tensor& lengths,
                                          torch::nn::Conv1d& conv, torch::nn::Linear& xp,
                                          torch::nn::Linear& dtp, const at::Tensor& a_log,
                                          const at::Tensor& d, bool reverse) const;
};
TORCH_MODULE(Mamba);

}  // namespace masr::nn
