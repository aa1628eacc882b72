// tests/audio/test_speed_perturb.cpp
// SpeedPerturb: lengths, pitch, reproducibility and config errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "audio/speed_perturb.h"
#include "core/error.h"

using masr::audio::SpeedPerturb;
using masr::audio::SpeedPerturbConfig;

namespace {

std::vector<float> tone(size_t n, double freq) {
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(2 * M_PI * freq * i / 16000.0));
  return x;
}

// Frequency from upward zero crossings over the middle of the signal.
double frequency(const std::vector<float>& x) {
  int crossings = 0;
  const size_t begin = x.size() / 10, end = x.size() - x.size() / 10;
  for (size_t i = begin + 1; i < end; ++i) crossings += (x[i - 1] < 0 && x[i] >= 0);
  return crossings * 16000.0 / static_cast<double>(end - begin);
}

}  // namespace

TEST_CASE("SpeedPerturb resamples to orig_freq*speed/100: lengths and pitch", "[audio]") {
  const SpeedPerturb perturb({16000, {95, 100, 105}});
  const std::vector<float> x = tone(16000, 1000.0);
  CHECK(perturb.apply(x, 95).size() == 15200);
  CHECK(perturb.apply(x, 100) == x);
  const auto slower = perturb.apply(x, 105);
  CHECK(slower.size() == 16800);
  // 16800 samples played at 16 kHz: the 1 kHz tone now sounds at 1000 * 100/105 Hz.
  CHECK(frequency(slower) == Approx(1000.0 * 100 / 105).epsilon(0.01));
  CHECK(frequency(perturb.apply(x, 95)) == Approx(1000.0 * 100 / 95).epsilon(0.01));
}

TEST_CASE("SpeedPerturb draws speeds reproducibly from a seeded generator", "[audio]") {
  const SpeedPerturb perturb({16000, {95, 100, 105}});
  const std::vector<float> x = tone(1600, 440.0);
  std::mt19937_64 a(42), b(42);
  std::set<int> seen;
  for (int i = 0; i < 30; ++i) {
    const auto ra = perturb(x, a);
    const auto rb = perturb(x, b);
    CHECK(ra.speed == rb.speed);
    CHECK(ra.samples == rb.samples);
    CHECK(ra.samples.size() == static_cast<size_t>(1600 * ra.speed / 100));
    seen.insert(ra.speed);
  }
  CHECK(seen == std::set<int>{95, 100, 105});
}

TEST_CASE("SpeedPerturb rejects bad configs", "[audio]") {
  CHECK_THROWS_WITH(SpeedPerturb({16000, {}}), Catch::Contains("at least one speed"));
  CHECK_THROWS_WITH(SpeedPerturb({16000, {95, -5}}), Catch::Contains("speed -5"));
  CHECK_THROWS_WITH(SpeedPerturb({0, {100}}), Catch::Contains("orig_freq must be positive"));
}
