// lib/models/transformer_asr.cpp
// TransformerASR assembly: configuration checks, submodules, initialization and forward passes.
#include "models/transformer_asr.h"

#include "core/error.h"
#include "models/branchformer_encoder.h"
#include "models/conformer_encoder.h"
#include "models/conmamba_encoder.h"
#include "models/mamba_decoder.h"
#include "models/transformer_decoder.h"
#include "models/transformer_encoder.h"

namespace masr::models {

void TransformerASRConfig::validate() const {
  const std::string where = "TransformerASR: ";
  if (encoder_module != "transformer" && encoder_module != "conformer" &&
      encoder_module != "conmamba" && encoder_module != "branchformer") {
    throw_config_error(where + "encoder_module '" + encoder_module +
                       "' is not supported; expected transformer, conformer, branchformer or "
                       "conmamba");
  }
  if (decoder_module != "transformer" && decoder_module != "mamba") {
    throw_config_error(where + "decoder_module '" + decoder_module +
                       "' is not supported; expected transformer or mamba");
  }
  const auto attention = nn::attention_type_from_name(attention_type, where);
  if (encoder_module == "branchformer" && attention == nn::AttentionType::kRoPEMHA) {
    // SpeechBrain's BranchformerEncoderLayer builds no attention for it (an AttributeError).
    throw_config_error(where +
                       "the branchformer encoder takes attention_type regularMHA or RelPosMHAXL, "
                       "not RoPEMHA");
  }
  if (num_encoder_layers <= 0) {
    throw_config_error(where + "num_encoder_layers must be > 0, got " +
                       std::to_string(num_encoder_layers));
  }
  if (num_decoder_layers < 0 || d_model <= 0 || d_ffn <= 0 || input_size <= 0 || tgt_vocab <= 0) {
    throw_config_error(where +
                       "d_model, d_ffn, input_size and tgt_vocab must be positive and "
                       "num_decoder_layers >= 0");
  }
  const bool uses_attention =
      encoder_module != "conmamba" || (num_decoder_layers > 0 && decoder_module == "transformer");
  if (uses_attention && (nhead <= 0 || d_model % nhead != 0)) {
    throw_config_error(where + "d_model " + std::to_string(d_model) +
                       " must be divisible by nhead " + std::to_string(nhead));
  }
  if ((encoder_module == "conformer" || encoder_module == "conmamba") && !normalize_before) {
    throw_config_error(where + "normalize_before must be True for the " + encoder_module +
                       " encoder");
  }
}

TransformerASRImpl::TransformerASRImpl(const TransformerASRConfig& config) : config_(config) {
  config_.validate();
  // SpeechBrain's TransformerInterface: RelPosMHAXL replaces the absolute encoding by RelPosEncXL
  // (no state); RoPEMHA keeps it (a buffer the encoder never adds). Both give the decoder its
  // own absolute encoding.
  const auto attention = nn::attention_type_from_name(config_.attention_type, "TransformerASR: ");
  if (attention != nn::AttentionType::kRelPosMHAXL &&
      config_.positional_encoding == "fixed_abs_sine") {
    positional_encoding_ = register_module(
        "positional_encoding", nn::PositionalEncoding(config_.d_model, config_.max_length));
  }
  encoder_adds_pe_ = attention == nn::AttentionType::kRegularMHA && positional_encoding_;
  // HyperMixing adds its own positions inside each layer; the decoder takes the absolute
  // encoding (SpeechBrain builds no positional_encoding_decoder for it).
  if (attention == nn::AttentionType::kRelPosMHAXL || attention == nn::AttentionType::kRoPEMHA) {
    decoder_pe_ = register_module("positional_encoding_decoder",
                                  nn::PositionalEncoding(config_.d_model, config_.max_length));
  }
  build_encoder();
  auto src = register_module("custom_src_module", std::make_shared<torch::nn::Module>());
  auto src_layers = src->register_module("layers", torch::nn::ModuleList());
  src_linear_ = nn::SbLinear(config_.input_size, config_.d_model, true);
  src_dropout_ = torch::nn::Dropout(config_.dropout);
  src_layers->push_back(src_linear_);
  src_layers->push_back(src_dropout_);
  custom_src_module = src.get();
  if (config_.num_decoder_layers > 0) {
    auto tgt = register_module("custom_tgt_module", std::make_shared<torch::nn::Module>());
    auto tgt_layers = tgt->register_module("layers", torch::nn::ModuleList());
    tgt_embedding = nn::NormalizedEmbedding(config_.tgt_vocab, config_.d_model);
    tgt_layers->push_back(tgt_embedding);
    build_decoder();
  }
  init_parameters();
}

void TransformerASRImpl::build_encoder() {
  const auto& c = config_;
  if (c.encoder_module == "conmamba") {
    ConmambaConfig e{c.d_model,     c.d_ffn,   c.num_encoder_layers,
                     c.kernel_size, c.dropout, c.branchformer_activation,
                     c.bias,        c.causal,  c.bidirectional,
                     c.mamba};
    encoder_ = register_module("encoder", std::make_shared<ConmambaEncoder>(e));
  } else if (c.encoder_module == "conformer") {
    ConformerConfig e{c.d_model,
                      c.nhead,
                      c.d_ffn,
                      c.num_encoder_layers,
                      c.kernel_size,
                      c.dropout,
                      c.conformer_activation,
                      c.bias,
                      c.causal,
                      nn::attention_type_from_name(c.attention_type, "TransformerASR: ")};
    encoder_ = register_module("encoder", std::make_shared<ConformerEncoder>(e));
  } else if (c.encoder_module == "branchformer") {
    BranchformerConfig e;
    e.d_model = c.d_model;
    e.nhead = c.nhead;
    e.num_layers = c.num_encoder_layers;
    e.kernel_size = c.kernel_size;
    e.dropout = c.dropout;
    e.activation = c.branchformer_activation;
    e.attention = nn::attention_type_from_name(c.attention_type, "TransformerASR: ");
    e.csgu_linear_units = c.csgu_linear_units;
    e.use_linear_after_conv = c.use_linear_after_conv;
    encoder_ = register_module("encoder", std::make_shared<BranchformerEncoder>(e));
  } else {
    const TransformerEncoderConfig e{
        encoder_stack_of(c), c.causal,
        nn::attention_type_from_name(c.attention_type, "TransformerASR: ")};
    encoder_ = register_module("encoder", std::make_shared<TransformerEncoder>(e));
  }
}

void TransformerASRImpl::build_decoder() {
  const auto& c = config_;
  if (c.decoder_module == "mamba") {
    MambaDecoderConfig d{c.d_model,          c.d_ffn, c.num_decoder_layers, c.dropout, c.activation,
                         c.normalize_before, c.mamba};
    decoder_ = register_module("decoder", std::make_shared<MambaDecoder>(d));
  } else {
    TransformerStackConfig stack = encoder_stack_of(c);
    stack.num_layers = c.num_decoder_layers;
    const TransformerDecoderConfig d{stack};
    decoder_ = register_module("decoder", std::make_shared<TransformerDecoder>(d));
  }
}

// TransformerASR._init_params: xavier_normal_ on every parameter with more than one dimension,
// after each layer's own initialization (so Mamba's A_log, dt_proj.weight, ... are overwritten).
void TransformerASRImpl::init_parameters() {
  torch::NoGradGuard no_grad;
  for (auto& p : parameters()) {
    if (p.dim() > 1) torch::nn::init::xavier_normal_(p);
  }
}

at::Tensor TransformerASRImpl::encode(const at::Tensor& src_in, const at::Tensor& lengths) {
  at::Tensor src = src_in;
  if (src.dim() == 4) src = src.reshape({src.size(0), src.size(1), src.size(2) * src.size(3)});
  if (src.dim() != 3 || src.size(2) != config_.input_size) {
    throw_input_error("TransformerASR.encode: expected (batch, time, " +
                      std::to_string(config_.input_size) + ") input, got last size " +
                      std::to_string(src.size(-1)));
  }
  src = src_dropout_->forward(src_linear_->forward(src));
  if (encoder_adds_pe_) src = src + positional_encoding_->forward(src);
  return encoder_->forward(src, lengths);
}

at::Tensor TransformerASRImpl::decode(const at::Tensor& tokens, const at::Tensor& encoder_out,
                                      const at::Tensor& encoder_lengths, int64_t pad_index) {
  if (!decoder_) {
    throw_config_error("TransformerASR.decode: the model has no decoder (num_decoder_layers 0)");
  }
  at::Tensor tgt = tgt_embedding->forward(tokens);
  if (decoder_pe_) {
    tgt = tgt + decoder_pe_->forward(tgt);
  } else if (positional_encoding_) {
    tgt = tgt + positional_encoding_->forward(tgt);
  }
  const at::Tensor tgt_padding = tokens.eq(pad_index);
  return decoder_->forward(tgt, tgt_padding, encoder_out, encoder_lengths);
}

std::unique_ptr<DecoderState> TransformerASRImpl::start_decoding(const at::Tensor& encoder_out,
                                                                 const at::Tensor& encoder_lengths,
                                                                 int64_t beam) {
  if (!decoder_) {
    throw_config_error(
        "TransformerASR.start_decoding: the model has no decoder (num_decoder_layers 0)");
  }
  return decoder_->start(encoder_out, encoder_lengths, beam);
}

at::Tensor TransformerASRImpl::decode_step(const at::Tensor& tokens, DecoderState& state,
                                           int64_t pad_index) {
  if (!decoder_) {
    throw_config_error(
        "TransformerASR.decode_step: the model has no decoder (num_decoder_layers 0)");
  }
  at::Tensor tgt = tgt_embedding->forward(tokens.view({-1, 1}));  // (N, 1, d)
  nn::PositionalEncoding& pe = decoder_pe_ ? decoder_pe_ : positional_encoding_;
  if (pe) {
    if (state.steps >= pe->pe.size(1)) {
      throw_input_error("TransformerASR.decode_step: position " + std::to_string(state.steps) +
                        " is past max_length " + std::to_string(pe->pe.size(1)));
    }
    tgt = tgt + pe->pe.narrow(1, state.steps, 1).to(tgt.scalar_type());
  }
  return decoder_->step(tgt, tokens.view({-1, 1}).eq(pad_index), state).squeeze(1);
}

std::pair<at::Tensor, at::Tensor> TransformerASRImpl::forward(const at::Tensor& src,
                                                              const at::Tensor& tokens,
                                                              const at::Tensor& lengths,
                                                              int64_t pad_index) {
  at::Tensor encoder_out = encode(src, lengths);
  at::Tensor decoder_out;
  if (decoder_ && tokens.defined()) decoder_out = decode(tokens, encoder_out, lengths, pad_index);
  return {encoder_out, decoder_out};
}

}  // namespace masr::models
