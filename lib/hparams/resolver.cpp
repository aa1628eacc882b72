// lib/hparams/resolver.cpp
// Reference resolution with HyperPyYAML semantics (speechbrain/HyperPyYAML core.py):
//  - `!ref <a[b]>` alone returns the referenced node itself, so objects are shared, not copied;
//  - `!ref text <a> text` substitutes Python's str() of each value, then evaluates arithmetic;
//  - `!copy <a>` returns a deep copy (a separate object);
//  - references may point forward and through other references; cycles are errors.
// One deliberate difference: a `!ref` with no `<...>` (Mamba-ASR's `lr_adam: !ref 0.001`) is
// evaluated as arithmetic too, so it is the number 0.001 rather than the string "0.001" that
// would make the optimizer fail. docs/hparams.md lists the differences.
#include "hparams/resolver.h"

#include <filesystem>
#include <map>
#include <optional>
#include <regex>

#include "core/error.h"
#include "core/suggest.h"

namespace masr::hparams {
namespace {

namespace fs = std::filesystem;

// Resolution recurses through references; bounding the depth turns a pathological file into an
// error instead of a stack overflow. Each level takes three frames (resolve, resolve_reference,
// lookup); 1000 levels overflowed the 8 MB main stack under AddressSanitizer, whose frames are
// larger. Real recipes nest a handful of levels.
constexpr size_t kMaxDepth = 256;

std::vector<std::string> keys_of(const Node& node) {
  std::vector<std::string> keys;
  for (const auto& entry : node.entries) keys.push_back(entry.first);
  return keys;
}

NodePtr deep_copy(const NodePtr& node, std::map<const Node*, NodePtr>& memo) {
  if (node->resolved_to) return deep_copy(node->resolved_to, memo);
  auto found = memo.find(node.get());
  if (found != memo.end()) return found->second;
  auto copy = std::make_shared<Node>(*node);
  memo[node.get()] = copy;
  for (auto& item : copy->items) item = deep_copy(item, memo);
  for (auto& entry : copy->entries) entry.second = deep_copy(entry.second, memo);
  return copy;
}

NodePtr scalar_node(Value value, const Location& where) {
  auto node = std::make_shared<Node>();
  node->kind = Node::Kind::kScalar;
  value.set_origin(where, "");
  node->value = std::move(value);
  node->where = where;
  node->state = Node::State::kResolved;
  return node;
}

class Resolver {
 public:
  Resolver(NodePtr root, std::string base_dir, NodePtr overrides,
           std::vector<std::string>& include_stack, std::optional<std::string> placeholder_value,
           std::map<std::string, std::set<std::string>>* refers_to = nullptr)
      : root_(std::move(root)),
        base_dir_(std::move(base_dir)),
        overrides_(std::move(overrides)),
        include_stack_(include_stack),
        placeholder_value_(std::move(placeholder_value)),
        refers_to_(refers_to) {}

  void run() {
    for (auto& [key, child] : root_->entries) child = resolve(child, key);
    root_->state = Node::State::kResolved;
  }

 private:
  NodePtr resolve(const NodePtr& node, const std::string& path) {
    if (node->resolved_to) return node->resolved_to;
    if (node->state == Node::State::kResolved) return node;
    if (node->state == Node::State::kResolving) {
      std::string chain;
      for (const auto& step : chain_) chain += step + " -> ";
      throw_config_error("hparams: " + node->where.str() + ": reference cycle: " + chain + path +
                         " (a value cannot refer to itself or contain a reference to itself)");
    }
    node->state = Node::State::kResolving;
    chain_.push_back(path);
    if (chain_.size() > kMaxDepth) {
      throw_config_error("hparams: " + node->where.str() + ": '" + path + "': references and " +
                         "nesting go more than " + std::to_string(kMaxDepth) +
                         " levels deep (a chain of references this long is almost surely a "
                         "mistake)");
    }

    for (size_t i = 0; i < node->items.size(); ++i) {
      node->items[i] = resolve(node->items[i], path + "[" + std::to_string(i) + "]");
    }
    for (auto& [key, child] : node->entries) child = resolve(child, path + "[" + key + "]");

    NodePtr result = node;
    if (node->tag == "!PLACEHOLDER" && placeholder_value_) {
      // Tools that need only part of a recipe (the front end) load it without its data paths.
      result = scalar_node(Value::string(*placeholder_value_), node->where);
    } else if (node->tag == "!PLACEHOLDER") {
      const std::string top = path.substr(0, path.find('['));
      throw_config_error("hparams: " + node->where.str() + ": '" + path +
                         "' is a !PLACEHOLDER and must be given a value, e.g. on the command "
                         "line: --" +
                         top + " VALUE");
    } else if (node->tag == "!ref" || node->tag == "!copy") {
      result = resolve_reference(*node, path, node->tag == "!copy");
    } else if (node->tag.rfind("!include:", 0) == 0) {
      result = include(*node, path);
    }

    chain_.pop_back();
    node->state = Node::State::kResolved;
    if (result != node) node->resolved_to = result;
    return result;
  }

  NodePtr resolve_reference(const Node& node, const std::string& path, bool copy) {
    if (!node.is_scalar()) {
      throw_config_error("hparams: " + node.where.str() + ": '" + path + "': " + node.tag +
                         " takes a scalar such as <key> or <a[b]>, not a list or mapping");
    }
    static const std::regex reference("<[^>]*>");
    const std::string& text = node.text;
    std::smatch match;
    if (!std::regex_search(text, match, reference)) {
      auto number = evaluate_arithmetic(text, node.where);
      return scalar_node(number ? *number : Value::string(text), node.where);
    }
    if (match.position(0) == 0 && static_cast<size_t>(match.length(0)) == text.size()) {
      NodePtr target = lookup(text.substr(1, text.size() - 2), node, path);
      if (!copy) return target;
      std::map<const Node*, NodePtr> memo;
      return deep_copy(target, memo);
    }
    // Interpolation: substitute str() of every referenced value, then try arithmetic.
    std::string out;
    auto begin = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), reference), end; it != end; ++it) {
      out.append(begin, text.cbegin() + it->position(0));
      const std::string name = it->str().substr(1, it->length(0) - 2);
      NodePtr target = lookup(name, node, path);
      if (!target->is_scalar() || !target->tag.empty()) {
        throw_config_error("hparams: " + node.where.str() + ": '" + path + "': cannot insert <" +
                           name + "> into the string '" + text + "': it is a " +
                           (target->tag.empty() ? "list or mapping" : target->tag) +
                           ", not a plain value");
      }
      out += target->value.str();
      begin = text.cbegin() + it->position(0) + it->length(0);
    }
    out.append(begin, text.cend());
    auto number = evaluate_arithmetic(out, node.where);
    return scalar_node(number ? *number : Value::string(out), node.where);
  }

  // Finds `a[b][0]` in the tree, resolving what it passes through.
  NodePtr lookup(const std::string& reference, const Node& from, const std::string& from_path) {
    if (reference.find('.') != std::string::npos) {
      throw_config_error("hparams: " + from.where.str() + ": '" + from_path + "': <" + reference +
                         "> refers to an attribute; mamba-asr supports key references only "
                         "(<key> or <key[subkey]>)");
    }
    std::vector<std::string> parts;
    const size_t bracket = reference.find('[');
    parts.push_back(reference.substr(0, bracket));
    if (refers_to_ != nullptr) {
      (*refers_to_)[from_path.substr(0, from_path.find('['))].insert(parts.front());
    }
    for (size_t pos = bracket; pos != std::string::npos && pos < reference.size();) {
      const size_t close = reference.find(']', pos);
      if (reference[pos] != '[' || close == std::string::npos) {
        throw_config_error("hparams: " + from.where.str() + ": '" + from_path +
                           "': malformed reference <" + reference + ">");
      }
      parts.push_back(reference.substr(pos + 1, close - pos - 1));
      pos = close + 1;
    }

    NodePtr current = root_;
    std::string path;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string& part = parts[i];
      NodePtr* slot = nullptr;
      if (current->is_mapping()) {
        slot = current->find(part);
      } else if (current->is_sequence()) {
        char* end = nullptr;
        const long index = std::strtol(part.c_str(), &end, 10);
        if (end != part.c_str() && *end == '\0' && index >= 0 &&
            static_cast<size_t>(index) < current->items.size()) {
          slot = &current->items[static_cast<size_t>(index)];
        }
      }
      const std::string child_path = i == 0 ? part : path + "[" + part + "]";
      if (slot == nullptr) {
        std::string hint;
        if (current->is_mapping()) hint = did_you_mean(part, keys_of(*current));
        throw_config_error("hparams: " + from.where.str() + ": '" + from_path + "' refers to <" +
                           reference + ">, but '" + child_path + "' does not exist." + hint);
      }
      const bool last = i + 1 == parts.size();
      NodePtr child = *slot;
      const bool container = child->is_mapping() || child->is_sequence();
      // Descend into containers without resolving them whole, so `a: {x: 1, y: !ref <a[x]>}`
      // works; resolve what the reference ends on, and any `!ref`/`!include:` on the way.
      if (last || !container || child->tag.rfind("!include:", 0) == 0 || child->resolved_to) {
        child = resolve(child, child_path);
        *slot = child;
      }
      current = child;
      path = child_path;
    }
    return current;
  }

  NodePtr include(const Node& node, const std::string& path) {
    const std::string name = node.tag.substr(std::string("!include:").size());
    fs::path file(name);
    if (file.is_relative() && !base_dir_.empty()) file = fs::path(base_dir_) / file;
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(file, ec).string();
    for (const auto& open : include_stack_) {
      if (open == canonical) {
        throw_config_error("hparams: " + node.where.str() + ": '" + path + "' includes '" +
                           file.string() + "', which is already being included (include cycle)");
      }
    }
    if (!fs::exists(file)) {
      throw_config_error("hparams: " + node.where.str() + ": '" + path + "' includes '" +
                         file.string() + "', which does not exist");
    }
    // The include's mapping body overrides the included file's keys; so do our own overrides.
    NodePtr overrides = std::make_shared<Node>();
    overrides->kind = Node::Kind::kMapping;
    if (overrides_) apply_overrides(overrides, overrides_, false, "");
    if (node.is_mapping()) {
      auto body = std::make_shared<Node>(node);
      body->tag.clear();
      apply_overrides(overrides, body, false, "");
    }
    NodePtr included = read_yaml_file(file.string());
    if (!included->is_mapping()) {
      throw_config_error("hparams: " + file.string() + " (included at " + node.where.str() +
                         ") must be a mapping of keys");
    }
    apply_overrides(included, overrides, false, file.string());
    include_stack_.push_back(canonical);
    Resolver(included, file.parent_path().string(), overrides, include_stack_, placeholder_value_)
        .run();
    include_stack_.pop_back();
    return included;
  }

  NodePtr root_;
  std::string base_dir_;
  NodePtr overrides_;
  std::vector<std::string>& include_stack_;
  std::optional<std::string> placeholder_value_;
  std::map<std::string, std::set<std::string>>* refers_to_ = nullptr;  // top-level key -> keys
  std::vector<std::string> chain_;
};

}  // namespace

void apply_overrides(const NodePtr& target, const NodePtr& overrides, bool must_match,
                     const std::string& target_name) {
  if (!overrides->is_mapping()) {
    throw_config_error("hparams: overrides (" + overrides->where.str() +
                       ") must be a mapping of keys to values, e.g. \"{seed: 1, lr_adam: 0.001}\"");
  }
  for (const auto& [key, value] : overrides->entries) {
    NodePtr* slot = target->find(key);
    if (slot != nullptr && value->is_mapping() && (*slot)->is_mapping() && value->tag.empty()) {
      apply_overrides(*slot, value, false, target_name);
    } else if (slot != nullptr) {
      *slot = value;
    } else if (must_match) {
      throw_config_error("hparams: the override '" + key + "' matches no top-level key of " +
                         target_name + "." + did_you_mean(key, keys_of(*target)) +
                         " (overrides replace keys the file defines; add the key to the file to "
                         "introduce a new one)");
    } else {
      target->entries.emplace_back(key, value);
    }
  }
}

void resolve_references(const NodePtr& root, const std::string& base_dir, const NodePtr& overrides,
                        std::vector<std::string>& include_stack,
                        const std::optional<std::string>& placeholder_value,
                        std::map<std::string, std::set<std::string>>* refers_to) {
  Resolver(root, base_dir, overrides, include_stack, placeholder_value, refers_to).run();
}

}  // namespace masr::hparams
