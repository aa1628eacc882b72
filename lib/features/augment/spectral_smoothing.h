// lib/features/augment/spectral_smoothing.h
// Over-smoothing of log-mel features, for a feature Augmenter: each utterance's frames averaged
// over a window of a random width in time, and its spectra liftered (the mel-cepstrum cut after a
// random number of coefficients). Statistical-parametric synthesis (HMM/HTS, clustergen) speaks
// from smoothed parameter trajectories through a source-filter vocoder: slow, averaged spectral
// envelopes without the fine structure of a recorded or concatenated voice. A model trained only
// on formant and diphone voices meets such speech as a new kind of voice; this shows it smoothed
// versions of its own. mamba-asr's own (`mamba_asr.SpectralSmoothing`; SpeechBrain has none).
#pragma once

#include <cstdint>
#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct SpectralSmoothingConfig {
  // Frames of the moving average in time, per utterance from [time_width_low, time_width_high]
  // (1: none).
  int64_t time_width_low = 1;
  int64_t time_width_high = 1;
  // Mel-cepstral coefficients kept, per utterance from [keep_low, keep_high] (0: no liftering).
  int64_t keep_low = 0;
  int64_t keep_high = 0;
  void validate() const;
};

// Frame t of row b becomes the mean of frames t - (w-1)/2 .. t + w/2 (integer division) of that
// row, indices held inside the row's valid frames (torch.round(length * T), halves to even, as
// the input normalization counts them; at least 1); then, with
// c > 0 kept coefficients, its spectrum y becomes D^T (m * (D y)), D the orthonormal DCT-II over
// the mel bins and m keeping the first min(c, F). Frames beyond a row's length pass unchanged.
class SpectralSmoothing : public Augmentation {
 public:
  explicit SpectralSmoothing(SpectralSmoothingConfig config);
  // x: (B, T, F) log-mel features; lengths pass through.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "SpectralSmoothing"; }
  std::string summary() const override;

  // The deterministic part: widths and kept coefficients (B, int64, on the host) per row.
  at::Tensor smooth(const at::Tensor& x, const at::Tensor& lengths, const at::Tensor& widths,
                    const at::Tensor& keeps) const;

 private:
  SpectralSmoothingConfig config_;
};

}  // namespace masr::features
