// tests/audio/test_raw_pcm.cpp
// Headerless PCM: the --raw-pcm spec parser, s16le/f32le decoding worked out by hand, and its
// errors; audio files read from memory (stdin) equal the same files read from disk.
#include <catch2/catch.hpp>

#include <sndfile.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "../features/signals.h"
#include "audio/audio_reader.h"
#include "audio/raw_pcm.h"
#include "core/error.h"

using namespace masr::audio;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string f32le(const std::vector<float>& values) {
  std::string bytes;
  for (const float v : values) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    for (int b = 0; b < 4; ++b) bytes += static_cast<char>((u >> (8 * b)) & 0xFF);
  }
  return bytes;
}

masr::ErrorKind kind_of(const std::string& spec) {
  try {
    parse_raw_pcm_spec(spec);
  } catch (const masr::Error& e) {
    return e.kind();
  }
  return masr::ErrorKind::kInternal;
}

}  // namespace

TEST_CASE("raw PCM specs for --raw-pcm: ENCODING:RATE, mono", "[audio][raw_pcm]") {
  const RawPcmFormat s16 = parse_raw_pcm_spec("s16le:16000");
  CHECK(s16.encoding == RawPcmFormat::Encoding::kS16le);
  CHECK(s16.sample_rate == 16000);
  CHECK(s16.bytes_per_sample() == 2);
  CHECK(s16.str() == "s16le:16000");
  const RawPcmFormat f32 = parse_raw_pcm_spec("f32le:8000");
  CHECK(f32.encoding == RawPcmFormat::Encoding::kF32le);
  CHECK(f32.sample_rate == 8000);
  CHECK(f32.bytes_per_sample() == 4);
  // Each bad spec names itself, the reason, and shows a valid one; it is a usage error (exit 2).
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"s16le", "no sample rate"},
      {"s16le:", "the sample rate '' is not a whole number of Hz"},
      {"s16:16000", "unknown sample encoding 's16'"},
      {"S16LE:16000", "unknown sample encoding 'S16LE'"},
      {":16000", "no sample encoding"},
      {"s16le:16k", "the sample rate '16k' is not a whole number of Hz"},
      {"s16le:-16000", "the sample rate '-16000' is not a whole number of Hz"},
      {"s16le:16000:2", "only mono is supported"},
      {"f32le:100", "the sample rate 100 Hz is outside 1000..768000"},
      {"f32le:99999999999", "the sample rate 99999999999 Hz is outside 1000..768000"},
      {"", "no sample rate"}};
  for (const auto& [spec, reason] : bad) {
    INFO(spec);
    CHECK_THROWS_WITH(parse_raw_pcm_spec(spec),
                      Catch::Contains("--raw-pcm '" + spec + "': " + reason) &&
                          Catch::Contains("e.g. --raw-pcm s16le:16000"));
    CHECK(kind_of(spec) == masr::ErrorKind::kUsage);
  }
}

TEST_CASE("raw PCM decodes little-endian s16 and f32 samples", "[audio][raw_pcm]") {
  // s16le: 0x0000 = 0, 0x4000 = 16384 -> 0.5, 0x8000 = -32768 -> -1, 0x7fff -> 32767/32768,
  // 0xffff = -1 -> -1/32768.
  const std::string s16("\x00\x00\x00\x40\x00\x80\xff\x7f\xff\xff", 10);
  const Audio a = decode_raw_pcm(s16, parse_raw_pcm_spec("s16le:16000"), "x.raw", 0);
  CHECK(a.sample_rate == 16000);
  CHECK(a.samples == std::vector<float>{0.0f, 0.5f, -1.0f, 32767.0f / 32768, -1.0f / 32768});
  const std::vector<float> values = {0.25f, -0.75f, 1.0f, 0.0f};
  const Audio f = decode_raw_pcm(f32le(values), parse_raw_pcm_spec("f32le:8000"), "x.f32", 0);
  CHECK(f.samples == values);
  CHECK(probe_raw_pcm(10, parse_raw_pcm_spec("s16le:16000"), "x").frames == 5);
  // Resampled to the requested rate: 8000 samples at 8 kHz are 16000 at 16 kHz.
  const Audio up = decode_raw_pcm(f32le(std::vector<float>(8000, 0.1f)),
                                  parse_raw_pcm_spec("f32le:8000"), "x", 16000);
  CHECK(up.sample_rate == 16000);
  CHECK(up.samples.size() == 16000);
}

TEST_CASE("raw PCM errors: empty, odd byte counts, non-finite floats", "[audio][raw_pcm]") {
  const RawPcmFormat s16 = parse_raw_pcm_spec("s16le:16000");
  const RawPcmFormat f32 = parse_raw_pcm_spec("f32le:16000");
  CHECK_THROWS_WITH(decode_raw_pcm("", s16, "stdin"),
                    Catch::Contains("raw PCM 'stdin': empty: it holds no audio samples"));
  CHECK_THROWS_WITH(decode_raw_pcm(std::string(3, '\1'), s16, "stdin"),
                    Catch::Contains("3 bytes are not a whole number of s16le samples (2 bytes "
                                    "each)"));
  CHECK_THROWS_WITH(decode_raw_pcm(std::string(6, '\1'), f32, "a.raw"),
                    Catch::Contains("raw PCM 'a.raw': 6 bytes are not a whole number of f32le"));
  CHECK_THROWS_WITH(
      decode_raw_pcm(f32le({0.5f, std::numeric_limits<float>::quiet_NaN()}), f32, "n.raw"),
      Catch::Contains("sample 1 is nan; audio must be finite"));
  CHECK_THROWS_WITH(probe_raw_pcm_file("/nonexistent/a.raw", s16),
                    Catch::Contains("raw PCM '/nonexistent/a.raw': cannot open"));
}

TEST_CASE("raw PCM files and audio files in memory read as the files do", "[audio][raw_pcm]") {
  masr::test::ScratchDir dir("raw-pcm");
  std::vector<float> x(4000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(0.5 * std::sin(0.01 * i));
  // A raw s16le file equals the same samples in a 16-bit WAV.
  const std::string wav = dir.file("a.wav");
  write_audio(wav, x, 16000);
  const std::string bytes = file_bytes(wav);
  const std::string raw = dir.file("a.raw");
  std::ofstream(raw, std::ios::binary) << bytes.substr(44);  // the canonical 44-byte header
  const RawPcmFormat s16 = parse_raw_pcm_spec("s16le:16000");
  CHECK(probe_raw_pcm_file(raw, s16).frames == 4000);
  CHECK(read_raw_pcm_file(raw, s16).samples == read_audio(wav).samples);
  // The WAV, FLAC and OGG files from memory (virtual I/O), as from disk.
  for (const int format : {SF_FORMAT_WAV | SF_FORMAT_PCM_16, SF_FORMAT_FLAC | SF_FORMAT_PCM_16,
                           SF_FORMAT_OGG | SF_FORMAT_VORBIS}) {
    SF_INFO info{};
    info.format = format, info.samplerate = 16000, info.channels = 1;
    if (!sf_format_check(&info)) continue;
    const std::string path = dir.file("b" + std::to_string(format));
    write_audio(path, x, 16000, 1, format);
    const std::string in_memory = file_bytes(path);
    INFO(std::hex << format);
    CHECK(has_audio_header(in_memory));
    CHECK(probe_audio_bytes(in_memory, "stdin").frames == probe_audio(path).frames);
    CHECK(read_audio_bytes(in_memory, "stdin", 8000).samples == read_audio(path, 8000).samples);
  }
  // A WAV streamed to a pipe (ffmpeg -f wav -) leaves its sizes at 0xFFFFFFFF: from memory its
  // data runs to the end; the same file on disk is still refused as truncated.
  std::string streamed = bytes;
  for (const size_t at : {size_t{4}, size_t{40}}) streamed.replace(at, 4, "\xff\xff\xff\xff");
  CHECK(read_audio_bytes(streamed, "stdin").samples == read_audio(wav).samples);
  const std::string streamed_file = dir.file("streamed.wav");
  std::ofstream(streamed_file, std::ios::binary) << streamed;
  CHECK_THROWS_WITH(read_audio(streamed_file), Catch::Contains("truncated"));
  // Not audio, or cut off: errors that name "stdin".
  CHECK_FALSE(has_audio_header("/data/a.wav\n/data/b.wav\n"));
  CHECK_THROWS_WITH(read_audio_bytes("hello", "stdin"),
                    Catch::Contains("audio file 'stdin': not a readable audio file"));
  CHECK_THROWS_WITH(read_audio_bytes(bytes.substr(0, bytes.size() / 2), "stdin"),
                    Catch::Contains("audio file 'stdin': truncated"));
}
