// lib/nn/attention.h
// Attention layers of SpeechBrain (nnet/attention.py): the torch MultiheadAttention wrapper,
// RelPosMHAXL (Transformer-XL relative positions), RoPEMHA (rotary positions, SpeechBrain >=
// 1.0.1) and HyperMixing (nnet/hypermixing.py, the HyperConformer's token mixing), with their
// positional encodings, and the self-attention of an encoder layer that is one of the four
// (`attention_type`).
#pragma once

#include <string>

#include <torch/torch.h>

namespace masr::nn {

// `attention_type` of SpeechBrain's encoders.
enum class AttentionType { kRegularMHA, kRelPosMHAXL, kRoPEMHA, kHyperMixing };

// "regularMHA" | "RelPosMHAXL" | "RoPEMHA" | "hypermixing"; anything else is a config error
// naming `where`.
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

// Absolute sinusoidal encoding PositionalEncoding(d, max_len): buffer `pe` (1, max_len, d).
struct PositionalEncodingImpl : torch::nn::Module {
  PositionalEncodingImpl(int64_t d_model, int64_t max_len);
  // x: (B, T, d) -> (1, T, d), the encoding to add.
  at::Tensor forward(const at::Tensor& x);
  at::Tensor pe;
};
TORCH_MODULE(PositionalEncoding);

// speechbrain.nnet.hypermixing.ParallelMLPs: `num_mlps` two-layer GELU MLPs side by side, each on
// its own slice of the features. Parameters fc1_weights (m, h, f), fc1_biases (m, h),
// fc2_weights (m, o, h), fc2_biases (m, o). x: (B, T, m * f) -> (B, m, T, o).
struct ParallelMLPsImpl : torch::nn::Module {
  ParallelMLPsImpl(int64_t input_size, int64_t hidden_size, int64_t output_size, int64_t num_mlps,
                   bool keep_output_size);
  at::Tensor forward(const at::Tensor& x);
  int64_t num_mlps = 1, input_size = 0;
  at::Tensor fc1_weights, fc1_biases, fc2_weights, fc2_biases;
};
TORCH_MODULE(ParallelMLPs);

// speechbrain.nnet.hypermixing.HyperMixing (tied=False, fix_tm_hidden_size=False, as SpeechBrain's
// encoders build it): a hypernetwork (`hyper.w1_gen`, `hyper.w2_gen`, ParallelMLPs over the input
// plus its own absolute positions, `positional_encoding.pe`) makes per-utterance weights W1, W2
// of a token-mixing MLP W2ᵀ GELU(W1ᵀ x) applied across time, head by head, then `layer_norm`.
// Padded frames are zeroed and give no weights. x: (B, T, d) -> (B, T, d).
struct HyperMixingImpl : torch::nn::Module {
  HyperMixingImpl(int64_t d_model, int64_t hypernet_size, int64_t num_heads, int64_t max_length);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& key_padding_mask);
  int64_t d_model = 0, num_heads = 1;
  std::shared_ptr<torch::nn::Module> hyper;  // holds w1_gen and w2_gen
  ParallelMLPs w1_gen{nullptr}, w2_gen{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  PositionalEncoding positional_encoding{nullptr};
};
TORCH_MODULE(HyperMixing);

// The self-attention of one encoder layer, registered on `owner` under `name` as the module of
// `type` (so its keys are SpeechBrain's: `name.att.*`, or `name.in_proj_weight`, ...).
struct SelfAttention {
  SelfAttention() = default;
  // `hypernet_size`: HyperMixing's (the layer's d_ffn in SpeechBrain's Conformer and Transformer
  // layers, 4 d_model in its Branchformer layer).
  SelfAttention(torch::nn::Module& owner, const std::string& name, AttentionType type,
                int64_t d_model, int64_t nhead, double dropout, bool causal,
                int64_t hypernet_size = 0);
  // x: (B, T, d); pos_embs: RelPosEncXL's (1, 2T-1, d), read only by RelPosMHAXL.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& pos_embs, const at::Tensor& attn_mask,
                     const at::Tensor& key_padding_mask);
  AttentionType type = AttentionType::kRegularMHA;
  MultiheadAttention regular{nullptr};
  RelPosMHAXL relative{nullptr};
  RoPEMHA rotary{nullptr};
  HyperMixing hypermixing{nullptr};
};

// RelPosEncXL: (1, 2T-1, d) sinusoids for relative positions T-1 ... -(T-1). As in SpeechBrain
// v1.0 the sine half is the same for past and future (only the cosine's sign argument differs).
at::Tensor relative_positional_encoding(int64_t length, int64_t d_model,
                                        const at::TensorOptions& options);


}  // namespace masr::nn
