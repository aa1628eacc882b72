// lib/decode/decode_progress.cpp
#include "decode/decode_progress.h"

#include <cstdio>

namespace masr::decode {

std::string decode_status_line(const DecodeCounts& c, double elapsed_seconds) {
  const double rtfx = elapsed_seconds > 0 ? c.audio_done / elapsed_seconds : 0.0;
  const double left = c.audio_total > c.audio_done ? c.audio_total - c.audio_done : 0.0;
  const std::string eta = left <= 0  ? "0s"
                          : rtfx > 0 ? format_duration(left / rtfx)
                                     : std::string("?");
  char line[192];
  std::snprintf(line, sizeof line, "decode %zu/%zu files  %.1f/%.1f s audio  RTFx %.1f  ETA %s",
                c.files_done, c.files_total, c.audio_done, c.audio_total, rtfx, eta.c_str());
  return line;
}

DecodeProgressDisplay::DecodeProgressDisplay(ProgressDisplay::Mode mode,
                                             double line_interval_seconds, std::FILE* out)
    : display_(mode, line_interval_seconds, 0.2, out), start_(std::chrono::steady_clock::now()) {}

void DecodeProgressDisplay::update(const DecodeCounts& counts) {
  if (display_.mode() == ProgressDisplay::Mode::kQuiet) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double fraction = counts.audio_total > 0   ? counts.audio_done / counts.audio_total
                          : counts.files_total > 0 ? static_cast<double>(counts.files_done) /
                                                         static_cast<double>(counts.files_total)
                                                   : 1.0;
  display_.update(fraction, decode_status_line(counts, elapsed),
                  counts.files_done >= counts.files_total);
}

}  // namespace masr::decode
