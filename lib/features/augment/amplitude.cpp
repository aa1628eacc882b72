// lib/features/augment/amplitude.cpp
// RandAmp, DoClip and DropBitResolution: SpeechBrain v1.0's formulas, draws from the CPU
// generator (torch.rand's sequence for a seeded generator), the arithmetic on x's device with no
// read-back.
#include "features/augment/amplitude.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"

namespace masr::features {
namespace {

// Each row's peak |x| (B, 1); 1 for a silent row, which then stays silent.
at::Tensor row_peaks(const at::Tensor& x) {
  const at::Tensor peak = std::get<0>(x.abs().max(1, true));
  return torch::where(peak > 0, peak, torch::ones_like(peak));
}

const char* const kBitTargets[] = {"int16", "int8", "float16"};  // SpeechBrain's dict order

}  // namespace

void RandAmpConfig::validate() const {
  if (!(amp_low <= amp_high)) {
    throw_config_error(
        string_printf("RandAmp: amp_low (%g) must not exceed amp_high (%g)", amp_low, amp_high));
  }
}

RandAmp::RandAmp(RandAmpConfig config) : config_(config) { config_.validate(); }

std::string RandAmp::summary() const {
  return string_printf("peak gain [%g, %g)", config_.amp_low, config_.amp_high);
}

AugmentBatch RandAmp::apply(const at::Tensor& x, const at::Tensor& lengths,
                            at::Generator& generator) const {
  require_waveforms(x, "RandAmp");
  const at::Tensor draws = torch::rand({x.size(0)}, generator, torch::kFloat);
  const at::Tensor gain =
      runtime::to_device_async(draws * (config_.amp_high - config_.amp_low) + config_.amp_low,
                               x.device())
          .to(x.scalar_type())
          .unsqueeze(1);
  return {x / row_peaks(x) * gain, lengths, {}};
}

void DoClipConfig::validate() const {
  if (!(clip_low > 0.0) || !(clip_low <= clip_high)) {
    throw_config_error(string_printf(
        "DoClip: need 0 < clip_low <= clip_high (fractions of the peak), got %g and %g", clip_low,
        clip_high));
  }
}

DoClip::DoClip(DoClipConfig config) : config_(config) { config_.validate(); }

std::string DoClip::summary() const {
  return string_printf("clips at [%g, %g) of the peak", config_.clip_low, config_.clip_high);
}

AugmentBatch DoClip::apply(const at::Tensor& x, const at::Tensor& lengths,
                           at::Generator& generator) const {
  require_waveforms(x, "DoClip");
  // One level for the batch, in float32 as torch.rand(1) draws it.
  const float draw = torch::rand({1}, generator, torch::kFloat).item<float>();
  const float level = draw * static_cast<float>(config_.clip_high - config_.clip_low) +
                      static_cast<float>(config_.clip_low);
  const at::Tensor peak = row_peaks(x);
  return {(x / peak).clamp(-level, level) * peak / level, lengths, {}};
}

void DropBitResolutionConfig::validate() const {
  if (target_dtype == "random") return;
  for (const char* t : kBitTargets) {
    if (target_dtype == t) return;
  }
  throw_config_error("DropBitResolution: target_dtype '" + target_dtype +
                     "' is not one of int16, int8, float16, random");
}

DropBitResolution::DropBitResolution(DropBitResolutionConfig config) : config_(std::move(config)) {
  config_.validate();
}

std::string DropBitResolution::summary() const { return "bit resolution " + config_.target_dtype; }

at::Tensor DropBitResolution::quantize(const at::Tensor& x, const std::string& target) {
  if (target == "float16") return x.to(torch::kHalf).to(x.scalar_type());
  const int bits = target == "int16" ? 16 : 8;
  const at::ScalarType type = bits == 16 ? torch::kShort : torch::kChar;
  // One scale for the whole batch; a silent batch stays silent.
  const at::Tensor peak = x.abs().max().clamp_min(std::numeric_limits<float>::min());
  const at::Tensor scale = ((1 << (bits - 1)) - 1) / peak;
  return (x * scale).to(type).to(x.scalar_type()) / scale;
}

AugmentBatch DropBitResolution::apply(const at::Tensor& x, const at::Tensor& lengths,
                                      at::Generator& generator) const {
  require_waveforms(x, "DropBitResolution");
  const std::string target = config_.target_dtype == "random"
                                 ? std::string(kBitTargets[draw_int(generator, 0, 3)])
                                 : config_.target_dtype;
  return {quantize(x, target), lengths, {}};
}

}  // namespace masr::features
