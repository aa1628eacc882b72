// lib/models/incremental_attention.h
// Key/value caching over nn::MultiheadAttention (torch's packed in_proj): project keys and values
// once, then attend new queries to them, as the full forward would with a causal mask.
#pragma once

#include <ATen/Tensor.h>

#include "nn/attention.h"

namespace masr::models {

// Projected keys and values, (B, H, S, head_dim) each.
struct KeyValue {
  at::Tensor keys, values;
};

// x: (B, S, d) -> its key and value projections.
KeyValue project_key_value(nn::MultiheadAttentionImpl& mha, const at::Tensor& x);

// query: (B * G, L, d), G query groups per key/value row (hypotheses of one utterance sharing its
// memory); kv: (B, H, S, head_dim); key_padding: bool (B, S), true = masked, or undefined.
// Returns (B * G, L, d): torch's attention output (scaled dot product, out_proj), no dropout.
at::Tensor attend(nn::MultiheadAttentionImpl& mha, const at::Tensor& query, const KeyValue& kv,
                  const at::Tensor& key_padding);

// Causal self-attention one position at a time: each step appends the new position's keys and
// values and attends its query to every cached position (what the look-ahead mask allows).
struct SelfAttentionCache {
  KeyValue kv;         // (N, H, U, head_dim) once a step has run
  at::Tensor padding;  // bool (N, U): keys masked (token == pad), or undefined (none)
  // x: (N, 1, d) the new position's attention input; padding_step: bool (N, 1) or undefined.
  at::Tensor step(nn::MultiheadAttentionImpl& mha, const at::Tensor& x,
                  const at::Tensor& padding_step);
  void reorder(const at::Tensor& rows);  // index_select on the hypothesis dimension
};

}  // namespace masr::models
