// lib/features/augment/vocoder.h
// Every utterance resynthesized through a source-filter vocoder, for a waveform Augmenter
// (`mamba_asr.Vocoder`, mamba-asr's own): its spectral envelope (a liftered cepstrum, frame by
// frame) excites a pulse train at its own pitch, or noise where it is unvoiced, as
// statistical-parametric speech synthesis (HTS, clustergen) makes its voices from mel-cepstra and
// a pulse-or-noise source. Optionally the pitch moves and the envelope stays: a change of pitch
// that keeps the formants and the tempo (speed perturbation moves all three).
#pragma once

#include <cstdint>
#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct VocoderConfig {
  double sample_rate = 16000.0;
  // Cepstral coefficients kept for the envelope, per utterance from [order_low, order_high]
  // (whole numbers; fewer: a smoother envelope). At most half the analysis FFT (256 at 16 kHz).
  int64_t order_low = 30;
  int64_t order_high = 50;
  double pitch_low = 1.0;  // pitch factor per utterance from [low, high); 1: the utterance's own
  double pitch_high = 1.0;
  // Share of noise in the voiced frames' source (power), per utterance from [low, high) in [0, 1]:
  // 0 a pure pulse train (a buzzy vocoder), more a breathier one.
  double noise_low = 0.0;
  double noise_high = 0.2;
  // Pitch search range (Hz) and the normalized autocorrelation above which a frame is voiced.
  double f0_min = 60.0;
  double f0_max = 400.0;
  double voicing_threshold = 0.45;
  void validate() const;
};

// Analysis: 32 ms Hann windows every 5 ms (512 and 80 samples at 16 kHz; the FFT the next power
// of two). Per frame, the log magnitude's real cepstrum cut after `order` coefficients gives the
// envelope; the pitch is the lag of the first local maximum of the window-corrected normalized
// autocorrelation within 0.85 of the highest one in [1/f0_max, 1/f0_min] (parabolic refinement),
// and a frame is voiced when that maximum exceeds voicing_threshold and its energy is within 40 dB
// of the utterance's loudest frame. Synthesis: per sample, a pulse at each period of the
// (factor-scaled) pitch with amplitude sqrt(period), mixed with white noise by the noise share in
// voiced samples, white noise alone in unvoiced ones; its short-time spectrum times the envelope,
// overlap-added. The output has each utterance's RMS over its valid samples, zeros past them, and
// the input's lengths.
class Vocoder : public Augmentation {
 public:
  explicit Vocoder(VocoderConfig config);
  // x: (B, T) waveforms.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "Vocoder"; }
  std::string summary() const override;

  // The deterministic part, for tests: the analysis of x ((B, T) waveforms, valid sample counts
  // (B) int64) into the envelope (B, F, M) (natural log of magnitude), the pitch (B, M) in Hz
  // (0 in unvoiced frames) for the given cepstral orders (B) int64.
  struct Analysis {
    at::Tensor log_envelope;
    at::Tensor f0;
  };
  Analysis analyze(const at::Tensor& x, const at::Tensor& valid, const at::Tensor& order) const;
  // Resynthesis of an analysis with pitch factors (B), noise shares (B) and the white noise
  // (B, T) of the source, to T samples (not yet rescaled or masked).
  at::Tensor synthesize(const Analysis& analysis, const at::Tensor& pitch, const at::Tensor& share,
                        const at::Tensor& noise) const;

  int64_t window() const { return window_; }
  int64_t hop() const { return hop_; }
  int64_t n_fft() const { return n_fft_; }

 private:
  VocoderConfig config_;
  int64_t window_, hop_, n_fft_;
};

}  // namespace masr::features
