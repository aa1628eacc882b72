// tests/features/signals.h
// Test helpers: deterministic speech-like and random signals, a scratch folder, and running the
// Python references with Debian's /usr/bin/python3 (which has torch and torchaudio).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/remove_tree.h"

namespace masr::test {

// Voiced speech imitation: a glottal-like harmonic series with a gliding f0 (110-190 Hz), three
// moving formant-like resonances, syllable-rate (4 Hz) amplitude modulation, a short silence
// and a little noise, so the spectrum spans ~80 dB like real speech.
inline std::vector<float> speech_like(size_t n, int sample_rate, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0.0, 1e-4);
  std::vector<float> x(n);
  double phase = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / sample_rate;
    const double f0 = 150.0 + 40.0 * std::sin(2 * M_PI * 0.7 * t);
    phase += 2 * M_PI * f0 / sample_rate;
    double v = 0.0;
    for (int h = 1; h * f0 < sample_rate / 2.0; ++h) {
      const double f = h * f0;
      double gain = 0.0;
      for (double formant : {500.0 + 200 * std::sin(t), 1500.0 + 300 * std::cos(1.3 * t), 2500.0}) {
        gain += 1.0 / (1.0 + std::pow((f - formant) / 120.0, 2));
      }
      v += gain / h * std::sin(h * phase);
    }
    const double envelope = 0.5 + 0.5 * std::sin(2 * M_PI * 4.0 * t);
    const bool silent = t > 0.30 && t < 0.42;
    x[i] = static_cast<float>((silent ? 0.0 : 0.1 * envelope * v) + noise(rng));
  }
  return x;
}

inline std::vector<float> uniform_noise(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  return x;
}

// A fresh folder under the system temp dir, removed when the object goes away.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("masr-" + tag + "-" + std::to_string(rd()) + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    masr::remove_tree(path_);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs tests/features/fbank_reference.py on a jobs file; fails the test if Python fails.
inline void run_python_reference(const std::string& jobs) {
  const std::string script = std::string(MASR_SOURCE_DIR) + "/tests/features/fbank_reference.py";
  const std::string command = "/usr/bin/python3 " + script + " " + jobs;
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
}

}  // namespace masr::test
