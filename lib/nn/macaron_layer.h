// lib/nn/macaron_layer.h
// The macaron frame that Conformer and ConMamba layers share (SpeechBrain ConformerEncoderLayer,
// Mamba-ASR ConmambaEncoderLayer): half-step feed-forwards around a sequence mixer (attention or
// Mamba) and the convolution module.
#pragma once

#include <torch/torch.h>

#include "nn/activation.h"
#include "nn/conv_module.h"
#include "nn/wrappers.h"

namespace masr::nn {

// x <- x + FFN1(x)/2; x <- x + mixer(LN1(x)); x <- x + Conv(x); x <- LN2(x + FFN2(x)/2).
// Keys: ffn_module1, convolution_module, ffn_module2, norm1.norm, norm2.norm (LayerNorm eps 1e-5);
// the derived layer registers its mixer first, as upstream does.
struct MacaronLayerBase : torch::nn::Module {
  torch::nn::Sequential ffn_module1{nullptr}, ffn_module2{nullptr};
  ConvolutionModule convolution_module{nullptr};
  SbLayerNorm norm1{nullptr}, norm2{nullptr};

 protected:
  // Registers the parts above; call it after registering the mixer (the keys' order).
  void register_macaron(int64_t d_model, int64_t d_ffn, int64_t kernel_size, bool bias,
                        Activation activation, double dropout, bool causal);

  // x: (B, T, d) -> (B, T, d). mixer: (B, T, d) -> (B, T, d), given LN1(x). lengths and
  // conv_history: as ConvolutionModuleImpl::forward's (conv_history null for a whole sequence).
  template <typename Mixer>
  at::Tensor macaron(const at::Tensor& input, const at::Tensor& lengths, Mixer&& mixer,
                     at::Tensor* conv_history = nullptr) {
    at::Tensor x = input + 0.5 * ffn_module1->forward(input);
    x = x + mixer(norm1->forward(x));
    x = x + convolution_module->forward(x, lengths, conv_history);
    return norm2->forward(x + 0.5 * ffn_module2->forward(x));
  }
};

}  // namespace masr::nn
