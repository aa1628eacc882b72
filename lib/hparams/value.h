// lib/hparams/value.h
// The resolved value of an hparams entry: a Python-like dynamic value (None, bool, int, float,
// str, list, tuple, dict, an object built by `!new:`, a factory made by `!name:`) that remembers
// where it came from, so every type error can name the file, line and key at fault.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace masr::hparams {

struct Location {
  std::string file;         // empty for values that come from no file (e.g. built in code)
  int line = 0;             // 1-based; 0 when unknown
  std::string str() const;  // "file.yaml:12", "file.yaml", or "<unknown>"
};

struct Instance;  // an object made by `!new:` (registry.h)
struct Partial;   // a factory made by `!name:` (registry.h)

class Value {
 public:
  enum class Type { kNull, kBool, kInt, kFloat, kString, kList, kTuple, kMap, kObject, kFactory };
  using List = std::vector<Value>;
  using Map = std::vector<std::pair<std::string, Value>>;  // keeps the file's key order

  Value() = default;  // None
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value real(double d);
  static Value string(std::string s);
  static Value list(List items);
  static Value tuple(List items);
  static Value map(Map entries);
  static Value object(std::shared_ptr<Instance> instance);
  static Value factory(std::shared_ptr<Partial> partial);

  Type type() const { return type_; }
  static const char* type_name(Type type);  // "int", "str", ... as Python would say
  const char* type_name() const { return type_name(type_); }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool is_sequence() const { return type_ == Type::kList || type_ == Type::kTuple; }
  bool is_map() const { return type_ == Type::kMap; }

  // Typed access. A mismatch throws a config error naming the key, the location and the value.
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // ints convert
  const std::string& as_string() const;
  const List& items() const;  // list or tuple
  const Map& entries() const;
  const std::shared_ptr<Instance>& instance() const;
  const std::shared_ptr<Partial>& partial() const;

  // Map access: find() returns nullptr when absent; at() throws naming the missing key.
  const Value* find(const std::string& key) const;
  const Value& at(const std::string& key) const;
  const Value& operator[](const std::string& key) const { return at(key); }
  bool contains(const std::string& key) const { return find(key) != nullptr; }

  // Python's str(): what `!ref` string interpolation inserts ("True", "None", "1e-09", ...).
  std::string str() const;
  // A short, quoted description for error messages: "'abc' (str)", "3 (int)".
  std::string describe() const;

  // Provenance, for error messages.
  const Location& where() const { return where_; }
  const std::string& key() const { return key_; }  // the key path, e.g. "Transformer[d_model]"
  Value& set_origin(Location where, std::string key);
  std::string origin() const;  // "key 'a[b]' (file.yaml:3)"

 private:
  [[noreturn]] void type_error(const char* expected) const;

  Type type_ = Type::kNull;
  bool bool_ = false;
  int64_t int_ = 0;
  double float_ = 0.0;
  std::string string_;
  std::shared_ptr<List> items_;
  std::shared_ptr<Map> entries_;
  std::shared_ptr<Instance> instance_;
  std::shared_ptr<Partial> partial_;
  Location where_;
  std::string key_;
};

// Python's repr() of a float: the shortest string that reads back to the same double,
// scientific below 1e-4 and from 1e16 ("1e-09", "0.001", "1.0", "1e+16").
std::string python_float_repr(double value);

}  // namespace masr::hparams
