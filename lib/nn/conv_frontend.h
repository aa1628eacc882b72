// lib/nn/conv_frontend.h
// SpeechBrain's ConvolutionFrontEnd (lobes/models/convolution.py): blocks of Conv2d with "same"
// reflect padding -> LayerNorm over (F, C) -> LeakyReLU(0.01) -> Dropout, downsampling time and
// frequency by each block's stride. A residual block adds a strided 1x1 Conv2d + LayerNorm of its
// input (`reduce_conv`) to its output, then applies dropout again (ConvBlock.forward).
#pragma once

#include <vector>

#include <torch/torch.h>

namespace masr::nn {

struct ConvFrontEndConfig {
  int64_t in_features = 80;  // input_shape[-1] (mel bins)
  int64_t num_layers_per_block = 1;
  std::vector<int64_t> out_channels = {64, 32};  // one per block
  std::vector<int64_t> kernel_sizes = {3, 3};
  std::vector<int64_t> strides = {2, 2};
  std::vector<int64_t> dilations = {1, 1};
  std::vector<bool> residuals = {false, false};
  double dropout = 0.1;
  bool conv_bias = true;
};

// One conv layer: keys `conv.{weight,bias}` (SpeechBrain's Conv2d wrapper).
struct FrontEndConvImpl : torch::nn::Module {
  FrontEndConvImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                   bool bias);
  // x: (B, T, F, C_in) -> (B, T', F', C_out), reflect-padded "same" as SpeechBrain.
  at::Tensor forward(const at::Tensor& x);
  // The same, with each utterance reflected at its own end (lengths: (B) int64 valid frames of x,
  // on the CPU) instead of at the end of the padded batch, so that its valid output frames are
  // those it gets alone. T' is the same as forward's.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& lengths);
  torch::nn::Conv2d conv{nullptr};
  int64_t kernel = 0, stride = 1, dilation = 1;
};
TORCH_MODULE(FrontEndConv);

struct ConvolutionFrontEndImpl : torch::nn::Module {
  explicit ConvolutionFrontEndImpl(const ConvFrontEndConfig& config);
  // features: (B, T, F) -> (B, T'', F'', C) (SpeechBrain's layout; TransformerASR flattens the
  // last two as f * C + c).
  at::Tensor forward(const at::Tensor& features);
  // Batch-invariant: `lengths` (B) int64 valid frames per utterance, on the CPU; every layer
  // reflects each utterance at its own end (FrontEndConv::forward(x, lengths)). An utterance's
  // first output_lengths(lengths) frames equal its output when it is alone in the batch.
  at::Tensor forward(const at::Tensor& features, const at::Tensor& lengths);
  // Frames after the front end for each input length: T' = floor((T + 2p - d(k-1) - 1)/s) + 1.
  at::Tensor output_lengths(const at::Tensor& lengths) const;
  int64_t output_size() const { return out_freq_ * config_.out_channels.back(); }
  // Input frames per output frame: the product of the blocks' strides (4 for Mamba-ASR's two
  // stride-2 blocks), the exact frame shift ratio that output_lengths() rounds.
  int64_t time_stride() const;
  // Output frame j reads input frames [j*time_stride() - context_before(), j*time_stride() +
  // context_after()] (reflected at the edges): what a stream holds back (models/asr_stream.h).
  int64_t context_before() const;
  int64_t context_after() const;

 private:
  struct Layer {
    FrontEndConv conv{nullptr};
    torch::nn::LayerNorm norm{nullptr};
  };
  // Keys convblock_i.reduce_conv.{conv.conv, norm.norm}.*; null for a plain block.
  struct Residual {
    FrontEndConv conv{nullptr};
    torch::nn::LayerNorm norm{nullptr};
  };
  at::Tensor run(const at::Tensor& features, const at::Tensor* lengths);
  ConvFrontEndConfig config_;
  std::vector<Layer> layers_;
  std::vector<Residual> residuals_;  // one per block
  torch::nn::Dropout dropout_{nullptr};
  int64_t out_freq_ = 0;
};
TORCH_MODULE(ConvolutionFrontEnd);

}  // namespace masr::nn
