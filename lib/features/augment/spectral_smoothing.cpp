// lib/features/augment/spectral_smoothing.cpp
// The moving average as a few gathers (one per window offset, each weighted for the rows whose
// window has it), the liftering as two matrix products with a per-row mask; the indices, weights,
// masks and the DCT matrix are made on the host (K x B x T and F x F numbers) and uploaded
// without waiting.
#include "features/augment/spectral_smoothing.h"

#include <torch/torch.h>

#include <cmath>

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
  std::string s =
      string_printf("time width %lld-%lld frames", static_cast<long long>(config_.time_width_low),
                    static_cast<long long>(config_.time_width_high));
  if (config_.keep_high > 0) {
    s +=
        string_printf(", %lld-%lld cepstral coefficients", static_cast<long long>(config_.keep_low),
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
  // On the host: each row's valid frames (round(length * T), at least 1), width and kept count.
  const at::TensorOptions host_long = torch::TensorOptions().dtype(torch::kLong);
  const at::Tensor valid = at::round(lengths.to(torch::kCPU, torch::kDouble) * frames)
                               .clamp(1, frames)
                               .to(torch::kLong)
                               .view({batch, 1});
  const at::Tensor w = widths.to(torch::kCPU, torch::kLong).view({batch, 1});
  const at::Tensor c = keeps.to(torch::kCPU, torch::kLong).view({batch, 1});
  const at::Tensor t = at::arange(frames, host_long).view({1, frames});
  const at::Tensor inside = t < valid;  // (B, T): frames past a row's end pass unchanged
  at::Tensor out = x;
  // Row b's window reaches back (w-1)/2 frames and ahead w/2 (integer division).
  const at::Tensor back = (w - 1).div(2, "floor"), ahead = w.div(2, "floor");
  const int64_t before = back.max().item<int64_t>(), after = ahead.max().item<int64_t>();
  if (before + after > 0) {
    // Offset k of the widest window: row b takes it when its own window has it, from frame
    // t + k held inside its valid frames. Indices and weights (K, B, T) go up once.
    const at::Tensor k = at::arange(-before, after + 1, host_long).view({-1, 1, 1});
    const at::Tensor index = at::where(inside, at::minimum(at::clamp_min(t + k, 0), valid - 1), t);
    const at::Tensor in_window = (k >= -back) & (k <= ahead);  // (K, B, 1)
    const at::Tensor weight = at::where(inside, in_window.to(torch::kFloat) / w.to(torch::kFloat),
                                        (k == 0).to(torch::kFloat));
    const at::Tensor idx = runtime::to_device_async(index.contiguous(), x.device());
    const at::Tensor wt =
        runtime::to_device_async(weight.contiguous(), x.device()).to(x.scalar_type());
    at::Tensor sum = torch::zeros_like(x);
    for (int64_t i = 0; i < k.size(0); ++i) {
      sum =
          sum + x.gather(1, idx[i].unsqueeze(2).expand({batch, frames, bins})) * wt[i].unsqueeze(2);
    }
    out = sum;
  }
  if (!(c > 0).any().item<bool>()) return out;
  // The orthonormal DCT-II over the bins: D[q][n] = s_q cos(pi (n + 1/2) q / F); each liftered
  // row keeps its first c coefficients (frames past its end, and rows with c = 0, unchanged).
  const at::Tensor q = at::arange(bins, torch::kDouble).view({bins, 1});
  const at::Tensor n = at::arange(bins, torch::kDouble).view({1, bins});
  const at::Tensor scale =
      at::where(q == 0, at::full_like(q, 1.0 / bins), at::full_like(q, 2.0 / bins));
  const at::Tensor dct =
      (at::cos(M_PI * (n + 0.5) * q / static_cast<double>(bins)) * at::sqrt(scale))
          .to(torch::kFloat);
  const at::Tensor mask =
      ((q.view({1, bins}) < c) | (c == 0)).to(torch::kFloat).view({batch, 1, bins});
  const at::Tensor rows = (inside & (c > 0)).to(torch::kFloat).view({batch, frames, 1});
  const at::Tensor d = runtime::to_device_async(dct, x.device());
  const at::Tensor m = runtime::to_device_async(mask.contiguous(), x.device());
  const at::Tensor r = runtime::to_device_async(rows.contiguous(), x.device()).to(x.scalar_type());
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
    keeps =
        torch::randint(config_.keep_low, config_.keep_high + 1, {batch}, generator, torch::kLong);
  }
  return {smooth(x, lengths, widths, keeps), lengths, {}};
}

}  // namespace masr::features
