// lib/models/encoder.h
// The interface shared by the ASR encoders (ConMamba, Conformer, Transformer) and decoders
// (Transformer, Mamba), so TransformerASR can hold any of them.
#pragma once

#include <torch/torch.h>

namespace masr::models {

struct Encoder : torch::nn::Module {
  // x: (B, T, d) after custom_src_module; lengths: int64 (B) valid frames, or undefined (all
  // valid). Returns (B, T, d); frames past a length are unspecified.
  virtual at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) = 0;
};

struct Decoder : torch::nn::Module {
  // tgt: (B, U, d) embedded tokens with positions; tgt_padding: bool (B, U) true at padding or
  // undefined; memory: (B, S, d); memory_lengths: int64 (B) or undefined. Returns (B, U, d).
  virtual at::Tensor forward(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                             const at::Tensor& memory, const at::Tensor& memory_lengths) = 0;
};

}  // namespace masr::models
