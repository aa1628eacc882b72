// lib/features/augment/vtlp.cpp
// VTLP: the source position of each output mel bin per utterance, computed on the host (B x F
// numbers), then one gather and a linear blend on x's device.
#include "features/augment/vtlp.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"

namespace masr::features {
namespace {

double hz_to_mel(double f) { return 2595.0 * std::log10(1.0 + f / 700.0); }
double mel_to_hz(double m) { return 700.0 * (std::pow(10.0, m / 2595.0) - 1.0); }

}  // namespace

void VtlpConfig::validate() const {
  const double top = f_max > 0.0 ? f_max : sample_rate / 2.0;
  if (!(warp_low > 0.0) || !(warp_low <= warp_high)) {
    throw_config_error(
        string_printf("VTLP: need 0 < warp_low <= warp_high, got %g and %g", warp_low, warp_high));
  }
  if (!(sample_rate > 0.0) || !(f_min >= 0.0) || !(f_min < top) || top > sample_rate / 2.0) {
    throw_config_error(string_printf(
        "VTLP: need 0 <= f_min < f_max <= sample_rate / 2, got f_min %g, f_max %g, sample_rate %g",
        f_min, top, sample_rate));
  }
  if (!(f_hi > 0.0) || !(f_hi < sample_rate / 2.0)) {
    throw_config_error(string_printf("VTLP: f_hi (%g Hz) must lie in (0, sample_rate / 2 = %g Hz)",
                                     f_hi, sample_rate / 2.0));
  }
}

Vtlp::Vtlp(VtlpConfig config) : config_(config) {
  config_.validate();
  if (config_.f_max <= 0.0) config_.f_max = config_.sample_rate / 2.0;
}

std::string Vtlp::summary() const {
  return string_printf("warp [%g, %g), f_hi %g Hz", config_.warp_low, config_.warp_high,
                       config_.f_hi);
}

double Vtlp::warp_hz(double f, double alpha) const {
  const double nyquist = config_.sample_rate / 2.0;
  const double boundary = config_.f_hi * std::min(alpha, 1.0) / alpha;
  if (f <= boundary) return f * alpha;
  const double start = config_.f_hi * std::min(alpha, 1.0);  // = boundary * alpha
  return nyquist - (nyquist - start) / (nyquist - boundary) * (nyquist - f);
}

at::Tensor Vtlp::warp(const at::Tensor& x, const at::Tensor& alpha) const {
  if (x.dim() != 3) {
    throw_input_error("VTLP: expected (batch, frames, mel bins) features, got " +
                      std::to_string(x.dim()) + " dimensions");
  }
  const int64_t batch = x.size(0), bins = x.size(2);
  if (bins < 2) return x;
  const at::Tensor a = alpha.to(torch::kCPU, torch::kDouble).contiguous();
  const double mel_min = hz_to_mel(config_.f_min), mel_max = hz_to_mel(config_.f_max);
  const double step = (mel_max - mel_min) / static_cast<double>(bins + 1);
  std::vector<int64_t> lower(static_cast<size_t>(batch * bins));
  std::vector<float> weight(lower.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < bins; ++k) {
      const double centre = mel_to_hz(mel_min + static_cast<double>(k + 1) * step);
      double pos = (hz_to_mel(warp_hz(centre, a.data_ptr<double>()[b])) - mel_min) / step - 1.0;
      pos = std::clamp(pos, 0.0, static_cast<double>(bins - 1));
      const int64_t lo = std::min<int64_t>(static_cast<int64_t>(std::floor(pos)), bins - 2);
      const size_t i = static_cast<size_t>(b * bins + k);
      lower[i] = std::max<int64_t>(lo, 0);
      weight[i] = static_cast<float>(pos - static_cast<double>(lower[i]));
    }
  }
  const at::Tensor lo = runtime::to_device_async(
      torch::from_blob(lower.data(), {batch, 1, bins}, torch::kLong).clone(), x.device());
  const at::Tensor w =
      runtime::to_device_async(
          torch::from_blob(weight.data(), {batch, 1, bins}, torch::kFloat).clone(), x.device())
          .to(x.scalar_type());
  const at::Tensor lo_index = lo.expand({batch, x.size(1), bins});
  const at::Tensor left = x.gather(2, lo_index);
  const at::Tensor right = x.gather(2, lo_index + 1);
  return left + (right - left) * w;
}

AugmentBatch Vtlp::apply(const at::Tensor& x, const at::Tensor& lengths,
                         at::Generator& generator) const {
  const at::Tensor alpha =
      torch::rand({x.size(0)}, generator, torch::kDouble) * (config_.warp_high - config_.warp_low) +
      config_.warp_low;
  return {warp(x, alpha), lengths, {}};
}

}  // namespace masr::features
