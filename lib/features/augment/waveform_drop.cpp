// lib/features/augment/waveform_drop.cpp
// DropFreq and DropChunk, following SpeechBrain's augment/time_domain.py and
// processing/signal_processing.py (notch_filter, convolve1d) operation by operation in float32,
// with every random draw taken from the caller's generator in SpeechBrain's order.
#include "features/augment/waveform_drop.h"

#include <torch/torch.h>

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace masr::features {
namespace {

constexpr int64_t kFilterLength = 101;  // DropFreq's filter taps (SpeechBrain's constant)

void require(bool ok, const std::string& message) {
  if (!ok) throw_config_error(message);
}

// sin(x) / x with 1 at the middle tap (x is 0 there).
at::Tensor speechbrain_sinc(const at::Tensor& x) {
  const int64_t pad = x.size(0) / 2;
  const at::Tensor before = x.narrow(0, 0, pad), after = x.narrow(0, pad + 1, pad);
  return torch::cat(
      {torch::sin(before) / before, torch::ones({1}, x.options()), torch::sin(after) / after});
}

// SpeechBrain's convolve1d with an int padding: a cross-correlation over time. x: (N, T), kernel:
// (K) -> (N, T + 2 * pad - K + 1).
at::Tensor correlate(const at::Tensor& x, const at::Tensor& kernel, int64_t pad) {
  return torch::conv1d(x.unsqueeze(1), kernel.view({1, 1, -1}), {}, {1}, {pad}).squeeze(1);
}

}  // namespace

void DropFreqConfig::validate() const {
  require(drop_freq_count_low >= 0 && drop_freq_count_low <= drop_freq_count_high,
          "DropFreq: drop_freq_count_low must be in [0, drop_freq_count_high]");
  require(drop_freq_low <= drop_freq_high, "DropFreq: drop_freq_low is above drop_freq_high");
  require(drop_freq_high <= 1.0,
          "DropFreq: drop_freq_high must be at most 1 (the Nyquist frequency)");
}

DropFreq::DropFreq(DropFreqConfig config) : config_(std::move(config)) { config_.validate(); }

std::string DropFreq::summary() const {
  std::ostringstream out;
  out << "DropFreq " << config_.drop_freq_count_low << "-" << config_.drop_freq_count_high
      << " notches in [" << config_.drop_freq_low << ", " << config_.drop_freq_high
      << "] x Nyquist, width " << config_.drop_freq_width;
  return out.str();
}

at::Tensor DropFreq::notch_filter(double frequency, int64_t filter_width, double notch_width) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t pad = filter_width / 2;
  const at::Tensor inputs = torch::arange(filter_width, torch::kLong) - pad;
  // SpeechBrain adds the width to the (float32) frequency, then takes it off again.
  const at::Tensor notch = torch::scalar_tensor(frequency, f32) + notch_width;
  const at::Tensor window = torch::blackman_window(filter_width, f32);
  at::Tensor low = speechbrain_sinc(3 * (notch - notch_width) * inputs) * window;
  low = low / low.sum();
  at::Tensor high = speechbrain_sinc(3 * (notch + notch_width) * inputs) * window;
  high = high / -high.sum();
  high[pad] += 1;
  return low + high;
}

at::Tensor DropFreq::filter(const at::Tensor& x, const at::Tensor& frequencies) const {
  const int64_t pad = kFilterLength / 2;
  at::Tensor drop_filter = torch::zeros({1, kFilterLength}, torch::kFloat);
  drop_filter[0][pad] = 1;
  const at::Tensor f = frequencies.to(torch::kFloat).contiguous();
  for (int64_t i = 0; i < f.numel(); ++i) {
    drop_filter = correlate(
        drop_filter, notch_filter(f[i].item<float>(), kFilterLength, config_.drop_freq_width), pad);
  }
  return correlate(x, drop_filter[0].to(x.device(), x.scalar_type()), pad);
}

AugmentBatch DropFreq::apply(const at::Tensor& x, const at::Tensor& lengths,
                             at::Generator& generator) const {
  require_waveforms(x, "DropFreq");
  const int64_t count =
      draw_int(generator, config_.drop_freq_count_low, config_.drop_freq_count_high + 1);
  const double range = config_.drop_freq_high - config_.drop_freq_low;
  const at::Tensor frequencies =
      (torch::rand({count}, generator, torch::kFloat) * range + config_.drop_freq_low)
          .clamp_min(config_.epsilon);
  return {filter(x, frequencies), lengths, {}};
}

void DropChunkConfig::validate() const {
  require(drop_length_low <= drop_length_high,
          "DropChunk: drop_length_low must not be more than drop_length_high");
  require(drop_count_low <= drop_count_high,
          "DropChunk: drop_count_low must not be more than drop_count_high");
  require(!drop_end || *drop_end < 0 || drop_start <= *drop_end,
          "DropChunk: drop_start must not be more than drop_end");
}

DropChunk::DropChunk(DropChunkConfig config) : config_(std::move(config)) {
  config_.validate();
  // As SpeechBrain: a chunk never exceeds the range it may start in.
  if (config_.drop_end && *config_.drop_end >= 0) {
    const int64_t range = *config_.drop_end - config_.drop_start;
    config_.drop_length_low = std::min(config_.drop_length_low, range);
    config_.drop_length_high = std::min(config_.drop_length_high, range);
  }
}

std::string DropChunk::summary() const {
  std::ostringstream out;
  out << "DropChunk " << config_.drop_count_low << "-" << config_.drop_count_high << " chunks of "
      << config_.drop_length_low << "-" << config_.drop_length_high << " samples";
  if (config_.noise_factor != 0.0) out << ", noise " << config_.noise_factor;
  return out.str();
}

AugmentBatch DropChunk::apply(const at::Tensor& x, const at::Tensor& lengths,
                              at::Generator& generator) const {
  require_waveforms(x, "DropChunk");
  const int64_t batch = x.size(0);
  // (lengths * T).long(): truncated, as SpeechBrain does.
  const at::Tensor samples = (lengths.cpu() * x.size(1)).to(torch::kLong);
  at::Tensor out = x.clone();
  const at::Tensor amplitude = x.abs().sum(1).cpu() / samples.to(x.scalar_type()).cpu();
  const at::Tensor times = torch::randint(config_.drop_count_low, config_.drop_count_high + 1,
                                          {batch}, generator, torch::kLong);
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t n = times[i].item<int64_t>();
    if (n == 0) continue;
    const int64_t length_i = samples[i].item<int64_t>();
    const at::Tensor length = torch::randint(config_.drop_length_low, config_.drop_length_high + 1,
                                             {n}, generator, torch::kLong);
    int64_t start_min = config_.drop_start;
    if (start_min < 0) start_min += length_i;
    int64_t start_max = config_.drop_end.value_or(length_i);
    if (start_max < 0) start_max += length_i;
    start_max = std::max<int64_t>(0, start_max - length.max().item<int64_t>());
    const at::Tensor start = torch::randint(start_min, start_max + 1, {n}, generator, torch::kLong);
    const double noise_max = 2 * amplitude[i].item<double>() * config_.noise_factor;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t s = start[j].item<int64_t>(), l = length[j].item<int64_t>();
      const int64_t e = std::min(s + l, x.size(1));
      if (e <= s) continue;
      if (config_.noise_factor == 0.0) {
        out[i].narrow(0, s, e - s).zero_();
      } else {
        const at::Tensor noise = torch::rand({l}, generator, torch::kFloat);
        out[i].narrow(0, s, e - s).copy_((2 * noise_max * noise - noise_max).narrow(0, 0, e - s));
      }
    }
  }
  return {out, lengths, {}};
}

}  // namespace masr::features
