// tests/ops/test_ctc_loss_cuda.cpp
// The CUDA CTC loss kernels against at::ctc_loss on the CPU (loss and gradient; random sizes,
// repeated labels, empty targets, infeasible utterances, padded batches), their determinism, that
// the training loss runs without a host synchronisation, and their timing.
// Hidden tags: run on a GPU machine with  test_masr "[.cuda]"  and  test_masr "[.cuda-bench]".
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "ops/ctc_loss.h"
#include "train/losses.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace {

bool cuda_ready() {
#ifdef MASR_WITH_CUDA
  return torch::cuda::is_available();
#else
  return false;
#endif
}

struct CtcCase {
  int64_t batch, time, vocab, max_target, blank;
  bool zero_infinity;
  uint64_t seed;
};

struct CtcInputs {
  at::Tensor lp, targets, input_lengths, target_lengths, weights;  // on the CPU
};

// Random inputs: log_softmax of peaked logits (float32); labels avoid the blank and a third of
// them repeat the previous one; padding holds random labels (which must be ignored). Utterance 0
// has the full target and all frames; 1 an empty target; 2 one frame too few for its target
// (infeasible); the others enough frames (needed = target length + repeats) up to T.
CtcInputs random_inputs(const CtcCase& c) {
  torch::manual_seed(c.seed);
  std::mt19937_64 rng(c.seed);
  auto uniform = [&](int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const int64_t B = c.batch, T = c.time, V = c.vocab, S = c.max_target;
  CtcInputs in;
  in.lp = torch::log_softmax(torch::randn({B, T, V}) * 3, -1);
  in.targets = torch::randint(0, V, {B, S}, torch::kLong);
  in.input_lengths = torch::zeros({B}, torch::kLong);
  in.target_lengths = torch::zeros({B}, torch::kLong);
  in.weights = torch::randn({B});
  auto tg = in.targets.accessor<int64_t, 2>();
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = b == 0 ? S : b == 1 ? 0 : b == 2 ? std::min<int64_t>(S, 2) : uniform(0, S);
    int64_t needed = L;
    for (int64_t k = 0; k < L; ++k) {
      if (k > 0 && uniform(0, 2) == 0) {
        tg[b][k] = tg[b][k - 1];
        ++needed;
      } else {
        do {
          tg[b][k] = uniform(0, V - 1);
        } while (tg[b][k] == c.blank);
      }
    }
    int64_t frames = b == 0 ? T : uniform(std::min(std::max<int64_t>(needed, 1), T), T);
    if (b == 2 && needed >= 2) frames = std::min(needed - 1, T);
    in.input_lengths[b] = frames;
    in.target_lengths[b] = L;
  }
  return in;
}

struct Result {
  at::Tensor loss, grad;  // on the CPU, float64
};

// at::ctc_loss on the CPU in `dtype`, and the gradient of sum(weights * loss).
Result reference(const CtcInputs& in, const CtcCase& c, at::ScalarType dtype) {
  // A fresh leaf: .to() of a same-dtype tensor returns the tensor itself, and marking that would
  // make every later copy of in.lp a non-leaf without a .grad.
  const at::Tensor lp = in.lp.to(dtype).clone().requires_grad_(true);
  const at::Tensor loss =
      at::ctc_loss(lp.transpose(0, 1), in.targets, in.input_lengths, in.target_lengths, c.blank,
                   at::Reduction::None, c.zero_infinity);
  (loss * in.weights.to(dtype)).sum().backward();
  return {loss.detach().to(at::kDouble), lp.grad().to(at::kDouble)};
}

// ops::ctc_loss on the GPU; lengths from the host or already on the device.
Result on_gpu(const CtcInputs& in, const CtcCase& c, bool host_lengths) {
  const at::Tensor lp = in.lp.detach().to(at::kCUDA).requires_grad_(true);
  const at::Tensor il = host_lengths ? in.input_lengths : in.input_lengths.to(at::kCUDA);
  const at::Tensor tl = host_lengths ? in.target_lengths : in.target_lengths.to(at::kCUDA);
  const at::Tensor loss =
      masr::ops::ctc_loss(lp, in.targets.to(at::kCUDA), il, tl, c.blank, c.zero_infinity);
  REQUIRE(loss.is_cuda());
  REQUIRE(loss.requires_grad());
  (loss * in.weights.to(at::kCUDA)).sum().backward();
  REQUIRE(lp.grad().defined());
  return {loss.detach().cpu().to(at::kDouble), lp.grad().cpu().to(at::kDouble)};
}

// The largest |a - b| where neither is NaN (and where both are NaN nowhere else).
double max_error(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor both = a.isnan().logical_or(b.isnan());
  return (a - b).masked_fill(both, 0).abs().max().item<double>();
}

// Stated tolerances, against at::ctc_loss in float64: the loss within 1e-5 of max(1, |loss|)
// (float32 sums of up to ~2000 nats over 300 frames: LibTorch's own float32 CPU loss is within
// 1e-6); the gradient within max(1e-4 max|w|, 3 x LibTorch's own float32 error on the same
// inputs). The posterior exp(lcab + nll - lp) inherits the absolute error of log-space sums of
// that size (~1e-4 nats), so LibTorch's float32 gradient itself is off by up to 2e-3 at T = 300.
void compare_case(const CtcCase& c) {
  INFO("B=" << c.batch << " T=" << c.time << " V=" << c.vocab << " S=" << c.max_target
            << " blank=" << c.blank << " zero_infinity=" << c.zero_infinity);
  const CtcInputs in = random_inputs(c);
  const Result want = reference(in, c, at::kDouble);
  const Result f32 = reference(in, c, at::kFloat);
  for (const bool host_lengths : {true, false}) {
    INFO("lengths on the " << (host_lengths ? "host" : "device"));
    const Result got = on_gpu(in, c, host_lengths);
    for (int64_t b = 0; b < c.batch; ++b) {
      const double w = want.loss[b].item<double>(), g = got.loss[b].item<double>();
      INFO("utterance " << b << ": want " << w << ", got " << g);
      if (std::isinf(w)) {
        CHECK(std::isinf(g));
      } else {
        CHECK(std::abs(g - w) <= 1e-5 * std::max(1.0, std::abs(w)));
      }
    }
    CHECK(torch::equal(got.grad.isnan(), want.grad.isnan()));
    const double err = max_error(got.grad, want.grad), err32 = max_error(f32.grad, want.grad);
    const double tol = std::max(1e-4 * in.weights.abs().max().item<double>(), 3 * err32);
    INFO("gradient error " << err << " (LibTorch float32: " << err32 << ")");
    CHECK(err <= tol);
    if (host_lengths) {
      std::printf(
          "ctc B=%lld T=%lld V=%lld S=%lld: loss rel err %.2e, grad err %.2e "
          "(LibTorch fp32 %.2e)\n",
          static_cast<long long>(c.batch), static_cast<long long>(c.time),
          static_cast<long long>(c.vocab), static_cast<long long>(c.max_target),
          ((got.loss - want.loss).abs() / want.loss.abs().clamp_min(1))
              .masked_fill(want.loss.isinf(), 0)
              .max()
              .item<double>(),
          err, err32);
    }
  }
}

}  // namespace

TEST_CASE("CUDA ctc_loss matches at::ctc_loss on the CPU: loss and gradient, many shapes",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  const CtcCase cases[] = {
      {1, 1, 2, 1, 0, true, 1},         // one frame: only an empty or 1-label target fits
      {3, 5, 3, 2, 0, true, 2},         // tiny, every utterance kind
      {4, 50, 30, 10, 29, true, 3},     // the blank last
      {6, 40, 40, 30, 0, true, 4},      // long targets, few spare frames
      {8, 200, 1000, 60, 0, true, 5},   // BPE-sized vocabulary
      {5, 300, 5000, 200, 0, true, 6},  // the longest targets and the largest vocabulary here
      {7, 120, 256, 40, 3, false, 7},   // no zero_infinity: inf loss, NaN gradient rows as LibTorch
      {33, 64, 64, 8, 0, true, 8},      // a larger batch
  };
  for (const CtcCase& c : cases) compare_case(c);
}

TEST_CASE("CUDA ctc_loss: host and device lengths agree bit for bit; backward is reproducible",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  const CtcCase c{6, 150, 500, 50, 0, true, 11};
  const CtcInputs in = random_inputs(c);
  const Result a = on_gpu(in, c, true), b = on_gpu(in, c, false), again = on_gpu(in, c, false);
  CHECK(torch::equal(a.loss, b.loss));
  CHECK(torch::equal(a.grad, b.grad));
  CHECK(torch::equal(b.grad, again.grad));
}

TEST_CASE("CUDA ctc_loss edge cases: empty inputs, lengths beyond the shape, bad labels",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  torch::manual_seed(5);
  const at::Tensor lp = torch::log_softmax(torch::randn({4, 6, 5}), -1);
  const at::Tensor targets = torch::tensor({{1, 2}, {0, 0}, {3, 3}, {1, 7}}, torch::kLong);
  // Utterances 0 and 1 have no frames (empty target: probability 1; otherwise infeasible);
  // utterance 2 claims 9 frames of 6 and 3 labels of 2 (clamped to 6 and 2); utterance 3 has the
  // label 7 outside the 5 classes.
  const at::Tensor il = torch::tensor({0, 0, 9, 6}, torch::kLong);
  const at::Tensor tl = torch::tensor({2, 0, 3, 2}, torch::kLong);
  for (const bool zero_infinity : {false, true}) {
    const at::Tensor x = lp.to(at::kCUDA).requires_grad_(true);
    const at::Tensor loss = masr::ops::ctc_loss(x, targets.to(at::kCUDA), il.to(at::kCUDA),
                                                tl.to(at::kCUDA), 0, zero_infinity);
    loss.sum().backward();
    const at::Tensor l = loss.detach().cpu(), g = x.grad().cpu();
    CHECK(l[0].item<double>() == (zero_infinity ? 0.0 : INFINITY));
    CHECK(l[1].item<double>() == 0.0);
    CHECK(g[0].abs().max().item<double>() == 0.0);
    CHECK(g[1].abs().max().item<double>() == 0.0);
    const at::Tensor want =
        at::ctc_loss(lp.narrow(0, 2, 1).transpose(0, 1), targets.narrow(0, 2, 1),
                     torch::tensor({6}), torch::tensor({2}), 0, at::Reduction::None, false);
    CHECK(l[2].item<double>() == Approx(want[0].item<double>()).epsilon(1e-5));
    CHECK(std::isnan(l[3].item<double>()));
  }
}

TEST_CASE("CUDA ctc_loss with the blank inside a target gives the loss's derivative", "[.cuda]") {
  REQUIRE(cuda_ready());
  // A target may hold the blank's id (SentencePiece's <unk> is 0, and so is the blank). The loss
  // is then at::ctc_loss's; its CPU backward, though, assigns instead of adding the last frame's
  // term of the last label when that label is the blank, so the reference here is exp(lp) plus
  // finite differences of at::ctc_loss's float64 loss (LibTorch's gradient convention).
  torch::manual_seed(21);
  const at::Tensor lp = torch::log_softmax(torch::randn({2, 5, 4}, torch::kDouble), -1);
  const at::Tensor targets = torch::tensor({{1, 0, 2}, {2, 1, 0}}, torch::kLong);
  const at::Tensor il = torch::tensor({5, 4}, torch::kLong),
                   tl = torch::tensor({3, 3}, torch::kLong);
  auto nll = [&](const at::Tensor& x) {
    return at::ctc_loss(x.transpose(0, 1), targets, il, tl, 0, at::Reduction::None, false);
  };
  const at::Tensor x = lp.to(at::kCUDA, at::kFloat).requires_grad_(true);
  const at::Tensor loss =
      masr::ops::ctc_loss(x, targets.to(at::kCUDA), il.to(at::kCUDA), tl.to(at::kCUDA), 0, false);
  loss.sum().backward();
  CHECK(torch::allclose(loss.detach().cpu().to(at::kDouble), nll(lp), 1e-5, 1e-5));
  const at::Tensor got = x.grad().cpu().to(at::kDouble);
  const double eps = 1e-6;
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t t = 0; t < 5; ++t) {
      for (int64_t v = 0; v < 4; ++v) {
        INFO("b " << b << " t " << t << " v " << v);
        double expected = 0;
        if (t < il[b].item<int64_t>()) {
          at::Tensor up = lp.clone(), down = lp.clone();
          up[b][t][v] += eps;
          down[b][t][v] -= eps;
          expected = std::exp(lp[b][t][v].item<double>()) +
                     (nll(up)[b].item<double>() - nll(down)[b].item<double>()) / (2 * eps);
        }
        CHECK(got[b][t][v].item<double>() == Approx(expected).margin(1e-4));
      }
    }
  }
}

#ifdef MASR_WITH_CUDA
namespace {

// Makes every synchronising CUDA call of LibTorch (blocking copies, stream and device
// synchronisations) throw while it lives.
struct SyncIsError {
  SyncIsError() {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  ~SyncIsError() {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }
};

}  // namespace

TEST_CASE("CUDA training CTC loss runs without a host synchronisation", "[.cuda]") {
  REQUIRE(cuda_ready());
  using masr::train::LossReduction;
  torch::manual_seed(9);
  const at::Tensor logits = torch::randn({4, 80, 100}).to(at::kCUDA);
  const at::Tensor targets = torch::randint(1, 100, {4, 20}, torch::kLong).to(at::kCUDA);
  // Relative lengths on the host, as the ASR task passes them.
  const at::Tensor input_rel = torch::tensor({1.0, 0.9, 0.6, 0.75});
  const at::Tensor target_rel = torch::tensor({1.0, 0.5, 0.3, 0.0});
  for (const LossReduction r :
       {LossReduction::kBatchMean, LossReduction::kMean, LossReduction::kSum}) {
    const at::Tensor x = logits.clone().requires_grad_(true);
    at::Tensor loss;
    {
      const SyncIsError guard;
      loss = masr::train::ctc_loss(torch::log_softmax(x, -1), targets, input_rel, target_rel, 0, r);
      loss.backward();
    }
    CHECK(std::isfinite(loss.item<double>()));
    CHECK(x.grad().isfinite().all().item<bool>());
  }
  // The detector works: LibTorch's CUDA ctc_loss with host lengths synchronises (issue #18).
  const SyncIsError guard;
  CHECK_THROWS(at::ctc_loss(torch::log_softmax(logits, -1).transpose(0, 1), targets,
                            std::vector<int64_t>{80, 72, 48, 60},
                            std::vector<int64_t>{20, 10, 6, 0}, 0, at::Reduction::Sum, true));
}

namespace {

// Median per-call milliseconds: 20 samples of 5 back-to-back calls between two CUDA events,
// after 3 warm-up calls.
template <typename Fn>
double median_ms(Fn&& fn) {
  for (int i = 0; i < 3; ++i) fn();
  std::vector<double> ms;
  for (int s = 0; s < 20; ++s) {
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    start.record();
    for (int i = 0; i < 5; ++i) fn();
    stop.record();
    stop.synchronize();
    ms.push_back(start.elapsed_time(stop) / 5.0);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

TEST_CASE("CUDA ctc_loss timing against LibTorch's", "[.cuda-bench]") {
  REQUIRE(cuda_ready());
  const CtcCase cases[] = {{32, 250, 1000, 60, 0, true, 1},
                           {16, 750, 5000, 200, 0, true, 2},
                           {100, 1000, 1000, 200, 0, true, 3}};
  std::printf("\n%-22s %12s %12s %12s %12s\n", "B T V S", "ours fwd", "ours f+b", "torch fwd",
              "torch f+b");
  for (const CtcCase& c : cases) {
    const CtcInputs in = random_inputs(c);
    const at::Tensor lp = in.lp.detach().to(at::kCUDA).requires_grad_(true);
    const at::Tensor tg = in.targets.to(at::kCUDA), w = in.weights.to(at::kCUDA);
    const at::Tensor il = in.input_lengths.to(at::kCUDA), tl = in.target_lengths.to(at::kCUDA);
    auto ours = [&] { return masr::ops::ctc_loss(lp, tg, il, tl, 0, true); };
    auto theirs = [&] {
      return at::ctc_loss(lp.transpose(0, 1), tg, il, tl, 0, at::Reduction::None, true);
    };
    const double of = median_ms([&] { ours(); });
    const double ob = median_ms([&] { (ours() * w).sum().backward(); });
    const double tf = median_ms([&] { theirs(); });
    const double tb = median_ms([&] { (theirs() * w).sum().backward(); });
    std::printf("%4lld %5lld %5lld %4lld    %12.3f %12.3f %12.3f %12.3f\n",
                static_cast<long long>(c.batch), static_cast<long long>(c.time),
                static_cast<long long>(c.vocab), static_cast<long long>(c.max_target), of, ob, tf,
                tb);
  }
}
#endif

TEST_CASE("CUDA ctc_loss_from_logits equals log_softmax then ctc_loss: losses and logit gradients",
          "[.cuda]") {
  REQUIRE(cuda_ready());
  const CtcCase cases[] = {
      {3, 5, 3, 2, 0, true, 21},
      {8, 200, 1000, 60, 0, true, 22},
      {5, 300, 5000, 200, 0, true, 23},
      {7, 120, 256, 40, 3, false, 24},  // inf losses, NaN gradient rows
  };
  const char* before = std::getenv("MASR_CTC_FROM_LOGITS");
  const std::string previous = before != nullptr ? before : "";
  ::setenv("MASR_CTC_FROM_LOGITS", "1", 1);
  for (const CtcCase& c : cases) {
    for (const at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
      INFO("B=" << c.batch << " T=" << c.time << " V=" << c.vocab << " " << dtype);
      const CtcInputs in = random_inputs(c);
      const at::Tensor base = (torch::randn({c.batch, c.time, c.vocab}) * 3).to(dtype);
      const at::Tensor targets = in.targets.to(at::kCUDA);
      const at::Tensor weights = in.weights.to(at::kCUDA);
      // The two ops, as the model ran them before.
      const at::Tensor a = base.to(at::kCUDA).requires_grad_(true);
      const at::Tensor lp = at::log_softmax(a.to(at::kFloat), -1);
      const at::Tensor want = masr::ops::ctc_loss(lp, targets, in.input_lengths, in.target_lengths,
                                                  c.blank, c.zero_infinity);
      (want * weights).sum().backward();
      // From the logits.
      const at::Tensor b = base.to(at::kCUDA).requires_grad_(true);
      const masr::ops::CtcFromLogits got = masr::ops::ctc_loss_from_logits(
          b, targets, in.input_lengths, in.target_lengths, c.blank, c.zero_infinity);
      CHECK_FALSE(got.log_probs.requires_grad());
      CHECK(torch::equal(got.log_probs, lp.detach()));
      REQUIRE(got.losses.requires_grad());
      (got.losses * weights).sum().backward();
      // The forward is the same computation: equal bit for bit (inf included).
      CHECK(torch::equal(got.losses.detach(), want.detach()));
      // The backward's log-softmax part runs in place (other rounding): within 1e-5 of the
      // largest gradient in float32, within bf16's resolution for bf16 logits.
      REQUIRE(b.grad().defined());
      CHECK(b.grad().scalar_type() == dtype);
      const at::Tensor gw = a.grad().cpu().to(at::kDouble), gg = b.grad().cpu().to(at::kDouble);
      CHECK(torch::equal(gg.isnan(), gw.isnan()));
      const double scale = gw.masked_fill(gw.isnan(), 0).abs().max().item<double>();
      const double err = max_error(gg, gw);
      INFO("largest gradient " << scale << ", difference " << err);
      CHECK(err <= (dtype == at::kFloat ? 1e-5 : 1e-2) * std::max(scale, 1e-3));
    }
  }
  if (before != nullptr) {
    ::setenv("MASR_CTC_FROM_LOGITS", previous.c_str(), 1);
  } else {
    ::unsetenv("MASR_CTC_FROM_LOGITS");
  }
}
