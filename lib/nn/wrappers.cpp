// lib/nn/wrappers.cpp
// SpeechBrain's named wrappers around torch layers.
#include "nn/wrappers.h"

#include <cmath>

namespace masr::nn {

SbLayerNormImpl::SbLayerNormImpl(int64_t size, double eps) {
  norm =
      register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({size}).eps(eps)));
}

SbLinearImpl::SbLinearImpl(int64_t in_features, int64_t out_features, bool bias) {
  w = register_module(
      "w", torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(bias)));
}

SbEmbeddingImpl::SbEmbeddingImpl(int64_t vocab, int64_t dim) {
  Embedding = register_module("Embedding", torch::nn::Embedding(vocab, dim));
}

NormalizedEmbeddingImpl::NormalizedEmbeddingImpl(int64_t vocab, int64_t dim_) : dim(dim_) {
  emb = register_module("emb", SbEmbedding(vocab, dim_));
}

at::Tensor NormalizedEmbeddingImpl::forward(const at::Tensor& tokens) {
  return emb->forward(tokens) * std::sqrt(static_cast<double>(dim));
}

int64_t count_parameters(const torch::nn::Module& module) {
  int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

}  // namespace masr::nn
