// tests/models/test_reference_layers.cpp
// The BiMamba block, RelPosMHAXL and the CNN front end against independent Python references
// (tests/models/reference_layers.py, run with Debian's /usr/bin/python3 and its PyTorch):
// weights and inputs go out with torch::pickle_save, the references come back through torch.save.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "nn/attention.h"
#include "nn/conv_frontend.h"
#include "nn/mamba.h"
#include "core/remove_tree.h"

namespace {

namespace fs = std::filesystem;

void add_params(c10::Dict<std::string, at::Tensor>& dict, const std::string& prefix,
                const torch::nn::Module& module) {
  for (const auto& item : module.named_parameters()) {
    dict.insert(prefix + item.key(), item.value().detach().clone());
  }
}

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item<double>();
}

}  // namespace

TEST_CASE("BiMamba, RelPosMHAXL and the CNN front end match Python references", "[models]") {
  torch::manual_seed(21);
  torch::NoGradGuard no_grad;
  masr::nn::MambaConfig mc;
  mc.d_state = 4;
  masr::nn::Mamba mamba(8, mc, true);
  mamba->A_b_log.normal_(0.0, 0.5);  // make the two directions differ
  mamba->D_b.normal_();
  masr::nn::RelPosMHAXL mha(8, 2, 0.0, false);
  mha->eval();
  masr::nn::ConvFrontEndConfig cc;
  cc.in_features = 16;
  cc.out_channels = {4, 2};
  cc.dropout = 0.0;
  masr::nn::ConvolutionFrontEnd cnn(cc);
  cnn->eval();
  for (auto& p : cnn->parameters()) p.normal_(0.0, 0.5);  // LayerNorm affine away from (1, 0)

  const at::Tensor mamba_x = torch::randn({3, 9, 8});
  const at::Tensor lengths = torch::tensor({9, 5, 2}, torch::kLong);
  const at::Tensor mha_x = torch::randn({1, 6, 8});
  const at::Tensor cnn_x = torch::randn({1, 11, 16});

  c10::Dict<std::string, at::Tensor> dict;
  add_params(dict, "mamba.", *mamba);
  add_params(dict, "mha.", *mha);
  add_params(dict, "cnn.", *cnn);
  dict.insert("mamba_x", mamba_x);
  dict.insert("mamba_lengths", lengths.to(torch::kFloat));
  dict.insert("mha_x", mha_x);
  dict.insert("mha_nhead", torch::tensor({2.0f}));
  dict.insert("cnn_x", cnn_x);

  const fs::path dir =
      fs::temp_directory_path() / ("masr_ref_layers_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
    std::ofstream out(dir / "in.pt", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string command = "/usr/bin/python3 " + std::string(MASR_SOURCE_DIR) +
                              "/tests/models/reference_layers.py " + (dir / "in.pt").string() +
                              " " + (dir / "out.pt").string();
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(dir / "out.pt", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  const auto ref = torch::pickle_load(bytes).toGenericDict();
  masr::remove_tree(dir);

  const at::Tensor got = mamba->forward(mamba_x, lengths);
  for (int64_t b = 0; b < 3; ++b) {
    INFO("mamba utterance " << b);
    const int64_t n = lengths[b].item<int64_t>();
    CHECK(rel_diff(got[b].slice(0, 0, n), ref.at("mamba_" + std::to_string(b)).toTensor()) <= 1e-4);
  }
  const at::Tensor pos = masr::nn::relative_positional_encoding(6, 8, torch::kFloat);
  CHECK(rel_diff(mha->forward(mha_x, pos)[0], ref.at("mha").toTensor()) <= 1e-4);
  CHECK(rel_diff(cnn->forward(cnn_x)[0], ref.at("cnn").toTensor()) <= 1e-4);
}
