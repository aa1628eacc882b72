// lib/decode/subtitle_cues.cpp
// Cue grouping (greedy, with a look back for a pause when a cue is full), balanced line breaking
// and the non-overlap repair of cue times.
#include "decode/subtitle_cues.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace masr::decode {
namespace {

// A cue whose break would otherwise fall at the word that does not fit moves the break back to
// an earlier pause when that pause is this much longer (seconds) and the cue keeps at least half
// its text: "split at pauses" without making cues tiny.
constexpr double kPreferredPauseMargin = 0.15;

// Line breaking of words [0, n): fewest lines, then the smallest longest line, then the shorter
// line on top (the usual "pyramid" shape). Lines hold at most `limit` characters, except a line of
// one word longer than that.
class LineBreaker {
 public:
  LineBreaker(const std::vector<size_t>& lengths, size_t limit)
      : lengths_(lengths), limit_(limit) {}

  // Word counts per line, or empty when the words need more than `max_lines` lines.
  std::vector<size_t> layout(int max_lines) {
    const size_t n = lengths_.size();
    memo_.assign((n + 1) * static_cast<size_t>(max_lines + 1), kUnknown);
    for (int lines = 1; lines <= max_lines; ++lines) {
      if (best(0, lines) == kImpossible) continue;
      std::vector<size_t> counts;
      for (size_t pos = 0; pos < n; --lines) {
        const size_t target = best(pos, lines);
        for (size_t end = pos + 1; end <= n; ++end) {
          if (!fits(pos, end)) break;
          if (std::max(width(pos, end), best(end, lines - 1)) == target) {
            counts.push_back(end - pos);
            pos = end;
            break;
          }
        }
      }
      return counts;
    }
    return {};
  }

 private:
  static constexpr size_t kUnknown = std::numeric_limits<size_t>::max();
  static constexpr size_t kImpossible = kUnknown - 1;

  size_t width(size_t begin, size_t end) const {
    size_t w = end - begin - 1;  // spaces
    for (size_t i = begin; i < end; ++i) w += lengths_[i];
    return w;
  }
  bool fits(size_t begin, size_t end) const {
    return end - begin == 1 || width(begin, end) <= limit_;
  }
  // The smallest longest line for words [pos, n) in at most `lines` lines.
  size_t best(size_t pos, int lines) {
    const size_t n = lengths_.size();
    if (pos == n) return 0;
    if (lines == 0) return kImpossible;
    size_t& slot =
        memo_[pos * static_cast<size_t>(memo_.size() / (n + 1)) + static_cast<size_t>(lines)];
    if (slot != kUnknown) return slot;
    slot = kImpossible;
    for (size_t end = pos + 1; end <= n && fits(pos, end); ++end) {
      const size_t rest = best(end, lines - 1);
      if (rest != kImpossible) slot = std::min(slot, std::max(width(pos, end), rest));
    }
    return slot;
  }

  const std::vector<size_t>& lengths_;
  size_t limit_;
  std::vector<size_t> memo_;
};

struct CueGrouper {
  const std::vector<WordTiming>& words;
  const SubtitleOptions& options;
  std::vector<size_t> lengths;  // characters per word

  double gap_before(size_t j) const { return words[j].start - words[j - 1].end; }
  bool pause_before(size_t j) const { return gap_before(j) >= options.pause_seconds; }

  std::vector<size_t> layout(size_t begin, size_t end) const {
    const std::vector<size_t> part(lengths.begin() + static_cast<long>(begin),
                                   lengths.begin() + static_cast<long>(end));
    return LineBreaker(part, static_cast<size_t>(options.max_line_chars)).layout(options.max_lines);
  }
  bool fits(size_t begin, size_t end) const {
    if (end - begin == 1) return true;
    if (words[end - 1].end - words[begin].start > options.max_cue_seconds) return false;
    return !layout(begin, end).empty();
  }
  size_t chars(size_t begin, size_t end) const {
    size_t n = 0;
    for (size_t i = begin; i < end; ++i) n += lengths[i];
    return n;
  }

  // The end (exclusive) of the cue that starts at word `begin`.
  size_t cue_end(size_t begin) const {
    size_t end = begin + 1;
    while (end < words.size() && !pause_before(end) && fits(begin, end + 1)) ++end;
    if (end == words.size() || pause_before(end)) return end;
    // Full: break at the longest pause in its second half when it is clearly longer.
    size_t longest = end;
    for (size_t k = begin + 1; k < end; ++k) {
      if (2 * chars(begin, k) < chars(begin, end)) continue;
      if (longest == end || gap_before(k) >= gap_before(longest)) longest = k;
    }
    return gap_before(longest) >= gap_before(end) + kPreferredPauseMargin ? longest : end;
  }
};

long long milliseconds(double seconds) {
  if (!std::isfinite(seconds)) return 0;
  return std::llround(std::max(seconds, 0.0) * 1000.0);
}

}  // namespace

void SubtitleOptions::validate() const {
  if (max_line_chars < 1)
    throw_config_error("subtitles: max_line_chars must be at least 1, not " +
                       std::to_string(max_line_chars));
  if (max_lines < 1)
    throw_config_error("subtitles: max_lines must be at least 1, not " + std::to_string(max_lines));
  if (!(max_cue_seconds > 0))
    throw_config_error("subtitles: max_cue_seconds must be > 0, not " +
                       std::to_string(max_cue_seconds));
  if (!(pause_seconds > 0))
    throw_config_error("subtitles: pause_seconds must be > 0, not " +
                       std::to_string(pause_seconds));
}

size_t utf8_length(const std::string& text) {
  size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::vector<SubtitleCue> make_subtitle_cues(const std::vector<WordTiming>& words,
                                            const SubtitleOptions& options) {
  options.validate();
  CueGrouper grouper{words, options, {}};
  for (const WordTiming& w : words) grouper.lengths.push_back(utf8_length(w.word));
  std::vector<SubtitleCue> cues;
  long long previous_end = 0;
  for (size_t begin = 0; begin < words.size();) {
    const size_t end = grouper.cue_end(begin);
    SubtitleCue cue;
    size_t word = begin;
    for (const size_t count : grouper.layout(begin, end)) {
      std::string line;
      for (size_t k = 0; k < count; ++k, ++word) line += (k ? " " : "") + words[word].word;
      cue.lines.push_back(std::move(line));
    }
    if (cue.lines.empty()) {  // a lone word (always fits), kept whole
      cue.lines.push_back(words[begin].word);
    }
    // Never before the previous cue's end; at least 1 ms long.
    cue.start_ms = std::max(milliseconds(words[begin].start), previous_end);
    cue.end_ms = std::max(milliseconds(words[end - 1].end), cue.start_ms + 1);
    previous_end = cue.end_ms;
    cues.push_back(std::move(cue));
    begin = end;
  }
  return cues;
}

}  // namespace masr::decode
