// lib/models/conmamba_encoder.cpp
// ConMamba encoder layers.
#include "models/conmamba_encoder.h"

#include "nn/checkpoint.h"
#include "nn/feed_forward.h"
#include "nn/masks.h"

namespace masr::models {

ConmambaEncoderLayerImpl::ConmambaEncoderLayerImpl(const ConmambaConfig& c) {
  const bool bidirectional = c.bidirectional && !c.causal;
  mamba = register_module("mamba", nn::Mamba(c.d_model, c.mamba, bidirectional));
  convolution_module = register_module(
      "convolution_module",
      nn::ConvolutionModule(c.d_model, c.kernel_size, c.bias, c.activation, c.dropout, c.causal));
  ffn_module1 = register_module("ffn_module1",
                                nn::make_macaron_ffn(c.d_model, c.d_ffn, c.dropout, c.activation));
  ffn_module2 = register_module("ffn_module2",
                                nn::make_macaron_ffn(c.d_model, c.d_ffn, c.dropout, c.activation));
  norm1 = register_module("norm1", nn::SbLayerNorm(c.d_model, 1e-5));
  norm2 = register_module("norm2", nn::SbLayerNorm(c.d_model, 1e-5));
}

at::Tensor ConmambaEncoderLayerImpl::forward(const at::Tensor& input, const at::Tensor& lengths) {
  // Upstream sets conv_mask = None and gives the Mamba no mask, so padding leaks into both; here
  // lengths keep every utterance independent of the batch it is in.
  at::Tensor x = input + 0.5 * ffn_module1->forward(input);
  x = x + mamba->forward(norm1->forward(x), lengths);
  x = x + convolution_module->forward(x, lengths);
  return norm2->forward(x + 0.5 * ffn_module2->forward(x));
}

ConmambaEncoder::ConmambaEncoder(const ConmambaConfig& config) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.num_layers; ++i) layers->push_back(ConmambaEncoderLayer(config));
  norm = register_module("norm", nn::SbLayerNorm(config.d_model, 1e-6));
}

at::Tensor ConmambaEncoder::forward(const at::Tensor& x, const at::Tensor& lengths) {
  at::Tensor out = x;
  for (const auto& layer : *layers) {
    ConmambaEncoderLayerImpl* l = layer->as<ConmambaEncoderLayerImpl>();
    out = nn::checkpointed([l, lengths](const at::Tensor& h) { return l->forward(h, lengths); },
                           out);
  }
  return norm->forward(out);
}

}  // namespace masr::models
