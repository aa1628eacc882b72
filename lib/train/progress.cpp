// lib/train/progress.cpp
// The training status line; drawing is ProgressDisplay's.
#include "train/progress.h"

#include <cstdio>

namespace masr::train {

Progress::Progress(Mode mode, double line_interval_seconds)
    : display_(mode, line_interval_seconds) {}

void Progress::start_epoch(int64_t epoch, int64_t epochs, size_t total_batches,
                           size_t first_batch) {
  epoch_ = epoch, epochs_ = epochs, total_ = total_batches, first_ = first_batch;
  done_ = first_batch, audio_ = 0;
  start_ = std::chrono::steady_clock::now();
  display_.restart();
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
  if (display_.mode() == Mode::kQuiet) return;
  const double fraction = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  display_.update(fraction, status_line(done), done == total_);
}

void Progress::end_epoch() { display_.finish(); }

void Progress::message(const std::string& line) { display_.message(line); }

}  // namespace masr::train
