// tests/train/test_grad_scaler.cpp
// GradScaler: torch.cuda.amp.GradScaler's update rule on sequences of finite / non-finite steps,
// the CPU unscale path, checkpoint state, config errors; a [.cuda] test of fp16 steps.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <limits>

#include "core/error.h"
#include "models/transformer_lm.h"
#include "runtime/autocast.h"
#include "train/grad_scaler.h"

using namespace masr;
using namespace masr::train;

TEST_CASE("grad scaler: the scale follows torch's update rule", "[train][scaler]") {
  GradScalerConfig config;
  config.growth_interval = 3;  // torch: 2000; 3 keeps the table short
  // Hand-computed (torch _amp_update_scale_): inf halves and resets; 3 good steps double.
  //   step:   inf   ok    ok    ok    ok    inf   ok
  //   scale:  32768 32768 32768 65536 65536 32768 32768
  //   good:   0     1     2     0     1     0     1
  const bool inf[] = {true, false, false, false, false, true, false};
  const double scales[] = {32768, 32768, 32768, 65536, 65536, 32768, 32768};
  const int64_t trackers[] = {0, 1, 2, 0, 1, 0, 1};
  ScaleState s;
  for (size_t i = 0; i < 7; ++i) {
    s = next_scale(s, inf[i], config);
    INFO("step " << i);
    CHECK(s.scale == scales[i]);
    CHECK(s.growth_tracker == trackers[i]);
  }
  // Growth that would overflow keeps the scale (torch checks isfinite of the new scale).
  ScaleState big{std::numeric_limits<double>::max(), 2};
  CHECK(next_scale(big, false, config).scale == std::numeric_limits<double>::max());
  CHECK(next_scale(big, false, config).growth_tracker == 0);
}

TEST_CASE("grad scaler: CPU unscale divides the gradients and skips on inf/nan",
          "[train][scaler]") {
  GradScaler scaler(GradScalerConfig{}, /*enabled=*/true);
  at::Tensor w = torch::ones({3}, torch::requires_grad());
  scaler.scale((w * torch::tensor({1.0f, 2.0f, 3.0f})).sum()).backward();
  CHECK(torch::allclose(w.grad(), torch::tensor({65536.0f, 131072.0f, 196608.0f})));
  CHECK(scaler.unscale({w}));
  CHECK(torch::allclose(w.grad(), torch::tensor({1.0f, 2.0f, 3.0f})));
  CHECK(scaler.unscale({w}));  // once per step
  CHECK(torch::allclose(w.grad(), torch::tensor({1.0f, 2.0f, 3.0f})));
  scaler.update();
  CHECK(scaler.scale_value() == 65536.0);
  CHECK(scaler.growth_tracker() == 1);

  w.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 0.0f});
  CHECK_FALSE(scaler.unscale({w}));
  scaler.update();
  CHECK(scaler.scale_value() == 32768.0);
  CHECK(scaler.growth_tracker() == 0);
  CHECK(scaler.skipped_steps() == 1);
  w.mutable_grad() = torch::tensor({std::nanf(""), 0.0f, 0.0f});
  CHECK_FALSE(scaler.unscale({w}));
  scaler.update();
  CHECK(scaler.scale_value() == 16384.0);

  GradScaler restored(GradScalerConfig{}, true);
  restored.load_state(scaler.state());
  CHECK(restored.scale_value() == 16384.0);
  CHECK(restored.skipped_steps() == 2);
  CHECK(restored.growth_tracker() == 0);
}

TEST_CASE("grad scaler: disabled is the identity; bad settings are errors", "[train][scaler]") {
  GradScaler off(GradScalerConfig{}, false);
  const at::Tensor loss = torch::tensor(3.0);
  CHECK(off.scale(loss).item<double>() == 3.0);
  at::Tensor w = torch::ones({1}, torch::requires_grad());
  w.mutable_grad() = torch::full({1}, std::numeric_limits<float>::infinity());
  CHECK(off.unscale({w}));
  GradScalerConfig bad;
  bad.backoff_factor = 1.5;
  CHECK_THROWS_WITH(GradScaler(bad, true), Catch::Contains("backoff_factor must be in (0, 1)"));
  bad = {};
  bad.growth_interval = 0;
  CHECK_THROWS_WITH(GradScaler(bad, true), Catch::Contains("growth_interval must be >= 1"));
  bad = {};
  bad.init_scale = -1;
  CHECK_THROWS_WITH(GradScaler(bad, true), Catch::Contains("init_scale must be a positive"));
}

TEST_CASE("grad scaler: fp16 steps of a tiny LM on CUDA", "[.cuda]") {
  if (!torch::cuda::is_available()) FAIL("no CUDA device");
  torch::manual_seed(0);
  models::TransformerLMConfig c;
  c.vocab = 31, c.d_model = 64, c.nhead = 4, c.num_encoder_layers = 2, c.d_ffn = 128;
  c.dropout = 0.0;
  models::TransformerLM lm(c);
  lm->to(torch::kCUDA);
  torch::optim::Adam adam(lm->parameters(), torch::optim::AdamOptions(1e-3));
  GradScalerConfig config;
  config.init_scale = 1024;  // low enough that no step overflows: the growth is then exact
  config.growth_interval = 4;
  GradScaler scaler(config, true);
  const at::Tensor tokens = torch::randint(3, 31, {4, 12}, torch::kLong).to(torch::kCUDA);
  double first = 0, last = 0;
  for (int step = 0; step < 8; ++step) {
    at::Tensor loss;
    {
      runtime::AutocastGuard autocast(torch::kCUDA, runtime::Precision::kFp16);
      REQUIRE(autocast.active());
      const at::Tensor logits = lm->forward(tokens.narrow(1, 0, 11));
      CHECK(logits.scalar_type() == at::kHalf);
      loss = torch::nll_loss(torch::log_softmax(logits.to(at::kFloat), -1).reshape({-1, 31}),
                             tokens.narrow(1, 1, 11).reshape({-1}));
    }
    REQUIRE(std::isfinite(loss.item<double>()));
    (step == 0 ? first : last) = loss.item<double>();
    scaler.scale(loss).backward();
    if (scaler.unscale(lm->parameters())) adam.step();
    scaler.update();
    adam.zero_grad();
  }
  CHECK(last < first);
  CHECK(scaler.skipped_steps() == 0);
  CHECK(scaler.scale_value() == 1024.0 * 4);  // 8 good steps, growth every 4
  // An inf gradient: the fused CUDA check finds it, the step is skipped and the scale halves.
  scaler.scale(lm->forward(tokens).sum() * 0).backward();
  lm->parameters().front().mutable_grad().fill_(std::numeric_limits<float>::infinity());
  CHECK_FALSE(scaler.unscale(lm->parameters()));
  scaler.update();
  CHECK(scaler.scale_value() == 1024.0 * 2);
}
