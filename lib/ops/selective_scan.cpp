// lib/ops/selective_scan.cpp
// Entry point of the selective scan: checks the arguments, then runs the fused CPU kernel
// (selective_scan_cpu.cpp) or, for CUDA tensors, the CUDA kernels, as custom autograd Functions;
// anything else uses the reference.
#include "ops/selective_scan.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "ops/selective_scan_cpu.h"
#include "ops/selective_scan_cuda.h"

namespace masr::ops {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::string shape_of(at::IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + ")";
}
std::string shape_of(const at::Tensor& t) { return shape_of(t.sizes()); }

void check_tensor(const char* name, const at::Tensor& t, const std::vector<int64_t>& shape,
                  const char* meaning, const at::Tensor& u) {
  const std::string where = std::string("selective_scan: ") + name;
  if (!at::isFloatingType(t.scalar_type())) {
    throw_input_error(where + " must be a floating-point tensor, got " +
                      std::string(c10::toString(t.scalar_type())));
  }
  if (t.sizes() != at::IntArrayRef(shape)) {
    throw_input_error(where + " has shape " + shape_of(t) + "; expected " + meaning + " = " +
                      shape_of(shape));
  }
  if (t.device() != u.device()) {
    throw_input_error(where + " is on " + t.device().str() + " but u is on " + u.device().str());
  }
}

void check_arguments(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                     const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                     const at::Tensor& z, const at::Tensor& delta_bias, const at::Tensor& lengths) {
  if (!u.defined() || u.dim() != 3) {
    throw_input_error("selective_scan: u must be a (batch, channels, time) tensor, got " +
                      (u.defined() ? shape_of(u) : std::string("an undefined tensor")));
  }
  if (!delta.defined() || !A.defined() || !B.defined() || !C.defined()) {
    throw_input_error("selective_scan: delta, A, B and C are required (one is undefined)");
  }
  if (A.dim() != 2) {
    throw_input_error("selective_scan: A must be (channels, state), got " + shape_of(A));
  }
  const int64_t batch = u.size(0), channels = u.size(1), time = u.size(2), state = A.size(1);
  check_tensor("u", u, {batch, channels, time}, "(batch, channels, time)", u);
  check_tensor("delta", delta, {batch, channels, time}, "u's shape (batch, channels, time)", u);
  check_tensor("A", A, {channels, state}, "(channels, state)", u);
  check_tensor("B", B, {batch, state, time}, "(batch, state, time)", u);
  check_tensor("C", C, {batch, state, time}, "(batch, state, time)", u);
  if (D.defined()) check_tensor("D", D, {channels}, "(channels)", u);
  if (z.defined()) check_tensor("z", z, {batch, channels, time}, "u's shape", u);
  if (delta_bias.defined()) check_tensor("delta_bias", delta_bias, {channels}, "(channels)", u);
  if (!lengths.defined()) return;
  if (at::isFloatingType(lengths.scalar_type()) || lengths.scalar_type() == at::kBool ||
      lengths.dim() != 1 || lengths.size(0) != batch) {
    throw_input_error("selective_scan: lengths must be an integer tensor of shape (" +
                      std::to_string(batch) + ") (one per utterance), got " +
                      std::string(c10::toString(lengths.scalar_type())) + " " + shape_of(lengths));
  }
  // Lengths on a GPU are not read back here (that would stop the host in the middle of every
  // training step); the CUDA scan clamps them to [0, time] instead (prepare_cuda_scan).
  if (!lengths.is_cpu()) return;
  const at::Tensor l = lengths.to(at::kLong);
  const int64_t low = batch ? l.min().item<int64_t>() : 0;
  const int64_t high = batch ? l.max().item<int64_t>() : 0;
  if (low < 0 || high > time) {
    throw_input_error("selective_scan: lengths must lie in [0, time = " + std::to_string(time) +
                      "], got values from " + std::to_string(low) + " to " + std::to_string(high));
  }
}

// Inputs in the compute type, contiguous; B and C transposed to (batch, time, state).
struct Prepared {
  at::Tensor u, delta, A, Bt, Ct, D, z, bias, lengths;
};

at::Tensor as_compute(const at::Tensor& t, at::ScalarType type) {
  return t.defined() ? t.to(type).contiguous() : t;
}

Prepared prepare(const variable_list& v, at::ScalarType type) {
  Prepared p;
  p.u = as_compute(v[0], type);
  p.delta = as_compute(v[1], type);
  p.A = as_compute(v[2], type);
  p.Bt = v[3].to(type).transpose(1, 2).contiguous();
  p.Ct = v[4].to(type).transpose(1, 2).contiguous();
  p.D = as_compute(v[5], type);
  p.z = as_compute(v[6], type);
  p.bias = as_compute(v[7], type);
  p.lengths = v[8].defined() ? v[8].to(at::kLong).contiguous()
                             : at::full({p.u.size(0)}, p.u.size(2), at::kLong);
  return p;
}

template <typename T>
T* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

template <typename T>
cpu::ScanInputs<T> kernel_inputs(const Prepared& p, bool softplus, bool reverse) {
  cpu::ScanInputs<T> in;
  in.batch = p.u.size(0);
  in.channels = p.u.size(1);
  in.time = p.u.size(2);
  in.state = p.A.size(1);
  in.u = p.u.data_ptr<T>();
  in.delta = p.delta.data_ptr<T>();
  in.A = p.A.data_ptr<T>();
  in.B = p.Bt.data_ptr<T>();
  in.C = p.Ct.data_ptr<T>();
  in.D = ptr_or_null<T>(p.D);
  in.z = ptr_or_null<T>(p.z);
  in.bias = ptr_or_null<T>(p.bias);
  in.lengths = p.lengths.data_ptr<int64_t>();
  in.softplus = softplus;
  in.reverse = reverse;
  return in;
}

at::ScalarType compute_type(const at::Tensor& u) {
  return u.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// Gradients of one Function call, in the compute type.
struct Gradients {
  at::Tensor du, ddelta, dA, dB, dC, dD, dz, dbias;
};

template <typename T>
Gradients run_backward(const Prepared& p, const at::Tensor& dout, bool softplus, bool reverse) {
  const cpu::ScanInputs<T> in = kernel_inputs<T>(p, softplus, reverse);
  const auto opts = p.u.options();
  Gradients g;
  g.du = at::empty_like(p.u);
  g.ddelta = at::empty_like(p.u);
  g.dz = p.z.defined() ? at::empty_like(p.u) : at::Tensor();
  at::Tensor dA_rows = at::empty({in.batch, in.channels, in.state}, opts);
  at::Tensor dD_rows = at::empty({in.batch, in.channels}, opts);
  at::Tensor dbias_rows = at::empty({in.batch, in.channels}, opts);
  at::Tensor dBt = at::empty_like(p.Bt), dCt = at::empty_like(p.Ct);
  cpu::ScanGrads<T> gr;
  gr.du = g.du.data_ptr<T>();
  gr.ddelta = g.ddelta.data_ptr<T>();
  gr.dz = ptr_or_null<T>(g.dz);
  gr.dA_rows = dA_rows.data_ptr<T>();
  gr.dD_rows = dD_rows.data_ptr<T>();
  gr.dbias_rows = dbias_rows.data_ptr<T>();
  gr.dBt = dBt.data_ptr<T>();
  gr.dCt = dCt.data_ptr<T>();
  cpu::scan_backward<T>(in, dout.data_ptr<T>(), gr);
  g.dA = dA_rows.sum(0);
  g.dD = dD_rows.sum(0);
  g.dbias = dbias_rows.sum(0);
  g.dB = dBt.transpose(1, 2).contiguous();
  g.dC = dCt.transpose(1, 2).contiguous();
  return g;
}

at::Tensor grad_like(const at::Tensor& grad, const at::Tensor& input) {
  return input.defined() ? grad.to(input.scalar_type()) : at::Tensor();
}

c10::optional<at::Tensor> optional(const at::Tensor& t) {
  return t.defined() ? c10::optional<at::Tensor>(t) : c10::nullopt;
}

class SelectiveScanFunction : public torch::autograd::Function<SelectiveScanFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& u, const at::Tensor& delta,
                            const at::Tensor& A, const at::Tensor& B, const at::Tensor& C,
                            const c10::optional<at::Tensor>& D_opt,
                            const c10::optional<at::Tensor>& z_opt,
                            const c10::optional<at::Tensor>& delta_bias_opt,
                            const c10::optional<at::Tensor>& lengths_opt, bool softplus,
                            bool reverse, double scale) {
    const at::Tensor D = D_opt.value_or(at::Tensor()), z = z_opt.value_or(at::Tensor());
    const at::Tensor delta_bias = delta_bias_opt.value_or(at::Tensor());
    const at::Tensor lengths = lengths_opt.value_or(at::Tensor());
    // Only the inputs are kept: backward recomputes the states row by row (selective_scan_cpu).
    ctx->save_for_backward({u, delta, A, B, C, D, z, delta_bias, lengths});
    ctx->saved_data["softplus"] = softplus;
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["scale"] = scale;
    const at::ScalarType type = compute_type(u);
    const Prepared p = prepare({u, delta, A, B, C, D, z, delta_bias, lengths}, type);
    at::Tensor out = at::empty_like(p.u);
    if (type == at::kDouble) {
      cpu::scan_forward<double>(kernel_inputs<double>(p, softplus, reverse),
                                out.data_ptr<double>());
    } else {
      cpu::scan_forward<float>(kernel_inputs<float>(p, softplus, reverse), out.data_ptr<float>());
    }
    if (scale != 1.0) out.mul_(scale);
    return out.to(u.scalar_type());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const bool softplus = ctx->saved_data["softplus"].toBool();
    const bool reverse = ctx->saved_data["reverse"].toBool();
    const at::ScalarType type = compute_type(saved[0]);
    const Prepared p = prepare(saved, type);
    const double scale = ctx->saved_data["scale"].toDouble();
    at::Tensor dout = grad_outputs[0].to(type).contiguous();
    if (scale != 1.0) dout = dout * scale;
    const Gradients g = type == at::kDouble ? run_backward<double>(p, dout, softplus, reverse)
                                            : run_backward<float>(p, dout, softplus, reverse);
    return {grad_like(g.du, saved[0]),
            grad_like(g.ddelta, saved[1]),
            grad_like(g.dA, saved[2]),
            grad_like(g.dB, saved[3]),
            grad_like(g.dC, saved[4]),
            grad_like(g.dD, saved[5]),
            grad_like(g.dz, saved[6]),
            grad_like(g.dbias, saved[7]),
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor selective_scan(const at::Tensor& u, const at::Tensor& delta, const at::Tensor& A,
                          const at::Tensor& B, const at::Tensor& C, const at::Tensor& D,
                          const at::Tensor& z, const at::Tensor& delta_bias,
                          const at::Tensor& lengths, const ScanOptions& options) {
  check_arguments(u, delta, A, B, C, D, z, delta_bias, lengths);
  if (cuda_scan_supports(u, A)) {
    return selective_scan_cuda(u, delta, A, B, C, D, z, delta_bias, lengths, options);
  }
  if (!u.device().is_cpu()) {
    // No fused kernel for this device or dtype (float64, state > 64): the reference is correct.
    return selective_scan_reference(u, delta, A, B, C, D, z, delta_bias, lengths, options);
  }
  // Absent tensors go in as nullopt: LibTorch's custom Functions reject undefined tensor inputs.
  return SelectiveScanFunction::apply(u, delta, A, B, C, optional(D), optional(z),
                                      optional(delta_bias), optional(lengths),
                                      options.delta_softplus, options.reverse,
                                      options.output_scale);
}

namespace {

// delta_weight (channels, R) and delta_low (R, batch * time) for u (batch, channels, time).
void check_low_rank(const ScanDirection& s) {
  const int64_t batch = s.u.size(0), channels = s.u.size(1), time = s.u.size(2);
  const at::Tensor& low = s.delta_low;
  const at::Tensor& weight = s.delta_weight;
  if (!weight.defined() || weight.dim() != 2 || low.dim() != 2 || weight.size(0) != channels ||
      weight.size(1) != low.size(0) || low.size(1) != batch * time) {
    throw_input_error("selective_scan: a low-rank delta needs delta_weight (" +
                      std::to_string(channels) + ", R) and delta_low (R, " +
                      std::to_string(batch * time) + "), got " +
                      (weight.defined() ? shape_of(weight) : std::string("none")) + " and " +
                      shape_of(low));
  }
}

}  // namespace

at::Tensor low_rank_delta(const at::Tensor& low, const at::Tensor& weight, int64_t batch,
                          int64_t time) {
  return at::mm(weight.to(low.scalar_type()), low)
      .view({weight.size(0), batch, time})
      .permute({1, 0, 2});
}

at::Tensor delta_of(const ScanDirection& s) {
  if (s.delta.defined() || !s.delta_low.defined()) return s.delta;
  check_low_rank(s);
  return low_rank_delta(s.delta_low, s.delta_weight, s.u.size(0), s.u.size(2));
}

std::pair<at::Tensor, at::Tensor> selective_scan_bidirectional(const ScanDirection& f,
                                                               const ScanDirection& r,
                                                               const at::Tensor& z,
                                                               const at::Tensor& lengths,
                                                               bool delta_softplus,
                                                               double output_scale) {
  ScanOptions forward, reverse;
  forward.delta_softplus = reverse.delta_softplus = delta_softplus;
  forward.output_scale = reverse.output_scale = output_scale;
  reverse.reverse = true;
  const bool cuda = cuda_scan_supports(f.u, f.A) && cuda_scan_supports(r.u, r.A) &&
                    f.u.scalar_type() == r.u.scalar_type() && f.A.size(1) == r.A.size(1);
  if (cuda && f.delta_low.defined() && r.delta_low.defined()) {
    // The factors stay factors (the CUDA Function recomputes delta in its backward pass);
    // everything else is checked against u's shape.
    for (const ScanDirection* s : {&f, &r}) {
      check_low_rank(*s);
      check_arguments(s->u, s->u, s->A, s->B, s->C, s->D, z, s->delta_bias, lengths);
    }
    return selective_scan_cuda_bidirectional(f, r, z, lengths, delta_softplus, output_scale);
  }
  const at::Tensor df = delta_of(f), dr = delta_of(r);
  check_arguments(f.u, df, f.A, f.B, f.C, f.D, z, f.delta_bias, lengths);
  check_arguments(r.u, dr, r.A, r.B, r.C, r.D, z, r.delta_bias, lengths);
  if (cuda) {
    ScanDirection f1 = f, r1 = r;
    f1.delta = df, r1.delta = dr;
    f1.delta_low = f1.delta_weight = r1.delta_low = r1.delta_weight = at::Tensor();
    return selective_scan_cuda_bidirectional(f1, r1, z, lengths, delta_softplus, output_scale);
  }
  return {selective_scan(f.u, df, f.A, f.B, f.C, f.D, z, f.delta_bias, lengths, forward),
          selective_scan(r.u, dr, r.A, r.B, r.C, r.D, z, r.delta_bias, lengths, reverse)};
}

}  // namespace masr::ops
