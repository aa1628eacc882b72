// tests/models/test_mamba.cpp
// The bidirectional Mamba block against its definition (forward direction plus the backward
// direction run on time-reversed input) and per-utterance padding.
#include <catch2/catch.hpp>

#include <vector>

#include "nn/mamba.h"

namespace {

using masr::nn::Mamba;
using masr::nn::MambaConfig;

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

// A unidirectional block with the bidirectional block's shared projections and the given
// direction's own weights.
Mamba direction_copy(const Mamba& bi, bool backward) {
  Mamba uni(bi->d_model, MambaConfig{}, false);
  torch::NoGradGuard no_grad;
  uni->in_proj->weight.copy_(bi->in_proj->weight);
  uni->out_proj->weight.copy_(bi->out_proj->weight);
  const auto& conv = backward ? bi->conv1d_b : bi->conv1d;
  uni->conv1d->weight.copy_(conv->weight);
  uni->conv1d->bias.copy_(conv->bias);
  uni->x_proj->weight.copy_((backward ? bi->x_proj_b : bi->x_proj)->weight);
  const auto& dt = backward ? bi->dt_proj_b : bi->dt_proj;
  uni->dt_proj->weight.copy_(dt->weight);
  uni->dt_proj->bias.copy_(dt->bias);
  uni->A_log.copy_(backward ? bi->A_b_log : bi->A_log);
  uni->D.copy_(backward ? bi->D_b : bi->D);
  return uni;
}

}  // namespace

TEST_CASE("BiMamba v2 averages the forward block and the time-reversed backward block",
          "[models]") {
  torch::manual_seed(3);
  Mamba bi(16, MambaConfig{}, true);
  {
    // Spread A_log and D so the two directions differ visibly.
    torch::NoGradGuard no_grad;
    bi->A_b_log.normal_(0.0, 0.5);
    bi->D_b.normal_();
  }
  Mamba forward = direction_copy(bi, false);
  Mamba backward = direction_copy(bi, true);
  const at::Tensor x = torch::randn({2, 9, 16});
  const at::Tensor expected =
      0.5 * forward->forward(x) + 0.5 * backward->forward(x.flip(1)).flip(1);
  const at::Tensor got = bi->forward(x);
  CHECK(got.sizes() == x.sizes());
  CHECK(rel_diff(got, expected) <= 1e-5);
}

TEST_CASE("Mamba with lengths computes each utterance as if alone", "[models]") {
  torch::manual_seed(4);
  for (bool bidirectional : {true, false}) {
    INFO("bidirectional " << bidirectional);
    Mamba m(16, MambaConfig{}, bidirectional);
    at::Tensor x = torch::randn({3, 10, 16});
    const at::Tensor lengths = torch::tensor({10, 6, 3}, torch::kLong);
    const at::Tensor batch = m->forward(x, lengths);
    for (int64_t b = 0; b < 3; ++b) {
      const int64_t len = lengths[b].item<int64_t>();
      const at::Tensor alone = m->forward(x.slice(0, b, b + 1).slice(1, 0, len));
      CHECK(rel_diff(batch.slice(0, b, b + 1).slice(1, 0, len), alone) <= 1e-5);
      if (len < 10) CHECK(batch.slice(0, b, b + 1).slice(1, len).abs().max().item<double>() == 0.0);
    }
  }
}

TEST_CASE("Mamba initializes A_log as S4D-real and dt_proj.bias as softplus^-1 of 1e-3 to 1e-1",
          "[models]") {
  Mamba m(32, MambaConfig{}, true);
  CHECK(m->dt_rank == 2);
  CHECK(m->d_inner == 64);
  CHECK(torch::allclose(m->A_log[5], torch::log(torch::arange(1, 17, torch::kFloat))));
  CHECK(torch::allclose(m->D_b, torch::ones({64})));
  const at::Tensor dt = torch::softplus(m->dt_proj->bias);
  CHECK(dt.min().item<double>() >= 1e-3 * 0.999);
  CHECK(dt.max().item<double>() <= 1e-1 * 1.001);
}

namespace {

// Output, input gradient and every parameter gradient of m on x (and lengths), for a fixed
// upstream gradient g; time_major picks forward_time_major.
std::vector<at::Tensor> run_block(Mamba& m, const at::Tensor& x0, const at::Tensor& lengths,
                                  const at::Tensor& g, bool time_major) {
  m->zero_grad();
  const at::Tensor x = x0.detach().clone().requires_grad_(true);
  const at::Tensor out = time_major ? m->forward_time_major(x, lengths) : m->forward(x, lengths);
  out.backward(g);
  std::vector<at::Tensor> all = {out.detach().cpu().to(at::kFloat), x.grad().cpu().to(at::kFloat)};
  for (const auto& p : m->parameters()) all.push_back(p.grad().cpu().to(at::kFloat));
  return all;
}

}  // namespace

TEST_CASE("The time-major Mamba block equals the (B, T, C) formulation: outputs and gradients",
          "[models]") {
  torch::manual_seed(5);
  for (bool bidirectional : {true, false}) {
    INFO("bidirectional " << bidirectional);
    MambaConfig config;
    config.bias = true;  // exercise the projection biases too
    Mamba m(16, config, bidirectional);
    const at::Tensor x = torch::randn({3, 11, 16});
    const at::Tensor g = torch::randn({3, 11, 16});
    for (const at::Tensor& lengths : {at::Tensor(), torch::tensor({11, 7, 2}, torch::kLong)}) {
      INFO("lengths " << lengths.defined());
      const auto expected = run_block(m, x, lengths, g, false);
      const auto got = run_block(m, x, lengths, g, true);
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("tensor " << i << " (0 output, 1 input grad, then parameters)");
        CHECK(rel_diff(got[i], expected[i]) <= 1e-5);
      }
    }
  }
}

TEST_CASE("Mamba on CUDA (time-major kernels) matches the CPU block: outputs and gradients",
          "[.cuda]") {
  REQUIRE(torch::cuda::is_available());
  torch::manual_seed(6);
  for (bool bidirectional : {true, false}) {
    INFO("bidirectional " << bidirectional);
    Mamba cpu(64, MambaConfig{}, bidirectional);
    Mamba gpu(64, MambaConfig{}, bidirectional);
    {
      torch::NoGradGuard no_grad;
      const auto src = cpu->parameters();
      const auto dst = gpu->parameters();
      for (size_t i = 0; i < src.size(); ++i) dst[i].copy_(src[i]);
    }
    gpu->to(at::kCUDA);
    const at::Tensor x = torch::randn({4, 300, 64});
    const at::Tensor g = torch::randn({4, 300, 64});
    const at::Tensor lengths = torch::tensor({300, 251, 17, 1}, torch::kLong);
    const auto expected = run_block(cpu, x, lengths, g, false);
    const auto got = run_block(gpu, x.to(at::kCUDA), lengths.to(at::kCUDA), g.to(at::kCUDA), false);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("tensor " << i << " (0 output, 1 input grad, then parameters)");
      // Stated tolerance: float32 kernels against the CPU scan, 1e-4 of each tensor's maximum.
      CHECK(rel_diff(got[i], expected[i]) <= 1e-4);
    }
  }
}
