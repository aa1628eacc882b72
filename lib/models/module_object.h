// lib/models/module_object.h
// The hparams Object that holds a LibTorch module built from a `!new:` entry, so other entries
// (ModuleList, scorers, the trainer) can reach the module and `--dry-run` can count parameters.
#pragma once

#include <memory>
#include <string>

#include <torch/torch.h>

#include "hparams/registry.h"

namespace masr::models {

class ModuleObject : public hparams::Object {
 public:
  explicit ModuleObject(std::shared_ptr<torch::nn::Module> module) : module_(std::move(module)) {}
  // "115,187,888 parameters"
  std::string summary() const override;
  const std::shared_ptr<torch::nn::Module>& module() const { return module_; }

 private:
  std::shared_ptr<torch::nn::Module> module_;
};

// 115187888 -> "115,187,888".
std::string with_thousands(int64_t value);

// The module held by an hparams value made by `!new:` of a module class; throws a config error
// naming the value otherwise.
std::shared_ptr<torch::nn::Module> module_of(const hparams::Value& value);

}  // namespace masr::models
