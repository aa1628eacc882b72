// tests/decode/test_transcript_writer.cpp
// Where transcripts go: one stream on stdout, or one file per input and format under a folder.
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include "../text/text_corpus.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "decode/transcript_writer.h"

using namespace masr::decode;
using Catch::Contains;

namespace {

// Format names, which Catch can print.
std::vector<std::string> names(const std::vector<OutputFormat>& formats) {
  std::vector<std::string> out;
  for (OutputFormat f : formats) out.emplace_back(output_format_name(f));
  return out;
}

Transcript transcript(const std::string& id, const std::string& word) {
  Transcript t;
  t.id = id;
  t.text = word;
  t.words = {{word, 0.5, 1.25, 0.75}};
  return t;
}

}  // namespace

TEST_CASE("Output formats parse from a comma-separated list", "[decode]") {
  CHECK(names(parse_output_formats("srt,json")) == std::vector<std::string>{"srt", "json"});
  CHECK(names(parse_output_formats("txt,txt")) == std::vector<std::string>{"txt"});
  CHECK(names(parse_output_formats("text,ctm,vtt")) ==
        std::vector<std::string>{"text", "ctm", "vtt"});
  CHECK_THROWS_WITH(parse_output_formats("srt,jsn"), Contains("--format 'jsn'"));
  CHECK_THROWS_WITH(parse_output_formats(""), Contains("at least one format"));
  try {
    parse_output_formats("xml");
    FAIL("xml was accepted");
  } catch (const masr::Error& e) {
    CHECK(e.kind() == masr::ErrorKind::kUsage);
  }
}

TEST_CASE("Output file names keep an id's folders and never leave the output folder", "[decode]") {
  CHECK(output_file_stem("utt1") == "utt1");
  CHECK(output_file_stem("a/b/x") == "a/b/x");
  CHECK(output_file_stem("/abs/x") == "abs/x");
  CHECK(output_file_stem("../../etc/x") == "_/_/etc/x");
  CHECK(output_file_stem("a//./x") == "a/_/_/x");
  CHECK(output_file_stem("") == "_");
}

TEST_CASE("To stdout: one format; SRT and VTT of several inputs are refused", "[decode]") {
  std::ostringstream out;
  TranscriptWriter one({OutputFormat::kVtt}, "", {}, out);
  CHECK_NOTHROW(one.check(1));
  CHECK_THROWS_WITH(one.check(2), Contains("--format vtt of 2 inputs") && Contains("-o DIR"));
  one.write(transcript("a", "HI"));
  CHECK(out.str() == "WEBVTT\n\n00:00:00.500 --> 00:00:01.250\nHI\n\n");
  TranscriptWriter two({OutputFormat::kSrt, OutputFormat::kJson}, "", {}, out);
  CHECK_THROWS_WITH(two.check(1), Contains("several formats (--format srt,json)"));
  std::ostringstream text;
  TranscriptWriter lines({OutputFormat::kTxt}, "", {}, text);
  CHECK_NOTHROW(lines.check(3));
  lines.write(transcript("a", "HI"));
  lines.write(transcript("b", "HO"));
  CHECK(text.str() == "HI\nHO\n");
}

TEST_CASE("To a folder: one file per input and format, each a whole file", "[decode]") {
  masr::testing::TempDir dir("transcript_writer");
  const std::string root = dir.file("out");
  std::ostringstream unused;
  TranscriptWriter writer({OutputFormat::kSrt, OutputFormat::kVtt, OutputFormat::kText}, root, {},
                          unused);
  CHECK_NOTHROW(writer.check(2));
  writer.write(transcript("a/x", "HI"));
  writer.write(transcript("b/x", "HO"));
  CHECK(unused.str().empty());
  CHECK(writer.files_written() == 5);  // 2 srt, 2 vtt, one Kaldi text
  // Each SRT numbers its cues from 1 and starts at its own audio's start.
  CHECK(masr::read_file(root + "/a/x.srt") == "1\n00:00:00,500 --> 00:00:01,250\nHI\n\n");
  CHECK(masr::read_file(root + "/b/x.srt") == "1\n00:00:00,500 --> 00:00:01,250\nHO\n\n");
  CHECK(masr::read_file(root + "/b/x.vtt") == "WEBVTT\n\n00:00:00.500 --> 00:00:01.250\nHO\n\n");
  CHECK(masr::read_file(root + "/text") == "a/x HI\nb/x HO\n");
}
