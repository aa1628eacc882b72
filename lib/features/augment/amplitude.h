// lib/features/augment/amplitude.h
// Amplitude and resolution changes of SpeechBrain v1.0's augment/time_domain.py, for a
// waveform Augmenter: RandAmp (a random gain per utterance), DoClip (clipping at a random level)
// and DropBitResolution (a round trip through int16, int8 or float16). Channel effects that
// synthesized speech never has on its own.
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct RandAmpConfig {
  double amp_low = 0.5;  // the peak after the gain, drawn per utterance from [low, high)
  double amp_high = 1.5;
  void validate() const;
};

// As SpeechBrain: each row divided by its peak |x| (over the padded row), then multiplied by
// a gain drawn from [amp_low, amp_high) (torch.rand(B) * (high - low) + low). A silent row stays
// silent (SpeechBrain would divide 0 by 0).
class RandAmp : public Augmentation {
 public:
  explicit RandAmp(RandAmpConfig config);
  // x: (B, T) waveforms; lengths pass through.
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "RandAmp"; }
  std::string summary() const override;

 private:
  RandAmpConfig config_;
};

struct DoClipConfig {
  double clip_low = 0.5;  // the clipping level as a fraction of each row's peak: one per batch
  double clip_high = 0.5;
  void validate() const;
};

// As SpeechBrain: one level c from [clip_low, clip_high) for the batch (torch.rand(1)); each row,
// divided by its peak, is clamped to [-c, c] and scaled back by peak / c, so the clipped row
// keeps its peak.
class DoClip : public Augmentation {
 public:
  explicit DoClip(DoClipConfig config);
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "DoClip"; }
  std::string summary() const override;

 private:
  DoClipConfig config_;
};

struct DropBitResolutionConfig {
  std::string target_dtype = "random";  // int16, int8, float16, or random (one per call)
  void validate() const;
};

// As SpeechBrain: int16 and int8 scale the whole batch by (2^(bits-1) - 1) / max|x| (one peak
// for the batch), truncate toward zero to the integer type and scale back; float16 rounds to
// half precision. "random" picks one of the three per call from the generator (SpeechBrain uses
// Python's random.choice, which no seed of ours reproduces).
class DropBitResolution : public Augmentation {
 public:
  explicit DropBitResolution(DropBitResolutionConfig config);
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "DropBitResolution"; }
  std::string summary() const override;

  // The deterministic part, for one target ("int16", "int8" or "float16").
  static at::Tensor quantize(const at::Tensor& x, const std::string& target);

 private:
  DropBitResolutionConfig config_;
};

}  // namespace masr::features
