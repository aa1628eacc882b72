// lib/train/noam_scheduler.h
// SpeechBrain's NoamScheduler and LinearNoamScheduler (SB:nnet/schedulers.py), stepped once per
// optimizer step after the step, exactly as the recipes' on_fit_batch_end does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hparams/value.h"

namespace masr::train {

struct NoamConfig {
  std::string type = "NoamScheduler";  // NoamScheduler | LinearNoamScheduler
  double lr_initial = 1e-3;
  int64_t n_warmup_steps = 1;
  std::optional<int64_t> model_size;  // Noam: normalize by model_size^-0.5 instead of warmup^0.5
  int64_t n_keep_steps = 0;           // LinearNoam: steps held at lr_initial after warm-up
  void validate() const;
};

// From a `!new:speechbrain.nnet.schedulers.(Linear)NoamScheduler` value (declared class).
NoamConfig noam_config_from(const hparams::Value& value);

class NoamScheduler {
 public:
  explicit NoamScheduler(NoamConfig config);
  // Advances one step and returns the new learning rate to set on the optimizer.
  double step();
  // The learning rate for a given step count (>= 1).
  double lr_at(int64_t n_steps) const;
  int64_t steps() const { return n_steps_; }
  void set_steps(int64_t n) { n_steps_ = n; }  // restore from a checkpoint
  const NoamConfig& config() const { return config_; }

 private:
  NoamConfig config_;
  int64_t n_steps_ = 0;
};

}  // namespace masr::train
