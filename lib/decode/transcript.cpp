// lib/decode/transcript.cpp
// Word timings from CTC token frames, and the output formats.
#include "decode/transcript.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "decode/subtitle_cues.h"

namespace masr::decode {
namespace {

const std::string kSpaceMark = "\xe2\x96\x81";  // "▁"

}  // namespace

std::vector<WordTiming> word_timings(const CtcHypothesis& hyp,
                                     const std::vector<std::string>& pieces, double frame_seconds,
                                     double start_shift, double duration) {
  const bool sentencepiece = std::any_of(pieces.begin(), pieces.end(), [](const std::string& p) {
    return p.rfind(kSpaceMark, 0) == 0;
  });
  std::vector<WordTiming> words;
  double logp_sum = 0.0;
  int count = 0;
  auto close = [&] {
    if (!words.empty() && count > 0) words.back().confidence = std::exp(logp_sum / count);
    logp_sum = 0.0;
    count = 0;
  };
  bool open = false;
  for (size_t i = 0; i < hyp.tokens.size(); ++i) {
    const int64_t token = hyp.tokens[i];
    if (token < 0 || token >= static_cast<int64_t>(pieces.size())) {
      throw_input_error("word timings: token " + std::to_string(token) + " has no piece (" +
                        std::to_string(pieces.size()) + " pieces)");
    }
    std::string piece = pieces[token];
    const bool starts = sentencepiece ? piece.rfind(kSpaceMark, 0) == 0 : piece == " ";
    if (starts) {
      close();
      open = false;
      piece = sentencepiece ? piece.substr(kSpaceMark.size()) : "";
    }
    if (piece.empty()) continue;
    if (!open) {
      // The shift moves a start earlier, but never into the previous word.
      const double floor = words.empty() ? 0.0 : words.back().end;
      const double start = std::max(hyp.start_frames[i] * frame_seconds - start_shift, floor);
      words.push_back({"", std::clamp(start, 0.0, std::max(0.0, duration)), 0.0, 0.0});
      open = true;
    }
    words.back().word += piece;
    words.back().end = std::min(hyp.end_frames[i] * frame_seconds, std::max(0.0, duration));
    logp_sum += i < hyp.token_logp.size() ? hyp.token_logp[i] : 0.0;
    ++count;
  }
  close();
  return words;
}

std::string format_text(const Transcript& t) { return t.id + " " + t.text + "\n"; }

double json_seconds(double seconds) { return std::round(seconds * 1e3) / 1e3; }

std::string format_json(const Transcript& t) {
  nlohmann::json j;
  j["id"] = t.id;
  j["text"] = t.text;
  j["tokens"] = t.tokens;
  j["score"] = t.score;
  j["nbest"] = nlohmann::json::array();
  for (const auto& [text, score] : t.nbest)
    j["nbest"].push_back({{"text", text}, {"score", score}});
  j["words"] = nlohmann::json::array();
  for (const WordTiming& w : t.words) {
    j["words"].push_back(
        {{"word", w.word},
         {"start", json_seconds(w.start)},
         {"end", json_seconds(w.end)},
         {"confidence", w.confidence}});
  }
  return j.dump() + "\n";
}

std::string format_ctm(const Transcript& t) {
  std::string out;
  char line[64];
  for (const WordTiming& w : t.words) {
    // Start and end rounded first, so that a word's rounded end never passes the next's start.
    const double start = std::round(w.start * 100.0) / 100.0;
    const double end = std::round(w.end * 100.0) / 100.0;
    std::snprintf(line, sizeof line, " 1 %.2f %.2f ", start, std::max(0.0, end - start));
    char confidence[16];
    std::snprintf(confidence, sizeof confidence, " %.3f", w.confidence);
    out += t.id + line + w.word + confidence + "\n";
  }
  return out;
}

std::string format_timestamp(double seconds, char separator) {
  const long long ms = std::llround(std::max(seconds, 0.0) * 1000.0);
  char out[32];
  std::snprintf(out, sizeof out, "%02lld:%02lld:%02lld%c%03lld", ms / 3600000, ms / 60000 % 60,
                ms / 1000 % 60, separator, ms % 1000);
  return out;
}

namespace {

// "START --> END\nLINE\nLINE\n\n" per cue, with `number` lines for SRT.
std::string format_cues(const Transcript& t, const SubtitleOptions& options, char separator,
                        int* number) {
  std::string out;
  for (const SubtitleCue& c : make_subtitle_cues(t.words, options)) {
    if (number != nullptr) out += std::to_string(++*number) + "\n";
    out += format_timestamp(static_cast<double>(c.start_ms) / 1000.0, separator) + " --> " +
           format_timestamp(static_cast<double>(c.end_ms) / 1000.0, separator) + "\n";
    for (const std::string& line : c.lines) out += line + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace

std::string format_srt(const Transcript& t, int& cue, const SubtitleOptions& options) {
  return format_cues(t, options, ',', &cue);
}

std::string format_srt(const Transcript& t, int& cue) { return format_srt(t, cue, {}); }

std::string format_vtt(const Transcript& t, const SubtitleOptions& options) {
  return format_cues(t, options, '.', nullptr);
}

std::string format_vtt(const Transcript& t) { return format_vtt(t, {}); }

}  // namespace masr::decode
