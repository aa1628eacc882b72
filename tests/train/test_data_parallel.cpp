// tests/train/test_data_parallel.cpp
// Gradient buckets overlapped with backward (with a stand-in all-reduce, then two real Gloo ranks
// in two threads over a TCPStore), a non-finite loss on one rank skipping the step on all of them,
// the normalizer's statistics gather, the torchrun variables and the equal per-rank batch counts.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <thread>

#include <torch/torch.h>

#include "core/error.h"
#include "features/input_normalization.h"
#include "train/c10d_data_parallel.h"
#include "train/gradient_buckets.h"
#include "train/local_launcher.h"
#include "train/optimizer_stepper.h"
#include "train/train_data.h"

using namespace masr;
using namespace masr::train;

namespace {

// A three-layer net whose middle layer's bias is unused, and a loss on a batch.
struct Net {
  torch::nn::Linear a{4, 8}, b{8, 8}, c{8, 2};
  std::vector<at::Tensor> parameters() const {
    return {a->weight, a->bias, b->weight, b->bias, c->weight, c->bias};
  }
  at::Tensor loss(const at::Tensor& x) {
    const at::Tensor h = torch::tanh(a->forward(x));
    const at::Tensor g = torch::tanh(torch::matmul(h, b->weight.t()));  // b->bias unused
    return c->forward(g).pow(2).mean();
  }
};

Net seeded_net() {
  torch::manual_seed(11);
  return Net{};
}

at::Tensor batch(int i) {
  return torch::linspace(-1.0, 1.0, 12).reshape({3, 4}) * (0.5 + i) + 0.1 * i;
}

// Each parameter of `net` has a gradient where `reference`'s has one, and the same.
void check_same_gradients(const Net& net, const Net& reference) {
  const auto got = net.parameters(), want = reference.parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE(got[i].grad().defined() == want[i].grad().defined());
    if (want[i].grad().defined()) CHECK(torch::allclose(got[i].grad(), want[i].grad(), 1e-6, 1e-7));
  }
}

}  // namespace

TEST_CASE("data parallel: buckets launch during backward, in order, and average into p.grad",
          "[parallel]") {
  Net net = seeded_net();
  Net reference = seeded_net();
  std::vector<const void*> launched;
  // Stand-in for two ranks with identical gradients: the sum doubles, the average is the own one.
  GradientBuckets buckets(net.parameters(), /*bucket_bytes=*/1, /*world_size=*/2,
                          [&launched](const at::Tensor& flat) {
                            launched.push_back(flat.data_ptr());
                            flat.mul_(2.0);
                            return std::function<void()>([] {});
                          });
  REQUIRE(buckets.bucket_count() == 6);  // 1 byte: one parameter per bucket
  // Two micro-batches; only the second is armed.
  (net.loss(batch(0)) / 2).backward();
  CHECK(buckets.launched() == 0);
  buckets.arm();
  (net.loss(batch(1)) / 2).backward();
  // Buckets 0 and 1 (c.bias, c.weight) went out during backward; bucket 2 (b.bias, unused)
  // never fills, and the later ones wait for it (launch order is the bucket order).
  CHECK(buckets.launched() == 2);
  buckets.finish();
  CHECK(launched.size() == buckets.bucket_count() + 1);  // + the "used" counts
  (reference.loss(batch(0)) / 2).backward();
  (reference.loss(batch(1)) / 2).backward();
  check_same_gradients(net, reference);
  CHECK_FALSE(net.b->bias.grad().defined());  // unused everywhere: stays undefined, as in 1 process

  // An unarmed step (an epoch's partial accumulation) reduces everything in finish().
  for (auto& p : net.parameters()) p.mutable_grad() = at::Tensor();
  launched.clear();
  net.loss(batch(2)).backward();
  CHECK(buckets.launched() == 0);
  buckets.finish();
  CHECK(launched.size() == buckets.bucket_count() + 1);
}

TEST_CASE("data parallel: arm() starts a clean step after one that never finished",
          "[parallel]") {
  // A CUDA graph capture that fails after its backward leaves slots filled and buckets launched
  // (captured all-reduces that never ran); the step is then run again op by op.
  Net net = seeded_net();
  Net reference = seeded_net();
  size_t launches = 0;
  GradientBuckets buckets(net.parameters(), /*bucket_bytes=*/1, /*world_size=*/2,
                          [&launches](const at::Tensor& flat) {
                            ++launches;
                            flat.mul_(2.0);
                            return std::function<void()>([] {});
                          });
  buckets.arm();
  net.loss(batch(3)).backward();
  REQUIRE(buckets.launched() == 2);  // no finish(): the failed capture
  for (auto& p : net.parameters()) p.mutable_grad() = at::Tensor();
  launches = 0;
  buckets.release();
  buckets.arm();
  net.loss(batch(4)).backward();
  CHECK(buckets.launched() == 2);
  buckets.finish();
  CHECK(launches == buckets.bucket_count() + 1);
  reference.loss(batch(4)).backward();
  check_same_gradients(net, reference);
}

TEST_CASE("data parallel: p.grad is the bucket's slice, and later steps stay exact whether "
          "the optimizer sets gradients to none or zeroes them in place",
          "[parallel]") {
  for (const bool zero_in_place : {false, true}) {
    INFO((zero_in_place ? "zeroed in place" : "set to none"));
    Net net = seeded_net();
    // One bucket for everything; the stand-in "sum" of two identical ranks doubles.
    GradientBuckets buckets(net.parameters(), /*bucket_bytes=*/1 << 20, /*world_size=*/2,
                            [](const at::Tensor& flat) {
                              flat.mul_(2.0);
                              return std::function<void()>([] {});
                            });
    REQUIRE(buckets.bucket_count() == 1);
    for (int step = 0; step < 3; ++step) {
      INFO("step " << step);
      // Between steps, what the optimizer does to p.grad.
      for (auto& p : net.parameters()) {
        if (!p.grad().defined()) continue;
        if (zero_in_place) {
          p.mutable_grad().zero_();
        } else {
          p.mutable_grad() = at::Tensor();
        }
      }
      // Two micro-batches, each announced (release), the second armed.
      buckets.release();
      (net.loss(batch(2 * step)) / 2).backward();
      buckets.release();
      buckets.arm();
      (net.loss(batch(2 * step + 1)) / 2).backward();
      buckets.finish();
      Net reference = seeded_net();
      (reference.loss(batch(2 * step)) / 2).backward();
      (reference.loss(batch(2 * step + 1)) / 2).backward();
      const auto got = net.parameters(), want = reference.parameters();
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("parameter " << i);
        if (!want[i].grad().defined()) {
          // b.bias: never used, so never given a slice.
          CHECK_FALSE(got[i].grad().defined());
          continue;
        }
        REQUIRE(got[i].grad().defined());
        CHECK(torch::allclose(got[i].grad(), want[i].grad(), 1e-6, 1e-7));
      }
      // No copies back: every gradient lies in the one bucket's storage, in the reversed
      // parameter order of the layout (c.bias first).
      const at::Tensor& first = net.c->bias.grad();
      for (const auto& p : got) {
        if (!p.grad().defined()) continue;
        CHECK(p.grad().storage().is_alias_of(first.storage()));
      }
      CHECK(net.c->weight.grad().data_ptr() ==
            static_cast<void*>(static_cast<float*>(first.data_ptr()) + 2));
    }
  }
}

TEST_CASE("data parallel: two Gloo ranks average gradients, sum scalars and gather statistics",
          "[parallel]") {
  const int port = free_local_port();
  std::vector<std::vector<at::Tensor>> grads(2);
  std::vector<double> sums(2);
  std::vector<at::Tensor> gathered(2);
  std::vector<std::string> errors(2);
  std::vector<int> ranks(2, -1);
  std::vector<Net> nets{seeded_net(), seeded_net()};  // seeded here, not in the threads
  // Catch2 assertions stay on this thread; the ranks only record what they see.
  auto rank_main = [&](int rank) {
    try {
      ParallelEnv env{rank, 2, rank, "127.0.0.1", port};
      auto parallel = make_c10d_data_parallel(env, runtime::DeviceChoice::cpu());
      ranks[rank] = parallel->rank();
      Net& net = nets[rank];
      // Rank r: batch r with accumulation factor 1.
      parallel->prepare_backward(net.parameters(), true);
      net.loss(batch(rank)).backward();
      parallel->average_gradients(net.parameters());
      for (const auto& p : net.parameters()) {
        grads[rank].push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
      }
      sums[rank] = parallel->sum(rank + 0.5);
      gathered[rank] = parallel->all_gather(torch::full({2}, 10.0 * (rank + 1)));
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  };
  std::thread r1(rank_main, 1);
  rank_main(0);
  r1.join();
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  CHECK(ranks == std::vector<int>{0, 1});
  // One process, batches 0 and 1 accumulated with factor 2: the same average.
  Net reference = seeded_net();
  (reference.loss(batch(0)) / 2).backward();
  (reference.loss(batch(1)) / 2).backward();
  const auto want = reference.parameters();
  for (int rank = 0; rank < 2; ++rank) {
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("rank " << rank << " parameter " << i);
      REQUIRE(grads[rank][i].defined() == want[i].grad().defined());
      if (want[i].grad().defined()) {
        CHECK(torch::allclose(grads[rank][i], want[i].grad(), 1e-6, 1e-7));
      }
    }
  }
  CHECK(sums[0] == 2.0);
  CHECK(sums[1] == 2.0);
  const at::Tensor expected = torch::tensor({10.0f, 10.0f, 20.0f, 20.0f}).reshape({2, 2});
  CHECK(torch::equal(gathered[0], expected));
  CHECK(torch::equal(gathered[1], expected));
}

TEST_CASE("data parallel: a non-finite loss on one rank skips that step on every rank",
          "[parallel]") {
  // No collective of its own: the rank's NaN gradients reach every rank through the gradient
  // all-reduce, and each skips on the same non-finite norm.
  const int port = free_local_port();
  TrainConfig config;
  config.optimizer.lr = 0.01;
  config.grad_accumulation_factor = 1;
  config.max_grad_norm = 5.0;
  std::vector<std::string> errors(2);
  std::vector<std::vector<std::vector<at::Tensor>>> after(2);  // [rank][step][parameter]
  std::vector<SkippedSteps> skipped(2);
  std::vector<Net> nets{seeded_net(), seeded_net()};
  auto rank_main = [&](int rank) {
    try {
      ParallelEnv env{rank, 2, rank, "127.0.0.1", port};
      auto parallel = make_c10d_data_parallel(env, runtime::DeviceChoice::cpu());
      Net& net = nets[rank];
      OptimizerStepper stepper(config, net.parameters(), /*cuda=*/false, parallel);
      for (int step = 0; step < 3; ++step) {
        at::Tensor loss = net.loss(batch(2 * step + rank));
        // Step 1: rank 1's loss is -inf while its gradients are finite; only the loss tells.
        if (step == 1 && rank == 1) loss = loss + torch::log(torch::zeros({}));
        stepper.backward(loss);
        std::vector<at::Tensor> snapshot;
        for (const auto& p : net.parameters()) snapshot.push_back(p.detach().clone());
        after[rank].push_back(snapshot);
      }
      skipped[rank] = stepper.take_skipped();
    } catch (const std::exception& e) {
      errors[rank] = e.what();
    }
  };
  std::thread r1(rank_main, 1);
  rank_main(0);
  r1.join();
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  for (int rank = 0; rank < 2; ++rank) {
    CHECK(skipped[rank].steps == 1);
    CHECK(skipped[rank].batches == 1);
  }
  const size_t n = after[0][0].size();
  for (size_t step = 0; step < 3; ++step) {
    for (size_t i = 0; i < n; ++i) {
      INFO("step " << step << " parameter " << i);
      CHECK(torch::equal(after[0][step][i], after[1][step][i]));  // the ranks agree
    }
  }
  for (size_t i = 0; i < n; ++i) CHECK(torch::equal(after[0][1][i], after[0][0][i]));  // skipped
  CHECK_FALSE(torch::equal(after[0][2][0], after[0][1][0]));  // and training went on
}

TEST_CASE("data parallel: gathered normalizer statistics match one process's sequential updates",
          "[parallel]") {
  features::InputNormalizationConfig config;  // global, cumulative average
  features::InputNormalization single(config), rank1(config);
  single->train(true), rank1->train(true);
  const at::Tensor x0 = torch::randn({2, 5, 3}), x1 = torch::randn({2, 5, 3}) * 2 + 1;
  single->forward(x0, {}, 1);
  const at::Tensor single_out1 = single->forward(x1, {}, 1);
  // Rank 1 of 2 sees x1; its gather returns both ranks' batch statistics (rank 0's from x0).
  features::InputNormalization probe(config);
  probe->train(true);
  probe->forward(x0, {}, 1);
  const at::Tensor stats0 = torch::stack({probe->glob_mean(), probe->glob_std()});
  rank1->set_statistics_gather(1, [&stats0](const at::Tensor& local) {
    return torch::stack({stats0, local});
  });
  const at::Tensor rank1_out = rank1->forward(x1, {}, 1);
  CHECK(rank1->count() == 2);
  CHECK(torch::allclose(rank1->glob_mean(), single->glob_mean(), 1e-6, 1e-7));
  CHECK(torch::allclose(rank1->glob_std(), single->glob_std(), 1e-6, 1e-7));
  CHECK(torch::allclose(rank1_out, single_out1, 1e-5, 1e-6));  // normalized as one process would
}

TEST_CASE("data parallel: malformed torchrun variables are errors naming them", "[parallel]") {
  auto with_env = [](const char* world, const char* rank) {
    setenv("WORLD_SIZE", world, 1);
    setenv("RANK", rank, 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29511", 1);
    unsetenv("LOCAL_RANK");
  };
  with_env("2", "5");
  CHECK_THROWS_WITH(parallel_env_from_environment(),
                    Catch::Contains("RANK='5' is not an integer in [0, 1]"));
  with_env("two", "0");
  CHECK_THROWS_WITH(parallel_env_from_environment(), Catch::Contains("WORLD_SIZE='two'"));
  with_env("2", "1");
  const auto env = parallel_env_from_environment();
  REQUIRE(env);
  CHECK(env->local_rank == 1);  // LOCAL_RANK defaults to RANK
  CHECK(env->master_port == 29511);
  unsetenv("MASTER_PORT");
  CHECK_THROWS_WITH(parallel_env_from_environment(), Catch::Contains("MASTER_PORT is not set"));
  for (const char* name : {"WORLD_SIZE", "RANK", "MASTER_ADDR"}) unsetenv(name);
  CHECK_FALSE(parallel_env_from_environment());
  CHECK_THROWS_WITH(make_c10d_data_parallel(ParallelEnv{}, runtime::parse_device("mps")),
                    Catch::Contains("device 'mps' is not supported"));
}

TEST_CASE("data parallel: every rank gets the same batch count; the last short round is dropped",
          "[parallel]") {
  data::Manifest manifest;
  for (int i = 0; i < 7; ++i) {
    data::ManifestRow row;
    row.id = "u" + std::to_string(i);
    row.duration = 1.0 + i;
    manifest.rows.push_back(row);
  }
  BatchingConfig config;
  config.dynamic = false;
  config.fixed_options.batch_size = 1;
  const auto all = epoch_batches(manifest, config, 1);
  REQUIRE(all.size() == 7);
  const auto r0 = epoch_batches(manifest, config, 1, 0, 2);
  const auto r1 = epoch_batches(manifest, config, 1, 1, 2);
  CHECK(r0.size() == 3);
  CHECK(r1.size() == 3);  // batch 6 (the incomplete round) is dropped
  CHECK(r0[2] == all[4]);
  CHECK(r1[2] == all[5]);
  CHECK(epoch_batches(manifest, config, 1, 0, 2, /*same_count=*/false).size() == 4);
  CHECK_THROWS_WITH(epoch_batches(manifest, config, 1, 0, 8),
                    Catch::Contains("has 7 batches, fewer than the 8 data-parallel ranks"));
}
