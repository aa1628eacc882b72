// lib/nn/masks.cpp
// Padding and look-ahead masks.
#include "nn/masks.h"

#include <ATen/ATen.h>

namespace masr::nn {

at::Tensor padding_mask(const at::Tensor& lengths, int64_t max_len) {
  const at::Tensor positions = at::arange(max_len, lengths.options().dtype(at::kLong));
  return positions.unsqueeze(0) >= lengths.to(at::kLong).unsqueeze(1);
}

at::Tensor lookahead_mask(int64_t size, const at::Device& device) {
  return at::ones({size, size}, at::TensorOptions().dtype(at::kBool).device(device)).triu(1);
}

at::Tensor zero_padding(const at::Tensor& x, const at::Tensor& lengths) {
  if (!lengths.defined()) return x;
  at::Tensor keep = padding_mask(lengths.to(x.device()), x.size(1)).logical_not();
  while (keep.dim() < x.dim()) keep = keep.unsqueeze(-1);
  return x * keep.to(x.scalar_type());
}

at::Tensor relative_to_absolute(const at::Tensor& relative, int64_t max_len) {
  return at::round(relative.to(at::kDouble) * static_cast<double>(max_len)).to(at::kLong);
}

}  // namespace masr::nn
