// lib/nn/conv_module.cpp
// Conformer / ConMamba convolution module.
#include "nn/conv_module.h"

#include "core/env.h"
#include "nn/masks.h"

namespace masr::nn {
namespace F = torch::nn::functional;

ConvolutionModuleImpl::ConvolutionModuleImpl(int64_t d_model, int64_t kernel_size, bool bias,
                                             Activation activation, double dropout, bool causal_)
    : causal(causal_) {
  // Causal: pad k-1 on both sides and chop the right (SpeechBrain's "chomp"); else (k-1)/2.
  padding = causal ? kernel_size - 1 : (kernel_size - 1) / 2;
  layer_norm =
      register_module("layer_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  bottleneck = torch::nn::Sequential(
      torch::nn::Conv1d(torch::nn::Conv1dOptions(d_model, 2 * d_model, 1).bias(bias)),
      torch::nn::GLU(torch::nn::GLUOptions(1)));
  register_module("bottleneck", bottleneck);
  conv = register_module("conv",
                         torch::nn::Conv1d(torch::nn::Conv1dOptions(d_model, d_model, kernel_size)
                                               .padding(padding)
                                               .groups(d_model)
                                               .bias(bias)));
  after_conv = torch::nn::Sequential();
  after_conv->push_back(torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})));
  after_conv->push_back(make_activation(activation));
  after_conv->push_back(torch::nn::Linear(torch::nn::LinearOptions(d_model, d_model).bias(bias)));
  after_conv->push_back(torch::nn::Dropout(dropout));
  register_module("after_conv", after_conv);
}

namespace {

// The depthwise conv over [history | x]: x (B, d, n) -> (B, d, n), history (B, d, h) advanced
// to the last h frames of the window. The conv pads h = kernel-1 frames on both sides, so its
// output h + t ends at window frame h + t, i.e. at frame t of x.
at::Tensor conv_after_history(torch::nn::Conv1dImpl& conv, const at::Tensor& x,
                              at::Tensor& history) {
  const int64_t n = x.size(2), h = history.size(2);
  const at::Tensor window = at::cat({history, x}, 2);  // (B, d, h + n), oldest first
  history = window.narrow(2, n, h);
  return conv.forward(window).narrow(2, h, n);
}

}  // namespace

at::Tensor ConvolutionModuleImpl::forward(const at::Tensor& x, const at::Tensor& lengths,
                                          at::Tensor* history) {
  at::Tensor out;
  const auto* pointwise = bottleneck->ptr(0)->as<torch::nn::Conv1d>();
  // MASR_CONV_MODULE_MATMUL=0: the Conv1d path on CUDA too (for A/B timings).
  static const bool cuda_matmul = !env_is("MASR_CONV_MODULE_MATMUL", "0");
  if (pointwise != nullptr && ((x.is_cuda() && cuda_matmul) || pointwise_as_matmul)) {
    // The pointwise conv as a matrix product on the (B, T, d) rows, GLU over the channels, and
    // one transposing copy for the depthwise conv: the Conv1d on the transposed LayerNorm output
    // copied its input in the forward and again in the backward, and the LayerNorm below copied
    // its transposed input and gradient (four copies of (B, T, d) per layer, bench/results/
    // 2026-11-28-h200-x4-scaling.md).
    out = at::glu(F::linear(layer_norm->forward(x), pointwise->weight.squeeze(-1), pointwise->bias),
                  -1);                                              // (B, T, d)
    out = zero_padding(out, lengths).transpose(1, 2).contiguous();  // (B, d, T)
  } else {
    out = bottleneck->forward(layer_norm->forward(x).transpose(1, 2));  // (B, d, T)
    if (lengths.defined()) out = zero_padding(out.transpose(1, 2), lengths).transpose(1, 2);
  }
  if (history != nullptr) {
    out = conv_after_history(*conv, out, *history);
  } else {
    out = conv->forward(out);
    if (causal && padding > 0) out = out.narrow(2, 0, out.size(2) - padding);
  }
  // LayerNorm reads and writes the channels of a frame together: a contiguous (B, T, d) input
  // saves it a copy in the forward and two in the backward.
  out = after_conv->forward(out.transpose(1, 2).contiguous());
  return zero_padding(out, lengths);
}

}  // namespace masr::nn
