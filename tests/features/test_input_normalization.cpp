// tests/features/test_input_normalization.cpp
// InputNormalization with statistics small enough to compute by hand.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <torch/serialize.h>

#include <cmath>

#include "core/error.h"
#include "features/input_normalization.h"
#include "signals.h"

using masr::features::InputNormalization;
using masr::features::InputNormalizationConfig;

namespace {

// Batch 1, one feature dimension:
//   utterance 0: frames 1 2 3 4, relative length 1.0 -> mean 2.5, std sqrt(5/3) = 1.2909944
//   utterance 1: frames 10 20 | 0 0, relative length 0.5 -> 2 valid frames: mean 15, std 7.0710678
//   batch statistics: mean 8.75, std (1.2909944 + 7.0710678) / 2 = 4.1810311
at::Tensor batch1() {
  return at::tensor({1.f, 2.f, 3.f, 4.f, 10.f, 20.f, 0.f, 0.f}).view({2, 4, 1});
}
at::Tensor lengths1() { return at::tensor({1.0, 0.5}); }
// Batch 2: one utterance 0 2 -> mean 1, std sqrt(2) = 1.4142136.
at::Tensor batch2() { return at::tensor({0.f, 2.f}).view({1, 2, 1}); }

double at0(const at::Tensor& t) { return t.flatten()[0].item<double>(); }

}  // namespace

TEST_CASE("global InputNormalization: first batch initialises, cumulative average, freeze",
          "[features]") {
  InputNormalizationConfig config;
  config.update_until_epoch = 4;
  InputNormalization norm(config);
  norm->train();
  const at::Tensor out = norm->forward(batch1(), lengths1(), 1);
  CHECK(norm->count() == 1);
  CHECK(at0(norm->glob_mean()) == Approx(8.75).epsilon(1e-6));
  CHECK(at0(norm->glob_std()) == Approx(4.1810311).epsilon(1e-6));
  // Applied to the whole padded tensor, padding included.
  CHECK(out[0][0][0].item<double>() == Approx((1 - 8.75) / 4.1810311).epsilon(1e-5));
  CHECK(out[1][3][0].item<double>() == Approx((0 - 8.75) / 4.1810311).epsilon(1e-5));

  // Weight 1 / (count + 1) = 1/2 at epoch 3 < 4.
  norm->forward(batch2(), {}, 3);
  CHECK(norm->count() == 2);
  CHECK(at0(norm->glob_mean()) == Approx((8.75 + 1.0) / 2).epsilon(1e-6));
  CHECK(at0(norm->glob_std()) == Approx((4.1810311 + 1.4142136) / 2).epsilon(1e-6));

  // Epoch 4 is not < update_until_epoch: frozen, but count still advances (as SpeechBrain).
  const at::Tensor frozen = norm->forward(batch2() * 100, {}, 4);
  CHECK(norm->count() == 3);
  CHECK(at0(norm->glob_mean()) == Approx(4.875).epsilon(1e-6));
  CHECK(at0(frozen[0][1]) == Approx((200 - 4.875) / 2.7976224).epsilon(1e-5));

  // Evaluation never updates.
  norm->eval();
  norm->forward(batch1() * 7, lengths1(), 1);
  CHECK(norm->count() == 3);
  CHECK(at0(norm->glob_mean()) == Approx(4.875).epsilon(1e-6));
}

TEST_CASE("InputNormalization avg_factor, mean_norm/std_norm and no-epoch updates", "[features]") {
  InputNormalizationConfig config;
  config.avg_factor = 0.25;
  InputNormalization norm(config);
  norm->forward(batch1(), lengths1());
  norm->forward(batch2());  // no epoch: always updates
  CHECK(at0(norm->glob_mean()) == Approx(0.75 * 8.75 + 0.25 * 1.0).epsilon(1e-6));

  config = InputNormalizationConfig{};
  config.norm_type = "sentence";
  config.std_norm = false;
  InputNormalization centred(config);
  const at::Tensor out = centred->forward(batch1(), lengths1());
  CHECK(out[0][0][0].item<double>() == Approx(1 - 2.5));
  CHECK(out[1][1][0].item<double>() == Approx(20 - 15));
}

TEST_CASE("sentence InputNormalization uses each utterance's own statistics", "[features]") {
  InputNormalizationConfig config;
  config.norm_type = "sentence";
  InputNormalization norm(config);
  const at::Tensor out = norm->forward(batch1(), lengths1());
  CHECK(out[0][3][0].item<double>() == Approx((4 - 2.5) / 1.2909944).epsilon(1e-5));
  CHECK(out[1][0][0].item<double>() == Approx((10 - 15) / 7.0710678).epsilon(1e-5));
  CHECK(norm->count() == 0);
}

TEST_CASE("InputNormalization statistics travel through a saved module", "[features]") {
  masr::test::ScratchDir dir("norm");
  InputNormalization trained;
  trained->forward(at::randn({3, 20, 80}), {}, 1);
  trained->forward(at::randn({3, 20, 80}) + 1, {}, 1);
  torch::save(trained.ptr(), dir.file("norm.pt"));
  InputNormalization loaded;
  CHECK_FALSE(loaded->has_statistics());
  torch::load(loaded.ptr(), dir.file("norm.pt"));
  CHECK(loaded->count() == 2);
  CHECK(loaded->glob_mean().equal(trained->glob_mean()));
  CHECK(loaded->glob_std().equal(trained->glob_std()));
  loaded->eval();
  const at::Tensor x = at::randn({1, 5, 80});
  CHECK(loaded->forward(x).equal((x - trained->glob_mean()) / trained->glob_std()));
}

TEST_CASE("InputNormalization errors name the problem", "[features]") {
  InputNormalization norm;
  norm->eval();
  CHECK_THROWS_WITH(norm->forward(batch1()), Catch::Contains("global statistics are empty"));
  norm->train();
  CHECK_THROWS_WITH(norm->forward(batch1(), at::tensor({1.0, 0.1})),
                    Catch::Contains("utterance 1 has 0 valid frames of 4"));
  CHECK_THROWS_WITH(norm->forward(batch1(), at::tensor({1.0, 0.25})),
                    Catch::Contains("needs at least 2"));
  InputNormalizationConfig config;
  config.norm_type = "speaker";
  CHECK_THROWS_WITH(InputNormalization(config), Catch::Contains("norm_type 'speaker'"));
}
