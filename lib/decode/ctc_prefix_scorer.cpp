// lib/decode/ctc_prefix_scorer.cpp
// Algorithm 2 of Watanabe et al., "Hybrid CTC/attention architecture" (MERL TR2017-190), the
// full-vocabulary form that SpeechBrain's CTCPrefixScore ports from ESPnet (SB:decoders/ctc.py).
#include "decode/ctc_prefix_scorer.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/error.h"
#include "decode/ctc_greedy.h"

namespace masr::decode {

CtcPrefixScorer::CtcPrefixScorer(const at::Tensor& log_probs, const at::Tensor& lengths,
                                 int64_t beam, int64_t blank, int64_t eos)
    : batch_(log_probs.size(0)),
      beam_(beam),
      frames_(log_probs.size(1)),
      vocab_(log_probs.size(2)),
      blank_(blank),
      eos_(eos) {
  const std::vector<int64_t> counts = frame_counts(log_probs, lengths);
  if (beam < 1) throw_config_error("CTC prefix scorer: beam must be >= 1");
  if (blank < 0 || blank >= vocab_ || eos < 0 || eos >= vocab_) {
    throw_config_error("CTC prefix scorer: blank " + std::to_string(blank) + " and eos " +
                       std::to_string(eos) + " must be inside the " + std::to_string(vocab_) +
                       "-token vocabulary");
  }
  const auto device = log_probs.device();
  const at::Tensor count_tensor = at::tensor(counts, at::kLong).to(device);
  // Frames past an utterance's end: every token impossible, blank certain (SpeechBrain).
  const at::Tensor padded =
      at::arange(frames_, count_tensor.options()).unsqueeze(0) >= count_tensor.unsqueeze(1);
  at::Tensor x = log_probs.to(at::kFloat).masked_fill(padded.unsqueeze(-1), kMinusInf);
  x.select(2, blank).masked_fill_(padded, 0.0);
  const at::Tensor nonblank = x.transpose(0, 1);  // (T, B, V)
  const at::Tensor blanks = nonblank.select(2, blank).unsqueeze(2).expand({-1, -1, vocab_});
  x_ = at::stack({nonblank, blanks})
           .unsqueeze(3)
           .expand({2, frames_, batch_, beam_, vocab_})
           .reshape({2, frames_, batch_ * beam_, vocab_});
  last_frame_ = (count_tensor - 1).clamp_min(0).repeat_interleave(beam_);
}

at::Tensor CtcPrefixScorer::score(const at::Tensor& last_tokens) {
  const int64_t n = batch_ * beam_;
  if (last_tokens.dim() != 1 || last_tokens.size(0) != n) {
    throw_input_error("CTC prefix scorer: expected " + std::to_string(n) + " last tokens, got " +
                      std::to_string(last_tokens.numel()));
  }
  ++prefix_length_;
  const auto options = x_.options();
  if (!r_prev_.defined()) {
    // The empty prefix: no non-blank path, r^b_t = product of the blanks up to t (Alg. 2-1).
    r_prev_ = at::full({frames_, 2, n}, kMinusInf, options);
    r_prev_.select(1, 1).copy_(at::cumsum(x_[1].select(2, blank_), 0));
    psi_prev_ = at::zeros({n, vocab_}, options);
  }
  at::Tensor r = at::full({frames_, 2, n, vocab_}, kMinusInf, options);
  if (prefix_length_ == 0) r[0][0].copy_(x_[0][0]);    // (Alg. 2-6)
  const at::Tensor r_sum = at::logsumexp(r_prev_, 1);  // (T, N)
  // phi_t = r^n_t(g) + r^b_t(g), but only r^b_t(g) when c repeats g's last token (Alg. 2-10).
  at::Tensor phi = r_sum.unsqueeze(2).repeat({1, 1, vocab_});
  const at::Tensor last = last_tokens.to(x_.device(), at::kLong).view({1, n, 1});
  phi.scatter_(2, last.expand({frames_, n, 1}), r_prev_.select(1, 1).unsqueeze(2));
  const int64_t start = std::max<int64_t>(1, prefix_length_);
  for (int64_t t = start; t < frames_; ++t) {  // (Alg. 2-11, 2-12)
    const at::Tensor rp = r[t - 1];
    const at::Tensor pairs = at::stack({rp[0], phi[t - 1], rp[0], rp[1]}).view({2, 2, n, vocab_});
    r[t].copy_(at::logsumexp(pairs, 1) + x_.select(1, t));
  }
  // psi(g + c) = sum_t phi_{t-1} p_t(c), plus r^n at the first scored frame (Alg. 2-13).
  const at::Tensor phix = at::cat({phi.narrow(0, 0, 1), phi.narrow(0, 0, frames_ - 1)}) + x_[0];
  const at::Tensor psi_init = r[start - 1][0].unsqueeze(0);
  at::Tensor psi =
      start < frames_
          ? at::logsumexp(at::cat({phix.narrow(0, start, frames_ - start), psi_init}), 0)
          : psi_init.squeeze(0).clone();
  // eos: the probability that the output is exactly g, at the utterance's last frame (Alg. 2-3).
  psi.select(1, eos_).copy_(r_sum.gather(0, last_frame_.view({1, n})).squeeze(0));
  if (eos_ != blank_) psi.select(1, blank_).fill_(kMinusInf);
  r_ = r;
  psi_ = psi;
  return psi - psi_prev_;
}

void CtcPrefixScorer::permute(const at::Tensor& candidates) {
  if (!r_.defined()) throw_input_error("CTC prefix scorer: permute() before score()");
  const int64_t n = batch_ * beam_;
  const at::Tensor offsets =
      (at::arange(batch_, candidates.options().dtype(at::kLong)) * beam_ * vocab_).unsqueeze(1);
  const at::Tensor index = (candidates.to(at::kLong) + offsets).view({-1}).to(x_.device());
  if (index.size(0) != n) {
    throw_input_error("CTC prefix scorer: expected (" + std::to_string(batch_) + ", " +
                      std::to_string(beam_) + ") candidates, got " +
                      std::to_string(candidates.numel()));
  }
  psi_prev_ = psi_.view({-1}).index_select(0, index).unsqueeze(1).repeat({1, vocab_});
  r_prev_ = r_.view({frames_, 2, n * vocab_}).index_select(2, index);
}

}  // namespace masr::decode
