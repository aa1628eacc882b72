// lib/features/augment/spectrogram_drop.h
// SpecAugment-style masking of time frames or frequency bins, with the semantics of SpeechBrain
// v1.0's `speechbrain.augment.freq_domain.SpectrogramDrop`.
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct SpectrogramDropConfig {
  int64_t drop_length_low = 5;  // chunk lengths are drawn from [low, high): high is exclusive
  int64_t drop_length_high = 15;
  int64_t drop_count_low = 1;  // chunk counts are drawn from [low, high]: high is inclusive
  int64_t drop_count_high = 3;
  // "zeros", "mean" (scalar mean of the whole batch), "rand" (uniform in [min, max] of the
  // batch), "cutcat" (the same region of the previous utterance in the batch), "swap" (the same
  // utterance rolled in time), "random_selection" (one of these five, drawn per call).
  std::string replace = "zeros";
  int64_t dim = 1;  // 1: time, 2: frequency

  void validate() const;  // throws a config error naming the bad value
  std::string to_string() const;
};

class SpectrogramDrop : public Augmentation {
 public:
  explicit SpectrogramDrop(SpectrogramDropConfig config);

  // x: (B, T, F) (or (B, C, T, F), treated as (B*C, T, F)); lengths are passed through: like
  // SpeechBrain, chunks may fall into the padding and "mean" averages over it.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "SpectrogramDrop"; }
  std::string summary() const override { return config_.to_string(); }
  const SpectrogramDropConfig& config() const { return config_; }

  // The deterministic part, for tests: drops chunk k of utterance b, which covers
  // [positions[b][k], positions[b][k] + lengths[b][k]) along `dim`, with `replace` ("zeros",
  // "mean", "rand", "cutcat" or "swap"; "rand" and "swap" draw from `generator`).
  // positions, chunk_lengths: (B, n) int64.
  static at::Tensor drop_chunks(const at::Tensor& x, const at::Tensor& positions,
                                const at::Tensor& chunk_lengths, int64_t dim,
                                const std::string& replace, at::Generator& generator);

 private:
  SpectrogramDropConfig config_;
};

}  // namespace masr::features
