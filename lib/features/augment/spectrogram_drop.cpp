// lib/features/augment/spectrogram_drop.cpp
// SpectrogramDrop: draws the chunk count (shared by the batch), then per-utterance chunk lengths
// and positions, in the order SpeechBrain v1.0 draws them (augment/freq_domain.py).
#include "features/augment/spectrogram_drop.h"

#include <torch/torch.h>

#include <algorithm>
#include <array>

#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::features {
namespace {

constexpr std::array<const char*, 5> kReplaceModes = {"zeros", "mean", "rand", "cutcat", "swap"};

bool is_replace_mode(const std::string& mode) {
  return std::find(kReplaceModes.begin(), kReplaceModes.end(), mode) != kReplaceModes.end();
}

}  // namespace

void SpectrogramDropConfig::validate() const {
  const std::string where = "SpectrogramDrop: ";
  if (drop_length_low < 0 || drop_length_low >= drop_length_high) {
    throw_config_error(where + "drop_length_low (" + std::to_string(drop_length_low) +
                       ") must be >= 0 and less than drop_length_high (" +
                       std::to_string(drop_length_high) + "); lengths are drawn from [low, high)");
  }
  if (drop_count_low < 0 || drop_count_low > drop_count_high) {
    throw_config_error(where + "drop_count_low (" + std::to_string(drop_count_low) +
                       ") must be >= 0 and at most drop_count_high (" +
                       std::to_string(drop_count_high) + ")");
  }
  if (!is_replace_mode(replace) && replace != "random_selection") {
    throw_config_error(where + "replace '" + replace +
                       "' is not one of zeros, mean, rand, cutcat, swap, random_selection");
  }
  if (dim != 1 && dim != 2) {
    throw_config_error(where + "dim " + std::to_string(dim) + " must be 1 (time) or 2 (frequency)");
  }
}

std::string SpectrogramDropConfig::to_string() const {
  return std::string(dim == 1 ? "time" : "frequency") + " drop, length [" +
         std::to_string(drop_length_low) + ", " + std::to_string(drop_length_high) + "), count [" +
         std::to_string(drop_count_low) + ", " + std::to_string(drop_count_high) + "], replace " +
         replace;
}

SpectrogramDrop::SpectrogramDrop(SpectrogramDropConfig config) : config_(std::move(config)) {
  config_.validate();
}

at::Tensor SpectrogramDrop::drop_chunks(const at::Tensor& x, const at::Tensor& positions,
                                        const at::Tensor& chunk_lengths, int64_t dim,
                                        const std::string& replace, at::Generator& generator) {
  const int64_t extent = x.size(dim);
  // mask[b, d]: whether position d of utterance b lies in any of its chunks.
  auto arange = torch::arange(extent, x.options().dtype(torch::kLong)).view({1, 1, -1});
  auto pos = runtime::to_device_async(positions, x.device()).unsqueeze(2);
  auto len = runtime::to_device_async(chunk_lengths, x.device()).unsqueeze(2);
  auto mask = ((pos <= arange) & (arange < pos + len)).any(1);
  mask = dim == 1 ? mask.unsqueeze(2) : mask.unsqueeze(1);

  if (replace == "zeros") return x.masked_fill(mask, 0.0);
  // The mean stays a 0-dim tensor on x's device: masked_fill with a tensor value reads it back
  // (.item()) on CUDA, where() broadcasts it without one. Same values: the mean has x's dtype.
  if (replace == "mean") return torch::where(mask, x.mean().detach(), x);
  at::Tensor other;
  if (replace == "rand") {
    const auto lo = x.min().detach();
    const auto hi = x.max().detach();
    auto noise = runtime::to_device_async(torch::rand(x.sizes(), generator, x.options().device(torch::kCPU)),
                                 x.device());
    other = noise * (hi - lo) + lo;
  } else if (replace == "cutcat") {
    other = torch::roll(x, {1}, {0});
  } else if (replace == "swap") {
    // SpeechBrain rolls along dim 1 whatever `dim` is.
    const int64_t shift = x.size(1) > 1 ? draw_int(generator, 1, x.size(1)) : 0;
    other = torch::roll(x, {shift}, {1});
  } else {
    throw_config_error("SpectrogramDrop: unknown replace mode '" + replace + "'");
  }
  return torch::where(mask, other, x);
}

AugmentBatch SpectrogramDrop::apply(const at::Tensor& input, const at::Tensor& lengths,
                                    at::Generator& generator) const {
  if (input.dim() != 3 && input.dim() != 4) {
    throw_input_error("SpectrogramDrop: expected a (batch, time, features) tensor, got " +
                      std::to_string(input.dim()) + " dimensions");
  }
  const at::Tensor x = input.dim() == 4 ? input.reshape({-1, input.size(2), input.size(3)}) : input;
  const int64_t batch = x.size(0);
  const int64_t extent = x.size(config_.dim);

  const int64_t count = draw_int(generator, config_.drop_count_low, config_.drop_count_high + 1);
  if (count == 0 || batch == 0) return {input, lengths, {}};

  const auto cpu_long = torch::TensorOptions().dtype(torch::kLong);
  auto chunk_lengths = torch::randint(config_.drop_length_low, config_.drop_length_high,
                                      {batch, count}, generator, cpu_long);
  // Positions leave room for the longest chunk of the whole batch, as SpeechBrain does.
  const int64_t longest = chunk_lengths.max().item<int64_t>();
  auto positions = torch::randint(0, std::max<int64_t>(1, extent - longest), {batch, count},
                                  generator, cpu_long);

  std::string replace = config_.replace;
  if (replace == "random_selection") {
    replace = kReplaceModes[draw_int(generator, 0, kReplaceModes.size())];
  }
  auto out = drop_chunks(x, positions, chunk_lengths, config_.dim, replace, generator);
  return {out.reshape(input.sizes()), lengths, {}};
}

}  // namespace masr::features
