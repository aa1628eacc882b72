// lib/models/transformer_encoder.h
// SpeechBrain v1.0's Transformer encoder (lobes/models/transformer/Transformer.py), pre- or
// post-LayerNorm, with torch multi-head attention, RelPosMHAXL or RoPEMHA.
#pragma once

#include "models/encoder.h"
#include "models/transformer_stack.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/wrappers.h"

namespace masr::models {

struct TransformerEncoderConfig : TransformerStackConfig {
  bool causal = false;
  nn::AttentionType attention = nn::AttentionType::kRegularMHA;
};

// Keys: self_att (att.*, RelPosMHAXL's or RoPEMHA's), pos_ffn.ffn.*, norm1.norm, norm2.norm (eps
// 1e-6).
struct TransformerEncoderLayerImpl : torch::nn::Module {
  explicit TransformerEncoderLayerImpl(const TransformerEncoderConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& attn_mask,
                     const at::Tensor& key_padding_mask, const at::Tensor& pos_embs);
  nn::SelfAttention self_att;
  nn::PositionwiseFeedForward pos_ffn{nullptr};
  nn::SbLayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Dropout dropout1{nullptr}, dropout2{nullptr};
  bool normalize_before = true;
};
TORCH_MODULE(TransformerEncoderLayer);

struct TransformerEncoder : Encoder {
  explicit TransformerEncoder(const TransformerEncoderConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) override;
  // attn_mask: bool (T, T) or undefined; key_padding_mask: bool (B, T) or undefined.
  at::Tensor forward_masked(const at::Tensor& x, const at::Tensor& attn_mask,
                            const at::Tensor& key_padding_mask);
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
  TransformerEncoderConfig config;
};

}  // namespace masr::models
