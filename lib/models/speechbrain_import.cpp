// lib/models/speechbrain_import.cpp
// AsrModel::import_speechbrain: a SpeechBrain / Mamba-ASR CKPT+ folder (model.ckpt =
// ModuleList([CNN, Transformer, seq_lin, ctc_lin]) or [CNN, Transformer, ctc_lin] for CTC,
// normalizer.ckpt = {count, glob_mean, glob_std, spk_dict_*}, optional tokenizer.ckpt) mapped
// onto our module names (reference mamba-asr.md section 4.7).
#include <torch/torch.h>

#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/log.h"
#include "models/asr_model.h"
#include "models/lm_model.h"
#include "models/module_object.h"
#include "models/torch_save_reader.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"
#include "models/registration.h"
#include "text/tokenizer.h"

namespace masr::models {
namespace {

namespace fs = std::filesystem;

// Upstream-only entries that hold no learned state: RelPosEncXL keeps its inverse frequencies
// as a buffer in some SpeechBrain versions; we recompute them.
bool ignorable(const std::string& key) {
  const std::string suffix = "positional_encoding.inv_freq";
  return key.size() >= suffix.size() &&
         key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A recipe's hparams for building its model: `overrides` applied; a `!PLACEHOLDER` left unset
// (data_folder and the like) is harmless, since building a model reads no data.
hparams::Hparams load_model_hparams(const std::string& file,
                                    const std::vector<std::pair<std::string, std::string>>& overrides) {
  register_all_classes();
  hparams::LoadOptions options;
  options.overrides = overrides;
  options.placeholder_value = "unused";
  return hparams::load_file(file, options);
}

// Mamba-ASR's own Transformer decoder layer (its modules/Transformer.py) names the cross-attention
// `multihead_attn`; SpeechBrain's, whose spelling our decoder keeps, `mutihead_attn`. Both load.
std::string our_spelling(std::string key) {
  const std::string upstream = ".multihead_attn.";
  const size_t at = key.find(upstream);
  if (at != std::string::npos && key.find(".decoder.layers.") != std::string::npos) {
    key.replace(at, upstream.size(), ".mutihead_attn.");
  }
  return key;
}

// Index i of the hparams' `model` ModuleList -> our name, by identity of the module objects;
// the recipes' order when there is no ModuleList.
std::vector<std::string> module_list_names(const hparams::Hparams& hp, const AsrModel& model) {
  const hparams::Value* list = hp.find("model");
  if (list == nullptr || list->is_null()) {
    if (model.is_s2s()) return {"CNN", "Transformer", "seq_lin", "ctc_lin"};
    return {"CNN", "Transformer", "ctc_lin"};
  }
  auto modules = std::dynamic_pointer_cast<torch::nn::ModuleListImpl>(module_of(*list));
  if (!modules) throw_config_error("hparams: " + list->origin() + " must be a torch.nn.ModuleList");
  const auto children = model.module().named_children();
  std::vector<std::string> names;
  for (size_t i = 0; i < modules->size(); ++i) {
    std::string name;
    for (const auto& child : children) {
      if (child.value().get() == modules->ptr(i).get()) name = child.key();
    }
    if (name.empty() || name == "normalize") {
      throw_config_error("hparams: " + list->origin() + " item " + std::to_string(i) +
                         " is not one of the model's CNN, Transformer, seq_lin, ctc_lin");
    }
    names.push_back(name);
  }
  return names;
}

std::vector<std::pair<std::string, at::Tensor>> renamed_model_state(
    const std::string& path, const std::vector<std::string>& names) {
  const auto state = state_dict_entries(*read_torch_save(path), path);
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::vector<std::string> unmapped;
  for (const auto& [key, tensor] : state) {
    const size_t dot = key.find('.');
    size_t index = names.size();
    if (dot != std::string::npos && dot > 0 && key.find_first_not_of("0123456789") == dot) {
      index = std::stoul(key.substr(0, dot));
    }
    if (index >= names.size()) {
      unmapped.push_back(key);
      continue;
    }
    if (ignorable(key)) continue;
    out.emplace_back(names[index] + our_spelling(key.substr(dot)), tensor);
  }
  if (!unmapped.empty()) {
    std::string list;
    for (const auto& k : unmapped) list += (list.empty() ? "" : ", ") + k;
    throw_input_error("SpeechBrain checkpoint '" + path + "': keys outside the model's " +
                      std::to_string(names.size()) + " modules: " + list);
  }
  return out;
}

void append_normalizer(const std::string& folder,
                       std::vector<std::pair<std::string, at::Tensor>>& state) {
  std::string path = (fs::path(folder) / "normalizer.ckpt").string();
  // CF-S recipes name the recoverable `normalize`.
  if (!fs::exists(path) && fs::exists(fs::path(folder) / "normalize.ckpt")) {
    path = (fs::path(folder) / "normalize.ckpt").string();
  }
  const auto value = read_torch_save(path);
  const PyValue* count = value->find("count");
  const PyValue* mean = value->find("glob_mean");
  const PyValue* std = value->find("glob_std");
  if (count == nullptr || count->kind != PyValue::Kind::kInt || mean == nullptr ||
      mean->kind != PyValue::Kind::kTensor || std == nullptr ||
      std->kind != PyValue::Kind::kTensor) {
    throw_input_error("SpeechBrain normalizer '" + path +
                      "' must be a dict with count (int), glob_mean and glob_std (tensors)");
  }
  state.emplace_back("normalize.count", torch::tensor(count->i, torch::kLong));
  state.emplace_back("normalize.glob_mean", mean->tensor);
  state.emplace_back("normalize.glob_std", std->tensor);
}

}  // namespace

void AsrModel::load_speechbrain_weights(const hparams::Hparams& hp, const std::string& model_ckpt) {
  auto state = renamed_model_state(model_ckpt, module_list_names(hp, *this));
  for (const auto& [name, tensor] : named_state()) {
    if (name.rfind("normalize.", 0) == 0) state.emplace_back(name, tensor.clone());
  }
  load_state(state, "SpeechBrain model state '" + model_ckpt + "'");
}

std::shared_ptr<AsrModel> AsrModel::import_speechbrain(
    const std::string& ckpt_folder, const std::string& hparams_file,
    const std::vector<std::pair<std::string, std::string>>& overrides,
    const std::string& tokenizer_file) {
  if (!fs::is_directory(ckpt_folder)) {
    throw_io_error("SpeechBrain checkpoint folder '" + ckpt_folder + "' does not exist");
  }
  const hparams::Hparams hp = load_model_hparams(hparams_file, overrides);
  std::shared_ptr<AsrModel> model = from_hparams(hp);

  const std::string model_path = (fs::path(ckpt_folder) / "model.ckpt").string();
  auto state = renamed_model_state(model_path, module_list_names(hp, *model));
  append_normalizer(ckpt_folder, state);
  model->load_state(
      state, "SpeechBrain checkpoint '" + ckpt_folder + "' with hparams '" + hparams_file + "'");

  std::string tokenizer = tokenizer_file;
  if (tokenizer.empty() && fs::exists(fs::path(ckpt_folder) / "tokenizer.ckpt")) {
    tokenizer = (fs::path(ckpt_folder) / "tokenizer.ckpt").string();
  }
  if (!tokenizer.empty()) {
    model->set_tokenizer(
        std::make_shared<const text::Tokenizer>(text::Tokenizer::from_file(tokenizer)));
  }
  model->eval();
  MASR_LOG_INFO("imported %s (%s, %lld parameters)", ckpt_folder.c_str(),
                model->model_type().c_str(), static_cast<long long>(model->num_parameters()));
  return model;
}

std::shared_ptr<LmModel> LmModel::import_speechbrain(
    const std::string& lm_ckpt, const std::string& hparams_file,
    const std::vector<std::pair<std::string, std::string>>& overrides,
    const std::string& tokenizer_file) {
  if (!fs::is_regular_file(lm_ckpt)) {
    throw_io_error("SpeechBrain LM checkpoint '" + lm_ckpt + "' does not exist");
  }
  const hparams::Hparams hp = load_model_hparams(hparams_file, overrides);
  // An ASR recipe names its LM `lm_model`; an LM recipe names it `model`.
  const std::string key = hp.find("lm_model") != nullptr ? "lm_model" : "model";
  std::shared_ptr<LmModel> model = from_hparams(hp, key);

  std::vector<std::pair<std::string, at::Tensor>> state;
  for (auto& [name, tensor] : state_dict_entries(*read_torch_save(lm_ckpt), lm_ckpt)) {
    if (!ignorable(name)) state.emplace_back(name, tensor);
  }
  std::map<std::string, bool> own;
  for (const auto& [name, tensor] : model->named_state()) own[name] = false;
  std::vector<std::string> unexpected, missing;
  for (const auto& [name, tensor] : state) {
    auto it = own.find(name);
    if (it == own.end()) {
      unexpected.push_back(name);
    } else {
      it->second = true;
    }
  }
  for (const auto& [name, seen] : own) {
    if (!seen) missing.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty()) {
    auto list = [](const std::vector<std::string>& keys) {
      std::string out;
      for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
      return out;
    };
    throw_config_error("SpeechBrain LM checkpoint '" + lm_ckpt + "' does not match the " + key +
                       " of '" + hparams_file + "'" +
                       (missing.empty() ? "" : "; missing keys: " + list(missing)) +
                       (unexpected.empty() ? "" : "; unexpected keys: " + list(unexpected)));
  }
  model->load_state(state, "SpeechBrain LM checkpoint '" + lm_ckpt + "'");
  if (!tokenizer_file.empty()) {
    model->set_tokenizer(
        std::make_shared<const text::Tokenizer>(text::Tokenizer::from_file(tokenizer_file)));
  }
  model->lm()->eval();
  return model;
}

}  // namespace masr::models
