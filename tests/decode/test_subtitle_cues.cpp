// tests/decode/test_subtitle_cues.cpp
// Subtitle cues on hand-made word timings: never overlapping (the word-start shift case), split at
// pauses, bounded lengths, balanced lines; and the SRT / WebVTT text itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "decode/subtitle_cues.h"
#include "decode/transcript.h"

using namespace masr::decode;

namespace {

// Every cue: 1 ms or longer, starting no earlier than the previous one ends; at most `lines`
// lines of at most `chars` characters (unless one word is longer), at most `seconds` long.
void check_valid(const std::vector<SubtitleCue>& cues, const SubtitleOptions& o) {
  long long previous_end = 0;
  for (size_t i = 0; i < cues.size(); ++i) {
    INFO("cue " << i << " [" << cues[i].start_ms << ", " << cues[i].end_ms << ")");
    CHECK(cues[i].start_ms >= previous_end);
    CHECK(cues[i].end_ms > cues[i].start_ms);
    CHECK(cues[i].end_ms - cues[i].start_ms <= static_cast<long long>(o.max_cue_seconds * 1000));
    REQUIRE_FALSE(cues[i].lines.empty());
    CHECK(cues[i].lines.size() <= static_cast<size_t>(o.max_lines));
    for (const std::string& line : cues[i].lines) {
      const bool one_word = line.find(' ') == std::string::npos;
      CHECK((utf8_length(line) <= static_cast<size_t>(o.max_line_chars) || one_word));
    }
    previous_end = cues[i].end_ms;
  }
}

// Continuous speech as a CTC model times it after the 52 ms start shift: each word starts 12 ms
// before the previous one ends.
std::vector<WordTiming> overlapping_speech(int count) {
  const std::vector<std::string> vocabulary = {"THE",  "QUICK", "BROWN", "FOX", "JUMPS",
                                               "OVER", "A",     "LAZY",  "DOG", "AGAIN"};
  std::vector<WordTiming> words;
  double t = 0.5;
  for (int i = 0; i < count; ++i) {
    const std::string& w = vocabulary[static_cast<size_t>(i) % vocabulary.size()];
    const double length = 0.1 + 0.05 * static_cast<double>(w.size());
    words.push_back({w, t, t + length, 0.9});
    t += length - 0.012;
  }
  return words;
}

std::string all_text(const std::vector<SubtitleCue>& cues) {
  std::string text;
  for (const auto& c : cues)
    for (const auto& line : c.lines) text += (text.empty() ? "" : " ") + line;
  return text;
}

}  // namespace

TEST_CASE("subtitle cues: a start shifted before the previous end does not overlap",
          "[decode][subtitles]") {
  // One word per cue (lines of 5 characters): B's start (0.488 s) lies 12 ms before A's end.
  SubtitleOptions one_word;
  one_word.max_line_chars = 5;
  one_word.max_lines = 1;
  const std::vector<WordTiming> words = {
      {"AAAA", 0.1, 0.5, 1}, {"BBBB", 0.488, 0.9, 1}, {"CCCC", 0.95, 1.2, 1}};
  const auto cues = make_subtitle_cues(words, one_word);
  REQUIRE(cues.size() == 3);
  CHECK(cues[0].start_ms == 100);
  CHECK(cues[0].end_ms == 500);
  CHECK(cues[1].start_ms == 500);  // moved from 488 to the previous end
  CHECK(cues[1].end_ms == 900);
  CHECK(cues[2].start_ms == 950);  // a gap is kept as it is
  check_valid(cues, one_word);
  // The same in SRT text: "00:00:00,488" must not appear.
  Transcript t;
  t.words = words;
  int number = 0;
  CHECK(format_srt(t, number, one_word) ==
        "1\n00:00:00,100 --> 00:00:00,500\nAAAA\n\n"
        "2\n00:00:00,500 --> 00:00:00,900\nBBBB\n\n"
        "3\n00:00:00,950 --> 00:00:01,200\nCCCC\n\n");
  CHECK(number == 3);
}

TEST_CASE("subtitle cues: long speech gets readable cues, words kept in order",
          "[decode][subtitles]") {
  const SubtitleOptions o;  // 42 characters, 2 lines, 7 s
  const auto words = overlapping_speech(400);
  const auto cues = make_subtitle_cues(words, o);
  check_valid(cues, o);
  std::string expected;
  for (const auto& w : words) expected += (expected.empty() ? "" : " ") + w.word;
  CHECK(all_text(cues) == expected);  // every word once, in order
  // Continuous speech fills cues: none is tiny except possibly the last.
  for (size_t i = 0; i + 1 < cues.size(); ++i) {
    size_t chars = 0;
    for (const auto& line : cues[i].lines) chars += line.size();
    CHECK(chars >= 30);
  }
  // Cues touch or leave gaps, never overlap, and the first starts with the first word.
  CHECK(cues.front().start_ms == 500);
}

TEST_CASE("subtitle cues: a pause ends a cue; a full cue breaks at its longest pause",
          "[decode][subtitles]") {
  const SubtitleOptions o;
  // HELLO THERE | (1 s of silence) | GENERAL KENOBI: two cues although one would fit.
  const std::vector<WordTiming> pause = {{"HELLO", 0.0, 0.4, 1},
                                         {"THERE", 0.45, 0.8, 1},
                                         {"GENERAL", 1.8, 2.3, 1},
                                         {"KENOBI", 2.35, 2.9, 1}};
  const auto cues = make_subtitle_cues(pause, o);
  REQUIRE(cues.size() == 2);
  CHECK(cues[0].lines == std::vector<std::string>{"HELLO THERE"});
  CHECK(cues[1].lines == std::vector<std::string>{"GENERAL KENOBI"});
  // 16 words of 9 characters: 5 fit on a 42-character line (49 with spaces: 4 do), so 8 fit a
  // cue. A 0.4 s pause (below the 0.8 s that always splits) after word 6 moves the break there.
  std::vector<WordTiming> words;
  double t = 0;
  for (int i = 0; i < 16; ++i) {
    if (i == 6) t += 0.4;
    words.push_back({"ABCDEFGH" + std::to_string(i % 10), t, t + 0.3, 1});
    t += 0.32;
  }
  const auto split = make_subtitle_cues(words, o);
  check_valid(split, o);
  REQUIRE(split.size() >= 2);
  CHECK(all_text({split[0]}) == "ABCDEFGH0 ABCDEFGH1 ABCDEFGH2 ABCDEFGH3 ABCDEFGH4 ABCDEFGH5");
  // Without the pause the first cue is full: 8 words.
  for (size_t i = 6; i < words.size(); ++i) words[i].start -= 0.4, words[i].end -= 0.4;
  const auto full = make_subtitle_cues(words, o);
  CHECK(all_text({full[0]}).size() == 8 * 9 + 7);
}

TEST_CASE("subtitle cues: lines are balanced, long words kept whole, time bounded",
          "[decode][subtitles]") {
  const SubtitleOptions o;
  // 47 characters: two lines, the shorter on top ("pyramid"), both within 42.
  const std::vector<WordTiming> words = {
      {"SHE", 0.0, 0.2, 1},   {"SELLS", 0.2, 0.5, 1}, {"SEA", 0.5, 0.7, 1}, {"SHELLS", 0.7, 1.0, 1},
      {"ON", 1.0, 1.1, 1},    {"THE", 1.1, 1.2, 1},   {"SEA", 1.2, 1.4, 1}, {"SHORE", 1.4, 1.7, 1},
      {"TODAY", 1.7, 2.0, 1}, {"AGAIN", 2.0, 2.3, 1}};
  const auto cues = make_subtitle_cues(words, o);
  REQUIRE(cues.size() == 1);
  REQUIRE(cues[0].lines.size() == 2);
  CHECK(cues[0].lines[0] == "SHE SELLS SEA SHELLS ON");
  CHECK(cues[0].lines[1] == "THE SEA SHORE TODAY AGAIN");
  // A 50-character word stands alone on its line, whole.
  const std::string huge(50, 'X');
  const auto alone = make_subtitle_cues({{"A", 0, 0.1, 1}, {huge, 0.1, 1, 1}, {"B", 1, 1.1, 1}}, o);
  check_valid(alone, o);
  CHECK(all_text(alone) == "A " + huge + " B");
  // Slow speech: no cue longer than 7 s even with few characters. A word every 1.5 s, 0.75 s
  // long: 5 words span 6.75 s, a sixth would make 8.25 s.
  std::vector<WordTiming> slow;
  for (int i = 0; i < 10; ++i) slow.push_back({"HM", i * 1.5, i * 1.5 + 0.75, 1});
  const auto slow_cues = make_subtitle_cues(slow, o);
  check_valid(slow_cues, o);
  REQUIRE(slow_cues.size() == 2);
  CHECK(slow_cues[0].end_ms - slow_cues[0].start_ms == 6750);
}

TEST_CASE("subtitle cues: random and broken timings still give valid cues", "[decode][subtitles]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int> letters(1, 14);
  for (int round = 0; round < 200; ++round) {
    SubtitleOptions o;
    o.max_line_chars = 10 + static_cast<int>(unit(rng) * 40);
    o.max_lines = 1 + static_cast<int>(unit(rng) * 3);
    o.max_cue_seconds = 1.0 + unit(rng) * 8;
    std::vector<WordTiming> words;
    double t = unit(rng);
    const int n = static_cast<int>(unit(rng) * 60);
    for (int i = 0; i < n; ++i) {
      // Starts up to 0.1 s before the previous end, zero-length words, ends before starts.
      const double start = std::max(0.0, t - 0.1 * unit(rng));
      const double end = start + (unit(rng) < 0.1 ? -0.05 : unit(rng) * 0.8);
      words.push_back({std::string(static_cast<size_t>(letters(rng)), 'W'), start, end, 1});
      t = std::max(t, end) + (unit(rng) < 0.2 ? unit(rng) * 2 : 0.0);
    }
    INFO("round " << round);
    const auto cues = make_subtitle_cues(words, o);
    long long previous_end = 0;
    size_t word_count = 0;
    for (const auto& c : cues) {
      CHECK(c.start_ms >= previous_end);
      CHECK(c.end_ms > c.start_ms);
      CHECK(c.lines.size() <= static_cast<size_t>(o.max_lines));
      for (const auto& line : c.lines) {
        CHECK((utf8_length(line) <= static_cast<size_t>(o.max_line_chars) ||
               line.find(' ') == std::string::npos));
        word_count += static_cast<size_t>(std::count(line.begin(), line.end(), ' ') + 1);
      }
      previous_end = c.end_ms;
    }
    CHECK(word_count == words.size());
  }
}

TEST_CASE("SRT and WebVTT text: numbering, timestamp formats, header", "[decode][subtitles]") {
  Transcript t;
  t.id = "talk";
  t.words = {{"GOOD", 3599.9996, 3600.2, 1}, {"MORNING", 3600.21, 3600.9, 1}};
  int number = 4;  // numbering continues across transcripts
  const std::string srt = format_srt(t, number);
  CHECK(srt == "5\n01:00:00,000 --> 01:00:00,900\nGOOD MORNING\n\n");
  CHECK(number == 5);
  const std::string vtt = std::string(kWebVttHeader) + format_vtt(t);
  CHECK(vtt == "WEBVTT\n\n01:00:00.000 --> 01:00:00.900\nGOOD MORNING\n\n");
  // Every WebVTT cue timing line: HH:MM:SS.mmm --> HH:MM:SS.mmm.
  t.words = overlapping_speech(120);
  std::istringstream lines(std::string(kWebVttHeader) + format_vtt(t));
  std::string line;
  std::getline(lines, line);
  CHECK(line == "WEBVTT");
  const std::regex timing(R"(\d\d:[0-5]\d:[0-5]\d\.\d{3} --> \d\d:[0-5]\d:[0-5]\d\.\d{3})");
  int timings = 0;
  while (std::getline(lines, line)) {
    if (line.find("-->") == std::string::npos) continue;
    CHECK(std::regex_match(line, timing));
    ++timings;
  }
  CHECK(timings == static_cast<int>(make_subtitle_cues(t.words).size()));
  CHECK(format_timestamp(3661.5, ',') == "01:01:01,500");
  CHECK(format_timestamp(-1, '.') == "00:00:00.000");
}

TEST_CASE("subtitle options are validated", "[decode][subtitles]") {
  SubtitleOptions o;
  o.max_line_chars = 0;
  CHECK_THROWS_WITH(make_subtitle_cues({}, o),
                    Catch::Contains("max_line_chars must be at least 1"));
  o = SubtitleOptions();
  o.max_cue_seconds = 0;
  CHECK_THROWS_WITH(o.validate(), Catch::Contains("max_cue_seconds must be > 0"));
  CHECK(make_subtitle_cues({}, SubtitleOptions()).empty());
  CHECK(utf8_length("\xe2\x96\x81"
                    "AB") == 3);
}
