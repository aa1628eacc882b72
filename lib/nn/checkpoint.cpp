// lib/nn/checkpoint.cpp
// The checkpoint's backward is an autograd Node holding the layer function and its input; it is
// reentrant (it runs a backward of its own through the recomputed layer), as PyTorch's reentrant
// torch.utils.checkpoint is, so the parameters' gradients (and their data-parallel hooks) arrive
// through the inner backward and only the input's gradient leaves the node.
#include "nn/checkpoint.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/version.h>

#include <optional>
#include <utility>
#include <vector>

namespace masr::nn {
namespace {

thread_local bool checkpointing_on = false;

// CUDA autocast as the layer first ran under it (the backward runs on autograd's device thread,
// whose autocast state is its own). The device-generic API replaced the *_gpu_* one in 2.4.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
};
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
AutocastState autocast_now() {
  return {at::autocast::is_autocast_enabled(at::kCUDA), at::autocast::get_autocast_dtype(at::kCUDA)};
}
void set_autocast(const AutocastState& s) {
  at::autocast::set_autocast_dtype(at::kCUDA, s.dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, s.enabled);
}
#else
AutocastState autocast_now() { return {at::autocast::is_enabled(), at::autocast::get_autocast_gpu_dtype()}; }
void set_autocast(const AutocastState& s) {
  at::autocast::set_autocast_gpu_dtype(s.dtype);
  at::autocast::set_enabled(s.enabled);
}
#endif

// The default generators a layer on `device` may draw from (dropout): the CPU one, and the
// device's own when it is not the CPU.
std::vector<at::Generator> generators_for(const at::Device& device) {
  std::vector<at::Generator> out{at::globalContext().defaultGenerator(at::kCPU)};
  if (!device.is_cpu()) out.push_back(at::globalContext().defaultGenerator(device));
  return out;
}

std::vector<at::Tensor> states_of(std::vector<at::Generator>& generators) {
  std::vector<at::Tensor> states;
  for (auto& g : generators) {
    std::lock_guard<std::mutex> lock(g.mutex());
    states.push_back(g.get_state());
  }
  return states;
}

void set_states(std::vector<at::Generator>& generators, const std::vector<at::Tensor>& states) {
  for (size_t i = 0; i < generators.size(); ++i) {
    std::lock_guard<std::mutex> lock(generators[i].mutex());
    generators[i].set_state(states[i]);
  }
}

struct CheckpointBackward : public torch::autograd::Node {
  std::function<at::Tensor(const at::Tensor&)> layer;
  at::Tensor input;  // detached
  std::vector<at::Tensor> rng_states;
  AutocastState autocast;

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    if (!input.defined()) {
      throw std::runtime_error("checkpointed layer: backward through it a second time");
    }
    const at::Tensor x = input.detach().requires_grad_(true);
    at::Tensor out;
    {
      // The first run's random draws and autocast state; this thread's are restored after.
      std::vector<at::Generator> generators = generators_for(input.device());
      const std::vector<at::Tensor> now = states_of(generators);
      set_states(generators, rng_states);
      const AutocastState autocast_before = autocast_now();
      set_autocast(autocast);
      torch::AutoGradMode grad_mode(true);
      out = layer(x);
      set_autocast(autocast_before);
      if (autocast.enabled) at::autocast::clear_cache();  // no cast weights kept past this step
      set_states(generators, now);
    }
    torch::autograd::backward({out}, {grads[0]});
    release_variables();
    return {x.grad()};
  }

  void release_variables() override {
    input.reset();
    layer = nullptr;
  }
};

}  // namespace

ActivationCheckpointing::ActivationCheckpointing(bool on) : previous_(checkpointing_on) {
  checkpointing_on = on;
}

ActivationCheckpointing::~ActivationCheckpointing() { checkpointing_on = previous_; }

bool activation_checkpointing_on() { return checkpointing_on; }

at::Tensor checkpointed(const std::function<at::Tensor(const at::Tensor&)>& layer,
                        const at::Tensor& x) {
  if (!checkpointing_on || !at::GradMode::is_enabled() || !x.requires_grad()) return layer(x);
  auto node = std::shared_ptr<CheckpointBackward>(new CheckpointBackward(),
                                                  torch::autograd::deleteNode);
  node->layer = layer;
  node->input = x.detach();
  std::vector<at::Generator> generators = generators_for(x.device());
  node->rng_states = states_of(generators);
  node->autocast = autocast_now();
  at::Tensor out;
  {
    at::NoGradGuard no_grad;  // nothing inside the layer is kept for a backward
    out = layer(x);
  }
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::set_history(out, node);
  return out;
}

}  // namespace masr::nn
