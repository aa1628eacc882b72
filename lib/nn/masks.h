// lib/nn/masks.h
// Padding and look-ahead masks (SpeechBrain's conventions: true = masked out).
#pragma once

#include <ATen/Tensor.h>

namespace masr::nn {

// lengths: int64 (B) valid frames; returns bool (B, T), true at padded frames.
at::Tensor padding_mask(const at::Tensor& lengths, int64_t max_len);
// bool (T, T), true above the diagonal (position i may not look at j > i).
at::Tensor lookahead_mask(int64_t size, const at::Device& device);
// Frames at or past each utterance's length set to zero. x: (B, T, ...); lengths may be undefined.
at::Tensor zero_padding(const at::Tensor& x, const at::Tensor& lengths);
// SpeechBrain's relative lengths (fractions of the longest) to frame counts: round(rel * T).
at::Tensor relative_to_absolute(const at::Tensor& relative, int64_t max_len);

}  // namespace masr::nn
