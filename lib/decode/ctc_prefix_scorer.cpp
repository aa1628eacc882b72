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

at::Tensor CtcPrefixScorer::score(const at::Tensor& last_tokens, const at::Tensor& candidates) {
  const int64_t n = batch_ * beam_;
  if (last_tokens.dim() != 1 || last_tokens.size(0) != n) {
    throw_input_error("CTC prefix scorer: expected " + std::to_string(n) + " last tokens, got " +
                      std::to_string(last_tokens.numel()));
  }
  if (candidates.defined() && (candidates.dim() != 2 || candidates.size(0) != n ||
                               candidates.size(1) < 1 || candidates.size(1) > vocab_)) {
    throw_input_error("CTC prefix scorer: candidates must be (" + std::to_string(n) +
                      ", K) with 1 <= K <= " + std::to_string(vocab_));
  }
  ++prefix_length_;
  const auto options = x_.options();
  if (!r_prev_.defined()) {
    // The empty prefix: no non-blank path, r^b_t = product of the blanks up to t (Alg. 2-1).
    r_prev_ = at::full({frames_, 2, n}, kMinusInf, options);
    r_prev_.select(1, 1).copy_(at::cumsum(x_[1].select(2, blank_), 0));
    psi_prev_ = at::zeros({n}, options);
  }
  // The scored tokens' log-probabilities: (2, T, N, K), non-blank then blank.
  at::Tensor x = x_;
  at::Tensor tokens;  // int64 (N, K), or undefined for the full vocabulary
  if (candidates.defined()) {
    tokens = candidates.to(x_.device(), at::kLong);
    const int64_t k = tokens.size(1);
    x = at::stack(
        {x_[0].gather(2, tokens.unsqueeze(0).expand({frames_, n, k})), x_[1].narrow(2, 0, k)});
  }
  const int64_t k = x.size(3);
  at::Tensor r = at::full({frames_, 2, n, k}, kMinusInf, options);
  if (prefix_length_ == 0) r[0][0].copy_(x[0][0]);     // (Alg. 2-6)
  const at::Tensor r_sum = at::logsumexp(r_prev_, 1);  // (T, N)
  // phi_t = r^n_t(g) + r^b_t(g), but only r^b_t(g) when c repeats g's last token (Alg. 2-10).
  const at::Tensor last = last_tokens.to(x_.device(), at::kLong).view({n, 1});
  const at::Tensor repeats =
      tokens.defined() ? tokens.eq(last) : at::arange(k, last.options()).unsqueeze(0).eq(last);
  const at::Tensor phi = at::where(repeats.unsqueeze(0), r_prev_.select(1, 1).unsqueeze(2),
                                   r_sum.unsqueeze(2));  // (T, N, K)
  const int64_t start = std::max<int64_t>(1, prefix_length_);
  for (int64_t t = start; t < frames_; ++t) {  // (Alg. 2-11, 2-12)
    const at::Tensor rp = r[t - 1];
    const at::Tensor pairs = at::stack({rp[0], phi[t - 1], rp[0], rp[1]}).view({2, 2, n, k});
    r[t].copy_(at::logsumexp(pairs, 1) + x.select(1, t));
  }
  // psi(g + c) = sum_t phi_{t-1} p_t(c), plus r^n at the first scored frame (Alg. 2-13).
  const at::Tensor phix = at::cat({phi.narrow(0, 0, 1), phi.narrow(0, 0, frames_ - 1)}) + x[0];
  const at::Tensor psi_init = r[start - 1][0].unsqueeze(0);
  at::Tensor psi =
      start < frames_
          ? at::logsumexp(at::cat({phix.narrow(0, start, frames_ - start), psi_init}), 0)
          : psi_init.squeeze(0).clone();
  // eos: the probability that the output is exactly g, at the utterance's last frame (Alg. 2-3).
  const at::Tensor ends = r_sum.gather(0, last_frame_.view({1, n})).view({n, 1});
  const at::Tensor columns = tokens.defined() ? tokens : at::arange(k, last.options()).view({1, k});
  psi = at::where(columns.eq(eos_), ends, psi);
  if (eos_ != blank_) psi = psi.masked_fill(columns.eq(blank_), kMinusInf);
  r_ = r;
  psi_ = psi;
  scored_ = tokens;
  const at::Tensor delta = psi - psi_prev_.unsqueeze(1);
  if (!tokens.defined()) return delta;
  return at::full({n, vocab_}, kMinusInf, options).scatter_(1, tokens, delta);
}

void CtcPrefixScorer::permute(const at::Tensor& candidates) {
  if (!r_.defined()) throw_input_error("CTC prefix scorer: permute() before score()");
  const int64_t n = batch_ * beam_;
  if (candidates.numel() != n) {
    throw_input_error("CTC prefix scorer: expected (" + std::to_string(batch_) + ", " +
                      std::to_string(beam_) + ") candidates, got " +
                      std::to_string(candidates.numel()));
  }
  const at::Tensor flat = candidates.to(x_.device(), at::kLong).reshape({batch_, beam_});
  const at::Tensor rows =
      (flat.div(vocab_, "floor") + (at::arange(batch_, flat.options()) * beam_).unsqueeze(1))
          .view({-1});
  const at::Tensor token = flat.remainder(vocab_).view({-1, 1});
  // The column of each kept token in the last score(): the token itself, or its candidate slot
  // (a token that was not scored keeps slot 0; its -1e20 score never lets it win a beam).
  const at::Tensor column = scored_.defined()
                                ? scored_.index_select(0, rows).eq(token).to(at::kInt).argmax(1)
                                : token.view({-1});
  const int64_t k = psi_.size(1);
  const at::Tensor index = rows * k + column;
  psi_prev_ = psi_.reshape({-1}).index_select(0, index);
  r_prev_ = r_.reshape({frames_, 2, n * k}).index_select(2, index);
}

}  // namespace masr::decode
