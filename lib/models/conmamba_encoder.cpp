// lib/models/conmamba_encoder.cpp
// ConMamba encoder layers.
#include "models/conmamba_encoder.h"

#include "nn/checkpoint.h"
#include "nn/masks.h"

namespace masr::models {

ConmambaEncoderLayerImpl::ConmambaEncoderLayerImpl(const ConmambaConfig& c) {
  const bool bidirectional = c.bidirectional && !c.causal;
  mamba = register_module("mamba", nn::Mamba(c.d_model, c.mamba, bidirectional));
  register_macaron(c.d_model, c.d_ffn, c.kernel_size, c.bias, c.activation, c.dropout, c.causal);
}

at::Tensor ConmambaEncoderLayerImpl::forward(const at::Tensor& input, const at::Tensor& lengths,
                                             ConmambaLayerCache* cache) {
  // Upstream sets conv_mask = None and gives the Mamba no mask, so padding leaks into both; here
  // lengths keep every utterance independent of the batch it is in.
  if (cache == nullptr) {
    return macaron(input, lengths,
                   [&](const at::Tensor& x) { return mamba->forward(x, lengths); });
  }
  return macaron(
      input, lengths, [&](const at::Tensor& x) { return mamba_chunk(*mamba, x, cache->mamba); },
      &cache->conv);
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
