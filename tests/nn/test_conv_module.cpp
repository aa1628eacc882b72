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
