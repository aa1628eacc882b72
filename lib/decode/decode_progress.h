// lib/decode/decode_progress.h
// Progress of `mamba-asr decode` on stderr: files done of all, audio seconds decoded, RTFx and
// the time left, as a bar on a terminal and plain lines at intervals otherwise (ProgressDisplay).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "core/progress_display.h"

namespace masr::decode {

// Where a files-to-text job stands (transcribe_files reports it after every batch).
struct DecodeCounts {
  size_t files_done = 0;    // decoded or failed
  size_t files_total = 0;   // readable headers
  double audio_done = 0.0;  // seconds of audio decoded
  double audio_total = 0.0;
};

// "decode 12/40 files  57.3/210.0 s audio  RTFx 23.1  ETA 7s" after `elapsed_seconds`. RTFx is
// audio seconds per second of wall time; the ETA assumes the rest decodes at the same rate (by
// audio, not by files: batches go longest first).
std::string decode_status_line(const DecodeCounts& counts, double elapsed_seconds);

class DecodeProgressDisplay {
 public:
  // Lines every `line_interval_seconds` when stderr is not a terminal.
  explicit DecodeProgressDisplay(ProgressDisplay::Mode mode, double line_interval_seconds = 10.0,
                                 std::FILE* out = stderr);
  // Draws the counts (always when all files are done); times from construction.
  void update(const DecodeCounts& counts);
  void finish() { display_.finish(); }

 private:
  ProgressDisplay display_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace masr::decode
