// lib/nn/mamba.cpp
// Mamba (S6) block, uni- and bidirectional, on masr::ops::selective_scan.
#include "nn/mamba.h"

#include <cmath>

#include "core/error.h"
#include "nn/masks.h"
#include "nn/quantized_linear.h"
#include "ops/causal_conv.h"
#include "ops/selective_scan.h"

namespace masr::nn {
namespace F = torch::nn::functional;

MambaImpl::MambaImpl(int64_t d_model_, const MambaConfig& config, bool bidirectional_)
    : d_model(d_model_),
      d_inner(config.expand * d_model_),
      d_state(config.d_state),
      d_conv(config.d_conv),
      dt_rank(config.dt_rank > 0 ? config.dt_rank : (d_model_ + 15) / 16),
      bidirectional(bidirectional_) {
  using torch::nn::Conv1dOptions;
  using torch::nn::LinearOptions;
  in_proj.linear = register_module(
      "in_proj", torch::nn::Linear(LinearOptions(d_model, 2 * d_inner).bias(config.bias)));
  auto make_conv = [&] {
    return torch::nn::Conv1d(Conv1dOptions(d_inner, d_inner, d_conv)
                                 .groups(d_inner)
                                 .padding(d_conv - 1)
                                 .bias(config.conv_bias));
  };
  auto make_x_proj = [&] {
    return torch::nn::Linear(LinearOptions(d_inner, dt_rank + 2 * d_state).bias(false));
  };
  auto make_dt_proj = [&] { return torch::nn::Linear(LinearOptions(dt_rank, d_inner).bias(true)); };
  conv1d = register_module("conv1d", make_conv());
  x_proj = register_module("x_proj", make_x_proj());
  dt_proj = register_module("dt_proj", make_dt_proj());
  A_log = register_parameter("A_log", torch::empty({d_inner, d_state}));
  D = register_parameter("D", torch::empty({d_inner}));
  init_direction(dt_proj, A_log, D);
  if (bidirectional) {
    conv1d_b = register_module("conv1d_b", make_conv());
    x_proj_b = register_module("x_proj_b", make_x_proj());
    dt_proj_b = register_module("dt_proj_b", make_dt_proj());
    A_b_log = register_parameter("A_b_log", torch::empty({d_inner, d_state}));
    D_b = register_parameter("D_b", torch::empty({d_inner}));
    init_direction(dt_proj_b, A_b_log, D_b);
  }
  out_proj.linear = register_module(
      "out_proj", torch::nn::Linear(LinearOptions(d_inner, d_model).bias(config.bias)));
}

// mamba_ssm's initialization: dt_proj.weight ~ U(+-dt_rank^-0.5); dt_proj.bias = softplus^-1(dt)
// with dt log-uniform in [1e-3, 1e-1] (floored at 1e-4); A_log = log(1..N) (S4D-real); D = 1.
void MambaImpl::init_direction(torch::nn::Linear& dtp, at::Tensor& a_log, at::Tensor& d) {
  torch::NoGradGuard no_grad;
  const double std = std::pow(static_cast<double>(dt_rank), -0.5);
  dtp->weight.uniform_(-std, std);
  const double lo = std::log(1e-3), hi = std::log(1e-1);
  at::Tensor dt = torch::exp(torch::rand({d_inner}) * (hi - lo) + lo).clamp_min(1e-4);
  dtp->bias.copy_(dt + torch::log(-torch::expm1(-dt)));
  a_log.copy_(torch::log(torch::arange(1, d_state + 1, torch::kFloat)).repeat({d_inner, 1}));
  d.fill_(1.0);
}

ops::ScanDirection MambaImpl::direction(const at::Tensor& x, torch::nn::Conv1d& conv,
                                       torch::nn::Linear& xp, torch::nn::Linear& dtp,
                                       const at::Tensor& a_log, const at::Tensor& d,
                                       bool reverse) const {
  // Causal depthwise conv + SiLU; the reverse branch is the mirror image (the upstream flips time
  // and runs the causal conv). One fused kernel per pass on CUDA (ops/causal_conv.h).
  const at::Tensor u = ops::causal_conv1d_silu(x, conv->weight, conv->bias, reverse);  // (B, di, T)
  const at::Tensor x_dbl = xp->forward(u.transpose(1, 2));  // (B, T, R + 2N)
  const auto parts = x_dbl.split({dt_rank, d_state, d_state}, -1);
  ops::ScanDirection s;
  s.u = u.contiguous();
  s.delta = torch::matmul(parts[0], dtp->weight.t()).transpose(1, 2).contiguous();  // (B, di, T)
  s.B = parts[1].transpose(1, 2).contiguous();                                     // (B, N, T)
  s.C = parts[2].transpose(1, 2).contiguous();
  s.A = -torch::exp(a_log.to(torch::kFloat));
  s.D = d.to(torch::kFloat);
  s.delta_bias = dtp->bias.to(torch::kFloat);
  return s;
}

at::Tensor MambaImpl::forward(const at::Tensor& hidden, const at::Tensor& lengths) {
  if (hidden.is_cuda()) return forward_time_major(hidden, lengths);
  if ((in_proj.int8 || out_proj.int8) && is_training()) {
    throw_input_error("Mamba: int8 projections are for decoding only (the model is in training "
                      "mode)");
  }
  const at::Tensor xz = in_proj.forward(hidden).transpose(1, 2);  // (B, 2*d_inner, T)
  at::Tensor x = xz.narrow(1, 0, d_inner);
  const at::Tensor z = xz.narrow(1, d_inner, d_inner).contiguous();
  at::Tensor lens;
  if (lengths.defined()) {
    lens = lengths.to(hidden.device()).to(torch::kLong);
    x = zero_padding(x.transpose(1, 2), lens).transpose(1, 2);
  }
  const ops::ScanDirection f = direction(x, conv1d, x_proj, dt_proj, A_log, D, false);
  at::Tensor y;
  if (bidirectional) {
    // Both directions' scans in one call (one kernel launch on CUDA).
    const ops::ScanDirection r = direction(x, conv1d_b, x_proj_b, dt_proj_b, A_b_log, D_b, true);
    const auto [y_f, y_b] = ops::selective_scan_bidirectional(f, r, z, lens);
    y = 0.5 * y_f + 0.5 * y_b;
  } else {
    ops::ScanOptions options;
    options.delta_softplus = true;
    y = ops::selective_scan(f.u, f.delta, f.A, f.B, f.C, f.D, z, f.delta_bias, lens, options);
  }
  return out_proj.forward(y.transpose(1, 2));
}

namespace {

// (C, B * T) matrix -> (B, C, T) view, time contiguous.
at::Tensor batch_view(const at::Tensor& matrix, int64_t batch, int64_t time) {
  return matrix.view({matrix.size(0), batch, time}).permute({1, 0, 2});
}

// (B, C, T) -> (C, B * T): a view of what batch_view and the time-major conv kernels produce
// (a copy for other layouts, e.g. the CPU reference conv's output).
at::Tensor matrix_view(const at::Tensor& x) {
  return x.permute({1, 0, 2}).reshape({x.size(1), x.size(0) * x.size(2)});
}

// weight @ m (+ bias per row).
at::Tensor project(const torch::nn::Linear& linear, const at::Tensor& m) {
  return linear->bias.defined() ? at::addmm(linear->bias.unsqueeze(1), linear->weight, m)
                                : at::mm(linear->weight, m);
}

}  // namespace

ops::ScanDirection MambaImpl::time_major_direction(const at::Tensor& x, const at::Tensor& lengths,
                                                   torch::nn::Conv1d& conv, torch::nn::Linear& xp,
                                                   torch::nn::Linear& dtp, const at::Tensor& a_log,
                                                   const at::Tensor& d, bool reverse) const {
  const int64_t batch = x.size(0), time = x.size(2);
  // Frames past each length are read as zeros by the conv (padding never reaches real frames).
  const at::Tensor u = ops::causal_conv1d_silu(x, conv->weight, conv->bias, reverse, lengths);
  const at::Tensor x_dbl = at::mm(xp->weight, matrix_view(u));  // (R + 2N, B * T)
  const auto parts = x_dbl.split({dt_rank, d_state, d_state}, 0);
  ops::ScanDirection s;
  s.u = u;
  // delta = dt_proj(parts[0]) stays factored: the scan forms it (bias added there) and forms it
  // again in its backward pass instead of keeping a (B, d_inner, T) tensor per direction.
  s.delta_low = parts[0];
  s.delta_weight = dtp->weight;
  s.B = batch_view(parts[1], batch, time);
  s.C = batch_view(parts[2], batch, time);
  s.A = -torch::exp(a_log.to(torch::kFloat));
  s.D = d.to(torch::kFloat);
  s.delta_bias = dtp->bias.to(torch::kFloat);
  return s;
}

at::Tensor MambaImpl::forward_time_major(const at::Tensor& hidden, const at::Tensor& lengths) {
  const int64_t batch = hidden.size(0), time = hidden.size(1);
  // (2 * d_inner, B * T): x and z are its two row blocks, each a (d_inner, B * T) matrix.
  const at::Tensor xz = project(in_proj.linear, hidden.reshape({batch * time, d_model}).t());
  const auto halves = xz.split(d_inner, 0);
  const at::Tensor x = batch_view(halves[0], batch, time), z = batch_view(halves[1], batch, time);
  const at::Tensor lens = lengths.defined() ? lengths.to(hidden.device()).to(torch::kLong)
                                            : at::Tensor();
  const ops::ScanDirection f =
      time_major_direction(x, lens, conv1d, x_proj, dt_proj, A_log, D, false);
  at::Tensor y;
  if (bidirectional) {
    // The two directions' average: each scan output comes scaled by 0.5.
    const ops::ScanDirection r =
        time_major_direction(x, lens, conv1d_b, x_proj_b, dt_proj_b, A_b_log, D_b, true);
    const auto [y_f, y_b] = ops::selective_scan_bidirectional(f, r, z, lens, true, 0.5);
    y = y_f + y_b;
  } else {
    ops::ScanOptions options;
    options.delta_softplus = true;
    y = ops::selective_scan(f.u, ops::delta_of(f), f.A, f.B, f.C, f.D, z, f.delta_bias, lens,
                            options);
  }
  // (B * T, d_model) = y^T out_proj^T; the matrix product reads the time-major y in place.
  const at::Tensor rows = matrix_view(y).t();
  const at::Tensor out = out_proj->bias.defined()
                             ? at::addmm(out_proj->bias, rows, out_proj->weight.t())
                             : at::mm(rows, out_proj->weight.t());
  return out.view({batch, time, d_model});
}

}  // namespace masr::nn
