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

#include "ops/cuda_launch.h"
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
std::pair<at::Tensor, at::Tensor> selective_scan_cuda_bidirectional(const ScanDirection&,
                                                                    const ScanDirection&,
                                                                    const at::Tensor&,
                                                                    const at::Tensor&, bool,
                                                                    double) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}
std::pair<CudaScanForward, CudaScanForward> cuda_scan_forward_pair(const CudaScanInputs&,
                                                               const CudaScanInputs&, bool) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}
std::pair<CudaScanGrads, CudaScanGrads> cuda_scan_backward_pair(const CudaScanInputs&,
                                                            const at::Tensor&, const at::Tensor&,
                                                            const CudaScanInputs&,
                                                            const at::Tensor&, const at::Tensor&) {
  throw_config_error("selective_scan: this build has no CUDA kernels (LibTorch without CUDA)");
}

#else

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor contiguous_as(const at::Tensor& t, at::ScalarType type) {
  return t.defined() ? t.to(type).contiguous() : t;
}

// A (batch, rows, time) input as the kernels read it: in `type`, time contiguous, the batch and
// row strides as they are (the Mamba block's time-major projections are read in place).
at::Tensor time_contiguous(const at::Tensor& t, at::ScalarType type) {
  if (!t.defined()) return t;
  const at::Tensor typed = t.to(type);
  return typed.size(2) > 1 && typed.stride(2) != 1 ? typed.contiguous() : typed;
}

cuda::RowStrides strides_of(const at::Tensor& t) {
  cuda::RowStrides s;
  if (t.defined()) s.batch = t.stride(0), s.row = t.stride(1);
  return s;
}

// A tensor as the kernels take it: its data (null when undefined) and its RowStrides.
template <typename Data>
void bind(const at::Tensor& t, Data*& data, cuda::RowStrides& strides) {
  data = t.defined() ? t.data_ptr() : nullptr;
  strides = strides_of(t);
}

cuda::ScanParams params_of(const CudaScanInputs& in) {
  cuda::ScanParams p;
  p.batch = in.u.size(0);
  p.channels = in.u.size(1);
  p.time = in.u.size(2);
  p.state = in.A.size(1);
  p.dtype = cuda_kernel_dtype(in.u.scalar_type());
  bind(in.u, p.u, p.u_s);
  bind(in.delta, p.delta, p.delta_s);
  bind(in.B, p.B, p.B_s);
  bind(in.C, p.C, p.C_s);
  bind(in.z, p.z, p.z_s);
  p.A = in.A.data_ptr<float>();
  p.D = in.D.defined() ? in.D.data_ptr<float>() : nullptr;
  p.bias = in.bias.defined() ? in.bias.data_ptr<float>() : nullptr;
  p.lengths = in.lengths.data_ptr<int64_t>();
  p.out_scale = static_cast<float>(in.options.output_scale);
  p.softplus = in.options.delta_softplus;
  p.reverse = in.options.reverse;
  return p;
}

void check_launch(const char* error, const char* pass) {
  check_cuda_launch(error, "selective_scan", pass);
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
                            bool reverse, double scale) {
    ScanOptions options;
    options.delta_softplus = softplus;
    options.reverse = reverse;
    options.output_scale = scale;
    const at::Tensor D = D_opt.value_or(at::Tensor()), z = z_opt.value_or(at::Tensor());
    const at::Tensor bias = bias_opt.value_or(at::Tensor());
    const at::Tensor lengths = lengths_opt.value_or(at::Tensor());
    const CudaScanInputs in = prepare_cuda_scan(u, delta, A, B, C, D, z, bias, lengths, options);
    // Only the inputs and the states every 32 steps are kept (B*D*N*L/32 floats).
    const CudaScanForward f = cuda_scan_forward(in, /*keep_checkpoints=*/true);
    ctx->save_for_backward({u, delta, A, B, C, D, z, bias, lengths});
    ctx->saved_data["checkpoints"] = f.checkpoints;
    ctx->saved_data["softplus"] = softplus;
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["scale"] = scale;
    return f.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    ScanOptions options;
    options.delta_softplus = ctx->saved_data["softplus"].toBool();
    options.reverse = ctx->saved_data["reverse"].toBool();
    options.output_scale = ctx->saved_data["scale"].toDouble();
    const CudaScanInputs in =
        prepare_cuda_scan(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], options);
    const at::Tensor checkpoints = ctx->saved_data["checkpoints"].toTensor();
    const CudaScanGrads g = cuda_scan_backward(in, checkpoints, grad_outputs[0]);
    return {grad_like(g.du, s[0]), grad_like(g.ddelta, s[1]),
            grad_like(g.dA, s[2]), grad_like(g.dB, s[3]),
            grad_like(g.dC, s[4]), grad_like(g.dD, s[5]),
            grad_like(g.dz, s[6]), grad_like(g.dbias, s[7]),
            at::Tensor(),          at::Tensor(),
            at::Tensor(),          at::Tensor()};
  }
};

// BiMamba's directions: inputs 0-6 the forward direction's u, delta, A, B, C, D, delta_bias,
// 7-13 the reverse one's, then the shared z and lengths, then each direction's delta weight.
// With a delta weight, that direction's delta input is delta_low (ScanDirection): the product is
// formed for the kernels and formed again in backward, so only the factors are kept.
class BidirectionalScanCudaFunction
    : public torch::autograd::Function<BidirectionalScanCudaFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& uf, const at::Tensor& df,
                               const at::Tensor& Af, const at::Tensor& Bf, const at::Tensor& Cf,
                               const c10::optional<at::Tensor>& Df,
                               const c10::optional<at::Tensor>& biasf, const at::Tensor& ur,
                               const at::Tensor& dr, const at::Tensor& Ar, const at::Tensor& Br,
                               const at::Tensor& Cr, const c10::optional<at::Tensor>& Dr,
                               const c10::optional<at::Tensor>& biasr,
                               const c10::optional<at::Tensor>& z_opt,
                               const c10::optional<at::Tensor>& lengths_opt,
                               const c10::optional<at::Tensor>& weight_f,
                               const c10::optional<at::Tensor>& weight_r, bool softplus,
                               double scale) {
    const at::Tensor none;
    const at::Tensor z = z_opt.value_or(none), lengths = lengths_opt.value_or(none);
    const variable_list saved = {uf, df, Af, Bf, Cf, Df.value_or(none), biasf.value_or(none),
                                 ur, dr, Ar, Br, Cr, Dr.value_or(none), biasr.value_or(none),
                                 z, lengths, weight_f.value_or(none), weight_r.value_or(none)};
    const auto [first, second] = inputs_of(saved, softplus, scale);
    const auto [f, r] = cuda_scan_forward_pair(first, second, /*keep_checkpoints=*/true);
    ctx->save_for_backward(saved);
    ctx->saved_data["checkpoints_f"] = f.checkpoints;
    ctx->saved_data["checkpoints_r"] = r.checkpoints;
    ctx->saved_data["softplus"] = softplus;
    ctx->saved_data["scale"] = scale;
    return {f.out, r.out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    const auto [first, second] = inputs_of(s, ctx->saved_data["softplus"].toBool(),
                                           ctx->saved_data["scale"].toDouble());
    const auto [gf, gr] = cuda_scan_backward_pair(
        first, ctx->saved_data["checkpoints_f"].toTensor(), grad_outputs[0], second,
        ctx->saved_data["checkpoints_r"].toTensor(), grad_outputs[1]);
    const at::Tensor dz = gf.dz.defined() ? gf.dz + gr.dz : at::Tensor();
    const auto [dlow_f, dweight_f] = delta_grads(gf.ddelta, s[1], s[16]);
    const auto [dlow_r, dweight_r] = delta_grads(gr.ddelta, s[8], s[17]);
    return {grad_like(gf.du, s[0]),     dlow_f,                     grad_like(gf.dA, s[2]),
            grad_like(gf.dB, s[3]),     grad_like(gf.dC, s[4]),     grad_like(gf.dD, s[5]),
            grad_like(gf.dbias, s[6]),  grad_like(gr.du, s[7]),     dlow_r,
            grad_like(gr.dA, s[9]),     grad_like(gr.dB, s[10]),    grad_like(gr.dC, s[11]),
            grad_like(gr.dD, s[12]),    grad_like(gr.dbias, s[13]), grad_like(dz, s[14]),
            at::Tensor(),               dweight_f,                  dweight_r,
            at::Tensor(),               at::Tensor()};
  }

 private:
  static std::pair<CudaScanInputs, CudaScanInputs> inputs_of(const variable_list& s,
                                                            bool softplus, double scale) {
    ScanOptions forward, reverse;
    forward.delta_softplus = reverse.delta_softplus = softplus;
    forward.output_scale = reverse.output_scale = scale;
    reverse.reverse = true;
    // A low-rank delta is formed here, in both passes (ScanDirection::delta_low).
    const at::Tensor df =
        s[16].defined() ? low_rank_delta(s[1], s[16], s[0].size(0), s[0].size(2)) : s[1];
    const at::Tensor dr =
        s[17].defined() ? low_rank_delta(s[8], s[17], s[7].size(0), s[7].size(2)) : s[8];
    return {prepare_cuda_scan(s[0], df, s[2], s[3], s[4], s[5], s[14], s[6], s[15], forward),
            prepare_cuda_scan(s[7], dr, s[9], s[10], s[11], s[12], s[14], s[13], s[15],
                              reverse)};
  }

  // The gradients of delta's input: for a low-rank delta, those of delta_low and the weight
  // (ddelta is laid out as the product was: a (channels, batch * time) matrix, permuted).
  static std::pair<at::Tensor, at::Tensor> delta_grads(const at::Tensor& ddelta,
                                                       const at::Tensor& delta_input,
                                                       const at::Tensor& weight) {
    if (!weight.defined()) return {grad_like(ddelta, delta_input), at::Tensor()};
    const at::Tensor m =
        ddelta.to(delta_input.scalar_type()).permute({1, 0, 2}).reshape({ddelta.size(1), -1});
    const at::Tensor w = weight.to(delta_input.scalar_type());
    return {at::mm(w.t(), m), at::mm(m, delta_input.t()).to(weight.scalar_type())};
  }
};

}  // namespace

bool cuda_scan_supports(const at::Tensor& u, const at::Tensor& A) {
  return u.is_cuda() && cuda_kernel_dtype_supported(u.scalar_type()) &&
         A.size(1) <= cuda::scan_max_state();
}

CudaScanInputs prepare_cuda_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                                 const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                                 const at::Tensor& z, const at::Tensor& delta_bias,
                                 const at::Tensor& lengths, const ScanOptions& options) {
  const at::ScalarType type = u.scalar_type();
  CudaScanInputs in;
  in.u = time_contiguous(u, type);
  in.delta = time_contiguous(delta, type);
  in.B = time_contiguous(B, type);
  in.C = time_contiguous(C, type);
  in.z = time_contiguous(z, type);
  in.A = contiguous_as(A, at::kFloat);
  in.D = contiguous_as(D, at::kFloat);
  in.bias = contiguous_as(delta_bias, at::kFloat);
  in.lengths = lengths.defined() ? lengths.to(u.device(), at::kLong).clamp(0, u.size(2)).contiguous()
                                 : at::full({u.size(0)}, u.size(2), u.options().dtype(at::kLong));
  in.options = options;
  return in;
}

namespace {

// One scan's kernel arguments and the tensors they point into.
struct ForwardLaunch {
  cuda::ScanParams p;
  cuda::ScanForwardIO io;
  CudaScanForward f;
};

ForwardLaunch forward_launch(const CudaScanInputs& in, bool keep_checkpoints) {
  ForwardLaunch l;
  l.p = params_of(in);
  l.f.out = at::empty_like(in.u);  // u's layout where u is dense (time-major projections)
  bind(l.f.out, l.io.out, l.io.out_s);
  if (keep_checkpoints) {
    l.f.checkpoints =
        at::empty({cuda::scan_checkpoint_floats(l.p)}, in.u.options().dtype(at::kFloat));
    l.io.checkpoints = l.f.checkpoints.data_ptr<float>();
  }
  return l;
}

struct BackwardLaunch {
  cuda::ScanParams p;
  cuda::ScanBackwardIO io;
  CudaScanGrads g;
  at::Tensor dy, dA_rows, dD_rows, dbias_rows, workspace;

  // dA, dD, dbias: the per-utterance rows summed over the batch.
  CudaScanGrads finish(const CudaScanInputs& in) {
    g.dA = dA_rows.sum(0);
    g.dD = in.D.defined() ? dD_rows.sum(0) : at::Tensor();
    g.dbias = in.bias.defined() ? dbias_rows.sum(0) : at::Tensor();
    return g;
  }
};

BackwardLaunch backward_launch(const CudaScanInputs& in, const at::Tensor& checkpoints,
                               const at::Tensor& dout) {
  BackwardLaunch l;
  l.p = params_of(in);
  const cuda::ScanParams& p = l.p;
  l.dy = dout.defined() ? time_contiguous(dout, in.u.scalar_type()) : at::zeros_like(in.u);
  const auto f32 = in.u.options().dtype(at::kFloat);
  CudaScanGrads& g = l.g;
  // Each gradient in its input's layout (empty_like keeps a dense tensor's strides).
  g.du = at::empty_like(in.u);
  g.ddelta = at::empty_like(in.delta);
  g.dz = in.z.defined() ? at::empty_like(in.z) : at::Tensor();
  g.dB = at::empty_like(in.B);
  g.dC = at::empty_like(in.C);
  l.dA_rows = at::empty({p.batch, p.channels, p.state}, f32);
  l.dD_rows = at::empty({p.batch, p.channels}, f32);
  l.dbias_rows = at::empty({p.batch, p.channels}, f32);
  l.workspace = at::empty({cuda::scan_workspace_floats(p)}, f32);
  cuda::ScanBackwardIO& io = l.io;
  bind(l.dy, io.dout, io.dout_s);
  bind(g.du, io.du, io.du_s);
  bind(g.ddelta, io.ddelta, io.ddelta_s);
  bind(g.dz, io.dz, io.dz_s);
  bind(g.dB, io.dB, io.dB_s);
  bind(g.dC, io.dC, io.dC_s);
  io.checkpoints = checkpoints.data_ptr<float>();
  io.dA_rows = l.dA_rows.data_ptr<float>();
  io.dD_rows = l.dD_rows.data_ptr<float>();
  io.dbias_rows = l.dbias_rows.data_ptr<float>();
  io.workspace = l.workspace.data_ptr<float>();
  return l;
}

void* current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }

}  // namespace

CudaScanForward cuda_scan_forward(const CudaScanInputs& in, bool keep_checkpoints) {
  const c10::cuda::CUDAGuard guard(in.u.device());
  ForwardLaunch l = forward_launch(in, keep_checkpoints);
  check_launch(cuda::scan_forward(l.p, l.io, current_stream()), "forward");
  return l.f;
}

std::pair<CudaScanForward, CudaScanForward> cuda_scan_forward_pair(const CudaScanInputs& first,
                                                               const CudaScanInputs& second,
                                                               bool keep_checkpoints) {
  const c10::cuda::CUDAGuard guard(first.u.device());
  ForwardLaunch a = forward_launch(first, keep_checkpoints);
  ForwardLaunch b = forward_launch(second, keep_checkpoints);
  check_launch(cuda::scan_forward_pair(a.p, a.io, b.p, b.io, current_stream()), "forward");
  return {a.f, b.f};
}

CudaScanGrads cuda_scan_backward(const CudaScanInputs& in, const at::Tensor& checkpoints,
                                 const at::Tensor& dout) {
  const c10::cuda::CUDAGuard guard(in.u.device());
  BackwardLaunch l = backward_launch(in, checkpoints, dout);
  check_launch(cuda::scan_backward(l.p, l.io, current_stream()), "backward");
  return l.finish(in);
}

std::pair<CudaScanGrads, CudaScanGrads> cuda_scan_backward_pair(
    const CudaScanInputs& first, const at::Tensor& first_checkpoints, const at::Tensor& first_dout,
    const CudaScanInputs& second, const at::Tensor& second_checkpoints,
    const at::Tensor& second_dout) {
  const c10::cuda::CUDAGuard guard(first.u.device());
  BackwardLaunch a = backward_launch(first, first_checkpoints, first_dout);
  BackwardLaunch b = backward_launch(second, second_checkpoints, second_dout);
  check_launch(cuda::scan_backward_pair(a.p, a.io, b.p, b.io, current_stream()), "backward");
  return {a.finish(first), b.finish(second)};
}

at::Tensor selective_scan_cuda(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                               const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                               const at::Tensor& z, const at::Tensor& delta_bias,
                               const at::Tensor& lengths, const ScanOptions& options) {
  return SelectiveScanCudaFunction::apply(u, delta, A, B, C, optional_tensor(D), optional_tensor(z),
                                          optional_tensor(delta_bias), optional_tensor(lengths),
                                          options.delta_softplus, options.reverse,
                                          options.output_scale);
}

std::pair<at::Tensor, at::Tensor> selective_scan_cuda_bidirectional(const ScanDirection& f,
                                                                    const ScanDirection& r,
                                                                    const at::Tensor& z,
                                                                    const at::Tensor& lengths,
                                                                    bool delta_softplus,
                                                                    double output_scale) {
  // A low-rank delta goes in as its factors (both directions alike: the caller checked that).
  const bool low_rank = f.delta_low.defined();
  const variable_list out = BidirectionalScanCudaFunction::apply(
      f.u, low_rank ? f.delta_low : f.delta, f.A, f.B, f.C, optional_tensor(f.D),
      optional_tensor(f.delta_bias), r.u, low_rank ? r.delta_low : r.delta, r.A, r.B, r.C,
      optional_tensor(r.D), optional_tensor(r.delta_bias), optional_tensor(z),
      optional_tensor(lengths), optional_tensor(low_rank ? f.delta_weight : at::Tensor()),
      optional_tensor(low_rank ? r.delta_weight : at::Tensor()), delta_softplus, output_scale);
  return {out[0], out[1]};
}

#endif

}  // namespace masr::ops
