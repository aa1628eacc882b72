// tests/ops/test_causal_conv.cpp
// The Mamba block's causal depthwise conv1d + SiLU: the LibTorch formulation against a loop over
// the definition (both directions), and the fused CUDA kernels ("[.cuda]", on the GPU machine)
// against it: outputs and the gradients of x, weight and bias, on fresh random inputs laid out as
// the block lays them out; the backward bitwise reproducible.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <array>
#include <cmath>

#include "ops/causal_conv.h"

namespace {

// silu(bias[d] + sum_m w[d, m] x[b, d, t + s_m]) by its definition, in double.
at::Tensor by_definition(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                         bool reverse) {
  const at::Tensor xd = x.to(at::kDouble), wd = w.to(at::kDouble), bd = bias.to(at::kDouble);
  const int64_t B = x.size(0), D = x.size(1), T = x.size(2), K = w.size(2);
  at::Tensor out = torch::zeros({B, D, T}, torch::kDouble);
  auto xa = xd.accessor<double, 3>();
  auto wa = wd.accessor<double, 3>();
  auto ba = bd.accessor<double, 1>();
  auto oa = out.accessor<double, 3>();
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t d = 0; d < D; ++d) {
      for (int64_t t = 0; t < T; ++t) {
        double acc = ba[d];
        for (int64_t m = 0; m < K; ++m) {
          const int64_t s = t + (reverse ? K - 1 - m : m - (K - 1));
          if (s >= 0 && s < T) acc += wa[d][0][m] * xa[b][d][s];
        }
        oa[b][d][t] = acc / (1.0 + std::exp(-acc));
      }
    }
  }
  return out;
}

// x as the Mamba block has it: the first D channels of a (B, T, 2D) projection, seen as (B, D, T).
at::Tensor block_layout(int64_t B, int64_t D, int64_t T, const at::TensorOptions& o) {
  return torch::randn({B, T, 2 * D}, o).transpose(1, 2).narrow(1, 0, D);
}

double rel_err(const at::Tensor& a, const at::Tensor& ref) {
  const at::Tensor r = ref.to(at::kDouble).cpu(), x = a.to(at::kDouble).cpu();
  const double scale = std::max(r.abs().max().item<double>(), 1e-30);
  return (x - r).abs().max().item<double>() / scale;
}

}  // namespace

TEST_CASE("causal_conv1d_silu on the CPU is the causal (and mirrored) depthwise conv + SiLU",
          "[ops]") {
  torch::manual_seed(3);
  for (const bool reverse : {false, true}) {
    const std::array<int64_t, 4> shapes[] = {{2, 3, 1, 4}, {1, 5, 3, 4}, {2, 4, 17, 3}};
    for (const auto& shape : shapes) {
      const auto [B, D, T, K] = shape;
      const at::Tensor x = block_layout(B, D, T, {});
      const at::Tensor w = torch::randn({D, 1, K}), bias = torch::randn({D});
      const at::Tensor u = masr::ops::causal_conv1d_silu(x, w, bias, reverse);
      CHECK(u.sizes() == x.sizes());
      CHECK(rel_err(u, by_definition(x, w, bias, reverse)) < 1e-6);
    }
  }
  // A hand-computable case: width 2, weights (1, 10), bias 0, x = 1, 2, 3 (pre-activations).
  const at::Tensor x = torch::tensor({1.f, 2.f, 3.f}).reshape({1, 1, 3});
  const at::Tensor w = torch::tensor({1.f, 10.f}).reshape({1, 1, 2}), b = torch::zeros({1});
  auto pre = [](double v) { return v / (1 + std::exp(-v)); };
  const at::Tensor causal = masr::ops::causal_conv1d_silu(x, w, b, false).flatten();
  const at::Tensor mirrored = masr::ops::causal_conv1d_silu(x, w, b, true).flatten();
  // causal: 10*1, 1*1 + 10*2, 2 + 30; mirrored: 10*1 + 1*2, 10*2 + 3, 10*3.
  const double want_c[] = {pre(10), pre(21), pre(32)}, want_m[] = {pre(12), pre(23), pre(30)};
  for (int t = 0; t < 3; ++t) {
    CHECK(causal[t].item<double>() == Approx(want_c[t]).epsilon(1e-6));
    CHECK(mirrored[t].item<double>() == Approx(want_m[t]).epsilon(1e-6));
  }
  CHECK_THROWS_WITH(masr::ops::causal_conv1d_silu(x, torch::randn({2, 1, 4}), b, false),
                    Catch::Contains("weight (D, 1, K)"));
}

TEST_CASE("fused CUDA causal conv1d + SiLU matches the LibTorch formulation", "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  torch::manual_seed(11);
  for (const auto dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    // Stated tolerances, max |cuda - cpu| / max |cpu|: the kernels compute in float32 and round
    // the output to the dtype.
    const double tol_fwd = dtype == at::kFloat ? 1e-5 : 1e-2;
    const double tol_grad = dtype == at::kFloat ? 1e-5 : 1.5e-2;
    for (const bool reverse : {false, true}) {
      const std::array<int64_t, 4> shapes[] = {
          {2, 5, 1, 4}, {3, 64, 7, 4}, {2, 100, 333, 4}, {1, 33, 50, 3}, {2, 256, 750, 4}};
      for (const auto& shape : shapes) {
        const auto [B, D, T, K] = shape;
        CAPTURE(dtype, reverse, B, D, T, K);
        // Inputs rounded to the dtype, so both sides see the same values.
        const at::Tensor x0 = block_layout(B, D, T, {}).to(dtype).to(at::kFloat);
        const at::Tensor w0 = torch::randn({D, 1, K}) * 0.5, b0 = torch::randn({D});
        const at::Tensor g0 = torch::randn({B, D, T}).to(dtype).to(at::kFloat);

        const at::Tensor x = x0.clone().requires_grad_(true);
        const at::Tensor w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
        const at::Tensor u = masr::ops::causal_conv1d_silu(x, w, b, reverse);
        u.backward(g0);

        // On the GPU, x in the block's layout (a channel slice of a wider time-major tensor).
        const at::Tensor xc_full =
            torch::zeros({B, T, 2 * D}, at::TensorOptions(at::kCUDA).dtype(dtype));
        xc_full.narrow(2, 0, D).copy_(x0.transpose(1, 2));
        const at::Tensor xc = xc_full.transpose(1, 2).narrow(1, 0, D).detach().requires_grad_(true);
        const at::Tensor wc = w0.to(at::kCUDA).requires_grad_(true);
        const at::Tensor bc = b0.to(at::kCUDA).requires_grad_(true);
        const at::Tensor uc = masr::ops::causal_conv1d_silu(xc, wc, bc, reverse);
        CHECK(uc.scalar_type() == dtype);
        uc.backward(g0.to(at::kCUDA, dtype));
        CHECK(rel_err(uc, u) < tol_fwd);
        CHECK(rel_err(xc.grad(), x.grad()) < tol_grad);
        CHECK(rel_err(wc.grad(), w.grad()) < tol_grad);
        CHECK(rel_err(bc.grad(), b.grad()) < tol_grad);

        // The backward twice: bitwise the same (no atomics).
        const at::Tensor x2 = xc.detach().requires_grad_(true);
        const at::Tensor w2 = w0.to(at::kCUDA).requires_grad_(true);
        const at::Tensor b2 = b0.to(at::kCUDA).requires_grad_(true);
        masr::ops::causal_conv1d_silu(x2, w2, b2, reverse).backward(g0.to(at::kCUDA, dtype));
        CHECK(torch::equal(x2.grad(), xc.grad()));
        CHECK(torch::equal(w2.grad(), wc.grad()));
        CHECK(torch::equal(b2.grad(), bc.grad()));
      }
    }
  }
}

TEST_CASE("causal_conv1d_silu with lengths reads frames past each length as zeros and zeroes them",
          "[ops]") {
  torch::manual_seed(12);
  const at::Tensor x = torch::randn({3, 6, 9}), w = torch::randn({6, 1, 4}), b = torch::randn({6});
  const at::Tensor lengths = torch::tensor({9, 5, 1}, torch::kLong);
  for (const bool reverse : {false, true}) {
    CAPTURE(reverse);
    const at::Tensor u = masr::ops::causal_conv1d_silu(x, w, b, reverse, lengths);
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t len = lengths[i].item<int64_t>();
      // Each utterance alone, cut to its length: the definition with zeros outside it.
      const at::Tensor alone = by_definition(x.slice(0, i, i + 1).narrow(2, 0, len), w, b, reverse);
      CHECK(rel_err(u.slice(0, i, i + 1).narrow(2, 0, len), alone) < 1e-5);
      if (len < 9) CHECK(u.slice(0, i, i + 1).narrow(2, len, 9 - len).abs().max().item<double>() == 0.0);
    }
  }
}

TEST_CASE("fused CUDA causal conv1d + SiLU on time-major inputs with lengths", "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  torch::manual_seed(13);
  for (const auto dtype : {at::kFloat, at::kBFloat16}) {
    const double tol_fwd = dtype == at::kFloat ? 1e-5 : 1e-2;
    const double tol_grad = dtype == at::kFloat ? 1e-5 : 1.5e-2;
    for (const bool reverse : {false, true}) {
      const std::array<int64_t, 3> shapes[] = {{2, 5, 3}, {3, 64, 37}, {4, 160, 750}, {2, 33, 300}};
      for (const auto& shape : shapes) {
        const auto [B, D, T] = shape;
        CAPTURE(dtype, reverse, B, D, T);
        const at::Tensor x0 = torch::randn({B, D, T}).to(dtype).to(at::kFloat);
        const at::Tensor w0 = torch::randn({D, 1, 4}) * 0.5, b0 = torch::randn({D});
        const at::Tensor g0 = torch::randn({B, D, T}).to(dtype).to(at::kFloat);
        at::Tensor lengths = torch::randint(0, T + 1, {B}, torch::kLong);
        lengths[0] = T;
        const at::Tensor x = x0.clone().requires_grad_(true);
        const at::Tensor w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
        masr::ops::causal_conv1d_silu(x, w, b, reverse, lengths).backward(g0);

        // x as the time-major Mamba block has it: a row block of a (2D, B * T) matrix.
        const at::Tensor full = torch::zeros({2 * D, B * T}, at::TensorOptions(at::kCUDA).dtype(dtype));
        full.narrow(0, 0, D).copy_(x0.permute({1, 0, 2}).reshape({D, B * T}));
        const at::Tensor xc = full.narrow(0, 0, D).view({D, B, T}).permute({1, 0, 2})
                                  .detach().requires_grad_(true);
        const at::Tensor wc = w0.to(at::kCUDA).requires_grad_(true);
        const at::Tensor bc = b0.to(at::kCUDA).requires_grad_(true);
        const at::Tensor uc =
            masr::ops::causal_conv1d_silu(xc, wc, bc, reverse, lengths.to(at::kCUDA));
        CHECK(uc.stride(2) == 1);  // written time-major
        uc.backward(g0.to(at::kCUDA, dtype));
        const at::Tensor u = masr::ops::causal_conv1d_silu_reference(x0, w0, b0, reverse, lengths);
        CHECK(rel_err(uc, u) < tol_fwd);
        CHECK(rel_err(xc.grad(), x.grad()) < tol_grad);
        CHECK(rel_err(wc.grad(), w.grad()) < tol_grad);
        CHECK(rel_err(bc.grad(), b.grad()) < tol_grad);
      }
    }
  }
}
