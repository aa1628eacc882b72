// lib/train/losses.h
// The training losses and metrics of the Mamba-ASR recipes, with SpeechBrain's semantics
// (SB:nnet/losses.py ctc_loss, kldiv_loss, nll_loss; SB:utils/Accuracy.py).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>

namespace masr::train {

// "batchmean" (sum / batch), "mean", "sum"; anything else is a config error naming `key`.
enum class LossReduction { kBatchMean, kMean, kSum };
LossReduction parse_loss_reduction(const std::string& text, const std::string& key);

// log_probs: (B, T, V) log-softmax; targets: int64 (B, U) padded; input_rel / target_rel: (B)
// relative lengths (scaled by T and U and rounded, as SpeechBrain). zero_infinity is on.
at::Tensor ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                    const at::Tensor& input_rel, const at::Tensor& target_rel, int64_t blank,
                    LossReduction reduction);
// The same with absolute lengths: input_lengths / target_lengths (B) int64, on the device of
// log_probs (or the host; they are queued there).
at::Tensor ctc_loss_lengths(const at::Tensor& log_probs, const at::Tensor& targets,
                            const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                            int64_t blank, LossReduction reduction);

// ctc_loss_lengths of log_softmax(logits) (ops::ctc_loss_from_logits: on CUDA the backward may
// recompute the log-softmax rather than keep it), and the log-probabilities (not differentiable).
struct CtcLossOfLogits {
  at::Tensor loss;
  at::Tensor log_probs;
};
CtcLossOfLogits ctc_loss_of_logits(const at::Tensor& logits, const at::Tensor& targets,
                                   const at::Tensor& input_lengths,
                                   const at::Tensor& target_lengths, int64_t blank,
                                   LossReduction reduction);

// SpeechBrain's kldiv_loss: with label_smoothing > 0 the target puts 1-eps on the true token and
// eps/(V-1) elsewhere, and positions whose target is pad_index are masked; with label_smoothing
// 0 it is nll_loss masked by the relative lengths `target_rel`. log_probs: (B, U, V).
at::Tensor kldiv_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                      const at::Tensor& target_rel, double label_smoothing, int64_t pad_index,
                      LossReduction reduction);

// Teacher-forced token accuracy: (correct, counted) over the positions within `target_rel`.
std::pair<int64_t, int64_t> token_accuracy(const at::Tensor& log_probs, const at::Tensor& targets,
                                           const at::Tensor& target_rel);

}  // namespace masr::train
