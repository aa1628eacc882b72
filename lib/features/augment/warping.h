// lib/features/augment/warping.h
// Time (or frequency) warping of a spectrogram, with the semantics of SpeechBrain v1.0's
// `speechbrain.augment.freq_domain.Warping`.
#pragma once

#include <string>

#include "features/augment/interface.h"

namespace masr::features {

struct WarpingConfig {
  int64_t warp_window = 5;
  std::string warp_mode = "bicubic";  // "bicubic" or "bilinear" (align_corners=True)
  int64_t dim = 1;                    // 1: time, 2: frequency

  void validate() const;
  std::string to_string() const;
};

// Picks a centre c in [window, L - window) and a new position w in [c - window + 1, c + window]
// (one pair for the whole batch), then stretches frames [0, c) onto [0, w) and [c, L) onto
// [w, L) by interpolation, so the length L is unchanged. Inputs too short to warp
// (L - window <= window) are returned unchanged. Lengths pass through (padding is warped too,
// as in SpeechBrain).
class Warping : public Augmentation {
 public:
  explicit Warping(WarpingConfig config);

  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "Warping"; }
  std::string summary() const override { return config_.to_string(); }
  const WarpingConfig& config() const { return config_; }

  // The deterministic part, for tests: x is (B, T, F), warped along dim 1 with centre c and new
  // position w.
  static at::Tensor warp(const at::Tensor& x, int64_t c, int64_t w, const std::string& mode);

 private:
  WarpingConfig config_;
};

}  // namespace masr::features
