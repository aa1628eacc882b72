// lib/models/conmamba_stream.cpp
// ConMamba layers chunk by chunk: feed-forwards and norms per frame, the Mamba stepped frame by
// frame (mamba_step), the causal depthwise conv over [cached kernel-1 inputs | chunk].
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

// The convolution module with its depthwise conv fed [cache | chunk]: x (N, n, d) -> (N, n, d).
at::Tensor conv_module_step(nn::ConvolutionModuleImpl& m, const at::Tensor& x, at::Tensor& cache) {
  const int64_t n = x.size(1), history = cache.size(2);
  const at::Tensor gated = m.bottleneck->forward(m.layer_norm->forward(x).transpose(1, 2));
  const at::Tensor window = at::cat({cache, gated}, 2);  // (N, d, kernel-1 + n), oldest first
  cache = window.narrow(2, n, history);
  // The module pads kernel-1 on both sides; output kernel-1+t ends at window frame kernel-1+t.
  const at::Tensor out = m.conv->forward(window).narrow(2, history, n);
  return m.after_conv->forward(out.transpose(1, 2));
}

at::Tensor mamba_chunk(nn::MambaImpl& mamba, const at::Tensor& x, MambaStepState& state) {
  std::vector<at::Tensor> frames;
  frames.reserve(static_cast<size_t>(x.size(1)));
  for (int64_t t = 0; t < x.size(1); ++t) frames.push_back(mamba_step(mamba, x.narrow(1, t, 1), state));
  return at::cat(frames, 1);
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
    auto* l = encoder.layers[i]->as<ConmambaEncoderLayerImpl>();
    ConmambaLayerCache& cache = state.layers[i];
    // The order of ConmambaEncoderLayerImpl::forward.
    h = h + 0.5 * l->ffn_module1->forward(h);
    h = h + mamba_chunk(*l->mamba, l->norm1->forward(h), cache.mamba);
    h = h + conv_module_step(*l->convolution_module, h, cache.conv);
    h = l->norm2->forward(h + 0.5 * l->ffn_module2->forward(h));
  }
  state.frames += x.size(1);
  return encoder.norm->forward(h);
}

}  // namespace masr::models
