// lib/features/augment/spectral_smoothing.cpp
// The moving average as a few gathers (one per window offset, each masked to the rows whose
// window has it), the liftering as two matrix products with a per-row mask; the indices, masks
// and the DCT matrix are made on the host (B x T and F x F numbers) and uploaded without waiting.
#include "features/augment/spectral_smoothing.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/string_printf.h"
#include "runtime/device_copy.h"

namespace masr::features {

void SpectralSmoothingConfig::validate() const {
  if (time_width_low < 1 || time_width_low > time_width_high) {
    throw_config_error(string_printf(
        "SpectralSmoothing: need 1 <= time_width_low <= time_width_high, got %lld and %lld",
        static_cast<long long>(time_width_low), static_cast<long long>(time_width_high)));
  }
  if (keep_low < 0 || keep_low > keep_high) {
    throw_config_error(
        string_printf("SpectralSmoothing: need 0 <= keep_low <= keep_high, got %lld and %lld",
                      static_cast<long long>(keep_low), static_cast<long long>(keep_high)));
  }
  if (keep_low == 0 && keep_high > 0) {
    throw_config_error(
        "SpectralSmoothing: keep_low 0 (no liftering) with keep_high > 0 would lifter only some "
        "utterances; give keep_low >= 1");
  }
}

SpectralSmoothing::SpectralSmoothing(SpectralSmoothingConfig config) : config_(config) {
  config_.validate();
}

std::string SpectralSmoothing::summary() const {
  std::string s = string_printf("time width %lld-%lld frames",
                                static_cast<long long>(config_.time_width_low),
                                static_cast<long long>(config_.time_width_high));
  if (config_.keep_high > 0) {
    s += string_printf(", %lld-%lld cepstral coefficients", static_cast<long long>(config_.keep_low),
                       static_cast<long long>(config_.keep_high));
  }
  return s;
}

at::Tensor SpectralSmoothing::smooth(const at::Tensor& x, const at::Tensor& lengths,
                                     const at::Tensor& widths, const at::Tensor& keeps) const {
  if (x.dim() != 3) {
    throw_input_error("SpectralSmoothing: expected (batch, frames, mel bins) features, got " +
                      std::to_string(x.dim()) + " dimensions");
  }
  const int64_t batch = x.size(0), frames = x.size(1), bins = x.size(2);
  if (batch == 0 || frames == 0 || bins == 0) return x;
  const at::Tensor rel = lengths.to(torch::kCPU, torch::kDouble).contiguous();
  const at::Tensor w = widths.to(torch::kCPU, torch::kLong).contiguous();
  const at::Tensor c = keeps.to(torch::kCPU, torch::kLong).contiguous();
  std::vector<int64_t> valid(static_cast<size_t>(batch));
  int64_t before = 0, after = 0;  // the widest window's reach
  for (int64_t b = 0; b < batch; ++b) {
    valid[b] = std::clamp<int64_t>(std::llround(rel.data_ptr<double>()[b] * frames), 1, frames);
    const int64_t wb = w.data_ptr<int64_t>()[b];
    before = std::max(before, (wb - 1) / 2);
    after = std::max(after, wb / 2);
  }
  at::Tensor out = x;
  if (before + after > 0) {
    // Offsets -before..after: row b takes offset k when its window has it, from the frame
    // t + k held inside its valid frames; frames past the row's end keep their values.
    const at::TensorOptions host_long = torch::TensorOptions().dtype(torch::kLong);
    at::Tensor sum = torch::zeros_like(x);
    for (int64_t k = -before; k <= after; ++k) {
      std::vector<int64_t> index(static_cast<size_t>(batch * frames));
      std::vector<float> take(static_cast<size_t>(batch * frames));
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t wb = w.data_ptr<int64_t>()[b];
        const bool in_window = k >= -(wb - 1) / 2 && k <= wb / 2;
        for (int64_t t = 0; t < frames; ++t) {
          const size_t i = static_cast<size_t>(b * frames + t);
          const bool inside = t < valid[b];
          index[i] = inside ? std::clamp<int64_t>(t + k, 0, valid[b] - 1) : t;
          take[i] = inside ? (in_window ? 1.0f / static_cast<float>(wb) : 0.0f)
                           : (k == 0 ? 1.0f : 0.0f);
        }
      }
      const at::Tensor idx = runtime::to_device_async(
          torch::from_blob(index.data(), {batch, frames, 1}, host_long).clone(), x.device());
      const at::Tensor weight =
          runtime::to_device_async(
              torch::from_blob(take.data(), {batch, frames, 1}, torch::kFloat).clone(),
              x.device())
              .to(x.scalar_type());
      sum = sum + x.gather(1, idx.expand({batch, frames, bins})) * weight;
    }
    out = sum;
  }
  bool lifter = false;
  for (int64_t b = 0; b < batch; ++b) lifter = lifter || c.data_ptr<int64_t>()[b] > 0;
  if (!lifter) return out;
  // The orthonormal DCT-II over the bins: D[k][n] = s_k cos(pi (n + 1/2) k / F).
  std::vector<double> dct(static_cast<size_t>(bins * bins));
  for (int64_t k = 0; k < bins; ++k) {
    const double s = std::sqrt((k == 0 ? 1.0 : 2.0) / static_cast<double>(bins));
    for (int64_t n = 0; n < bins; ++n) {
      dct[static_cast<size_t>(k * bins + n)] =
          s * std::cos(M_PI * (static_cast<double>(n) + 0.5) * static_cast<double>(k) /
                       static_cast<double>(bins));
    }
  }
  std::vector<float> mask(static_cast<size_t>(batch * bins));
  std::vector<float> rows(static_cast<size_t>(batch * frames));
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t cb = c.data_ptr<int64_t>()[b];
    for (int64_t k = 0; k < bins; ++k) {
      mask[static_cast<size_t>(b * bins + k)] = (cb == 0 || k < cb) ? 1.0f : 0.0f;
    }
    for (int64_t t = 0; t < frames; ++t) {
      rows[static_cast<size_t>(b * frames + t)] = (cb > 0 && t < valid[b]) ? 1.0f : 0.0f;
    }
  }
  const at::Tensor d = runtime::to_device_async(
      torch::from_blob(dct.data(), {bins, bins}, torch::kDouble).to(torch::kFloat), x.device());
  const at::Tensor m = runtime::to_device_async(
      torch::from_blob(mask.data(), {batch, 1, bins}, torch::kFloat).clone(), x.device());
  const at::Tensor r =
      runtime::to_device_async(
          torch::from_blob(rows.data(), {batch, frames, 1}, torch::kFloat).clone(), x.device())
          .to(x.scalar_type());
  const at::Tensor y = out.to(torch::kFloat);
  const at::Tensor liftered = torch::matmul(torch::matmul(y, d.t()) * m, d).to(x.scalar_type());
  return out + (liftered - out) * r;
}

AugmentBatch SpectralSmoothing::apply(const at::Tensor& x, const at::Tensor& lengths,
                                      at::Generator& generator) const {
  const int64_t batch = x.size(0);
  const at::Tensor widths = torch::randint(config_.time_width_low, config_.time_width_high + 1,
                                           {batch}, generator, torch::kLong);
  at::Tensor keeps = torch::zeros({batch}, torch::kLong);
  if (config_.keep_high > 0) {
    keeps = torch::randint(config_.keep_low, config_.keep_high + 1, {batch}, generator, torch::kLong);
  }
  return {smooth(x, lengths, widths, keeps), lengths, {}};
}

}  // namespace masr::features
