// lib/nn/cgmlp.h
// The convolutional gating MLP of SpeechBrain's Branchformer (lobes/models/convolution.py
// ConvolutionalSpatialGatingUnit, lobes/models/transformer/Branchformer.py ConvolutionBranch).
#pragma once

#include <torch/torch.h>

#include "nn/activation.h"
#include "nn/wrappers.h"

namespace masr::nn {

// x (B, T, D) split in halves x1, x2 -> x1 * Dropout(LayerNorm(x2) -> depthwise Conv1d(k, "same",
// reflect-padded) [-> Linear]) with an identity gate activation. Keys norm.norm.*, conv.conv.*,
// linear.* (use_linear_after_conv). Returns (B, T, D/2).
struct ConvolutionalSpatialGatingUnitImpl : torch::nn::Module {
  ConvolutionalSpatialGatingUnitImpl(int64_t input_size, int64_t kernel_size, double dropout,
                                     bool use_linear_after_conv);
  at::Tensor forward(const at::Tensor& x);

  SbLayerNorm norm{nullptr};
  torch::nn::Module* conv_holder = nullptr;  // SpeechBrain's Conv1d wrapper (`conv.conv`)
  torch::nn::Conv1d conv{nullptr};
  torch::nn::Linear linear{nullptr};
  torch::nn::Dropout dropout{nullptr};
  int64_t kernel_size = 31;
};
TORCH_MODULE(ConvolutionalSpatialGatingUnit);

// Linear(d, units) -> activation -> CSGU -> Linear(units / 2, d). Keys pre_channel_proj,
// csgu, post_channel_proj.
struct ConvolutionBranchImpl : torch::nn::Module {
  ConvolutionBranchImpl(int64_t input_size, int64_t linear_units, int64_t kernel_size,
                        Activation activation, double dropout, bool use_linear_after_conv);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear pre_channel_proj{nullptr}, post_channel_proj{nullptr};
  ConvolutionalSpatialGatingUnit csgu{nullptr};
  Activation activation = Activation::kGelu;
};
TORCH_MODULE(ConvolutionBranch);

}  // namespace masr::nn
