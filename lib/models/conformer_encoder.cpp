// lib/models/conformer_encoder.cpp
// Conformer encoder layers.
#include "models/conformer_encoder.h"

#include "nn/checkpoint.h"
#include "nn/masks.h"

namespace masr::models {

ConformerEncoderLayerImpl::ConformerEncoderLayerImpl(const ConformerConfig& c) {
  mha_layer =
      nn::SelfAttention(*this, "mha_layer", c.attention, c.d_model, c.nhead, c.dropout, c.causal,
                        c.d_ffn);
  register_macaron(c.d_model, c.d_ffn, c.kernel_size, c.bias, c.activation, c.dropout, c.causal);
}

at::Tensor ConformerEncoderLayerImpl::forward(const at::Tensor& input, const at::Tensor& lengths,
                                              const at::Tensor& pos_embs,
                                              const at::Tensor& attn_mask,
                                              const at::Tensor& key_padding_mask) {
  return macaron(input, lengths, [&](const at::Tensor& x) {
    return mha_layer.forward(x, pos_embs, attn_mask, key_padding_mask);
  });
}

ConformerEncoder::ConformerEncoder(const ConformerConfig& c) : config(c) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(ConformerEncoderLayer(c));
  norm = register_module("norm", nn::SbLayerNorm(c.d_model, 1e-6));
}

at::Tensor ConformerEncoder::forward(const at::Tensor& x, const at::Tensor& lengths) {
  const int64_t T = x.size(1);
  const at::Tensor pos_embs = config.attention == nn::AttentionType::kRelPosMHAXL
                                  ? nn::relative_positional_encoding(T, config.d_model, x.options())
                                  : at::Tensor();
  const at::Tensor attn_mask = config.causal ? nn::lookahead_mask(T, x.device()) : at::Tensor();
  const at::Tensor padding =
      lengths.defined() ? nn::padding_mask(lengths.to(x.device()), T) : at::Tensor();
  at::Tensor out = x;
  for (const auto& layer : *layers) {
    ConformerEncoderLayerImpl* l = layer->as<ConformerEncoderLayerImpl>();
    out = nn::checkpointed(
        [l, lengths, pos_embs, attn_mask, padding](const at::Tensor& h) {
          return l->forward(h, lengths, pos_embs, attn_mask, padding);
        },
        out);
  }
  return norm->forward(out);
}

}  // namespace masr::models
