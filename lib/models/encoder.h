// lib/models/encoder.h
// The interface shared by the ASR encoders (ConMamba, Conformer, Transformer) and decoders
// (Transformer, Mamba), so TransformerASR can hold any of them.
#pragma once

#include <torch/torch.h>

#include <memory>

namespace masr::models {

struct Encoder : torch::nn::Module {
  // x: (B, T, d) after custom_src_module; lengths: int64 (B) valid frames, or undefined (all
  // valid). Returns (B, T, d); frames past a length are unspecified.
  virtual at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths) = 0;
};

// What a decoder (or LM) keeps between incremental steps for N hypothesis rows: KV caches,
// recurrent states. `steps` counts the tokens consumed so far.
struct DecoderState {
  virtual ~DecoderState() = default;
  // rows: int64 (N), the row of the previous step that each row now continues. Rows never move
  // to another utterance (row r belongs to utterance r / beam), as beam searches guarantee.
  virtual void reorder(const at::Tensor& rows) = 0;
  int64_t steps = 0;
};

struct Decoder : torch::nn::Module {
  // tgt: (B, U, d) embedded tokens with positions; tgt_padding: bool (B, U) true at padding or
  // undefined; memory: (B, S, d); memory_lengths: int64 (B) or undefined. Returns (B, U, d).
  virtual at::Tensor forward(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                             const at::Tensor& memory, const at::Tensor& memory_lengths) = 0;
  // Incremental decoding of `beam` rows per utterance of memory (B, S, d): whatever depends only
  // on the memory is computed here, once.
  virtual std::unique_ptr<DecoderState> start(const at::Tensor& memory,
                                              const at::Tensor& memory_lengths, int64_t beam) = 0;
  // tgt: (N, 1, d) every row's next embedded token; tgt_padding: bool (N, 1) or undefined.
  // Returns (N, 1, d), forward's output at that position given the rows' earlier tokens.
  virtual at::Tensor step(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                          DecoderState& state) = 0;
};

}  // namespace masr::models
