// lib/nn/checkpoint.h
// Activation checkpointing per layer (torch.utils.checkpoint's reentrant variant): a checkpointed
// layer keeps only its input for the backward, which runs the layer again (with the random
// generators and the CUDA autocast state of the first run, so dropout draws the same masks) and
// back-propagates through it. Less memory for the price of a second forward per layer.
#pragma once

#include <ATen/Tensor.h>

#include <functional>

namespace masr::nn {

// Turns checkpointing on for layers run on this thread within its scope (the trainer sets it when
// `activation_checkpointing` is on; nested scopes restore the previous setting).
class ActivationCheckpointing {
 public:
  explicit ActivationCheckpointing(bool on);
  ~ActivationCheckpointing();
  ActivationCheckpointing(const ActivationCheckpointing&) = delete;
  ActivationCheckpointing& operator=(const ActivationCheckpointing&) = delete;

 private:
  bool previous_;
};

bool activation_checkpointing_on();

// layer(x), checkpointed when checkpointing is on, grad mode is enabled and x requires grad;
// otherwise a plain call. `layer` must compute the same function when called again (the module
// and any tensors it captures stay alive until the backward).
at::Tensor checkpointed(const std::function<at::Tensor(const at::Tensor&)>& layer,
                        const at::Tensor& x);

}  // namespace masr::nn
