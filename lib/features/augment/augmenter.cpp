// lib/features/augment/augmenter.cpp
// Augmenter: SpeechBrain v1.0 augment/augmenter.py behaviour (forward, augment,
// concatenate_outputs), with every random choice drawn from the caller's generator.
#include "features/augment/augmenter.h"

#include <torch/torch.h>

#include <numeric>

#include "core/error.h"
#include "core/log.h"
#include "core/string_printf.h"

namespace masr::features {
namespace {

using torch::indexing::Slice;

at::Tensor rows(const at::Tensor& t, int64_t start, int64_t end) {
  return t.index({Slice(start, end)});
}

}  // namespace

std::string AugmenterConfig::to_string() const {
  std::string out = parallel_augment ? "parallel" : "sequential";
  if (concat_original) out += ", concat original";
  if (shuffle_augmentations) out += ", shuffled";
  if (repeat_augment != 1) out += ", repeat " + std::to_string(repeat_augment);
  if (augment_prob < 1.0) out += ", prob " + string_printf("%g", augment_prob);
  return out;
}

Augmenter::Augmenter(AugmenterConfig config,
                     std::vector<std::shared_ptr<const Augmentation>> augmentations)
    : config_(std::move(config)) {
  const auto given = static_cast<int64_t>(augmentations.size());
  // SpeechBrain resolves min/max against the list before enable_augmentations filters it.
  min_ = std::min(config_.min_augmentations.value_or(1), given);
  max_ = std::min(config_.max_augmentations.value_or(given), given);
  if (config_.repeat_augment < 0) {
    throw_config_error("Augmenter: repeat_augment " + std::to_string(config_.repeat_augment) +
                       " must be >= 0");
  }
  if (config_.augment_end_index && *config_.augment_end_index < config_.augment_start_index) {
    throw_config_error(
        "Augmenter: augment_end_index " + std::to_string(*config_.augment_end_index) +
        " is smaller than augment_start_index " + std::to_string(config_.augment_start_index));
  }
  if (config_.concat_end_index && *config_.concat_end_index < config_.concat_start_index) {
    throw_config_error("Augmenter: concat_end_index " + std::to_string(*config_.concat_end_index) +
                       " is smaller than concat_start_index " +
                       std::to_string(config_.concat_start_index));
  }
  const auto& enabled = config_.enable_augmentations;
  if (!enabled.empty() && enabled.size() != augmentations.size()) {
    throw_config_error("Augmenter: enable_augmentations has " + std::to_string(enabled.size()) +
                       " entries but there are " + std::to_string(augmentations.size()) +
                       " augmentations");
  }
  for (size_t i = 0; i < augmentations.size(); ++i) {
    if (!augmentations[i])
      throw_config_error("Augmenter: augmentation " + std::to_string(i) + " is null");
    if (enabled.empty() || enabled[i]) augmentations_.push_back(std::move(augmentations[i]));
  }
  if (augmentations_.empty()) {
    MASR_LOG_WARN("Augmenter: no augmentation is applied because the list is empty");
  }
  if (max_ <= 0) MASR_LOG_WARN("Augmenter: max_augmentations is not positive; nothing is applied");
  if (min_ < 0) min_ = 0;
  if (min_ > max_) {
    MASR_LOG_WARN("Augmenter: min_augmentations > max_augmentations; max set to min");
    max_ = min_;
  }
}

std::string Augmenter::summary() const {
  std::string out = std::to_string(min_) + "-" + std::to_string(max_) + " of [";
  for (size_t i = 0; i < augmentations_.size(); ++i) {
    out += (i ? ", " : "") + augmentations_[i]->name();
  }
  return out + "], " + config_.to_string();
}

AugmentBatch Augmenter::run_pipeline(const at::Tensor& x, const at::Tensor& lengths,
                                     const std::vector<size_t>& selected,
                                     at::Generator& generator) const {
  const int64_t batch = x.size(0);
  const auto n = static_cast<int64_t>(selected.size());
  at::Tensor next_x = x;
  at::Tensor next_lengths = lengths;
  std::vector<AugmentBatch> parallel;
  AugmentBatch out{x, lengths, {}};
  for (int64_t k = 0; k < n; ++k) {
    int64_t start = 0;
    int64_t stop = batch;
    if (config_.parallel_augment && config_.parallel_augment_fixed_bs) {
      // torch.linspace(0, B, N + 1).to(int): truncated, not rounded.
      start = static_cast<int64_t>(static_cast<double>(batch) * k / n);
      stop = static_cast<int64_t>(static_cast<double>(batch) * (k + 1) / n);
    }
    const auto& aug = *augmentations_[selected[k]];
    out = aug.apply(rows(next_x, start, stop), rows(next_lengths, start, stop), generator);
    auto source = torch::arange(start, stop, torch::kLong);
    if (config_.parallel_augment) {
      parallel.push_back({out.x, out.lengths, source});
    } else {
      next_x = out.x;
      next_lengths = out.lengths;
    }
  }
  if (config_.parallel_augment) return concatenate_batches(parallel);
  return {out.x, out.lengths, torch::arange(batch, torch::kLong)};
}

AugmentBatch Augmenter::apply(const at::Tensor& x, const at::Tensor& lengths,
                              at::Generator& generator) const {
  const int64_t batch = x.size(0);
  const AugmentBatch unchanged{x, lengths, torch::arange(batch, torch::kLong)};
  if (draw_uniform(generator) > config_.augment_prob) return unchanged;
  if (config_.augment_start_index >= batch) {
    MASR_LOG_WARN("Augmenter: augment_start_index %lld >= batch size %lld; nothing is applied",
                  static_cast<long long>(config_.augment_start_index),
                  static_cast<long long>(batch));
    return unchanged;
  }
  const int64_t end = std::min(config_.augment_end_index.value_or(batch), batch);
  const int64_t count = draw_int(generator, min_, max_ + 1);
  if (config_.repeat_augment == 0 || count == 0 || augmentations_.empty()) return unchanged;

  std::vector<size_t> order(augmentations_.size());
  std::iota(order.begin(), order.end(), 0);
  if (config_.shuffle_augmentations) {
    auto perm = torch::randperm(static_cast<int64_t>(order.size()), generator, torch::kLong);
    for (size_t i = 0; i < order.size(); ++i) order[i] = perm[i].item<int64_t>();
  }
  order.resize(std::min<size_t>(order.size(), count));

  const int64_t start = config_.augment_start_index;
  const auto sub_x = rows(x, start, end);
  const auto sub_lengths = rows(lengths, start, end);
  std::vector<AugmentBatch> parts;
  // SpeechBrain compares concat_start_index with the size of the augmented slice, not the batch.
  if (config_.concat_original && config_.concat_start_index < sub_x.size(0)) {
    const int64_t concat_end = std::min(config_.concat_end_index.value_or(batch), batch);
    parts.push_back({rows(x, config_.concat_start_index, concat_end),
                     rows(lengths, config_.concat_start_index, concat_end),
                     torch::arange(config_.concat_start_index, concat_end, torch::kLong)});
  }
  for (int64_t r = 0; r < config_.repeat_augment; ++r) {
    auto part = run_pipeline(sub_x, sub_lengths, order, generator);
    part.source = part.source + start;
    parts.push_back(std::move(part));
  }
  return concatenate_batches(parts);
}

AugmentBatch concatenate_batches(const std::vector<AugmentBatch>& parts) {
  int64_t longest = 0;
  for (const auto& p : parts) longest = std::max(longest, p.x.size(1));
  std::vector<at::Tensor> xs, lens, sources;
  for (const auto& p : parts) {
    at::Tensor x = p.x;
    const int64_t missing = longest - x.size(1);
    if (missing > 0) {
      auto pad_shape = x.sizes().vec();
      pad_shape[1] = missing;
      x = torch::cat({x, torch::zeros(pad_shape, x.options())}, 1);
    }
    xs.push_back(x);
    lens.push_back(p.lengths * (static_cast<double>(p.x.size(1)) / static_cast<double>(longest)));
    sources.push_back(p.source.defined() ? p.source : torch::arange(p.x.size(0), torch::kLong));
  }
  return {torch::cat(xs, 0), torch::cat(lens, 0), torch::cat(sources, 0)};
}

}  // namespace masr::features
