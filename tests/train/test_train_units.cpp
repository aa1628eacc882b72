// tests/train/test_train_units.cpp
// Trainer building blocks: losses against hand formulas and PyTorch, Noam schedules, optimizer
// factories, checkpoint retention and atomicity, state averaging, curves, logs.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <torch/torch.h>

#include "core/error.h"
#include "hparams/hparams.h"
#include "core/atomic_file.h"
#include "train/checkpointer.h"
#include "train/losses.h"
#include "train/noam_scheduler.h"
#include "train/optimizer.h"
#include "train/state_dict.h"
#include "train/train_logger.h"
#include "train/training_curves.h"
#include "train_fixtures.h"

using namespace masr;
using namespace masr::train;

TEST_CASE("kldiv_loss with label smoothing matches the smoothed-target formula", "[train]") {
  torch::manual_seed(0);
  const at::Tensor lp = torch::log_softmax(torch::randn({2, 3, 5}), -1);
  const at::Tensor targets = torch::tensor({{1, 4, 0}, {2, 0, 0}}, torch::kLong);
  const double eps = 0.1;
  const at::Tensor got =
      kldiv_loss(lp, targets, torch::tensor({1.0, 1.0}), eps, 0, LossReduction::kBatchMean);
  // sum over non-pad positions of sum_k q_k (log q_k - lp_k), divided by the batch (2).
  double expected = 0;
  for (int b = 0; b < 2; ++b) {
    for (int u = 0; u < 3; ++u) {
      const int64_t t = targets[b][u].item<int64_t>();
      if (t == 0) continue;
      for (int k = 0; k < 5; ++k) {
        const double q = k == t ? 1 - eps : eps / 4;
        expected += q * (std::log(q) - lp[b][u][k].item<double>());
      }
    }
  }
  CHECK(got.item<double>() == Approx(expected / 2).epsilon(1e-5));
  // Without smoothing: nll masked by relative length (second row: 1 of 3 positions).
  const at::Tensor nll =
      kldiv_loss(lp, targets, torch::tensor({1.0, 1.0 / 3}), 0.0, 0, LossReduction::kBatchMean);
  const double nll_expected = -(lp[0][0][1].item<double>() + lp[0][1][4].item<double>() +
                                lp[0][2][0].item<double>() + lp[1][0][2].item<double>()) /
                              2;
  CHECK(nll.item<double>() == Approx(nll_expected).epsilon(1e-5));
}

TEST_CASE("ctc_loss batchmean is torch's summed CTC over the batch size, zero_infinity",
          "[train]") {
  torch::manual_seed(1);
  const at::Tensor lp = torch::log_softmax(torch::randn({2, 6, 4}), -1);
  const at::Tensor targets = torch::tensor({{1, 2, 3}, {2, 0, 0}}, torch::kLong);
  const at::Tensor got = ctc_loss(lp, targets, torch::tensor({1.0, 0.5}),
                                  torch::tensor({1.0, 1.0 / 3}), 0, LossReduction::kBatchMean);
  const at::Tensor sum = at::ctc_loss(lp.transpose(0, 1), targets, torch::tensor({6, 3}),
                                      torch::tensor({3, 1}), 0, at::Reduction::Sum, true);
  CHECK(got.item<double>() == Approx(sum.item<double>() / 2).epsilon(1e-6));
  // One-frame input for a 3-token target is infeasible: zero_infinity gives 0, not inf.
  const at::Tensor inf = ctc_loss(lp, targets, torch::tensor({1.0 / 6, 0.5}),
                                  torch::tensor({1.0, 1.0 / 3}), 0, LossReduction::kSum);
  CHECK(std::isfinite(inf.item<double>()));
  CHECK_THROWS_WITH(parse_loss_reduction("avg", "loss_reduction"),
                    Catch::Contains("loss_reduction 'avg' is not a loss reduction"));
}

TEST_CASE("token_accuracy counts argmax hits within the lengths", "[train]") {
  const at::Tensor lp = torch::log_softmax(
      torch::tensor({{{0.f, 5.f, 0.f}, {5.f, 0.f, 0.f}}, {{0.f, 0.f, 5.f}, {0.f, 5.f, 0.f}}}), -1);
  const auto [correct, counted] =
      token_accuracy(lp, torch::tensor({{1, 2}, {2, 2}}, torch::kLong), torch::tensor({1.0, 0.5}));
  CHECK(correct == 2);  // (0,0) hit, (0,1) miss, (1,0) hit, (1,1) padding
  CHECK(counted == 3);
}

TEST_CASE("NoamScheduler and LinearNoamScheduler follow SpeechBrain's formulas", "[train]") {
  NoamScheduler noam({"NoamScheduler", 1e-3, 4, std::nullopt, 0});
  // normalize = sqrt(4) = 2; step 1: 2 * min(1, 1/8) = 0.25; step 4: 2 * min(0.5, 0.5) = 1.
  CHECK(noam.step() == Approx(0.25e-3));
  CHECK(noam.lr_at(4) == Approx(1e-3));
  CHECK(noam.lr_at(16) == Approx(1e-3 * 2 * 0.25));
  NoamScheduler linear({"LinearNoamScheduler", 1e-3, 4, std::nullopt, 2});
  CHECK(linear.lr_at(2) == Approx(0.5e-3));
  CHECK(linear.lr_at(5) == Approx(1e-3));
  CHECK(linear.lr_at(10) == Approx(1e-3 * 4.0 / 8.0));
  CHECK_THROWS_WITH(NoamScheduler({"NoamScheduler", 1e-3, 0, std::nullopt, 0}),
                    Catch::Contains("n_warmup_steps 0 must be >= 1"));
}

TEST_CASE("optimizer factories: torch.optim defaults and errors", "[train]") {
  const auto hp = hparams::load_text(
      "a: !name:torch.optim.AdamW\n  lr: 0.002\n  betas: (0.9, 0.98)\n  eps: 0.000000001\n"
      "b: !name:torch.optim.Adam\n  lr: 0.001\n"
      "c: !name:torch.optim.SGD\n  lr: 0.1\n");
  const OptimizerConfig a = optimizer_config_from(hp["a"]);
  CHECK(a.type == "AdamW");
  CHECK(a.weight_decay == 0.01);  // torch's AdamW default
  CHECK(a.beta2 == 0.98);
  CHECK(a.eps == 1e-9);
  CHECK(optimizer_config_from(hp["b"]).weight_decay == 0.0);
  CHECK_THROWS_WITH(optimizer_config_from(hp["c"]),
                    Catch::Contains("optimizer 'torch.optim.SGD' is not supported"));
  // Clipping: gradient (3, 4) has norm 5, clipped to 1.
  at::Tensor p = torch::zeros({2}, torch::requires_grad());
  (p * torch::tensor({3.f, 4.f})).sum().backward();
  CHECK(clip_gradients({p}, 1.0).item<double>() == Approx(5.0));
  CHECK(p.grad().norm().item<double>() == Approx(1.0).epsilon(1e-4));
}

TEST_CASE("Checkpointer: atomic directories, retention by metric, newest kept", "[train]") {
  testing::TempDir dir("ckpt");
  std::filesystem::create_directories(dir.file(".tmp-CKPT+000009-E1-B1"));
  Checkpointer c(dir.str());
  CHECK_FALSE(std::filesystem::exists(dir.file(".tmp-CKPT+000009-E1-B1")));  // leftovers removed
  const RetentionPolicy policy{"WER", false, 2};
  for (double wer : {30.0, 10.0, 20.0, 40.0}) {
    CheckpointMeta m;
    m.end_of_epoch = true;
    m.metrics["WER"] = wer;
    c.save(m, {{"model.ckpt", "x"}});
    c.prune(policy);
  }
  CheckpointMeta intra;
  intra.batch = 3;
  c.save(intra, {{"model.ckpt", "y"}});
  c.prune(policy);
  const auto all = c.list();
  REQUIRE(all.size() == 3);  // WER 10, WER 20, and the newest (intra-epoch)
  const auto best = c.best(policy);
  REQUIRE(best.size() == 2);
  CHECK(best[0].meta.metrics.at("WER") == 10.0);
  CHECK(best[1].meta.metrics.at("WER") == 20.0);
  CHECK(c.latest()->meta.batch == 3);
  CHECK(Checkpointer::read(*c.latest(), "model.ckpt") == "y");
  CHECK_THROWS_WITH(meta_from_json("{\"serial\": 1}", "m.json"),
                    Catch::Contains("checkpoint meta 'm.json' is malformed"));
  CHECK_THROWS_WITH(read_file(dir.file("missing")), Catch::Contains("cannot open"));
}

TEST_CASE("Checkpointer: a NaN metric (a diverged epoch) reads back and ranks last", "[train]") {
  testing::TempDir dir("ckpt_nan");
  Checkpointer c(dir.str());
  RetentionPolicy policy;
  policy.metric = "valid_loss";
  policy.keep = 2;
  for (double loss : {5.0, std::numeric_limits<double>::quiet_NaN(), 3.0}) {
    CheckpointMeta m;
    m.end_of_epoch = true;
    m.metrics["valid_loss"] = loss;
    c.save(m, {{"model.ckpt", "x"}});
  }
  const CheckpointMeta back = meta_from_json(meta_to_json(c.list()[1].meta), "m");
  CHECK(std::isnan(back.metrics.at("valid_loss")));
  const auto best = c.best(policy);
  REQUIRE(best.size() == 2);
  CHECK(best[0].meta.metrics.at("valid_loss") == 3.0);
  CHECK(best[1].meta.metrics.at("valid_loss") == 5.0);
}

TEST_CASE("Checkpointer: a file whose bytes changed is refused before anything parses it",
          "[train]") {
  testing::TempDir dir("ckpt_crc");
  Checkpointer c(dir.str());
  c.save(CheckpointMeta(), {{"rng.ckpt", serialize_cpu_rng()}, {"optimizer.ckpt", "abc"}});
  const CheckpointInfo saved = *c.latest();
  CHECK(saved.meta.checksums.at("optimizer.ckpt") == "352441c2");  // zlib's CRC-32 of "abc"
  CHECK(Checkpointer::read(saved, "optimizer.ckpt") == "abc");
  const std::string rng_path = saved.path + "/rng.ckpt";
  std::string rng = read_file(rng_path);
  rng[rng.size() / 2] = static_cast<char>(rng[rng.size() / 2] ^ 0x10);
  std::ofstream(rng_path, std::ios::binary | std::ios::trunc) << rng;
  CHECK_THROWS_WITH(Checkpointer::read(saved, "rng.ckpt"),
                    Catch::Contains(rng_path) && Catch::Contains("is corrupt: its CRC-32"));
  // A checkpoint from before checksums were kept is read as it is.
  CheckpointInfo old = saved;
  old.meta.checksums.clear();
  CHECK(Checkpointer::read(old, "rng.ckpt") == rng);
  CHECK(meta_from_json(meta_to_json(old.meta), "m").checksums.empty());
}

TEST_CASE("state dicts: serialization round trip, strict loading", "[train]") {
  torch::nn::Linear a(3, 2), b(3, 2);
  const StateDict sa = state_dict(*a);
  const StateDict back = deserialize_state(serialize_state(sa), "mem");
  REQUIRE(back.size() == 2);
  CHECK(torch::equal(back[0].second, sa[0].second));
  load_state_dict(*b, sa, "a");
  CHECK(torch::equal(b->weight, a->weight));
  torch::nn::Linear c(4, 2);
  CHECK_THROWS_WITH(load_state_dict(*c, sa, "file.ckpt"),
                    Catch::Contains("file.ckpt: tensor 'weight' has shape"));
  CHECK_THROWS_WITH(deserialize_state("garbage", "g.ckpt"), Catch::Contains("g.ckpt"));
  // Checked before LibTorch's unpickler sees it: truncations and other shapes of pickle.
  const std::string bytes = serialize_state(sa);
  for (size_t keep : {size_t{0}, size_t{30}, bytes.size() / 2, bytes.size() - 1}) {
    CHECK_THROWS_WITH(deserialize_state(bytes.substr(0, keep), "t.ckpt"),
                      Catch::Contains("t.ckpt") && Catch::Contains("corrupt"));
  }
  const std::vector<char> number = torch::pickle_save(c10::IValue(int64_t{3}));
  CHECK_THROWS_WITH(deserialize_state(std::string(number.begin(), number.end()), "n.ckpt"),
                    Catch::Contains("n.ckpt is corrupt (not a dict of tensors)"));
  c10::Dict<std::string, int64_t> ints;
  ints.insert("a", 1);
  const std::vector<char> dict = torch::pickle_save(c10::IValue(ints));
  CHECK_THROWS_WITH(deserialize_state(std::string(dict.begin(), dict.end()), "d.ckpt"),
                    Catch::Contains("d.ckpt is corrupt (not a dict of name -> tensor)"));
}

TEST_CASE("log.jsonl history and the SVG curves", "[train]") {
  testing::TempDir dir("logs");
  {
    TrainLogger log(dir.str(), dir.file("train_log.txt"), 0);
    log.log_step(1, 10, 2.5, 1e-3, 12.0);
    log.log_epoch({1, 10, 1e-3, 2.0, {{"valid_loss", 1.5}, {"WER", 80.0}}});
    EpochRecord second{2, 20, 5e-4, 1.0, {{"valid_loss", 0.9}, {"WER", 50.0}}};
    second.peak_gpu_mib = 13339.5;
    log.log_epoch(second);
  }
  const auto history = read_epoch_history(dir.file("log.jsonl"));
  REQUIRE(history.size() == 2);
  CHECK(history[1].valid.at("WER") == 50.0);
  // The peak memory comes back as itself, not as a validation metric; absent where unmeasured.
  CHECK(history[1].peak_gpu_mib == 13339.5);
  CHECK(history[1].valid.count("peak_gpu_mib") == 0);
  CHECK(history[0].peak_gpu_mib == 0.0);
  CHECK(read_file(dir.file("log.jsonl")).find("peak_gpu_mib") != std::string::npos);
  TrainLogger resumed(dir.str(), dir.file("train_log.txt"), 1);  // epoch 2 is redone
  CHECK(resumed.history().size() == 1);
  const std::string text = read_file(dir.file("train_log.txt"));
  CHECK(text.find(
            "epoch: 1, lr: 1.00e-03, steps: 10 - train loss: 2 - valid WER: 80, valid loss: 1.5") !=
        std::string::npos);
  const std::string svg = training_curves_svg(history, {}, "run");
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("polyline") != std::string::npos);
  CHECK(svg.find("WER") != std::string::npos);
}
