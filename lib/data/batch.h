// lib/data/batch.h
// Padding a batch of variable-length tensors, as SpeechBrain's PaddedBatch does: zero padding at
// the end of the first dimension, and lengths relative to the longest example.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

namespace masr::data {

struct PaddedTensor {
  at::Tensor data;     // (batch, max_len, ...) in the items' dtype
  at::Tensor lengths;  // (batch,) float32: len_i / max_len, in (0, 1] (SB's relative lengths)
};

// Pads items of shape (len_i, ...) on the right of dim 0 with `value` (SB:dataio/batch.py
// PaddedBatch -> batch_pad_right). All items must share dtype and every dim but the first; a
// mismatch is an input error naming the item and shapes. Empty items get relative length 0; an
// empty batch is an error.
// `padded_len` > the longest item pads further (relative lengths then relative to it).
PaddedTensor pad_right(const std::vector<at::Tensor>& items, double value = 0.0,
                       int64_t padded_len = 0);

// Integer sequences (token ids) as an int64 PaddedTensor.
PaddedTensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, int64_t value = 0,
                           int64_t padded_len = 0);

// The smallest length >= n on a grid of multiples of `quantum` that runs 1, 2, 3, ... quanta
// while one quantum is more than (ratio - 1) of the length, then grows by `ratio` (rounded up to
// whole quanta): few distinct lengths, each at most about (ratio - 1) above n.
int64_t grid_length(int64_t n, int64_t quantum, double ratio);

// Absolute lengths back from relative ones: round(rel * max_len), as SpeechBrain's consumers do.
std::vector<int64_t> absolute_lengths(const at::Tensor& relative, int64_t max_len);

}  // namespace masr::data
