// lib/audio/pad_silence.cpp
#include "audio/pad_silence.h"

#include <cmath>
#include <string>
#include <tuple>

#include "core/error.h"

namespace masr::audio {
namespace {

// Margins longer than this are a units mistake (samples or milliseconds given as seconds).
constexpr double kMaxMarginSeconds = 60.0;

void check_margin(const char* name, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > kMaxMarginSeconds) {
    throw_config_error(std::string("PadSilence: ") + name +
                       " must be between 0 and 60 seconds, got " + std::to_string(seconds));
  }
}

}  // namespace

void PadSilenceConfig::validate() const {
  check_margin("max_lead", max_lead);
  check_margin("max_tail", max_tail);
  if (!std::isfinite(prob) || prob < 0 || prob > 1) {
    throw_config_error("PadSilence: prob must be between 0 and 1, got " + std::to_string(prob));
  }
  if (sample_rate <= 0) {
    throw_config_error("PadSilence: sample_rate must be positive, got " +
                       std::to_string(sample_rate));
  }
}

PadSilence::PadSilence(PadSilenceConfig config) : config_(std::move(config)) {
  config_.validate();
}

std::vector<float> PadSilence::apply(const std::vector<float>& samples, int64_t lead,
                                     int64_t tail) {
  std::vector<float> out(static_cast<size_t>(lead), 0.0f);
  out.reserve(static_cast<size_t>(lead) + samples.size() + static_cast<size_t>(tail));
  out.insert(out.end(), samples.begin(), samples.end());
  out.resize(out.size() + static_cast<size_t>(tail), 0.0f);
  return out;
}

std::pair<int64_t, int64_t> PadSilence::draw(std::mt19937_64& rng) const {
  // The three draws are always made, so later choices from `rng` do not depend on this one.
  const bool pad = std::uniform_real_distribution<double>(0.0, 1.0)(rng) < config_.prob;
  const auto margin = [&](double seconds) {
    const auto most = static_cast<int64_t>(std::llround(seconds * config_.sample_rate));
    return std::uniform_int_distribution<int64_t>(0, most)(rng);
  };
  const int64_t lead = margin(config_.max_lead);
  const int64_t tail = margin(config_.max_tail);
  return pad ? std::make_pair(lead, tail) : std::make_pair<int64_t, int64_t>(0, 0);
}

PadSilence::Result PadSilence::operator()(const std::vector<float>& samples,
                                          std::mt19937_64& rng) const {
  Result result;
  std::tie(result.lead, result.tail) = draw(rng);
  result.samples = apply(samples, result.lead, result.tail);
  return result;
}

}  // namespace masr::audio
