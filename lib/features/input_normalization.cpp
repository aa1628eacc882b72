// lib/features/input_normalization.cpp
// Follows SB:processing/features.py InputNormalization.forward: per-utterance statistics, their
// batch average, and the cumulative global update (count increases on every training batch, the
// statistics only move while epoch < update_until_epoch).
#include "features/input_normalization.h"

#include <ATen/ATen.h>

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::features {

void InputNormalizationConfig::validate() const {
  if (norm_type != "sentence" && norm_type != "batch" && norm_type != "global") {
    throw_config_error("InputNormalization: norm_type '" + norm_type +
                       "' is not supported (sentence, batch or global; 'speaker' is not "
                       "implemented)");
  }
  if (avg_factor && (*avg_factor < 0.0 || *avg_factor > 1.0)) {
    throw_config_error("InputNormalization: avg_factor must be in [0, 1], got " +
                       std::to_string(*avg_factor));
  }
}

std::string InputNormalizationConfig::to_string() const {
  std::ostringstream out;
  out << "norm_type=" << norm_type << " mean_norm=" << mean_norm << " std_norm=" << std_norm
      << " avg_factor=" << (avg_factor ? std::to_string(*avg_factor) : "None")
      << " update_until_epoch=" << update_until_epoch;
  return out.str();
}

InputNormalizationImpl::InputNormalizationImpl(InputNormalizationConfig config)
    : config_(std::move(config)) {
  config_.validate();
  count_ = register_buffer("count", at::zeros({}, at::kLong));
  glob_mean_ = register_buffer("glob_mean", at::empty({0}, at::kFloat));
  glob_std_ = register_buffer("glob_std", at::empty({0}, at::kFloat));
}

int64_t InputNormalizationImpl::count() const { return count_.item<int64_t>(); }

void InputNormalizationImpl::set_statistics_gather(int rank, StatisticsGather gather) {
  gather_rank_ = rank;
  gather_ = std::move(gather);
}

void InputNormalizationImpl::update_statistics(const at::Tensor& mean, const at::Tensor& std,
                                               std::optional<int64_t> epoch) {
  at::NoGradGuard no_grad;
  if (glob_mean_.numel() == 0) {
    set_statistics(1, mean, std);
    return;
  }
  // Computed on the statistics' device from `count`, so a training step never reads it back:
  // count 0 replaces the statistics; otherwise they move (weight avg_factor or 1 / (count + 1))
  // while epoch < update_until_epoch.
  const at::Tensor m = mean.to(glob_mean_.device(), at::kFloat);
  const at::Tensor s = std.to(glob_std_.device(), at::kFloat);
  const at::Tensor first = count_.eq(0);
  at::Tensor next_mean, next_std;
  if (!epoch || *epoch < config_.update_until_epoch) {
    const at::Tensor weight =
        config_.avg_factor ? at::full({}, *config_.avg_factor, glob_mean_.options())
                           : at::reciprocal(count_.to(at::kFloat) + 1.0);
    next_mean = glob_mean_ * (1.0 - weight) + m * weight;
    next_std = glob_std_ * (1.0 - weight) + s * weight;
  } else {
    next_mean = glob_mean_, next_std = glob_std_;
  }
  glob_mean_.copy_(at::where(first, m, next_mean));
  glob_std_.copy_(at::where(first, s, next_std));
  count_.add_(1);
}

void InputNormalizationImpl::set_statistics(int64_t count, const at::Tensor& mean,
                                            const at::Tensor& std) {
  if (!mean.defined() || !std.defined() || !mean.sizes().equals(std.sizes())) {
    throw_input_error("InputNormalization: glob_mean and glob_std must have the same shape");
  }
  at::NoGradGuard no_grad;
  count_.fill_(count);
  // set_ keeps the registered buffer objects, so the module's state dict sees the new values.
  glob_mean_.set_(mean.detach().to(at::kFloat).clone());
  glob_std_.set_(std.detach().to(at::kFloat).clone());
}

std::pair<at::Tensor, at::Tensor> InputNormalizationImpl::utterance_statistics(
    const at::Tensor& x, const at::Tensor& rel_lengths) const {
  const int64_t batch = x.size(0);
  const int64_t time = x.size(1);
  // Valid frames per utterance, computed and checked on the host (rel_lengths on a GPU is read
  // back once here; the trainer passes CPU lengths).
  std::vector<int64_t> valid(static_cast<size_t>(batch), time);
  if (rel_lengths.defined()) {
    const at::Tensor rel = rel_lengths.to(at::kCPU, at::kDouble).contiguous();
    const double* r = rel.data_ptr<double>();
    for (int64_t b = 0; b < batch; ++b) {
      // torch.round: half to even, like std::nearbyint in the default rounding mode.
      valid[static_cast<size_t>(b)] = static_cast<int64_t>(std::nearbyint(r[b] * time));
      const int64_t v = valid[static_cast<size_t>(b)];
      if (v < 1 || v > time) {
        throw_input_error("InputNormalization: utterance " + std::to_string(b) + " has " +
                          std::to_string(v) + " valid frames of " + std::to_string(time) +
                          " (relative length " + std::to_string(r[b]) + ")");
      }
      if (config_.std_norm && v < 2) {
        // torch.std of one frame is NaN, which would poison the global statistics for good.
        throw_input_error("InputNormalization: utterance " + std::to_string(b) +
                          " has 1 valid frame; the unbiased std needs at least 2");
      }
    }
  }
  // All utterances at once: a (B, T, 1...) mask of the valid frames, sums over time.
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = batch, shape[1] = time;
  const at::Tensor frames_valid = runtime::to_device_async(at::tensor(valid, at::kLong), x.device());
  const at::Tensor keep = at::arange(time, x.options().dtype(at::kLong))
                              .unsqueeze(0)
                              .lt(frames_valid.unsqueeze(1))
                              .to(x.scalar_type())
                              .view(shape);
  std::vector<int64_t> count_shape(static_cast<size_t>(x.dim() - 1), 1);
  count_shape[0] = batch;
  const at::Tensor count = frames_valid.to(x.scalar_type()).view(count_shape);  // (B, 1...)
  const at::Tensor frame_mean = (x * keep).sum(1) / count;
  const at::Tensor mean = config_.mean_norm ? frame_mean : at::zeros_like(frame_mean);
  at::Tensor std = at::ones_like(frame_mean);
  if (config_.std_norm) {
    const at::Tensor centred = (x - frame_mean.unsqueeze(1)) * keep;
    std = centred.pow(2).sum(1).div(count - 1.0).sqrt();
  }
  return {mean, at::clamp_min(std, 1e-10)};
}

at::Tensor InputNormalizationImpl::forward(const at::Tensor& x, const at::Tensor& rel_lengths,
                                           std::optional<int64_t> epoch) {
  if (x.dim() < 2) {
    throw_input_error("InputNormalization: expected (B, T, ...) features, got " +
                      std::to_string(x.dim()) + " dimensions");
  }
  // Statistics come from detached features: constants for autograd, as `.data` in SpeechBrain.
  auto [means, stds] = utterance_statistics(x.detach(), rel_lengths);
  if (config_.norm_type == "sentence") {
    return (x - means.unsqueeze(1)) / stds.unsqueeze(1);
  }
  const at::Tensor mean = means.mean(0);
  const at::Tensor std = stds.mean(0);
  if (config_.norm_type == "batch") return (x - mean) / std;

  // Frozen statistics (epoch >= update_until_epoch) are the same on every rank already: no
  // gather then (a per-step collective that would make every rank wait for the slowest).
  const bool frozen = glob_mean_.numel() > 0 && epoch && *epoch >= config_.update_until_epoch;
  if (is_training() && gather_ && !frozen) {
    const at::Tensor all = gather_(at::stack({mean.to(at::kFloat), std.to(at::kFloat)}));
    at::Tensor own_mean, own_std;
    for (int64_t r = 0; r < all.size(0); ++r) {
      update_statistics(all[r][0], all[r][1], epoch);
      if (r == gather_rank_) own_mean = glob_mean_.clone(), own_std = glob_std_.clone();
    }
    return (x - own_mean.to(x.device(), x.scalar_type())) / own_std.to(x.device(), x.scalar_type());
  }
  if (is_training()) {
    update_statistics(mean, std, epoch);
  } else if (!has_statistics()) {
    throw_input_error(
        "InputNormalization: global statistics are empty (count 0); train at least one batch "
        "or load them from a checkpoint (normalizer.ckpt) before evaluation");
  }
  return (x - glob_mean_.to(x.device(), x.scalar_type())) /
         glob_std_.to(x.device(), x.scalar_type());
}

}  // namespace masr::features
