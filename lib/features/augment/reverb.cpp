// lib/features/augment/reverb.cpp
// Reverb: responses built from CPU-generator draws, the convolution by FFT on x's device.
#include "features/augment/reverb.h"

#include <torch/torch.h>

#include <cmath>

#include "core/error.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"

namespace masr::features {

void ReverbConfig::validate() const {
  if (!(rt60_low > 0.0) || !(rt60_low <= rt60_high) || rt60_high > 10.0) {
    throw_config_error(
        string_printf("Reverb: need 0 < rt60_low <= rt60_high <= 10 (seconds), got %g and %g",
                      rt60_low, rt60_high));
  }
  if (!(drr_low <= drr_high)) {
    throw_config_error(string_printf("Reverb: drr_low (%g dB) must not exceed drr_high (%g dB)",
                                     drr_low, drr_high));
  }
  if (!(sample_rate > 0.0)) {
    throw_config_error(string_printf("Reverb: sample_rate must be > 0, got %g", sample_rate));
  }
}

Reverb::Reverb(ReverbConfig config) : config_(config) { config_.validate(); }

std::string Reverb::summary() const {
  return string_printf("RT60 [%g, %g) s, DRR [%g, %g) dB", config_.rt60_low, config_.rt60_high,
                       config_.drr_low, config_.drr_high);
}

at::Tensor Reverb::responses(const at::Tensor& rt60, const at::Tensor& drr,
                             const at::Tensor& gaussian) const {
  const int64_t length = gaussian.size(1);
  const at::Tensor n = torch::arange(length, gaussian.options()).unsqueeze(0);
  const at::Tensor samples = (rt60 * config_.sample_rate).unsqueeze(1);
  at::Tensor tail = gaussian * torch::exp(-3.0 * std::log(10.0) * n / samples);
  tail = tail * (n > 0).to(tail.scalar_type()) * (n < samples).to(tail.scalar_type());
  const at::Tensor energy = tail.pow(2).sum(1, true).clamp_min(1e-30);
  tail = tail * torch::sqrt(torch::pow(10.0, -drr.unsqueeze(1) / 10.0) / energy);
  return tail + (n == 0).to(tail.scalar_type());
}

at::Tensor Reverb::convolve(const at::Tensor& x, const at::Tensor& h, const at::Tensor& lengths) {
  const int64_t t = x.size(1);
  int64_t n_fft = 1;
  while (n_fft < t + h.size(1) - 1) n_fft <<= 1;
  const at::Tensor wet =
      torch::fft::irfft(torch::fft::rfft(x, n_fft, 1) * torch::fft::rfft(h, n_fft, 1), n_fft, 1)
          .narrow(1, 0, t);
  // The input's RMS over each utterance's valid samples.
  const at::Tensor valid = (lengths.to(x.options()) * t).round().clamp_min(1.0).unsqueeze(1);
  const at::Tensor mask = (torch::arange(t, x.options()).unsqueeze(0) < valid).to(x.scalar_type());
  return wet * (valid_rms(x * mask, valid) / valid_rms(wet * mask, valid).clamp_min(1e-12));
}

AugmentBatch Reverb::apply(const at::Tensor& x, const at::Tensor& lengths,
                           at::Generator& generator) const {
  require_waveforms(x, "Reverb");
  const auto cpu = torch::TensorOptions().dtype(torch::kFloat);
  const int64_t batch = x.size(0);
  const at::Tensor rt60 =
      torch::rand({batch}, generator, cpu) * (config_.rt60_high - config_.rt60_low) +
      config_.rt60_low;
  const at::Tensor drr =
      torch::rand({batch}, generator, cpu) * (config_.drr_high - config_.drr_low) + config_.drr_low;
  const int64_t length =
      static_cast<int64_t>(std::ceil(rt60.max().item<float>() * config_.sample_rate)) + 1;
  const at::Tensor h = responses(rt60, drr, torch::randn({batch, length}, generator, cpu));
  const at::Tensor on_device = runtime::to_device_async(h, x.device()).to(x.scalar_type());
  return {convolve(x, on_device, runtime::to_device_async(lengths, x.device())), lengths, {}};
}

}  // namespace masr::features
