// lib/nn/conv_module.h
// The Conformer / ConMamba convolution module (SpeechBrain's ConvolutionModule, LayerNorm after
// the depthwise conv as in SB PR #1329).
#pragma once

#include <torch/torch.h>

#include "nn/activation.h"

namespace masr::nn {

// LayerNorm -> pointwise Conv1d(d, 2d) + GLU -> depthwise Conv1d(k) -> LayerNorm -> activation ->
// Linear(d, d) -> Dropout. Keys: layer_norm, bottleneck.0, conv, after_conv.0, after_conv.2.
struct ConvolutionModuleImpl : torch::nn::Module {
  ConvolutionModuleImpl(int64_t d_model, int64_t kernel_size, bool bias, Activation activation,
                        double dropout, bool causal);
  // x: (B, T, d); lengths: int64 (B) or undefined. Padded frames are zeroed before the depthwise
  // conv (so real frames never read padding; upstream ConMamba reads it) and in the output.
  // history: null for a whole sequence; for a causal module run chunk by chunk, the depthwise
  // conv's inputs before x, (B, d, padding), oldest first (zeros before the first chunk), which
  // the conv reads in place of its left padding and which is advanced past x.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths = {},
                     at::Tensor* history = nullptr);

  torch::nn::LayerNorm layer_norm{nullptr};
  torch::nn::Sequential bottleneck{nullptr};
  torch::nn::Conv1d conv{nullptr};
  torch::nn::Sequential after_conv{nullptr};
  int64_t padding = 0;
  bool causal = false;
  // The pointwise conv as a matrix product on (B, T, d) (always on CUDA; the CPU keeps the
  // Conv1d unless this is set, as tests do to compare the two).
  bool pointwise_as_matmul = false;
};
TORCH_MODULE(ConvolutionModule);

}  // namespace masr::nn
