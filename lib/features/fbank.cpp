// lib/features/fbank.cpp
// SpeechBrain Fbank, reproduced from SB:processing/features.py (STFT, spectral_magnitude,
// Filterbank) as described in docs/features.md. Computed in float32 like SpeechBrain.
#include "features/fbank.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "features/short_input.h"
#include "runtime/device_copy.h"

namespace masr::features {
namespace {

double hz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }

// torch.hamming_window(win, periodic=True) placed in the middle of n_fft zeros, as torch.stft
// pads a short window (left = (n_fft - win) / 2).
at::Tensor padded_hamming(int win, int n_fft) {
  std::vector<float> w(static_cast<size_t>(n_fft), 0.0f);
  const int left = (n_fft - win) / 2;
  for (int n = 0; n < win; ++n) {
    w[static_cast<size_t>(left + n)] =
        static_cast<float>(0.54 - 0.46 * std::cos(2.0 * M_PI * n / static_cast<double>(win)));
  }
  return at::tensor(w, at::kFloat);
}

// cos and -sin of the real DFT, multiplied by the window: frames @ basis = [Re | Im].
at::Tensor windowed_dft_basis(const at::Tensor& window, int n_fft) {
  const int bins = n_fft / 2 + 1;
  const float* w = window.data_ptr<float>();
  std::vector<float> basis(static_cast<size_t>(n_fft) * 2 * bins);
  for (int n = 0; n < n_fft; ++n) {
    for (int k = 0; k < bins; ++k) {
      // (k*n) mod n_fft keeps the angle small, so the double cos/sin stay exact.
      const double angle = 2.0 * M_PI * static_cast<double>((static_cast<int64_t>(k) * n) % n_fft) /
                           static_cast<double>(n_fft);
      basis[static_cast<size_t>(n) * 2 * bins + k] = static_cast<float>(w[n] * std::cos(angle));
      basis[static_cast<size_t>(n) * 2 * bins + bins + k] =
          static_cast<float>(-w[n] * std::sin(angle));
    }
  }
  return at::tensor(basis, at::kFloat).view({n_fft, 2 * bins});
}

}  // namespace

int FbankConfig::win_samples() const {
  return static_cast<int>(std::lround(sample_rate * win_length_ms / 1000.0));
}
int FbankConfig::hop_samples() const {
  return static_cast<int>(std::lround(sample_rate * hop_length_ms / 1000.0));
}
int64_t FbankConfig::num_frames(int64_t samples) const { return 1 + samples / hop_samples(); }

void FbankConfig::validate() const {
  auto bad = [this](const std::string& what) {
    throw_config_error("Fbank: " + what + " (config: " + to_string() + ")");
  };
  if (sample_rate <= 0) bad("sample_rate must be positive");
  if (n_fft < 2 || n_fft % 2 != 0) bad("n_fft must be even and at least 2");
  if (n_mels <= 0) bad("n_mels must be positive");
  if (hop_samples() <= 0) bad("hop_length gives less than one sample");
  if (win_samples() <= 0) bad("win_length gives less than one sample");
  if (win_samples() > n_fft) {
    bad("win_length (" + std::to_string(win_samples()) + " samples) exceeds n_fft");
  }
  if (f_min < 0 || f_min >= max_frequency()) bad("f_min must be in [0, f_max)");
  if (max_frequency() > sample_rate / 2.0 + 1e-9) bad("f_max exceeds sample_rate / 2");
  if (top_db < 0) bad("top_db must not be negative");
}

std::string FbankConfig::to_string() const {
  std::ostringstream out;
  out << "sample_rate=" << sample_rate << " n_fft=" << n_fft << " win_length=" << win_length_ms
      << "ms hop_length=" << hop_length_ms << "ms n_mels=" << n_mels << " f_min=" << f_min
      << " f_max=" << max_frequency() << " top_db=" << top_db;
  return out.str();
}

at::Tensor speechbrain_mel_filterbank(int sample_rate, int n_fft, int n_mels, double f_min,
                                      double f_max) {
  const int bins = n_fft / 2 + 1;
  // n_mels + 2 points equally spaced in mel (torch.linspace in float32, then back to Hz).
  const at::Tensor mel = at::linspace(hz_to_mel(f_min), hz_to_mel(f_max), n_mels + 2, at::kFloat);
  const at::Tensor hz = 700.0 * (at::pow(10.0, mel / 2595.0) - 1.0);
  const at::Tensor band = (hz.slice(0, 1) - hz.slice(0, 0, -1)).slice(0, 0, -1);  // (n_mels)
  const at::Tensor centre = hz.slice(0, 1, -1);                                   // (n_mels)
  // Evaluated at linspace(0, sr // 2, bins); symmetric in Hz around each centre.
  const at::Tensor freqs = at::linspace(0.0, sample_rate / 2, bins, at::kFloat).unsqueeze(1);
  const at::Tensor slope = (freqs - centre.unsqueeze(0)) / band.unsqueeze(0);
  return at::clamp_min(at::minimum(slope + 1.0, 1.0 - slope), 0.0).contiguous();
}

Fbank::Fbank(FbankConfig config) : config_(std::move(config)) {
  config_.validate();
  window_ = padded_hamming(config_.win_samples(), config_.n_fft);
  filterbank_ = speechbrain_mel_filterbank(config_.sample_rate, config_.n_fft, config_.n_mels,
                                           config_.f_min, config_.max_frequency());
  if (config_.method == StftMethod::kMatmul)
    dft_basis_ = windowed_dft_basis(window_, config_.n_fft);
}

at::Tensor Fbank::power_spectrum(const at::Tensor& frames) const {
  const int64_t bins = config_.n_fft / 2 + 1;
  if (config_.method == StftMethod::kMatmul) {
    const at::Tensor parts = at::matmul(frames, runtime::to_device_async(dft_basis_, frames.device()));
    const at::Tensor re = parts.narrow(-1, 0, bins);
    const at::Tensor im = parts.narrow(-1, bins, bins);
    return re * re + im * im;
  }
  // In float64: a float32 FFT's rounding error is relative to the whole frame's energy, so bins
  // 60-70 dB below the peak (quiet high frequencies) come out ~1e-3 dB off; in double they match
  // the reference formulas to ~1e-6 dB, for a small share of the run time.
  const at::Tensor windowed = (frames * runtime::to_device_async(window_, frames.device())).to(at::kDouble);
  const at::Tensor spectrum = at::fft_rfft(windowed, config_.n_fft, -1);
  return at::view_as_real(spectrum).pow(2).sum(-1);
}

at::Tensor Fbank::operator()(const at::Tensor& wav) const { return compute(wav, nullptr); }

at::Tensor Fbank::operator()(const at::Tensor& wav, const at::Tensor& valid_frames) const {
  return compute(wav, &valid_frames);
}

at::Tensor Fbank::compute(const at::Tensor& wav, const at::Tensor* valid_frames) const {
  if (wav.dim() != 1 && wav.dim() != 2) {
    throw_input_error("Fbank: expected a (T) or (B, T) waveform, got " + std::to_string(wav.dim()) +
                      " dimensions");
  }
  at::Tensor x = (wav.dim() == 1 ? wav.unsqueeze(0) : wav).to(at::kFloat);
  const int64_t samples = x.size(1);
  if (samples < config_.win_samples()) {
    throw_short_input("Fbank", samples, config_.win_samples(), config_.win_length_ms, "window",
                      config_.sample_rate);
  }
  // torch.stft(center=True, pad_mode="constant"): n_fft/2 zeros on both sides.
  const int64_t pad = config_.n_fft / 2;
  x = at::constant_pad_nd(x, {pad, pad}, 0.0);
  const at::Tensor frames = x.unfold(1, config_.n_fft, config_.hop_samples());  // (B, F, n_fft)
  const at::Tensor power = power_spectrum(frames);
  const at::Tensor mel =
      at::matmul(power, runtime::to_device_async(filterbank_, power.device()).to(power.scalar_type()));
  // 10*log10(clamp(x, 1e-10)) - 10*log10(max(1e-10, ref=1)), then the per-utterance floor.
  at::Tensor db = 10.0 * at::log10(at::clamp_min(mel, 1e-10));
  if (config_.top_db > 0) {
    at::Tensor peaks = db;
    if (valid_frames != nullptr && valid_frames->defined()) {
      const at::Tensor valid = runtime::to_device_async(valid_frames->to(at::kLong), db.device());
      const at::Tensor outside =
          at::arange(db.size(1), valid.options()).unsqueeze(0).ge(valid.unsqueeze(1));
      peaks = db.masked_fill(outside.unsqueeze(2), -std::numeric_limits<double>::infinity());
    }
    const at::Tensor floor =
        std::get<0>(peaks.flatten(1).max(1)).sub(config_.top_db).view({-1, 1, 1});
    db = at::maximum(db, floor);
  }
  return db.to(at::kFloat);
}

}  // namespace masr::features
