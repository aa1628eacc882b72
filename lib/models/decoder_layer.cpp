// lib/models/decoder_layer.cpp
// The decoder layers' residual modules.
#include "models/decoder_layer.h"

namespace masr::models {

void DecoderLayerBase::register_residuals(int64_t d_model, int64_t d_ffn, double dropout,
                                          nn::Activation activation, bool normalize_before_) {
  normalize_before = normalize_before_;
  pos_ffn =
      register_module("pos_ffn", nn::PositionwiseFeedForward(d_model, d_ffn, dropout, activation));
  norm1 = register_module("norm1", nn::SbLayerNorm(d_model, 1e-6));
  norm2 = register_module("norm2", nn::SbLayerNorm(d_model, 1e-6));
  norm3 = register_module("norm3", nn::SbLayerNorm(d_model, 1e-6));
  dropout1 = register_module("dropout1", torch::nn::Dropout(dropout));
  dropout2 = register_module("dropout2", torch::nn::Dropout(dropout));
  dropout3 = register_module("dropout3", torch::nn::Dropout(dropout));
}

}  // namespace masr::models
