// lib/train/state_dict.cpp
// state_dict naming, pickled serialization and averaging.
#include "train/state_dict.h"

#include <map>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/script.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/pickle_check.h"

namespace masr::train {

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) {
    out.emplace_back(item.key(), item.value().detach());
  }
  for (const auto& item : module.named_buffers(/*recurse=*/true)) {
    if (!item.value().defined() || item.value().numel() == 0) continue;
    out.emplace_back(item.key(), item.value().detach());
  }
  return out;
}

void load_state_dict(torch::nn::Module& module, const StateDict& state, const std::string& origin) {
  std::map<std::string, at::Tensor> given(state.begin(), state.end());
  torch::NoGradGuard no_grad;
  auto assign = [&](const std::string& name, at::Tensor& target, bool optional) {
    auto it = given.find(name);
    if (it == given.end()) {
      if (optional) return;
      throw_input_error(origin + ": tensor '" + name + "' is missing");
    }
    if (target.defined() && target.numel() > 0 && target.sizes() != it->second.sizes()) {
      throw_input_error(origin + ": tensor '" + name + "' has shape " +
                        c10::str(it->second.sizes()) + ", the model expects " +
                        c10::str(target.sizes()));
    }
    if (target.defined() && target.sizes() == it->second.sizes()) {
      target.copy_(it->second);
    } else {
      target.set_(
          it->second.to(target.defined() ? target.options() : it->second.options()).clone());
    }
    given.erase(it);
  };
  for (auto& item : module.named_parameters(true)) assign(item.key(), item.value(), false);
  for (auto& item : module.named_buffers(true)) {
    // Empty buffers (statistics not computed yet) may be absent.
    assign(item.key(), item.value(), !item.value().defined() || item.value().numel() == 0);
  }
  if (!given.empty()) {
    throw_input_error(origin + ": unexpected tensor '" + given.begin()->first +
                      "' (not a parameter or buffer of the model)");
  }
}

std::string serialize_state(const StateDict& state) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : state) dict.insert(name, tensor.cpu().contiguous());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  return std::string(bytes.begin(), bytes.end());
}

StateDict deserialize_state(const std::string& bytes, const std::string& origin) {
  return models::load_pickled_tensors(bytes, origin);  // checked before LibTorch unpickles it
}

std::string serialize_cpu_rng() {
  return serialize_state({{"cpu", at::detail::getDefaultCPUGenerator().get_state()}});
}

void restore_cpu_rng(const std::string& bytes, const std::string& origin) {
  const StateDict rng = deserialize_state(bytes, origin);
  if (rng.empty() || rng[0].first != "cpu") throw_input_error(origin + ": no 'cpu' state");
  at::Generator cpu_generator = at::detail::getDefaultCPUGenerator();  // shares the default
  cpu_generator.set_state(rng[0].second);
}

}  // namespace masr::train
