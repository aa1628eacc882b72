// tests/nn/test_conv_module.cpp
// The convolution module: frames past an utterance's length, and zero frames that lengthen the
// batch, never change the real frames' outputs.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "nn/conv_module.h"

using namespace masr::nn;

namespace {

double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kCPU, at::kDouble), y = b.to(at::kCPU, at::kDouble);
  return (x - y).abs().max().item<double>() / std::max(1e-12, y.abs().max().item<double>());
}

}  // namespace

TEST_CASE("convolution module: frames past an utterance's length change nothing", "[nn]") {
  torch::manual_seed(3);
  for (bool causal : {false, true}) {
    ConvolutionModule m(16, 7, true, Activation::kSwish, 0.0, causal);
    const at::Tensor lengths = torch::tensor({20, 9}, torch::kLong);
    const at::Tensor x = torch::randn({2, 20, 16});
    at::Tensor noisy = x.clone();
    noisy.index_put_({1, torch::indexing::Slice(9)}, torch::randn({11, 16}) * 100);
    const at::Tensor a = m->forward(x, lengths), b = m->forward(noisy, lengths);
    CHECK(rel_diff(b, a) <= 1e-6);
    // Zero frames appended to the batch (a longer padded length) change nothing either.
    const at::Tensor longer = at::constant_pad_nd(x, {0, 0, 0, 12});
    CHECK(rel_diff(m->forward(longer, lengths).narrow(1, 0, 20), a) <= 1e-6);
  }
}

TEST_CASE("convolution module: the pointwise conv as a matrix product (the CUDA path) gives the "
          "Conv1d path's outputs and gradients",
          "[nn]") {
  for (bool causal : {false, true}) {
    for (bool bias : {true, false}) {
      INFO("causal " << causal << ", bias " << bias);
      torch::manual_seed(5);
      ConvolutionModule m(16, 7, bias, Activation::kSwish, 0.0, causal);
      const at::Tensor lengths = torch::tensor({20, 9, 14}, torch::kLong);
      const at::Tensor x0 = torch::randn({3, 20, 16});
      const at::Tensor up = torch::randn({3, 20, 16});  // the gradient arriving from above
      std::vector<at::Tensor> outs, x_grads;
      std::vector<std::vector<at::Tensor>> param_grads;
      for (bool matmul : {false, true}) {
        m->pointwise_as_matmul = matmul;
        m->zero_grad();
        const at::Tensor x = x0.clone().requires_grad_(true);
        const at::Tensor y = m->forward(x, lengths);
        (y * up).sum().backward();
        outs.push_back(y.detach());
        x_grads.push_back(x.grad().clone());
        param_grads.emplace_back();
        for (const auto& p : m->parameters()) param_grads.back().push_back(p.grad().clone());
      }
      CHECK(rel_diff(outs[1], outs[0]) <= 1e-5);
      CHECK(rel_diff(x_grads[1], x_grads[0]) <= 1e-5);
      REQUIRE(param_grads[0].size() == param_grads[1].size());
      for (size_t i = 0; i < param_grads[0].size(); ++i) {
        INFO("parameter " << i);
        CHECK(rel_diff(param_grads[1][i], param_grads[0][i]) <= 1e-5);
      }
      // The gradient reaches the pointwise conv's (2d, d, 1) weight itself.
      CHECK(m->bottleneck->ptr(0)->as<torch::nn::Conv1d>()->weight.grad().abs().sum().item<double>() > 0);
    }
  }
}
