// lib/features/fbank.h
// SpeechBrain's Fbank (speechbrain.lobes.features.Fbank, v1.0): centred Hamming STFT, power
// spectrum, HTK-mel triangles symmetric in Hz, 10*log10 with an 80 dB floor per utterance.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>

namespace masr::features {

// How the short-time spectrum is computed; both give the same numbers (see docs/features.md for
// which is faster).
enum class StftMethod { kRfft, kMatmul };

struct FbankConfig {
  int sample_rate = 16000;
  int n_fft = 400;
  double win_length_ms = 25.0;
  double hop_length_ms = 10.0;
  int n_mels = 40;  // SpeechBrain's default; the Mamba-ASR recipes use 80
  double f_min = 0.0;
  double f_max = 0.0;  // <= 0: sample_rate / 2
  double top_db = 80.0;
  StftMethod method = StftMethod::kRfft;

  int win_samples() const;  // round(sample_rate * win_length_ms / 1000)
  int hop_samples() const;
  double max_frequency() const { return f_max > 0 ? f_max : sample_rate / 2.0; }
  // Frames for `samples` samples: 1 + samples / hop (the STFT is centred).
  int64_t num_frames(int64_t samples) const;
  void validate() const;  // throws masr::Error (config) naming the bad value
  std::string to_string() const;
};

class Fbank {
 public:
  explicit Fbank(FbankConfig config);

  // wav: (T) or (B, T) float waveforms (padded batches are fine: the floor is computed over the
  // whole padded utterance, as SpeechBrain does). Returns (B, frames, n_mels) float32 in dB.
  // Throws masr::Error when T is shorter than one window.
  at::Tensor operator()(const at::Tensor& wav) const;
  // The same with each utterance's 80 dB floor taken over its own valid frames (valid_frames:
  // (B) int64 on the CPU, e.g. num_frames(samples)): its frames then equal its features alone.
  at::Tensor operator()(const at::Tensor& wav, const at::Tensor& valid_frames) const;

  const FbankConfig& config() const { return config_; }
  const at::Tensor& window() const { return window_; }          // (n_fft), zero-padded Hamming
  const at::Tensor& filterbank() const { return filterbank_; }  // (n_fft/2+1, n_mels)

 private:
  at::Tensor power_spectrum(const at::Tensor& frames) const;
  at::Tensor compute(const at::Tensor& wav, const at::Tensor* valid_frames) const;  // (B, F, n_fft) -> (B, F, n_fft/2+1)

  FbankConfig config_;
  at::Tensor window_;
  at::Tensor filterbank_;
  at::Tensor dft_basis_;  // (n_fft, 2*(n_fft/2+1)): windowed cos | -sin, for StftMethod::kMatmul
};

// The triangular filter matrix of SpeechBrain's Filterbank: (n_fft/2+1, n_mels).
at::Tensor speechbrain_mel_filterbank(int sample_rate, int n_fft, int n_mels, double f_min,
                                      double f_max);

}  // namespace masr::features
