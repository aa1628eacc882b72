// apps/mamba-asr/model_defaults.cpp
#include "model_defaults.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace masr::cli {
namespace fs = std::filesystem;

const std::vector<std::string> kModelDefaultKeys = {"search",
                                                    "beam",
                                                    "arpa",
                                                    "arpa-weight",
                                                    "word-bonus",
                                                    "unk-offset",
                                                    "beam-prune-logp",
                                                    "token-prune-min-logp",
                                                    "ctc-weight",
                                                    "ctc-pre-beam",
                                                    "max-decode-ratio",
                                                    "lm",
                                                    "lm-weight",
                                                    "lm-temperature"};

namespace {

bool names_file(const std::string& key) { return key == "arpa" || key == "lm"; }

std::string value_text(const std::string& where, const std::string& key,
                       const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number()) return value.dump();  // as written: 0.8, not 0.80000000000000004
  throw_config_error(where + ": \"" + key + "\" must be a string or a number, got " + value.dump());
}

}  // namespace

ModelDefaults read_model_defaults(const std::string& model) {
  std::error_code ec;
  const fs::path folder =
      fs::is_directory(model, ec) ? fs::path(model) : fs::path(model).parent_path();
  const fs::path path = (folder.empty() ? fs::path(".") : folder) / "decode.json";
  ModelDefaults defaults;
  if (!fs::exists(path, ec)) return defaults;
  defaults.file = path.string();
  std::ifstream in(path);
  if (!in) throw_config_error("cannot read the model's decode defaults '" + defaults.file + "'");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw_config_error(defaults.file + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) {
    throw_config_error(defaults.file + ": expected a JSON object of decode options, e.g. " +
                       "{\"search\": \"ctc-beam\", \"beam\": 32}");
  }
  for (const auto& [key, value] : j.items()) {
    if (std::find(kModelDefaultKeys.begin(), kModelDefaultKeys.end(), key) ==
        kModelDefaultKeys.end()) {
      std::string known;
      for (const auto& k : kModelDefaultKeys) known += (known.empty() ? "" : ", ") + k;
      throw_config_error(defaults.file + ": unknown key \"" + key + "\" (known: " + known + ")");
    }
    std::string text = value_text(defaults.file, key, value);
    if (names_file(key)) {
      const fs::path file = fs::path(text).is_absolute() ? fs::path(text) : folder / text;
      if (!fs::is_regular_file(file, ec)) {
        throw_config_error(defaults.file + ": \"" + key + "\" names '" + file.string() +
                           "', which does not exist");
      }
      text = file.string();
    }
    defaults.options.emplace_back("--" + key, std::move(text));
  }
  return defaults;
}

}  // namespace masr::cli
