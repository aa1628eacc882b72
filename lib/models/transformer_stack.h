// lib/models/transformer_stack.h
// The sizes that SpeechBrain's Transformer encoder and decoder stacks share, and the encoder
// stack of a model config that names them as TransformerASR and TransformerLM do.
#pragma once

#include <cstdint>

#include "nn/activation.h"

namespace masr::models {

struct TransformerStackConfig {
  int64_t d_model = 512;
  int64_t nhead = 8;
  int64_t d_ffn = 2048;
  int64_t num_layers = 6;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kRelu;
  bool normalize_before = true;
};

// The encoder stack of `model` (d_model, nhead, d_ffn, num_encoder_layers, dropout, activation,
// normalize_before).
template <typename ModelConfig>
TransformerStackConfig encoder_stack_of(const ModelConfig& model) {
  return {model.d_model, model.nhead,      model.d_ffn,           model.num_encoder_layers,
          model.dropout, model.activation, model.normalize_before};
}

}  // namespace masr::models
