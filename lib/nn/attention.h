// lib/nn/attention.h
// Attention layers of SpeechBrain (nnet/attention.py): the torch MultiheadAttention wrapper,
// RelPosMHAXL (Transformer-XL relative positions) and RoPEMHA (rotary positions, SpeechBrain >=
// 1.0.1), with their positional encodings, and the self-attention of an encoder layer that is
// one of the three (`attention_type`).
#pragma once

#include <string>

#include <torch/torch.h>

namespace masr::nn {

// `attention_type` of SpeechBrain's encoders.
enum class AttentionType { kRegularMHA, kRelPosMHAXL, kRoPEMHA };

// "regularMHA" | "RelPosMHAXL" | "RoPEMHA"; anything else is a config error naming `where`.
AttentionType attention_type_from_name(const std::string& name, const std::string& where);

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

// speechbrain.nnet.attention.RoPEMHA (self-attention, vbias off): in_proj_weight (3d, d) without
// bias, split per head as [q | k | v] like RelPosMHAXL; q and k of each head are rotated pairwise
// (dims 2i, 2i+1) by angle t * 10000^(-2i/head_dim) at frame t (arXiv 2104.09864, eq. 34); scores
// are scaled by 1/sqrt(d_model), SpeechBrain's choice. Keys in_proj_weight, out_proj.*.
struct RoPEMHAImpl : torch::nn::Module {
  RoPEMHAImpl(int64_t d_model, int64_t nhead, double dropout);
  // x: (B, T, d); attn_mask: bool (T, T), key_padding_mask: bool (B, T), true = blocked.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& attn_mask = {},
                     const at::Tensor& key_padding_mask = {});

  int64_t d_model = 0, nhead = 0, head_dim = 0;
  double dropout = 0.0;
  at::Tensor in_proj_weight;
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(RoPEMHA);

// x: (B, T, H, head_dim) rotated by RoPE at positions 0 .. T-1 (angles computed in float32, as
// SpeechBrain's PrecomputedRoPESinusoids does for float32 and narrower inputs).
at::Tensor rope_rotate(const at::Tensor& x);

// The self-attention of one encoder layer, registered on `owner` under `name` as the module of
// `type` (so its keys are SpeechBrain's: `name.att.*`, or `name.in_proj_weight`, ...).
struct SelfAttention {
  SelfAttention() = default;
  SelfAttention(torch::nn::Module& owner, const std::string& name, AttentionType type,
                int64_t d_model, int64_t nhead, double dropout, bool causal);
  // x: (B, T, d); pos_embs: RelPosEncXL's (1, 2T-1, d), read only by RelPosMHAXL.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& pos_embs, const at::Tensor& attn_mask,
                     const at::Tensor& key_padding_mask);
  AttentionType type = AttentionType::kRegularMHA;
  MultiheadAttention regular{nullptr};
  RelPosMHAXL relative{nullptr};
  RoPEMHA rotary{nullptr};
};

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
