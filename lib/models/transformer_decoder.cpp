// lib/models/transformer_decoder.cpp
// Transformer decoder layers.
#include "models/transformer_decoder.h"

#include "core/error.h"
#include "nn/masks.h"

namespace masr::models {

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderConfig& c) {
  self_attn = register_module("self_attn", nn::MultiheadAttention(c.d_model, c.nhead, c.dropout));
  mutihead_attn =
      register_module("mutihead_attn", nn::MultiheadAttention(c.d_model, c.nhead, c.dropout));
  register_residuals(c.d_model, c.d_ffn, c.dropout, c.activation, c.normalize_before);
}

at::Tensor TransformerDecoderLayerImpl::forward(const at::Tensor& input, const at::Tensor& memory,
                                                const at::Tensor& tgt_mask,
                                                const at::Tensor& tgt_padding,
                                                const at::Tensor& memory_padding) {
  return residuals(
      input,
      [&](const at::Tensor& in) { return self_attn->forward(in, in, in, tgt_mask, tgt_padding); },
      [&](const at::Tensor& in) {
        return mutihead_attn->forward(in, memory, memory, {}, memory_padding);
      },
      /*with_dropout=*/true);
}

at::Tensor TransformerDecoderLayerImpl::step(const at::Tensor& input, SelfAttentionCache& cache,
                                             const KeyValue& memory,
                                             const at::Tensor& memory_padding,
                                             const at::Tensor& tgt_padding) {
  return residuals(
      input, [&](const at::Tensor& in) { return cache.step(*self_attn, in, tgt_padding); },
      [&](const at::Tensor& in) { return attend(*mutihead_attn, in, memory, memory_padding); },
      /*with_dropout=*/false);
}

namespace {

struct TransformerDecoderState : DecoderState {
  std::vector<SelfAttentionCache> self;  // per layer, per row
  std::vector<KeyValue> memory;          // per layer, per utterance
  at::Tensor memory_padding;             // bool (B, S) or undefined
  void reorder(const at::Tensor& rows) override {
    for (auto& cache : self) cache.reorder(rows);
  }
};

}  // namespace

TransformerDecoder::TransformerDecoder(const TransformerDecoderConfig& c) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(TransformerDecoderLayer(c));
  norm = register_module("norm", nn::SbLayerNorm(c.d_model, 1e-6));
}

at::Tensor TransformerDecoder::forward(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                                       const at::Tensor& memory, const at::Tensor& memory_lengths) {
  const at::Tensor tgt_mask = nn::lookahead_mask(tgt.size(1), tgt.device());
  const at::Tensor memory_padding =
      memory_lengths.defined()
          ? nn::padding_mask(memory_lengths.to(memory.device()), memory.size(1))
          : at::Tensor();
  at::Tensor out = tgt;
  for (const auto& layer : *layers) {
    out = layer->as<TransformerDecoderLayerImpl>()->forward(out, memory, tgt_mask, tgt_padding,
                                                            memory_padding);
  }
  return norm->forward(out);
}

std::unique_ptr<DecoderState> TransformerDecoder::start(const at::Tensor& memory,
                                                        const at::Tensor& memory_lengths,
                                                        int64_t beam) {
  if (beam < 1) throw_config_error("TransformerDecoder::start: beam must be >= 1");
  auto state = std::make_unique<TransformerDecoderState>();
  if (memory_lengths.defined())
    state->memory_padding = nn::padding_mask(memory_lengths.to(memory.device()), memory.size(1));
  for (const auto& layer : *layers) {
    auto* l = layer->as<TransformerDecoderLayerImpl>();
    state->memory.push_back(project_key_value(*l->mutihead_attn, memory));
    state->self.emplace_back();
  }
  return state;
}

at::Tensor TransformerDecoder::step(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                                    DecoderState& state_base) {
  auto* state = dynamic_cast<TransformerDecoderState*>(&state_base);
  if (state == nullptr) throw_input_error("TransformerDecoder::step: not a Transformer state");
  at::Tensor out = tgt;
  for (size_t i = 0; i < layers->size(); ++i) {
    out = (*layers)[i]->as<TransformerDecoderLayerImpl>()->step(
        out, state->self[i], state->memory[i], state->memory_padding, tgt_padding);
  }
  ++state->steps;
  return norm->forward(out);
}

}  // namespace masr::models
