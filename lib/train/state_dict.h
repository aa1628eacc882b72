// lib/train/state_dict.h
// Named tensors of a module (parameters and buffers, PyTorch's state_dict names such as
// "0.convblock_0.convs.conv_0.conv.weight") and their serialization (torch-pickled dicts).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>

namespace torch::nn {
class Module;
}

namespace masr::train {

using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// Parameters then buffers, detached (sharing storage with the module). Undefined or empty buffers
// (e.g. statistics not computed yet) are skipped.
StateDict state_dict(const torch::nn::Module& module);

// Copies `state` into the module's parameters and buffers. Strict: a missing or unexpected name,
// or a shape mismatch, is an input error naming `origin` and the tensor.
void load_state_dict(torch::nn::Module& module, const StateDict& state, const std::string& origin);

// A torch-pickled dict of tensors (readable by Python's torch.load).
std::string serialize_state(const StateDict& state);
StateDict deserialize_state(const std::string& bytes, const std::string& origin);

// The default CPU generator's state as checkpoint bytes (`rng.ckpt`), and back; restoring names
// `origin` when the bytes hold no CPU state.
std::string serialize_cpu_rng();
void restore_cpu_rng(const std::string& bytes, const std::string& origin);

}  // namespace masr::train
