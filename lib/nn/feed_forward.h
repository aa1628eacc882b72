// lib/nn/feed_forward.h
// SpeechBrain's PositionalwiseFeedForward and the macaron FFN block of Conformer/ConMamba layers.
#pragma once

#include <torch/torch.h>

#include "nn/activation.h"

namespace masr::nn {

// Linear(d, d_ffn) -> activation -> Dropout -> Linear(d_ffn, d); keys `ffn.0.*`, `ffn.3.*`.
// x: (B, T, d) -> (B, T, d).
struct PositionwiseFeedForwardImpl : torch::nn::Module {
  PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ffn, double dropout,
                              Activation activation);
  at::Tensor forward(const at::Tensor& x) { return ffn->forward(x); }
  torch::nn::Sequential ffn{nullptr};
};
TORCH_MODULE(PositionwiseFeedForward);

// nn.Sequential(LayerNorm(d), PositionalwiseFeedForward, Dropout): keys `0.*`, `1.ffn.*`.
torch::nn::Sequential make_macaron_ffn(int64_t d_model, int64_t d_ffn, double dropout,
                                       Activation activation);

}  // namespace masr::nn
