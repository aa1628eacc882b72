// lib/features/augment/warping.cpp
// Warping: the random centre and target are drawn as SpeechBrain v1.0 draws them
// (augment/freq_domain.py, Warping.forward), and both sides are resampled with 2-D interpolation
// over (time, features) with align_corners=True, which leaves the feature axis untouched.
#include "features/augment/warping.h"

#include <torch/torch.h>

#include "core/error.h"

namespace masr::features {

void WarpingConfig::validate() const {
  if (warp_window < 1) {
    throw_config_error("Warping: warp_window " + std::to_string(warp_window) +
                       " must be at least 1");
  }
  if (warp_mode != "bicubic" && warp_mode != "bilinear") {
    throw_config_error("Warping: warp_mode '" + warp_mode +
                       "' is not supported; use 'bicubic' or 'bilinear'");
  }
  if (dim != 1 && dim != 2) {
    throw_config_error("Warping: dim " + std::to_string(dim) +
                       " must be 1 (time) or 2 (frequency)");
  }
}

std::string WarpingConfig::to_string() const {
  return std::string(dim == 1 ? "time" : "frequency") + " warp, window " +
         std::to_string(warp_window) + ", " + warp_mode;
}

Warping::Warping(WarpingConfig config) : config_(std::move(config)) { config_.validate(); }

at::Tensor Warping::warp(const at::Tensor& x, int64_t c, int64_t w, const std::string& mode) {
  namespace F = torch::nn::functional;
  const int64_t length = x.size(1);
  const int64_t features = x.size(2);
  auto image = x.unsqueeze(1);  // (B, 1, T, F): interpolate needs a 4-D input for 2-D modes
  auto options = [&](int64_t size) {
    auto o =
        F::InterpolateFuncOptions().size(std::vector<int64_t>{size, features}).align_corners(true);
    if (mode == "bicubic") {
      o.mode(torch::kBicubic);
    } else {
      o.mode(torch::kBilinear);
    }
    return o;
  };
  using torch::indexing::Slice;
  auto left = F::interpolate(image.index({Slice(), Slice(), Slice(0, c)}), options(w));
  auto right =
      F::interpolate(image.index({Slice(), Slice(), Slice(c, length)}), options(length - w));
  return torch::cat({left, right}, 2).squeeze(1);
}

AugmentBatch Warping::apply(const at::Tensor& input, const at::Tensor& lengths,
                            at::Generator& generator) const {
  if (input.dim() != 3) {
    throw_input_error("Warping: expected a (batch, time, features) tensor, got " +
                      std::to_string(input.dim()) + " dimensions");
  }
  const at::Tensor x = config_.dim == 2 ? input.transpose(1, 2) : input;
  const int64_t length = x.size(1);
  const int64_t window = config_.warp_window;
  if (length - window <= window || x.size(0) == 0) return {input, lengths, {}};

  const int64_t c = draw_int(generator, window, length - window);
  const int64_t w = draw_int(generator, c - window, c + window) + 1;
  auto out = warp(x, c, w, config_.warp_mode);
  if (config_.dim == 2) out = out.transpose(1, 2).contiguous();
  return {out, lengths, {}};
}

}  // namespace masr::features
