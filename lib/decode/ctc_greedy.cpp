// lib/decode/ctc_greedy.cpp
// CTC greedy decoding.
#include "decode/ctc_greedy.h"

#include <ATen/ATen.h>

#include <string>

#include "core/error.h"

namespace masr::decode {

std::vector<int64_t> frame_counts(const at::Tensor& log_probs, const at::Tensor& lengths) {
  if (log_probs.dim() != 3) {
    throw_input_error("CTC log-probabilities must be (batch, frames, vocab); got " +
                      std::to_string(log_probs.dim()) + " dimensions");
  }
  const int64_t batch = log_probs.size(0), frames = log_probs.size(1);
  std::vector<int64_t> counts(batch, frames);
  if (!lengths.defined()) return counts;
  if (lengths.dim() != 1 || lengths.size(0) != batch) {
    throw_input_error("CTC lengths must be (" + std::to_string(batch) + "); got " +
                      std::to_string(lengths.numel()) + " values");
  }
  const at::Tensor cpu = lengths.to(at::kCPU, at::kLong).contiguous();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = cpu.data_ptr<int64_t>()[b];
    if (n < 0 || n > frames) {
      throw_input_error("CTC length " + std::to_string(n) + " of utterance " + std::to_string(b) +
                        " is outside [0, " + std::to_string(frames) + "]");
    }
    counts[b] = n;
  }
  return counts;
}

std::vector<CtcHypothesis> ctc_greedy_search(const at::Tensor& log_probs, const at::Tensor& lengths,
                                             int64_t blank) {
  const std::vector<int64_t> counts = frame_counts(log_probs, lengths);
  // The argmax runs where the tensor lives (GPU included); only (B, T) values come back.
  const auto [best_logp, best] = log_probs.max(-1);
  const at::Tensor ids = best.to(at::kCPU).contiguous();
  const at::Tensor logp = best_logp.to(at::kCPU, at::kFloat).contiguous();
  const auto id_acc = ids.accessor<int64_t, 2>();
  const auto logp_acc = logp.accessor<float, 2>();
  std::vector<CtcHypothesis> out(counts.size());
  for (size_t b = 0; b < counts.size(); ++b) {
    CtcHypothesis& hyp = out[b];
    int64_t previous = -1;
    for (int64_t t = 0; t < counts[b]; ++t) {
      const int64_t token = id_acc[b][t];
      hyp.score += logp_acc[b][t];
      if (token != previous && token != blank) {
        hyp.tokens.push_back(token);
        hyp.start_frames.push_back(t);
        hyp.end_frames.push_back(t + 1);
        hyp.token_logp.push_back(logp_acc[b][t]);
      } else if (token == previous && token != blank) {
        hyp.end_frames.back() = t + 1;
      }
      previous = token;
    }
  }
  return out;
}

}  // namespace masr::decode
