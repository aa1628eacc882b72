// lib/models/transformer_asr.h
// TransformerASR (xi-j/Mamba-ASR modules/TransformerASR.py, SpeechBrain's TransformerASR): the
// input projection (custom_src_module), one encoder (ConMamba, Conformer, Branchformer or
// Transformer) and an
// optional decoder (Transformer or Mamba) over embedded targets.
#pragma once

#include <memory>
#include <string>

#include "models/encoder.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/mamba.h"
#include "nn/wrappers.h"

namespace masr::models {

struct TransformerASRConfig {
  int64_t tgt_vocab = 5000;
  int64_t input_size = 640;
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t num_encoder_layers = 6;
  int64_t num_decoder_layers = 6;
  int64_t d_ffn = 2048;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kRelu;               // Transformer layers
  nn::Activation conformer_activation = nn::Activation::kSwish;    // Conformer layers
  nn::Activation branchformer_activation = nn::Activation::kGelu;  // ConMamba layers
  std::string positional_encoding = "fixed_abs_sine";              // or "" (none)
  bool normalize_before = false;
  int64_t kernel_size = 31;
  bool bias = true;
  std::string encoder_module = "transformer";  // transformer | conformer | conmamba | branchformer
  std::string decoder_module = "transformer";  // transformer | mamba
  std::string attention_type = "regularMHA";   // regularMHA | RelPosMHAXL | RoPEMHA
  int64_t max_length = 2500;
  bool causal = false;
  bool bidirectional = true;  // mamba_config[bidirectional]
  nn::MambaConfig mamba;
  int64_t csgu_linear_units = 3072;  // Branchformer's gating MLP
  bool use_linear_after_conv = false;

  // Throws a config error naming the field for unsupported or inconsistent settings.
  void validate() const;
};

struct TransformerASRImpl : torch::nn::Module {
  explicit TransformerASRImpl(const TransformerASRConfig& config);

  // src: (B, T, input_size) or (B, T, F, C) from the front end; lengths: int64 (B) frames or
  // undefined. Returns (B, T, d_model).
  at::Tensor encode(const at::Tensor& src, const at::Tensor& lengths = {});
  // tokens: int64 (B, U), pad_index = padding; encoder_out: (B, T, d). Returns (B, U, d).
  at::Tensor decode(const at::Tensor& tokens, const at::Tensor& encoder_out,
                    const at::Tensor& encoder_lengths = {}, int64_t pad_index = 0);
  // Incremental decoding, `beam` rows per utterance of encoder_out (B, T, d): start, then one
  // decode_step per token. tokens: int64 (N) each row's next token (bos first) -> (N, d), equal
  // to decode()'s output at that position.
  std::unique_ptr<DecoderState> start_decoding(const at::Tensor& encoder_out,
                                               const at::Tensor& encoder_lengths, int64_t beam);
  at::Tensor decode_step(const at::Tensor& tokens, DecoderState& state, int64_t pad_index = 0);
  // Both: (encoder_out, decoder_out); decoder_out is undefined without a decoder.
  std::pair<at::Tensor, at::Tensor> forward(const at::Tensor& src, const at::Tensor& tokens,
                                            const at::Tensor& lengths = {}, int64_t pad_index = 0);
  bool has_decoder() const { return decoder_ != nullptr; }
  const TransformerASRConfig& config() const { return config_; }

  torch::nn::Module* custom_src_module = nullptr;  // layers.0 = Linear(input_size, d), 1 = Dropout
  nn::NormalizedEmbedding tgt_embedding{nullptr};  // custom_tgt_module.layers.0

 private:
  void build_encoder();
  void build_decoder();
  void init_parameters();

  TransformerASRConfig config_;
  nn::SbLinear src_linear_{nullptr};
  torch::nn::Dropout src_dropout_{nullptr};
  nn::PositionalEncoding positional_encoding_{nullptr};  // absolute PE, when registered
  bool encoder_adds_pe_ = false;  // regularMHA: the encoder's input gets the absolute PE
  nn::PositionalEncoding decoder_pe_{nullptr};  // positional_encoding_decoder
  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<Decoder> decoder_;
};
TORCH_MODULE(TransformerASR);

}  // namespace masr::models
