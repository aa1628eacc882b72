// lib/models/checkpoint.cpp
// AsrModel::save/load over the model file container (checkpoint_file.cpp) and checkpoint
// averaging.
#include "models/checkpoint.h"

#include <torch/torch.h>

#include <filesystem>

#include "core/error.h"
#include "models/asr_model.h"
#include "models/registration.h"
#include "text/tokenizer.h"

namespace masr::models {
namespace {

// A weight: a floating-point tensor other than the normalization statistics, which come from the
// best checkpoint when averaging and stay float32 when converting.
bool is_weight(const std::string& name, const at::Tensor& tensor) {
  return tensor.is_floating_point() && name.rfind("normalize.", 0) != 0;
}

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw_input_error("model file '" + path + "': " + why);
}

}  // namespace

std::string model_file_in(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) return path;
  const fs::path file = fs::path(path) / "model.masr";
  if (!fs::exists(file)) {
    throw_input_error("model folder '" + path + "' has no model.masr (pass the model file itself)");
  }
  return file.string();
}

void AsrModel::save(const std::string& path) const {
  CheckpointData data;
  data.model_type = model_type_;
  data.hparams_yaml = hparams_yaml_;
  data.state = named_state();
  if (tokenizer_) data.tokenizer_model = tokenizer_->model_bytes();
  write_checkpoint(path, data);
}

std::shared_ptr<AsrModel> AsrModel::load(const std::string& path) {
  CheckpointData data = read_checkpoint(path);
  if (data.model_type != kCtc && data.model_type != kS2s) {
    bad_file(path, "unknown model type '" + data.model_type + "' (expected ctc or s2s)");
  }
  register_all_classes();
  std::shared_ptr<AsrModel> model;
  try {
    model = from_hparams(hparams::load_text(data.hparams_yaml, {}, path + ":hparams.yaml"));
  } catch (const Error& e) {
    bad_file(path, std::string("its hparams do not build a model: ") + e.what());
  }
  if (model->model_type() != data.model_type) {
    bad_file(path, "the model type says '" + data.model_type + "' but its hparams build a '" +
                       model->model_type() + "' model");
  }
  model->load_state(data.state, "model file '" + path + "'");
  if (!data.tokenizer_model.empty()) {
    model->set_tokenizer(std::make_shared<const text::Tokenizer>(
        text::Tokenizer::from_bytes(std::move(data.tokenizer_model), path + ":tokenizer.model")));
  }
  model->eval();
  return model;
}

std::shared_ptr<AsrModel> average_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw_input_error("average_checkpoints: no checkpoints given");
  std::shared_ptr<AsrModel> model = AsrModel::load(paths.front());
  auto state = model->named_state();
  std::vector<at::Tensor> sums;
  for (const auto& [name, tensor] : state) sums.push_back(tensor.to(torch::kDouble));
  for (size_t i = 1; i < paths.size(); ++i) {
    std::shared_ptr<AsrModel> other = AsrModel::load(paths[i]);
    if (other->hparams_yaml() != model->hparams_yaml()) {
      throw_input_error("average_checkpoints: '" + paths[i] + "' has other hparams than '" +
                        paths.front() + "'");
    }
    const auto other_state = other->named_state();  // same hparams: same names and shapes
    for (size_t k = 0; k < state.size(); ++k) sums[k] += other_state[k].second.to(torch::kDouble);
  }
  std::vector<std::pair<std::string, at::Tensor>> mean;
  for (size_t k = 0; k < state.size(); ++k) {
    const auto& [name, tensor] = state[k];
    mean.emplace_back(name, is_weight(name, tensor)
                                ? (sums[k] / static_cast<double>(paths.size())).to(tensor.dtype())
                                : tensor);
  }
  model->load_state(mean, "average of " + std::to_string(paths.size()) + " checkpoints");
  return model;
}

WeightConversion convert_weights(const std::string& in, const std::string& out,
                                 at::ScalarType dtype) {
  if (dtype != at::kHalf && dtype != at::kFloat) {
    throw Error(ErrorKind::kInternal, std::string("convert_weights: weights are stored as float32 or "
                                                  "float16, not ") + at::toString(dtype));
  }
  CheckpointData data = read_checkpoint(in);
  WeightConversion report;
  report.bytes_in = std::filesystem::file_size(in);
  for (auto& [name, tensor] : data.state) {
    if (!is_weight(name, tensor)) {
      ++report.kept;
      continue;
    }
    tensor = tensor.to(dtype).contiguous();
    ++report.converted;
  }
  write_checkpoint(out, data);
  report.bytes_out = std::filesystem::file_size(out);
  return report;
}

}  // namespace masr::models
