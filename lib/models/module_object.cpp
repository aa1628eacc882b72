// lib/models/module_object.cpp
// Modules held by hparams values.
#include "models/module_object.h"

#include "core/error.h"
#include "nn/wrappers.h"

namespace masr::models {

std::string with_thousands(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  for (int64_t i = static_cast<int64_t>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return (value < 0 ? "-" : "") + digits;
}

std::string ModuleObject::summary() const {
  return with_thousands(nn::count_parameters(*module_)) + " parameters";
}

std::shared_ptr<torch::nn::Module> module_of(const hparams::Value& value) {
  if (value.type() == hparams::Value::Type::kObject && value.instance()) {
    auto object = std::dynamic_pointer_cast<ModuleObject>(value.instance()->object);
    if (object) return object->module();
  }
  throw_config_error("hparams: " + value.origin() + " must be a module built with !new: (e.g. a " +
                     "TransformerASR or Linear), got " + value.describe());
}

}  // namespace masr::models
