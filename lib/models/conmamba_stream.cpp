// lib/models/conmamba_stream.cpp
// ConMamba layers chunk by chunk, each layer's forward with its cache (the Mamba stepped frame by
// frame, the causal depthwise conv over [cached kernel-1 inputs | chunk]).
#include "models/conmamba_stream.h"

#include <torch/torch.h>

#include "core/error.h"
#include "models/conmamba_encoder.h"
#include "models/transformer_asr.h"
#include "nn/wrappers.h"

namespace masr::models {
namespace {

[[noreturn]] void not_streamable(const std::string& why) {
  throw_config_error("streaming needs a causal ConMamba encoder, and this model " + why +
                     "; such a model needs the whole utterance: decode files with `mamba-asr "
                     "decode` instead, or train a causal model (Transformer: causal: True)");
}

}  // namespace

CausalConmamba causal_conmamba(TransformerASRImpl& transformer) {
  const TransformerASRConfig& c = transformer.config();
  if (c.encoder_module != "conmamba") {
    not_streamable("has a " + c.encoder_module + " encoder (attention over all frames)");
  }
  if (c.attention_type != "RelPosMHAXL" && c.positional_encoding == "fixed_abs_sine") {
    not_streamable("adds an absolute positional encoding (bounded by max_length)");
  }
  CausalConmamba parts;
  for (const auto& child : transformer.named_children()) {
    if (child.key() == "encoder") parts.encoder = dynamic_cast<ConmambaEncoder*>(child.value().get());
  }
  for (const auto& sub : transformer.custom_src_module->named_modules()) {
    if (sub.key() == "layers.0") parts.src_linear = dynamic_cast<nn::SbLinearImpl*>(sub.value().get());
  }
  if (parts.encoder == nullptr || parts.src_linear == nullptr) {
    throw_config_error("streaming: the TransformerASR has no ConMamba encoder or input projection");
  }
  for (const auto& layer : *parts.encoder->layers) {
    auto* l = layer->as<ConmambaEncoderLayerImpl>();
    if (l->mamba->bidirectional) not_streamable("has bidirectional Mamba layers (causal: False)");
    if (!l->convolution_module->causal) {
      not_streamable("has a non-causal depthwise convolution (bidirectional: False but causal: "
                     "False looks kernel_size/2 frames ahead)");
    }
  }
  return parts;
}

ConmambaStreamState conmamba_initial_state(const ConmambaEncoder& encoder, int64_t rows,
                                           const at::TensorOptions& options) {
  ConmambaStreamState state;
  for (const auto& layer : *encoder.layers) {
    const auto* l = layer->as<ConmambaEncoderLayerImpl>();
    ConmambaLayerCache cache;
    cache.mamba = mamba_initial_state(*l->mamba, rows, options);
    // A causal module pads kernel-1 frames: the history it reads before each frame.
    cache.conv = at::zeros({rows, l->mamba->d_model, l->convolution_module->padding}, options);
    state.layers.push_back(std::move(cache));
  }
  return state;
}

at::Tensor conmamba_stream_forward(ConmambaEncoder& encoder, const at::Tensor& x,
                                   ConmambaStreamState& state) {
  if (state.layers.size() != encoder.layers->size()) {
    throw_config_error("ConMamba stream: the state has " + std::to_string(state.layers.size()) +
                       " layers but the encoder " + std::to_string(encoder.layers->size()));
  }
  at::Tensor h = x;
  for (size_t i = 0; i < encoder.layers->size(); ++i) {
    h = encoder.layers[i]->as<ConmambaEncoderLayerImpl>()->forward(h, {}, &state.layers[i]);
  }
  state.frames += x.size(1);
  return encoder.norm->forward(h);
}

}  // namespace masr::models
