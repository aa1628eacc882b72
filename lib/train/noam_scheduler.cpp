// lib/train/noam_scheduler.cpp
// Noam schedules: lr = lr_initial * scale(n_steps), SpeechBrain's formulas.
#include "train/noam_scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "hparams/registry.h"

namespace masr::train {

void NoamConfig::validate() const {
  if (n_warmup_steps < 1) {
    throw_config_error(type + ": n_warmup_steps " + std::to_string(n_warmup_steps) +
                       " must be >= 1");
  }
  if (!(lr_initial >= 0)) throw_config_error(type + ": lr_initial must be >= 0");
  if (model_size && *model_size < 1) throw_config_error(type + ": model_size must be >= 1");
  if (n_keep_steps < 0) throw_config_error(type + ": n_keep_steps must be >= 0");
}

NoamConfig noam_config_from(const hparams::Value& value) {
  if (value.type() != hparams::Value::Type::kObject) {
    throw_config_error("hparams: " + value.origin() +
                       " must be !new:speechbrain.nnet.schedulers.NoamScheduler, got " +
                       value.describe());
  }
  const hparams::Instance& instance = *value.instance();
  const std::string& name = instance.info->name;
  NoamConfig c;
  if (name == "speechbrain.nnet.schedulers.NoamScheduler") {
    c.type = "NoamScheduler";
  } else if (name == "speechbrain.nnet.schedulers.LinearNoamScheduler") {
    c.type = "LinearNoamScheduler";
  } else {
    throw_config_error("hparams: " + value.origin() + ": scheduler '" + name +
                       "' is not supported; use NoamScheduler or LinearNoamScheduler");
  }
  const hparams::Args& a = instance.args;
  c.lr_initial = a.get("lr_initial").as_double();
  c.n_warmup_steps = a.get("n_warmup_steps").as_int();
  if (const hparams::Value* m = a.find("model_size"); m != nullptr && !m->is_null()) {
    c.model_size = m->as_int();
  }
  c.n_keep_steps = a.get_int("n_keep_steps", 0);
  try {
    c.validate();
  } catch (const Error& e) {
    throw_config_error("hparams: " + a.origin() + ": " + e.what());
  }
  return c;
}

NoamScheduler::NoamScheduler(NoamConfig config) : config_(std::move(config)) { config_.validate(); }

double NoamScheduler::step() { return lr_at(++n_steps_); }

double NoamScheduler::lr_at(int64_t n_steps) const {
  const double n = static_cast<double>(std::max<int64_t>(n_steps, 1));
  const double warmup = static_cast<double>(config_.n_warmup_steps);
  double scale = 1.0;
  if (config_.type == "NoamScheduler") {
    // normalize * min(n^-0.5, n * warmup^-1.5): peaks at lr_initial after warmup steps.
    const double normalize = config_.model_size
                                 ? std::pow(static_cast<double>(*config_.model_size), -0.5)
                                 : std::sqrt(warmup);
    scale = normalize * std::min(std::pow(n, -0.5), n * std::pow(warmup, -1.5));
  } else {
    const double keep = static_cast<double>(config_.n_keep_steps);
    if (n < warmup) {
      scale = n / warmup;
    } else if (n < warmup + keep) {
      scale = 1.0;
    } else {
      scale = warmup / (n - keep);
    }
  }
  return config_.lr_initial * scale;
}

}  // namespace masr::train
