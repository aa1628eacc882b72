// lib/models/branchformer_encoder.h
// SpeechBrain's Branchformer encoder (lobes/models/transformer/Branchformer.py, Peng et al. 2022):
// per layer, self-attention and a convolutional gating MLP side by side, merged by a linear layer.
#pragma once

#include "models/encoder.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/cgmlp.h"
#include "nn/wrappers.h"

namespace masr::models {

struct BranchformerConfig {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_layers = 12;
  int64_t kernel_size = 31;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kGelu;  // branchformer_activation upstream
  nn::AttentionType attention = nn::AttentionType::kRelPosMHAXL;
  int64_t csgu_linear_units = 3072;
  bool use_linear_after_conv = false;
};

// x <- x + Dropout(merge_proj([Dropout(MHA(norm_mhsa(x))), Dropout(cgMLP(norm_conv(x)))])).
// Keys: mha_layer, convolution_branch, merge_proj, norm_mhsa.norm, norm_conv.norm.
struct BranchformerEncoderLayerImpl : torch::nn::Module {
  explicit BranchformerEncoderLayerImpl(const BranchformerConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& pos_embs,
                     const at::Tensor& key_padding_mask);
  nn::SelfAttention mha_layer;
  nn::ConvolutionBranch convolution_branch{nullptr};
  torch::nn::Linear merge_proj{nullptr};
  nn::SbLayerNorm norm_mhsa{nullptr}, norm_conv{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(BranchformerEncoderLayer);

// Layers, then LayerNorm (eps 1e-6). Non-causal: SpeechBrain's Branchformer has no causal mode.
struct BranchformerEncoder : Encoder {
  explicit BranchformerEncoder(const BranchformerConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) override;
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
  BranchformerConfig config;
};

}  // namespace masr::models
