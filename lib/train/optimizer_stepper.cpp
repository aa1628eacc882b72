// lib/train/optimizer_stepper.cpp
// Accumulate, unscale, clip, step (or skip on a non-finite norm), schedule; checkpointed state.
#include "train/optimizer_stepper.h"

#include <cstdlib>
#include <limits>
#include <string>

#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "train/optimizer.h"
#include "train/step_profile.h"

namespace masr::train {
at::Tensor with_nan_gradients_unless_finite(const at::Tensor& loss) {
  const at::Tensor value = loss.detach();
  const at::Tensor factor =
      at::where(at::isfinite(value), at::ones_like(value),
                at::full_like(value, std::numeric_limits<double>::quiet_NaN()));
  return loss * factor;
}

OptimizerStepper::OptimizerStepper(const TrainConfig& config, std::vector<at::Tensor> parameters,
                                   bool cuda, std::shared_ptr<DataParallel> parallel)
    : config_(config),
      parameters_(std::move(parameters)),
      parallel_(parallel ? std::move(parallel) : std::make_shared<DataParallel>()),
      scaler_(GradScalerConfig{}, cuda && config.precision == runtime::Precision::kFp16) {
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
  const at::Tensor checked = with_nan_gradients_unless_finite(loss);
  scaler_.scale(checked / static_cast<double>(config_.grad_accumulation_factor)).backward();
  if (++accumulated_ < config_.grad_accumulation_factor) return false;
  step();
  return true;
}

GraphedSteps::Update OptimizerStepper::graph_update(bool capture) {
  if (env_is("MASR_GRAPH_OPTIMIZER", "0")) return {};
  if (!graphable() || config_.grad_accumulation_factor != 1 ||
      optimizer_->param_groups().size() != 1) {
    return {};
  }
  if (capture && !(fused_ && FusedAdam::tensor_lr())) return {};
  // Several ranks: opt-in until a GPU run has compared it with the all-reduce after the step
  // (docs/training.md, "CUDA graphs").
  if (parallel_->world_size() > 1 && !env_is("MASR_GRAPH_ALLREDUCE", "1")) return {};
  GraphedSteps::Update update;
  if (parallel_->world_size() > 1) {
    // The gradient buckets armed for this backward: each bucket's all-reduce starts as soon as
    // the backward has filled it, and apply's average_gradients waits for them (the same
    // collectives, in the same order, as backward() and step() issue op by op).
    update.before_backward = [this] { parallel_->prepare_backward(parameters_, true); };
  }
  update.apply = [this] {
    if (parallel_->world_size() > 1) {
      profile_phase("collectives");
      parallel_->average_gradients(parameters_);
    }
    profile_phase("clip");
    step_unless_nonfinite(clip_gradients(parameters_, config_.max_grad_norm));
  };
  return update;
}

bool OptimizerStepper::backward_graphed(GraphedSteps& graphs, std::vector<at::Tensor> inputs,
                                        const GraphedSteps::LossFn& loss_fn, at::Tensor* loss) {
  if (!graphable()) {
    throw Error(ErrorKind::kInternal,
                "OptimizerStepper: no graphed backward with the fp16 scaler or activation "
                "checkpointing");
  }
  profile_phase("model");
  if (graphs.steps_optimizer()) {
    // The whole step in one: this step's learning rate first (the graph reads it), then the
    // counters and the schedule, as step() ends.
    if (!in_graph_ && fused_) {
      // Everything the captured update touches exists before the first capture: the moments,
      // the device step counts, the skip counters and the learning rate.
      fused_->prepare();
      const at::TensorOptions on = parameters_.front().options();
      make_skip_counters();
      if (FusedAdam::tensor_lr()) lr_on_device_ = at::full({}, lr(), on.dtype(at::kFloat));
    }
    in_graph_ = true;
    if (lr_on_device_.defined()) lr_on_device_.fill_(lr());
    accumulated_ = 1;
    *loss = graphs.forward_backward(std::move(inputs), loss_fn, 1.0, /*first=*/true);
    after_step();
    return true;
  }
  graphs_ = &graphs;
  *loss = graphs.forward_backward(std::move(inputs), loss_fn,
                                  static_cast<double>(config_.grad_accumulation_factor),
                                  accumulated_ == 0);
  if (++accumulated_ < config_.grad_accumulation_factor) return false;
  step();
  return true;
}

void OptimizerStepper::step() {
  profile_phase("collectives");
  if (graphs_ != nullptr) {
    // One all-reduce per flat buffer (the parameters' .grad are views of them).
    if (parallel_->world_size() > 1) {
      parallel_->sum_tensors(graphs_->flats());
      for (const at::Tensor& flat : graphs_->flats()) flat.div_(parallel_->world_size());
    }
  } else {
    parallel_->average_gradients(parameters_);
  }
  // torch.cuda.amp: unscale_ before clip_grad_norm_, and scaler.step skips on inf/nan.
  profile_phase("clip");
  // The fused kernels read graph_update's device learning rate once it exists: this step's.
  if (lr_on_device_.defined()) lr_on_device_.fill_(lr());
  if (scaler_.unscale(parameters_)) {
    step_unless_nonfinite(clip_gradients(parameters_, config_.max_grad_norm));
  } else {
    MASR_LOG_DEBUG("train: inf/nan gradients at scale %g; step skipped", scaler_.scale_value());
    ++skipped_on_host_.steps;
    skipped_on_host_.batches += accumulated_;
  }
  after_step();
}

void OptimizerStepper::after_step() {
  scaler_.update();
  optimizer_->zero_grad();
  accumulated_ = 0;
  ++steps_;
  last_lr_ = lr();
  // SpeechBrain steps Noam after the optimizer (on_fit_batch_end), so step 1 uses lr_initial.
  profile_phase("scheduler");
  if (scheduler_) set_learning_rate(*optimizer_, scheduler_->step());
}

void OptimizerStepper::step_unless_nonfinite(const at::Tensor& norm) {
  profile_phase("optimizer");
  if (fused_ && norm.device() == parameters_.front().device()) {
    // The fused kernels read the flag on the device and leave everything as it is when it is 1.
    const at::Tensor nonfinite = at::isfinite(norm).logical_not();
    fused_->step(nonfinite.to(at::kFloat), lr_on_device_);
    const at::Tensor count = nonfinite.to(at::kLong);
    make_skip_counters();
    skipped_steps_on_device_.add_(count);
    skipped_batches_on_device_.add_(count, accumulated_);
    return;
  }
  // CPU, LibTorch 1.13 or parameters the fused kernels do not take (or no gradient at all, when
  // the norm is a CPU zero): the flag is read back, which costs nothing on the CPU.
  if (!at::isfinite(norm).item<bool>()) {
    ++skipped_on_host_.steps;
    skipped_on_host_.batches += accumulated_;
    return;
  }
  if (fused_) {
    fused_->step();
  } else {
    optimizer_->step();
  }
}

void OptimizerStepper::make_skip_counters() {
  if (skipped_steps_on_device_.defined()) return;
  const at::TensorOptions on = parameters_.front().options().dtype(at::kLong);
  skipped_steps_on_device_ = at::zeros({}, on);
  skipped_batches_on_device_ = at::zeros({}, on);
}

SkippedSteps OptimizerStepper::take_skipped() {
  SkippedSteps skipped = skipped_on_host_;
  skipped_on_host_ = {};
  if (skipped_steps_on_device_.defined()) {
    const at::Tensor counts =
        at::stack({skipped_steps_on_device_, skipped_batches_on_device_}).cpu();
    skipped.steps += counts[0].item<int64_t>();
    skipped.batches += counts[1].item<int64_t>();
    skipped_steps_on_device_.zero_();
    skipped_batches_on_device_.zero_();
  }
  return skipped;
}

void OptimizerStepper::start_warm() {
  if (scheduler_) set_learning_rate(*optimizer_, scheduler_->lr_at(1));
  last_lr_ = lr();
}

void OptimizerStepper::save(std::map<std::string, std::string>& files,
                            std::map<std::string, double>& counters) const {
  if (fused_) fused_->store_steps();  // the device step counts know which steps were skipped
  files["optimizer.ckpt"] = optimizer_bytes(*optimizer_);
  counters["scheduler_steps"] = scheduler_ ? static_cast<double>(scheduler_->steps()) : 0.0;
  counters["lr"] = lr();
  for (const auto& [key, value] : scaler_.state()) counters[key] = value;
}

void OptimizerStepper::restore(const CheckpointInfo& checkpoint, int64_t steps) {
  if (in_graph_) {
    // Graphs may hold the old state's tensors.
    throw Error(ErrorKind::kInternal,
                "OptimizerStepper: restore() after a step with the update in the graph");
  }
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
