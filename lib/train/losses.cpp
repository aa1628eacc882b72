// lib/train/losses.cpp
// CTC, label-smoothed KL-divergence and token accuracy as SpeechBrain v1.0 computes them.
#include "train/losses.h"

#include <torch/torch.h>

#include "core/error.h"
#include "ops/ctc_loss.h"
#include "runtime/device_copy.h"

namespace masr::train {
namespace {

at::Tensor absolute(const at::Tensor& rel, int64_t max_len) {
  return (rel.to(torch::kFloat64) * static_cast<double>(max_len)).round().to(torch::kLong);
}

// (B, U) mask of the positions within each relative length (SB's length_to_mask).
at::Tensor length_mask(const at::Tensor& rel, int64_t max_len) {
  const at::Tensor lengths = absolute(rel, max_len).to(rel.device());
  const at::Tensor positions =
      torch::arange(max_len, torch::TensorOptions().dtype(torch::kLong).device(rel.device()));
  return positions.unsqueeze(0).lt(lengths.unsqueeze(1));
}

at::Tensor reduce(const at::Tensor& summed_or_elems, int64_t batch, LossReduction reduction,
                  const at::Tensor& count) {
  switch (reduction) {
    case LossReduction::kBatchMean:
      return summed_or_elems.sum() / static_cast<double>(batch);
    case LossReduction::kSum:
      return summed_or_elems.sum();
    case LossReduction::kMean:
      return summed_or_elems.sum() / count.clamp_min(1);
  }
  return summed_or_elems.sum();
}

// The per-utterance CTC losses reduced as SpeechBrain does.
at::Tensor reduce_ctc(const at::Tensor& losses, const at::Tensor& targets,
                      const at::Tensor& target_lengths, LossReduction reduction) {
  // SB passes reduction "sum" for batchmean and divides by the batch size afterwards; "mean"
  // is torch's: each loss divided by its target length (at least 1), then averaged. The same
  // operations as at::ctc_loss's own reductions, so the CPU results are unchanged.
  switch (reduction) {
    case LossReduction::kBatchMean:
      return losses.sum() / static_cast<double>(targets.size(0));
    case LossReduction::kMean:
      return (losses / target_lengths.to(losses.device(), losses.scalar_type()).clamp_min(1))
          .mean();
    case LossReduction::kSum:
      break;
  }
  return losses.sum();
}

}  // namespace

LossReduction parse_loss_reduction(const std::string& text, const std::string& key) {
  if (text == "batchmean") return LossReduction::kBatchMean;
  if (text == "mean") return LossReduction::kMean;
  if (text == "sum") return LossReduction::kSum;
  throw_config_error("hparams: " + key + " '" + text +
                     "' is not a loss reduction; expected batchmean, mean or sum");
}

at::Tensor ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                    const at::Tensor& input_rel, const at::Tensor& target_rel, int64_t blank,
                    LossReduction reduction) {
  // The absolute lengths are computed where the relative ones live and then queued to the
  // log-probabilities' device (on CUDA without stopping the host: no .cpu() of device tensors).
  const at::Device device = log_probs.device();
  return ctc_loss_lengths(
      log_probs, targets, runtime::to_device_async(absolute(input_rel, log_probs.size(1)), device),
      runtime::to_device_async(absolute(target_rel, targets.size(1)), device), blank, reduction);
}

at::Tensor ctc_loss_lengths(const at::Tensor& log_probs, const at::Tensor& targets,
                            const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                            int64_t blank, LossReduction reduction) {
  const at::Device device = log_probs.device();
  const at::Tensor losses =
      ops::ctc_loss(log_probs.to(torch::kFloat32), targets.to(device, torch::kLong), input_lengths,
                    target_lengths, blank, /*zero_infinity=*/true);
  return reduce_ctc(losses, targets, target_lengths, reduction);
}

CtcLossOfLogits ctc_loss_of_logits(const at::Tensor& logits, const at::Tensor& targets,
                                   const at::Tensor& input_lengths,
                                   const at::Tensor& target_lengths, int64_t blank,
                                   LossReduction reduction) {
  const ops::CtcFromLogits r =
      ops::ctc_loss_from_logits(logits, targets.to(logits.device(), torch::kLong), input_lengths,
                                target_lengths, blank, /*zero_infinity=*/true);
  return {reduce_ctc(r.losses, targets, target_lengths, reduction), r.log_probs};
}

at::Tensor kldiv_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                      const at::Tensor& target_rel, double label_smoothing, int64_t pad_index,
                      LossReduction reduction) {
  const int64_t batch = log_probs.size(0);
  const int64_t classes = log_probs.size(2);
  const at::Tensor lp = log_probs.to(torch::kFloat32);
  if (label_smoothing > 0) {
    const at::Tensor flat = lp.reshape({-1, classes});
    const at::Tensor flat_targets = targets.reshape({-1}).to(torch::kLong);
    at::Tensor true_dist;
    at::Tensor ignore;
    {
      torch::NoGradGuard no_grad;
      ignore = flat_targets.eq(pad_index);
      true_dist = torch::full_like(flat, label_smoothing / static_cast<double>(classes - 1));
      true_dist.scatter_(1, flat_targets.masked_fill(ignore, 0).unsqueeze(1),
                         1.0 - label_smoothing);
    }
    at::Tensor loss = torch::kl_div(flat, true_dist, at::Reduction::None);
    loss = loss.masked_fill(ignore.unsqueeze(1), 0.0);
    return reduce(loss, batch, reduction, ignore.logical_not().sum());
  }
  // nll_loss with SB's compute_masked_loss.
  const at::Tensor mask = length_mask(target_rel, targets.size(1)).to(lp.dtype());
  const at::Tensor picked = -lp.gather(2, targets.to(torch::kLong).unsqueeze(2)).squeeze(2);
  return reduce(picked * mask, batch, reduction, mask.sum());
}

std::pair<int64_t, int64_t> token_accuracy(const at::Tensor& log_probs, const at::Tensor& targets,
                                           const at::Tensor& target_rel) {
  torch::NoGradGuard no_grad;
  const at::Tensor mask = length_mask(target_rel, targets.size(1));
  const at::Tensor correct = log_probs.argmax(-1).eq(targets.to(torch::kLong)).logical_and(mask);
  return {correct.sum().item<int64_t>(), mask.sum().item<int64_t>()};
}

}  // namespace masr::train
