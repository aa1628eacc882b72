// lib/features/augment/noise.h
// Additive noise at a random signal-to-noise ratio, for waveforms: SpeechBrain v1.0's
// `speechbrain.augment.time_domain.AddNoise` without a noise CSV, its noise_funct white
// (torch.randn_like, the default) or colored (`!name:...pink_noise_like`: 1/f^alpha).
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct AddNoiseConfig {
  double snr_low = 0.0;  // dB; one SNR per utterance, uniform in [snr_low, snr_high]
  double snr_high = 0.0;
  // pink_noise_like: white noise's spectrum times 1/f^alpha, alpha per utterance from
  // [alpha_low, alpha_high) (0: white, 1: pink, 2: brown, negative: blue); f runs over
  // [0, sample_rate / 2] (SpeechBrain's default sample_rate 50 only scales the mask, which the
  // SNR scaling undoes).
  bool colored = false;
  double alpha_low = 1.0;
  double alpha_high = 1.0;
  double sample_rate = 50.0;

  void validate() const;
};

// As SpeechBrain: with a = 1 / (10^(snr/20) + 1), the output is (1 - a) * x + a * rms(x) * n /
// rms(n), where rms is taken over each utterance's valid samples and n is standard Gaussian noise
// over the whole padded row (colored: shaped as above). Draws in SpeechBrain's order: the SNRs,
// the white noise, then the alphas.
class AddNoise : public Augmentation {
 public:
  explicit AddNoise(AddNoiseConfig config);

  // x: (B, T) waveforms; lengths: (B,) relative.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "AddNoise"; }
  std::string summary() const override;

  // SpeechBrain's pink_noise_like after its draws: `white` (B, T) shaped by 1/f^alpha per row
  // (alpha: (B)), through the FFT along time.
  static at::Tensor colored_noise(const at::Tensor& white, const at::Tensor& alpha,
                                  double sample_rate);

 private:
  AddNoiseConfig config_;
};

}  // namespace masr::features
