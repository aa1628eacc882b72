// tests/hparams/helpers.h
// Shared helpers for the hparams tests: load YAML text and expect errors by message.
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "core/error.h"
#include "hparams/hparams.h"

namespace masr::hparams::testing {

inline Hparams load(const std::string& text, LoadOptions options = {}) {
  return load_text(text, options, "test.yaml");
}

// Loads `text` and requires a config error whose message contains every fragment.
inline std::string load_error(const std::string& text, LoadOptions options = {}) {
  try {
    load(text, options);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kConfig);
    return e.what();
  }
  FAIL("expected an error loading:\n" << text);
  return "";
}

// Structural equality of two values (objects: same class and equal arguments).
inline bool same(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kNull:
      return true;
    case Value::Type::kBool:
      return a.as_bool() == b.as_bool();
    case Value::Type::kInt:
      return a.as_int() == b.as_int();
    case Value::Type::kFloat:
      return a.as_double() == b.as_double();
    case Value::Type::kString:
      return a.as_string() == b.as_string();
    case Value::Type::kList:
    case Value::Type::kTuple: {
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!same(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Type::kMap: {
      if (a.entries().size() != b.entries().size()) return false;
      for (size_t i = 0; i < a.entries().size(); ++i) {
        if (a.entries()[i].first != b.entries()[i].first) return false;
        if (!same(a.entries()[i].second, b.entries()[i].second)) return false;
      }
      return true;
    }
    case Value::Type::kObject:
      return a.instance()->info == b.instance()->info &&
             same(Value::map(a.instance()->args.named), Value::map(b.instance()->args.named));
    case Value::Type::kFactory:
      return a.partial()->info == b.partial()->info &&
             same(Value::map(a.partial()->bound.named), Value::map(b.partial()->bound.named));
  }
  return false;
}

}  // namespace masr::hparams::testing
