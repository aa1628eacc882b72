// lib/audio/speed_perturb.h
// Speed perturbation as SpeechBrain's augment.time_domain.SpeedPerturb: pick one of the speeds
// (percent) at random and resample from orig_freq to orig_freq*speed/100 Hz, so the result is
// speed/100 times as long (SpeechBrain's own convention) while being played at orig_freq.
#pragma once

#include <random>
#include <vector>

namespace masr::audio {

struct SpeedPerturbConfig {
  int orig_freq = 16000;
  std::vector<int> speeds = {90, 100, 110};  // SpeechBrain's default; recipes use 95/100/105

  void validate() const;  // throws masr::Error naming the bad value
};

class SpeedPerturb {
 public:
  explicit SpeedPerturb(SpeedPerturbConfig config);

  // The chosen speed and the resampled audio. The speed is drawn uniformly from `speeds` with
  // `rng`, so a seeded generator reproduces the choice.
  struct Result {
    int speed = 100;
    std::vector<float> samples;
  };
  Result operator()(const std::vector<float>& samples, std::mt19937_64& rng) const;
  // The speed operator() draws from `rng` (the same draw: a planner can tell lengths beforehand).
  int draw(std::mt19937_64& rng) const;
  // The length apply(samples of length n, speed) has, without resampling.
  int64_t length_at(int64_t n, int speed) const;
  // Deterministic: resamples at the given speed (percent).
  std::vector<float> apply(const std::vector<float>& samples, int speed) const;

  const SpeedPerturbConfig& config() const { return config_; }

 private:
  // The rate the audio is resampled to at `speed` percent (SpeechBrain's orig_freq * speed // 100),
  // shared by apply and length_at so that a planned length is the made one.
  int rate_at(int speed) const;

  SpeedPerturbConfig config_;
};

}  // namespace masr::audio
