// lib/features/input_normalization.h
// SpeechBrain's InputNormalization (speechbrain.processing.features, v1.0): per-dimension mean
// and std normalization by sentence, by batch, or by global running statistics.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <functional>
#include <optional>
#include <string>

namespace masr::features {

struct InputNormalizationConfig {
  std::string norm_type = "global";  // sentence | batch | global
  bool mean_norm = true;
  bool std_norm = true;
  std::optional<double> avg_factor;  // none: cumulative average, weight 1 / (count + 1)
  int64_t update_until_epoch = 3;

  void validate() const;
  std::string to_string() const;
};

// The running statistics are buffers ("count", "glob_mean", "glob_std"), so they travel with a
// model's state dict; glob_mean/glob_std are empty until the first training batch.
class InputNormalizationImpl : public torch::nn::Module {
 public:
  explicit InputNormalizationImpl(InputNormalizationConfig config = {});

  // x: (B, T, F...); rel_lengths: (B) valid fraction of T per utterance (undefined: all valid).
  // Statistics use frames [0, round(rel_length * T)) with torch.std (unbiased), floored at 1e-10;
  // the batch statistics are the averages of the per-utterance ones. In global mode while
  // training, the first batch initialises them and later batches update them while
  // epoch < update_until_epoch (no epoch: always). Returns x normalized, padding included.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& rel_lengths = {},
                     std::optional<int64_t> epoch = std::nullopt);

  bool has_statistics() const { return count() > 0 && glob_mean_.numel() > 0; }
  int64_t count() const;
  const at::Tensor& glob_mean() const { return glob_mean_; }
  const at::Tensor& glob_std() const { return glob_std_; }
  // Replaces the statistics (e.g. read from SpeechBrain's normalizer.ckpt).
  void set_statistics(int64_t count, const at::Tensor& mean, const at::Tensor& std);
  const InputNormalizationConfig& config() const { return config_; }

  // Data-parallel training: `gather` returns every rank's (2, F...) [mean; std] stacked in rank
  // order. Global updates then apply all ranks' batch statistics in rank order, so every rank
  // keeps the statistics one process gets from the same batches in that order, and rank r
  // normalizes with the statistics after ranks 0..r (what one process would use for that batch).
  using StatisticsGather = std::function<at::Tensor(const at::Tensor& local)>;
  void set_statistics_gather(int rank, StatisticsGather gather);

 private:
  // One batch's update of the global statistics (cumulative or avg_factor), count + 1.
  void update_statistics(const at::Tensor& mean, const at::Tensor& std,
                         std::optional<int64_t> epoch);

  // Per-utterance (mean, std) stacked: each (B, F...).
  std::pair<at::Tensor, at::Tensor> utterance_statistics(const at::Tensor& x,
                                                         const at::Tensor& rel_lengths) const;

  InputNormalizationConfig config_;
  at::Tensor count_;  // int64 scalar
  at::Tensor glob_mean_;
  at::Tensor glob_std_;
  int gather_rank_ = 0;
  StatisticsGather gather_;
};
TORCH_MODULE(InputNormalization);

}  // namespace masr::features
