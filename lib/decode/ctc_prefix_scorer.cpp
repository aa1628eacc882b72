// lib/decode/ctc_prefix_scorer.cpp
// Algorithm 2 of Watanabe et al., "Hybrid CTC/attention architecture" (MERL TR2017-190), the
// full-vocabulary form that SpeechBrain's CTCPrefixScore ports from ESPnet (SB:decoders/ctc.py).
#include "decode/ctc_prefix_scorer.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "core/error.h"
#include "decode/ctc_greedy.h"
#include "ops/ctc_prefix_kernels.h"

#ifdef MASR_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#endif

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
  const at::Tensor by_frame = x.transpose(0, 1);  // (T, B, V)
  const int64_t n = batch_ * beam_;
  xn_ =
      by_frame.unsqueeze(2).expand({frames_, batch_, beam_, vocab_}).reshape({frames_, n, vocab_});
  xb_ =
      by_frame.select(2, blank).unsqueeze(2).expand({frames_, batch_, beam_}).reshape({frames_, n});
  xn_ = xn_.contiguous();
  xb_ = xb_.contiguous();
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
  const auto options = xn_.options();
  if (!r_prev_.defined()) {
    // The empty prefix: no non-blank path, r^b_t = product of the blanks up to t (Alg. 2-1).
    r_prev_ = at::full({frames_, 2, n}, kMinusInf, options);
    r_prev_.select(1, 1).copy_(at::cumsum(xb_, 0));
    psi_prev_ = at::zeros({n}, options);
  }
  // The scored tokens' non-blank log-probabilities: (T, N, K).
  at::Tensor xn = xn_;
  at::Tensor tokens;  // int64 (N, K), or undefined for the full vocabulary
  if (candidates.defined()) {
    tokens = candidates.to(xn_.device(), at::kLong);
    xn = xn_.gather(2, tokens.unsqueeze(0).expand({frames_, n, tokens.size(1)})).contiguous();
  }
  const int64_t k = xn.size(2);
  // phi_t = r^n_t(g) + r^b_t(g), but only r^b_t(g) when c repeats g's last token (Alg. 2-10).
  const at::Tensor last = last_tokens.to(xn_.device(), at::kLong).view({n, 1});
  const at::Tensor repeats =
      (tokens.defined() ? tokens.eq(last) : at::arange(k, last.options()).unsqueeze(0).eq(last))
          .to(at::kByte)
          .contiguous();
  at::Tensor r = at::empty({frames_, 2, n, k}, options);
  at::Tensor psi = at::empty({n, k}, options);
  recurse(xn, repeats, r, psi);
  // eos: the probability that the output is exactly g, at the utterance's last frame (Alg. 2-3).
  const at::Tensor ends =
      at::logsumexp(r_prev_.gather(0, last_frame_.view({1, 1, n}).expand({1, 2, n})), 1)
          .view({n, 1});
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

// Lines 10-13 of Algorithm 2 for every (hypothesis, candidate) column: one fused loop over the
// frames (ops/ctc_prefix_kernels.h) instead of a few tensor operations per frame.
void CtcPrefixScorer::recurse(const at::Tensor& xn, const at::Tensor& repeats, at::Tensor& r,
                              at::Tensor& psi) const {
  const int64_t start = std::max<int64_t>(1, prefix_length_);
  if (start > frames_) {  // a prefix longer than the utterance: impossible
    r.fill_(kMinusInf);
    psi.fill_(kMinusInf);
    return;
  }
  const at::Tensor r_prev = r_prev_.contiguous();
  ops::CtcPrefixStep s;
  s.frames = frames_;
  s.rows = xn.size(1);
  s.cols = xn.size(2);
  s.start = start;
  s.first = prefix_length_ == 0;
  s.xn = xn.data_ptr<float>();
  s.xb = xb_.data_ptr<float>();
  s.r_prev = r_prev.data_ptr<float>();
  s.repeats = repeats.data_ptr<uint8_t>();
  s.r = r.data_ptr<float>();
  s.psi = psi.data_ptr<float>();
  s.minus_inf = static_cast<float>(kMinusInf);
  if (!xn.is_cuda()) {
    ops::ctc_prefix_step_cpu(s);
    return;
  }
#ifdef MASR_WITH_CUDA
  const c10::cuda::CUDAGuard guard(xn.device());
  if (const char* error = ops::ctc_prefix_step_cuda(s, at::cuda::getCurrentCUDAStream().stream())) {
    throw_input_error(std::string("CTC prefix scorer: CUDA kernel failed: ") + error);
  }
#else
  throw_input_error("CTC prefix scorer: this build has no CUDA");
#endif
}

void CtcPrefixScorer::permute(const at::Tensor& candidates) {
  if (!r_.defined()) throw_input_error("CTC prefix scorer: permute() before score()");
  const int64_t n = batch_ * beam_;
  if (candidates.numel() != n) {
    throw_input_error("CTC prefix scorer: expected (" + std::to_string(batch_) + ", " +
                      std::to_string(beam_) + ") candidates, got " +
                      std::to_string(candidates.numel()));
  }
  const at::Tensor flat = candidates.to(xn_.device(), at::kLong).reshape({batch_, beam_});
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
