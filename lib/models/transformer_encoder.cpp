// lib/models/transformer_encoder.cpp
// Transformer encoder layers.
#include "models/transformer_encoder.h"

#include "nn/checkpoint.h"
#include "nn/masks.h"

namespace masr::models {

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderConfig& c)
    : normalize_before(c.normalize_before) {
  // Every attention kind is registered as `self_att`, SpeechBrain's attribute name.
  self_att =
      nn::SelfAttention(*this, "self_att", c.attention, c.d_model, c.nhead, c.dropout, c.causal,
                        c.d_ffn);
  pos_ffn = register_module(
      "pos_ffn", nn::PositionwiseFeedForward(c.d_model, c.d_ffn, c.dropout, c.activation));
  norm1 = register_module("norm1", nn::SbLayerNorm(c.d_model, 1e-6));
  norm2 = register_module("norm2", nn::SbLayerNorm(c.d_model, 1e-6));
  dropout1 = register_module("dropout1", torch::nn::Dropout(c.dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(c.dropout));
}

at::Tensor TransformerEncoderLayerImpl::forward(const at::Tensor& src, const at::Tensor& attn_mask,
                                                const at::Tensor& key_padding_mask,
                                                const at::Tensor& pos_embs) {
  const at::Tensor in = normalize_before ? norm1->forward(src) : src;
  const at::Tensor att = self_att.forward(in, pos_embs, attn_mask, key_padding_mask);
  at::Tensor x = src + dropout1->forward(att);
  if (!normalize_before) x = norm1->forward(x);
  const at::Tensor ffn_in = normalize_before ? norm2->forward(x) : x;
  x = x + dropout2->forward(pos_ffn->forward(ffn_in));
  return normalize_before ? x : norm2->forward(x);
}

TransformerEncoder::TransformerEncoder(const TransformerEncoderConfig& c) : config(c) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(TransformerEncoderLayer(c));
  norm = register_module("norm", nn::SbLayerNorm(c.d_model, 1e-6));
}

at::Tensor TransformerEncoder::forward(const at::Tensor& x, const at::Tensor& lengths) {
  const int64_t T = x.size(1);
  const at::Tensor attn_mask = config.causal ? nn::lookahead_mask(T, x.device()) : at::Tensor();
  const at::Tensor padding =
      lengths.defined() ? nn::padding_mask(lengths.to(x.device()), T) : at::Tensor();
  return forward_masked(x, attn_mask, padding);
}

at::Tensor TransformerEncoder::forward_masked(const at::Tensor& x, const at::Tensor& attn_mask,
                                              const at::Tensor& key_padding_mask) {
  const at::Tensor pos_embs =
      config.attention == nn::AttentionType::kRelPosMHAXL
          ? nn::relative_positional_encoding(x.size(1), config.d_model, x.options())
          : at::Tensor();
  at::Tensor out = x;
  for (const auto& layer : *layers) {
    TransformerEncoderLayerImpl* l = layer->as<TransformerEncoderLayerImpl>();
    out = nn::checkpointed(
        [l, attn_mask, key_padding_mask, pos_embs](const at::Tensor& h) {
          return l->forward(h, attn_mask, key_padding_mask, pos_embs);
        },
        out);
  }
  return norm->forward(out);
}

}  // namespace masr::models
