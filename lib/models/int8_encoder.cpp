// lib/models/int8_encoder.cpp
// Swaps int8 layers into a ConMamba encoder's feed-forwards, Mambas and convolution modules.
#include "models/int8_encoder.h"

#include <torch/torch.h>

#include <cstdio>
#include <memory>

#include "core/error.h"
#include "models/conmamba_encoder.h"
#include "models/transformer_asr.h"
#include "nn/conv_module.h"
#include "nn/mamba.h"
#include "nn/quantized_linear.h"

namespace masr::models {
namespace {

// The convolution module's bottleneck.0, Conv1d(d, 2d, 1) on (B, d, T), as an int8 product.
int64_t quantize_pointwise(nn::ConvolutionModuleImpl& module, const nn::Int8Engine& engine) {
  const auto conv = std::dynamic_pointer_cast<torch::nn::Conv1dImpl>(module.bottleneck->ptr(0));
  if (!conv) return 0;  // already quantized
  const auto& o = conv->options;
  if (conv->weight.dim() != 3 || conv->weight.size(2) != 1 || o.groups() != 1 ||
      (*o.stride())[0] != 1 || (*o.dilation())[0] != 1) {
    throw_config_error("int8: the convolution module's bottleneck.0 is not a pointwise Conv1d "
                       "(kernel 1, stride 1, one group)");
  }
  nn::replace_in_sequential(*module.bottleneck, 0,
                            nn::Int8Linear(conv->weight, conv->bias,
                                           nn::Int8LinearImpl::Layout::kChannels, engine));
  return conv->weight.numel();
}

}  // namespace

std::string Int8Summary::str() const {
  char text[200];
  std::snprintf(text, sizeof(text), "%lld Linear layers (%.2f M weights) int8 per output channel, %s",
                static_cast<long long>(layers), static_cast<double>(weights) / 1e6, engine.c_str());
  return text;
}

Int8Summary quantize_encoder_int8(TransformerASRImpl& transformer) {
  const TransformerASRConfig& config = transformer.config();
  if (config.encoder_module != "conmamba") {
    throw_config_error("int8: int8 decoding is implemented for ConMamba encoders; this model's "
                       "encoder is '" +
                       config.encoder_module + "' (decode it with --precision fp32)");
  }
  if (transformer.is_training()) {
    throw_config_error("int8: the model is in training mode; quantize a model for decoding "
                       "(eval mode)");
  }
  for (const auto& p : transformer.parameters()) {
    if (!p.device().is_cpu()) {
      throw_config_error("int8: the model is on " + p.device().str() +
                         "; int8 layers run on the CPU (quantize before moving a model, or "
                         "decode on the GPU with --precision bf16 / fp16)");
    }
  }
  const auto children = transformer.named_children();
  const auto* found = children.find("encoder");
  const auto encoder =
      found ? std::dynamic_pointer_cast<ConmambaEncoder>(*found) : std::shared_ptr<ConmambaEncoder>();
  if (!encoder) throw_config_error("int8: the TransformerASR has no ConMamba encoder module");

  const nn::Int8Engine engine = nn::int8_engine();
  Int8Summary summary;
  summary.engine = engine.name;
  // modules() lists them before any swap; swapped-in modules are not visited again.
  for (const auto& module : encoder->modules(/*include_self=*/false)) {
    if (auto* seq = dynamic_cast<torch::nn::SequentialImpl*>(module.get())) {
      // The feed-forwards' Linear layers and the convolution module's after_conv Linear.
      summary.layers += nn::quantize_sequential_linears(*seq, engine, &summary.weights);
    } else if (auto* mamba = dynamic_cast<nn::MambaImpl*>(module.get())) {
      if (mamba->in_proj.int8) continue;
      for (nn::OptionalInt8Linear* proj : {&mamba->in_proj, &mamba->out_proj}) {
        proj->int8 = std::make_shared<const nn::QuantizedLinear>(*proj->linear, engine);
      }
      summary.layers += 2;
      summary.weights += mamba->in_proj->weight.numel() + mamba->out_proj->weight.numel();
    } else if (auto* conv = dynamic_cast<nn::ConvolutionModuleImpl*>(module.get())) {
      const int64_t weights = quantize_pointwise(*conv, engine);
      summary.layers += weights > 0 ? 1 : 0;
      summary.weights += weights;
    }
  }
  return summary;
}

}  // namespace masr::models
