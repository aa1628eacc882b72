// lib/nn/quantized_linear.cpp
// int8 Linear layers on quantized::linear_prepack / quantized::linear_dynamic, per-row inputs.
#include "nn/quantized_linear.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>
#include <torch/nn/modules/linear.h>

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace masr::nn {
namespace {

const char* engine_name(c10::QEngine e) {
  switch (e) {
    case c10::QEngine::FBGEMM: return "fbgemm";
    case c10::QEngine::ONEDNN: return "onednn";
    case c10::QEngine::QNNPACK: return "qnnpack";
    default: return "none";
  }
}

// Looked up once per process (below): the handles stay valid for its lifetime.
c10::OperatorHandle quantized_op(const char* name) {
  try {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  } catch (const c10::Error&) {
    throw_config_error(std::string("int8: this LibTorch has no ") + name +
                       " operator (built without quantization); decode with --precision fp32");
  }
}

const c10::OperatorHandle& prepack_op() {
  static const c10::OperatorHandle op = quantized_op("quantized::linear_prepack");
  return op;
}

const c10::OperatorHandle& linear_dynamic_op() {
  static const c10::OperatorHandle op = quantized_op("quantized::linear_dynamic");
  return op;
}

// Sets LibTorch's global quantized engine for a scope (prepacking packs for the current one).
class QEngineScope {
 public:
  explicit QEngineScope(c10::QEngine engine) : previous_(at::globalContext().qEngine()) {
    if (engine != previous_) at::globalContext().setQEngine(engine);
  }
  ~QEngineScope() {
    if (at::globalContext().qEngine() != previous_) at::globalContext().setQEngine(previous_);
  }
  QEngineScope(const QEngineScope&) = delete;
  QEngineScope& operator=(const QEngineScope&) = delete;

 private:
  c10::QEngine previous_;
};

}  // namespace

Int8Engine choose_int8_engine(const std::vector<c10::QEngine>& supported, bool arm) {
  const std::vector<c10::QEngine> order =
      arm ? std::vector<c10::QEngine>{c10::QEngine::QNNPACK, c10::QEngine::ONEDNN,
                                      c10::QEngine::FBGEMM}
          : std::vector<c10::QEngine>{c10::QEngine::FBGEMM, c10::QEngine::ONEDNN,
                                      c10::QEngine::QNNPACK};
  for (const c10::QEngine e : order) {
    if (std::find(supported.begin(), supported.end(), e) == supported.end()) continue;
    Int8Engine out;
    out.engine = e;
    out.name = engine_name(e);
    out.reduce_range = e != c10::QEngine::QNNPACK;
    return out;
  }
  std::string have;
  for (const c10::QEngine e : supported) {
    if (e != c10::QEngine::NoQEngine) have += std::string(have.empty() ? "" : ", ") + engine_name(e);
  }
  throw_config_error(std::string("int8: this LibTorch has no quantized engine for ") +
                     (arm ? "ARM (int8 needs qnnpack)" : "x86 (int8 needs fbgemm or onednn)") +
                     "; it has " + (have.empty() ? "none" : have) +
                     ". Decode with --precision fp32, or use a LibTorch built with " +
                     (arm ? "USE_PYTORCH_QNNPACK" : "USE_FBGEMM or USE_MKLDNN") +
                     " (the official wheels are)");
}

Int8Engine int8_engine() {
#if defined(__aarch64__) || defined(__arm__) || defined(_M_ARM64)
  constexpr bool kArm = true;
#else
  constexpr bool kArm = false;
#endif
  return choose_int8_engine(at::globalContext().supportedQEngines(), kArm);
}

QuantizedLinear::QuantizedLinear(const at::Tensor& weight, const at::Tensor& bias,
                                 const Int8Engine& engine)
    : engine_(engine) {
  if (weight.dim() != 2 || !weight.device().is_cpu()) {
    throw_config_error("int8: a Linear weight must be a 2-D CPU tensor (quantize on the CPU)");
  }
  out_features_ = weight.size(0);
  in_features_ = weight.size(1);
  at::NoGradGuard no_grad;
  const at::Tensor w = weight.detach().to(at::kFloat).contiguous();
  scales_ = (w.abs().amax({1}) / 127.0)
                .clamp_min(std::numeric_limits<float>::epsilon())
                .to(at::kDouble);
  const at::Tensor q = at::quantize_per_channel(
      w, scales_, at::zeros({out_features_}, at::kLong), 0, at::kQInt8);
  if (bias.defined()) bias_ = bias.detach().to(at::kFloat).contiguous().clone();
  row_sums_ = w.sum(1);
  // The bias is added with the per-row offset after the product, so it is not packed.
  torch::jit::Stack stack{q, c10::IValue()};
  {
    QEngineScope scope(engine_.engine);
    prepack_op().callBoxed(&stack);
  }
  packed_ = std::move(stack.at(0));
}

QuantizedLinear::QuantizedLinear(const torch::nn::LinearImpl& linear, const Int8Engine& engine)
    : QuantizedLinear(linear.weight, linear.bias, engine) {}

at::Tensor QuantizedLinear::forward(const at::Tensor& x) const {
  if (x.dim() == 0 || x.size(-1) != in_features_) {
    throw_input_error("int8 Linear: input has " + std::to_string(x.dim() ? x.size(-1) : 0) +
                      " features, the layer takes " + std::to_string(in_features_));
  }
  if (!x.device().is_cpu()) {
    throw_input_error("int8 Linear: input on " + x.device().str() + "; int8 layers run on the CPU");
  }
  std::vector<int64_t> out_sizes = x.sizes().vec();
  out_sizes.back() = out_features_;
  const at::Tensor rows = x.to(at::kFloat).reshape({-1, in_features_});  // copies a strided x
  const int64_t n = rows.size(0);
  // Row r is mapped onto [pin_lo, pin_hi] = [-(L + 1) / L, (L - 1) / L] (L = 127 or 255 levels):
  // with those two rows pinned, the engine's input step is 2 / L and its zero point (L + 1) / 2
  // exactly, so each row's extremes land on grid points rather than on ties between two (which
  // the engine's code paths, picked by the row count, would round differently).
  const double levels = engine_.reduce_range ? 127.0 : 255.0;
  const double pin_lo = -(levels + 1.0) / levels, pin_hi = (levels - 1.0) / levels;
  // amin and amax along dim 1 (at::aminmax with a dim is ~10x slower in 1.13).
  const at::Tensor lo = rows.amin({1}, true), hi = rows.amax({1}, true);  // (n, 1)
  const at::Tensor half = (hi - lo).mul_(0.5).clamp_min_(std::numeric_limits<float>::min());
  const at::Tensor center = half * (-pin_lo) + lo;  // x = center + half * x'
  at::Tensor scaled = at::empty({n + 2, in_features_}, rows.options());
  at::Tensor body = scaled.narrow(0, 0, n);
  at::sub_out(body, rows, center).div_(half);
  scaled.narrow(0, n, 1).fill_(pin_hi);
  scaled.narrow(0, n + 1, 1).fill_(pin_lo);
  torch::jit::Stack stack{scaled, packed_, engine_.reduce_range};
  linear_dynamic_op().callBoxed(&stack);
  const at::Tensor product = stack.at(0).toTensor().narrow(0, 0, n);  // (n, out)
  at::Tensor y = at::mul(center, row_sums_);
  if (bias_.defined()) y.add_(bias_);
  return y.addcmul_(product, half).view(out_sizes);
}

Int8LinearImpl::Int8LinearImpl(const at::Tensor& weight, const at::Tensor& bias, Layout layout_,
                               const Int8Engine& engine)
    : int8(layout_ == Layout::kChannels && weight.dim() == 3 && weight.size(2) == 1
               ? weight.squeeze(2)
               : weight,
           bias, engine),
      layout(layout_) {
  if (layout == Layout::kChannels && weight.dim() != 3) {
    throw_config_error("int8: a pointwise Conv1d weight must be (out, in, 1)");
  }
  register_parameter("weight", weight, weight.requires_grad());
  if (bias.defined()) register_parameter("bias", bias, bias.requires_grad());
}

at::Tensor Int8LinearImpl::forward(const at::Tensor& x) {
  if (is_training()) {
    throw_input_error("int8 Linear: decoding only (the model is in training mode); train the "
                      "float model and quantize it for decoding");
  }
  if (layout == Layout::kFeaturesLast) return int8.forward(x);
  if (x.dim() != 3) throw_input_error("int8 pointwise conv: expected (batch, channels, time)");
  return int8.forward(x.transpose(1, 2)).transpose(1, 2);
}

void replace_in_sequential(torch::nn::SequentialImpl& seq, size_t index, const Int8Linear& layer) {
  if (index >= seq.size()) {
    throw_config_error("int8: no element " + std::to_string(index) + " in a Sequential of " +
                       std::to_string(seq.size()));
  }
  const std::shared_ptr<torch::nn::Module> old = seq.ptr(index);
  for (const auto& child : seq.named_children()) {  // the registered name of that element
    if (child.value() != old) continue;
    layer.ptr()->train(seq.is_training());  // a new module starts in training mode
    seq.replace_module(child.key(), layer.ptr());
    *(seq.begin() + static_cast<std::ptrdiff_t>(index)) = torch::nn::AnyModule(layer);
    return;
  }
  throw_config_error("int8: element " + std::to_string(index) +
                     " of a Sequential is not one of its registered modules");
}

int64_t quantize_sequential_linears(torch::nn::SequentialImpl& seq, const Int8Engine& engine,
                                    int64_t* weights) {
  int64_t count = 0;
  for (size_t i = 0; i < seq.size(); ++i) {
    const auto linear = std::dynamic_pointer_cast<torch::nn::LinearImpl>(seq.ptr(i));
    if (!linear) continue;
    replace_in_sequential(
        seq, i,
        Int8Linear(linear->weight, linear->bias, Int8LinearImpl::Layout::kFeaturesLast, engine));
    ++count;
    if (weights != nullptr) *weights += linear->weight.numel();
  }
  return count;
}

}  // namespace masr::nn
