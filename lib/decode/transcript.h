// lib/decode/transcript.h
// A decoded utterance as the CLI prints it: words with times and confidences from the CTC
// alignment, and the output formats (Kaldi "ID TEXT", JSON lines, SRT, WebVTT, CTM).
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "decode/ctc_greedy.h"

namespace masr::decode {

struct WordTiming {
  std::string word;
  double start = 0.0;       // seconds
  double end = 0.0;         // seconds
  double confidence = 0.0;  // exp(mean token log-probability at its first frame), in (0, 1]
};

// Groups `hyp`'s tokens into words (a piece starting with "▁" starts a word; with no such piece in
// the vocabulary, the piece " " separates words) and times each word from its first token's first
// frame to its last token's last frame. frame_seconds: the encoder frame shift (0.04 for the
// Mamba-ASR front end). start_shift: seconds subtracted from each word's start (never below 0
// and never before the previous word's end, so words never overlap), see kCtcWordStartShift.
// duration: the audio's length; no time lies past it (the encoder's last frame can reach up to a
// frame beyond the audio). Pieces must cover every token id (an input error otherwise).
std::vector<WordTiming> word_timings(const CtcHypothesis& hyp,
                                     const std::vector<std::string>& pieces, double frame_seconds,
                                     double start_shift = 0.0,
                                     double duration = std::numeric_limits<double>::infinity());

// A CTC model emits a word's first token a little after the word's sound begins (the spike sits
// where the model is sure, not at the onset), so raw start times are late by a roughly constant
// amount; ends are not. decode moves word starts earlier by this much. Measured with the bundled
// model on voices of the training split, never on test (docs/timestamps.md).
inline constexpr double kCtcWordStartShift = 0.052;

struct Transcript {
  std::string id;
  std::string text;
  std::vector<int64_t> tokens;
  double score = 0.0;
  std::vector<std::pair<std::string, double>> nbest;  // (text, score), best first
  std::vector<WordTiming> words;                      // empty when no alignment is available
};

std::string format_text(const Transcript& t);  // "ID TEXT\n"
std::string format_json(const Transcript& t);  // one JSON object and "\n"
// A time in seconds as the JSON outputs (decode and stream) write it: rounded to the millisecond,
// as SRT and VTT are, so that a frame time such as 7 * 0.04 prints as 0.28 rather than
// 0.28000000000000003 and a stream's sample offsets do not print as 1.2345625.
double json_seconds(double seconds);
// NIST CTM: "ID 1 START DURATION WORD CONFIDENCE" per word, times with 2 decimals.
std::string format_ctm(const Transcript& t);
struct SubtitleOptions;  // decode/subtitle_cues.h: line length, lines and seconds per cue
// Subtitle cues (make_subtitle_cues: readable lengths, never overlapping); `cue` numbers SRT cues
// across utterances. Each transcript's times start at its own audio's start.
std::string format_srt(const Transcript& t, int& cue, const SubtitleOptions& options);
std::string format_srt(const Transcript& t, int& cue);
// WebVTT cues, printed after kWebVttHeader.
std::string format_vtt(const Transcript& t, const SubtitleOptions& options);
std::string format_vtt(const Transcript& t);
inline constexpr const char* kWebVttHeader = "WEBVTT\n\n";
// "HH:MM:SS,mmm" (SRT, separator ',') or "HH:MM:SS.mmm" (WebVTT, '.').
std::string format_timestamp(double seconds, char separator);

}  // namespace masr::decode
