// lib/ops/selective_scan_reference.cpp
// The step-by-step selective scan (see selective_scan.h), following mamba's selective_scan_ref
// but with per-utterance lengths: frames at or beyond lengths[b] neither update the state nor
// produce output, so the reverse scan of a padded utterance starts at its own last frame.
#include "ops/selective_scan.h"

#include <torch/torch.h>

#include <vector>

namespace masr::ops {

at::Tensor selective_scan_reference(const at::Tensor& u, const at::Tensor& delta,
                                    const at::Tensor& A, const at::Tensor& B, const at::Tensor& C,
                                    const at::Tensor& D, const at::Tensor& z,
                                    const at::Tensor& delta_bias, const at::Tensor& lengths,
                                    const ScanOptions& options) {
  const auto state_type = u.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const int64_t batch = u.size(0), channels = u.size(1), time = u.size(2);
  at::Tensor uf = u.to(state_type), dt = delta.to(state_type);
  if (delta_bias.defined()) dt = dt + delta_bias.to(state_type).view({1, channels, 1});
  if (options.delta_softplus) dt = torch::nn::functional::softplus(dt);
  const at::Tensor Af = A.to(state_type), Bf = B.to(state_type), Cf = C.to(state_type);

  // valid[b, t] = 1 for real frames, 0 for padding.
  at::Tensor valid = torch::ones({batch, time}, uf.options());
  if (lengths.defined()) {
    valid = (torch::arange(time, lengths.options()).view({1, time}) < lengths.view({batch, 1}))
                .to(state_type);
  }

  at::Tensor h = torch::zeros({batch, channels, A.size(1)}, uf.options());
  std::vector<at::Tensor> ys(static_cast<size_t>(time));
  for (int64_t step = 0; step < time; ++step) {
    const int64_t t = options.reverse ? time - 1 - step : step;
    const at::Tensor m = valid.select(1, t).view({batch, 1, 1});
    const at::Tensor dt_t = dt.select(2, t).unsqueeze(-1);        // (B, D, 1)
    const at::Tensor decay = torch::exp(dt_t * Af.unsqueeze(0));  // (B, D, N)
    const at::Tensor input = dt_t * Bf.select(2, t).unsqueeze(1) * uf.select(2, t).unsqueeze(-1);
    // Padding frames keep the state unchanged (m = 0), so it carries through untouched.
    h = m * (decay * h + input) + (1 - m) * h;
    ys[static_cast<size_t>(t)] = (h * Cf.select(2, t).unsqueeze(1)).sum(-1);  // (B, D)
  }
  at::Tensor y = torch::stack(ys, 2);
  if (D.defined()) y = y + D.to(state_type).view({1, channels, 1}) * uf;
  if (z.defined()) y = y * torch::silu(z.to(state_type));
  y = y * valid.unsqueeze(1);
  if (options.output_scale != 1.0) y = y * options.output_scale;
  return y.to(u.scalar_type());
}

}  // namespace masr::ops
