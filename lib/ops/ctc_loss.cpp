// lib/ops/ctc_loss.cpp
// Dispatch of the CTC loss: our CUDA kernels (ctc_loss_cuda_kernels.cu) in an autograd Function
// where the build and the inputs allow, at::ctc_loss elsewhere.
#include "ops/ctc_loss.h"

#include <torch/torch.h>

#include <string>

#include "core/env.h"
#include "core/error.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include "ops/ctc_loss_cuda_kernels.h"
#include "ops/cuda_launch.h"
#include "runtime/device_copy.h"
#endif

namespace masr::ops {

#ifdef MASR_WITH_CUDA
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

cuda::CtcParams params_of(const at::Tensor& lp, const at::Tensor& targets,
                          const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                          int64_t blank, bool zero_infinity) {
  cuda::CtcParams p;
  p.batch = lp.size(0);
  p.time = lp.size(1);
  p.vocab = lp.size(2);
  p.max_target = targets.size(1);
  p.blank = blank;
  p.zero_infinity = zero_infinity;
  p.log_probs = lp.data_ptr<float>();
  p.targets = targets.data_ptr<int64_t>();
  p.input_lengths = input_lengths.data_ptr<int64_t>();
  p.target_lengths = target_lengths.data_ptr<int64_t>();
  return p;
}

// The forward kernels on log-probabilities `lp` (B, T, V) float32 contiguous; targets (B, S),
// lengths (B): int64 contiguous, all on one CUDA device. Keeps in `ctx` what backward_of needs
// (the alphas (B, T, 2S + 1), the raw nll, blank and zero_infinity) and returns the losses (B).
// `op` names the caller in launch errors.
at::Tensor forward_into(AutogradContext* ctx, const at::Tensor& lp, const at::Tensor& targets,
                        const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                        int64_t blank, bool zero_infinity, const char* op) {
  const cuda::CtcParams p =
      params_of(lp, targets, input_lengths, target_lengths, blank, zero_infinity);
  const auto f32 = lp.options().dtype(at::kFloat);
  const at::Tensor alphas = at::empty({p.batch, p.time, cuda::ctc_states(p)}, f32);
  const at::Tensor nll = at::empty({p.batch}, f32);
  at::Tensor loss = at::empty({p.batch}, f32);
  check_cuda_launch(
      cuda::ctc_loss_forward(p, alphas.data_ptr<float>(), nll.data_ptr<float>(),
                             loss.data_ptr<float>(), at::cuda::getCurrentCUDAStream().stream()),
      op, "forward");
  ctx->saved_data["alphas"] = alphas;
  ctx->saved_data["nll"] = nll;
  ctx->saved_data["blank"] = blank;
  ctx->saved_data["zero_infinity"] = zero_infinity;
  return loss;
}

// The gradient with respect to `lp` (exp(lp) - the state posteriors, times grad_loss) from what
// forward_into kept; `saved`: the saved variables, with the targets and lengths at 1-3.
at::Tensor backward_of(AutogradContext* ctx, const at::Tensor& lp, const variable_list& saved,
                       const at::Tensor& grad_loss, const char* op) {
  const cuda::CtcParams p =
      params_of(lp, saved[1], saved[2], saved[3], ctx->saved_data["blank"].toInt(),
                ctx->saved_data["zero_infinity"].toBool());
  const at::Tensor alphas = ctx->saved_data["alphas"].toTensor();
  const at::Tensor nll = ctx->saved_data["nll"].toTensor();
  const at::Tensor ab = at::empty_like(alphas);
  const at::Tensor links =
      at::empty({2, p.batch, cuda::ctc_states(p)}, lp.options().dtype(at::kInt));
  at::Tensor grad = at::empty_like(lp);
  cuda::CtcGrads g;
  g.alphas = alphas.data_ptr<float>();
  g.nll = nll.data_ptr<float>();
  g.grad_loss = grad_loss.data_ptr<float>();
  g.grad_loss_stride = grad_loss.stride(0);
  g.ab = ab.data_ptr<float>();
  g.links = links.data_ptr<int32_t>();
  g.grad = grad.data_ptr<float>();
  check_cuda_launch(cuda::ctc_loss_backward(p, g, at::cuda::getCurrentCUDAStream().stream()), op,
                    "backward");
  return grad;
}

// The CTC loss of log-probabilities: saves them for the backward.
class CtcLossFunction : public torch::autograd::Function<CtcLossFunction> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& lp, const at::Tensor& targets,
                            const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                            int64_t blank, bool zero_infinity) {
    const c10::cuda::CUDAGuard guard(lp.device());
    at::Tensor loss = forward_into(ctx, lp, targets, input_lengths, target_lengths, blank,
                                   zero_infinity, "ctc_loss");
    ctx->save_for_backward({lp, targets, input_lengths, target_lengths});
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    const c10::cuda::CUDAGuard guard(s[0].device());
    at::Tensor grad = backward_of(ctx, s[0], s, grad_outputs[0].to(at::kFloat), "ctc_loss");
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// The CTC loss from logits (ctc_loss_from_logits): saves the logits rather than the float32
// log-probabilities, and recomputes those in the backward. Outputs: the losses (B) and the
// log-probabilities (non-differentiable).
class CtcFromLogitsFunction : public torch::autograd::Function<CtcFromLogitsFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& logits,
                               const at::Tensor& targets, const at::Tensor& input_lengths,
                               const at::Tensor& target_lengths, int64_t blank,
                               bool zero_infinity) {
    const c10::cuda::CUDAGuard guard(logits.device());
    const at::Tensor lp = at::log_softmax(logits.to(at::kFloat), -1).contiguous();
    at::Tensor loss = forward_into(ctx, lp, targets, input_lengths, target_lengths, blank,
                                   zero_infinity, "ctc_loss_from_logits");
    ctx->save_for_backward({logits, targets, input_lengths, target_lengths});
    ctx->mark_non_differentiable({lp});
    return {loss, lp};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list s = ctx->get_saved_variables();
    const at::Tensor& logits = s[0];
    const c10::cuda::CUDAGuard guard(logits.device());
    at::Tensor grad_logits;
    {
      at::Tensor lp = at::log_softmax(logits.to(at::kFloat), -1).contiguous();
      const at::Tensor grad_loss = grad_outputs[0].defined()
                                       ? grad_outputs[0].to(at::kFloat)
                                       : at::zeros({lp.size(0)}, lp.options());
      at::Tensor grad = backward_of(ctx, lp, s, grad_loss, "ctc_loss_from_logits");
      // The log-softmax's backward, grad - exp(lp) * sum_v(grad), in place in the gradient:
      // exp(lp) overwrites lp, which is not needed after it.
      const at::Tensor row_sums = grad.sum(-1, /*keepdim=*/true);
      grad.sub_(lp.exp_().mul_(row_sums));
      lp.reset();
      grad_logits = grad.to(logits.scalar_type());
    }
    return {grad_logits, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// An integer tensor as contiguous int64 on `device`; from the host without stopping it.
at::Tensor long_on(const at::Tensor& t, const at::Device& device) {
  return runtime::to_device_async(t.to(at::kLong), device).contiguous();
}

}  // namespace

int64_t ctc_cuda_max_target() { return cuda::ctc_max_target(); }
#else
int64_t ctc_cuda_max_target() { return 0; }
#endif

namespace {

// The shapes ctc_loss takes: scores (B, T, V) (log-probabilities or logits), targets (B, S),
// lengths (B), and a blank among the V classes.
void check_inputs(const at::Tensor& scores, const at::Tensor& targets,
                  const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                  int64_t blank) {
  if (scores.dim() != 3 || targets.dim() != 2 || targets.size(0) != scores.size(0) ||
      input_lengths.dim() != 1 || input_lengths.size(0) != scores.size(0) ||
      target_lengths.dim() != 1 || target_lengths.size(0) != scores.size(0)) {
    throw_input_error(
        "ctc_loss: log_probs must be (B, T, V), targets (B, S), input_lengths and "
        "target_lengths (B)");
  }
  if (blank < 0 || blank >= scores.size(2)) {
    throw_input_error("ctc_loss: blank " + std::to_string(blank) + " is outside the " +
                      std::to_string(scores.size(2)) + " classes");
  }
}

}  // namespace

at::Tensor ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                    int64_t blank, bool zero_infinity) {
  check_inputs(log_probs, targets, input_lengths, target_lengths, blank);
#ifdef MASR_WITH_CUDA
  if (log_probs.is_cuda() && targets.size(1) <= cuda::ctc_max_target()) {
    const at::Device device = log_probs.device();
    return CtcLossFunction::apply(log_probs.to(at::kFloat).contiguous(), long_on(targets, device),
                                  long_on(input_lengths, device), long_on(target_lengths, device),
                                  blank, zero_infinity);
  }
#endif
  return at::ctc_loss(log_probs.transpose(0, 1), targets.to(log_probs.device(), at::kLong),
                      input_lengths, target_lengths, blank, at::Reduction::None, zero_infinity);
}

CtcFromLogits ctc_loss_from_logits(const at::Tensor& logits, const at::Tensor& targets,
                                   const at::Tensor& input_lengths,
                                   const at::Tensor& target_lengths, int64_t blank,
                                   bool zero_infinity) {
  if (logits.dim() != 3 || !at::isFloatingType(logits.scalar_type())) {
    throw_input_error("ctc_loss_from_logits: logits must be floating-point (B, T, V)");
  }
  check_inputs(logits, targets, input_lengths, target_lengths, blank);
#ifdef MASR_WITH_CUDA
  // Off unless MASR_CTC_FROM_LOGITS=1 until a GPU run has checked it against the two ops and
  // measured the memory it saves.
  if (env_is("MASR_CTC_FROM_LOGITS", "1") && logits.is_cuda() &&
      targets.size(1) <= cuda::ctc_max_target()) {
    const at::Device device = logits.device();
    const variable_list out = CtcFromLogitsFunction::apply(
        logits.contiguous(), long_on(targets, device), long_on(input_lengths, device),
        long_on(target_lengths, device), blank, zero_infinity);
    return {out[0], out[1]};
  }
#endif
  CtcFromLogits r;
  r.log_probs = at::log_softmax(logits.to(at::kFloat), -1);
  r.losses = ctc_loss(r.log_probs, targets, input_lengths, target_lengths, blank, zero_infinity);
  r.log_probs = r.log_probs.detach();
  return r;
}

}  // namespace masr::ops
