// lib/models/transformer_lm.cpp
// Transformer language model.
#include "models/transformer_lm.h"

#include "core/error.h"
#include "models/incremental_attention.h"
#include "nn/masks.h"

namespace masr::models {

void TransformerLMConfig::validate() const {
  if (vocab <= 0 || d_model <= 0 || d_ffn <= 0 || num_encoder_layers <= 0) {
    throw_config_error(
        "TransformerLM: vocab, d_model, d_ffn and num_encoder_layers must be "
        "positive");
  }
  if (nhead <= 0 || d_model % nhead != 0) {
    throw_config_error("TransformerLM: d_model " + std::to_string(d_model) +
                       " must be divisible by nhead " + std::to_string(nhead));
  }
}

TransformerLMImpl::TransformerLMImpl(const TransformerLMConfig& c) : config(c) {
  config.validate();
  positional_encoding =
      register_module("positional_encoding", nn::PositionalEncoding(c.d_model, c.max_len));
  const TransformerEncoderConfig e{
      encoder_stack_of(c), c.causal,
      c.relative_attention ? nn::AttentionType::kRelPosMHAXL : nn::AttentionType::kRegularMHA};
  encoder = register_module("encoder", std::make_shared<TransformerEncoder>(e));
  const int64_t d_embedding = c.d_embedding > 0 ? c.d_embedding : c.d_model;
  custom_src_module =
      register_module("custom_src_module", nn::NormalizedEmbedding(c.vocab, d_embedding));
  if (c.d_embedding > 0) {
    embedding_proj = register_module("embedding_proj", nn::SbLinear(d_embedding, c.d_model));
  }
  auto output_proj = register_module("output_proj", std::make_shared<torch::nn::Module>());
  auto layers = output_proj->register_module("layers", torch::nn::ModuleList());
  proj_in = nn::SbLinear(c.d_model, c.d_model);
  proj_norm = nn::SbLayerNorm(c.d_model, 1e-6);
  proj_out = nn::SbLinear(c.d_model, c.vocab);
  layers->push_back(proj_in);
  layers->push_back(proj_norm);
  layers->push_back(proj_out);
  // TransformerLM._reset_params: xavier_normal_ on every parameter with more than one dimension.
  torch::NoGradGuard no_grad;
  for (auto& p : parameters()) {
    if (p.dim() > 1) torch::nn::init::xavier_normal_(p);
  }
}

at::Tensor TransformerLMImpl::forward(const at::Tensor& tokens, int64_t pad_index) {
  const int64_t U = tokens.size(1);
  const at::Tensor attn_mask =
      config.causal ? nn::lookahead_mask(U, tokens.device()) : at::Tensor();
  const at::Tensor padding = tokens.eq(pad_index);
  at::Tensor x = custom_src_module->forward(tokens);
  if (embedding_proj) x = embedding_proj->forward(x);
  x = x + positional_encoding->forward(x);
  x = encoder->forward_masked(x, attn_mask, padding);
  return proj_out->forward(proj_norm->forward(proj_in->forward(x)));
}

namespace {

struct TransformerLMState : DecoderState {
  std::vector<SelfAttentionCache> layers;
  void reorder(const at::Tensor& rows) override {
    for (auto& cache : layers) cache.reorder(rows);
  }
};

}  // namespace

std::unique_ptr<DecoderState> TransformerLMImpl::start_state() const {
  auto state = std::make_unique<TransformerLMState>();
  state->layers.resize(static_cast<size_t>(config.num_encoder_layers));
  return state;
}

at::Tensor TransformerLMImpl::step(const at::Tensor& tokens, DecoderState& state_base,
                                   int64_t pad_index) {
  if (!can_step()) {
    throw_config_error(
        "TransformerLM.step: only a causal LM with regularMHA attention can be stepped");
  }
  auto* state = dynamic_cast<TransformerLMState*>(&state_base);
  if (state == nullptr) throw_input_error("TransformerLM.step: not a TransformerLM state");
  if (state->steps >= positional_encoding->pe.size(1)) {
    throw_input_error("TransformerLM.step: position " + std::to_string(state->steps) +
                      " is past max_len " + std::to_string(positional_encoding->pe.size(1)));
  }
  const at::Tensor column = tokens.view({-1, 1});
  at::Tensor x = custom_src_module->forward(column);
  if (embedding_proj) x = embedding_proj->forward(x);
  x = x + positional_encoding->pe.narrow(1, state->steps, 1).to(x.scalar_type());
  const at::Tensor padding = column.eq(pad_index);
  for (size_t i = 0; i < encoder->layers->size(); ++i) {
    auto* layer = (*encoder->layers)[i]->as<TransformerEncoderLayerImpl>();
    const bool pre = layer->normalize_before;
    const at::Tensor in = pre ? layer->norm1->forward(x) : x;
    x = x + state->layers[i].step(*layer->self_att.regular, in, padding);
    if (!pre) x = layer->norm1->forward(x);
    const at::Tensor ffn_in = pre ? layer->norm2->forward(x) : x;
    x = x + layer->pos_ffn->forward(ffn_in);
    if (!pre) x = layer->norm2->forward(x);
  }
  ++state->steps;
  x = encoder->norm->forward(x);
  return proj_out->forward(proj_norm->forward(proj_in->forward(x))).squeeze(1);
}

}  // namespace masr::models
