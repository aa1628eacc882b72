// lib/features/augment/reverb.h
// A room for every utterance, for a waveform Augmenter: the waveform convolved with a generated
// room impulse response (a direct path, then Gaussian noise decaying by 60 dB over a reverberation
// time RT60), mamba-asr's own (`mamba_asr.Reverb`). SpeechBrain's AddReverb convolves with
// recorded responses listed in a CSV; this needs no files.
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct ReverbConfig {
  double rt60_low = 0.2;  // seconds, per utterance from [low, high)
  double rt60_high = 0.8;
  double drr_low = 0.0;  // direct-to-reverberant energy ratio in dB, per utterance from [low, high)
  double drr_high = 10.0;
  double sample_rate = 16000.0;
  void validate() const;
};

// Per utterance b: h[0] = 1 (the direct path) and h[n] = g[n] exp(-3 ln(10) n / (rt60 sr)) for
// 0 < n < rt60 sr (g standard Gaussian), the tail scaled to carry 10^(-drr/10) of the direct
// path's energy. The output is the causal convolution cut to the input's length, rescaled to the
// input's RMS over the utterance's valid samples; lengths do not change (the tail past an
// utterance's end falls in its padding).
class Reverb : public Augmentation {
 public:
  explicit Reverb(ReverbConfig config);
  // x: (B, T) waveforms.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "Reverb"; }
  std::string summary() const override;

  // The deterministic part: the responses (B, L) for rt60 and drr (B) and the Gaussian draws
  // (B, L), and x convolved with them.
  at::Tensor responses(const at::Tensor& rt60, const at::Tensor& drr,
                       const at::Tensor& gaussian) const;
  static at::Tensor convolve(const at::Tensor& x, const at::Tensor& h, const at::Tensor& lengths);

 private:
  ReverbConfig config_;
};

}  // namespace masr::features
