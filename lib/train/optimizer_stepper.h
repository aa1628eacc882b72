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
#include "train/data_parallel.h"
#include "train/fused_adam.h"
#include "train/grad_scaler.h"
#include "train/noam_scheduler.h"
#include "train/train_config.h"

namespace masr::train {

class OptimizerStepper {
 public:
  // The scaler is on only for precision fp16 on a CUDA device (`cuda`).
  OptimizerStepper(const TrainConfig& config, std::vector<at::Tensor> parameters, bool cuda,
                   std::shared_ptr<DataParallel> parallel);

  // Backward of loss / grad_accumulation_factor (times the fp16 scale); steps when the
  // accumulation is complete. Returns true when an optimizer step was taken (or skipped).
  bool backward(const at::Tensor& loss);
  // Averages, unscales, clips and steps (skipped on inf/nan gradients), then Noam.
  void step();
  int64_t accumulated() const { return accumulated_; }
  int64_t steps() const { return steps_; }
  double lr() const { return learning_rate(*optimizer_); }
  double lr_of_last_step() const { return last_lr_; }
  const GradScaler& scaler() const { return scaler_; }

  // Adds optimizer.ckpt to `files` and the scheduler/lr/scaler counters to `counters`.
  void save(std::map<std::string, std::string>& files,
            std::map<std::string, double>& counters) const;
  // From a checkpoint written by save(); `steps` is the meta's step count.
  void restore(const CheckpointInfo& checkpoint, int64_t steps);

 private:
  const TrainConfig& config_;
  std::vector<at::Tensor> parameters_;
  std::shared_ptr<DataParallel> parallel_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<FusedAdam> fused_;  // CUDA with LibTorch >= 2: the step as fused kernels
  std::optional<NoamScheduler> scheduler_;
  GradScaler scaler_;
  int64_t accumulated_ = 0;  // backward passes since the last step
  int64_t steps_ = 0;
  double last_lr_ = 0.0;
};

}  // namespace masr::train
