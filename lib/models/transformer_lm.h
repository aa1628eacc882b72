// lib/models/transformer_lm.h
// SpeechBrain v1.0's TransformerLM (lobes/models/transformer/TransformerLM.py): scaled token
// embedding + sinusoidal positions, a causal Transformer encoder, and Linear -> LayerNorm ->
// Linear to the vocabulary. The LibriSpeech LM is post-LN (normalize_before False).
#pragma once

#include "models/transformer_encoder.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/wrappers.h"

namespace masr::models {

struct TransformerLMConfig {
  int64_t vocab = 5000;
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 12;
  int64_t d_ffn = 2048;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kRelu;
  bool normalize_before = false;
  int64_t d_embedding = 0;  // 0: d_model (no embedding_proj)
  int64_t max_len = 2500;
  bool causal = true;
  bool relative_attention = false;
  void validate() const;
};

struct TransformerLMImpl : torch::nn::Module {
  explicit TransformerLMImpl(const TransformerLMConfig& config);
  // tokens: int64 (B, U); tokens equal to pad_index are masked as keys. Returns logits (B, U, V).
  at::Tensor forward(const at::Tensor& tokens, int64_t pad_index = 0);
  // Incremental stepping with a key/value cache per layer: a causal LM with regular attention
  // only (RelPosMHAXL's relative positions are not cached; can_step() is false then).
  bool can_step() const { return config.causal && !config.relative_attention; }
  std::unique_ptr<DecoderState> start_state() const;
  // tokens: int64 (N), every row's next token (bos first) -> logits (N, V), equal to forward's
  // at that position. Throws a config error when !can_step().
  at::Tensor step(const at::Tensor& tokens, DecoderState& state, int64_t pad_index = 0);

  nn::NormalizedEmbedding custom_src_module{nullptr};
  nn::SbLinear embedding_proj{nullptr};
  nn::PositionalEncoding positional_encoding{nullptr};
  std::shared_ptr<TransformerEncoder> encoder;
  nn::SbLinear proj_in{nullptr}, proj_out{nullptr};  // output_proj.layers.0 / .2
  nn::SbLayerNorm proj_norm{nullptr};                // output_proj.layers.1
  TransformerLMConfig config;
};
TORCH_MODULE(TransformerLM);

}  // namespace masr::models
