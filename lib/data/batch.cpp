// lib/data/batch.cpp
// Right padding with relative lengths (SB:dataio/batch.py, SB:utils/data_utils.py batch_pad_right).
#include "data/batch.h"

#include <ATen/ATen.h>

#include <cmath>
#include <sstream>

#include "core/error.h"

namespace masr::data {
namespace {

std::string shape_of(const at::Tensor& t) {
  std::ostringstream out;
  out << t.sizes();
  return out.str();
}

}  // namespace

PaddedTensor pad_right(const std::vector<at::Tensor>& items, double value, int64_t padded_len) {
  if (items.empty()) throw_input_error("cannot pad an empty batch");
  const at::Tensor& first = items.front();
  if (first.dim() == 0) throw_input_error("cannot pad scalars: batch item 0 has no dimensions");
  int64_t max_len = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const at::Tensor& item = items[i];
    const bool same_rest =
        item.dim() == first.dim() && item.sizes().slice(1) == first.sizes().slice(1);
    if (!same_rest || item.scalar_type() != first.scalar_type()) {
      throw_input_error("batch item " + std::to_string(i) + " has shape " + shape_of(item) + " (" +
                        std::string(at::toString(item.scalar_type())) + "); item 0 has " +
                        shape_of(first) + " (" + at::toString(first.scalar_type()) +
                        "): items may differ only in their first dimension");
    }
    max_len = std::max(max_len, item.size(0));
  }
  max_len = std::max(max_len, padded_len);
  std::vector<int64_t> shape = first.sizes().vec();
  shape.insert(shape.begin(), static_cast<int64_t>(items.size()));
  shape[1] = max_len;
  PaddedTensor out;
  out.data = at::full(shape, value, first.options());
  out.lengths = at::empty({static_cast<int64_t>(items.size())}, at::kFloat);
  float* lengths = out.lengths.data_ptr<float>();
  for (size_t i = 0; i < items.size(); ++i) {
    const int64_t len = items[i].size(0);
    if (len > 0) out.data[static_cast<int64_t>(i)].narrow(0, 0, len).copy_(items[i]);
    // Computed in double, as Python does before torch.tensor makes it float32.
    lengths[i] = max_len > 0 ? static_cast<float>(static_cast<double>(len) / max_len) : 0.0f;
  }
  return out;
}

PaddedTensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, int64_t value,
                           int64_t padded_len) {
  std::vector<at::Tensor> items;
  items.reserve(sequences.size());
  for (const auto& sequence : sequences) {
    items.push_back(at::tensor(at::ArrayRef<int64_t>(sequence), at::kLong)
                        .reshape({static_cast<int64_t>(sequence.size())}));
  }
  return pad_right(items, static_cast<double>(value), padded_len);
}

int64_t grid_length(int64_t n, int64_t quantum, double ratio) {
  if (quantum < 1 || !(ratio > 1.0)) {
    throw_config_error("grid_length: quantum must be >= 1 and ratio > 1");
  }
  const int64_t units = (std::max<int64_t>(n, 0) + quantum - 1) / quantum;
  int64_t g = 1;
  while (g < units) {
    // (1e-9: 10 * 1.1 is 11.000000000000002 in double, which must stay 11)
    g = std::max(g + 1,
                 static_cast<int64_t>(std::ceil(static_cast<double>(g) * ratio - 1e-9)));
  }
  return g * quantum;
}

std::vector<int64_t> absolute_lengths(const at::Tensor& relative, int64_t max_len) {
  const at::Tensor rel = relative.to(at::kDouble).contiguous();
  const double* data = rel.data_ptr<double>();
  std::vector<int64_t> out(static_cast<size_t>(rel.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<int64_t>(std::llround(data[i] * static_cast<double>(max_len)));
  }
  return out;
}

}  // namespace masr::data
