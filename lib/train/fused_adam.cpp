// lib/train/fused_adam.cpp
// at::_fused_adam_ / at::_fused_adamw_ exist from LibTorch 2.0 on; 1.13 builds compile the
// fallback only.
#include "train/fused_adam.h"

#include <torch/version.h>

#include <cmath>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include "core/env.h"
#include "core/error.h"

#define MASR_HAS_FUSED_ADAM (TORCH_VERSION_MAJOR >= 2)
// The kernels' overloads with a tensor learning rate (aten::_fused_adam_.tensor_lr) came later.
#define MASR_HAS_TENSOR_LR \
  (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))

namespace masr::train {
namespace {

// torch::optim keys its per-parameter state by the parameter's TensorImpl: as a pointer in some
// releases, as the pointer printed to a string in others.
template <typename Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  using Key = typename Map::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream out;
    out << p.unsafeGetTensorImpl();
    return out.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

// The moments of `p` in the optimizer's state (created as torch::optim's step() creates them).
template <typename ParamState>
ParamState& param_state(torch::optim::Optimizer& optimizer, const at::Tensor& p, bool amsgrad) {
  auto& states = optimizer.state();
  const auto key = state_key(states, p);
  auto it = states.find(key);
  if (it == states.end()) {
    auto fresh = std::make_unique<ParamState>();
    fresh->step(0);
    fresh->exp_avg(torch::zeros_like(p, at::MemoryFormat::Preserve));
    fresh->exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    if (amsgrad) fresh->max_exp_avg_sq(torch::zeros_like(p, at::MemoryFormat::Preserve));
    states[key] = std::move(fresh);
    it = states.find(key);
  }
  return static_cast<ParamState&>(*it->second);
}

}  // namespace

struct FusedAdam::State {
  // float32 step counts on the device, one per parameter (the fused kernels read them there);
  // torch::optim's int64 counts are advanced alike on the host, and store_steps() corrects them
  // when steps may have been skipped on the device.
  std::unordered_map<const void*, at::Tensor> steps;
  bool skippable = false;  // a step was given a found_inf flag

  // The device step count of `p`, made from its host count the first time.
  at::Tensor& step_of(const at::Tensor& p, int64_t host_count) {
    at::Tensor& step = steps[p.unsafeGetTensorImpl()];
    if (!step.defined()) {
      step = at::full({}, static_cast<double>(host_count), p.options().dtype(at::kFloat));
    }
    return step;
  }
};

FusedAdam::FusedAdam(torch::optim::Optimizer& optimizer, OptimizerConfig config)
    : optimizer_(optimizer), config_(std::move(config)), state_(std::make_unique<State>()) {}

FusedAdam::~FusedAdam() = default;

bool FusedAdam::available(const std::vector<at::Tensor>& parameters) {
#if MASR_HAS_FUSED_ADAM
  // MASR_FUSED_ADAM=0: LibTorch's optimizer instead (a diagnostic: it reads the non-finite flag
  // back, one host sync per step).
  if (env_is("MASR_FUSED_ADAM", "0")) return false;
  if (parameters.empty()) return false;
  const at::Device device = parameters.front().device();
  for (const auto& p : parameters) {
    if (!p.is_cuda() || p.device() != device || p.scalar_type() != at::kFloat) return false;
  }
  return true;
#else
  (void)parameters;
  return false;
#endif
}

void FusedAdam::reset() {
  state_->steps.clear();
  state_->skippable = false;
}

bool FusedAdam::tensor_lr() {
#if MASR_HAS_FUSED_ADAM && MASR_HAS_TENSOR_LR
  return true;
#else
  return false;
#endif
}

void FusedAdam::prepare() {
#if MASR_HAS_FUSED_ADAM
  const bool adamw = config_.type == "AdamW";
  for (auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params()) {
      auto make = [&](auto& st) { (void)state_->step_of(p, st.step()); };
      if (adamw) {
        make(param_state<torch::optim::AdamWParamState>(optimizer_, p, config_.amsgrad));
      } else {
        make(param_state<torch::optim::AdamParamState>(optimizer_, p, config_.amsgrad));
      }
    }
  }
  state_->skippable = true;  // the host counts no longer follow: store_steps reads the device's
#endif
}

void FusedAdam::step(const at::Tensor& found_inf, const at::Tensor& lr_on_device) {
#if MASR_HAS_FUSED_ADAM
  torch::NoGradGuard no_grad;
  const bool adamw = config_.type == "AdamW";
  const c10::optional<at::Tensor> skip =
      found_inf.defined() ? c10::optional<at::Tensor>(found_inf) : c10::nullopt;
  if (skip) state_->skippable = true;
#if !MASR_HAS_TENSOR_LR
  if (lr_on_device.defined()) {
    throw Error(ErrorKind::kInternal, "FusedAdam: this LibTorch takes no tensor learning rate");
  }
#endif
  if (lr_on_device.defined() && optimizer_.param_groups().size() != 1) {
    throw Error(ErrorKind::kInternal, "FusedAdam: a tensor learning rate needs one param group");
  }
  for (auto& group : optimizer_.param_groups()) {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
      auto record = [&](auto& st) {
        exp_avgs.push_back(st.exp_avg());
        exp_avg_sqs.push_back(st.exp_avg_sq());
        if (config_.amsgrad) max_sqs.push_back(st.max_exp_avg_sq());
        steps.push_back(state_->step_of(p, st.step()));
        st.step(st.step() + 1);
      };
      if (adamw) {
        record(param_state<torch::optim::AdamWParamState>(optimizer_, p, config_.amsgrad));
      } else {
        record(param_state<torch::optim::AdamParamState>(optimizer_, p, config_.amsgrad));
      }
    }
    if (params.empty()) continue;
    at::_foreach_add_(steps, 1);
    // The update at `rate`: a double, or a 0-dim tensor that the kernels read on the device.
    auto update = [&](const auto& rate) {
      if (adamw) {
        at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, rate, config_.beta1,
                          config_.beta2, config_.weight_decay, config_.eps, config_.amsgrad,
                          /*maximize=*/false, /*grad_scale=*/c10::nullopt,
                          /*found_inf=*/skip);
      } else {
        at::_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, rate, config_.beta1,
                         config_.beta2, config_.weight_decay, config_.eps, config_.amsgrad,
                         /*maximize=*/false, /*grad_scale=*/c10::nullopt,
                         /*found_inf=*/skip);
      }
    };
    const double lr = group.options().get_lr();
#if MASR_HAS_TENSOR_LR
    if (lr_on_device.defined()) {
      update(lr_on_device);
    } else {
      update(lr);
    }
#else
    update(lr);
#endif
    // As torch.optim's fused Adam: a skipped step takes its count back (found_inf is 0 or 1).
    if (skip) at::_foreach_sub_(steps, std::vector<at::Tensor>(steps.size(), found_inf));
  }
#else
  (void)found_inf;
  (void)lr_on_device;
  throw Error(ErrorKind::kInternal, "FusedAdam: this LibTorch has no fused Adam kernels");
#endif
}

void FusedAdam::store_steps() {
#if MASR_HAS_FUSED_ADAM
  if (!state_->skippable) return;  // every step was taken: the host counts are right
  const bool adamw = config_.type == "AdamW";
  std::vector<at::Tensor> params, counts;
  for (auto& group : optimizer_.param_groups()) {
    for (const auto& p : group.params()) {
      const auto it = state_->steps.find(p.unsafeGetTensorImpl());
      if (it == state_->steps.end()) continue;
      params.push_back(p);
      counts.push_back(it->second);
    }
  }
  if (params.empty()) return;
  const at::Tensor host = at::stack(counts).to(at::kDouble).cpu();  // the one read-back
  const auto values = host.accessor<double, 1>();
  for (size_t i = 0; i < params.size(); ++i) {
    const auto count = static_cast<int64_t>(std::llround(values[static_cast<int64_t>(i)]));
    if (adamw) {
      param_state<torch::optim::AdamWParamState>(optimizer_, params[i], config_.amsgrad)
          .step(count);
    } else {
      param_state<torch::optim::AdamParamState>(optimizer_, params[i], config_.amsgrad).step(count);
    }
  }
#endif
}

}  // namespace masr::train
