// lib/models/transformer_decoder.h
// SpeechBrain v1.0's Transformer decoder: masked self-attention, cross-attention to the encoder
// output and a position-wise FFN, each with LayerNorm (eps 1e-6) before (or after) the branch.
#pragma once

#include "models/decoder_layer.h"
#include "models/encoder.h"
#include "models/incremental_attention.h"
#include "models/transformer_stack.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/wrappers.h"

namespace masr::models {

struct TransformerDecoderConfig : TransformerStackConfig {};

// Keys: self_attn.att, mutihead_attn.att (SpeechBrain's spelling), pos_ffn.ffn, norm1..3.norm.
struct TransformerDecoderLayerImpl : DecoderLayerBase {
  explicit TransformerDecoderLayerImpl(const TransformerDecoderConfig& config);
  at::Tensor forward(const at::Tensor& tgt, const at::Tensor& memory, const at::Tensor& tgt_mask,
                     const at::Tensor& tgt_padding, const at::Tensor& memory_padding);
  // One position (N, 1, d) with this layer's self-attention cache and the memory's keys/values.
  at::Tensor step(const at::Tensor& tgt, SelfAttentionCache& cache, const KeyValue& memory,
                  const at::Tensor& memory_padding, const at::Tensor& tgt_padding);
  nn::MultiheadAttention self_attn{nullptr}, mutihead_attn{nullptr};
};
TORCH_MODULE(TransformerDecoderLayer);

struct TransformerDecoder : Decoder {
  explicit TransformerDecoder(const TransformerDecoderConfig& config);
  at::Tensor forward(const at::Tensor& tgt, const at::Tensor& tgt_padding, const at::Tensor& memory,
                     const at::Tensor& memory_lengths) override;
  // Cross-attention keys/values are projected once per utterance and shared by its rows.
  std::unique_ptr<DecoderState> start(const at::Tensor& memory, const at::Tensor& memory_lengths,
                                      int64_t beam) override;
  at::Tensor step(const at::Tensor& tgt, const at::Tensor& tgt_padding,
                  DecoderState& state) override;
  torch::nn::ModuleList layers{nullptr};
  nn::SbLayerNorm norm{nullptr};
};

}  // namespace masr::models
