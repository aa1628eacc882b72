// lib/train/optimizer_stepper.h
// The optimizer side of SpeechBrain's fit_batch, shared by trainers: (fp16-scaled) backward with
// gradient accumulation, data-parallel averaging, unscale, clipping, skipping non-finite steps,
// Noam after the step; and that state in checkpoints (optimizer.ckpt and meta counters).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/checkpointer.h"
#include "train/cuda_graph_step.h"
#include "train/data_parallel.h"
#include "train/fused_adam.h"
#include "train/grad_scaler.h"
#include "train/noam_scheduler.h"
#include "train/train_config.h"

namespace masr::train {

// Optimizer steps skipped for a non-finite loss or non-finite gradients, and the batches
// (micro-batches of the accumulation) whose gradients they dropped.
struct SkippedSteps {
  int64_t steps = 0;
  int64_t batches = 0;
};

// A step is skipped, on every rank alike, when its gradients' global norm is not finite. A
// non-finite loss makes its batch's gradients NaN (backward multiplies it by a factor that is 1
// for a finite loss and NaN otherwise), so it skips the step it belongs to, all micro-batches of
// the accumulation included; after the data-parallel all-reduce every rank sees the same norm,
// so the ranks agree without a collective of their own. With the fused CUDA AdamW the skip
// happens on the device (the kernels' found_inf flag) and nothing is read back; elsewhere the
// finiteness of the norm is read back (free on the CPU). With the fp16 scaler, its unscale
// decides (it reads its flag back, as torch's scaler.step does). A skipped step still counts:
// steps() and the Noam schedule advance, as they do for the scaler's skipped steps.
// loss * factor, with factor 1 for a finite loss (the gradients are bit for bit those of the
// loss: multiplying by 1 is exact) and NaN otherwise (every gradient the loss reaches becomes
// NaN, so the step's gradient norm says so on the device, without reading the loss back).
at::Tensor with_nan_gradients_unless_finite(const at::Tensor& loss);

class OptimizerStepper {
 public:
  // The scaler is on only for precision fp16 on a CUDA device (`cuda`).
  OptimizerStepper(const TrainConfig& config, std::vector<at::Tensor> parameters, bool cuda,
                   std::shared_ptr<DataParallel> parallel);

  // Backward of loss / grad_accumulation_factor (times the fp16 scale; NaN gradients when the
  // loss is not finite); steps when the accumulation is complete. Returns true when an optimizer
  // step was taken (or skipped).
  bool backward(const at::Tensor& loss);
  // backward() for a loss that `graphs` computes from `inputs` (GraphedSteps::forward_backward:
  // a CUDA graph's replay where it has one); the loss comes back in `loss`. Not with the fp16
  // scaler or activation checkpointing (graphable()). Every backward of a run goes one way or
  // the other.
  bool backward_graphed(GraphedSteps& graphs, std::vector<at::Tensor> inputs,
                        const GraphedSteps::LossFn& loss_fn, at::Tensor* loss);
  // No fp16 loss scaler (its scale lives on the host) and no activation checkpointing (its
  // recomputation saves and restores generator states on the host).
  bool graphable() const { return !scaler_.enabled() && !config_.activation_checkpointing; }
  // The optimizer's side of a step (with several ranks the gradient all-reduce, bucket by bucket
  // beside the backward; clipping, the update or its skip, counted on the device) for
  // GraphedSteps to run inside the step, so that gradients live only there
  // (cuda_graph_step.h); empty where it cannot: gradient accumulation, several param groups,
  // MASR_GRAPH_OPTIMIZER=0, several ranks without MASR_GRAPH_ALLREDUCE=1, or, with `capture`,
  // an update that would read anything back (no fused kernels with a tensor learning rate).
  // Give the GraphedSteps built with it to backward_graphed.
  GraphedSteps::Update graph_update(bool capture);
  // Averages, unscales, clips and steps (skipped on inf/nan gradients), then Noam.
  void step();
  int64_t accumulated() const { return accumulated_; }
  int64_t steps() const { return steps_; }
  double lr() const { return learning_rate(*optimizer_); }
  double lr_of_last_step() const { return last_lr_; }
  const GradScaler& scaler() const { return scaler_; }
  // The steps skipped since the last call, and resets the count. Reads a device counter back
  // (a host synchronization on CUDA): call it at log intervals, not per step.
  SkippedSteps take_skipped();

  // A warm start (train --init-model): the first step at the schedule's rate for step 1, not at
  // the optimizer's own (SpeechBrain's first step uses that one, before the schedule sets a rate;
  // a recipe's raw rate can be far above its schedule's, such as the LM's 0.35 under Noam, and
  // would undo trained weights in one step).
  void start_warm();
  // Adds optimizer.ckpt to `files` and the scheduler/lr/scaler counters to `counters`.
  void save(std::map<std::string, std::string>& files,
            std::map<std::string, double>& counters) const;
  // From a checkpoint written by save(); `steps` is the meta's step count.
  void restore(const CheckpointInfo& checkpoint, int64_t steps);

 private:
  // The optimizer step, unless the gradients' global norm `norm` is not finite.
  void step_unless_nonfinite(const at::Tensor& norm);
  // What follows every step: the scaler's update, counters, the learning-rate schedule.
  void after_step();
  // The device skip counters (fused path), made once on the parameters' device.
  void make_skip_counters();

  const TrainConfig& config_;
  std::vector<at::Tensor> parameters_;
  std::shared_ptr<DataParallel> parallel_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<FusedAdam> fused_;  // CUDA with LibTorch >= 2: the step as fused kernels
  std::optional<NoamScheduler> scheduler_;
  GradScaler scaler_;
  int64_t accumulated_ = 0;         // backward passes since the last step
  GraphedSteps* graphs_ = nullptr;  // set by backward_graphed: its flat buffers hold the gradients
  int64_t steps_ = 0;
  double last_lr_ = 0.0;
  SkippedSteps skipped_on_host_;  // skips decided on the host (scaler, non-fused optimizers)
  // Skips decided on the device (fused path): 0-dim int64 counters on the parameters' device.
  at::Tensor skipped_steps_on_device_, skipped_batches_on_device_;
  // graph_update's learning rate, read by the fused kernels (set before each step).
  at::Tensor lr_on_device_;
  bool in_graph_ = false;  // a step ran with graph_update: the optimizer state must stay put
};

}  // namespace masr::train
