// lib/ops/ctc_loss.h
// The CTC loss per utterance. On CUDA tensors it runs our own kernels (ctc_loss_cuda_kernels.cu),
// which read the lengths on the device: LibTorch's CUDA ctc_loss copies lengths and batch offsets
// from the host with blocking copies, a full stream synchronisation each (issue #18).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>

namespace masr::ops {

// log_probs: (B, T, V) log-softmax outputs; targets: (B, S) integer labels, padded; input_lengths,
// target_lengths: (B) integers, on the device or the host. Returns the negative log-likelihoods
// (B) in float32 (log_probs' dtype elsewhere), differentiable in log_probs with LibTorch's
// gradient (exp(log_probs) - the state posteriors of each label: the gradient as if log_probs were
// log-softmax outputs; zero for frames t >= input_length). zero_infinity: infeasible utterances
// (loss inf) give 0 and a zero gradient.
// A target may hold the blank's id (an <unk> of 0): the kernels then give the loss's derivative;
// LibTorch's CPU backward assigns instead of adding one term when the last label is the blank.
//
// CUDA tensors in a build with CUDA and S <= ctc_cuda_max_target(): our kernels, in float32
// (other dtypes are cast), lengths copied without stopping the host when they are on the host.
// Lengths are never read on the host there, so they are not checked: input lengths are clamped
// to [0, T] and target lengths to [0, S]; a label outside [0, V) makes that utterance's loss NaN.
// Elsewhere: at::ctc_loss(..., Reduction::None, zero_infinity) (which checks the lengths).
at::Tensor ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                    int64_t blank, bool zero_infinity);

// The CTC loss of a CTC head's logits (B, T, V), of any floating dtype: ctc_loss of
// log_softmax(logits in float32), as autocast computes the log-softmax of bf16 logits. Where our
// CUDA kernels run, the backward recomputes the log-softmax from the logits instead of keeping
// it from the forward: bf16 logits take half the memory of float32 log-probabilities (ConMamba-L,
// 16 x 30 s, 5,000 tokens: 120 instead of 240 MB held through the step), and the log-softmax's
// backward runs in place (exp(lp) * the row sums taken from the gradient); only with
// MASR_CTC_FROM_LOGITS=1 until a GPU run has checked and measured it. Elsewhere the two ops as
// they are. `losses` as ctc_loss's; `log_probs` the float32 log-probabilities, not
// differentiable (drop them early to free their memory).
struct CtcFromLogits {
  at::Tensor losses;
  at::Tensor log_probs;
};
CtcFromLogits ctc_loss_from_logits(const at::Tensor& logits, const at::Tensor& targets,
                                   const at::Tensor& input_lengths,
                                   const at::Tensor& target_lengths, int64_t blank,
                                   bool zero_infinity);

// The longest padded target (S) the CUDA kernels take; 0 in a build without CUDA.
int64_t ctc_cuda_max_target();

}  // namespace masr::ops
