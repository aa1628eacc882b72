// tests/ops/scan_test_util.h
// Shared helpers of the selective-scan tests: random Mamba-like inputs, an independent plain
// float64 loop of the recurrence, and calls of the fast and reference scans on one input set.
#pragma once

#include <torch/torch.h>

#include <cmath>
#include <vector>

#include "ops/selective_scan.h"

namespace masr::test {

struct ScanCase {
  int64_t batch = 2, channels = 3, time = 7, state = 4;
  bool use_z = true, use_D = true, use_bias = true, softplus = true, reverse = false;
  bool use_lengths = true;
};

struct ScanInputSet {
  at::Tensor u, delta, A, B, C, D, z, bias, lengths;

  std::vector<at::Tensor*> differentiable() { return {&u, &delta, &A, &B, &C, &D, &z, &bias}; }
};

// Lengths: the first utterance is full length, the others random in [1, time].
inline ScanInputSet random_scan_inputs(const ScanCase& c, at::ScalarType dtype, uint64_t seed) {
  at::manual_seed(seed);
  const auto o = at::TensorOptions().dtype(dtype);
  ScanInputSet s;
  s.u = torch::randn({c.batch, c.channels, c.time}, o);
  // Before softplus delta is a logit around softplus^-1(0.05); without it, a positive step.
  s.delta = c.softplus ? torch::randn({c.batch, c.channels, c.time}, o) * 0.5 - 2.0
                       : torch::rand({c.batch, c.channels, c.time}, o) * 0.3 + 0.01;
  s.A = -torch::exp(torch::randn({c.channels, c.state}, o) * 0.5);
  s.B = torch::randn({c.batch, c.state, c.time}, o);
  s.C = torch::randn({c.batch, c.state, c.time}, o);
  if (c.use_D) s.D = torch::randn({c.channels}, o);
  if (c.use_z) s.z = torch::randn({c.batch, c.channels, c.time}, o);
  if (c.use_bias) s.bias = torch::randn({c.channels}, o) * 0.5;
  if (c.use_lengths) {
    s.lengths = torch::randint(1, c.time + 1, {c.batch}, at::kLong);
    s.lengths[0] = c.time;
  }
  return s;
}

inline ops::ScanOptions scan_options(const ScanCase& c) {
  ops::ScanOptions o;
  o.delta_softplus = c.softplus;
  o.reverse = c.reverse;
  return o;
}

inline at::Tensor run_fast(const ScanInputSet& s, const ScanCase& c) {
  return ops::selective_scan(s.u, s.delta, s.A, s.B, s.C, s.D, s.z, s.bias, s.lengths,
                             scan_options(c));
}

inline at::Tensor run_reference(const ScanInputSet& s, const ScanCase& c) {
  return ops::selective_scan_reference(s.u, s.delta, s.A, s.B, s.C, s.D, s.z, s.bias, s.lengths,
                                       scan_options(c));
}

// The recurrence of selective_scan.h as one plain float64 loop, element by element.
inline at::Tensor plain_scan(const ScanInputSet& s, const ScanCase& c) {
  const auto u = s.u.to(at::kDouble), delta = s.delta.to(at::kDouble);
  const auto A = s.A.to(at::kDouble), B = s.B.to(at::kDouble), C = s.C.to(at::kDouble);
  at::Tensor out = torch::zeros({c.batch, c.channels, c.time}, at::kDouble);
  auto ua = u.accessor<double, 3>(), da = delta.accessor<double, 3>();
  auto Aa = A.accessor<double, 2>();
  auto Ba = B.accessor<double, 3>(), Ca = C.accessor<double, 3>();
  auto oa = out.accessor<double, 3>();
  std::vector<double> h(static_cast<size_t>(c.state));
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t len = s.lengths.defined() ? s.lengths[b].item<int64_t>() : c.time;
    for (int64_t d = 0; d < c.channels; ++d) {
      std::fill(h.begin(), h.end(), 0.0);
      const double bias = s.bias.defined() ? s.bias[d].item<double>() : 0.0;
      const double skip = s.D.defined() ? s.D[d].item<double>() : 0.0;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = c.reverse ? len - 1 - step : step;
        double dt = da[b][d][t] + bias;
        if (c.softplus) dt = dt > 20.0 ? dt : std::log1p(std::exp(dt));
        double y = 0.0;
        for (int64_t n = 0; n < c.state; ++n) {
          double& hn = h[static_cast<size_t>(n)];
          hn = std::exp(dt * Aa[d][n]) * hn + dt * Ba[b][n][t] * ua[b][d][t];
          y += Ca[b][n][t] * hn;
        }
        y += skip * ua[b][d][t];
        if (s.z.defined()) {
          const double z = s.z[b][d][t].item<double>();
          y *= z / (1.0 + std::exp(-z));
        }
        oa[b][d][t] = y;
      }
    }
  }
  return out;
}

// max |t|, 0 for an empty tensor.
inline double max_abs(const at::Tensor& t) {
  return t.numel() ? t.abs().max().item<double>() : 0.0;
}

// max |a - b| / max(max |b|, floor): one relative error for a whole tensor.
inline double relative_error(const at::Tensor& a, const at::Tensor& b, double floor = 1e-12) {
  const auto ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  const double scale = std::max(bd.abs().max().item<double>(), floor);
  return (ad - bd).abs().max().item<double>() / scale;
}

// Gradients of sum(out * weight) w.r.t. every defined differentiable input (undefined stay so).
template <typename Fn>
std::vector<at::Tensor> scan_gradients(ScanInputSet s, const ScanCase& c, const at::Tensor& weight,
                                       Fn&& scan) {
  std::vector<at::Tensor> leaves;
  for (at::Tensor* t : s.differentiable()) {
    if (t->defined()) *t = t->detach().clone().requires_grad_(true);
  }
  const at::Tensor out = scan(s, c);
  (out * weight).sum().backward();
  for (at::Tensor* t : s.differentiable())
    leaves.push_back(t->defined() ? t->grad() : at::Tensor());
  return leaves;
}

}  // namespace masr::test
