// lib/features/augment/noise.cpp
// AddNoise with white noise: SNR drawn per utterance, amplitudes as SpeechBrain's
// compute_amplitude(amp_type="rms") over the valid samples.
#include "features/augment/noise.h"

#include <torch/torch.h>

#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::features {
void AddNoiseConfig::validate() const {
  if (snr_low > snr_high) {
    throw_config_error("AddNoise: snr_low (" + std::to_string(snr_low) +
                       " dB) must not exceed snr_high (" + std::to_string(snr_high) + " dB)");
  }
  if (colored && (alpha_low > alpha_high || !(sample_rate > 0.0))) {
    throw_config_error(
        "AddNoise: pink_noise_like needs alpha_low <= alpha_high and sample_rate > 0, got " +
        std::to_string(alpha_low) + ", " + std::to_string(alpha_high) + " and " +
        std::to_string(sample_rate));
  }
}

at::Tensor AddNoise::colored_noise(const at::Tensor& white, const at::Tensor& alpha,
                                   double sample_rate) {
  const int64_t length = white.size(1), half = length / 2;
  if (half < 2) return white;  // too short to shape (SpeechBrain would index out of range)
  const at::Tensor f = torch::linspace(0.0, sample_rate / 2.0, half, white.options());
  at::Tensor mask = 1.0 / torch::pow(f.unsqueeze(0), alpha.to(white.options()).unsqueeze(1));
  mask.select(1, 0).copy_(mask.select(1, 1));  // no 1/0 at f = 0
  const at::Tensor up = torch::flip(mask, {1});
  mask = length % 2 ? torch::cat({mask, mask.narrow(1, half - 1, 1), up}, 1)
                    : torch::cat({mask, up}, 1);
  return torch::real(
             torch::fft::ifft(torch::fft::fft(white, c10::nullopt, 1) * mask, c10::nullopt, 1))
      .contiguous();
}

AddNoise::AddNoise(AddNoiseConfig config) : config_(config) { config_.validate(); }

std::string AddNoise::summary() const {
  const std::string kind = config_.colored ? "1/f^[" + std::to_string(config_.alpha_low) + ", " +
                                                 std::to_string(config_.alpha_high) + ") noise"
                                           : "white noise";
  return kind + ", SNR [" + std::to_string(config_.snr_low) + ", " +
         std::to_string(config_.snr_high) + "] dB";
}

AugmentBatch AddNoise::apply(const at::Tensor& x, const at::Tensor& lengths,
                             at::Generator& generator) const {
  require_waveforms(x, "AddNoise");
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
  if (config_.colored) {
    const at::Tensor alpha =
        torch::rand({x.size(0)}, generator, cpu) * (config_.alpha_high - config_.alpha_low) +
        config_.alpha_low;
    noise = colored_noise(noise, runtime::to_device_async(alpha, x.device()), config_.sample_rate);
  }
  auto scaled = noise * (factor * valid_rms(x, valid) / (valid_rms(noise, valid) + 1e-14));
  return {x * (1.0 - factor) + scaled, lengths, {}};
}

}  // namespace masr::features
