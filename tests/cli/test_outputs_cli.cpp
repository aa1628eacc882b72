// tests/cli/test_outputs_cli.cpp
// What decode and stream write, parsed rather than grepped: one valid SRT/VTT/JSON/CTM/txt file
// per input under -o DIR, unique ids for repeated file names, words that never overlap, stream's
// JSON lines, and one policy for truncated files in every subcommand that reads audio.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_cli.h"

using masr::testing::run_cli;

namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
const std::string kCausal = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-causal-synth-en";
const std::string kExamples = kModel + "/examples";
const std::vector<std::string> kWavs = {kExamples + "/en_us_nyc_m4-000499.wav",
                                        kExamples + "/en_gb_x_gbcwmd_m5-002757.wav",
                                        kExamples + "/en_gb_x_gbclan_m1-000167.wav"};

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

using Scratch = masr::testing::CliScratch;

// stdout and stderr apart: stdout goes to a file that is read back.
struct Split {
  int code = -1;
  std::string out, err;
};
Split run_split(const std::string& args, const Scratch& dir) {
  const std::string out = dir.file("stdout.txt"), err = dir.file("stderr.txt");
  const auto r = run_cli(args + " >" + out + " 2>" + err + "; exit $?");
  return {r.code, read(out), read(err)};
}

struct Cue {
  long start_ms, end_ms;
  std::vector<std::string> lines;
};

long parse_time(const std::string& t, char separator) {
  static const std::regex form("(\\d\\d):(\\d\\d):(\\d\\d)[,.](\\d{3})");
  std::smatch m;
  REQUIRE(std::regex_match(t, m, form));
  REQUIRE(t[8] == separator);
  return ((std::stol(m[1]) * 60 + std::stol(m[2])) * 60 + std::stol(m[3])) * 1000 + std::stol(m[4]);
}

// A whole SRT (numbered from 1) or WebVTT file, strictly: every block "[N\n]START --> END\n"
// then at least one text line and a blank line; cues in order, each ending after it starts and
// none starting before the previous one ends.
std::vector<Cue> parse_subtitles(const std::string& text, bool srt) {
  std::istringstream in(text);
  std::string line;
  if (!srt) {
    REQUIRE(std::getline(in, line));
    REQUIRE(line == "WEBVTT");
    REQUIRE(std::getline(in, line));
    REQUIRE(line.empty());
  }
  std::vector<Cue> cues;
  while (std::getline(in, line)) {
    if (srt) {
      REQUIRE(line == std::to_string(cues.size() + 1));
      REQUIRE(std::getline(in, line));
    }
    const size_t arrow = line.find(" --> ");
    REQUIRE(arrow == 12);
    Cue cue{parse_time(line.substr(0, 12), srt ? ',' : '.'),
            parse_time(line.substr(17), srt ? ',' : '.'),
            {}};
    while (std::getline(in, line) && !line.empty()) cue.lines.push_back(line);
    REQUIRE_FALSE(cue.lines.empty());
    CHECK(cue.start_ms < cue.end_ms);
    if (!cues.empty()) CHECK(cue.start_ms >= cues.back().end_ms);
    cues.push_back(cue);
  }
  REQUIRE_FALSE(cues.empty());
  return cues;
}

// Each word starts at or after the previous one's end and ends at or after it starts.
void check_words_in_order(const nlohmann::json& words) {
  double previous_end = 0.0;
  for (const auto& w : words) {
    INFO(w.dump());
    CHECK(w.at("start").get<double>() >= previous_end);
    CHECK(w.at("end").get<double>() >= w.at("start").get<double>());
    CHECK(w.at("confidence").get<double>() > 0.0);
    CHECK(w.at("confidence").get<double>() <= 1.0);
    previous_end = w.at("end").get<double>();
  }
}

// Times in milliseconds at most: "1.234", never "1.2345625".
void check_rounded(const std::string& json_line) {
  static const std::regex long_fraction(R"re("(start|end)":-?\d+\.\d{4,})re");
  CHECK_FALSE(std::regex_search(json_line, long_fraction));
}

std::string decode(const std::string& args) { return "decode -m " + kModel + " " + args; }

using masr::testing::wav_bytes;

// The samples of one of the bundled 16 kHz 16-bit examples.
std::vector<int16_t> samples_of(const std::string& wav_path) {
  const std::string wav = read(wav_path);
  const size_t data = wav.find("data");
  REQUIRE(data != std::string::npos);
  std::vector<int16_t> out;
  for (size_t i = data + 8; i + 1 < wav.size(); i += 2) {
    out.push_back(static_cast<int16_t>(static_cast<uint16_t>(
        static_cast<unsigned char>(wav[i]) | static_cast<unsigned char>(wav[i + 1]) << 8)));
  }
  return out;
}

}  // namespace

TEST_CASE("decode -o DIR: one valid file per input and format, ids from the folder tree",
          "[cli][decode][outputs]") {
  Scratch dir;
  // Two files named x in different folders, a common dataset layout.
  dir.copy(kWavs[0], "in/a/x.wav");
  dir.copy(kWavs[1], "in/b/x.wav");
  dir.copy(kWavs[2], "in/y.wav");
  const std::string out = dir.file("out");
  const Split r =
      run_split(decode("-o " + out + " --format srt,vtt,json,txt,ctm,text " + dir.file("in")), dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());  // everything went to files
  CHECK_THAT(r.err, Catch::Contains("16 files written under " + out));
  const std::vector<std::string> ids = {"a/x", "b/x", "y"};
  std::set<std::string> json_ids;
  for (const std::string& id : ids) {
    INFO(id);
    const std::string stem = out + "/" + id;
    const auto srt = parse_subtitles(read(stem + ".srt"), true);
    const auto vtt = parse_subtitles(read(stem + ".vtt"), false);
    CHECK(srt.size() == vtt.size());
    const std::string json_text = read(stem + ".json");
    REQUIRE(std::count(json_text.begin(), json_text.end(), '\n') == 1);
    check_rounded(json_text);
    const auto j = nlohmann::json::parse(json_text);
    json_ids.insert(j.at("id").get<std::string>());
    check_words_in_order(j.at("words"));
    // txt holds the text alone; the subtitles hold the same words.
    const std::string text = j.at("text").get<std::string>();
    REQUIRE_FALSE(text.empty());
    CHECK(read(stem + ".txt") == text + "\n");
    std::string cue_words;
    for (const Cue& c : srt)
      for (const auto& l : c.lines) cue_words += (cue_words.empty() ? "" : " ") + l;
    CHECK(cue_words == text);
    // CTM: "ID 1 START DURATION WORD CONFIDENCE", in order, never overlapping once rounded.
    std::istringstream ctm(read(stem + ".ctm"));
    double previous_end = 0.0;
    size_t words = 0;
    for (std::string line; std::getline(ctm, line); ++words) {
      std::istringstream fields(line);
      std::string utt, channel, word;
      double start = -1, duration = -1, confidence = -1;
      REQUIRE(fields >> utt >> channel >> start >> duration >> word >> confidence);
      CHECK(utt == id);
      CHECK(start >= previous_end - 1e-9);
      CHECK(duration >= 0.0);
      previous_end = start + duration;
    }
    CHECK(words == j.at("words").size());
  }
  CHECK(json_ids == std::set<std::string>(ids.begin(), ids.end()));
  // text: one Kaldi file with every utterance.
  const std::string kaldi = read(out + "/text");
  CHECK(std::count(kaldi.begin(), kaldi.end(), '\n') == 3);
  CHECK(kaldi.rfind("a/x ", 0) == 0);
  // Without --format, -o writes txt files.
  const Split plain = run_split("-q " + decode("-o " + dir.file("plain") + " " + kWavs[0]), dir);
  REQUIRE(plain.code == 0);
  CHECK(fs::exists(dir.file("plain/en_us_nyc_m4-000499.txt")));
}

TEST_CASE("decode to stdout: one stream; several subtitle inputs or formats are usage errors",
          "[cli][decode][outputs]") {
  Scratch dir;
  const std::string two = kWavs[0] + " " + kWavs[1];
  for (const char* format : {"srt", "vtt"}) {
    const Split r = run_split(decode(std::string("--format ") + format + " " + two), dir);
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::Contains(std::string("--format ") + format + " of 2 inputs") &&
                          Catch::Contains("-o DIR"));
  }
  const Split several = run_split(decode("--format srt,json " + kWavs[0]), dir);
  CHECK(several.code == 2);
  CHECK_THAT(several.err, Catch::Contains("cannot share stdout"));
  const Split bad = run_split(decode("--format srt,xml " + kWavs[0]), dir);
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--format 'xml'"));
  // One subtitle input to stdout stays valid; JSON of several inputs has unique ids and words
  // that never overlap.
  const Split one = run_split("-q " + decode("--format srt " + kWavs[0]), dir);
  REQUIRE(one.code == 0);
  parse_subtitles(one.out, true);
  const Split json = run_split("-q " + decode("--format json " + two + " " + kWavs[2]), dir);
  REQUIRE(json.code == 0);
  std::istringstream lines(json.out);
  std::set<std::string> ids;
  size_t words = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    ids.insert(j.at("id").get<std::string>());
    check_words_in_order(j.at("words"));
    check_rounded(line);
    words += j.at("words").size();
  }
  CHECK(ids.size() == 3);
  CHECK(words > 20);
}

TEST_CASE("stream: finals with text, trimmed partials, word confidences, rounded times",
          "[cli][stream]") {
  Scratch dir;
  // Silence long enough to end utterances (and to restart an idle stream) around two sentences.
  std::vector<int16_t> samples(16000 * 6, 0);
  for (const auto& w : {kWavs[0], kWavs[1]}) {
    const auto speech = samples_of(w);
    samples.insert(samples.end(), speech.begin(), speech.end());
    samples.insert(samples.end(), 16000 * 3, 0);
  }
  const std::string wav = dir.write("talk.wav", wav_bytes(samples));
  const Split r = run_split("stream -m " + kCausal + " --chunk-ms 160 " + wav, dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  std::istringstream lines(r.out);
  size_t finals = 0, partials = 0;
  double previous_end = 0.0;
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    check_rounded(line);
    const auto j = nlohmann::json::parse(line);
    const std::string text = j.at("text").get<std::string>();
    CHECK_FALSE(text.empty());
    CHECK(text.front() != ' ');
    CHECK(text.back() != ' ');
    if (j.at("type") == "final") {
      ++finals;
      REQUIRE_FALSE(j.at("words").empty());
      CHECK(j.at("words").front().at("start").get<double>() >= previous_end);
      check_words_in_order(j.at("words"));
      previous_end = j.at("words").back().at("end").get<double>();
    } else {
      ++partials;
    }
  }
  // Two sentences: two finals (a long pause inside one could make three).
  CHECK(finals >= 2);
  CHECK(finals <= 3);
  CHECK(partials > 0);
  // stderr speaks of audio and utterances, not of the feature floor's internals.
  CHECK_THAT(r.err, Catch::Contains(std::to_string(finals) + " utterances"));
  CHECK(r.err.find("replay") == std::string::npos);
}

TEST_CASE("a truncated file is refused the same way by decode, stream and features",
          "[cli][audio]") {
  Scratch dir;
  const std::string whole = read(kWavs[0]);
  const std::string path = dir.write("cut.wav", whole.substr(0, whole.size() / 2));
  const Split d = run_split(decode(path), dir);
  const Split s = run_split("stream -m " + kCausal + " " + path, dir);
  const Split f = run_split("features " + path + " -o " + dir.file("f.npy"), dir);
  const Split in = run_split("stream -m " + kCausal + " - < " + path, dir);
  for (const Split* r : {&d, &s, &f, &in}) {
    INFO(r->err);
    CHECK(r->code == 1);
    CHECK_THAT(r->err, Catch::Contains("truncated: the header announces more audio"));
    CHECK(r->out.find("final") == std::string::npos);
  }
}

TEST_CASE("the fuzzed AIFF with a 1 Hz header is a clear error in every subcommand",
          "[cli][audio]") {
  Scratch dir;
  const std::string aiff = dir.copy(
      std::string(MASR_SOURCE_DIR) + "/fuzz/corpus/audio/001082dc7f8c39a8ea9eac24c1746a257e0f04b3",
      "fuzzed.aiff");
  const std::vector<std::string> commands = {decode(aiff), "stream -m " + kCausal + " " + aiff,
                                             "features " + aiff + " -o " + dir.file("f.npy"),
                                             "stream -m " + kCausal + " - < " + aiff};
  for (const std::string& command : commands) {
    const Split r = run_split(command, dir);
    INFO(command << "\n" << r.err);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("sample rate of 1 Hz is outside what audio uses"));
  }
}

TEST_CASE("stream and decode warn when a WAV is piped with --raw-pcm", "[cli][stdin]") {
  Scratch dir;
  const Split d = run_split("-q " + decode("--raw-pcm s16le:16000 - < " + kWavs[0]), dir);
  const Split s =
      run_split("-q stream -m " + kCausal + " --raw-pcm s16le:16000 - < " + kWavs[0], dir);
  for (const Split* r : {&d, &s}) {
    INFO(r->err);
    CHECK(r->code == 0);
    CHECK_THAT(r->err, Catch::Contains("stdin starts with a WAV (RIFF) header, but --raw-pcm"));
  }
  const std::string raw = dir.write("speech.raw", read(kWavs[0]).substr(44));
  const Split clean = run_split("-q " + decode("--raw-pcm s16le:16000 - < " + raw), dir);
  CHECK(clean.code == 0);
  CHECK(clean.err.find("header") == std::string::npos);
}
