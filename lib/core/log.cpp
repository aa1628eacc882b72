// lib/core/log.cpp
#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace masr {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_mutex;

const char* prefix(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error: ";
    case LogLevel::kWarn:
      return "warning: ";
    case LogLevel::kDebug:
      return "debug: ";
    default:
      return "";
  }
}

}  // namespace

void set_log_level(LogLevel level) { g_level = static_cast<int>(level); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load()); }
bool log_enabled(LogLevel level) { return static_cast<int>(level) <= g_level.load(); }

void log_message(LogLevel level, const char* format, ...) {
  if (!log_enabled(level)) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fputs(prefix(level), stderr);
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace masr
