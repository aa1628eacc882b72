// lib/train/grad_scaler.h
// Dynamic loss scaling for fp16 training with torch.cuda.amp.GradScaler's semantics: scale the
// loss, unscale the gradients before clipping, skip the step when any is inf/nan, and adapt.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace masr::train {

// torch.cuda.amp.GradScaler's defaults.
struct GradScalerConfig {
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  void validate() const;  // config errors name the field
};

// The scale after one step (torch's _amp_update_scale_): a non-finite step multiplies the scale
// by backoff_factor and resets the count of good steps; growth_interval good steps in a row
// multiply it by growth_factor (kept only when finite) and reset the count.
struct ScaleState {
  double scale = 65536.0;
  int64_t growth_tracker = 0;  // good steps since the last change
};
ScaleState next_scale(const ScaleState& state, bool found_inf, const GradScalerConfig& config);

class GradScaler {
 public:
  // Disabled: every call is the identity (scale 1, never skips), as GradScaler(enabled=False).
  GradScaler(GradScalerConfig config, bool enabled);

  bool enabled() const { return enabled_; }
  // loss * scale (the loss unchanged when disabled).
  at::Tensor scale(const at::Tensor& loss) const;
  // Divides the gradients of `parameters` by the scale in place (once per step; later calls do
  // nothing) and records whether any is inf/nan. Returns true when the step may be taken. On
  // CUDA it runs torch's fused _amp_foreach_non_finite_check_and_unscale_; elsewhere plain ops.
  bool unscale(const std::vector<at::Tensor>& parameters);
  // After the (possibly skipped) optimizer step: adapts the scale from what unscale found.
  void update();

  double scale_value() const { return state_.scale; }
  int64_t growth_tracker() const { return state_.growth_tracker; }
  int64_t skipped_steps() const { return skipped_; }
  // For checkpoints: {"scaler_scale", "scaler_growth_tracker", "scaler_skipped"}.
  std::map<std::string, double> state() const;
  // Missing keys keep the current values (checkpoints written without a scaler).
  void load_state(const std::map<std::string, double>& state);

 private:
  GradScalerConfig config_;
  bool enabled_;
  ScaleState state_;
  bool unscaled_ = false;
  bool found_inf_ = false;
  int64_t skipped_ = 0;
};

}  // namespace masr::train
