// lib/train/progress.h
// Training progress on stderr: a live bar on a terminal, plain periodic lines otherwise (CI,
// pipes), nothing when quiet (drawn by masr::ProgressDisplay, which decode shares). Epoch,
// step/total, loss, lr, audio-seconds per second and ETA.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "core/progress_display.h"

namespace masr::train {

class Progress {
 public:
  using Mode = ProgressDisplay::Mode;
  // kBar when stderr is a terminal, kLines otherwise (unless quiet).
  static Mode detect(bool quiet) { return ProgressDisplay::detect(quiet); }
  explicit Progress(Mode mode, double line_interval_seconds = 30.0);

  void start_epoch(int64_t epoch, int64_t epochs, size_t total_batches, size_t first_batch);
  // After batch `done` (1-based count within the epoch).
  void update(size_t done, double loss, double lr, double audio_seconds);
  void end_epoch();
  // One line that is kept (e.g. validation results), printed even between bar redraws.
  void message(const std::string& line);

 private:
  std::string status_line(size_t done) const;
  ProgressDisplay display_;
  int64_t epoch_ = 0, epochs_ = 0;
  size_t total_ = 0, first_ = 0, done_ = 0;
  double loss_ = 0, lr_ = 0, audio_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace masr::train
