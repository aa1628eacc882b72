// tests/cli/test_decode_io_cli.cpp
// `mamba-asr decode` as a pipe: an audio file on stdin, headerless PCM (--raw-pcm) from a file or
// stdin, their errors; the progress line when stderr is not a terminal; valid subtitles.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "run_cli.h"

using masr::testing::run_cli;

namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
const std::string kExamples = kModel + "/examples";
const std::string kShortWav = kExamples + "/en_us_nyc_m4-000499.wav";
const std::string kShortText = "IT IS A PERIOD OF SYSTEM WAR";

std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

uint32_t le32(const std::string& b, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(b[at + static_cast<size_t>(i)]);
  return v;
}

// The samples of a 16-bit mono WAV's "data" chunk: its s16le bytes.
std::string wav_data(const std::string& wav) {
  REQUIRE(wav.compare(0, 4, "RIFF") == 0);
  for (size_t at = 12; at + 8 <= wav.size();) {
    const uint32_t size = le32(wav, at + 4);
    if (wav.compare(at, 4, "data") == 0) return wav.substr(at + 8, size);
    at += 8 + size + (size & 1);
  }
  FAIL("no data chunk");
  return {};
}

// s16le bytes as f32le bytes (sample / 32768, exactly representable).
std::string s16_to_f32(const std::string& s16) {
  std::string out;
  for (size_t i = 0; i + 1 < s16.size(); i += 2) {
    const auto v = static_cast<int16_t>(static_cast<uint16_t>(
        static_cast<unsigned char>(s16[i]) | static_cast<unsigned char>(s16[i + 1]) << 8));
    const float f = static_cast<float>(v) / 32768.0f;
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    for (int b = 0; b < 4; ++b) out += static_cast<char>(u >> (8 * b) & 0xFF);
  }
  return out;
}

using Scratch = masr::testing::CliScratch;

std::string decode(const std::string& args) {
  return "decode --model " + kModel + "/model.masr --search greedy " + args;
}

// (start, end) in ms of every "HH:MM:SS<sep>mmm --> HH:MM:SS<sep>mmm" line.
std::vector<std::pair<long, long>> cue_times(const std::string& text, char separator) {
  const std::string s = std::string(1, separator);
  const std::regex timing("(\\d\\d):(\\d\\d):(\\d\\d)" + s +
                          "(\\d{3}) --> (\\d\\d):(\\d\\d):(\\d\\d)" + s + "(\\d{3})");
  std::vector<std::pair<long, long>> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), timing);
       it != std::sregex_iterator(); ++it) {
    auto ms = [&](int k) {
      return ((std::stol((*it)[k]) * 60 + std::stol((*it)[k + 1])) * 60 + std::stol((*it)[k + 2])) *
                 1000 +
             std::stol((*it)[k + 3]);
    };
    out.emplace_back(ms(1), ms(5));
  }
  return out;
}

}  // namespace

TEST_CASE("decode - reads one audio file from stdin", "[cli][decode][stdin]") {
  const auto r = run_cli("-q " + decode("- < " + kShortWav));
  INFO(r.output);
  REQUIRE(r.code == 0);
  CHECK(r.output == "stdin " + kShortText + "\n");
  // A FLAC or any other libsndfile format works the same way: the text list form is kept too.
  Scratch dir;
  const std::string list = dir.write("list.txt", kShortWav + "\n");
  const auto listed = run_cli("-q " + decode("- < " + list));
  INFO(listed.output);
  CHECK(listed.code == 0);
  CHECK(listed.output == "en_us_nyc_m4-000499 " + kShortText + "\n");
}

TEST_CASE("decode --raw-pcm reads headerless s16le and f32le from a file or stdin",
          "[cli][decode][raw_pcm]") {
  Scratch dir;
  const std::string s16 = wav_data(bytes_of(kShortWav));
  const std::string raw = dir.write("speech.raw", s16);
  const std::string f32 = dir.write("speech.f32", s16_to_f32(s16));
  const auto from_file = run_cli("-q " + decode("--raw-pcm s16le:16000 " + raw));
  INFO(from_file.output);
  CHECK(from_file.code == 0);
  CHECK(from_file.output == "speech " + kShortText + "\n");
  const auto from_stdin = run_cli("-q " + decode("--raw-pcm s16le:16000 - < " + raw));
  INFO(from_stdin.output);
  CHECK(from_stdin.code == 0);
  CHECK(from_stdin.output == "stdin " + kShortText + "\n");
  const auto floats = run_cli("-q " + decode("--raw-pcm f32le:16000 - < " + f32));
  INFO(floats.output);
  CHECK(floats.code == 0);
  CHECK(floats.output == "stdin " + kShortText + "\n");
}

TEST_CASE("decode of stdin and raw PCM: clear errors", "[cli][decode][stdin]") {
  Scratch dir;
  SECTION("empty stdin") {
    const auto r = run_cli(decode("- < /dev/null"));
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(r.output.find("stdin is empty; pipe in an audio file") != std::string::npos);
  }
  SECTION("a bad --raw-pcm spec is a usage error") {
    const auto r = run_cli(decode("--raw-pcm s16:16000 " + kShortWav));
    INFO(r.output);
    CHECK(r.code == 2);
    CHECK(r.output.find("--raw-pcm: 's16:16000': unknown sample encoding 's16'") !=
          std::string::npos);
  }
  SECTION("an odd byte count names the input") {
    const std::string odd = dir.write("odd.raw", std::string(3001, '\0'));
    const auto r = run_cli(decode("--raw-pcm s16le:16000 - < " + odd));
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(r.output.find("raw PCM 'stdin': 3001 bytes are not a whole number of s16le samples") !=
          std::string::npos);
  }
  SECTION("headerless PCM without --raw-pcm") {
    const std::string raw = dir.write("speech.raw", wav_data(bytes_of(kShortWav)));
    const auto r = run_cli(decode("- < " + raw));
    INFO(r.output);
    CHECK(r.code == 1);
    CHECK(r.output.find("is neither audio that libsndfile reads nor a list of paths") !=
          std::string::npos);
  }
}

TEST_CASE("decode progress: a line on stderr when it is not a terminal, none with -q",
          "[cli][decode][progress]") {
  const std::string two = kShortWav + " " + kExamples + "/en_gb_x_gbcwmd_m5-002757.wav";
  const auto r = run_cli(decode(two));  // stderr is a pipe here
  INFO(r.output);
  REQUIRE(r.code == 0);
  const std::regex line(R"(decode 2/2 files  [0-9.]+/[0-9.]+ s audio  RTFx [0-9.]+  ETA 0s\n)");
  CHECK(std::regex_search(r.output, line));
  CHECK(r.output.find('\r') == std::string::npos);  // no bar drawing in a log
  const auto quiet = run_cli("-q " + decode(two));
  CHECK(quiet.code == 0);
  CHECK(quiet.output.find("decode 2/2") == std::string::npos);
}

TEST_CASE("decode --format srt/vtt: cues in order, never overlapping, bounded",
          "[cli][decode][subtitles]") {
  const std::string wav = kExamples + "/en_gb_x_gbclan_m1-000167.wav";
  // Short lines force several cues, so consecutive cues meet where the start shift acts.
  const auto srt = run_cli("-q " + decode("--format srt --cue-chars 12 --cue-lines 1 " + wav));
  INFO(srt.output);
  REQUIRE(srt.code == 0);
  const auto times = cue_times(srt.output, ',');
  REQUIRE(times.size() >= 3);
  for (size_t i = 0; i < times.size(); ++i) {
    CHECK(times[i].first < times[i].second);
    if (i > 0) CHECK(times[i].first >= times[i - 1].second);
  }
  CHECK(srt.output.rfind("1\n", 0) == 0);
  std::istringstream lines(srt.output);
  for (std::string l; std::getline(lines, l);) {
    if (l.find("-->") == std::string::npos && l.find(' ') != std::string::npos) {
      CHECK(l.size() <= 12);
    }
  }
  const auto vtt = run_cli("-q " + decode("--format vtt " + wav));
  INFO(vtt.output);
  REQUIRE(vtt.code == 0);
  CHECK(vtt.output.rfind("WEBVTT\n\n00:00:", 0) == 0);
  CHECK_FALSE(cue_times(vtt.output, '.').empty());
}

TEST_CASE("decode --chunk-seconds: bad values are clear errors, a long file decodes in windows",
          "[cli][decode][chunked]") {
  const auto overlap = run_cli("-q decode --model " + kModel +
                               " --chunk-seconds 3 --chunk-overlap 2 " + kShortWav);
  CHECK(overlap.code != 0);
  CHECK_THAT(overlap.output, Catch::Contains("2 x overlap + 1 s"));
  const auto negative = run_cli("-q decode --model " + kModel + " --chunk-seconds -1 " + kShortWav);
  CHECK(negative.code == 2);
  CHECK_THAT(negative.output, Catch::Contains("--chunk-seconds"));
  // The same utterance four times (about 11 s) in 4 s windows: four copies of its words.
  const fs::path dir = fs::temp_directory_path() / "masr_test_chunk_cli";
  fs::create_directories(dir);
  const std::string joined = (dir / "joined.wav").string();
  REQUIRE(std::system(("sox " + kShortWav + " " + kShortWav + " " + kShortWav + " " + kShortWav +
                       " " + joined)
                          .c_str()) == 0);
  const auto r = run_cli("-q decode --model " + kModel + " --search greedy --chunk-seconds 4 "
                         "--chunk-overlap 0.5 " + joined);
  INFO(r.output);
  REQUIRE(r.code == 0);
  // No copy lost or doubled at the cuts (measured: "SYST" 4 times, 27 words for 28).
  size_t copies = 0;
  for (size_t at = r.output.find("SYST"); at != std::string::npos;
       at = r.output.find("SYST", at + 1))
    ++copies;
  CHECK(copies == 4);
  const auto words = std::count(r.output.begin(), r.output.end(), ' ');  // "joined" + words - 1
  CHECK(words >= 24);
  CHECK(words <= 32);
  fs::remove_all(dir);
}
