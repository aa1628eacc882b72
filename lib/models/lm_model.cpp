// lib/models/lm_model.cpp
// LmModel: building from hparams, the model.masr round trip and checkpoint averaging.
#include "models/lm_model.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "models/checkpoint.h"
#include "models/module_object.h"
#include "models/registration.h"
#include "text/tokenizer.h"

namespace masr::models {
namespace {

int64_t index_or(const hparams::Hparams& hp, const char* key, int64_t fallback) {
  const hparams::Value* v = hp.find(key);
  return v != nullptr && !v->is_null() ? v->as_int() : fallback;
}

std::shared_ptr<const text::Tokenizer> tokenizer_of(const hparams::Hparams& hp) {
  if (const hparams::Value* v = hp.find("tokenizer"); v != nullptr && !v->is_null()) {
    if (v->type() == hparams::Value::Type::kObject && v->instance()->object) {
      auto tok = std::dynamic_pointer_cast<text::Tokenizer>(v->instance()->object);
      if (tok && tok->loaded()) return tok;
    }
  }
  if (const hparams::Value* v = hp.find("tokenizer_file"); v != nullptr && !v->is_null()) {
    if (std::filesystem::exists(v->as_string())) return read_tokenizer_file(v->as_string());
  }
  return nullptr;
}

}  // namespace

std::shared_ptr<const text::Tokenizer> read_tokenizer_file(const std::string& path) {
  if (std::filesystem::path(path).extension() != ".masr") {
    return std::make_shared<const text::Tokenizer>(text::Tokenizer::from_file(path));
  }
  std::string bytes = read_checkpoint(path).tokenizer_model;
  if (bytes.empty()) throw_input_error("tokenizer file '" + path + "' holds no tokenizer");
  return std::make_shared<const text::Tokenizer>(
      text::Tokenizer::from_bytes(std::move(bytes), path + ":tokenizer.model"));
}

std::shared_ptr<LmModel> LmModel::from_hparams(const hparams::Hparams& hp, const std::string& key) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr || v->is_null()) {
    throw_config_error("hparams '" + hp.source() + "': key '" + key +
                       "' (the TransformerLM) is missing");
  }
  auto lm = std::dynamic_pointer_cast<TransformerLMImpl>(module_of(*v));
  if (!lm) {
    throw_config_error("hparams '" + hp.source() + "': " + v->origin() +
                       " is not a speechbrain...TransformerLM");
  }
  std::shared_ptr<LmModel> m(new LmModel());
  m->lm_ = TransformerLM(lm);
  m->bos_index_ = index_or(hp, "bos_index", 1);
  m->eos_index_ = index_or(hp, "eos_index", 2);
  m->pad_index_ = index_or(hp, "pad_index", 0);
  for (const int64_t index : {m->bos_index_, m->eos_index_, m->pad_index_}) {
    if (index < 0 || index >= lm->config.vocab) {
      throw_config_error("hparams '" + hp.source() + "': special index " + std::to_string(index) +
                         " is outside the LM vocabulary of " + std::to_string(lm->config.vocab));
    }
  }
  hparams::Value::Map subset;
  subset.emplace_back("model_type", hparams::Value::string(kType));
  subset.emplace_back("bos_index", hparams::Value::integer(m->bos_index_));
  subset.emplace_back("eos_index", hparams::Value::integer(m->eos_index_));
  subset.emplace_back("pad_index", hparams::Value::integer(m->pad_index_));
  subset.emplace_back("model", *v);
  m->hparams_yaml_ = hparams::to_yaml(hparams::Value::map(std::move(subset)));
  if (auto tok = tokenizer_of(hp)) m->set_tokenizer(std::move(tok));
  return m;
}

void LmModel::set_tokenizer(std::shared_ptr<const text::Tokenizer> tokenizer) {
  if (tokenizer && tokenizer->vocab_size() != vocab_size()) {
    throw_config_error("LM: tokenizer '" + tokenizer->origin() + "' has " +
                       std::to_string(tokenizer->vocab_size()) + " tokens but the LM has " +
                       std::to_string(vocab_size()));
  }
  tokenizer_ = std::move(tokenizer);
}

std::vector<std::pair<std::string, at::Tensor>> LmModel::named_state() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& item : lm_->named_parameters()) out.emplace_back(item.key(), item.value());
  for (const auto& item : lm_->named_buffers()) out.emplace_back(item.key(), item.value());
  return out;
}

void LmModel::load_state(const std::vector<std::pair<std::string, at::Tensor>>& state,
                         const std::string& origin) {
  std::map<std::string, at::Tensor> own;
  for (const auto& [name, tensor] : named_state()) own.emplace(name, tensor);
  if (state.size() != own.size()) {
    throw_config_error(origin + ": the state has " + std::to_string(state.size()) +
                       " tensors but the LM built from its hparams has " +
                       std::to_string(own.size()));
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state) {
    auto it = own.find(name);
    if (it == own.end()) throw_config_error(origin + ": unexpected key '" + name + "'");
    if (!it->second.sizes().equals(tensor.sizes())) {
      throw_config_error(origin + ": '" + name + "' does not have the shape of the LM's");
    }
    it->second.copy_(tensor);
  }
}

void LmModel::save(const std::string& path) const {
  CheckpointData data;
  data.model_type = kType;
  data.hparams_yaml = hparams_yaml_;
  data.state = named_state();
  if (tokenizer_) data.tokenizer_model = tokenizer_->model_bytes();
  write_checkpoint(path, data);
}

std::shared_ptr<LmModel> LmModel::load(const std::string& path) {
  CheckpointData data = read_checkpoint(path);
  if (data.model_type != kType) {
    throw_input_error("model file '" + path + "': model type '" + data.model_type +
                      "' is not a language model (expected 'lm')");
  }
  register_all_classes();
  std::shared_ptr<LmModel> model;
  try {
    model = from_hparams(hparams::load_text(data.hparams_yaml, {}, path + ":hparams.yaml"));
  } catch (const Error& e) {
    throw_input_error("model file '" + path + "': its hparams do not build an LM: " + e.what());
  }
  model->load_state(data.state, "model file '" + path + "'");
  if (!data.tokenizer_model.empty()) {
    model->set_tokenizer(std::make_shared<const text::Tokenizer>(
        text::Tokenizer::from_bytes(std::move(data.tokenizer_model), path + ":tokenizer.model")));
  }
  model->lm_->eval();
  return model;
}

std::shared_ptr<LmModel> average_lm_checkpoints(const std::vector<std::string>& paths) {
  if (paths.empty()) throw_input_error("average_lm_checkpoints: no checkpoints given");
  std::shared_ptr<LmModel> model = LmModel::load(paths.front());
  const auto state = model->named_state();
  std::vector<at::Tensor> sums;
  for (const auto& item : state) sums.push_back(item.second.to(torch::kDouble));
  for (size_t i = 1; i < paths.size(); ++i) {
    std::shared_ptr<LmModel> other = LmModel::load(paths[i]);
    if (other->hparams_yaml() != model->hparams_yaml()) {
      throw_input_error("average_lm_checkpoints: '" + paths[i] + "' has other hparams than '" +
                        paths.front() + "'");
    }
    const auto other_state = other->named_state();
    for (size_t k = 0; k < state.size(); ++k) sums[k] += other_state[k].second.to(torch::kDouble);
  }
  std::vector<std::pair<std::string, at::Tensor>> mean;
  for (size_t k = 0; k < state.size(); ++k) {
    const at::Tensor& t = state[k].second;
    mean.emplace_back(state[k].first,
                      t.is_floating_point()
                          ? (sums[k] / static_cast<double>(paths.size())).to(t.dtype())
                          : t.clone());
  }
  model->load_state(mean, "average of " + std::to_string(paths.size()) + " LM checkpoints");
  return model;
}

}  // namespace masr::models
