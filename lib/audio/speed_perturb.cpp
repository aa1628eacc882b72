// lib/audio/speed_perturb.cpp
#include "audio/speed_perturb.h"

#include "audio/resample.h"
#include "core/error.h"

namespace masr::audio {

void SpeedPerturbConfig::validate() const {
  if (orig_freq <= 0) {
    throw_config_error("SpeedPerturb: orig_freq must be positive, got " +
                       std::to_string(orig_freq));
  }
  if (speeds.empty()) throw_config_error("SpeedPerturb: speeds must list at least one speed");
  for (int speed : speeds) {
    // SpeechBrain computes the new rate as orig_freq * speed // 100; it must stay positive.
    if (speed <= 0 || static_cast<long long>(orig_freq) * speed / 100 <= 0) {
      throw_config_error("SpeedPerturb: speed " + std::to_string(speed) +
                         " (percent) must give a positive rate at orig_freq " +
                         std::to_string(orig_freq));
    }
  }
}

SpeedPerturb::SpeedPerturb(SpeedPerturbConfig config) : config_(std::move(config)) {
  config_.validate();
}

int SpeedPerturb::rate_at(int speed) const {
  return static_cast<int>(static_cast<long long>(config_.orig_freq) * speed / 100);
}

int64_t SpeedPerturb::length_at(int64_t n, int speed) const {
  return resampled_length(n, config_.orig_freq, rate_at(speed));
}

std::vector<float> SpeedPerturb::apply(const std::vector<float>& samples, int speed) const {
  return resample(samples, config_.orig_freq, rate_at(speed));
}

int SpeedPerturb::draw(std::mt19937_64& rng) const {
  std::uniform_int_distribution<size_t> pick(0, config_.speeds.size() - 1);
  return config_.speeds[pick(rng)];
}

SpeedPerturb::Result SpeedPerturb::operator()(const std::vector<float>& samples,
                                              std::mt19937_64& rng) const {
  Result result;
  result.speed = draw(rng);
  result.samples = apply(samples, result.speed);
  return result;
}

}  // namespace masr::audio
