// lib/core/log.h
// One logger for the whole program: printf-style, checked at compile time, to stderr.
// Results go to stdout; diagnostics and progress go here, so every subcommand works in a pipe.
#pragma once

#include <cstdarg>

namespace masr {

enum class LogLevel : int { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

void set_log_level(LogLevel level);
LogLevel log_level();
bool log_enabled(LogLevel level);

void log_message(LogLevel level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace masr

#define MASR_LOG_ERROR(...) ::masr::log_message(::masr::LogLevel::kError, __VA_ARGS__)
#define MASR_LOG_WARN(...) ::masr::log_message(::masr::LogLevel::kWarn, __VA_ARGS__)
#define MASR_LOG_INFO(...) ::masr::log_message(::masr::LogLevel::kInfo, __VA_ARGS__)
#define MASR_LOG_DEBUG(...) ::masr::log_message(::masr::LogLevel::kDebug, __VA_ARGS__)
