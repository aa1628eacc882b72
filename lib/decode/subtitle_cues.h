// lib/decode/subtitle_cues.h
// Words with times grouped into subtitle cues people can read: at most two lines of about 42
// characters, at most about 7 s on screen, split at word boundaries and preferably at pauses, and
// never overlapping (SRT and WebVTT validators reject a cue that starts before the previous ends).
#pragma once

#include <string>
#include <vector>

#include "decode/transcript.h"

namespace masr::decode {

// Limits of one cue (the defaults are common broadcast guidelines, e.g. the BBC's and Netflix's:
// 42 characters a line, 2 lines, 7 s).
struct SubtitleOptions {
  int max_line_chars = 42;       // characters (UTF-8 code points) per line
  int max_lines = 2;             // lines per cue
  double max_cue_seconds = 7.0;  // first word's start to last word's end
  // A silence at least this long between two words always ends a cue (a new sentence, usually).
  double pause_seconds = 0.8;

  void validate() const;  // a config error naming the bad limit
};

struct SubtitleCue {
  long long start_ms = 0;  // times in whole milliseconds, as the formats print them
  long long end_ms = 0;
  std::vector<std::string> lines;  // 1 .. max_lines lines of words
};

// The cues of `words` (in spoken order). A word longer than a line gets a line of its own (words
// are never cut). Times are rounded to milliseconds, then made strictly ordered and
// non-overlapping: each cue starts no earlier than the previous cue ends (a word's start shifted
// earlier than the previous word's end is moved to that end) and lasts at least 1 ms.
std::vector<SubtitleCue> make_subtitle_cues(const std::vector<WordTiming>& words,
                                            const SubtitleOptions& options = {});

// Characters of a UTF-8 string (code points; continuation bytes are not counted).
size_t utf8_length(const std::string& text);

}  // namespace masr::decode
