// tests/train/test_training_batch_invariance.cpp
// An utterance's training loss and the gradients it contributes do not depend on its batch
// partners: with the loss summed over the batch, the loss and every parameter's gradient of the
// padded batch [a, b] (and [b, a]) equal the sums of those of [a] and [b] alone (CPU, float32,
// training mode with dropout 0, no augmentation, normalization statistics frozen as after
// update_until_epoch). Tiny random models: ConMamba CTC, causal ConMamba CTC, ConMamba +
// Transformer decoder (S2S), Conformer S2S. Two forward passes: the model's own with each
// utterance's exact lengths (AsrModel::encode_audio, the heads, train/losses.h), and the
// trainer's (AsrTask::forward, SpeechBrain's relative lengths).
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <fstream>
#include <functional>
#include <sstream>

#include "../models/repo_hparams.h"
#include "features/augment/interface.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/transformer_asr.h"
#include "toolkit/registration.h"
#include "train/asr_task.h"
#include "train/losses.h"
#include "train/train_config.h"
#include "train/train_data.h"
#include "padded_batch.h"

namespace {

using masr::train::AsrBatch;
using masr::train::AsrTask;

// Relative tolerances (float32): the batch sums its rows in another order and pads, which moves
// results by ~1e-6 relative; padding read by a real frame moves them by 1e-3 or more.
constexpr double kLossTolerance = 1e-4;
constexpr double kGradTolerance = 1e-3;  // of the gradient tensor's largest |entry|

using masr::testing::make_batch;
using masr::testing::Utterance;

struct LossAndGrads {
  double loss = 0.0;
  std::vector<at::Tensor> grads;  // one per parameter (zeros where unused)
};

// A summed training loss of a padded batch; backward() is run by measure().
using ForwardFn = std::function<at::Tensor(const AsrBatch&)>;

LossAndGrads measure_batch(const ForwardFn& forward, const std::vector<at::Tensor>& params,
                           const AsrBatch& batch) {
  for (auto p : params) p.mutable_grad() = at::Tensor();
  const at::Tensor loss = forward(batch);
  loss.backward();
  LossAndGrads out;
  out.loss = loss.item<double>();
  for (const auto& p : params)
    out.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return out;
}

LossAndGrads measure(const ForwardFn& forward, const std::vector<at::Tensor>& params,
                     const std::vector<Utterance>& items) {
  return measure_batch(forward, params, make_batch(items, 1, 2));
}

// The largest |got - expected| of any gradient, relative to the larger of both tensors' largest
// |entry| (so a gradient that only one side has is caught as well).
double largest_relative_difference(const std::vector<at::Tensor>& got,
                                   const std::vector<at::Tensor>& expected) {
  double diff = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double scale = std::max(expected[i].abs().max().item<double>(),
                                  got[i].abs().max().item<double>());
    if (scale == 0.0) continue;
    diff = std::max(diff, (got[i] - expected[i]).abs().max().item<double>() / scale);
  }
  return diff;
}

// Checks [a, b] and [b, a] against [a] + [b] (relative differences in the messages).
void check_sums(const ForwardFn& forward, const std::vector<at::Tensor>& params, const Utterance& a,
                const Utterance& b) {
  const LossAndGrads alone_a = measure(forward, params, {a});
  const LossAndGrads alone_b = measure(forward, params, {b});
  CHECK(alone_a.loss > 0.0);  // both utterances contribute
  CHECK(alone_b.loss > 0.0);
  for (const auto& order : {std::vector<Utterance>{a, b}, std::vector<Utterance>{b, a}}) {
    const LossAndGrads together = measure(forward, params, order);
    const double sum = alone_a.loss + alone_b.loss;
    const double loss_diff = std::abs(together.loss - sum) / std::abs(sum);
    std::vector<at::Tensor> expected;
    for (size_t i = 0; i < together.grads.size(); ++i)
      expected.push_back(alone_a.grads[i] + alone_b.grads[i]);
    const double grad_diff = largest_relative_difference(together.grads, expected);
    INFO("loss " << together.loss << " vs " << sum << ": relative difference " << loss_diff
                 << "; largest relative gradient difference " << grad_diff);
    CHECK(loss_diff < kLossTolerance);
    CHECK(grad_diff < kGradTolerance);
  }
}

masr::hparams::Hparams load(const std::string& file,
                            std::vector<std::pair<std::string, std::string>> overrides,
                            bool causal) {
  masr::hparams::LoadOptions options;
  options.overrides = std::move(overrides);
  options.overrides.emplace_back("transformer_dropout", "0.0");
  options.placeholder_value = "unused";
  return masr::test::load_repo_hparams(file, options, causal);
}

struct Case {
  const char* file;
  std::vector<std::pair<std::string, std::string>> overrides;
  bool causal;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"hparams/CTC/conmamba_tiny.yaml", {}, false},
      {"hparams/CTC/conmamba_tiny.yaml", {}, true},
      {"hparams/S2S/conmamba_tiny.yaml", {{"num_decoder_layers", "1"}}, false},
      {"hparams/S2S/conformer_small.yaml",
       {{"d_model", "48"},
        {"num_encoder_layers", "2"},
        {"num_decoder_layers", "1"},
        {"d_ffn", "96"},
        {"output_neurons", "40"}},
       false},
  };
  return all;
}

// Two utterances whose lengths are no multiple of the 160-sample hop nor of the front end's
// 4-frame stride, with token sequences of different lengths.
std::pair<Utterance, Utterance> two_utterances() {
  torch::manual_seed(11);
  Utterance a{torch::randn({21011}) * 0.1, {5, 9, 3, 17, 8, 12, 6}};
  Utterance b{torch::randn({12345}) * 0.1, {7, 4, 22, 9}};
  return {a, b};
}

// Training mode with every dropout at 0 (the front end's Dropout has no hparams key), and the
// normalization's global statistics from one batch, as after a first step.
void prepare(torch::nn::Module& root, const std::function<void()>& first_batch) {
  root.train(true);
  for (auto& m : root.modules()) {
    if (auto* d = m->as<torch::nn::DropoutImpl>()) d->options.p(0.0);
  }
  torch::NoGradGuard no_grad;
  first_batch();
}

// The trainer prepared as `prepare` does, its statistics from the batch [a, b]; returns the loss
// options the tests use (summed losses, CTC weight 0.3).
masr::train::LossOptions prepare_trainer(AsrTask& task, const Utterance& a, const Utterance& b) {
  masr::train::LossOptions options;
  options.reduction = masr::train::LossReduction::kSum;
  options.ctc_weight = 0.3;
  prepare(task.model(), [&] {
    task.train(true);
    (void)task.forward(make_batch({a, b}, 1, 2), true, /*epoch=*/1, nullptr, options);
  });
  return options;
}

}  // namespace

TEST_CASE("training is batch-invariant: the model's loss and gradients", "[train]") {
  masr::toolkit::register_all();
  const auto [a, b] = two_utterances();
  for (const Case& c : cases()) {
    INFO(c.file << (c.causal ? " (causal)" : ""));
    const auto hp = load(c.file, c.overrides, c.causal);
    auto model = masr::models::AsrModel::from_hparams(hp);
    REQUIRE(model->transformer().config().causal == c.causal);
    prepare(model->module(), [&] {
      (void)model->features(make_batch({a, b}, 1, 2).wav, {}, 1, /*update_norm=*/true);
    });
    // Each utterance's exact lengths: 1 + samples / hop feature frames, the front end's own
    // output lengths (encode_audio), relative lengths in double so that the losses' rounding
    // gives them back; the normalization applies its frozen statistics.
    const ForwardFn forward = [&](const AsrBatch& batch) {
      const at::Tensor samples =
          (batch.wav_rel.to(at::kDouble) * batch.wav.size(1)).round().to(at::kLong);
      const masr::models::Encoded enc = model->encode_audio(batch.wav, samples);
      const at::Tensor enc_rel = enc.lengths.to(at::kDouble) / static_cast<double>(enc.out.size(1));
      at::Tensor loss =
          masr::train::ctc_loss(model->ctc_log_probs(enc.out), batch.tokens, enc_rel,
                                batch.tokens_rel, 0, masr::train::LossReduction::kSum);
      if (model->is_s2s()) {
        const at::Tensor p_seq = model->decoder_log_probs(enc.out, enc.lengths, batch.tokens_bos);
        loss = 0.3 * loss + 0.7 * masr::train::kldiv_loss(p_seq, batch.tokens_eos,
                                                          batch.tokens_eos_rel, 0.0, 0,
                                                          masr::train::LossReduction::kSum);
      }
      return loss;
    };
    check_sums(forward, model->parameters(), a, b);
  }
}

// The trainer's forward pass: filterbank, normalization, front end and losses with each
// utterance's own frame counts (SpeechBrain's train_CTC.py / train_S2S.py instead reflect each
// row at the end of the padded batch and round rel * T' of the padded batch, which made an
// utterance's last frames and its number of CTC frames depend on its partners; docs/models.md).
TEST_CASE("training is batch-invariant: the trainer's loss and gradients", "[train]") {
  masr::toolkit::register_all();
  const auto [a, b] = two_utterances();
  for (const Case& c : cases()) {
    INFO(c.file << (c.causal ? " (causal)" : ""));
    const auto hp = load(c.file, c.overrides, c.causal);
    AsrTask task(hp);
    const masr::train::LossOptions options = prepare_trainer(task, a, b);
    // Epoch 100: past update_until_epoch, the statistics stay frozen. No generator: no
    // augmentation.
    const ForwardFn forward = [&](const AsrBatch& batch) {
      return task.forward(batch, /*training=*/true, /*epoch=*/100, nullptr, options).loss;
    };
    check_sums(forward, task.parameters(), a, b);
  }
}

// Batches padded to the shape grid (TrainConfig::recurring_shapes, on for CUDA training): the
// extra audio and token padding changes neither the trainer's loss nor its gradients.
TEST_CASE("training on the shape grid: the same loss and gradients as without", "[train]") {
  masr::toolkit::register_all();
  auto [a, b] = two_utterances();
  a.tokens.push_back(4);  // 8 tokens: 9 with BOS, which the grid pads to 16
  auto item = [](const Utterance& u, const std::string& id) {
    masr::train::Utterance out;
    out.id = id;
    out.words = "x";
    const at::Tensor w = u.wav.contiguous();
    out.samples.assign(w.data_ptr<float>(), w.data_ptr<float>() + w.numel());
    out.tokens = u.tokens;
    return out;
  };
  for (const Case& c : cases()) {
    INFO(c.file << (c.causal ? " (causal)" : ""));
    const auto hp = load(c.file, c.overrides, c.causal);
    AsrTask task(hp);
    const masr::train::LossOptions options = prepare_trainer(task, a, b);
    masr::train::TrainConfig config;
    config.bos_index = 1;
    config.eos_index = 2;
    config.pad_index = 0;
    const ForwardFn forward = [&](const AsrBatch& batch) {
      return task.forward(batch, /*training=*/true, /*epoch=*/100, nullptr, options).loss;
    };
    auto run = [&](bool grid) {
      config.recurring_shapes = grid;
      const AsrBatch batch = masr::train::collate({item(a, "a"), item(b, "b")}, 16000, config);
      return std::make_pair(measure_batch(forward, task.parameters(), batch), batch);
    };
    const auto [plain, plain_batch] = run(false);
    const auto [grid, grid_batch] = run(true);
    // The grid padded further: 21011 samples -> 21120 (33 units of 640), 9 BOS tokens -> 16.
    CHECK(plain_batch.wav.size(1) == 21011);
    CHECK(grid_batch.wav.size(1) == 21120);
    CHECK(plain_batch.tokens_bos.size(1) == 9);
    CHECK(grid_batch.tokens_bos.size(1) == 16);
    CHECK(plain.loss > 0.0);
    CHECK(std::abs(grid.loss - plain.loss) / plain.loss < kLossTolerance);
    const double grad_diff = largest_relative_difference(grid.grads, plain.grads);
    INFO("largest relative gradient difference " << grad_diff);
    CHECK(grad_diff < kGradTolerance);
  }
}

// SpeechBrain's recipes hold fea_augment back while `optimizer_step > augment_warmup` is false;
// without the key it runs from the first batch (v1.0.0's scripts).
TEST_CASE("augment_warmup holds the feature augmentation back for its optimizer steps", "[train]") {
  masr::toolkit::register_all();
  const auto [a, b] = two_utterances();
  const std::string path = std::string(MASR_SOURCE_DIR) + "/hparams/CTC/conmamba_tiny.yaml";
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  masr::hparams::LoadOptions options;
  options.overrides.emplace_back("transformer_dropout", "0.0");
  options.placeholder_value = "unused";
  const auto plain = masr::hparams::load_text(text.str(), options, path);
  const auto held = masr::hparams::load_text(text.str() + "augment_warmup: 3\n", options, path);
  AsrTask with_warmup(held), without(plain);
  CHECK(with_warmup.augment_warmup() == 3);
  CHECK(without.augment_warmup() == -1);
  for (AsrTask* task : {&with_warmup, &without}) {
    // Same initial weights in both tasks, dropout off, statistics from one batch.
    torch::manual_seed(17);
    for (auto& p : task->parameters()) {
      torch::NoGradGuard no_grad;
      p.uniform_(-0.1, 0.1);
    }
  }
  const masr::train::LossOptions loss_options = prepare_trainer(with_warmup, a, b);
  (void)prepare_trainer(without, a, b);
  const AsrBatch batch = make_batch({a, b}, 1, 2);
  auto loss = [&](AsrTask& task, at::Generator* generator, int64_t steps) {
    torch::NoGradGuard no_grad;
    return task.forward(batch, true, /*epoch=*/100, generator, loss_options, steps)
        .loss.item<double>();
  };
  auto generator = [] { return masr::features::make_generator(5); };
  const double clean = loss(with_warmup, nullptr, 0);
  REQUIRE(clean > 0.0);
  // Steps 0..3 done: held back, the loss of the unaugmented batch (bit for bit); after step 4 the
  // time and frequency drops (probability 1) change it (by about 0.02 % on this small batch).
  for (int64_t steps : {0, 3}) {
    at::Generator g = generator();
    CHECK(loss(with_warmup, &g, steps) == Approx(clean).epsilon(1e-12));
  }
  at::Generator g4 = generator();
  CHECK(std::abs(loss(with_warmup, &g4, 4) - clean) > 1e-5 * clean);
  at::Generator g0 = generator();
  CHECK(std::abs(loss(without, &g0, 0) - loss(without, nullptr, 0)) > 1e-5 * clean);

  const auto negative =
      [&] { return masr::hparams::load_text(text.str() + "augment_warmup: -1\n", options, path); };
  CHECK_THROWS_WITH(AsrTask(negative()), Catch::Contains("augment_warmup") &&
                                             Catch::Contains("0 or more optimizer steps"));
}
