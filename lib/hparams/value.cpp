// lib/hparams/value.cpp
#include "hparams/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"

namespace masr::hparams {

std::string Location::str() const {
  if (file.empty()) return "<unknown>";
  if (line <= 0) return file;
  return file + ":" + std::to_string(line);
}

Value Value::boolean(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.type_ = Type::kInt;
  v.int_ = i;
  return v;
}

Value Value::real(double d) {
  Value v;
  v.type_ = Type::kFloat;
  v.float_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::list(List items) {
  Value v;
  v.type_ = Type::kList;
  v.items_ = std::make_shared<List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.type_ = Type::kTuple;
  return v;
}

Value Value::map(Map entries) {
  Value v;
  v.type_ = Type::kMap;
  v.entries_ = std::make_shared<Map>(std::move(entries));
  return v;
}

Value Value::object(std::shared_ptr<Instance> instance) {
  Value v;
  v.type_ = Type::kObject;
  v.instance_ = std::move(instance);
  return v;
}

Value Value::factory(std::shared_ptr<Partial> partial) {
  Value v;
  v.type_ = Type::kFactory;
  v.partial_ = std::move(partial);
  return v;
}

const char* Value::type_name(Type type) {
  switch (type) {
    case Type::kNull:
      return "None";
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kFloat:
      return "float";
    case Type::kString:
      return "str";
    case Type::kList:
      return "list";
    case Type::kTuple:
      return "tuple";
    case Type::kMap:
      return "dict";
    case Type::kObject:
      return "object (!new:)";
    case Type::kFactory:
      return "factory (!name:)";
  }
  return "?";
}

void Value::type_error(const char* expected) const {
  throw_config_error("hparams: " + origin() + " must be " + expected + ", but it is " + describe());
}

bool Value::as_bool() const {
  if (type_ != Type::kBool) type_error("a boolean (True or False)");
  return bool_;
}

int64_t Value::as_int() const {
  if (type_ != Type::kInt) type_error("an integer");
  return int_;
}

double Value::as_double() const {
  if (type_ == Type::kInt) return static_cast<double>(int_);
  if (type_ != Type::kFloat) type_error("a number");
  return float_;
}

const std::string& Value::as_string() const {
  if (type_ != Type::kString) type_error("a string");
  return string_;
}

const Value::List& Value::items() const {
  if (!is_sequence()) type_error("a list or tuple");
  return *items_;
}

const Value::Map& Value::entries() const {
  if (type_ != Type::kMap) type_error("a mapping");
  return *entries_;
}

const std::shared_ptr<Instance>& Value::instance() const {
  if (type_ != Type::kObject) type_error("an object (!new:)");
  return instance_;
}

const std::shared_ptr<Partial>& Value::partial() const {
  if (type_ != Type::kFactory) type_error("a factory (!name:)");
  return partial_;
}

const Value* Value::find(const std::string& key) const {
  for (const auto& [k, v] : entries()) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Value& Value::at(const std::string& key) const {
  const Value* v = find(key);
  if (v == nullptr) {
    std::string known;
    for (const auto& entry : *entries_) known += (known.empty() ? "" : ", ") + entry.first;
    throw_config_error("hparams: " + origin() + " has no key '" + key + "' (keys: " + known + ")");
  }
  return *v;
}

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  // Shortest round-trip digits, as Python's repr.
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*e", precision - 1, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  // buf is "[-]d.ddde[+-]XX": split digits and exponent.
  std::string s(buf);
  const bool negative = s[0] == '-';
  if (negative) s.erase(0, 1);
  const size_t e_pos = s.find('e');
  const int exponent = std::atoi(s.c_str() + e_pos + 1);
  std::string digits = s.substr(0, e_pos);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();

  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    out += exp_buf;
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    const size_t int_len = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return negative ? "-" + out : out;
}

std::string Value::str() const {
  switch (type_) {
    case Type::kNull:
      return "None";
    case Type::kBool:
      return bool_ ? "True" : "False";
    case Type::kInt:
      return std::to_string(int_);
    case Type::kFloat:
      return python_float_repr(float_);
    case Type::kString:
      return string_;
    case Type::kList:
    case Type::kTuple: {
      std::string out = type_ == Type::kList ? "[" : "(";
      for (size_t i = 0; i < items_->size(); ++i) {
        const Value& item = (*items_)[i];
        out +=
            (i ? ", " : "") + (item.type_ == Type::kString ? "'" + item.string_ + "'" : item.str());
      }
      if (type_ == Type::kTuple && items_->size() == 1) out += ",";
      return out + (type_ == Type::kList ? "]" : ")");
    }
    case Type::kMap: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, v] : *entries_) {
        out += (first ? "'" : ", '") + k +
               "': " + (v.type_ == Type::kString ? "'" + v.string_ + "'" : v.str());
        first = false;
      }
      return out + "}";
    }
    case Type::kObject:
      return "<object>";
    case Type::kFactory:
      return "<factory>";
  }
  return "";
}

std::string Value::describe() const {
  switch (type_) {
    case Type::kString:
      return "'" + string_ + "' (str)";
    case Type::kObject:
    case Type::kFactory:
    case Type::kNull:
      return type_name();
    default:
      return str() + " (" + type_name() + ")";
  }
}

Value& Value::set_origin(Location where, std::string key) {
  where_ = std::move(where);
  key_ = std::move(key);
  return *this;
}

std::string Value::origin() const {
  std::string out = key_.empty() ? "a value" : "key '" + key_ + "'";
  if (!where_.file.empty()) out += " (" + where_.str() + ")";
  return out;
}

}  // namespace masr::hparams
