// lib/nn/attention.cpp
// Multi-head attention layers and positional encodings.
#include "nn/attention.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace masr::nn {

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t d_model, int64_t nhead, double dropout) {
  att = register_module("att",
                        torch::nn::MultiheadAttention(
                            torch::nn::MultiheadAttentionOptions(d_model, nhead).dropout(dropout)));
}

at::Tensor MultiheadAttentionImpl::forward(const at::Tensor& query, const at::Tensor& key,
                                           const at::Tensor& value, const at::Tensor& attn_mask,
                                           const at::Tensor& key_padding_mask) {
  // torch.nn.MultiheadAttention's computation on its own parameters (in_proj_weight/bias,
  // out_proj), written out rather than calling LibTorch's C++ functional: that one fills the
  // key padding mask under AT_DISPATCH_FLOATING_TYPES, which rejects the bf16/fp16 scores of CUDA
  // autocast, and its mask handling differs between LibTorch 1.13 and 2.x.
  const int64_t batch = query.size(0), t_q = query.size(1), t_k = key.size(1);
  const int64_t d_model = query.size(2), heads = att->options.num_heads();
  const int64_t head_dim = d_model / heads;
  const auto w = att->in_proj_weight.chunk(3, 0);
  const auto b = att->in_proj_bias.chunk(3, 0);
  auto split_heads = [&](const at::Tensor& x, int64_t len) {
    return x.view({batch, len, heads, head_dim}).transpose(1, 2);  // (B, H, T, Dh)
  };
  const at::Tensor q = split_heads(torch::linear(query, w[0], b[0]), t_q) *
                       (1.0 / std::sqrt(static_cast<double>(head_dim)));
  const at::Tensor k = split_heads(torch::linear(key, w[1], b[1]), t_k);
  const at::Tensor v = split_heads(torch::linear(value, w[2], b[2]), t_k);
  at::Tensor scores = torch::matmul(q, k.transpose(-2, -1));  // (B, H, T_q, T_k)
  constexpr double kBlocked = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined()) {  // (T_q, T_k) or (B * H, T_q, T_k); boolean or additive
    const at::Tensor m = attn_mask.dim() == 2 ? attn_mask.view({1, 1, t_q, t_k})
                                              : attn_mask.view({batch, heads, t_q, t_k});
    scores = m.scalar_type() == torch::kBool ? scores.masked_fill(m, kBlocked) : scores + m;
  }
  if (key_padding_mask.defined()) {
    scores =
        scores.masked_fill(key_padding_mask.to(torch::kBool).view({batch, 1, 1, t_k}), kBlocked);
  }
  at::Tensor weights = torch::softmax(scores, -1);
  weights = torch::dropout(weights, att->options.dropout(), is_training());
  const at::Tensor out = torch::matmul(weights, v).transpose(1, 2).reshape({batch, t_q, d_model});
  return att->out_proj->forward(out);
}

RelPosMHAXLImpl::RelPosMHAXLImpl(int64_t d_model_, int64_t nhead_, double dropout,
                                 bool mask_pos_future_)
    : d_model(d_model_),
      nhead(nhead_),
      head_dim(d_model_ / nhead_),
      mask_pos_future(mask_pos_future_) {
  if (d_model % nhead != 0) {
    throw_config_error("RelPosMHAXL: d_model " + std::to_string(d_model) +
                       " is not divisible by nhead " + std::to_string(nhead));
  }
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d_model, d_model}));
  dropout_att = register_module("dropout_att", torch::nn::Dropout(dropout));
  out_proj = register_module("out_proj", torch::nn::Linear(d_model, d_model));
  linear_pos = register_module(
      "linear_pos", torch::nn::Linear(torch::nn::LinearOptions(d_model, d_model).bias(false)));
  pos_bias_u = register_parameter("pos_bias_u", torch::empty({head_dim, nhead}));
  pos_bias_v = register_parameter("pos_bias_v", torch::empty({head_dim, nhead}));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
  torch::nn::init::xavier_uniform_(pos_bias_u);
  torch::nn::init::xavier_uniform_(pos_bias_v);
}

// Transformer-XL's shifting trick: turns scores against relative positions (2T-1) into scores
// against key positions, keeping the first T columns.
at::Tensor RelPosMHAXLImpl::rel_shift(const at::Tensor& x) const {
  const int64_t b = x.size(0), h = x.size(1), qlen = x.size(2), pos_len = x.size(3);
  at::Tensor y = torch::constant_pad_nd(x, {1, 0});
  y = y.view({b, h, -1, qlen}).narrow(2, 1, pos_len).reshape({b, h, qlen, pos_len});
  if (mask_pos_future) {
    y = y *
        torch::ones({qlen, pos_len}, x.options()).tril(pos_len - qlen).view({1, 1, qlen, pos_len});
  }
  return y.narrow(3, 0, pos_len / 2 + 1);
}

at::Tensor RelPosMHAXLImpl::forward(const at::Tensor& x, const at::Tensor& pos_embs,
                                    const at::Tensor& attn_mask,
                                    const at::Tensor& key_padding_mask) {
  const int64_t bsz = x.size(0), len = x.size(1);
  const auto qkv =
      torch::matmul(x, in_proj_weight.t()).view({bsz, len, nhead, 3 * head_dim}).chunk(3, -1);
  const at::Tensor p_k = linear_pos->forward(pos_embs).view({1, -1, nhead, head_dim});
  const double scale = 1.0 / std::sqrt(static_cast<double>(d_model));
  const at::Tensor q_u = (qkv[0] + pos_bias_u.reshape({1, 1, nhead, head_dim})).transpose(1, 2);
  const at::Tensor q_v = (qkv[0] + pos_bias_v.reshape({1, 1, nhead, head_dim})).transpose(1, 2);
  const at::Tensor ac = torch::matmul(q_u * scale, qkv[1].permute({0, 2, 3, 1}));
  const at::Tensor bd = rel_shift(torch::matmul(q_v * scale, p_k.permute({0, 2, 3, 1})));
  at::Tensor score = ac + bd;  // (B, H, T, T)
  const double fill = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined()) score = score.masked_fill(attn_mask.view({1, 1, len, len}), fill);
  if (key_padding_mask.defined()) {
    score = score.masked_fill(key_padding_mask.view({bsz, 1, 1, len}), fill);
  }
  score = torch::softmax(score, -1, torch::kFloat).to(x.scalar_type());
  score = dropout_att->forward(score);
  // Rows whose keys are all masked give NaN after softmax; SpeechBrain zeroes masked weights.
  if (attn_mask.defined()) score = score.masked_fill(attn_mask.view({1, 1, len, len}), 0.0);
  if (key_padding_mask.defined()) {
    score = score.masked_fill(key_padding_mask.view({bsz, 1, 1, len}), 0.0);
  }
  const at::Tensor out = torch::matmul(score, qkv[2].transpose(1, 2));  // (B, H, T, hd)
  return out_proj->forward(out.transpose(1, 2).contiguous().view({bsz, len, d_model}));
}

AttentionType attention_type_from_name(const std::string& name, const std::string& where) {
  if (name == "regularMHA") return AttentionType::kRegularMHA;
  if (name == "RelPosMHAXL") return AttentionType::kRelPosMHAXL;
  if (name == "RoPEMHA") return AttentionType::kRoPEMHA;
  if (name == "hypermixing") return AttentionType::kHyperMixing;
  throw_config_error(where + "attention_type '" + name +
                     "' is not supported; expected regularMHA, RelPosMHAXL, RoPEMHA or "
                     "hypermixing");
}

RoPEMHAImpl::RoPEMHAImpl(int64_t d_model_, int64_t nhead_, double dropout_)
    : d_model(d_model_), nhead(nhead_), head_dim(d_model_ / nhead_), dropout(dropout_) {
  if (d_model % nhead != 0 || head_dim % 2 != 0) {
    throw_config_error("RoPEMHA: d_model " + std::to_string(d_model) + " over nhead " +
                       std::to_string(nhead) + " must give an even head size");
  }
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * d_model, d_model}));
  out_proj = register_module("out_proj", torch::nn::Linear(d_model, d_model));
  torch::NoGradGuard no_grad;
  torch::nn::init::xavier_uniform_(in_proj_weight);
}

at::Tensor rope_rotate(const at::Tensor& x) {
  const int64_t length = x.size(1), dim = x.size(3);
  const auto f32 =
      x.options().dtype(x.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat);
  const at::Tensor angles = torch::exp(torch::arange(0, dim, 2, f32) * -(std::log(10000.0) / dim));
  const at::Tensor times_angles = torch::outer(torch::arange(0, length, f32), angles);  // (T, d/2)
  const at::Tensor cosines =
      torch::stack({times_angles.cos(), times_angles.cos()}, -1).view({length, 1, dim});
  const at::Tensor sines = times_angles.sin();
  // (-sin, +sin) per pair: out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i+1] cos + x[2i] sin.
  const at::Tensor signed_sines = torch::stack({-sines, sines}, -1).view({length, 1, dim});
  const at::Tensor swapped =
      x.reshape({x.size(0), length, x.size(2), dim / 2, 2}).flip(-1).reshape(x.sizes());
  return x * cosines.to(x.scalar_type()) + swapped * signed_sines.to(x.scalar_type());
}

at::Tensor RoPEMHAImpl::forward(const at::Tensor& x, const at::Tensor& attn_mask,
                                const at::Tensor& key_padding_mask) {
  const int64_t bsz = x.size(0), len = x.size(1);
  const auto qkv =
      torch::matmul(x, in_proj_weight.t()).view({bsz, len, nhead, 3 * head_dim}).chunk(3, -1);
  const at::Tensor q = rope_rotate(qkv[0]).transpose(1, 2);  // (B, H, T, hd)
  const at::Tensor k = rope_rotate(qkv[1]).transpose(1, 2);
  at::Tensor score =
      torch::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(d_model)));
  const double fill = -std::numeric_limits<double>::infinity();
  if (attn_mask.defined()) score = score.masked_fill(attn_mask.view({1, 1, len, len}), fill);
  if (key_padding_mask.defined()) {
    score = score.masked_fill(key_padding_mask.view({bsz, 1, 1, len}), fill);
  }
  score = torch::softmax(score, -1, torch::kFloat).to(x.scalar_type());
  score = torch::dropout(score, dropout, is_training());
  const at::Tensor out = torch::matmul(score, qkv[2].transpose(1, 2));  // (B, H, T, hd)
  return out_proj->forward(out.transpose(1, 2).contiguous().view({bsz, len, d_model}));
}

ParallelMLPsImpl::ParallelMLPsImpl(int64_t input_size_, int64_t hidden_size, int64_t output_size,
                                   int64_t num_mlps_, bool keep_output_size)
    : num_mlps(num_mlps_) {
  if (num_mlps <= 0 || input_size_ % num_mlps != 0 || hidden_size % num_mlps != 0 ||
      output_size % num_mlps != 0) {
    throw_config_error("HyperMixing: d_model " + std::to_string(input_size_) +
                       " and hypernet size " + std::to_string(output_size) +
                       " must divide into nhead " + std::to_string(num_mlps) + " heads");
  }
  input_size = input_size_ / num_mlps;
  const int64_t hidden = hidden_size / num_mlps;
  const int64_t output = keep_output_size ? output_size : output_size / num_mlps;
  fc1_weights = register_parameter("fc1_weights", torch::empty({num_mlps, hidden, input_size}));
  fc1_biases = register_parameter("fc1_biases", torch::empty({num_mlps, hidden}));
  fc2_weights = register_parameter("fc2_weights", torch::empty({num_mlps, output, hidden}));
  fc2_biases = register_parameter("fc2_biases", torch::empty({num_mlps, output}));
  torch::NoGradGuard no_grad;
  for (auto* p : {&fc1_weights, &fc1_biases, &fc2_weights, &fc2_biases}) {
    torch::nn::init::xavier_uniform_(*p, std::sqrt(2.0));
  }
}

at::Tensor ParallelMLPsImpl::forward(const at::Tensor& x) {
  const int64_t batch = x.size(0), length = x.size(1);
  // (B, T, m, f) through each MLP's (h, f) and (o, h) weights: (B, m, T, o).
  const at::Tensor split = x.reshape({batch, length, num_mlps, input_size});
  at::Tensor h = torch::einsum("blmf,mhf->bmlh", {split, fc1_weights}) +
                 fc1_biases.unsqueeze(0).unsqueeze(2);
  h = torch::gelu(h);
  return torch::einsum("bmlh,mfh->bmlf", {h, fc2_weights}) + fc2_biases.unsqueeze(0).unsqueeze(2);
}

HyperMixingImpl::HyperMixingImpl(int64_t d_model_, int64_t hypernet_size, int64_t num_heads_,
                                 int64_t max_length)
    : d_model(d_model_), num_heads(num_heads_) {
  hyper = register_module("hyper", std::make_shared<torch::nn::Module>());
  w1_gen = hyper->register_module(
      "w1_gen", ParallelMLPs(d_model, d_model, hypernet_size, num_heads, /*keep_output_size=*/false));
  w2_gen = hyper->register_module(
      "w2_gen", ParallelMLPs(d_model, d_model, hypernet_size, num_heads, /*keep_output_size=*/false));
  layer_norm = register_module("layer_norm",
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  positional_encoding =
      register_module("positional_encoding", PositionalEncoding(d_model, max_length));
}

at::Tensor HyperMixingImpl::forward(const at::Tensor& x, const at::Tensor& key_padding_mask) {
  const int64_t batch = x.size(0), length = x.size(1);
  at::Tensor out = x;
  at::Tensor keep;  // (B, T, 1) float: 1 for real frames
  if (key_padding_mask.defined()) {
    keep = key_padding_mask.logical_not().unsqueeze(-1).to(torch::kFloat);
    out = out * keep;
  }
  const at::Tensor hyper_input = out + positional_encoding->forward(out);
  at::Tensor w1 = w1_gen->forward(hyper_input), w2 = w2_gen->forward(hyper_input);  // (B, m, T, k)
  if (keep.defined()) {
    w1 = w1 * keep.unsqueeze(1);
    w2 = w2 * keep.unsqueeze(1);
  }
  // Heads into the batch: (B m, d / m, T) mixed over time by the generated (T, k) weights.
  out = out.transpose(1, 2).reshape({batch * num_heads, d_model / num_heads, length});
  w1 = w1.reshape({batch * num_heads, length, -1});
  w2 = w2.reshape({batch * num_heads, length, -1});
  out = torch::bmm(torch::gelu(torch::bmm(out, w1)), w2.transpose(1, 2));
  return layer_norm->forward(out.reshape({batch, d_model, length}).transpose(1, 2));
}

SelfAttention::SelfAttention(torch::nn::Module& owner, const std::string& name, AttentionType type_,
                             int64_t d_model, int64_t nhead, double dropout, bool causal,
                             int64_t hypernet_size)
    : type(type_) {
  switch (type) {
    case AttentionType::kRegularMHA:
      regular = owner.register_module(name, MultiheadAttention(d_model, nhead, dropout));
      break;
    case AttentionType::kRelPosMHAXL:
      relative = owner.register_module(name, RelPosMHAXL(d_model, nhead, dropout, causal));
      break;
    case AttentionType::kRoPEMHA:
      rotary = owner.register_module(name, RoPEMHA(d_model, nhead, dropout));
      break;
    case AttentionType::kHyperMixing:
      // SpeechBrain's HyperMixing takes no dropout and ignores the causal mask.
      hypermixing = owner.register_module(name, HyperMixing(d_model, hypernet_size, nhead, 3000));
      break;
  }
}

at::Tensor SelfAttention::forward(const at::Tensor& x, const at::Tensor& pos_embs,
                                  const at::Tensor& attn_mask,
                                  const at::Tensor& key_padding_mask) {
  switch (type) {
    case AttentionType::kRelPosMHAXL:
      return relative->forward(x, pos_embs, attn_mask, key_padding_mask);
    case AttentionType::kRoPEMHA:
      return rotary->forward(x, attn_mask, key_padding_mask);
    case AttentionType::kHyperMixing:
      return hypermixing->forward(x, key_padding_mask);
    case AttentionType::kRegularMHA:
      break;
  }
  return regular->forward(x, x, x, attn_mask, key_padding_mask);
}

at::Tensor relative_positional_encoding(int64_t length, int64_t d_model,
                                        const at::TensorOptions& options) {
  const auto f32 = at::TensorOptions().dtype(torch::kFloat);
  const at::Tensor inv_freq =
      torch::exp(torch::arange(0, d_model, 2, f32) * -(std::log(10000.0) / d_model));
  const at::Tensor angles = torch::arange(0, length, f32).unsqueeze(1) * inv_freq;  // (T, d/2)
  const at::Tensor sines = torch::sin(angles);
  const at::Tensor past = torch::stack({sines, torch::cos(angles)}, -1).view({length, d_model});
  const at::Tensor future = torch::stack({sines, torch::cos(-angles)}, -1).view({length, d_model});
  const at::Tensor pe = torch::cat({past.flip(0), future.narrow(0, 1, length - 1)}, 0);
  return pe.unsqueeze(0).to(options);
}

PositionalEncodingImpl::PositionalEncodingImpl(int64_t d_model, int64_t max_len) {
  if (d_model % 2 != 0) {
    throw_config_error("PositionalEncoding: sinusoidal encoding needs an even d_model, got " +
                       std::to_string(d_model));
  }
  const at::Tensor positions = torch::arange(0, max_len, torch::kFloat).unsqueeze(1);
  const at::Tensor denominator =
      torch::exp(torch::arange(0, d_model, 2, torch::kFloat) * -(std::log(10000.0) / d_model));
  const at::Tensor angles = positions * denominator;
  const at::Tensor table =
      torch::stack({torch::sin(angles), torch::cos(angles)}, -1).view({max_len, d_model});
  pe = register_buffer("pe", table.unsqueeze(0));
}

at::Tensor PositionalEncodingImpl::forward(const at::Tensor& x) {
  if (x.size(1) > pe.size(1)) {
    throw_input_error("PositionalEncoding: sequence of " + std::to_string(x.size(1)) +
                      " frames is longer than max_length " + std::to_string(pe.size(1)));
  }
  return pe.narrow(1, 0, x.size(1)).to(x.scalar_type());
}

}  // namespace masr::nn
