// lib/core/progress_display.h
// One status line on stderr for long jobs (training epochs, decoding many files): a bar redrawn in
// place on a terminal, plain lines at intervals otherwise (CI logs, pipes), nothing when quiet.
// What the line says is the caller's; this class decides when and how it is drawn.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace masr {

class ProgressDisplay {
 public:
  enum class Mode { kQuiet, kBar, kLines };
  // kBar when stderr is a terminal, kLines otherwise (unless quiet).
  static Mode detect(bool quiet);

  // Bars are redrawn at most every `bar_interval_seconds`, lines printed at most every
  // `line_interval_seconds` (0: every update), both counted from restart(). `out` is stderr except
  // in tests.
  explicit ProgressDisplay(Mode mode, double line_interval_seconds = 30.0,
                           double bar_interval_seconds = 0.2, std::FILE* out = stderr);

  Mode mode() const { return mode_; }
  // Starts timing the intervals again (a new epoch, a new job).
  void restart();
  // Draws `status` with a bar filled to `fraction` (0..1) when an interval has passed since the
  // last drawing, or always when `force` (the last update of a job).
  void update(double fraction, const std::string& status, bool force = false);
  // A line that is kept (results, warnings), printed on its own line even while a bar is open.
  void message(const std::string& line);
  // Ends an open bar line, so what follows starts on a fresh line.
  void finish();

 private:
  Mode mode_;
  double line_interval_, bar_interval_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point last_draw_;
  bool bar_open_ = false;
};

// "1h02m03s" / "2m05s" / "7s" for an estimated time left (negative or non-finite: "?").
std::string format_duration(double seconds);

}  // namespace masr
