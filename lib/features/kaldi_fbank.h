// lib/features/kaldi_fbank.h
// Kaldi-compatible log-mel filterbank (compute-fbank-feats), matching
// torchaudio.compliance.kaldi.fbank option for option. Not what the Mamba-ASR recipes use (they
// use SpeechBrain's Fbank, fbank.h); here for models trained on Kaldi-style features.
#pragma once

#include <ATen/Tensor.h>

#include <string>

namespace masr::features {

struct KaldiFbankConfig {
  int sample_rate = 16000;
  double frame_length_ms = 25.0;
  double frame_shift_ms = 10.0;
  int num_mel_bins = 23;
  double low_freq = 20.0;
  double high_freq = 0.0;  // <= 0: nyquist + high_freq
  double preemphasis = 0.97;
  double dither = 0.0;  // Gaussian noise scale; 0 keeps the output deterministic
  bool remove_dc_offset = true;
  bool snip_edges = true;
  bool round_to_power_of_two = true;
  std::string window_type = "povey";  // povey, hamming, hanning, rectangular
  bool use_energy = false;            // prepend log frame energy (computed before pre-emphasis)
  double energy_floor = 1.0;

  int window_samples() const;  // int(sample_rate * frame_length_ms / 1000), as Kaldi truncates
  int shift_samples() const;
  int padded_window() const;
  int64_t num_frames(int64_t samples) const;
  void validate() const;
  std::string to_string() const;
};

class KaldiFbank {
 public:
  explicit KaldiFbank(KaldiFbankConfig config);

  // wav: (T) or (B, T) float. Returns (B, frames, num_mel_bins [+1 with use_energy]) float32,
  // natural log. Throws masr::Error when there is not one full frame (snip_edges) or no frame.
  at::Tensor operator()(const at::Tensor& wav) const;

  const KaldiFbankConfig& config() const { return config_; }
  const at::Tensor& mel_banks() const { return mel_banks_; }  // (padded/2 + 1, bins)

 private:
  at::Tensor frames(const at::Tensor& x) const;  // (B, T) -> (B, F, window)

  KaldiFbankConfig config_;
  at::Tensor window_;
  at::Tensor mel_banks_;
};

}  // namespace masr::features
