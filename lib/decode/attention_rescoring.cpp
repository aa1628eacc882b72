// lib/decode/attention_rescoring.cpp
// Teacher-forced attention scores for a CTC n-best.
#include "decode/attention_rescoring.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/error.h"

namespace masr::decode {

std::vector<RescoredHypothesis> attention_rescore(const std::vector<CtcHypothesis>& nbest,
                                                  const TeacherForcedScorer& scorer,
                                                  const AttentionRescoringOptions& options) {
  std::vector<RescoredHypothesis> out;
  if (nbest.empty()) return out;
  const int64_t k = static_cast<int64_t>(nbest.size());
  size_t longest = 0;
  for (const CtcHypothesis& hyp : nbest) longest = std::max(longest, hyp.tokens.size());
  const int64_t width = static_cast<int64_t>(longest) + 1;
  at::Tensor inputs = at::full({k, width}, options.pad, at::kLong);
  at::Tensor targets = at::full({k, width}, options.pad, at::kLong);
  at::Tensor mask = at::zeros({k, width}, at::kFloat);
  for (int64_t i = 0; i < k; ++i) {
    const auto& tokens = nbest[i].tokens;
    const int64_t u = static_cast<int64_t>(tokens.size());
    inputs[i][0] = options.bos;
    for (int64_t j = 0; j < u; ++j) {
      inputs[i][j + 1] = tokens[j];
      targets[i][j] = tokens[j];
    }
    targets[i][u] = options.eos;
    mask.narrow(1, 0, u + 1)[i].fill_(1.0);
  }
  const at::Tensor logp = scorer(inputs);
  if (logp.dim() != 3 || logp.size(0) != k || logp.size(1) != width) {
    throw_input_error("attention rescoring: the decoder returned " + std::to_string(logp.dim()) +
                      "-d log-probabilities; expected (" + std::to_string(k) + ", " +
                      std::to_string(width) + ", V)");
  }
  const at::Tensor picked =
      logp.to(at::kCPU, at::kDouble).gather(2, targets.unsqueeze(2)).squeeze(2) * mask;
  const at::Tensor att = picked.sum(1).contiguous();
  for (int64_t i = 0; i < k; ++i) {
    RescoredHypothesis r{nbest[i], att.data_ptr<double>()[i], nbest[i].score};
    r.hyp.score = r.attention_score + options.ctc_weight * r.ctc_score;
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.hyp.score > b.hyp.score; });
  return out;
}

}  // namespace masr::decode
