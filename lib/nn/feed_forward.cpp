// lib/nn/feed_forward.cpp
// Position-wise feed-forward blocks.
#include "nn/feed_forward.h"

namespace masr::nn {

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_model, int64_t d_ffn,
                                                         double dropout, Activation activation) {
  ffn = torch::nn::Sequential();
  ffn->push_back(torch::nn::Linear(d_model, d_ffn));
  ffn->push_back(make_activation(activation));
  ffn->push_back(torch::nn::Dropout(dropout));
  ffn->push_back(torch::nn::Linear(d_ffn, d_model));
  register_module("ffn", ffn);
}

torch::nn::Sequential make_macaron_ffn(int64_t d_model, int64_t d_ffn, double dropout,
                                       Activation activation) {
  torch::nn::Sequential block;
  block->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model}).eps(1e-5)));
  block->push_back(PositionwiseFeedForward(d_model, d_ffn, dropout, activation));
  block->push_back(torch::nn::Dropout(dropout));
  return block;
}

}  // namespace masr::nn
