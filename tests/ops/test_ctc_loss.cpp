// tests/ops/test_ctc_loss.cpp
// ops::ctc_loss on the CPU (where it is at::ctc_loss) against a brute-force sum over every
// alignment on tiny cases (V = 3, T = 4: 81 alignments), its gradient against finite differences,
// and train::ctc_loss's reductions against at::ctc_loss's own. The CUDA kernels are tested
// against at::ctc_loss in test_ctc_loss_cuda.cpp ("[.cuda]").
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/ctc_loss.h"
#include "train/losses.h"

namespace {

using Labels = std::vector<int64_t>;

// -log of the summed probability of every alignment of lp[0, frames) that collapses (repeats
// merged, then blanks removed) to `target`; inf when none does. lp: (T, V) double.
double brute_force_nll(const at::Tensor& lp, int64_t frames, const Labels& target, int64_t blank) {
  const auto a = lp.accessor<double, 2>();
  const int64_t V = lp.size(1);
  std::vector<int64_t> path(static_cast<size_t>(frames), 0);
  double total = 0;
  while (true) {
    Labels collapsed;
    double logp = 0;
    for (int64_t t = 0; t < frames; ++t) {
      const int64_t c = path[static_cast<size_t>(t)];
      logp += a[t][c];
      if (c != blank && (t == 0 || c != path[static_cast<size_t>(t - 1)])) collapsed.push_back(c);
    }
    if (collapsed == target) total += std::exp(logp);
    int64_t t = 0;  // the next path: count in base V
    while (t < frames && ++path[static_cast<size_t>(t)] == V) path[static_cast<size_t>(t++)] = 0;
    if (t == frames) break;
  }
  return -std::log(total);
}

struct Batch {
  at::Tensor targets, input_lengths, target_lengths;
  std::vector<Labels> labels;
};

// Padded (B, S) targets (padding 0) and int64 lengths.
Batch batch_of(const std::vector<Labels>& labels, const std::vector<int64_t>& frames) {
  const int64_t B = static_cast<int64_t>(labels.size());
  int64_t S = 1;
  for (const Labels& l : labels) S = std::max<int64_t>(S, static_cast<int64_t>(l.size()));
  Batch out;
  out.labels = labels;
  out.targets = torch::zeros({B, S}, torch::kLong);
  out.target_lengths = torch::zeros({B}, torch::kLong);
  for (int64_t b = 0; b < B; ++b) {
    const Labels& l = labels[static_cast<size_t>(b)];
    for (size_t k = 0; k < l.size(); ++k) out.targets[b][static_cast<int64_t>(k)] = l[k];
    out.target_lengths[b] = static_cast<int64_t>(l.size());
  }
  out.input_lengths = torch::tensor(frames, torch::kLong);
  return out;
}

at::Tensor run(const at::Tensor& lp, const Batch& x, int64_t blank, bool zero_infinity) {
  return masr::ops::ctc_loss(lp, x.targets, x.input_lengths, x.target_lengths, blank,
                             zero_infinity);
}

}  // namespace

TEST_CASE("ctc_loss with uniform probabilities counts the alignments by hand", "[ops][ctc]") {
  // V = 3 (blank 0), T = 4, every probability 1/3: each alignment has probability 3^-frames, so
  // the loss is frames log 3 - log(count). Counting b* 1+ b* 2+ b* etc. over 4 frames:
  //   target  frames  alignments  loss
  //   {}      4        1          4 log 3
  //   {1}     4       10          4 log 3 - log 10  (a run of 1s: 4 + 3 + 2 + 1 placements)
  //   {1,2}   4       15          4 log 3 - log 15  (b^a 1^x b^c 2^y b^d: C(6, 4))
  //   {2,1}   4       15          as {1,2}
  //   {1,1}   4        5          4 log 3 - log 5   (a blank between the 1s is required)
  //   {1,1}   3        1          3 log 3           (1 b 1 only)
  //   {1,1}   2        0          inf (0 with zero_infinity)
  const std::vector<Labels> labels = {{}, {1}, {1, 2}, {2, 1}, {1, 1}, {1, 1}, {1, 1}};
  const std::vector<int64_t> frames = {4, 4, 4, 4, 4, 3, 2};
  const std::vector<double> counts = {1, 10, 15, 15, 5, 1, 0};
  const Batch x = batch_of(labels, frames);
  const at::Tensor lp = torch::full({7, 4, 3}, -std::log(3.0), torch::kDouble);
  const at::Tensor loss = run(lp, x, 0, false);
  const at::Tensor zeroed = run(lp, x, 0, true);
  for (int64_t b = 0; b < 7; ++b) {
    INFO("utterance " << b);
    const size_t i = static_cast<size_t>(b);
    const double expected = static_cast<double>(frames[i]) * std::log(3.0) - std::log(counts[i]);
    CHECK(brute_force_nll(lp[b], frames[i], labels[i], 0) == Approx(expected).epsilon(1e-12));
    CHECK(loss[b].item<double>() == Approx(expected).epsilon(1e-12));
    if (counts[i] > 0) {
      CHECK(zeroed[b].item<double>() == Approx(expected).epsilon(1e-12));
    } else {
      CHECK(std::isinf(loss[b].item<double>()));
      CHECK(zeroed[b].item<double>() == 0.0);
    }
  }
}

TEST_CASE("ctc_loss equals the brute-force sum over alignments: random inputs, padded batch",
          "[ops][ctc]") {
  torch::manual_seed(18);
  // Repeated labels, an empty target, frames < T, the blank in the middle of the vocabulary.
  const std::vector<Labels> by_blank[3] = {{{1, 2}, {2, 2}, {}, {1}, {2, 1}, {1, 1}},
                                           {{0, 2}, {2, 2}, {}, {0}, {2, 0}, {0, 0}},
                                           {{0, 1}, {1, 1}, {}, {0}, {1, 0}, {0, 0}}};
  const std::vector<int64_t> frames = {4, 3, 2, 1, 4, 3};
  for (int64_t blank = 0; blank < 3; ++blank) {
    INFO("blank " << blank);
    const std::vector<Labels>& labels = by_blank[blank];
    const Batch x = batch_of(labels, frames);
    const at::Tensor lp = torch::log_softmax(torch::randn({6, 4, 3}, torch::kDouble) * 2, -1);
    const at::Tensor loss = run(lp, x, blank, false);
    for (int64_t b = 0; b < 6; ++b) {
      INFO("utterance " << b);
      const size_t i = static_cast<size_t>(b);
      CHECK(loss[b].item<double>() ==
            Approx(brute_force_nll(lp[b], frames[i], labels[i], blank)).epsilon(1e-12));
    }
  }
}

TEST_CASE("ctc_loss gradient: finite differences through log_softmax, and LibTorch's raw form",
          "[ops][ctc]") {
  torch::manual_seed(7);
  // The last utterance needs 3 frames for {1, 1} and has 2: infeasible.
  const std::vector<Labels> labels = {{1, 2}, {1, 1}, {2}, {}, {1, 1}};
  const std::vector<int64_t> frames = {4, 3, 2, 4, 2};
  const Batch x = batch_of(labels, frames);
  const int64_t B = 5, T = 4, V = 3;
  const at::Tensor weights = torch::tensor({0.5, -1.25, 2.0, 0.75, 1.5}, torch::kDouble);
  const at::Tensor logits = torch::randn({B, T, V}, torch::kDouble);
  const double eps = 1e-6;

  // (1) Through log_softmax, the gradient is the true derivative of the loss in the logits.
  const at::Tensor xl = logits.clone().requires_grad_(true);
  const at::Tensor loss = run(torch::log_softmax(xl, -1), x, 0, true);
  (loss * weights).sum().backward();
  CHECK(loss[4].item<double>() == 0.0);  // infeasible, zero_infinity
  for (int64_t b = 0; b < 4; ++b) {
    const size_t i = static_cast<size_t>(b);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t v = 0; v < V; ++v) {
        INFO("b " << b << " t " << t << " v " << v);
        at::Tensor up = logits[b].clone(), down = logits[b].clone();
        up[t][v] += eps;
        down[t][v] -= eps;
        const double fd = (brute_force_nll(torch::log_softmax(up, -1), frames[i], labels[i], 0) -
                           brute_force_nll(torch::log_softmax(down, -1), frames[i], labels[i], 0)) /
                          (2 * eps);
        CHECK(xl.grad()[b][t][v].item<double>() ==
              Approx(weights[b].item<double>() * fd).margin(1e-7));
      }
    }
  }
  CHECK(xl.grad()[4].abs().max().item<double>() == 0.0);

  // (2) With log_probs as the leaf, LibTorch's gradient is exp(lp) - posterior, where the
  // posterior is -d nll / d lp with every lp entry independent; zero for frames t >= length.
  const at::Tensor lp = torch::log_softmax(logits, -1).detach().requires_grad_(true);
  (run(lp, x, 0, true) * weights).sum().backward();
  for (int64_t b = 0; b < 4; ++b) {
    const size_t i = static_cast<size_t>(b);
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t v = 0; v < V; ++v) {
        INFO("b " << b << " t " << t << " v " << v);
        double expected = 0;
        if (t < frames[i]) {
          at::Tensor up = lp[b].detach().clone(), down = lp[b].detach().clone();
          up[t][v] += eps;
          down[t][v] -= eps;
          const double fd = (brute_force_nll(up, frames[i], labels[i], 0) -
                             brute_force_nll(down, frames[i], labels[i], 0)) /
                            (2 * eps);
          expected = weights[b].item<double>() * (std::exp(lp[b][t][v].item<double>()) + fd);
        }
        CHECK(lp.grad()[b][t][v].item<double>() == Approx(expected).margin(1e-7));
      }
    }
  }
  CHECK(lp.grad()[4].abs().max().item<double>() == 0.0);
}

TEST_CASE("ctc_loss rejects inconsistent shapes and an out-of-range blank", "[ops][ctc]") {
  const Batch x = batch_of({{1}, {2}}, {4, 4});
  const at::Tensor lp = torch::log_softmax(torch::randn({2, 4, 3}), -1);
  CHECK_THROWS_WITH(
      masr::ops::ctc_loss(lp[0], x.targets, x.input_lengths, x.target_lengths, 0, true),
      Catch::Contains("log_probs must be (B, T, V)"));
  CHECK_THROWS_WITH(masr::ops::ctc_loss(lp, x.targets, x.input_lengths.narrow(0, 0, 1),
                                        x.target_lengths, 0, true),
                    Catch::Contains("input_lengths and target_lengths (B)"));
  CHECK_THROWS_WITH(run(lp, x, 3, true), Catch::Contains("blank 3 is outside the 3 classes"));
}

TEST_CASE("train::ctc_loss reductions are at::ctc_loss's, bit for bit, on the CPU",
          "[ops][ctc][train]") {
  using masr::train::LossReduction;
  torch::manual_seed(3);
  const at::Tensor logits = torch::randn({3, 10, 6});
  // Target lengths 3, 0 (torch's mean divides by max(length, 1)) and 2; the third utterance
  // has 2 of 10 frames, too few for its repeated pair (4 b 4): infeasible, zeroed.
  const at::Tensor targets = torch::tensor({{1, 2, 2}, {0, 0, 0}, {4, 4, 0}}, torch::kLong);
  const at::Tensor input_rel = torch::tensor({1.0, 0.8, 0.2});
  const at::Tensor target_rel = torch::tensor({1.0, 0.0, 2.0 / 3});
  const at::Tensor input_lengths = torch::tensor({10, 8, 2}, torch::kLong);
  const at::Tensor target_lengths = torch::tensor({3, 0, 2}, torch::kLong);
  const std::pair<LossReduction, at::Reduction::Reduction> cases[] = {
      {LossReduction::kSum, at::Reduction::Sum},
      {LossReduction::kBatchMean, at::Reduction::Sum},
      {LossReduction::kMean, at::Reduction::Mean}};
  for (const auto& [ours, torch_reduction] : cases) {
    INFO("reduction " << static_cast<int>(ours));
    const at::Tensor a = logits.clone().requires_grad_(true);
    const at::Tensor b = logits.clone().requires_grad_(true);
    const at::Tensor got =
        masr::train::ctc_loss(torch::log_softmax(a, -1), targets, input_rel, target_rel, 0, ours);
    at::Tensor want = at::ctc_loss(torch::log_softmax(b, -1).transpose(0, 1), targets,
                                   input_lengths, target_lengths, 0, torch_reduction, true);
    if (ours == LossReduction::kBatchMean) want = want / 3.0;
    CHECK(std::isfinite(got.item<double>()));
    CHECK(got.item<double>() == want.item<double>());
    got.backward();
    want.backward();
    CHECK(torch::equal(a.grad(), b.grad()));
  }
}

TEST_CASE("train::ctc_loss_of_logits is log_softmax then ctc_loss, bit for bit, on the CPU",
          "[ops][ctc][train]") {
  using masr::train::LossReduction;
  torch::manual_seed(4);
  const at::Tensor logits = torch::randn({3, 10, 6});
  const at::Tensor targets = torch::tensor({{1, 2, 2}, {0, 0, 0}, {4, 4, 0}}, torch::kLong);
  const at::Tensor input_lengths = torch::tensor({10, 8, 2}, torch::kLong);
  const at::Tensor target_lengths = torch::tensor({3, 0, 2}, torch::kLong);
  for (const LossReduction reduction :
       {LossReduction::kSum, LossReduction::kBatchMean, LossReduction::kMean}) {
    INFO("reduction " << static_cast<int>(reduction));
    const at::Tensor a = logits.clone().requires_grad_(true);
    const at::Tensor b = logits.clone().requires_grad_(true);
    const masr::train::CtcLossOfLogits got =
        masr::train::ctc_loss_of_logits(a, targets, input_lengths, target_lengths, 0, reduction);
    const at::Tensor lp = torch::log_softmax(b, -1);
    const at::Tensor want =
        masr::train::ctc_loss_lengths(lp, targets, input_lengths, target_lengths, 0, reduction);
    CHECK(got.loss.item<double>() == want.item<double>());
    CHECK(torch::equal(got.log_probs, lp.detach()));
    CHECK_FALSE(got.log_probs.requires_grad());
    got.loss.backward();
    want.backward();
    CHECK(torch::equal(a.grad(), b.grad()));
  }
  CHECK_THROWS_WITH(masr::ops::ctc_loss_from_logits(torch::zeros({3, 10}), targets, input_lengths,
                                                    target_lengths, 0, true),
                    Catch::Contains("floating-point (B, T, V)"));
}
