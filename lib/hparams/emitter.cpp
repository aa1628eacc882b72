// lib/hparams/emitter.cpp
// Values back to YAML (HyperPyYAML syntax), for `--dry-run` and the hyperparams.yaml that
// `train` saves. Strings are quoted whenever plain text would read back as something else.
#include <map>
#include <set>
#include <sstream>

#include "hparams/hparams.h"
#include "hparams/node.h"

namespace masr::hparams {
namespace {

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  if (std::string("-?:,[]{}#&*!|>'\"%@`<").find(s.front()) != std::string::npos) return true;
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  if (s.back() == ':') return true;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20) return true;
  }
  const Value reread = parse_plain_scalar(s, Location{});
  return reread.type() != Value::Type::kString || reread.as_string() != s;
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

class Emitter {
 public:
  std::string run(const Value& root) {
    if (root.is_map()) {
      for (const auto& entry : root.entries()) defined_.insert(entry.first);
      emit_entries(root.entries(), 0, "");
    } else {
      out_ << scalar(root) << "\n";
    }
    return out_.str();
  }

 private:
  static std::string pad(int indent) { return std::string(static_cast<size_t>(indent), ' '); }

  std::string scalar(const Value& v) {
    switch (v.type()) {
      case Value::Type::kNull:
        return "null";
      case Value::Type::kFloat: {
        const std::string repr = v.str();
        if (repr == "inf") return ".inf";
        if (repr == "-inf") return "-.inf";
        if (repr == "nan") return ".nan";
        return repr;
      }
      case Value::Type::kString:
        return needs_quotes(v.as_string()) ? quote(v.as_string()) : v.as_string();
      default:
        return v.str();
    }
  }

  bool is_flat(const Value& v) {
    if (!v.is_sequence()) return false;
    for (const auto& item : v.items()) {
      if (item.is_sequence() || item.is_map() || item.type() == Value::Type::kObject ||
          item.type() == Value::Type::kFactory) {
        return false;
      }
    }
    return true;
  }

  std::string flow(const Value& v) {
    std::string out = v.type() == Value::Type::kTuple ? "(" : "[";
    const auto& items = v.items();
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + scalar(items[i]);
    return out + (v.type() == Value::Type::kTuple ? ")" : "]");
  }

  // Writes what follows "key:" (or "- "): an inline scalar, or a newline and a nested block.
  void emit_value(const Value& v, int indent, const std::string& key) {
    switch (v.type()) {
      case Value::Type::kMap:
        if (v.entries().empty()) {
          out_ << " {}\n";
        } else {
          out_ << "\n";
          emit_entries(v.entries(), indent, key);
        }
        return;
      case Value::Type::kList:
      case Value::Type::kTuple:
        if (is_flat(v)) {
          out_ << " " << flow(v) << "\n";
        } else if (v.type() == Value::Type::kTuple) {
          out_ << " !tuple\n";
          emit_items(v.items(), indent, key);
        } else {
          out_ << "\n";
          emit_items(v.items(), indent, key);
        }
        return;
      case Value::Type::kObject: {
        const Instance* instance = v.instance().get();
        auto seen = seen_.find(instance);
        if (seen != seen_.end()) {
          out_ << " !ref <" << seen->second << ">\n";
          return;
        }
        // Written in full where it is defined; a reference everywhere else (forward or back).
        if (!instance->key.empty() && instance->key != key && defined_.count(instance->key)) {
          out_ << " !ref <" << instance->key << ">\n";
          return;
        }
        seen_[instance] = key;
        emit_call("!new:", instance->info->name, instance->args, indent, key);
        return;
      }
      case Value::Type::kFactory:
        emit_call("!name:", v.partial()->info->name, v.partial()->bound, indent, key);
        return;
      default:
        out_ << " " << scalar(v) << "\n";
    }
  }

  void emit_call(const char* tag, const std::string& name, const Args& args, int indent,
                 const std::string& key) {
    out_ << " " << tag << name;
    if (!args.positional.empty() && args.keywords.empty()) {
      out_ << "\n";
      emit_items(args.positional, indent, key);
    } else if (!args.keywords.empty() && args.positional.empty()) {
      out_ << "\n";
      emit_entries(args.keywords, indent, key);
    } else if (!args.keywords.empty()) {
      out_ << "\n" << pad(indent) << "_args:";
      emit_value(Value::list(args.positional), indent + 4, key + "[_args]");
      out_ << pad(indent) << "_kwargs:";
      emit_value(Value::map(args.keywords), indent + 4, key + "[_kwargs]");
    } else {
      out_ << "\n";
    }
  }

  void emit_entries(const Value::Map& entries, int indent, const std::string& key) {
    for (const auto& [k, child] : entries) {
      out_ << pad(indent) << (needs_quotes(k) ? quote(k) : k) << ":";
      emit_value(child, indent + 4, key.empty() ? k : key + "[" + k + "]");
    }
  }

  void emit_items(const Value::List& items, int indent, const std::string& key) {
    for (size_t i = 0; i < items.size(); ++i) {
      out_ << pad(indent) << "-";
      emit_value(items[i], indent + 4, key + "[" + std::to_string(i) + "]");
    }
  }

  std::ostringstream out_;
  std::map<const Instance*, std::string> seen_;
  std::set<std::string> defined_;  // top-level keys, where objects defined at top level are written
};

}  // namespace

std::string to_yaml(const Value& value) { return Emitter().run(value); }

std::string Hparams::to_yaml() const { return hparams::to_yaml(root_); }

}  // namespace masr::hparams
