// lib/models/conmamba_encoder.h
// The ConMamba encoder (xi-j/Mamba-ASR modules/Conmamba.py): Conformer's macaron layer with the
// self-attention replaced by a bidirectional Mamba, and no positional encoding.
#pragma once

#include "models/encoder.h"
#include "models/mamba_step.h"
#include "nn/activation.h"
#include "nn/macaron_layer.h"
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

// What a layer run chunk by chunk (a causal layer: models/conmamba_stream.h) keeps between
// chunks.
struct ConmambaLayerCache {
  MambaStepState mamba;  // conv (N, d_inner, d_conv-1) and SSM (N, d_inner, d_state) state
  at::Tensor conv;       // (N, d_model, kernel-1): the depthwise conv's inputs before the chunk
};

// x <- x + FFN1(x)/2; x <- x + Mamba(LN1(x)); x <- x + Conv(x); x <- LN2(x + FFN2(x)/2).
// Keys: ffn_module1, mamba, convolution_module, ffn_module2, norm1.norm, norm2.norm.
struct ConmambaEncoderLayerImpl : nn::MacaronLayerBase {
  explicit ConmambaEncoderLayerImpl(const ConmambaConfig& config);
  // x: (B, T, d_model) -> (B, T, d_model). cache: null for a whole sequence; for a causal layer
  // run chunk by chunk, the state after the frames before x (the Mamba stepped frame by frame,
  // the depthwise conv reading the cached inputs), advanced past x.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths,
                     ConmambaLayerCache* cache = nullptr);
  nn::Mamba mamba{nullptr};
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
