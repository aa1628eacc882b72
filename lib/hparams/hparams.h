// lib/hparams/hparams.h
// Loading SpeechBrain-style hparams files (HyperPyYAML semantics) into resolved Values, with
// SpeechBrain-style overrides. docs/hparams.md describes the language; tests/hparams pin it.
//
//   auto hp = masr::hparams::load_file("hparams/S2S/conmamba_large.yaml",
//                                      {.overrides = {{"data_folder", "/data/LibriSpeech"}}});
//   int64_t d_model = hp["d_model"].as_int();
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
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

// Which top-level keys the program has read through Hparams, and which keys' values refer to
// which (!ref), for Hparams::unread_keys().
struct KeyUse {
  std::set<std::string> read;
  std::map<std::string, std::set<std::string>> refers_to;
};

class Hparams {
 public:
  Hparams() = default;
  Hparams(std::string source, Value root, std::vector<BuiltObject> objects,
          std::map<std::string, std::set<std::string>> refers_to = {})
      : source_(std::move(source)),
        root_(std::move(root)),
        objects_(std::move(objects)),
        use_(std::make_shared<KeyUse>()) {
    use_->refers_to = std::move(refers_to);
  }

  const std::string& source() const { return source_; }  // the file name, or "<string>"
  const Value& root() const { return root_; }            // a mapping; "__" keys are removed
  // Both record `key` as read (unread_keys()).
  const Value& operator[](const std::string& key) const {
    mark_read(key);
    return root_.at(key);
  }
  const Value* find(const std::string& key) const {
    mark_read(key);
    return root_.find(key);
  }
  // Records keys as read without looking them up: settings the program covers its own way.
  void mark_read(const std::string& key) const {
    if (use_) use_->read.insert(key);
  }

  // The top-level keys that nothing uses, in file order: neither read by the program (above) nor
  // referred to, directly or through other references, by a read key or by a "__" key (applied
  // at load). SpeechBrain keeps such keys without a word; `train` warns about them.
  std::vector<std::string> unread_keys() const;
  const std::vector<BuiltObject>& objects() const { return objects_; }

  // The resolved configuration as YAML that load_text() reads back to the same values. An object
  // referenced twice is written once and then as `!ref <its key>`.
  std::string to_yaml() const;

 private:
  std::string source_;
  Value root_;
  std::vector<BuiltObject> objects_;
  std::shared_ptr<KeyUse> use_;  // shared by copies: a key read through any copy counts
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
