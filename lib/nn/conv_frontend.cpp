// lib/nn/conv_frontend.cpp
// SpeechBrain's 2-D convolutional front end.
#include "nn/conv_frontend.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "runtime/device_copy.h"

namespace masr::nn {
namespace F = torch::nn::functional;
namespace {

// SpeechBrain's "same" padding (nnet/CNN.py get_padding_elem): k/2 on both sides when strided,
// else the symmetric floor of the size lost by the convolution.
int64_t same_padding(int64_t kernel, int64_t stride, int64_t dilation) {
  if (stride > 1) return kernel / 2;
  return dilation * (kernel - 1) / 2;
}

int64_t conv_out(int64_t size, int64_t kernel, int64_t stride, int64_t dilation) {
  const int64_t pad = same_padding(kernel, stride, dilation);
  return (size + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

at::Tensor conv_lengths(const at::Tensor& lengths, int64_t kernel, int64_t stride,
                        int64_t dilation) {
  const int64_t pad = same_padding(kernel, stride, dilation);
  return torch::div(lengths + 2 * pad - dilation * (kernel - 1) - 1, stride, "floor") + 1;
}

}  // namespace

FrontEndConvImpl::FrontEndConvImpl(int64_t in, int64_t out, int64_t kernel_, int64_t stride_,
                                   int64_t dilation_, bool bias)
    : kernel(kernel_), stride(stride_), dilation(dilation_) {
  conv = register_module(
      "conv",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(in, out, kernel).stride(stride).dilation(dilation).bias(bias)));
}

at::Tensor FrontEndConvImpl::forward(const at::Tensor& x) {
  const int64_t pad = same_padding(kernel, stride, dilation);
  at::Tensor y = x.permute({0, 3, 2, 1});  // (B, C, F, T), SpeechBrain's transpose(1, -1)
  y = F::pad(y, F::PadFuncOptions({pad, pad, pad, pad}).mode(torch::kReflect));
  return conv->forward(y).permute({0, 3, 2, 1});
}

at::Tensor FrontEndConvImpl::forward(const at::Tensor& x, const at::Tensor& lengths) {
  const int64_t pad = same_padding(kernel, stride, dilation);
  at::Tensor y = x.permute({0, 3, 2, 1});  // (B, C, F, T)
  y = F::pad(y, F::PadFuncOptions({pad, pad, pad, pad}).mode(torch::kReflect));
  if (pad == 0) return conv->forward(y).permute({0, 3, 2, 1});
  // The batch was reflected at its end; each shorter utterance is reflected at its own instead:
  // its frames L .. L+pad-1 become its frames L-2, L-3, ... (time index + pad in y), written in
  // place over the padding frames that follow it (the longest utterance is already right).
  // The indices are computed where the lengths live: on the GPU in training, so that nothing
  // goes through the host and a step's kernels depend on the batch's shapes alone (CUDA graphs
  // replay them, train/cuda_graph_step.h); host lengths (decoding) are queued to y's device.
  const int64_t batch = x.size(0), time = x.size(1);
  const at::Tensor len = lengths.to(at::kLong).clamp(1, time).view({batch, 1});
  const at::Tensor j = torch::arange(pad, len.options()).view({1, pad});
  const at::Tensor from = pad + (len - 2 - j).clamp_min(0);
  const at::Tensor to = pad + len + j;
  auto index = [&](const at::Tensor& v) {
    return runtime::to_device_async(v.view({batch, 1, 1, pad}), y.device())
        .expand({batch, y.size(1), y.size(2), pad});
  };
  const at::Tensor reflected = y.gather(3, index(from));
  // In place when no gradient flows (decoding); in training, gather's backward needs y as it was
  // (an in-place write here made backward() fail: "modified by an inplace operation").
  y = y.requires_grad() ? y.scatter(3, index(to), reflected) : y.scatter_(3, index(to), reflected);
  return conv->forward(y).permute({0, 3, 2, 1});
}

ConvolutionFrontEndImpl::ConvolutionFrontEndImpl(const ConvFrontEndConfig& config)
    : config_(config) {
  const size_t blocks = config.out_channels.size();
  if (blocks == 0 || config.kernel_sizes.size() != blocks || config.strides.size() != blocks ||
      config.dilations.size() != blocks || config.residuals.size() != blocks) {
    throw_config_error(
        "ConvolutionFrontEnd: out_channels, kernel_sizes, strides, dilations and residuals "
        "need one entry per block (num_blocks " +
        std::to_string(blocks) + ")");
  }
  int64_t channels = 1, freq = config.in_features;
  for (size_t b = 0; b < blocks; ++b) {
    auto block =
        register_module("convblock_" + std::to_string(b), std::make_shared<torch::nn::Module>());
    auto convs = block->register_module("convs", std::make_shared<torch::nn::Module>());
    const int64_t block_in = channels;
    for (int64_t i = 0; i < config.num_layers_per_block; ++i) {
      const bool last = i == config.num_layers_per_block - 1;
      const int64_t stride = last ? config.strides[b] : 1;
      Layer layer;
      layer.conv = convs->register_module(
          "conv_" + std::to_string(i),
          FrontEndConv(channels, config.out_channels[b], config.kernel_sizes[b], stride,
                       config.dilations[b], config.conv_bias));
      channels = config.out_channels[b];
      freq = conv_out(freq, config.kernel_sizes[b], stride, config.dilations[b]);
      // SpeechBrain's LayerNorm(input_shape[2:]) normalizes (F, C) jointly; key `norm_i.norm.*`.
      auto norm_holder = convs->register_module("norm_" + std::to_string(i),
                                                std::make_shared<torch::nn::Module>());
      layer.norm = norm_holder->register_module(
          "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({freq, channels}).eps(1e-5)));
      layers_.push_back(layer);
    }
    Residual residual;
    if (config.residuals[b]) {
      auto reduce = block->register_module("reduce_conv", std::make_shared<torch::nn::Module>());
      residual.conv = reduce->register_module(
          "conv", FrontEndConv(block_in, channels, 1, config.strides[b], 1, true));
      auto norm_holder = reduce->register_module("norm", std::make_shared<torch::nn::Module>());
      residual.norm = norm_holder->register_module(
          "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({freq, channels}).eps(1e-5)));
    }
    residuals_.push_back(residual);
  }
  out_freq_ = freq;
  dropout_ = register_module("dropout", torch::nn::Dropout(config.dropout));
}

int64_t ConvolutionFrontEndImpl::time_stride() const {
  int64_t stride = 1;
  for (const int64_t s : config_.strides) stride *= s;
  return stride;
}

// Each layer adds its padding (before) or the rest of its dilated kernel (after), in input
// frames: times the strides of the layers before it.
int64_t ConvolutionFrontEndImpl::context_before() const {
  int64_t reach = 0, stride = 1;
  for (const auto& layer : layers_) {
    const auto& c = *layer.conv;
    reach += stride * same_padding(c.kernel, c.stride, c.dilation);
    stride *= c.stride;
  }
  return reach;
}

int64_t ConvolutionFrontEndImpl::context_after() const {
  int64_t reach = 0, stride = 1;
  for (const auto& layer : layers_) {
    const auto& c = *layer.conv;
    reach += stride * (c.dilation * (c.kernel - 1) - same_padding(c.kernel, c.stride, c.dilation));
    stride *= c.stride;
  }
  return reach;
}

at::Tensor ConvolutionFrontEndImpl::forward(const at::Tensor& features) {
  return run(features, nullptr);
}

at::Tensor ConvolutionFrontEndImpl::forward(const at::Tensor& features, const at::Tensor& lengths) {
  return run(features, &lengths);
}

at::Tensor ConvolutionFrontEndImpl::run(const at::Tensor& features, const at::Tensor* lengths) {
  if (features.dim() != 3 || features.size(2) != config_.in_features) {
    throw_input_error("ConvolutionFrontEnd: expected features (batch, time, " +
                      std::to_string(config_.in_features) + "), got " +
                      std::to_string(features.dim()) + "-D input with last size " +
                      std::to_string(features.size(-1)));
  }
  at::Tensor x = features.unsqueeze(-1);  // (B, T, F, 1)
  // Lengths stay where they are (the GPU in training: conv_lengths is tensor arithmetic).
  at::Tensor valid = lengths != nullptr ? lengths->to(at::kLong) : at::Tensor();
  auto layer = layers_.begin();
  for (Residual& residual : residuals_) {
    const at::Tensor block_in = x;
    for (int64_t i = 0; i < config_.num_layers_per_block; ++i, ++layer) {
      if (valid.defined()) {
        x = layer->conv->forward(x, valid);
        valid =
            conv_lengths(valid, layer->conv->kernel, layer->conv->stride, layer->conv->dilation);
      } else {
        x = layer->conv->forward(x);
      }
      x = layer->norm->forward(x);
      x = torch::leaky_relu(x, 0.01);
      x = dropout_->forward(x);
    }
    // A 1x1 convolution reads no neighbour, so padding never reaches it.
    if (residual.conv) {
      x = dropout_->forward(x + residual.norm->forward(residual.conv->forward(block_in)));
    }
  }
  return x;
}

at::Tensor ConvolutionFrontEndImpl::output_lengths(const at::Tensor& lengths) const {
  at::Tensor out = lengths.to(torch::kLong);
  for (size_t b = 0; b < config_.out_channels.size(); ++b) {
    for (int64_t i = 0; i < config_.num_layers_per_block; ++i) {
      const int64_t stride = i == config_.num_layers_per_block - 1 ? config_.strides[b] : 1;
      out = conv_lengths(out, config_.kernel_sizes[b], stride, config_.dilations[b]);
    }
  }
  return out;
}

}  // namespace masr::nn
