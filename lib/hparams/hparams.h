// lib/hparams/hparams.h
// Loading SpeechBrain-style hparams files (HyperPyYAML semantics) into resolved Values, with
// SpeechBrain-style overrides. docs/hparams.md describes the language; tests/hparams pin it.
//
//   auto hp = masr::hparams::load_file("hparams/S2S/conmamba_large.yaml",
//                                      {.overrides = {{"data_folder", "/data/LibriSpeech"}}});
//   int64_t d_model = hp["d_model"].as_int();
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hparams/registry.h"
#include "hparams/value.h"

namespace masr::hparams {

struct LoadOptions {
  // Top-level overrides, as `--key value` on the command line; each value is YAML text.
  std::vector<std::pair<std::string, std::string>> overrides;
  // A YAML mapping of overrides (`--overrides "{a: 1, b: {c: 2}}"`), applied after `overrides`.
  std::string overrides_yaml;
  // Where `!new:`/`!name:`/`!apply:` names are looked up; the global registry when null.
  const Registry* registry = nullptr;
  // When set, a `!PLACEHOLDER` left without an override becomes this string instead of being an
  // error: for tools that use part of a recipe (e.g. its front end) and not its data paths.
  std::optional<std::string> placeholder_value;
};

// An object made by `!new:` and where it sits in the file.
struct BuiltObject {
  std::string key;  // key path of its first occurrence, e.g. "Transformer" or "modules[CNN]"
  std::shared_ptr<Instance> instance;
};

class Hparams {
 public:
  Hparams() = default;
  Hparams(std::string source, Value root, std::vector<BuiltObject> objects)
      : source_(std::move(source)), root_(std::move(root)), objects_(std::move(objects)) {}

  const std::string& source() const { return source_; }  // the file name, or "<string>"
  const Value& root() const { return root_; }            // a mapping; "__" keys are removed
  const Value& operator[](const std::string& key) const { return root_.at(key); }
  const Value* find(const std::string& key) const { return root_.find(key); }
  const std::vector<BuiltObject>& objects() const { return objects_; }

  // The resolved configuration as YAML that load_text() reads back to the same values. An object
  // referenced twice is written once and then as `!ref <its key>`.
  std::string to_yaml() const;

 private:
  std::string source_;
  Value root_;
  std::vector<BuiltObject> objects_;
};

Hparams load_file(const std::string& path, const LoadOptions& options = {});
Hparams load_text(const std::string& text, const LoadOptions& options = {},
                  const std::string& name = "<string>");

// SpeechBrain's command-line overrides: `--key value` and `--key=value` pairs, in order.
// A lone `--flag` followed by another option (or nothing) is an error naming it.
std::vector<std::pair<std::string, std::string>> parse_override_args(
    const std::vector<std::string>& args);

// Writes a Value as YAML (used by Hparams::to_yaml and by `train` to save hyperparams.yaml).
std::string to_yaml(const Value& value);

}  // namespace masr::hparams
