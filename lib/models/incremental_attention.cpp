// lib/models/incremental_attention.cpp
// Attention over cached keys and values with the weights of torch::nn::MultiheadAttention.
#include "models/incremental_attention.h"

#include <cmath>
#include <limits>

namespace masr::models {
namespace {

// Rows [part * d, (part + 1) * d) of the packed in_proj (0 = query, 1 = key, 2 = value) applied to
// x (B, S, d), split into heads: (B, H, S, head_dim).
at::Tensor project(torch::nn::MultiheadAttentionImpl& att, const at::Tensor& x, int64_t part) {
  const int64_t d = att.options.embed_dim(), heads = att.options.num_heads();
  const at::Tensor w = att.in_proj_weight.narrow(0, part * d, d);
  const at::Tensor b =
      att.in_proj_bias.defined() ? att.in_proj_bias.narrow(0, part * d, d) : at::Tensor();
  const at::Tensor y = torch::nn::functional::linear(x, w, b);
  return y.view({x.size(0), x.size(1), heads, d / heads}).transpose(1, 2);
}

}  // namespace

KeyValue project_key_value(nn::MultiheadAttentionImpl& mha, const at::Tensor& x) {
  auto& att = *mha.att;
  return {project(att, x, 1), project(att, x, 2)};
}

at::Tensor attend(nn::MultiheadAttentionImpl& mha, const at::Tensor& query, const KeyValue& kv,
                  const at::Tensor& key_padding) {
  auto& att = *mha.att;
  const int64_t d = att.options.embed_dim(), heads = att.options.num_heads();
  const int64_t rows = kv.keys.size(0), groups = query.size(0) / rows, len = query.size(1);
  const int64_t head_dim = d / heads, keys = kv.keys.size(2);
  // (B, G, H, L, hd) -> (B, H, G * L, hd): every group's queries against the row's keys.
  at::Tensor q = project(att, query, 0).reshape({rows, groups, heads, len, head_dim});
  q = q.transpose(1, 2).reshape({rows, heads, groups * len, head_dim});
  at::Tensor scores = at::matmul(q / std::sqrt(static_cast<double>(head_dim)),
                                 kv.keys.transpose(2, 3));  // (B, H, G * L, S)
  if (key_padding.defined()) {
    scores = scores.masked_fill(key_padding.view({rows, 1, 1, keys}),
                                -std::numeric_limits<double>::infinity());
  }
  at::Tensor out = at::matmul(at::softmax(scores, -1), kv.values);  // (B, H, G * L, hd)
  out = out.view({rows, heads, groups, len, head_dim}).permute({0, 2, 3, 1, 4});
  return att.out_proj->forward(out.reshape({rows * groups, len, d}));
}

at::Tensor SelfAttentionCache::step(nn::MultiheadAttentionImpl& mha, const at::Tensor& x,
                                    const at::Tensor& padding_step) {
  const KeyValue fresh = project_key_value(mha, x);
  if (!kv.keys.defined()) {
    kv = fresh;
  } else {
    kv.keys = at::cat({kv.keys, fresh.keys}, 2);
    kv.values = at::cat({kv.values, fresh.values}, 2);
  }
  if (padding_step.defined()) {
    const at::Tensor past =
        padding.defined() ? padding
                          : at::zeros({x.size(0), kv.keys.size(2) - 1}, padding_step.options());
    padding = at::cat({past, padding_step}, 1);
  } else if (padding.defined()) {
    padding = at::cat({padding, at::zeros({x.size(0), 1}, padding.options())}, 1);
  }
  return attend(mha, x, kv, padding);
}

void SelfAttentionCache::reorder(const at::Tensor& rows) {
  if (!kv.keys.defined()) return;
  const at::Tensor index = rows.to(kv.keys.device(), at::kLong);
  kv.keys = kv.keys.index_select(0, index);
  kv.values = kv.values.index_select(0, index);
  if (padding.defined()) padding = padding.index_select(0, index);
}

}  // namespace masr::models
