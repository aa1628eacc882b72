// lib/train/optimizer.h
// Adam and AdamW built from an hparams `!name:torch.optim.Adam(W)` factory, with the learning
// rate set by the scheduler and the state saved in checkpoints.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "hparams/value.h"

namespace masr::train {

struct OptimizerConfig {
  std::string type = "AdamW";  // Adam | AdamW
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // torch's defaults: 0 for Adam, 0.01 for AdamW
  bool amsgrad = false;

  void validate() const;  // config errors name the field
  std::string to_string() const;
};

// From a `!name:torch.optim.Adam` / `!name:torch.optim.AdamW` factory value; other classes and
// unsupported arguments are config errors naming the key and file.
OptimizerConfig optimizer_config_from(const hparams::Value& factory);

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        std::vector<at::Tensor> parameters);

// The learning rate of every parameter group (SpeechBrain's schedulers set them all alike).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);
double learning_rate(const torch::optim::Optimizer& optimizer);

// The optimizer's state as bytes (torch::serialize archive) for checkpoints, and back; a bad
// archive is an input error naming `origin`.
std::string optimizer_bytes(torch::optim::Optimizer& optimizer);
void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes,
                    const std::string& origin);

// Clips the gradients of `parameters` to a global L2 norm of max_norm (torch's
// clip_grad_norm_); returns the norm before clipping as a 0-dim float32 tensor on the gradients'
// device. Nothing is read back to the host: the scale factor is applied as a tensor, and a
// non-finite norm leaves the gradients as they are (the OptimizerStepper then skips the step on
// that norm). max_norm <= 0 only measures. With LibTorch >= 2 the norms and the scaling are
// multi-tensor kernels.
at::Tensor clip_gradients(const std::vector<at::Tensor>& parameters, double max_norm);

}  // namespace masr::train
