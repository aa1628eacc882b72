// lib/nn/attention.h
// Attention layers of SpeechBrain v1.0 (nnet/attention.py): the torch MultiheadAttention wrapper
// and RelPosMHAXL (Transformer-XL relative positions), with their positional encodings.
#pragma once

#include <torch/torch.h>

namespace masr::nn {

// speechbrain.nnet.attention.MultiheadAttention: keys `att.{in_proj_weight,in_proj_bias,
// out_proj.*}`. query: (B, L, d), key/value: (B, S, d); attn_mask: bool (L, S), true = blocked;
// key_padding_mask: bool (B, S), true = padding. Returns (B, L, d).
struct MultiheadAttentionImpl : torch::nn::Module {
  MultiheadAttentionImpl(int64_t d_model, int64_t nhead, double dropout);
  at::Tensor forward(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                     const at::Tensor& attn_mask = {}, const at::Tensor& key_padding_mask = {});
  torch::nn::MultiheadAttention att{nullptr};
};
TORCH_MODULE(MultiheadAttention);

// speechbrain.nnet.attention.RelPosMHAXL (self-attention, vbias off). in_proj_weight (3d, d) is
// split per head as [q | k | v] (SpeechBrain views it as (B, T, H, 3*head_dim)); scores are
// scaled by 1/sqrt(d_model), SpeechBrain's choice. pos_embs: (1, 2T-1, d) from RelPosEncXL.
struct RelPosMHAXLImpl : torch::nn::Module {
  RelPosMHAXLImpl(int64_t d_model, int64_t nhead, double dropout, bool mask_pos_future);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& pos_embs,
                     const at::Tensor& attn_mask = {}, const at::Tensor& key_padding_mask = {});

  int64_t d_model = 0, nhead = 0, head_dim = 0;
  bool mask_pos_future = false;
  at::Tensor in_proj_weight, pos_bias_u, pos_bias_v;
  torch::nn::Linear out_proj{nullptr}, linear_pos{nullptr};
  torch::nn::Dropout dropout_att{nullptr};

 private:
  at::Tensor rel_shift(const at::Tensor& x) const;
};
TORCH_MODULE(RelPosMHAXL);

// RelPosEncXL: (1, 2T-1, d) sinusoids for relative positions T-1 ... -(T-1). As in SpeechBrain
// v1.0 the sine half is the same for past and future (only the cosine's sign argument differs).
at::Tensor relative_positional_encoding(int64_t length, int64_t d_model,
                                        const at::TensorOptions& options);

// Absolute sinusoidal encoding PositionalEncoding(d, max_len): buffer `pe` (1, max_len, d).
struct PositionalEncodingImpl : torch::nn::Module {
  PositionalEncodingImpl(int64_t d_model, int64_t max_len);
  // x: (B, T, d) -> (1, T, d), the encoding to add.
  at::Tensor forward(const at::Tensor& x);
  at::Tensor pe;
};
TORCH_MODULE(PositionalEncoding);

}  // namespace masr::nn
