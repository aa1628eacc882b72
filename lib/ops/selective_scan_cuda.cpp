// lib/ops/selective_scan_cuda.cpp
// Launches the CUDA selective-scan kernels on at::Tensor arguments and wraps them in a custom
// autograd Function. Compiled to stubs when the LibTorch in use has no CUDA.
#include "ops/selective_scan_cuda.h"

#include "core/error.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/torch.h>

#include <string>

#include "ops/selective_scan_cuda_kernels.h"
#endif

namespace masr::ops {

#ifndef MASR_WITH_CUDA

bool cuda_scan_supports(const at::Tensor&, const at::Tensor&) { return false; }

at::Tensor selective_scan_cuda(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const at::Tensor&, const at::Tensor&, const at::Tensor&,
                               const ScanOptions&) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}
CudaScanInputs prepare_cuda_scan(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const ScanOptions&) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}
CudaScanForward cuda_scan_forward(const CudaScanInputs&, bool) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}
CudaScanGrads cuda_scan_backward(const CudaScanInputs&, const at::Tensor&, const at::Tensor&) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}

#else

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor contiguous_as(const at::Tensor& t, at::ScalarType type) {
  return t.defined() ? t.to(type).contiguous() : t;
}

cuda::ScanParams params_of(const CudaScanInputs& in) {
  cuda::ScanParams p;
  p.batch = in.u.size(0);
  p.channels = in.u.size(1);
  p.time = in.u.size(2);
  p.state = in.A.size(1);
  const at::ScalarType t = in.u.scalar_type();
  p.dtype = t == at::kFloat  ? cuda::ScanDtype::kFloat32
            : t == at::kHalf ? cuda::ScanDtype::kFloat16
                             : cuda::ScanDtype::kBFloat16;
  p.u = in.u.data_ptr();
  p.delta = in.delta.data_ptr();
  p.B = in.B.data_ptr();
  p.C = in.C.data_ptr();
  p.z = in.z.defined() ? in.z.data_ptr() : nullptr;
  p.A = in.A.data_ptr<float>();
  p.D = in.D.defined() ? in.D.data_ptr<float>() : nullptr;
  p.bias = in.bias.defined() ? in.bias.data_ptr<float>() : nullptr;
  p.lengths = in.lengths.data_ptr<int64_t>();
  p.softplus = in.options.delta_softplus;
  p.reverse = in.options.reverse;
  return p;
}

void check_launch(const char* error, const char* pass) {
  if (error != nullptr) {
    throw_input_error(std::string("selective_scan: CUDA ") + pass + " kernel failed: " + error);
  }
}

c10::optional<at::Tensor> optional(const at::Tensor& t) {
  return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt;
}

at::Tensor grad_like(const at::Tensor& grad, const at::Tensor& input) {
  return input.defined() && grad.defined() ? grad.to(input.scalar_type()) : at::Tensor();
}

class SelectiveScanCudaFunction : public torch::autograd::Function<SelectiveScanCudaFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& u, const at::Tensor& delta,
                            const at::Tensor& A, const at::Tensor& B, const at::Tensor& C,
                            const c10::optional<at::Tensor>& D_opt,
                            const c10::optional<at::Tensor>& z_opt,
                            const c10::optional<at::Tensor>& bias_opt,
                            const c10::optional<at::Tensor>& lengths_opt, bool softplus,
                            bool reverse) {
    ScanOptions options;
    options.delta_softplus = softplus;
    options.reverse = reverse;
    const at::Tensor D = D_opt.value_or(at::Tensor()), z = z_opt.value_or(at::Tensor());
    const at::Tensor bias = bias_opt.value_or(at::Tensor());
    const at::Tensor lengths = lengths_opt.value_or(at::Tensor());
    const CudaScanInputs in = prepare_cuda_scan(u, delta, A, B, C, D, z, bias, lengths, options);
    // Only the inputs and the states every 16 steps are kept (B*D*N*L/16 floats).
    const CudaScanForward f = cuda_scan_forward(in, /*keep_checkpoints=*/true);
    ctx->save_for_backward({u, delta, A, B, C, D, z, bias, lengths});
    ctx->saved_data["checkpoints"] = f.checkpoints;
    ctx->saved_data["softplus"] = softplus;
    ctx->saved_data["reverse"] = reverse;
    return f.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    ScanOptions options;
    options.delta_softplus = ctx->saved_data["softplus"].toBool();
    options.reverse = ctx->saved_data["reverse"].toBool();
    const CudaScanInputs in =
        prepare_cuda_scan(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], options);
    const at::Tensor checkpoints = ctx->saved_data["checkpoints"].toTensor();
    const CudaScanGrads g = cuda_scan_backward(in, checkpoints, grad_outputs[0]);
    return {grad_like(g.du, s[0]), grad_like(g.ddelta, s[1]),
            grad_like(g.dA, s[2]), grad_like(g.dB, s[3]),
            grad_like(g.dC, s[4]), grad_like(g.dD, s[5]),
            grad_like(g.dz, s[6]), grad_like(g.dbias, s[7]),
            at::Tensor(),          at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

bool cuda_scan_supports(const at::Tensor& u, const at::Tensor& A) {
  const at::ScalarType t = u.scalar_type();
  return u.is_cuda() && (t == at::kFloat || t == at::kHalf || t == at::kBFloat16) &&
         A.size(1) <= cuda::scan_max_state();
}

CudaScanInputs prepare_cuda_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                                 const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                                 const at::Tensor& z, const at::Tensor& delta_bias,
                                 const at::Tensor& lengths, const ScanOptions& options) {
  const at::ScalarType type = u.scalar_type();
  CudaScanInputs in;
  in.u = u.contiguous();
  in.delta = contiguous_as(delta, type);
  in.B = contiguous_as(B, type);
  in.C = contiguous_as(C, type);
  in.z = contiguous_as(z, type);
  in.A = contiguous_as(A, at::kFloat);
  in.D = contiguous_as(D, at::kFloat);
  in.bias = contiguous_as(delta_bias, at::kFloat);
  in.lengths = lengths.defined() ? lengths.to(u.device(), at::kLong).contiguous()
                                 : at::full({u.size(0)}, u.size(2), u.options().dtype(at::kLong));
  in.options = options;
  return in;
}

CudaScanForward cuda_scan_forward(const CudaScanInputs& in, bool keep_checkpoints) {
  const c10::cuda::CUDAGuard guard(in.u.device());
  const cuda::ScanParams p = params_of(in);
  CudaScanForward f;
  f.out = at::empty_like(in.u);
  cuda::ScanForwardIO io;
  io.out = f.out.data_ptr();
  if (keep_checkpoints) {
    f.checkpoints = at::empty({cuda::scan_checkpoint_floats(p)}, in.u.options().dtype(at::kFloat));
    io.checkpoints = f.checkpoints.data_ptr<float>();
  }
  check_launch(cuda::scan_forward(p, io, at::cuda::getCurrentCUDAStream().stream()), "forward");
  return f;
}

CudaScanGrads cuda_scan_backward(const CudaScanInputs& in, const at::Tensor& checkpoints,
                                 const at::Tensor& dout) {
  const c10::cuda::CUDAGuard guard(in.u.device());
  const cuda::ScanParams p = params_of(in);
  const at::Tensor dy = dout.to(in.u.scalar_type()).contiguous();
  const auto f32 = in.u.options().dtype(at::kFloat);
  CudaScanGrads g;
  g.du = at::empty_like(in.u);
  g.ddelta = at::empty_like(in.u);
  g.dz = in.z.defined() ? at::empty_like(in.u) : at::Tensor();
  g.dB = at::empty_like(in.B);
  g.dC = at::empty_like(in.C);
  at::Tensor dA_rows = at::empty({p.batch, p.channels, p.state}, f32);
  at::Tensor dD_rows = at::empty({p.batch, p.channels}, f32);
  at::Tensor dbias_rows = at::empty({p.batch, p.channels}, f32);
  at::Tensor workspace = at::empty({cuda::scan_workspace_floats(p)}, f32);
  cuda::ScanBackwardIO io;
  io.dout = dy.data_ptr();
  io.checkpoints = checkpoints.data_ptr<float>();
  io.du = g.du.data_ptr();
  io.ddelta = g.ddelta.data_ptr();
  io.dz = g.dz.defined() ? g.dz.data_ptr() : nullptr;
  io.dB = g.dB.data_ptr();
  io.dC = g.dC.data_ptr();
  io.dA_rows = dA_rows.data_ptr<float>();
  io.dD_rows = dD_rows.data_ptr<float>();
  io.dbias_rows = dbias_rows.data_ptr<float>();
  io.workspace = workspace.data_ptr<float>();
  check_launch(cuda::scan_backward(p, io, at::cuda::getCurrentCUDAStream().stream()), "backward");
  g.dA = dA_rows.sum(0);
  g.dD = in.D.defined() ? dD_rows.sum(0) : at::Tensor();
  g.dbias = in.bias.defined() ? dbias_rows.sum(0) : at::Tensor();
  return g;
}

at::Tensor selective_scan_cuda(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                               const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                               const at::Tensor& z, const at::Tensor& delta_bias,
                               const at::Tensor& lengths, const ScanOptions& options) {
  return SelectiveScanCudaFunction::apply(u, delta, A, B, C, optional(D), optional(z),
                                          optional(delta_bias), optional(lengths),
                                          options.delta_softplus, options.reverse);
}

#endif

}  // namespace masr::ops
