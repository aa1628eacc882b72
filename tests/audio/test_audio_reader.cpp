// tests/audio/test_audio_reader.cpp
// Every format and bit depth libsndfile writes here, down-mixing and resampling, and each class
// of malformed input with its message.
#include <catch2/catch.hpp>

#include <sndfile.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "../features/signals.h"
#include "audio/audio_reader.h"
#include "audio/resample.h"
#include "core/error.h"

using masr::audio::read_audio;

namespace {

std::vector<float> tone(size_t n, int rate, double freq, double amplitude) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(amplitude * std::sin(2 * M_PI * freq * i / rate));
  }
  return x;
}

bool writable(int format, int rate) {
  SF_INFO info{};
  info.format = format;
  info.samplerate = rate;
  info.channels = 1;
  return sf_format_check(&info) != 0;
}

// Signal-to-error ratio in dB over the common part.
double snr_db(const std::vector<float>& ref, const std::vector<float>& got) {
  double signal = 0, error = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i) {
    signal += double(ref[i]) * ref[i];
    error += (double(ref[i]) - got[i]) * (double(ref[i]) - got[i]);
  }
  return 10 * std::log10(signal / std::max(error, 1e-30));
}

}  // namespace

TEST_CASE("lossless formats and bit depths read back within their quantization step", "[audio]") {
  masr::test::ScratchDir dir("audio");
  const std::vector<float> x = tone(16000, 16000, 440.0, 0.5);
  struct Case {
    const char* name;
    int format;
    double step;
  };
  const std::vector<Case> cases = {
      {"u8.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_U8, 1.0 / 128},
      {"s16.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_16, 1.0 / 32768},
      {"s24.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_24, 1.0 / 8388608},
      {"s32.wav", SF_FORMAT_WAV | SF_FORMAT_PCM_32, 1e-7},
      {"f32.wav", SF_FORMAT_WAV | SF_FORMAT_FLOAT, 0.0},
      {"f64.wav", SF_FORMAT_WAV | SF_FORMAT_DOUBLE, 0.0},
      {"s16.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16, 1.0 / 32768},
      {"s24.flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_24, 1.0 / 8388608},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    const std::string path = dir.file(c.name);
    masr::audio::write_audio(path, x, 16000, 1, c.format);
    const auto info = masr::audio::probe_audio(path);
    CHECK(info.frames == 16000);
    CHECK(info.sample_rate == 16000);
    CHECK(info.channels == 1);
    CHECK(info.duration() == Approx(1.0));
    const auto audio = read_audio(path);
    REQUIRE(audio.samples.size() == x.size());
    CHECK(audio.sample_rate == 16000);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, std::abs(double(audio.samples[i]) - x[i]));
    }
    CHECK(worst <= c.step + 1e-7);
  }
}

TEST_CASE("lossy formats (Vorbis, Opus, MP3 where libsndfile writes them) decode", "[audio]") {
  masr::test::ScratchDir dir("lossy");
  const std::vector<float> x = tone(32000, 16000, 440.0, 0.5);
  struct Case {
    const char* name;
    int format;
  };
  const std::vector<Case> cases = {
      {"vorbis.ogg", SF_FORMAT_OGG | SF_FORMAT_VORBIS},
      {"opus.ogg", SF_FORMAT_OGG | SF_FORMAT_OPUS},
      {"mp3.mp3", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    if (!writable(c.format, 16000)) {
      WARN("libsndfile cannot write " << c.name << "; skipped");
      continue;
    }
    const std::string path = dir.file(c.name);
    masr::audio::write_audio(path, x, 16000, 1, c.format);
    const auto audio = read_audio(path);
    CHECK(audio.sample_rate == 16000);
    // Codecs may add or trim a frame's worth of padding.
    CHECK(std::abs(static_cast<double>(audio.samples.size()) - 32000.0) <= 2000);
    // Best alignment within a codec delay of up to 2000 samples.
    double best = -100;
    for (size_t lag = 0; lag < 2000 && lag < audio.samples.size(); ++lag) {
      std::vector<float> shifted(audio.samples.begin() + lag, audio.samples.end());
      best = std::max(best, snr_db(std::vector<float>(x.begin() + 2000, x.end() - 2000),
                                   std::vector<float>(shifted.begin() + 2000, shifted.end())));
    }
    CHECK(best > 15.0);
  }
}

TEST_CASE("44.1 kHz stereo becomes 16 kHz mono (channel mean, soxr resampling)", "[audio]") {
  masr::test::ScratchDir dir("stereo");
  const size_t n = 44100;
  std::vector<float> interleaved(2 * n);
  for (size_t i = 0; i < n; ++i) {
    const double s = std::sin(2 * M_PI * 1000.0 * i / 44100.0);
    interleaved[2 * i] = static_cast<float>(0.6 * s);
    interleaved[2 * i + 1] = static_cast<float>(0.2 * s);
  }
  const std::string path = dir.file("stereo.wav");
  masr::audio::write_audio(path, interleaved, 44100, 2, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
  CHECK(masr::audio::probe_audio(path).channels == 2);
  const auto audio = read_audio(path, 16000);
  CHECK(audio.sample_rate == 16000);
  REQUIRE(audio.samples.size() == 16000);
  double worst = 0;
  for (size_t i = 500; i < 15500; ++i) {  // away from the filter's edge transients
    const double expected = 0.4 * std::sin(2 * M_PI * 1000.0 * i / 16000.0);
    worst = std::max(worst, std::abs(audio.samples[i] - expected));
  }
  CHECK(worst < 1e-3);
  // target_rate 0 keeps the file's rate.
  CHECK(read_audio(path, 0).sample_rate == 44100);
}

TEST_CASE("malformed audio files raise errors naming the file and the reason", "[audio]") {
  masr::test::ScratchDir dir("bad");
  using Catch::Contains;
  const std::string missing = dir.file("missing.wav");
  CHECK_THROWS_WITH(read_audio(missing), Contains(missing) && Contains("cannot open"));

  const std::string empty = dir.file("empty.wav");
  std::ofstream(empty).close();
  CHECK_THROWS_WITH(read_audio(empty), Contains(empty) && Contains("not a readable audio file"));

  const std::string text = dir.file("text.wav");
  std::ofstream(text) << "this is not audio, just text pretending to be a wav file\n";
  CHECK_THROWS_WITH(read_audio(text), Contains(text) && Contains("not a readable audio file"));
  CHECK_THROWS_WITH(masr::audio::probe_audio(text), Contains("not a readable audio file"));

  const std::string no_samples = dir.file("no_samples.wav");
  masr::audio::write_audio(no_samples, {}, 16000);
  CHECK_THROWS_WITH(read_audio(no_samples), Contains(no_samples) && Contains("empty"));

  const std::string truncated = dir.file("truncated.wav");
  masr::audio::write_audio(truncated, tone(16000, 16000, 440, 0.5), 16000);
  std::filesystem::resize_file(truncated, 44 + 16000);  // half the data
  CHECK_THROWS_WITH(read_audio(truncated), Contains(truncated) && Contains("truncated"));

  const std::string header_only = dir.file("header_only.wav");
  masr::audio::write_audio(header_only, tone(1600, 16000, 440, 0.5), 16000);
  std::filesystem::resize_file(header_only, 20);
  CHECK_THROWS_WITH(read_audio(header_only), Contains(header_only));

  for (float bad :
       {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    const std::string path = dir.file("nonfinite.wav");
    std::vector<float> x = tone(1600, 16000, 440, 0.5);
    x[123] = bad;
    masr::audio::write_audio(path, x, 16000, 1, SF_FORMAT_WAV | SF_FORMAT_FLOAT);
    CHECK_THROWS_WITH(read_audio(path), Contains(path) && Contains("sample 123 of channel 0") &&
                                            Contains("must be finite"));
  }
  CHECK_THROWS_WITH(masr::audio::resample(std::vector<float>(10), 0, 16000),
                    Contains("sample rates must be positive"));
}
