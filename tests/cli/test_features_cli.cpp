// tests/cli/test_features_cli.cpp
// `mamba-asr features`: files and folders, npy and text, --hparams, and bad input.
#include "run_cli.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace {

using Result = masr::testing::CliResult;

Result run(const std::string& args) { return masr::testing::run_cli(args); }

std::filesystem::path scratch() {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("masr-fcli-" + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir;
}

// A minimal 16-bit PCM mono WAV with a 440 Hz tone (the test binary does not link libsndfile).
void write_wav(const std::string& path, int samples, int rate) {
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  out.write("RIFF", 4);
  u32(36 + 2 * samples);
  out.write("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(rate);
  u32(2 * rate);
  u16(2);
  u16(16);
  out.write("data", 4);
  u32(2 * samples);
  for (int i = 0; i < samples; ++i) {
    u16(static_cast<uint16_t>(static_cast<int16_t>(8000 * std::sin(2 * M_PI * 440.0 * i / rate))));
  }
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_CASE("features writes one .npy file, a folder of them, or text", "[cli]") {
  const auto dir = scratch();
  const std::string a = (dir / "a.wav").string(), b = (dir / "b.wav").string();
  write_wav(a, 16000, 16000);
  write_wav(b, 8000, 8000);  // resampled to 16 kHz: 16000 samples, 101 frames

  Result r = run("features " + a + " --out " + (dir / "a.npy").string());
  INFO(r.output);
  CHECK(r.code == 0);
  const std::string npy = read_all((dir / "a.npy").string());
  CHECK(npy.rfind("\x93NUMPY\x01\x00", 0) == 0);
  CHECK_THAT(npy, Catch::Contains("'shape': (101, 80)"));
  CHECK(npy.size() == 128 + 101 * 80 * 4);

  r = run("features " + a + " " + b + " --out " + (dir / "feats").string());
  CHECK(r.code == 0);
  CHECK_THAT(read_all((dir / "feats" / "b.npy").string()), Catch::Contains("'shape': (101, 80)"));
  CHECK(std::filesystem::exists(dir / "feats" / "a.npy"));

  r = run("features " + a + " --format text --out " + (dir / "a.txt").string());
  CHECK(r.code == 0);
  const std::string text = read_all((dir / "a.txt").string());
  CHECK(std::count(text.begin(), text.end(), '\n') == 101);
  std::filesystem::remove_all(dir);
}

TEST_CASE("features --hparams uses compute_features and says when normalize is empty", "[cli]") {
  const auto dir = scratch();
  const std::string wav = (dir / "a.wav").string();
  write_wav(wav, 16000, 16000);
  std::ofstream((dir / "hp.yaml").string())
      << "data_folder: !PLACEHOLDER\n"
         "compute_features: !new:speechbrain.lobes.features.Fbank\n"
         "    sample_rate: 16000\n    n_fft: 512\n    win_length: 32\n    n_mels: 40\n"
         "normalize: !new:speechbrain.processing.features.InputNormalization\n"
         "    norm_type: global\n    update_until_epoch: 4\n";
  const Result r = run("features " + wav + " --hparams " + (dir / "hp.yaml").string() + " --out " +
                       (dir / "a.npy").string());
  INFO(r.output);
  CHECK(r.code == 0);
  CHECK_THAT(r.output, Catch::Contains("'normalize' has no statistics yet"));
  CHECK_THAT(read_all((dir / "a.npy").string()), Catch::Contains("'shape': (101, 40)"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("features reports unreadable and too-short audio by name", "[cli]") {
  const auto dir = scratch();
  const std::string text = (dir / "text.wav").string();
  std::ofstream(text) << "not audio\n";
  Result r = run("features " + text + " --out " + (dir / "x.npy").string());
  CHECK(r.code == 1);
  CHECK_THAT(r.output, Catch::Contains(text) && Catch::Contains("not a readable audio file"));

  const std::string tiny = (dir / "tiny.wav").string();
  write_wav(tiny, 100, 16000);
  r = run("features " + tiny + " --out " + (dir / "x.npy").string());
  CHECK(r.code == 1);
  CHECK_THAT(r.output,
             Catch::Contains(tiny) && Catch::Contains("100 samples; expected at least 400"));
  std::filesystem::remove_all(dir);
}
