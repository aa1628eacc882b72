// tests/audio/test_ogg_opus.cpp
// The direct Ogg Opus decoder against libsndfile's own decoding of the same files: same rate,
// channels, length and samples, for every rate Opus codes at, mono and stereo, and for headers
// that ask for another decode rate or an output gain. Files it must leave to libsndfile say so.
#include <catch2/catch.hpp>

#include <sndfile.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <random>

#include "../features/signals.h"
#include "audio/audio_reader.h"
#include "audio/ogg_opus.h"

using masr::audio::decode_ogg_opus;
using masr::audio::DecodedAudio;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Speech-like test signal: two tones with a slow envelope plus noise, per channel.
std::vector<float> signal(size_t frames, int channels, int rate, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.02f);
  std::vector<float> x(frames * channels);
  for (size_t i = 0; i < frames; ++i) {
    const double t = static_cast<double>(i) / rate;
    for (int c = 0; c < channels; ++c) {
      const double envelope = 0.5 + 0.5 * std::sin(2 * M_PI * (1.5 + c) * t);
      x[i * channels + c] = static_cast<float>(
          0.3 * envelope * (std::sin(2 * M_PI * 220 * (c + 1) * t) + 0.5 * std::sin(2 * M_PI * 1250 * t)) +
          noise(rng));
    }
  }
  return x;
}

DecodedAudio read_with_libsndfile(const std::string& path) {
  SF_INFO info{};
  SNDFILE* file = sf_open(path.c_str(), SFM_READ, &info);
  REQUIRE(file != nullptr);
  DecodedAudio out;
  out.channels = info.channels;
  out.sample_rate = info.samplerate;
  out.interleaved.resize(static_cast<size_t>(info.frames) * info.channels);
  const sf_count_t got = sf_readf_float(file, out.interleaved.data(), info.frames);
  sf_close(file);
  REQUIRE(got == info.frames);
  return out;
}

void require_same(const DecodedAudio& ours, const DecodedAudio& theirs) {
  REQUIRE(ours.sample_rate == theirs.sample_rate);
  REQUIRE(ours.channels == theirs.channels);
  REQUIRE(ours.interleaved.size() == theirs.interleaved.size());
  double worst = 0.0;
  for (size_t i = 0; i < ours.interleaved.size(); ++i) {
    worst = std::max(worst, std::abs(double(ours.interleaved[i]) - theirs.interleaved[i]));
  }
  // Both run the same libopus decoder on the same packets; only the wrapper differs.
  CHECK(worst <= 1e-6);
}

// The Ogg page checksum (CRC-32, polynomial 0x04c11db7, MSB first, no reflection, initial 0),
// for headers edited in place.
uint32_t ogg_crc(const unsigned char* data, size_t n) {
  uint32_t crc = 0;
  for (size_t i = 0; i < n; ++i) {
    crc ^= static_cast<uint32_t>(data[i]) << 24;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x80000000u) ? (crc << 1) ^ 0x04c11db7u : crc << 1;
  }
  return crc;
}

// Rewrites the first page's OpusHead input rate and output gain, with a valid checksum.
std::string edit_head(std::string bytes, uint32_t input_rate, int16_t gain) {
  auto* p = reinterpret_cast<unsigned char*>(bytes.data());
  REQUIRE(masr::audio::looks_like_ogg_opus(bytes.data(), bytes.size()));
  const size_t segments = p[26];
  size_t body = 0;
  for (size_t i = 0; i < segments; ++i) body += p[27 + i];
  const size_t head = 27 + segments;
  for (int i = 0; i < 4; ++i) p[head + 12 + i] = static_cast<unsigned char>(input_rate >> (8 * i));
  const auto g = static_cast<uint16_t>(gain);
  p[head + 16] = static_cast<unsigned char>(g & 0xff);
  p[head + 17] = static_cast<unsigned char>(g >> 8);
  for (int i = 0; i < 4; ++i) p[22 + i] = 0;
  const uint32_t crc = ogg_crc(p, head + body);
  for (int i = 0; i < 4; ++i) p[22 + i] = static_cast<unsigned char>(crc >> (8 * i));
  return bytes;
}

std::string write_opus(const masr::test::ScratchDir& dir, const std::string& name, int rate,
                       int channels, double seconds) {
  const std::string path = dir.file(name);
  const auto frames = static_cast<size_t>(seconds * rate);
  masr::audio::write_audio(path, signal(frames, channels, rate, 7u + rate + channels), rate,
                           channels, SF_FORMAT_OGG | SF_FORMAT_OPUS);
  return path;
}

}  // namespace

TEST_CASE("Ogg Opus decodes as libsndfile decodes it, at every Opus rate, mono and stereo",
          "[audio]") {
  masr::test::ScratchDir dir("ogg_opus");
  for (int rate : {8000, 12000, 16000, 24000, 48000}) {
    for (int channels : {1, 2}) {
      CAPTURE(rate, channels);
      const std::string path = write_opus(dir, "x.opus", rate, channels, 2.37);
      const std::optional<DecodedAudio> ours = decode_ogg_opus(slurp(path));
      REQUIRE(ours.has_value());
      require_same(*ours, read_with_libsndfile(path));
      // read_audio takes this path and still returns the same mono audio at the same length.
      const masr::audio::Audio audio = masr::audio::read_audio(path, rate);
      CHECK(audio.samples.size() == ours->interleaved.size() / channels);
    }
  }
}

TEST_CASE("Ogg Opus headers: the decode rate follows the input rate, the output gain applies",
          "[audio]") {
  masr::test::ScratchDir dir("ogg_opus_head");
  const std::string original = slurp(write_opus(dir, "x.opus", 48000, 1, 1.5));
  struct Case {
    uint32_t input_rate;
    int16_t gain;  // Q7.8 dB
    int expected_rate;
  };
  for (const Case& c : {Case{22050, 0, 24000}, Case{16000, 0, 16000}, Case{11025, 0, 12000},
                        Case{44100, 0, 48000}, Case{16000, 6 * 256, 16000},
                        Case{48000, -3 * 256, 48000}}) {
    CAPTURE(c.input_rate, c.gain);
    const std::string path = dir.file("edited.opus");
    std::ofstream(path, std::ios::binary) << edit_head(original, c.input_rate, c.gain);
    const std::optional<DecodedAudio> ours = decode_ogg_opus(slurp(path));
    REQUIRE(ours.has_value());
    CHECK(ours->sample_rate == c.expected_rate);
    require_same(*ours, read_with_libsndfile(path));
  }
}

TEST_CASE("Ogg Opus files the direct decoder leaves to libsndfile", "[audio]") {
  masr::test::ScratchDir dir("ogg_opus_fallback");
  const std::string bytes = slurp(write_opus(dir, "x.opus", 16000, 1, 1.0));
  // Not Opus at all, or an unknown input rate (libsndfile then decodes at 8 kHz).
  CHECK_FALSE(decode_ogg_opus("RIFF....WAVEfmt ").has_value());
  CHECK_FALSE(decode_ogg_opus(edit_head(bytes, 0, 0)).has_value());
  // A damaged page (checksum mismatch) in the middle of the stream.
  std::string damaged = bytes;
  damaged[damaged.size() / 2] ^= 0x5a;
  CHECK_FALSE(decode_ogg_opus(damaged).has_value());
  // The header alone: no audio packets, no granule position past the pre-skip.
  const size_t second_page = bytes.find("OggS", 4);
  REQUIRE(second_page != std::string::npos);
  CHECK_FALSE(decode_ogg_opus(bytes.substr(0, second_page)).has_value());
}
