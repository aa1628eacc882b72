// lib/hparams/node.h
// The parsed, not yet resolved hparams tree: YAML nodes with their tags and source locations.
// Internal to the hparams engine (reader -> resolver -> builder).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hparams/value.h"

namespace masr::hparams {

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node {
  enum class Kind { kScalar, kSequence, kMapping };
  enum class State { kRaw, kResolving, kResolved };

  Kind kind = Kind::kScalar;
  std::string tag;   // "" when untagged; else "!ref", "!new:torch.nn.GELU", "!PLACEHOLDER", ...
  std::string text;  // the scalar's text, for tagged scalars
  Value value;       // the typed value, for untagged scalars
  std::vector<NodePtr> items;                            // kSequence
  std::vector<std::pair<std::string, NodePtr>> entries;  // kMapping, in file order
  Location where;

  State state = State::kRaw;
  NodePtr resolved_to;  // a `!ref` node points at what it resolved to

  bool is_mapping() const { return kind == Kind::kMapping; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  NodePtr* find(const std::string& key);  // a mapping's entry, or nullptr
};

// Reads YAML text into a Node tree; `name` is the file name used in locations and errors.
NodePtr read_yaml_text(const std::string& text, const std::string& name);
NodePtr read_yaml_file(const std::string& path);

// Types a plain (unquoted, untagged) scalar by YAML 1.2's core schema, as Python would see it:
// null/~ -> None, true/True/TRUE -> bool, 12 / 0x1f / 0o17 -> int, 1.5 / 1e-9 / .inf -> float,
// "(a, b)" -> tuple (HyperPyYAML's implicit tuples), anything else -> str.
Value parse_plain_scalar(const std::string& text, const Location& where);

// Evaluates HyperPyYAML's `!ref` arithmetic on a fully interpolated string with Python semantics
// (int/float, `+ - * / // ** %`, unary minus, parentheses). Returns nullopt when the text is not
// an arithmetic expression (it then stays a string). Division by zero is a config error.
std::optional<Value> evaluate_arithmetic(const std::string& text, const Location& where);

}  // namespace masr::hparams
