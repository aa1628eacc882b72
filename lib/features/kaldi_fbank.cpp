// lib/features/kaldi_fbank.cpp
// Kaldi's FbankComputer step by step (feat/feature-window.cc, feature-fbank.cc, mel-computations.cc
// behaviour, as torchaudio.compliance.kaldi reproduces it).
#include "features/kaldi_fbank.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "features/short_input.h"

namespace masr::features {
namespace {

double kaldi_mel(double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); }

at::Tensor feature_window(const std::string& type, int size) {
  std::vector<float> w(static_cast<size_t>(size));
  const double denom = size > 1 ? size - 1 : 1;  // symmetric windows, as Kaldi
  for (int n = 0; n < size; ++n) {
    const double hann = 0.5 - 0.5 * std::cos(2.0 * M_PI * n / denom);
    double v = 1.0;
    if (type == "povey") {
      v = std::pow(hann, 0.85);
    } else if (type == "hanning") {
      v = hann;
    } else if (type == "hamming") {
      v = 0.54 - 0.46 * std::cos(2.0 * M_PI * n / denom);
    }
    w[static_cast<size_t>(n)] = static_cast<float>(v);
  }
  return at::tensor(w, at::kFloat);
}

// Triangles in Kaldi's mel scale (1127 ln(1 + f/700)), with one zero row added for the Nyquist
// bin so that the full rfft output can be multiplied directly.
at::Tensor kaldi_mel_banks(int bins, int padded, double sample_rate, double low, double high) {
  const int fft_bins = padded / 2;
  const double nyquist = 0.5 * sample_rate;
  if (high <= 0.0) high += nyquist;
  const double mel_low = kaldi_mel(low);
  const double mel_high = kaldi_mel(high);
  const double delta = (mel_high - mel_low) / (bins + 1);
  const double bin_width = sample_rate / padded;
  std::vector<float> banks(static_cast<size_t>(fft_bins + 1) * bins, 0.0f);
  for (int m = 0; m < bins; ++m) {
    const double left = mel_low + m * delta;
    const double centre = left + delta;
    const double right = centre + delta;
    for (int i = 0; i < fft_bins; ++i) {
      const double mel = kaldi_mel(bin_width * i);
      const double up = (mel - left) / (centre - left);
      const double down = (right - mel) / (right - centre);
      banks[static_cast<size_t>(i) * bins + m] =
          static_cast<float>(std::max(0.0, std::min(up, down)));
    }
  }
  return at::tensor(banks, at::kFloat).view({fft_bins + 1, bins});
}

}  // namespace

int KaldiFbankConfig::window_samples() const {
  return static_cast<int>(sample_rate * frame_length_ms * 0.001);
}
int KaldiFbankConfig::shift_samples() const {
  return static_cast<int>(sample_rate * frame_shift_ms * 0.001);
}
int KaldiFbankConfig::padded_window() const {
  int size = window_samples();
  if (!round_to_power_of_two) return size;
  int power = 1;
  while (power < size) power *= 2;
  return power;
}
int64_t KaldiFbankConfig::num_frames(int64_t samples) const {
  const int64_t window = window_samples();
  const int64_t shift = shift_samples();
  if (snip_edges) return samples < window ? 0 : 1 + (samples - window) / shift;
  return (samples + shift / 2) / shift;
}

void KaldiFbankConfig::validate() const {
  auto bad = [this](const std::string& what) {
    throw_config_error("Kaldi fbank: " + what + " (config: " + to_string() + ")");
  };
  if (sample_rate <= 0) bad("sample_rate must be positive");
  if (window_samples() < 2) bad("frame_length gives fewer than 2 samples");
  if (shift_samples() < 1) bad("frame_shift gives less than one sample");
  if (num_mel_bins < 3) bad("num_mel_bins must be at least 3");
  const double nyquist = sample_rate / 2.0;
  const double high = high_freq > 0 ? high_freq : nyquist + high_freq;
  if (low_freq < 0 || high > nyquist || high <= low_freq) {
    bad("need 0 <= low_freq < high_freq <= nyquist");
  }
  if (window_type != "povey" && window_type != "hamming" && window_type != "hanning" &&
      window_type != "rectangular") {
    bad("window_type must be povey, hamming, hanning or rectangular");
  }
}

std::string KaldiFbankConfig::to_string() const {
  std::ostringstream out;
  out << "sample_rate=" << sample_rate << " frame_length=" << frame_length_ms
      << "ms frame_shift=" << frame_shift_ms << "ms num_mel_bins=" << num_mel_bins
      << " low_freq=" << low_freq << " high_freq=" << high_freq << " preemphasis=" << preemphasis
      << " dither=" << dither << " window=" << window_type
      << " snip_edges=" << (snip_edges ? "true" : "false")
      << " use_energy=" << (use_energy ? "true" : "false");
  return out.str();
}

KaldiFbank::KaldiFbank(KaldiFbankConfig config) : config_(std::move(config)) {
  config_.validate();
  window_ = feature_window(config_.window_type, config_.window_samples());
  mel_banks_ = kaldi_mel_banks(config_.num_mel_bins, config_.padded_window(), config_.sample_rate,
                               config_.low_freq, config_.high_freq);
}

at::Tensor KaldiFbank::frames(const at::Tensor& x) const {
  const int64_t window = config_.window_samples();
  const int64_t shift = config_.shift_samples();
  if (config_.snip_edges) return x.unfold(1, window, shift);
  // Reflect without repeating the edge sample ([2,1,0 | 0,1,2,...]) and keep only whole frames.
  const int64_t count = config_.num_frames(x.size(1));
  const int64_t pad = window / 2 - shift / 2;
  at::Tensor padded;
  if (pad > 0) {
    padded = at::cat({x.narrow(1, 0, pad).flip(1), x, x.flip(1)}, 1);
  } else {
    padded = at::cat({x.narrow(1, -pad, x.size(1) + pad), x.flip(1)}, 1);
  }
  return padded.unfold(1, window, shift).narrow(1, 0, count);
}

at::Tensor KaldiFbank::operator()(const at::Tensor& wav) const {
  if (wav.dim() != 1 && wav.dim() != 2) {
    throw_input_error("Kaldi fbank: expected a (T) or (B, T) waveform, got " +
                      std::to_string(wav.dim()) + " dimensions");
  }
  const at::Tensor x = (wav.dim() == 1 ? wav.unsqueeze(0) : wav).to(at::kFloat);
  if (config_.num_frames(x.size(1)) < 1) {
    throw_short_input("Kaldi fbank", x.size(1), config_.window_samples(), config_.frame_length_ms,
                      "frame", config_.sample_rate);
  }
  at::Tensor f = frames(x).contiguous();  // (B, F, window)
  if (config_.dither != 0.0) f = f + at::randn_like(f) * config_.dither;
  if (config_.remove_dc_offset) f = f - f.mean(-1, true);
  const double eps = std::numeric_limits<float>::epsilon();
  at::Tensor log_energy;
  if (config_.use_energy) {
    log_energy = at::clamp_min(f.pow(2).sum(-1), eps).log();
    if (config_.energy_floor > 0)
      log_energy = at::clamp_min(log_energy, std::log(config_.energy_floor));
  }
  if (config_.preemphasis != 0.0) {
    // x[j] -= p * x[max(0, j - 1)]
    const at::Tensor previous = at::cat({f.narrow(-1, 0, 1), f.narrow(-1, 0, f.size(-1) - 1)}, -1);
    f = f - config_.preemphasis * previous;
  }
  f = f * window_.to(f.device());
  const at::Tensor spectrum = at::fft_rfft(f, config_.padded_window(), -1);
  const at::Tensor power = at::view_as_real(spectrum).pow(2).sum(-1);
  at::Tensor mel = at::clamp_min(at::matmul(power, mel_banks_.to(power.device())), eps).log();
  if (config_.use_energy) mel = at::cat({log_energy.unsqueeze(-1), mel}, -1);
  return mel;
}

}  // namespace masr::features
