// lib/core/string_printf.h
// printf into a std::string of any length, with the format checked against the arguments at
// compile time (benchmark notes, report lines).
#pragma once

#include <string>

namespace masr {

std::string string_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace masr
