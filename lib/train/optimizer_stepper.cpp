// lib/train/optimizer_stepper.cpp
// Accumulate, unscale, clip, step, schedule; checkpointed state.
#include "train/optimizer_stepper.h"

#include "core/log.h"
#include "train/optimizer.h"
#include "train/step_profile.h"

namespace masr::train {

OptimizerStepper::OptimizerStepper(const TrainConfig& config, std::vector<at::Tensor> parameters,
                                   bool cuda, std::shared_ptr<DataParallel> parallel)
    : config_(config),
      parameters_(std::move(parameters)),
      parallel_(parallel ? std::move(parallel) : std::make_shared<DataParallel>()),
      scaler_(GradScalerConfig{}, cuda && config.precision == "fp16") {
  optimizer_ = make_optimizer(config_.optimizer, parameters_);
  if (cuda && FusedAdam::available(parameters_)) {
    fused_ = std::make_unique<FusedAdam>(*optimizer_, config_.optimizer);
  }
  if (config_.has_scheduler) scheduler_.emplace(config_.scheduler);
  last_lr_ = lr();
}

bool OptimizerStepper::backward(const at::Tensor& loss) {
  // Data-parallel gradient buckets reduce during the backward that completes an accumulation.
  profile_phase("backward");
  parallel_->prepare_backward(parameters_, accumulated_ + 1 >= config_.grad_accumulation_factor);
  scaler_.scale(loss / static_cast<double>(config_.grad_accumulation_factor)).backward();
  if (++accumulated_ < config_.grad_accumulation_factor) return false;
  step();
  return true;
}

void OptimizerStepper::step() {
  profile_phase("collectives");
  parallel_->average_gradients(parameters_);
  // torch.cuda.amp: unscale_ before clip_grad_norm_, and scaler.step skips on inf/nan.
  profile_phase("clip");
  if (scaler_.unscale(parameters_)) {
    clip_gradients(parameters_, config_.max_grad_norm);
    profile_phase("optimizer");
    if (fused_) {
      fused_->step();
    } else {
      optimizer_->step();
    }
  } else {
    MASR_LOG_DEBUG("train: inf/nan gradients at scale %g; step skipped", scaler_.scale_value());
  }
  scaler_.update();
  optimizer_->zero_grad();
  accumulated_ = 0;
  ++steps_;
  last_lr_ = lr();
  // SpeechBrain steps Noam after the optimizer (on_fit_batch_end), so step 1 uses lr_initial.
  profile_phase("scheduler");
  if (scheduler_) set_learning_rate(*optimizer_, scheduler_->step());
}

void OptimizerStepper::save(std::map<std::string, std::string>& files,
                            std::map<std::string, double>& counters) const {
  files["optimizer.ckpt"] = optimizer_bytes(*optimizer_);
  counters["scheduler_steps"] = scheduler_ ? static_cast<double>(scheduler_->steps()) : 0.0;
  counters["lr"] = lr();
  for (const auto& [key, value] : scaler_.state()) counters[key] = value;
}

void OptimizerStepper::restore(const CheckpointInfo& checkpoint, int64_t steps) {
  load_optimizer(*optimizer_, Checkpointer::read(checkpoint, "optimizer.ckpt"),
                 checkpoint.path + "/optimizer.ckpt");
  if (fused_) fused_->reset();
  const CheckpointMeta& meta = checkpoint.meta;
  if (scheduler_) scheduler_->set_steps(static_cast<int64_t>(meta.counter("scheduler_steps")));
  set_learning_rate(*optimizer_, meta.counter("lr"));
  scaler_.load_state(meta.counters);
  steps_ = steps;
  accumulated_ = 0;
}

}  // namespace masr::train
