// lib/nn/wrappers.h
// SpeechBrain's thin wrappers around torch layers (`LayerNorm.norm`, `Linear.w`,
// `Embedding.Embedding`), kept as modules so parameter names match SpeechBrain's state dicts.
#pragma once

#include <torch/torch.h>

namespace masr::nn {

// speechbrain.nnet.normalization.LayerNorm over the last dimension: keys `norm.{weight,bias}`.
struct SbLayerNormImpl : torch::nn::Module {
  SbLayerNormImpl(int64_t size, double eps);
  at::Tensor forward(const at::Tensor& x) { return norm->forward(x); }
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(SbLayerNorm);

// speechbrain.nnet.linear.Linear: keys `w.{weight,bias}`; x: (..., in) -> (..., out).
struct SbLinearImpl : torch::nn::Module {
  SbLinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  at::Tensor forward(const at::Tensor& x) { return w->forward(x); }
  torch::nn::Linear w{nullptr};
};
TORCH_MODULE(SbLinear);

// speechbrain.nnet.embedding.Embedding wrapped by NormalizedEmbedding: keys
// `emb.Embedding.weight`; tokens (B, U) int64 -> (B, U, d) scaled by sqrt(d) (Vaswani et al.).
struct SbEmbeddingImpl : torch::nn::Module {
  SbEmbeddingImpl(int64_t vocab, int64_t dim);
  at::Tensor forward(const at::Tensor& tokens) { return Embedding->forward(tokens); }
  torch::nn::Embedding Embedding{nullptr};  // NOLINT: SpeechBrain's attribute name
};
TORCH_MODULE(SbEmbedding);

struct NormalizedEmbeddingImpl : torch::nn::Module {
  NormalizedEmbeddingImpl(int64_t vocab, int64_t dim);
  at::Tensor forward(const at::Tensor& tokens);
  SbEmbedding emb{nullptr};
  int64_t dim = 0;
};
TORCH_MODULE(NormalizedEmbedding);

// Total number of parameters (elements) of a module and its children.
int64_t count_parameters(const torch::nn::Module& module);

}  // namespace masr::nn
