// lib/train/grad_scaler.cpp
// GradScaler: the scale rule on the host, the unscale fused on CUDA and plain tensor ops on CPU.
#include "train/grad_scaler.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/error.h"

namespace masr::train {

void GradScalerConfig::validate() const {
  if (!(init_scale > 0) || !std::isfinite(init_scale)) {
    throw_config_error("grad scaler: init_scale must be a positive number, got " +
                       std::to_string(init_scale));
  }
  if (!(growth_factor > 1.0)) {
    throw_config_error("grad scaler: growth_factor must be > 1, got " +
                       std::to_string(growth_factor));
  }
  if (!(backoff_factor > 0.0 && backoff_factor < 1.0)) {
    throw_config_error("grad scaler: backoff_factor must be in (0, 1), got " +
                       std::to_string(backoff_factor));
  }
  if (growth_interval < 1) {
    throw_config_error("grad scaler: growth_interval must be >= 1, got " +
                       std::to_string(growth_interval));
  }
}

ScaleState next_scale(const ScaleState& state, bool found_inf, const GradScalerConfig& config) {
  ScaleState next = state;
  if (found_inf) {
    next.scale = state.scale * config.backoff_factor;
    next.growth_tracker = 0;
    return next;
  }
  next.growth_tracker = state.growth_tracker + 1;
  if (next.growth_tracker == config.growth_interval) {
    const double grown = state.scale * config.growth_factor;
    if (std::isfinite(grown)) next.scale = grown;
    next.growth_tracker = 0;
  }
  return next;
}

GradScaler::GradScaler(GradScalerConfig config, bool enabled) : config_(config), enabled_(enabled) {
  config_.validate();
  state_.scale = enabled_ ? config_.init_scale : 1.0;
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const {
  return enabled_ ? loss * state_.scale : loss;
}

bool GradScaler::unscale(const std::vector<at::Tensor>& parameters) {
  if (!enabled_) return true;
  if (unscaled_) return !found_inf_;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  found_inf_ = false;
  if (!grads.empty() && grads.front().is_cuda()) {
    // torch's fused kernel, as GradScaler._unscale_grads_ (fp32 scale and flag on the device).
    const auto options = grads.front().options().dtype(at::kFloat);
    at::Tensor found = at::zeros({1}, options);
    const at::Tensor inv_scale = at::full({1}, 1.0 / state_.scale, options);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale);
    found_inf_ = found.item<float>() != 0.0f;
  } else {
    at::NoGradGuard no_grad;
    for (at::Tensor& g : grads) {
      g.mul_(1.0 / state_.scale);
      if (!found_inf_ && !g.isfinite().all().item<bool>()) found_inf_ = true;
    }
  }
  unscaled_ = true;
  return !found_inf_;
}

void GradScaler::update() {
  if (!enabled_) return;
  // The host rule equals _amp_update_scale_ (one scalar; no device round trip needed).
  if (found_inf_) ++skipped_;
  state_ = next_scale(state_, found_inf_, config_);
  unscaled_ = false;
  found_inf_ = false;
}

std::map<std::string, double> GradScaler::state() const {
  return {{"scaler_scale", state_.scale},
          {"scaler_growth_tracker", static_cast<double>(state_.growth_tracker)},
          {"scaler_skipped", static_cast<double>(skipped_)}};
}

void GradScaler::load_state(const std::map<std::string, double>& state) {
  if (!enabled_) return;
  if (auto it = state.find("scaler_scale"); it != state.end() && it->second > 0) {
    state_.scale = it->second;
  }
  if (auto it = state.find("scaler_growth_tracker"); it != state.end()) {
    state_.growth_tracker = static_cast<int64_t>(it->second);
  }
  if (auto it = state.find("scaler_skipped"); it != state.end()) {
    skipped_ = static_cast<int64_t>(it->second);
  }
}

}  // namespace masr::train
