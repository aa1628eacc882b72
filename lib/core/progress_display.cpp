// lib/core/progress_display.cpp
// Progress drawing (stderr, so results on stdout stay clean).
#include "core/progress_display.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace masr {

ProgressDisplay::Mode ProgressDisplay::detect(bool quiet) {
  if (quiet) return Mode::kQuiet;
  return ::isatty(STDERR_FILENO) ? Mode::kBar : Mode::kLines;
}

ProgressDisplay::ProgressDisplay(Mode mode, double line_interval_seconds,
                                 double bar_interval_seconds, std::FILE* out)
    : mode_(mode),
      line_interval_(line_interval_seconds),
      bar_interval_(bar_interval_seconds),
      out_(out),
      last_draw_(std::chrono::steady_clock::now()) {}

void ProgressDisplay::restart() { last_draw_ = std::chrono::steady_clock::now(); }

void ProgressDisplay::update(double fraction, const std::string& status, bool force) {
  if (mode_ == Mode::kQuiet) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (mode_ == Mode::kBar) {
    if (since < bar_interval_ && !force) return;
    constexpr int kWidth = 24;
    const double f = std::isfinite(fraction) ? std::clamp(fraction, 0.0, 1.0) : 0.0;
    const int filled = static_cast<int>(kWidth * f + 1e-9);
    std::fprintf(out_, "\r[%.*s%*s] %s\033[K", filled, "########################", kWidth - filled,
                 "", status.c_str());
    bar_open_ = true;
  } else {
    if (since < line_interval_ && !force) return;
    std::fprintf(out_, "%s\n", status.c_str());
  }
  std::fflush(out_);
  last_draw_ = now;
}

void ProgressDisplay::finish() {
  if (bar_open_) {
    std::fprintf(out_, "\n");
    std::fflush(out_);
  }
  bar_open_ = false;
}

void ProgressDisplay::message(const std::string& line) {
  if (mode_ == Mode::kQuiet) return;
  finish();
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char out[32];
  if (s >= 3600) {
    std::snprintf(out, sizeof out, "%lldh%02lldm%02llds", s / 3600, s / 60 % 60, s % 60);
  } else if (s >= 60) {
    std::snprintf(out, sizeof out, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(out, sizeof out, "%llds", s);
  }
  return out;
}

}  // namespace masr
