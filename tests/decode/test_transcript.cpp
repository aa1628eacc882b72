// tests/decode/test_transcript.cpp
// Word timings from CTC token frames and the output formats, on a hand-made hypothesis.
#include <catch2/catch.hpp>
#include <cmath>

#include "core/error.h"
#include "decode/transcript.h"

using namespace masr::decode;

namespace {
const std::string kMark = "\xe2\x96\x81";
}

TEST_CASE("Word timings group SentencePiece tokens into words", "[decode]") {
  // tokens:  ▁HE  LLO  ▁WOR  LD      frames [start, end): [2,3) [5,7) [10,11) [12,14)
  // words:   HELLO 0.08-0.28 s, WORLD 0.40-0.56 s (40 ms frames)
  const std::vector<std::string> pieces = {"<blank>", kMark + "HE", "LLO", kMark + "WOR", "LD"};
  CtcHypothesis hyp;
  hyp.tokens = {1, 2, 3, 4};
  hyp.start_frames = {2, 5, 10, 12};
  hyp.end_frames = {3, 7, 11, 14};
  hyp.token_logp = {-0.1f, -0.3f, -0.2f, -0.2f};
  const auto words = word_timings(hyp, pieces, 0.04);
  REQUIRE(words.size() == 2);
  CHECK(words[0].word == "HELLO");
  CHECK(words[0].start == Approx(0.08));
  CHECK(words[0].end == Approx(0.28));
  CHECK(words[0].confidence == Approx(std::exp(-0.2)));
  CHECK(words[1].word == "WORLD");
  CHECK(words[1].start == Approx(0.40));
  CHECK(words[1].end == Approx(0.56));
  hyp.tokens = {9};
  CHECK_THROWS_WITH(word_timings(hyp, pieces, 0.04),
                    Catch::Contains("token 9 has no piece (5 pieces)"));
}

TEST_CASE("Word starts move earlier by the CTC start shift, never below zero", "[decode]") {
  // tokens: ▁A (frames [1,2)), ▁BC ([5,6) and [7,9)); 40 ms frames, a 0.052 s shift:
  // A starts at max(0, 0.04 - 0.052) = 0, BC at 0.20 - 0.052 = 0.148; ends do not move.
  const std::vector<std::string> pieces = {"<blank>", kMark + "A", kMark + "B", "C"};
  CtcHypothesis hyp;
  hyp.tokens = {1, 2, 3};
  hyp.start_frames = {1, 5, 7};
  hyp.end_frames = {2, 6, 9};
  hyp.token_logp = {0, 0, 0};
  const auto words = word_timings(hyp, pieces, 0.04, 0.052);
  REQUIRE(words.size() == 2);
  CHECK(words[0].start == 0.0);
  CHECK(words[0].end == Approx(0.08));
  CHECK(words[1].start == Approx(0.148));
  CHECK(words[1].end == Approx(0.36));
  CHECK(kCtcWordStartShift > 0.0);
  CHECK(kCtcWordStartShift < 0.1);
  // Audio of 0.30 s: BC's end (frame 9: 0.36 s) stops at the audio's end.
  const auto clamped = word_timings(hyp, pieces, 0.04, 0.052, 0.30);
  CHECK(clamped[0].end == Approx(0.08));
  CHECK(clamped[1].start == Approx(0.148));
  CHECK(clamped[1].end == Approx(0.30));
  // A start past the audio (a broken alignment) is clamped too, never after its end.
  CHECK(word_timings(hyp, pieces, 0.04, 0.0, 0.10)[1].start == Approx(0.10));
}

TEST_CASE("The start shift stops at the previous word's end: words never overlap", "[decode]") {
  // tokens: ▁A ([1,3)), ▁B ([3,4)), ▁C ([10,11)); 40 ms frames, a 0.052 s shift:
  // A 0-0.12; B would start at 0.12 - 0.052 = 0.068, inside A, so it starts at A's end, 0.12;
  // C is far enough from B (0.16) to move the whole shift: 0.40 - 0.052 = 0.348.
  const std::vector<std::string> pieces = {"<blank>", kMark + "A", kMark + "B", kMark + "C"};
  CtcHypothesis hyp;
  hyp.tokens = {1, 2, 3};
  hyp.start_frames = {1, 3, 10};
  hyp.end_frames = {3, 4, 11};
  hyp.token_logp = {0, 0, 0};
  const auto words = word_timings(hyp, pieces, 0.04, 0.052);
  REQUIRE(words.size() == 3);
  CHECK(words[1].start == Approx(0.12));
  CHECK(words[1].start >= words[0].end);
  CHECK(words[2].start == Approx(0.348));
  for (size_t i = 1; i < words.size(); ++i) CHECK(words[i].start >= words[i - 1].end);
  // CTM rounds starts and ends first, so a rounded end never passes the next rounded start:
  // 0.114-0.126 and 0.126-0.2 print as 0.11 +0.02 (ends 0.13) and 0.13 +0.07.
  Transcript t;
  t.id = "u";
  t.words = {{"X", 0.114, 0.126, 1.0}, {"Y", 0.126, 0.2, 1.0}};
  CHECK(format_ctm(t) == "u 1 0.11 0.02 X 1.000\nu 1 0.13 0.07 Y 1.000\n");
}

TEST_CASE("Character vocabularies separate words with the space piece", "[decode]") {
  const std::vector<std::string> pieces = {"<blank>", "A", "B", " "};
  CtcHypothesis hyp;
  hyp.tokens = {1, 3, 2, 1};
  hyp.start_frames = {0, 2, 4, 6};
  hyp.end_frames = {1, 3, 5, 8};
  hyp.token_logp = {0, 0, 0, 0};
  const auto words = word_timings(hyp, pieces, 0.01);
  REQUIRE(words.size() == 2);
  CHECK(words[0].word == "A");
  CHECK(words[1].word == "BA");
  CHECK(words[1].start == Approx(0.04));
  CHECK(words[1].end == Approx(0.08));
}

TEST_CASE("Transcript formats: text, JSON, CTM, SRT, WebVTT", "[decode]") {
  Transcript t;
  t.id = "utt1";
  t.text = "HELLO WORLD";
  t.tokens = {1, 2};
  t.score = -1.5;
  t.nbest = {{"HELLO WORLD", -1.5}, {"HELLO WORD", -2.25}};
  t.words = {{"HELLO", 0.08, 0.28, 0.5}, {"WORLD", 0.4, 3661.5, 0.25}};
  CHECK(format_text(t) == "utt1 HELLO WORLD\n");
  CHECK(format_json(t) ==
        "{\"id\":\"utt1\",\"nbest\":[{\"score\":-1.5,\"text\":\"HELLO WORLD\"},{\"score\":-2.25,"
        "\"text\":\"HELLO WORD\"}],\"score\":-1.5,\"text\":\"HELLO WORLD\",\"tokens\":[1,2],"
        "\"words\":[{\"confidence\":0.5,\"end\":0.28,\"start\":0.08,\"word\":\"HELLO\"},"
        "{\"confidence\":0.25,\"end\":3661.5,\"start\":0.4,\"word\":\"WORLD\"}]}\n");
  CHECK(format_ctm(t) == "utt1 1 0.08 0.20 HELLO 0.500\nutt1 1 0.40 3661.10 WORLD 0.250\n");
  // WORLD lasts an hour: longer than a cue may be, so it gets a cue of its own.
  int cue = 0;
  CHECK(format_srt(t, cue) ==
        "1\n00:00:00,080 --> 00:00:00,280\nHELLO\n\n2\n00:00:00,400 --> 01:01:01,500\nWORLD\n\n");
  CHECK(cue == 2);
  CHECK(format_vtt(t) ==
        "00:00:00.080 --> 00:00:00.280\nHELLO\n\n00:00:00.400 --> 01:01:01.500\nWORLD\n\n");
  t.words[1].end = 0.9;
  CHECK(format_vtt(t) == "00:00:00.080 --> 00:00:00.900\nHELLO WORLD\n\n");
}
