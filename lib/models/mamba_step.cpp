// lib/models/mamba_step.cpp
// Mamba one position at a time, and the state after a whole sequence, from the block's weights.
#include "models/mamba_step.h"

#include <torch/torch.h>

#include <vector>

#include "core/error.h"

namespace masr::models {
namespace {

void require_causal(const nn::MambaImpl& mamba) {
  if (mamba.bidirectional) {
    throw_config_error("Mamba stepping: a bidirectional block depends on future frames");
  }
}

// x (..., d_inner) -> softplus(dt_proj(low-rank part)), B, C of x_proj, each (..., *).
struct Selection {
  at::Tensor delta, B, C;
};
Selection select(nn::MambaImpl& m, const at::Tensor& u) {
  const auto parts = m.x_proj->forward(u).split({m.dt_rank, m.d_state, m.d_state}, -1);
  return {at::softplus(m.dt_proj->forward(parts[0]).to(at::kFloat)), parts[1].to(at::kFloat),
          parts[2].to(at::kFloat)};
}

}  // namespace

void MambaStepState::reorder(const at::Tensor& rows) {
  const at::Tensor index = rows.to(conv.device(), at::kLong);
  conv = conv.index_select(0, index);
  ssm = ssm.index_select(0, index);
}

MambaStepState mamba_initial_state(const nn::MambaImpl& mamba, int64_t rows,
                                   const at::TensorOptions& options) {
  require_causal(mamba);
  return {at::zeros({rows, mamba.d_inner, mamba.d_conv - 1}, options),
          at::zeros({rows, mamba.d_inner, mamba.d_state}, options.dtype(at::kFloat))};
}

MambaStepState mamba_prefill(nn::MambaImpl& m, const at::Tensor& x, const at::Tensor& lengths) {
  require_causal(m);
  const int64_t batch = x.size(0), T = x.size(1), k = m.d_conv;
  const auto device = x.device();
  const at::Tensor lens = lengths.defined() ? lengths.to(device, at::kLong)
                                            : at::full({batch}, T, x.options().dtype(at::kLong));
  const at::Tensor valid =
      at::arange(T, lens.options()).unsqueeze(0) < lens.unsqueeze(1);          // (B, T)
  at::Tensor xs = m.in_proj->forward(x).narrow(2, 0, m.d_inner);               // (B, T, di)
  xs = xs.masked_fill(valid.logical_not().unsqueeze(2), 0.0).transpose(1, 2);  // (B, di, T)
  // Conv history: the inputs at frames len - (k - 1) ... len - 1, zeros before frame 0.
  const at::Tensor padded =
      torch::nn::functional::pad(xs, torch::nn::functional::PadFuncOptions({k - 1, 0}));
  const at::Tensor at_frames = lens.view({batch, 1, 1}) + at::arange(k - 1, lens.options());
  const at::Tensor conv = padded.gather(2, at_frames.expand({batch, m.d_inner, k - 1}));
  // The scan input of every frame, as MambaImpl::direction computes it.
  const at::Tensor u = at::silu(m.conv1d->forward(xs).narrow(2, 0, T)).transpose(1, 2);  // B,T,di
  const Selection s = select(m, u);
  const at::Tensor delta = s.delta.masked_fill(valid.logical_not().unsqueeze(2), 0.0);  // B,T,di
  // Decay from frame t to the end: exp(A * sum_{t < s < len} delta_s), summed in double.
  const at::Tensor total = delta.to(at::kDouble).sum(1, true);
  const at::Tensor after = (total - delta.to(at::kDouble).cumsum(1)).to(at::kFloat);
  const at::Tensor A = -at::exp(m.A_log.to(at::kFloat));  // (di, N)
  at::Tensor h = at::zeros({batch, m.d_inner, m.d_state}, x.options().dtype(at::kFloat));
  const at::Tensor drive = delta * u.to(at::kFloat);  // (B, T, di)
  const int64_t chunk = 64;                           // bounds the (B, chunk, di, N) temporary
  for (int64_t t0 = 0; t0 < T; t0 += chunk) {
    const int64_t n = std::min(chunk, T - t0);
    const at::Tensor decay = at::exp(after.narrow(1, t0, n).unsqueeze(3) * A);  // B,n,di,N
    h = h +
        (decay * drive.narrow(1, t0, n).unsqueeze(3) * s.B.narrow(1, t0, n).unsqueeze(2)).sum(1);
  }
  return {conv, h};
}

at::Tensor mamba_step(nn::MambaImpl& m, const at::Tensor& x, MambaStepState& state) {
  require_causal(m);
  const at::Tensor xz = m.in_proj->forward(x.squeeze(1));  // (N, 2 di)
  const at::Tensor xs = xz.narrow(1, 0, m.d_inner), z = xz.narrow(1, m.d_inner, m.d_inner);
  const at::Tensor window = at::cat({state.conv, xs.unsqueeze(2)}, 2);  // (N, di, k), oldest first
  at::Tensor conv_out = (window * m.conv1d->weight.squeeze(1)).sum(2);
  if (m.conv1d->bias.defined()) conv_out = conv_out + m.conv1d->bias;
  state.conv = window.narrow(2, 1, m.d_conv - 1);
  const at::Tensor u = at::silu(conv_out);  // (N, di)
  const Selection s = select(m, u);
  const at::Tensor A = -at::exp(m.A_log.to(at::kFloat));
  const at::Tensor uf = u.to(at::kFloat);
  state.ssm = at::exp(s.delta.unsqueeze(2) * A) * state.ssm +
              (s.delta * uf).unsqueeze(2) * s.B.unsqueeze(1);
  at::Tensor y = (state.ssm * s.C.unsqueeze(1)).sum(2) + m.D.to(at::kFloat) * uf;
  y = (y * at::silu(z.to(at::kFloat))).to(x.scalar_type());
  return m.out_proj->forward(y).unsqueeze(1);
}

at::Tensor mamba_chunk(nn::MambaImpl& mamba, const at::Tensor& x, MambaStepState& state) {
  std::vector<at::Tensor> frames;
  frames.reserve(static_cast<size_t>(x.size(1)));
  for (int64_t t = 0; t < x.size(1); ++t) {
    frames.push_back(mamba_step(mamba, x.narrow(1, t, 1), state));
  }
  return at::cat(frames, 1);
}

}  // namespace masr::models
