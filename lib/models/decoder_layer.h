// lib/models/decoder_layer.h
// The residual frame that the Transformer and Mamba decoder layers share (SpeechBrain's
// TransformerDecoderLayer, Mamba-ASR's MambaDecoderLayer): a self branch over the target, a cross
// branch reading the encoder output, then a position-wise FFN, each with a LayerNorm (eps 1e-6)
// before the branch (normalize_before) or after the residual sum.
#pragma once

#include <torch/torch.h>

#include "nn/activation.h"
#include "nn/feed_forward.h"
#include "nn/wrappers.h"

namespace masr::models {

// Keys: pos_ffn.ffn, norm1..3.norm, beside the derived layer's self and cross branches.
struct DecoderLayerBase : torch::nn::Module {
  nn::PositionwiseFeedForward pos_ffn{nullptr};
  nn::SbLayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  torch::nn::Dropout dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  bool normalize_before = true;

 protected:
  // Registers the modules above; call it after registering the two branches (the keys' order).
  void register_residuals(int64_t d_model, int64_t d_ffn, double dropout, nn::Activation activation,
                          bool normalize_before);

  // x: (B, U, d) -> (B, U, d). self_branch, cross_branch: (B, U, d) -> (B, U, d), given the
  // normed (or, post-norm, the raw) frames. with_dropout: false when decoding one position at a
  // time, where the branches' outputs are used as they are.
  template <typename Self, typename Cross>
  at::Tensor residuals(const at::Tensor& x, Self&& self_branch, Cross&& cross_branch,
                       bool with_dropout) {
    at::Tensor t = residual(*norm1, *dropout1, x, self_branch, with_dropout);
    t = residual(*norm2, *dropout2, t, cross_branch, with_dropout);
    return residual(
        *norm3, *dropout3, t, [this](const at::Tensor& in) { return pos_ffn->forward(in); },
        with_dropout);
  }

 private:
  // t + dropout(branch(norm(t))) (pre-norm) or norm(t + dropout(branch(t))) (post-norm).
  template <typename Branch>
  at::Tensor residual(nn::SbLayerNormImpl& norm, torch::nn::DropoutImpl& dropout,
                      const at::Tensor& t, Branch&& branch, bool with_dropout) {
    const at::Tensor out = branch(normalize_before ? norm.forward(t) : t);
    const at::Tensor sum = t + (with_dropout ? dropout.forward(out) : out);
    return normalize_before ? sum : norm.forward(sum);
  }
};

}  // namespace masr::models
