// tests/models/test_activation_checkpointing.cpp
// Activation checkpointing (nn/checkpoint.h) changes memory, not math: with dropout on, a
// checkpointed encoder gives the same outputs and the same gradients (input and every parameter)
// as the plain one, because the recomputation replays the first run's random draws.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "hparams/hparams.h"
#include "models/conformer_encoder.h"
#include "models/conmamba_encoder.h"
#include "nn/checkpoint.h"
#include "toolkit/registration.h"
#include "train/train_config.h"

namespace {

// Output, input gradient and parameter gradients of encoder(x) for upstream gradient g, drawing
// dropout from a generator seeded with `seed`.
template <typename Encoder>
std::vector<at::Tensor> run(Encoder& encoder, const at::Tensor& x0, const at::Tensor& lengths,
                            const at::Tensor& g, bool checkpointing) {
  encoder.zero_grad();
  torch::manual_seed(1234);
  const at::Tensor x = x0.detach().clone().requires_grad_(true);
  at::Tensor out;
  {
    const masr::nn::ActivationCheckpointing on(checkpointing);
    out = encoder.forward(x, lengths);
  }
  // A draw after the forward: the recomputation in backward must not move the generator.
  const at::Tensor after_forward = torch::rand({4});
  torch::manual_seed(99);
  out.backward(g);
  std::vector<at::Tensor> all{out.detach(), x.grad(), after_forward};
  for (const auto& p : encoder.parameters()) all.push_back(p.grad());
  return all;
}

template <typename Encoder>
void check_same(Encoder& encoder, int64_t d_model) {
  torch::manual_seed(7);
  const at::Tensor x = torch::randn({3, 21, d_model});
  const at::Tensor g = torch::randn({3, 21, d_model});
  const at::Tensor lengths = torch::tensor({21, 15, 6}, torch::kLong);
  const auto plain = run(encoder, x, lengths, g, false);
  const auto ckpt = run(encoder, x, lengths, g, true);
  REQUIRE(plain.size() == ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("tensor " << i << " (0 output, 1 input gradient, 2 a draw after forward, then parameters)");
    REQUIRE(ckpt[i].defined());
    CHECK(torch::allclose(ckpt[i], plain[i], 1e-5, 1e-6));
  }
}

}  // namespace

TEST_CASE("checkpointed ConMamba and Conformer encoders equal the plain ones, dropout on",
          "[models]") {
  masr::models::ConmambaConfig mc;
  mc.d_model = 32, mc.d_ffn = 64, mc.num_layers = 2, mc.kernel_size = 7, mc.dropout = 0.3;
  masr::models::ConmambaEncoder conmamba(mc);
  conmamba.train(true);
  check_same(conmamba, 32);

  masr::models::ConformerConfig cc;
  cc.d_model = 32, cc.nhead = 4, cc.d_ffn = 64, cc.num_layers = 2, cc.kernel_size = 7;
  cc.dropout = 0.3;
  masr::models::ConformerEncoder conformer(cc);
  conformer.train(true);
  check_same(conformer, 32);
}

TEST_CASE("checkpointing is a plain call without grad mode or when switched off", "[models]") {
  int calls = 0;
  const auto layer = [&calls](const at::Tensor& h) { ++calls; return h * 2; };
  const at::Tensor x = torch::ones({2}, torch::requires_grad());
  {
    const masr::nn::ActivationCheckpointing on(true);
    CHECK(masr::nn::activation_checkpointing_on());
    torch::NoGradGuard no_grad;
    CHECK_FALSE(masr::nn::checkpointed(layer, x).requires_grad());
  }
  CHECK_FALSE(masr::nn::activation_checkpointing_on());
  const at::Tensor y = masr::nn::checkpointed(layer, x);
  CHECK(y.grad_fn()->name().find("Checkpoint") == std::string::npos);
  {
    const masr::nn::ActivationCheckpointing on(true);
    const at::Tensor z = masr::nn::checkpointed(layer, x);
    z.sum().backward();
  }
  CHECK(calls == 4);  // the checkpointed call ran twice: forward, then again in backward
  CHECK(torch::equal(x.grad(), torch::full({2}, 2.0)));
}

TEST_CASE("activation_checkpointing is an hparams key (off by default)", "[models]") {
  masr::toolkit::register_all();
  masr::hparams::LoadOptions options;
  options.placeholder_value = "unused";
  const std::string file = std::string(MASR_SOURCE_DIR) + "/hparams/S2S/conmamba_tiny.yaml";
  CHECK_FALSE(masr::train::train_config_from(masr::hparams::load_file(file, options))
                  .activation_checkpointing);
  // A copy of the file that sets the key (an override may only replace a key the file has).
  const std::string copy = (std::filesystem::temp_directory_path() / "masr_ckpt_tiny.yaml").string();
  {
    std::ifstream in(file);
    std::ofstream out(copy);
    out << in.rdbuf() << "\nactivation_checkpointing: True\n";
  }
  CHECK(masr::train::train_config_from(masr::hparams::load_file(copy, options))
            .activation_checkpointing);
  std::filesystem::remove(copy);
}
