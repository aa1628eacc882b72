// tests/audio/test_hostile_audio.cpp
// Hostile audio files: one sample, 96 kHz, 6 channels, hand-made WAV headers that declare absurd
// sizes, rates or channel counts. Each reads correctly or fails with a message naming the file.
#include <catch2/catch.hpp>

#include <sndfile.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "../text/text_corpus.h"
#include "audio/audio_reader.h"
#include "core/error.h"

using Catch::Contains;
using masr::audio::read_audio;

namespace {

void put(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A 16-bit PCM WAV whose header fields are given (they need not agree with the data).
std::string wav_bytes(uint16_t channels, uint32_t rate, uint32_t data_size, size_t real_data) {
  std::string out = "RIFF";
  put(out, static_cast<uint32_t>(36 + real_data), 4);
  out += "WAVEfmt ";
  put(out, 16, 4);
  put(out, 1, 2);  // PCM
  put(out, channels, 2);
  put(out, rate, 4);
  put(out, rate * channels * 2u, 4);
  put(out, channels * 2u, 2);
  put(out, 16, 2);
  out += "data";
  put(out, data_size, 4);
  for (size_t i = 0; i < real_data; ++i) out.push_back(static_cast<char>(i * 37));
  return out;
}

}  // namespace

TEST_CASE("hostile audio: one sample reads as one sample, at 16 kHz and resampled", "[audio]") {
  masr::testing::TempDir dir("hostile_one");
  const std::string path = dir.file("one.wav");
  masr::audio::write_audio(path, {0.25f}, 16000);
  const auto audio = read_audio(path, 16000);
  REQUIRE(audio.samples.size() == 1);
  CHECK(audio.samples[0] == Approx(0.25).margin(1.0 / 32768));
  // Resampling a single sample to 8 kHz must not fail or read out of bounds (soxr: 0 or 1 out).
  CHECK(read_audio(path, 8000).samples.size() <= 1);
}

TEST_CASE("hostile audio: 96 kHz, 6 channels becomes 16 kHz mono (channel mean)", "[audio]") {
  masr::testing::TempDir dir("hostile_96k");
  const size_t n = 96000;
  std::vector<float> x(6 * n);
  for (size_t i = 0; i < n; ++i) {
    const double s = std::sin(2 * M_PI * 500.0 * i / 96000.0);
    for (int c = 0; c < 6; ++c) x[6 * i + c] = static_cast<float>(0.1 * c * s);  // mean 0.25 s
  }
  const std::string path = dir.file("surround.wav");
  masr::audio::write_audio(path, x, 96000, 6, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  const auto info = masr::audio::probe_audio(path);
  CHECK(info.channels == 6);
  CHECK(info.sample_rate == 96000);
  const auto audio = read_audio(path, 16000);
  REQUIRE(audio.samples.size() == 16000);
  double worst = 0;
  for (size_t i = 500; i < 15500; ++i) {  // away from the resampler's edge transients
    const double expected = 0.25 * std::sin(2 * M_PI * 500.0 * i / 16000.0);
    worst = std::max(worst, std::abs(audio.samples[i] - expected));
  }
  CHECK(worst < 1e-3);
}

TEST_CASE("hostile audio: headers declaring absurd sizes, rates and channels", "[audio]") {
  masr::testing::TempDir dir("hostile_hdr");
  SECTION("a data chunk of 4 GB in a 144-byte file is truncated") {
    const std::string path = dir.write("huge_data.wav", wav_bytes(1, 16000, 0xFFFFFFF0u, 100));
    CHECK_THROWS_WITH(read_audio(path), Contains(path) && Contains("truncated"));
  }
  SECTION("a data chunk longer than the file by one byte is truncated") {
    const std::string path = dir.write("short.wav", wav_bytes(1, 16000, 202, 200));
    CHECK_THROWS_WITH(read_audio(path), Contains(path) && Contains("truncated"));
  }
  SECTION("zero channels") {
    const std::string path = dir.write("no_channels.wav", wav_bytes(0, 16000, 200, 200));
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
  SECTION("a sample rate of 0") {
    const std::string path = dir.write("rate0.wav", wav_bytes(1, 0, 200, 200));
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
  SECTION("65535 channels") {
    const std::string path = dir.write("channels.wav", wav_bytes(65535, 16000, 200, 200));
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
  SECTION("a sample rate of 4 GHz is refused, not resampled") {
    const std::string path = dir.write("rate4g.wav", wav_bytes(1, 4000000000u, 200, 200));
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
  SECTION("a header with no data chunk at all") {
    std::string bytes = wav_bytes(1, 16000, 0, 0);
    bytes.resize(36);
    const std::string path = dir.write("no_data.wav", bytes);
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
  SECTION("a folder named .wav") {
    const std::string path = dir.file("folder.wav");
    std::filesystem::create_directories(path);
    CHECK_THROWS_AS(read_audio(path), masr::Error);
    CHECK_THROWS_WITH(read_audio(path), Contains(path));
  }
}
