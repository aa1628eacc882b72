// lib/hparams/hparams.cpp
#include "hparams/hparams.h"

#include <filesystem>

#include "core/error.h"
#include "hparams/builder.h"
#include "hparams/node.h"
#include "hparams/resolver.h"

namespace masr::hparams {
namespace {

Hparams load(NodePtr root, const std::string& name, const std::string& base_dir,
             const LoadOptions& options) {
  if (!root->is_mapping()) {
    throw_config_error("hparams: " + name + " must be a mapping of keys to values (key: value)");
  }
  // Overrides are applied before references resolve, so `--seed 1` changes `<seed>` everywhere.
  NodePtr overrides = std::make_shared<Node>();
  overrides->kind = Node::Kind::kMapping;
  for (const auto& [key, text] : options.overrides) {
    NodePtr value = read_yaml_text("value: " + text, "--" + key);
    NodePtr parsed = *value->find("value");
    NodePtr one = std::make_shared<Node>();
    one->kind = Node::Kind::kMapping;
    one->entries.emplace_back(key, parsed);
    apply_overrides(overrides, one, false, "");
  }
  if (!options.overrides_yaml.empty()) {
    apply_overrides(overrides, read_yaml_text(options.overrides_yaml, "--overrides"), false, "");
  }
  apply_overrides(root, overrides, /*must_match=*/true, name);

  std::vector<std::string> include_stack;
  if (name != "<string>") {
    std::error_code ec;
    include_stack.push_back(std::filesystem::weakly_canonical(name, ec).string());
  }
  std::map<std::string, std::set<std::string>> refers_to;
  resolve_references(root, base_dir, overrides, include_stack, options.placeholder_value,
                     &refers_to);

  const Registry& registry = options.registry ? *options.registry : Registry::global();
  std::vector<BuiltObject> objects;
  Value values = build_values(root, registry, objects);
  return Hparams(name, std::move(values), std::move(objects), std::move(refers_to));
}

}  // namespace

std::vector<std::string> Hparams::unread_keys() const {
  std::set<std::string> used;
  std::vector<std::string> pending;
  auto use = [&](const std::string& key) {
    if (used.insert(key).second) pending.push_back(key);
  };
  if (use_) {
    for (const auto& key : use_->read) use(key);
    for (const auto& [key, targets] : use_->refers_to) {
      if (key.rfind("__", 0) == 0) use(key);
    }
    while (!pending.empty()) {
      const std::string key = pending.back();
      pending.pop_back();
      const auto it = use_->refers_to.find(key);
      if (it == use_->refers_to.end()) continue;
      for (const auto& target : it->second) use(target);
    }
  }
  std::vector<std::string> unread;
  for (const auto& [key, value] : root_.entries()) {
    if (used.count(key) == 0) unread.push_back(key);
  }
  return unread;
}

Hparams load_file(const std::string& path, const LoadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw_config_error("hparams: '" + path + "' is a folder; give an hparams .yaml file");
  }
  NodePtr root = read_yaml_file(path);
  return load(root, path, std::filesystem::path(path).parent_path().string(), options);
}

Hparams load_text(const std::string& text, const LoadOptions& options, const std::string& name) {
  return load(read_yaml_text(text, name), name, "", options);
}

std::vector<std::pair<std::string, std::string>> parse_override_args(
    const std::vector<std::string>& args) {
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.size() < 3 || arg.rfind("--", 0) != 0) {
      throw Error(ErrorKind::kUsage, "unexpected argument '" + arg +
                                         "': hparams overrides take the form --key value or "
                                         "--key=value");
    }
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      out.emplace_back(arg.substr(2, eq - 2), arg.substr(eq + 1));
      continue;
    }
    if (i + 1 >= args.size()) {
      throw Error(ErrorKind::kUsage,
                  "the option '" + arg + "' needs a value (hparams override: " + arg + " VALUE)");
    }
    out.emplace_back(arg.substr(2), args[++i]);
  }
  return out;
}

}  // namespace masr::hparams
