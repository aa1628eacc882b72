// lib/train/progress.cpp
// Progress rendering (stderr, so results on stdout stay clean).
#include "train/progress.h"

#include <unistd.h>

#include <cstdio>

namespace masr::train {

Progress::Mode Progress::detect(bool quiet) {
  if (quiet) return Mode::kQuiet;
  return ::isatty(STDERR_FILENO) ? Mode::kBar : Mode::kLines;
}

Progress::Progress(Mode mode, double line_interval_seconds)
    : mode_(mode), line_interval_(line_interval_seconds) {}

void Progress::start_epoch(int64_t epoch, int64_t epochs, size_t total_batches,
                           size_t first_batch) {
  epoch_ = epoch, epochs_ = epochs, total_ = total_batches, first_ = first_batch;
  done_ = first_batch, audio_ = 0;
  start_ = last_print_ = std::chrono::steady_clock::now();
}

std::string Progress::status_line(size_t done) const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const size_t processed = done > first_ ? done - first_ : 0;
  const double eta = processed > 0 ? elapsed / processed * static_cast<double>(total_ - done) : 0;
  char line[256];
  std::snprintf(line, sizeof(line),
                "epoch %lld/%lld  %zu/%zu  loss %.4f  lr %.2e  %.1f audio-s/s  ETA %dm%02ds",
                static_cast<long long>(epoch_), static_cast<long long>(epochs_), done, total_,
                loss_, lr_, elapsed > 0 ? audio_ / elapsed : 0.0, static_cast<int>(eta) / 60,
                static_cast<int>(eta) % 60);
  return line;
}

void Progress::update(size_t done, double loss, double lr, double audio_seconds) {
  done_ = done, loss_ = loss, lr_ = lr, audio_ += audio_seconds;
  if (mode_ == Mode::kQuiet) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  if (mode_ == Mode::kBar) {
    if (since < 0.2 && done != total_) return;
    const int width = 24;
    const int filled = total_ ? static_cast<int>(width * done / total_) : width;
    std::fprintf(stderr, "\r[%.*s%*s] %s\033[K", filled, "########################", width - filled,
                 "", status_line(done).c_str());
    bar_open_ = true;
  } else {
    if (since < line_interval_ && done != total_) return;
    std::fprintf(stderr, "%s\n", status_line(done).c_str());
  }
  std::fflush(stderr);
  last_print_ = now;
}

void Progress::end_epoch() {
  if (bar_open_) std::fprintf(stderr, "\n");
  bar_open_ = false;
}

void Progress::message(const std::string& line) {
  if (mode_ == Mode::kQuiet) return;
  if (bar_open_) std::fprintf(stderr, "\n");
  bar_open_ = false;
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace masr::train
