// lib/features/augment/vtlp.h
// Vocal-tract-length perturbation (Jaitly & Hinton, 2013) on log-mel features, for a feature
// Augmenter: each utterance's frequency axis warped by a factor drawn from [warp_low, warp_high),
// as a longer or shorter vocal tract would move its formants. mamba-asr's own (`mamba_asr.VTLP`;
// SpeechBrain has none). Speed perturbation moves formants too, but with pitch and tempo; this
// moves only the spectral envelope.
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct VtlpConfig {
  double warp_low = 0.9;  // the warp factor alpha, per utterance from [low, high)
  double warp_high = 1.1;
  double f_hi =
      4800.0;  // Hz, below sample_rate / 2: up to f_hi * min(alpha, 1) / alpha, f -> alpha f
  double sample_rate = 16000.0;
  double f_min = 0.0;  // the filterbank's range (SpeechBrain's Fbank defaults)
  double f_max = 0.0;  // 0: sample_rate / 2
  void validate() const;
};

// The warp maps f to alpha * f up to a boundary and then linearly onto [.., sample_rate / 2],
// so the band's edges stay put. Mel bin k (of the features' F, HTK mel scale, centres evenly
// spaced between f_min and f_max as SpeechBrain's Fbank places them) takes the features'
// value at the mel position of warp(centre_k), interpolated linearly between bins and held at
// the band's ends.
class Vtlp : public Augmentation {
 public:
  explicit Vtlp(VtlpConfig config);
  // x: (B, T, F) log-mel features; lengths pass through.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "VTLP"; }
  std::string summary() const override;

  // The deterministic part: x warped by alpha (B) per row.
  at::Tensor warp(const at::Tensor& x, const at::Tensor& alpha) const;
  // The warp of one frequency (Hz) by alpha.
  double warp_hz(double f, double alpha) const;

 private:
  VtlpConfig config_;
};

}  // namespace masr::features
