// lib/models/conmamba_encoder.h
// The ConMamba encoder (xi-j/Mamba-ASR modules/Conmamba.py): Conformer's macaron layer with the
// self-attention replaced by a bidirectional Mamba, and no positional encoding.
#pragma once

#include "models/encoder.h"
#include "nn/activation.h"
#include "nn/conv_module.h"
#include "nn/mamba.h"
#include "nn/wrappers.h"

namespace masr::models {

struct ConmambaConfig {
  int64_t d_model = 512;
  int64_t d_ffn = 2048;
  int64_t num_layers = 12;
  int64_t kernel_size = 31;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kGelu;  // branchformer_activation upstream
  bool bias = true;
  // causal: unidirectional Mamba and a causal depthwise conv (upstream: causal or !bidirectional
  // picks the unidirectional Mamba; only causal makes the conv causal).
  bool causal = false;
  bool bidirectional = true;
  nn::MambaConfig mamba;
};

// x <- x + FFN1(x)/2; x <- x + Mamba(LN1(x)); x <- x + Conv(x); x <- LN2(x + FFN2(x)/2).
// Keys: ffn_module1, mamba, convolution_module, ffn_module2, norm1.norm, norm2.norm.
struct ConmambaEncoderLayerImpl : torch::nn::Module {
  explicit ConmambaEncoderLayerImpl(const ConmambaConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths);
  torch::nn::Sequential ffn_module1{nullptr}, ffn_module2{nullptr};
  nn::Mamba mamba{nullptr};
  nn::ConvolutionModule convolution_module{nullptr};
  nn::SbLayerNorm norm1{nullptr}, norm2{nullptr};
};
TORCH_MODULE(ConmambaEncoderLayer);

// Layers then a final LayerNorm (eps 1e-6): keys layers.{i}.*, norm.norm.*.
struct ConmambaEncoder : Encoder {
  explicit ConmambaEncoder(const ConmambaConfig& config);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) override;
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
};

}  // namespace masr::models
