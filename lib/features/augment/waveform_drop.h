// lib/features/augment/waveform_drop.h
// Waveform-domain augmentations of SpeechBrain's augment/time_domain.py that the LibriSpeech CTC
// recipes put in their `wav_augment`: DropFreq (notch filters at random frequencies) and
// DropChunk (random stretches of samples set to zero or to noise).
#pragma once

#include <optional>
#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct DropFreqConfig {
  double drop_freq_low = 1e-14;  // band centres, as a fraction of the Nyquist frequency
  double drop_freq_high = 1.0;
  int64_t drop_freq_count_low = 1;  // notches per batch, drawn from [low, high] (inclusive)
  int64_t drop_freq_count_high = 3;
  double drop_freq_width = 0.05;
  double epsilon = 1e-12;

  void validate() const;  // throws a config error naming the bad value
};

// One set of notches for the whole batch (SpeechBrain draws them once per call): a 101-tap FIR
// filter, the product of one windowed-sinc notch per frequency, applied with zero padding.
class DropFreq : public Augmentation {
 public:
  explicit DropFreq(DropFreqConfig config);
  // x: (B, T) waveforms; lengths pass through.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "DropFreq"; }
  std::string summary() const override;

  // The deterministic part: x filtered by the notches at `frequencies` (fractions of Nyquist).
  at::Tensor filter(const at::Tensor& x, const at::Tensor& frequencies) const;
  // SpeechBrain's processing.signal_processing.notch_filter: (filter_width) taps.
  static at::Tensor notch_filter(double frequency, int64_t filter_width, double notch_width);

 private:
  DropFreqConfig config_;
};

struct DropChunkConfig {
  int64_t drop_length_low = 100;  // samples per chunk, drawn from [low, high] (inclusive)
  int64_t drop_length_high = 1000;
  int64_t drop_count_low = 1;  // chunks per utterance, drawn from [low, high] (inclusive)
  int64_t drop_count_high = 3;
  int64_t drop_start = 0;           // first sample a chunk may start at (negative: from the end)
  std::optional<int64_t> drop_end;  // last one (negative: from the end); none: the length
  double noise_factor = 0.0;        // 0: zeros; else uniform noise of this times 2x amplitude

  void validate() const;
};

class DropChunk : public Augmentation {
 public:
  explicit DropChunk(DropChunkConfig config);
  // x: (B, T) waveforms; each utterance's chunks fall within its own length.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "DropChunk"; }
  std::string summary() const override;

 private:
  DropChunkConfig config_;
};

}  // namespace masr::features
