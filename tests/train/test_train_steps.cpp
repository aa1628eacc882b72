// tests/train/test_train_steps.cpp
// The training step without per-step read-backs (CPU): finite steps equal a plain
// backward + clip + AdamW + Noam loop; a non-finite loss or gradient skips the whole optimizer
// step (weights and Adam state untouched, the skip counted, training going on); the loss sums
// kept on the device give the averages a per-batch read-back gave.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include "features/augment/interface.h"
#include "train/noam_scheduler.h"
#include "train/optimizer.h"
#include "train/optimizer_stepper.h"
#include "train/train_config.h"
#include "train/train_logger.h"

using namespace masr;
using namespace masr::train;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A small tanh perceptron: 3 inputs, 4 hidden units, 1 output.
std::vector<at::Tensor> tiny_model(uint64_t seed) {
  at::Generator g = features::make_generator(seed);
  return {torch::randn({4, 3}, g).requires_grad_(), torch::randn({4}, g).requires_grad_(),
          torch::randn({1, 4}, g).requires_grad_()};
}

std::vector<at::Tensor> copy_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().requires_grad_());
  return out;
}

struct Batch {
  at::Tensor x, y;
};

Batch batch_number(int64_t i) {
  at::Generator g = features::make_generator(1000 + static_cast<uint64_t>(i));
  return {torch::randn({8, 3}, g), torch::randn({8}, g)};
}

at::Tensor model_loss(const std::vector<at::Tensor>& p, const Batch& b) {
  const at::Tensor h = torch::tanh(torch::matmul(b.x, p[0].t()) + p[1]);
  return (torch::matmul(h, p[2].t()).squeeze(1) - b.y).pow(2).mean();
}

TrainConfig stepper_config(int64_t accumulation, double max_grad_norm, bool noam) {
  TrainConfig c;
  c.optimizer.type = "AdamW";
  c.optimizer.lr = 0.05;
  c.optimizer.weight_decay = 0.01;
  c.grad_accumulation_factor = accumulation;
  c.max_grad_norm = max_grad_norm;
  c.precision = runtime::Precision::kFp32;
  if (noam) {
    c.has_scheduler = true;
    c.scheduler.lr_initial = 0.05;
    c.scheduler.n_warmup_steps = 3;
  }
  return c;
}

double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, (a[i].detach() - b[i].detach()).abs().max().item<double>());
  }
  return worst;
}

bool all_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i) {
    if (!torch::equal(a[i].detach(), b[i].detach())) return false;
  }
  return true;
}

bool grads_zero(const std::vector<at::Tensor>& params) {
  for (const auto& p : params) {
    if (p.grad().defined() && p.grad().abs().sum().item<double>() != 0.0) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("OptimizerStepper: finite steps equal plain backward, clip, AdamW and Noam", "[train]") {
  // 12 batches, accumulation 2, max_grad_norm 0.5 (most steps clip), Noam warm-up 3.
  const TrainConfig config = stepper_config(2, 0.5, true);
  const std::vector<at::Tensor> params = tiny_model(1);
  const std::vector<at::Tensor> ref = copy_of(params);
  OptimizerStepper stepper(config, params, /*cuda=*/false, nullptr);
  auto ref_optimizer = make_optimizer(config.optimizer, ref);
  NoamScheduler noam(config.scheduler);
  int clipped = 0;
  for (int64_t i = 0; i < 12; ++i) {
    const Batch b = batch_number(i);
    const at::Tensor loss = model_loss(params, b);
    const at::Tensor ref_loss = model_loss(ref, b);
    INFO("batch " << i);
    CHECK(loss.item<double>() == Approx(ref_loss.item<double>()).epsilon(1e-6));
    (ref_loss / 2.0).backward();
    const bool stepped = stepper.backward(loss);
    REQUIRE(stepped == (i % 2 == 1));
    if (i == 0) {
      // The finite loss's factor is exactly 1: the accumulated gradients are bit for bit those
      // of the plain backward.
      for (size_t k = 0; k < params.size(); ++k)
        CHECK(torch::equal(params[k].grad(), ref[k].grad()));
    }
    if (!stepped) continue;
    // torch.nn.utils.clip_grad_norm_ by hand: global L2 norm, min(1, max / (norm + 1e-6)).
    double squares = 0.0;
    for (const auto& p : ref) squares += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
    const double coef = std::min(1.0, config.max_grad_norm / (std::sqrt(squares) + 1e-6));
    clipped += coef < 1.0;
    {
      torch::NoGradGuard no_grad;
      for (const auto& p : ref) p.grad().mul_(coef);
    }
    ref_optimizer->step();
    ref_optimizer->zero_grad();
    set_learning_rate(*ref_optimizer, noam.step());
    CHECK(max_abs_diff(params, ref) < 1e-6);
    CHECK(stepper.lr() == learning_rate(*ref_optimizer));
  }
  CHECK(clipped >= 3);  // the comparison covers clipping
  CHECK(stepper.steps() == 6);
  const SkippedSteps skipped = stepper.take_skipped();
  CHECK(skipped.steps == 0);
  CHECK(skipped.batches == 0);
}

TEST_CASE("OptimizerStepper: a non-finite loss or gradient skips the step; training goes on",
          "[train]") {
  const TrainConfig config = stepper_config(1, 5.0, false);
  const std::vector<at::Tensor> params = tiny_model(2);
  const std::vector<at::Tensor> ref = copy_of(params);
  OptimizerStepper stepper(config, params, /*cuda=*/false, nullptr);
  // The reference never sees the bad batch.
  auto ref_optimizer = make_optimizer(config.optimizer, ref);
  auto ref_step = [&](const Batch& b) {
    model_loss(ref, b).backward();
    clip_gradients(ref, config.max_grad_norm);
    ref_optimizer->step();
    ref_optimizer->zero_grad();
  };
  REQUIRE(stepper.backward(model_loss(params, batch_number(0))));
  ref_step(batch_number(0));
  REQUIRE(all_equal(params, ref));
  const std::vector<at::Tensor> before = copy_of(params);

  Batch bad = batch_number(1);
  at::Tensor loss;
  SECTION("NaN input: NaN loss and NaN gradients") {
    bad.x[3][1] = kNaN;
    loss = model_loss(params, bad);
    CHECK(std::isnan(loss.item<double>()));
  }
  SECTION("infinite loss whose gradients are finite") {
    // log(0) adds -inf to the loss and nothing to its gradients: only the loss tells.
    loss = model_loss(params, bad) + torch::log(torch::zeros({}));
    CHECK(loss.item<double>() == -kInf);
    const std::vector<at::Tensor> probe = copy_of(params);
    (model_loss(probe, bad) + torch::log(torch::zeros({}))).backward();
    for (const auto& p : probe) CHECK(torch::isfinite(p.grad()).all().item<bool>());
  }
  SECTION("finite loss whose gradients are NaN") {
    // sqrt(|w - w|) is 0 with an infinite derivative at 0; times sign(0) = 0 it is NaN.
    loss = model_loss(params, bad) + torch::sqrt((params[0] - params[0].detach()).abs()).sum();
    CHECK(std::isfinite(loss.item<double>()));
  }
  REQUIRE(stepper.backward(loss));  // a step, skipped
  CHECK(all_equal(params, before));
  CHECK(grads_zero(params));    // nothing carried into the next step
  CHECK(stepper.steps() == 2);  // a skipped step still counts
  const SkippedSteps skipped = stepper.take_skipped();
  CHECK(skipped.steps == 1);
  CHECK(skipped.batches == 1);
  const SkippedSteps again = stepper.take_skipped();  // taken: the count starts over
  CHECK(again.steps == 0);
  CHECK(again.batches == 0);

  // The Adam moments and step counts are those of a run that never saw the bad batch.
  for (int64_t i = 2; i < 5; ++i) {
    REQUIRE(stepper.backward(model_loss(params, batch_number(i))));
    ref_step(batch_number(i));
    CHECK(all_equal(params, ref));
  }
  CHECK(stepper.take_skipped().steps == 0);
}

TEST_CASE("OptimizerStepper: a non-finite micro-batch skips its whole accumulation", "[train]") {
  const TrainConfig config = stepper_config(3, 5.0, false);
  const std::vector<at::Tensor> params = tiny_model(3);
  OptimizerStepper stepper(config, params, /*cuda=*/false, nullptr);
  const std::vector<at::Tensor> before = copy_of(params);
  Batch bad = batch_number(1);
  bad.y[0] = kInf;
  CHECK_FALSE(stepper.backward(model_loss(params, batch_number(0))));
  CHECK_FALSE(stepper.backward(model_loss(params, bad)));
  CHECK(stepper.backward(model_loss(params, batch_number(2))));
  CHECK(all_equal(params, before));
  CHECK(grads_zero(params));
  // The epoch's last, partial accumulation: two batches, one of them bad.
  CHECK_FALSE(stepper.backward(model_loss(params, bad)));
  CHECK_FALSE(stepper.backward(model_loss(params, batch_number(3))));
  stepper.step();
  CHECK(all_equal(params, before));
  const SkippedSteps skipped = stepper.take_skipped();
  CHECK(skipped.steps == 2);
  CHECK(skipped.batches == 5);
  // A good accumulation afterwards moves the weights again.
  for (int64_t i = 4; i < 7; ++i) stepper.backward(model_loss(params, batch_number(i)));
  CHECK(max_abs_diff(params, before) > 1e-4);
  CHECK(stepper.take_skipped().steps == 0);
}

TEST_CASE("LossTotals: the epoch and window averages of the finite losses", "[train]") {
  LossTotals totals;
  CHECK(totals.read().epoch.count == 0);
  CHECK(totals.read().epoch.mean() == 0.0);
  // float32 losses, as the trainer's: summed in float64 in batch order, as read-backs were.
  const std::vector<float> losses{0.1f, 2.25f, NAN, 1e-3f, INFINITY, 3.0f, -INFINITY};
  double sum = 0.0;
  int64_t count = 0;
  for (float v : losses) {
    totals.add(torch::full({}, v));
    if (std::isfinite(v)) sum += static_cast<double>(v), ++count;
  }
  LossTotals::Snapshot s = totals.read();
  CHECK(s.epoch.count == 4);
  CHECK(s.epoch.count == count);
  CHECK(s.epoch.sum == sum);  // exactly
  CHECK(s.window.sum == sum);
  CHECK(s.window.count == 4);
  CHECK(s.epoch.mean() == sum / 4.0);

  totals.reset_window();
  totals.add(torch::full({1}, 0.5f));  // a 1-element loss counts like a 0-dim one
  s = totals.read();
  CHECK(s.window.sum == 0.5);
  CHECK(s.window.count == 1);
  CHECK(s.epoch.sum == sum + 0.5);
  CHECK(s.epoch.count == 5);

  totals.reset_epoch();
  s = totals.read();
  CHECK(s.epoch.count == 0);
  CHECK(s.epoch.sum == 0.0);
  CHECK(s.window.count == 1);  // the log window runs across epochs

  // A resumed epoch goes on from the checkpoint's counters, before or after the first add.
  totals.reset_epoch(10.0, 4);
  totals.add(torch::full({}, 2.0));
  s = totals.read();
  CHECK(s.epoch.sum == 12.0);
  CHECK(s.epoch.count == 5);
  LossTotals fresh;
  fresh.reset_epoch(7.5, 3);
  CHECK(fresh.read().epoch.sum == 7.5);
  CHECK(fresh.read().epoch.count == 3);
  fresh.add(torch::full({}, 0.25));
  CHECK(fresh.read().epoch.sum == 7.75);
  CHECK(fresh.read().epoch.count == 4);
  CHECK(fresh.read().window.count == 1);
}
