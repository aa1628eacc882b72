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

namespace {

void put_be(std::string& out, uint32_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// The AIFF a fuzzer found: a 26-byte COMz chunk libsndfile skips, a COMM of 1 channel, 64 frames,
// 16 bits and a rate whose 80-bit exponent is ~2^-15000 (libsndfile reads it as 1 Hz), an SSND of
// size 0 followed by 1,788 bytes that libsndfile takes as 894 frames: 894 s once resampled.
std::string fuzzed_aiff() {
  std::string out = "FORM";
  put_be(out, 0x000100d0, 4);
  out += "AIFF";
  out += "COMz";
  put_be(out, 26, 4);
  out += std::string(26, '\0');
  out += "COMM";
  put_be(out, 18, 4);
  const unsigned char comm[] = {0x00, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x10, 0x04,
                                0xf2, 0xfa, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  out.append(reinterpret_cast<const char*>(comm), sizeof comm);
  out += "SSND";
  put_be(out, 0, 4);
  out += std::string(8, '\0');  // offset, block size
  for (int i = 0; i < 1788; ++i) out.push_back(static_cast<char>(i * 131 % 251));
  return out;
}

}  // namespace

TEST_CASE("hostile audio: a header's sample rate must be one audio uses", "[audio]") {
  masr::testing::TempDir dir("hostile_rate_range");
  SECTION("the fuzzed AIFF at 1 Hz is refused before 894 s are resampled") {
    const std::string path = dir.write("fuzzed.aiff", fuzzed_aiff());
    CHECK_THROWS_WITH(masr::audio::probe_audio(path),
                      Contains(path) && Contains("sample rate of 1 Hz is outside"));
    CHECK_THROWS_WITH(read_audio(path), Contains("sample rate of 1 Hz is outside"));
    const std::string bytes = fuzzed_aiff();
    CHECK_THROWS_WITH(masr::audio::read_audio_bytes(bytes, "stdin"),
                      Contains("'stdin'") && Contains("1 Hz"));
  }
  SECTION("the corpus keeps the same file") {
    const std::string kept = std::string(MASR_SOURCE_DIR) +
                             "/fuzz/corpus/audio/001082dc7f8c39a8ea9eac24c1746a257e0f04b3";
    std::ifstream in(kept, std::ios::binary);
    REQUIRE(in);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(bytes == fuzzed_aiff());
  }
  SECTION("999 Hz and 768,001 Hz are refused; 1000 Hz and 768 kHz are read") {
    for (const uint32_t rate : {999u, 768001u}) {
      const std::string path = dir.write("r.wav", wav_bytes(1, rate, 200, 200));
      CHECK_THROWS_WITH(read_audio(path, 0), Contains(std::to_string(rate) + " Hz is outside"));
    }
    for (const uint32_t rate : {1000u, 768000u}) {
      const std::string path = dir.write("r.wav", wav_bytes(1, rate, 200, 200));
      CHECK(read_audio(path, 0).samples.size() == 100);
    }
  }
}

TEST_CASE("hostile audio: a header announcing more samples than the file can hold", "[audio]") {
  masr::testing::TempDir dir("hostile_length");
  // fLaC and a last-block STREAMINFO: 16 kHz mono 16-bit, 2^35 samples (24 days), no frames.
  std::string flac = "fLaC";
  flac += '\x80';
  put_be(flac, 34, 3);
  put_be(flac, 4096, 2);
  put_be(flac, 4096, 2);
  flac += std::string(6, '\0');  // frame sizes unknown
  const uint64_t fields = (uint64_t{16000} << 44) | (uint64_t{15} << 36) | (uint64_t{1} << 35);
  for (int i = 7; i >= 0; --i) flac.push_back(static_cast<char>((fields >> (8 * i)) & 0xFF));
  flac += std::string(16, '\0');  // MD5
  const std::string path = dir.write("huge.flac", flac);
  // The probe (what decode plans batches with) refuses it too, not only the read.
  CHECK_THROWS_WITH(masr::audio::probe_audio(path),
                    Contains(path) && Contains("announces 34359738368 frames") &&
                        Contains("more than its 42 bytes can hold"));
  CHECK_THROWS_WITH(read_audio(path), Contains("more than its 42 bytes can hold"));
}
