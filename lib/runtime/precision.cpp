// lib/runtime/precision.cpp
#include "runtime/precision.h"

#include <cstddef>

#include "core/error.h"

namespace masr::runtime {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kInt8:
      return "int8";
  }
  return "?";
}

namespace {

// "fp32, bf16 or fp16"
std::string name_list(const std::vector<Precision>& allowed) {
  std::string list;
  size_t i = 0;
  for (Precision p : allowed) {
    if (i > 0) list += i + 1 == allowed.size() ? " or " : ", ";
    list += precision_name(p);
    ++i;
  }
  return list;
}

}  // namespace

Precision parse_precision(const std::string& text, const std::string& option,
                          const std::vector<Precision>& allowed) {
  for (Precision p : allowed) {
    if (text == precision_name(p)) return p;
  }
  throw_config_error(option + " '" + text + "' must be " + name_list(allowed));
}

}  // namespace masr::runtime
