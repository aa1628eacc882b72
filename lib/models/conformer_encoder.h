// lib/models/conformer_encoder.h
// SpeechBrain's Conformer encoder (lobes/models/transformer/Conformer.py) with RelPosMHAXL,
// RoPEMHA or torch multi-head self-attention, Swish activations and the LayerNorm convolution
// module.
#pragma once

#include "models/encoder.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/macaron_layer.h"
#include "nn/wrappers.h"

namespace masr::models {

struct ConformerConfig {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t d_ffn = 2048;
  int64_t num_layers = 12;
  int64_t kernel_size = 31;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kSwish;  // conformer_activation upstream
  bool bias = true;
  bool causal = false;
  nn::AttentionType attention = nn::AttentionType::kRelPosMHAXL;
};

// x <- x + FFN1(x)/2; x <- x + MHA(LN1(x)); x <- x + Conv(x); x <- LN2(x + FFN2(x)/2).
// Keys: ffn_module1, mha_layer, convolution_module, ffn_module2, norm1.norm, norm2.norm.
struct ConformerEncoderLayerImpl : nn::MacaronLayerBase {
  explicit ConformerEncoderLayerImpl(const ConformerConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths, const at::Tensor& pos_embs,
                     const at::Tensor& attn_mask, const at::Tensor& key_padding_mask);
  nn::SelfAttention mha_layer;
};
TORCH_MODULE(ConformerEncoderLayer);

struct ConformerEncoder : Encoder {
  explicit ConformerEncoder(const ConformerConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) override;
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
  ConformerConfig config;
};

}  // namespace masr::models
