// lib/features/augment/augmenter.h
// A pipeline of augmentations with the semantics of SpeechBrain v1.0's
// `speechbrain.augment.augmenter.Augmenter`: a random number of them, optionally shuffled, applied
// in sequence or in parallel, to a slice of the batch, with the original optionally concatenated.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "features/augment/interface.h"

namespace masr::features {

struct AugmenterConfig {
  bool parallel_augment = false;             // concatenate each augmentation's output on the batch
  bool parallel_augment_fixed_bs = false;    // parallel: each augmentation gets B / N rows only
  bool concat_original = false;              // prepend the original rows to the output
  std::optional<int64_t> min_augmentations;  // default 1
  std::optional<int64_t> max_augmentations;  // default: all
  bool shuffle_augmentations = false;
  int64_t repeat_augment = 1;
  int64_t augment_start_index = 0;
  std::optional<int64_t> augment_end_index;
  int64_t concat_start_index = 0;
  std::optional<int64_t> concat_end_index;
  double augment_prob = 1.0;
  std::vector<bool> enable_augmentations;  // empty: all enabled

  std::string to_string() const;
};

class Augmenter : public Augmentation {
 public:
  // Validates the configuration and resolves min/max as SpeechBrain does (clamped to the number
  // of augmentations; a negative min becomes 0; min > max raises max to min, with a warning).
  Augmenter(AugmenterConfig config, std::vector<std::shared_ptr<const Augmentation>> augmentations);

  // x: (B, T, ...) ; lengths: (B,). The result's `source` maps each output row to its input row,
  // so labels can follow with labels.index_select(0, source).
  AugmentBatch apply(const at::Tensor& x, const at::Tensor& lengths,
                     at::Generator& generator) const override;
  std::string name() const override { return "Augmenter"; }
  std::string summary() const override;

  int64_t min_augmentations() const { return min_; }
  int64_t max_augmentations() const { return max_; }
  size_t size() const { return augmentations_.size(); }

 private:
  AugmentBatch run_pipeline(const at::Tensor& x, const at::Tensor& lengths,
                            const std::vector<size_t>& selected, at::Generator& generator) const;

  AugmenterConfig config_;
  std::vector<std::shared_ptr<const Augmentation>> augmentations_;  // the enabled ones
  int64_t min_ = 1;
  int64_t max_ = 0;
};

// Concatenates batches on the batch axis, zero-padding dim 1 to the longest and rescaling the
// relative lengths by (own length / longest), as SpeechBrain's concatenate_outputs does (it pads
// the last axis, which is the same thing for waveforms; for features we pad time).
AugmentBatch concatenate_batches(const std::vector<AugmentBatch>& parts);

}  // namespace masr::features
