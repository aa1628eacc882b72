// lib/train/fused_adam.h
// Adam/AdamW steps as LibTorch's fused multi-tensor CUDA kernels (what torch.optim's
// `fused=True` runs): a few launches for the whole model instead of about eight per parameter
// tensor, which for a 600-tensor model costs more host time than the GPU needs for the update.
// The moments and step counts stay in the torch::optim optimizer's own state, so checkpoints
// are the same whichever path stepped. Available with LibTorch >= 2 on CUDA; elsewhere the
// optimizer's own step() runs (`available()` says which).
#pragma once

#include <memory>

#include <torch/torch.h>

#include "train/optimizer.h"

namespace masr::train {

class FusedAdam {
 public:
  // `optimizer` is the torch::optim::Adam or AdamW that make_optimizer(config, ...) built.
  FusedAdam(torch::optim::Optimizer& optimizer, OptimizerConfig config);
  ~FusedAdam();

  // Whether this build has the fused kernels and every parameter is a float32 CUDA tensor.
  static bool available(const std::vector<at::Tensor>& parameters);

  // One step of every parameter with a gradient, as optimizer.step() would take it. `found_inf`
  // (optional): a 0-dim float32 tensor on the parameters' device; when it holds 1 the kernels
  // leave parameters, moments and step counts as they are (torch.optim's fused step with a
  // GradScaler's flag), so a step can be skipped without reading anything back.
  // `lr` (optional, needs tensor_lr()): a 0-dim float32 tensor on the device holding the
  // learning rate (one param group), read by the kernels when they run: what a step captured in
  // a CUDA graph needs, as the schedule changes the rate between replays.
  void step(const at::Tensor& found_inf = {}, const at::Tensor& lr = {});
  // Whether this LibTorch's fused kernels take the learning rate as a tensor.
  static bool tensor_lr();
  // Makes every parameter's moments and device step count now, and takes the device counts as
  // the true ones from here on (store_steps reads them): a step captured in a CUDA graph must
  // find them (it would capture their creation) and advances only the device counts.
  void prepare();
  // Copies the device step counts into the optimizer's state, where checkpoints read them (they
  // differ once a found_inf step was skipped): a read-back, for checkpoints only.
  void store_steps();
  // Call after the optimizer's state was replaced (a checkpoint was loaded).
  void reset();

 private:
  struct State;
  torch::optim::Optimizer& optimizer_;
  OptimizerConfig config_;
  std::unique_ptr<State> state_;
};

}  // namespace masr::train
