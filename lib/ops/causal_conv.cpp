// lib/ops/causal_conv.cpp
// Dispatch of the causal depthwise conv1d + SiLU: the fused CUDA kernels (causal_conv_cuda_kernels
// .cu) wrapped in an autograd Function where the build and the inputs allow, LibTorch elsewhere.
#include "ops/causal_conv.h"

#include <torch/torch.h>

#include "core/error.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/causal_conv_cuda_kernels.h"
#include "ops/cuda_launch.h"
#endif

namespace masr::ops {

namespace F = torch::nn::functional;

namespace {

// (B, 1, T) float mask of the frames t < lengths[b].
at::Tensor frame_mask(const at::Tensor& lengths, int64_t time, const at::Tensor& like) {
  const at::Tensor frames = torch::arange(time, like.options().dtype(at::kLong));
  return frames.unsqueeze(0)
      .lt(lengths.to(like.device(), at::kLong).unsqueeze(1))
      .unsqueeze(1)
      .to(like.scalar_type());
}

}  // namespace

at::Tensor causal_conv1d_silu_reference(const at::Tensor& x_in, const at::Tensor& weight,
                                        const at::Tensor& bias, bool reverse,
                                        const at::Tensor& lengths) {
  const int64_t T = x_in.size(2), D = weight.size(0), K = weight.size(2);
  const at::Tensor mask = lengths.defined() ? frame_mask(lengths, T, x_in) : at::Tensor();
  const at::Tensor x = mask.defined() ? x_in * mask : x_in;
  at::Tensor pre;
  if (!reverse) {
    // Padded on both sides as torch.nn.Conv1d(padding = K - 1) does; the first T are causal.
    pre = F::conv1d(x, weight, F::Conv1dFuncOptions().bias(bias).padding(K - 1).groups(D))
              .narrow(2, 0, T);
  } else {
    // out_t = sum_j w[K-1-j] x_{t+j}: a right-padded correlation with the flipped kernel.
    pre = F::conv1d(F::pad(x, F::PadFuncOptions({0, K - 1})), weight.flip(-1),
                    F::Conv1dFuncOptions().bias(bias).groups(D));
  }
  const at::Tensor u = torch::silu(pre);
  return mask.defined() ? u * mask : u;
}

#ifdef MASR_WITH_CUDA
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Kernel arguments; w32, b32 and lengths keep the float32 weights and the lengths alive.
struct Launch {
  cuda::ConvParams p;
  at::Tensor w32, b32, lengths;
};

// Time-contiguous inputs (the time-major Mamba block's projections) get the time-fastest kernels.
bool time_major_input(const at::Tensor& x) { return x.size(2) > 1 && x.stride(2) == 1; }

Launch launch_of(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                 bool reverse, const at::Tensor& lengths) {
  Launch l;
  l.w32 = weight.to(at::kFloat).reshape({weight.size(0), weight.size(2)}).contiguous();
  if (bias.defined()) l.b32 = bias.to(at::kFloat).contiguous();
  if (lengths.defined()) l.lengths = lengths.to(x.device(), at::kLong).contiguous();
  cuda::ConvParams& p = l.p;
  p.time_major = time_major_input(x);
  p.lengths = lengths.defined() ? l.lengths.data_ptr<int64_t>() : nullptr;
  p.batch = x.size(0);
  p.channels = x.size(1);
  p.time = x.size(2);
  p.width = static_cast<int>(weight.size(2));
  p.x_stride_b = x.stride(0);
  p.x_stride_d = x.stride(1);
  p.x_stride_t = x.stride(2);
  p.dtype = cuda_kernel_dtype(x.scalar_type());
  p.x = x.data_ptr();
  p.w = l.w32.data_ptr<float>();
  p.bias = bias.defined() ? l.b32.data_ptr<float>() : nullptr;
  p.reverse = reverse;
  return l;
}

// The (B, D, T) output for x's kernel layout: a view of a (D, B, T) buffer for the time-fastest
// kernels (so the Mamba block reads it as a (D, B * T) matrix), of a (B, T, D) buffer otherwise.
at::Tensor output_like(const at::Tensor& x, at::ScalarType type) {
  const auto options = x.options().dtype(type);
  if (time_major_input(x)) {
    return at::empty({x.size(1), x.size(0), x.size(2)}, options).permute({1, 0, 2});
  }
  return at::empty({x.size(0), x.size(2), x.size(1)}, options).transpose(1, 2);
}

void set_output_strides(const at::Tensor& u, int64_t& stride_b, int64_t& stride_d) {
  stride_b = u.stride(0);
  stride_d = u.stride(1);
}

class CausalConvSiluFunction : public torch::autograd::Function<CausalConvSiluFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const c10::optional<at::Tensor>& bias_opt,
                            const c10::optional<at::Tensor>& lengths_opt, bool reverse) {
    const c10::cuda::CUDAGuard guard(x.device());
    const at::Tensor bias = bias_opt.value_or(at::Tensor());
    const at::Tensor lengths = lengths_opt.value_or(at::Tensor());
    Launch l = launch_of(x, weight, bias, reverse, lengths);
    at::Tensor u = output_like(x, x.scalar_type());
    set_output_strides(u, l.p.u_stride_b, l.p.u_stride_d);
    check_cuda_launch(
        cuda::conv_silu_forward(l.p, u.data_ptr(), at::cuda::getCurrentCUDAStream().stream()),
        "causal_conv1d_silu", "forward");
    ctx->save_for_backward({x, weight, bias, lengths});
    ctx->saved_data["reverse"] = reverse;
    return u;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor &x = s[0], &weight = s[1], &bias = s[2], &lengths = s[3];
    const c10::cuda::CUDAGuard guard(x.device());
    Launch l = launch_of(x, weight, bias, ctx->saved_data["reverse"].toBool(), lengths);
    const at::Tensor gu = grad_outputs[0].to(x.scalar_type());
    const auto f32 = x.options().dtype(at::kFloat);
    const at::Tensor gp = at::empty({x.size(0), x.size(2), x.size(1)}, f32);
    const at::Tensor partials =
        at::zeros({cuda::conv_partial_rows(l.p), x.size(1), weight.size(2) + 1}, f32);
    at::Tensor dx = output_like(x, x.scalar_type());
    set_output_strides(dx, l.p.dx_stride_b, l.p.dx_stride_d);
    cuda::ConvGrads g;
    g.gu = gu.data_ptr();
    g.gu_stride_b = gu.stride(0);
    g.gu_stride_d = gu.stride(1);
    g.gu_stride_t = gu.stride(2);
    g.gp = gp.data_ptr<float>();
    g.partials = partials.data_ptr<float>();
    g.dx = dx.data_ptr();
    if (x.numel() == 0) {
      dx.zero_();
    } else {
      check_cuda_launch(cuda::conv_silu_backward(l.p, g, at::cuda::getCurrentCUDAStream().stream()),
                        "causal_conv1d_silu", "backward");
    }
    const at::Tensor sums = partials.sum(0);  // (D, width + 1), a fixed-order reduction
    const int64_t K = weight.size(2);
    const at::Tensor dw = sums.narrow(1, 0, K).reshape(weight.sizes()).to(weight.scalar_type());
    const at::Tensor db = bias.defined() ? sums.select(1, K).to(bias.scalar_type()) : at::Tensor();
    return {dx, dw, db, at::Tensor(), at::Tensor()};
  }
};

bool fused_supports(const at::Tensor& x, const at::Tensor& weight) {
  return x.is_cuda() && cuda_kernel_dtype_supported(x.scalar_type()) && weight.size(2) >= 1 &&
         weight.size(2) <= cuda::conv_max_width();
}

}  // namespace
#endif

at::Tensor causal_conv1d_silu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                              bool reverse, const at::Tensor& lengths) {
  if (x.dim() != 3 || weight.dim() != 3 || weight.size(0) != x.size(1) || weight.size(1) != 1 ||
      (bias.defined() && (bias.dim() != 1 || bias.size(0) != x.size(1))) ||
      (lengths.defined() && (lengths.dim() != 1 || lengths.size(0) != x.size(0)))) {
    throw Error(ErrorKind::kInput,
                "causal_conv1d_silu: x must be (B, D, T), weight (D, 1, K), "
                "bias (D), lengths (B)");
  }
#ifdef MASR_WITH_CUDA
  if (fused_supports(x, weight)) {
    return CausalConvSiluFunction::apply(x, weight, optional_tensor(bias),
                                         optional_tensor(lengths), reverse);
  }
#endif
  return causal_conv1d_silu_reference(x, weight, bias, reverse, lengths);
}

}  // namespace masr::ops
