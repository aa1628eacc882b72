// lib/decode/attention_rescoring.h
// Attention rescoring of a CTC n-best (WeNet's attention_rescoring): every hypothesis is scored by
// the attention decoder in one teacher-forced batch and ranked by att + ctc_weight * ctc.
#pragma once

#include <ATen/Tensor.h>

#include <functional>
#include <vector>

#include "decode/ctc_greedy.h"

namespace masr::decode {

// tokens: int64 (K, U), bos first, padded with pad; returns float (K, U, V) log-probabilities of
// the token after each position (the decoder run over one utterance's memory, teacher-forced).
using TeacherForcedScorer = std::function<at::Tensor(const at::Tensor& tokens)>;

struct AttentionRescoringOptions {
  double ctc_weight = 0.5;  // WeNet's default
  int64_t bos = 1;
  int64_t eos = 2;
  int64_t pad = 0;
};

struct RescoredHypothesis {
  CtcHypothesis hyp;           // score: the combined score
  double attention_score = 0;  // sum of ln P(token | prefix) over the tokens and eos
  double ctc_score = 0;
};

// Returns the n-best re-ranked, best first. An empty n-best gives an empty result.
std::vector<RescoredHypothesis> attention_rescore(const std::vector<CtcHypothesis>& nbest,
                                                  const TeacherForcedScorer& scorer,
                                                  const AttentionRescoringOptions& options);

}  // namespace masr::decode
