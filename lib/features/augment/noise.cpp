// lib/features/augment/noise.cpp
// AddNoise with white noise: SNR drawn per utterance, amplitudes as SpeechBrain's
// compute_amplitude(amp_type="rms") over the valid samples.
#include "features/augment/noise.h"

#include <torch/torch.h>

#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::features {
namespace {

// sqrt(sum(x^2) / valid_samples) per row; x: (B, T), valid: (B, 1).
at::Tensor rms(const at::Tensor& x, const at::Tensor& valid) {
  return torch::sqrt(x.pow(2).sum(1, true) / valid);
}

}  // namespace

void AddNoiseConfig::validate() const {
  if (snr_low > snr_high) {
    throw_config_error("AddNoise: snr_low (" + std::to_string(snr_low) +
                       " dB) must not exceed snr_high (" + std::to_string(snr_high) + " dB)");
  }
}

AddNoise::AddNoise(AddNoiseConfig config) : config_(config) { config_.validate(); }

std::string AddNoise::summary() const {
  return "white noise, SNR [" + std::to_string(config_.snr_low) + ", " +
         std::to_string(config_.snr_high) + "] dB";
}

AugmentBatch AddNoise::apply(const at::Tensor& x, const at::Tensor& lengths,
                             at::Generator& generator) const {
  if (x.dim() != 2) {
    throw_input_error("AddNoise: expected a (batch, samples) waveform tensor, got " +
                      std::to_string(x.dim()) + " dimensions");
  }
  // Draws on the CPU generator, copied to x's device without stopping the host.
  const auto cpu = x.options().device(torch::kCPU);
  auto valid = (runtime::to_device_async(lengths, x.device()).to(x.scalar_type()) * x.size(1))
                   .unsqueeze(1)
                   .clamp_min(1.0);
  auto snr = runtime::to_device_async(torch::rand({x.size(0), 1}, generator, cpu), x.device()) *
                 (config_.snr_high - config_.snr_low) +
             config_.snr_low;
  auto factor = 1.0 / (torch::pow(10.0, snr / 20.0) + 1.0);
  auto noise = runtime::to_device_async(torch::randn(x.sizes(), generator, cpu), x.device());
  auto scaled = noise * (factor * rms(x, valid) / (rms(noise, valid) + 1e-14));
  return {x * (1.0 - factor) + scaled, lengths, {}};
}

}  // namespace masr::features
