// lib/features/augment/noise.h
// Additive white noise at a random signal-to-noise ratio, for waveforms: the white-noise case of
// SpeechBrain v1.0's `speechbrain.augment.time_domain.AddNoise` (no noise CSV).
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct AddNoiseConfig {
  double snr_low = 0.0;  // dB; one SNR per utterance, uniform in [snr_low, snr_high]
  double snr_high = 0.0;

  void validate() const;
};

// As SpeechBrain: with a = 1 / (10^(snr/20) + 1), the output is (1 - a) * x + a * rms(x) * n /
// rms(n), where rms is taken over each utterance's valid samples and n is standard Gaussian noise
// over the whole padded row.
class AddNoise : public Augmentation {
 public:
  explicit AddNoise(AddNoiseConfig config);

  // x: (B, T) waveforms; lengths: (B,) relative.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "AddNoise"; }
  std::string summary() const override;

 private:
  AddNoiseConfig config_;
};

}  // namespace masr::features
