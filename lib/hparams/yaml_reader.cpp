// lib/hparams/yaml_reader.cpp
// yaml-cpp -> Node tree, keeping tags and line numbers, and typing plain scalars.
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "hparams/node.h"

namespace masr::hparams {
namespace {

const std::regex& int_pattern() {
  static const std::regex re(R"([-+]?[0-9]+)");
  return re;
}
const std::regex& float_pattern() {
  static const std::regex re(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  return re;
}

Location location_of(const YAML::Node& node, const std::string& name) {
  return Location{name, node.Mark().line >= 0 ? node.Mark().line + 1 : 0};
}

NodePtr convert(const YAML::Node& yaml, const std::string& name) {
  auto node = std::make_shared<Node>();
  node->where = location_of(yaml, name);
  const std::string& tag = yaml.Tag();
  // yaml-cpp reports "?" for plain untagged nodes and "!" for quoted scalars.
  const bool tagged = !tag.empty() && tag != "?" && tag != "!";
  if (tagged) node->tag = tag;
  switch (yaml.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      node->kind = Node::Kind::kScalar;
      node->value.set_origin(node->where, "");
      break;
    case YAML::NodeType::Scalar:
      node->kind = Node::Kind::kScalar;
      node->text = yaml.Scalar();
      if (tag == "!" || tag == "tag:yaml.org,2002:str") {
        node->value = Value::string(yaml.Scalar());
        node->tag.clear();
      } else if (!tagged) {
        node->value = parse_plain_scalar(yaml.Scalar(), node->where);
      }
      break;
    case YAML::NodeType::Sequence:
      node->kind = Node::Kind::kSequence;
      for (const auto& item : yaml) node->items.push_back(convert(item, name));
      break;
    case YAML::NodeType::Map:
      node->kind = Node::Kind::kMapping;
      for (auto it = yaml.begin(); it != yaml.end(); ++it) {
        if (!it->first.IsScalar()) {
          throw_config_error("hparams: " + location_of(it->first, name).str() +
                             ": mapping keys must be plain strings");
        }
        const std::string key = it->first.Scalar();
        if (node->find(key) != nullptr) {
          throw_config_error("hparams: " + location_of(it->first, name).str() + ": the key '" +
                             key + "' appears twice in the same mapping");
        }
        node->entries.emplace_back(key, convert(it->second, name));
      }
      break;
  }
  return node;
}

std::optional<int64_t> parse_int(const std::string& text) {
  std::string digits = text;
  int base = 10;
  bool negative = false;
  if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
    negative = digits[0] == '-';
    digits.erase(0, 1);
  }
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o')) {
    base = digits[1] == 'x' ? 16 : 8;
    digits.erase(0, 2);
    static const std::regex hex("[0-9a-fA-F]+"), oct("[0-7]+");
    if (!std::regex_match(digits, base == 16 ? hex : oct)) return std::nullopt;
  } else if (!std::regex_match(text, int_pattern())) {
    return std::nullopt;
  }
  errno = 0;
  const unsigned long long magnitude = std::strtoull(digits.c_str(), nullptr, base);
  if (errno == ERANGE || magnitude > 9223372036854775808ULL ||
      (!negative && magnitude > 9223372036854775807ULL)) {
    return std::nullopt;
  }
  return negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
}

}  // namespace

NodePtr* Node::find(const std::string& key) {
  for (auto& entry : entries) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

Value parse_plain_scalar(const std::string& text, const Location& where) {
  Value v;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    v = Value();
  } else if (text == "true" || text == "True" || text == "TRUE") {
    v = Value::boolean(true);
  } else if (text == "false" || text == "False" || text == "FALSE") {
    v = Value::boolean(false);
  } else if (auto i = parse_int(text)) {
    v = Value::integer(*i);
  } else if (std::regex_match(text, int_pattern())) {
    throw_config_error("hparams: " + where.str() + ": the integer " + text +
                       " does not fit in 64 bits");
  } else if (std::regex_match(text, float_pattern())) {
    v = Value::real(std::strtod(text.c_str(), nullptr));
  } else if (text == ".inf" || text == ".Inf" || text == ".INF" || text == "+.inf") {
    v = Value::real(INFINITY);
  } else if (text == "-.inf" || text == "-.Inf" || text == "-.INF") {
    v = Value::real(-INFINITY);
  } else if (text == ".nan" || text == ".NaN" || text == ".NAN") {
    v = Value::real(NAN);
  } else if (text.size() >= 2 && text.front() == '(' && text.back() == ')') {
    // HyperPyYAML's implicit tuple: the inside is read as a flow sequence.
    NodePtr inner;
    try {
      inner = convert(YAML::Load("[" + text.substr(1, text.size() - 2) + "]"), where.file);
    } catch (const YAML::Exception& e) {
      throw_config_error("hparams: " + where.str() + ": cannot read the tuple " + text + ": " +
                         e.msg);
    }
    Value::List items;
    for (const auto& item : inner->items) {
      if (!item->is_scalar() || !item->tag.empty()) {
        throw_config_error("hparams: " + where.str() + ": the tuple " + text +
                           " may only hold plain values (numbers, strings, booleans)");
      }
      items.push_back(item->value);
    }
    v = Value::tuple(std::move(items));
  } else {
    v = Value::string(text);
  }
  v.set_origin(where, "");
  return v;
}

NodePtr read_yaml_text(const std::string& text, const std::string& name) {
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsDefined() || root.IsNull()) {
      auto empty = std::make_shared<Node>();
      empty->kind = Node::Kind::kMapping;
      empty->where = Location{name, 1};
      return empty;
    }
    return convert(root, name);
  } catch (const YAML::DeepRecursion& e) {
    throw_config_error("hparams: " + name + ":" + std::to_string(e.mark.line + 1) +
                       ": invalid YAML: lists or mappings are nested too deeply");
  } catch (const YAML::Exception& e) {
    throw_config_error("hparams: " + name + ":" + std::to_string(e.mark.line + 1) +
                       ": invalid YAML: " + e.msg);
  }
}

NodePtr read_yaml_file(const std::string& path) {
  // Only regular files of sane size: a device (/dev/zero) or a huge file would never finish.
  constexpr std::uintmax_t kMaxBytes = 16u << 20;
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw_config_error("hparams: '" + path + "' is not a regular file");
  }
  if (!ec && std::filesystem::exists(status) && std::filesystem::file_size(path, ec) > kMaxBytes) {
    throw_config_error("hparams: '" + path + "' is larger than 16 MiB; an hparams file is text");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw_config_error("hparams: cannot open '" + path + "': " + std::strerror(errno) +
                       " (check the path)");
  }
  std::ostringstream text;
  text << in.rdbuf();
  return read_yaml_text(text.str(), path);
}

}  // namespace masr::hparams
