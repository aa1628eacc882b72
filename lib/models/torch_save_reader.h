// lib/models/torch_save_reader.h
// Reads files written by Python's torch.save (zip format, pickle protocol 2): the state dicts and
// dicts of SpeechBrain checkpoints. LibTorch 1.13's torch::pickle_load turns
// collections.OrderedDict into None and so cannot read a state_dict(); this small unpickler can.
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace masr::models {

// A Python value from the pickle: None, bool, int, float, str, tuple/list, dict (ordered), tensor,
// or a global (module.name) that was not called.
struct PyValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kList, kDict, kTensor, kGlobal };
  Kind kind = Kind::kNone;
  bool b = false;
  int64_t i = 0;
  double f = 0.0;
  std::string s;  // string, or "module.name" of a global
  std::shared_ptr<std::vector<std::shared_ptr<PyValue>>> items;  // list or tuple
  std::shared_ptr<std::vector<std::pair<std::shared_ptr<PyValue>, std::shared_ptr<PyValue>>>>
      entries;  // dict
  at::Tensor tensor;

  // The value for a string key of a dict, or nullptr.
  const PyValue* find(const std::string& key) const;
};

// Reads `path` (a torch.save zip). Throws masr::Error naming the path for a missing file, a file
// that is not a torch.save zip, and pickle contents it does not understand.
std::shared_ptr<PyValue> read_torch_save(const std::string& path);

// The {name: tensor} entries of a state dict, in file order; throws naming `path` when the value
// is not a dict of tensors.
std::vector<std::pair<std::string, at::Tensor>> state_dict_entries(const PyValue& value,
                                                                   const std::string& path);

}  // namespace masr::models
