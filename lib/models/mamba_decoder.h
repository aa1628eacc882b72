// lib/models/mamba_decoder.h
// The Mamba decoder of xi-j/Mamba-ASR (modules/Conmamba.py MambaDecoderLayer): a causal
// self-Mamba over the target, a "cross-Mamba" over [encoder output; target] whose last |target|
// outputs are kept, and a position-wise FFN, each pre-normed (eps 1e-6) with dropout.
#pragma once

#include "models/decoder_layer.h"
#include "models/encoder.h"
#include "models/mamba_step.h"
#include "nn/activation.h"
#include "nn/feed_forward.h"
#include "nn/mamba.h"
#include "nn/wrappers.h"

namespace masr::models {

struct MambaDecoderConfig {
  int64_t d_model = 512;
  int64_t d_ffn = 2048;
  int64_t num_layers = 6;
  double dropout = 0.1;
  nn::Activation activation = nn::Activation::kGelu;
  bool normalize_before = true;
  nn::MambaConfig mamba;
};

// Keys: self_mamba, cross_mamba, pos_ffn.ffn, norm1..3.norm.
struct MambaDecoderLayerImpl : DecoderLayerBase {
  explicit MambaDecoderLayerImpl(const MambaDecoderConfig& config);
  // memory_lengths: with it, each utterance's cross-Mamba reads only its own memory frames
  // (upstream concatenates the padded memory, so padding leaks in for batches > 1).
  at::Tensor forward(const at::Tensor& tgt, const at::Tensor& memory,
                     const at::Tensor& memory_lengths);
  // One position (N, 1, d) with the self- and cross-Mamba states of its rows.
  at::Tensor step(const at::Tensor& tgt, MambaStepState& self, MambaStepState& cross);
  nn::Mamba self_mamba{nullptr}, cross_mamba{nullptr};

 private:
  at::Tensor cross(const at::Tensor& tgt, const at::Tensor& memory,
                   const at::Tensor& memory_lengths);
};
TORCH_MODULE(MambaDecoderLayer);

struct MambaDecoder : Decoder {
  explicit MambaDecoder(const MambaDecoderConfig& config);
  // tgt_padding is not used: every Mamba here is causal, so trailing padding never reaches a
  // real position.
  at::Tensor forward(const at::Tensor& tgt, const at::Tensor& tgt_padding, const at::Tensor& memory,
                     const at::Tensor& memory_lengths) override;
  // Recurrent stepping (reference §2.5): each cross-Mamba's state after its utterance's memory
  // frames is computed once here, then both Mambas advance one token per step.
  std::unique_ptr<DecoderState> start(const at::Tensor& memory, const at::Tensor& memory_lengths,
                                      int64_t beam) override;
  at::Tensor step(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                  DecoderState& state) override;
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
};

}  // namespace masr::models
