// lib/nn/quantized_linear.h
// Dynamic int8 Linear layers for decoding on CPUs, on LibTorch's quantized ops: weights quantized
// once per output channel (symmetric int8, at::quantize_per_channel) and prepacked with
// quantized::linear_prepack; each call quantizes its input and runs quantized::linear_dynamic,
// which returns float32. The ops are reached through the c10 dispatcher (boxed), the same in
// LibTorch 1.13 and 2.x. (at::fbgemm_linear_int8_weight_fp32_activation is not used: it needs
// FBGEMM, which Debian's LibTorch 1.13 is built without, and it is deprecated in 2.x.)
//
// Int8Linear is the module that takes a Linear's place in a Sequential (the feed-forwards, the
// convolution module's layers); nn::MambaImpl's in_proj and out_proj are OptionalInt8Linear.
// models/int8_encoder.h swaps them into a ConMamba encoder.
#pragma once

#include <ATen/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/QEngine.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <vector>

namespace masr::nn {

// The quantized engine that runs the int8 matrix products, and how.
struct Int8Engine {
  c10::QEngine engine = c10::QEngine::NoQEngine;
  std::string name;  // "fbgemm", "onednn" or "qnnpack"
  // Inputs use 7 of their 8 bits: the x86 engines (fbgemm, oneDNN) sum pairs of uint8 x int8
  // products in int16 (vpmaddubsw) on CPUs without VNNI, which saturates with full-range inputs.
  // qnnpack has no such limit.
  bool reduce_range = true;
};

// The engine to use among `supported` (LibTorch's at::globalContext().supportedQEngines()):
// fbgemm, then oneDNN, then qnnpack on x86 (`arm` false); qnnpack first on ARM. Throws a config
// error naming what this LibTorch has and what int8 needs when none of them is there.
Int8Engine choose_int8_engine(const std::vector<c10::QEngine>& supported, bool arm);
// choose_int8_engine for this LibTorch and CPU.
Int8Engine int8_engine();

// One Linear layer (weight (out, in), optional bias (out)) as a prepacked int8 matrix.
//
// Inputs are quantized per row (each vector along the last dimension, i.e. per frame): row r is
// mapped affinely onto the engine's grid, x = c_r + h_r * x' with h_r = (max - min) / 2 and x'
// spanning [-(L + 1) / L, (L - 1) / L] (L = 127 levels with reduce_range, else 255); two pinned
// rows at those ends fix the quantizer's step to 2 / L; one int8 product runs over all rows, and
// the map is undone on the output: y_r = h_r * y'_r + c_r * rowsum(W) + b. So a frame's input
// step comes from that frame alone (other frames of the batch and padding do not change it), and
// each frame gets the resolution of its own range.
//
// Error bound, per output element i of row r: |y - y_float| <= s_i / 2 * sum_j |x_rj - c_r|
// (weight rounding) + h_r / L * (sum_j |W_ij| + in * s_i / 2) (input rounding), where
// s_i = weight_scales()[i].
class QuantizedLinear {
 public:
  // CPU float tensors. Row i of the weight is quantized with step s_i = max_j |weight[i, j]| / 127
  // (floored at float epsilon, as torch.ao's observers do), zero point 0.
  QuantizedLinear(const at::Tensor& weight, const at::Tensor& bias, const Int8Engine& engine);
  QuantizedLinear(const torch::nn::LinearImpl& linear, const Int8Engine& engine);

  // x: float (..., in) on the CPU, any strides -> float (..., out).
  at::Tensor forward(const at::Tensor& x) const;

  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }
  const at::Tensor& weight_scales() const { return scales_; }  // float64 (out)
  const Int8Engine& engine() const { return engine_; }

 private:
  c10::IValue packed_;  // __torch__.torch.classes.quantized.LinearPackedParamsBase, no bias
  at::Tensor scales_, bias_, row_sums_;  // row_sums_: sum_j weight[i, j] (float, out)
  Int8Engine engine_;
  int64_t in_features_ = 0, out_features_ = 0;
};

// A Linear layer that may also hold an int8 copy of itself (decoding on CPUs: int8_encoder.h).
// The float layer is what the owner registers, so parameter names and counts do not change;
// -> reaches it (its weight, bias and float forward).
struct OptionalInt8Linear {
  torch::nn::Linear linear{nullptr};
  std::shared_ptr<const QuantizedLinear> int8;  // null: float only

  // x (..., in) -> (..., out): the int8 copy when there is one, else the float layer.
  at::Tensor forward(const at::Tensor& x) { return int8 ? int8->forward(x) : linear->forward(x); }
  torch::nn::LinearImpl* operator->() { return linear.get(); }
  const torch::nn::LinearImpl* operator->() const { return linear.get(); }
};

// A Linear layer, or a pointwise (kernel 1) Conv1d, as a QuantizedLinear, for a Sequential.
// Its parameters are the float layer's own weight and bias under the same names, so the model's
// parameter names and counts do not change; the packed int8 copy is made once, here. Evaluation
// only: forward in training mode is an input error.
struct Int8LinearImpl : torch::nn::Module {
  enum class Layout {
    kFeaturesLast,  // x (..., in) -> (..., out), as Linear
    kChannels,      // x (B, in, T) -> (B, out, T), as Conv1d(in, out, 1)
  };
  // weight (out, in) or, for kChannels, (out, in, 1).
  Int8LinearImpl(const at::Tensor& weight, const at::Tensor& bias, Layout layout,
                 const Int8Engine& engine);
  at::Tensor forward(const at::Tensor& x);

  QuantizedLinear int8;
  Layout layout;
};
TORCH_MODULE(Int8Linear);

// Puts `layer` in place of element `index` of `seq`: both what its forward runs and its
// registered child of that position. A config error for an index past the end.
void replace_in_sequential(torch::nn::SequentialImpl& seq, size_t index, const Int8Linear& layer);

// Swaps every torch::nn::Linear element of `seq` (not of nested Sequentials) for an Int8Linear.
// Returns how many; adds their weight counts to *weights when given.
int64_t quantize_sequential_linears(torch::nn::SequentialImpl& seq, const Int8Engine& engine,
                                    int64_t* weights = nullptr);

}  // namespace masr::nn
