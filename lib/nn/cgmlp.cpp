// lib/nn/cgmlp.cpp
// The Branchformer's convolutional gating MLP.
#include "nn/cgmlp.h"

#include "core/error.h"

namespace masr::nn {

ConvolutionalSpatialGatingUnitImpl::ConvolutionalSpatialGatingUnitImpl(int64_t input_size,
                                                                       int64_t kernel_size_,
                                                                       double dropout_p,
                                                                       bool use_linear_after_conv)
    : kernel_size(kernel_size_) {
  if (input_size % 2 != 0) {
    throw_config_error("ConvolutionalSpatialGatingUnit: csgu_linear_units " +
                       std::to_string(input_size) + " must be even");
  }
  const int64_t channels = input_size / 2;
  norm = register_module("norm", SbLayerNorm(channels, 1e-5));
  auto holder = register_module("conv", std::make_shared<torch::nn::Module>());
  conv_holder = holder.get();
  conv = holder->register_module(
      "conv",
      torch::nn::Conv1d(
          torch::nn::Conv1dOptions(channels, channels, kernel_size).groups(channels).bias(true)));
  if (use_linear_after_conv) {
    linear = register_module("linear", torch::nn::Linear(channels, channels));
  }
  dropout = register_module("dropout", torch::nn::Dropout(dropout_p));
  // SpeechBrain's initialization: a normal conv weight, a bias of ones (the gate starts open),
  // the linear near the identity gate (weight ~ N(0, 1e-6), bias ones).
  torch::NoGradGuard no_grad;
  torch::nn::init::normal_(conv->weight);
  torch::nn::init::ones_(conv->bias);
  if (linear) {
    torch::nn::init::normal_(linear->weight, 0.0, 1e-6);
    torch::nn::init::ones_(linear->bias);
  }
}

at::Tensor ConvolutionalSpatialGatingUnitImpl::forward(const at::Tensor& x) {
  const auto halves = x.chunk(2, -1);
  at::Tensor gate = norm->forward(halves[1]).transpose(1, 2);  // (B, D/2, T)
  // SpeechBrain's Conv1d "same" padding for stride 1: (k - 1) / 2 frames each side, reflected.
  const int64_t pad = (kernel_size - 1) / 2;
  if (pad >= gate.size(2)) {
    throw_input_error("Branchformer: " + std::to_string(gate.size(2)) +
                      " encoder frames are too few for the gating convolution (kernel " +
                      std::to_string(kernel_size) + " reflects " + std::to_string(pad) +
                      " frames at each end; SpeechBrain needs more than that too)");
  }
  gate = torch::nn::functional::pad(
      gate, torch::nn::functional::PadFuncOptions({pad, pad}).mode(torch::kReflect));
  gate = conv->forward(gate).transpose(1, 2);  // (B, T, D/2)
  if (linear) gate = linear->forward(gate);
  return dropout->forward(gate * halves[0]);
}

ConvolutionBranchImpl::ConvolutionBranchImpl(int64_t input_size, int64_t linear_units,
                                             int64_t kernel_size, Activation activation_,
                                             double dropout, bool use_linear_after_conv)
    : activation(activation_) {
  pre_channel_proj =
      register_module("pre_channel_proj", torch::nn::Linear(input_size, linear_units));
  post_channel_proj =
      register_module("post_channel_proj", torch::nn::Linear(linear_units / 2, input_size));
  csgu = register_module("csgu", ConvolutionalSpatialGatingUnit(linear_units, kernel_size, dropout,
                                                                use_linear_after_conv));
}

at::Tensor ConvolutionBranchImpl::forward(const at::Tensor& x) {
  return post_channel_proj->forward(
      csgu->forward(apply_activation(activation, pre_channel_proj->forward(x))));
}

}  // namespace masr::nn
