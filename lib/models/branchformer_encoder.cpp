// lib/models/branchformer_encoder.cpp
// Branchformer encoder layers.
#include "models/branchformer_encoder.h"

#include "nn/checkpoint.h"
#include "nn/masks.h"

namespace masr::models {

BranchformerEncoderLayerImpl::BranchformerEncoderLayerImpl(const BranchformerConfig& c) {
  // RelPosMHAXL never masks future positions here (mask_pos_future=False upstream).
  // HyperMixing's hypernetwork is 4 d_model wide here (SpeechBrain's BranchformerEncoderLayer).
  mha_layer = nn::SelfAttention(*this, "mha_layer", c.attention, c.d_model, c.nhead, c.dropout,
                                /*causal=*/false, 4 * c.d_model);
  convolution_branch =
      register_module("convolution_branch",
                      nn::ConvolutionBranch(c.d_model, c.csgu_linear_units, c.kernel_size,
                                            c.activation, c.dropout, c.use_linear_after_conv));
  merge_proj = register_module("merge_proj", torch::nn::Linear(2 * c.d_model, c.d_model));
  norm_mhsa = register_module("norm_mhsa", nn::SbLayerNorm(c.d_model, 1e-5));
  norm_conv = register_module("norm_conv", nn::SbLayerNorm(c.d_model, 1e-5));
  dropout = register_module("dropout", torch::nn::Dropout(c.dropout));
}

at::Tensor BranchformerEncoderLayerImpl::forward(const at::Tensor& x, const at::Tensor& pos_embs,
                                                 const at::Tensor& key_padding_mask) {
  const at::Tensor attended = dropout->forward(
      mha_layer.forward(norm_mhsa->forward(x), pos_embs, at::Tensor(), key_padding_mask));
  const at::Tensor gated = dropout->forward(convolution_branch->forward(norm_conv->forward(x)));
  return x + dropout->forward(merge_proj->forward(torch::cat({attended, gated}, -1)));
}

BranchformerEncoder::BranchformerEncoder(const BranchformerConfig& c) : config(c) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_layers; ++i) layers->push_back(BranchformerEncoderLayer(c));
  norm = register_module("norm", nn::SbLayerNorm(c.d_model, 1e-6));
}

at::Tensor BranchformerEncoder::forward(const at::Tensor& x, const at::Tensor& lengths) {
  const int64_t T = x.size(1);
  const at::Tensor pos_embs = config.attention == nn::AttentionType::kRelPosMHAXL
                                  ? nn::relative_positional_encoding(T, config.d_model, x.options())
                                  : at::Tensor();
  const at::Tensor padding =
      lengths.defined() ? nn::padding_mask(lengths.to(x.device()), T) : at::Tensor();
  at::Tensor out = x;
  for (const auto& layer : *layers) {
    BranchformerEncoderLayerImpl* l = layer->as<BranchformerEncoderLayerImpl>();
    out = nn::checkpointed(
        [l, pos_embs, padding](const at::Tensor& h) { return l->forward(h, pos_embs, padding); },
        out);
  }
  return norm->forward(out);
}

}  // namespace masr::models
