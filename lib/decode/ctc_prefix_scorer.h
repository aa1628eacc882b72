// lib/decode/ctc_prefix_scorer.h
// CTC prefix scores for joint CTC/attention beam search: Algorithm 2 of Watanabe et al. (2017),
// vectorized over every hypothesis and every vocabulary entry, as SpeechBrain's CTCPrefixScore, or
// over a few candidate tokens per hypothesis (ESPnet's partial scoring, CTCPrefixScoreTH).
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>

namespace masr::decode {

class CtcPrefixScorer {
 public:
  // log_probs: float (B, T, V) CTC log-probabilities; lengths: int64 (B) valid frames (frames
  // past a length become certain blanks, as SpeechBrain masks them); beam: hypotheses per
  // utterance, so N = B * beam rows are scored.
  CtcPrefixScorer(const at::Tensor& log_probs, const at::Tensor& lengths, int64_t beam,
                  int64_t blank = 0, int64_t eos = 2);

  // last_tokens: int64 (N), each hypothesis's last token (bos at the first step; it is ignored
  // then, the prefix being empty). Returns float (N, V): ln psi(g + c) - ln psi(g) for every token
  // c, where psi is the CTC prefix probability; for c = eos the probability that the output is
  // exactly g; blank gets -1e20 (it can never be emitted).
  // candidates: int64 (N, K) distinct tokens per hypothesis, or undefined (the full vocabulary):
  // only those are scored, O(T x N x K) instead of O(T x N x V); every other token gets -1e20.
  at::Tensor score(const at::Tensor& last_tokens, const at::Tensor& candidates = {});

  // candidates: int64 (B, beam), the kept continuations of the last score() as indices into each
  // utterance's flattened (beam * V) table (hypothesis * V + token), as the beam search keeps them.
  void permute(const at::Tensor& candidates);

  static constexpr double kMinusInf = -1e20;  // SpeechBrain's minus_inf, finite to avoid NaN

 private:
  int64_t batch_, beam_, frames_, vocab_, blank_, eos_;
  int64_t prefix_length_ = -1;
  void recurse(const at::Tensor& xn, const at::Tensor& repeats, at::Tensor& r,
               at::Tensor& psi) const;

  at::Tensor xn_;  // (T, N, V): log-probs per hypothesis (frames past the end: blank certain)
  at::Tensor xb_;  // (T, N): the blank's log-prob per hypothesis
  at::Tensor last_frame_;  // int64 (N): the last valid frame of each hypothesis's utterance
  at::Tensor r_prev_;      // (T, 2, N): ln r_t^n(g), ln r_t^b(g)
  at::Tensor psi_prev_;    // (N): ln psi(g)
  at::Tensor r_, psi_;     // (T, 2, N, K), (N, K): of the last score(), waiting for permute()
  at::Tensor scored_;      // int64 (N, K): the tokens of the last score(), undefined = all V
};

}  // namespace masr::decode
