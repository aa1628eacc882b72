// lib/decode/sequence_scorer.h
// The interface between searches and left-to-right token models (attention decoders, neural LMs):
// the search owns hypotheses, a scorer owns whatever it caches about them.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>

namespace masr::decode {

class SequenceScorer {
 public:
  virtual ~SequenceScorer() = default;
  // A new search over `batch` utterances with `beam` hypotheses each (N = batch * beam rows,
  // utterance b owning rows b * beam ... b * beam + beam - 1). Drops any cached state.
  virtual void start(int64_t batch, int64_t beam) = 0;
  // tokens: int64 (N, U), every hypothesis's tokens so far, bos first (U >= 1); one call per step,
  // U growing by one each time. Returns float (N, V): log-probabilities of the next token.
  virtual at::Tensor next_log_probs(const at::Tensor& tokens) = 0;
  // parents: int64 (N), the row of the previous step that each row now continues.
  virtual void reorder(const at::Tensor& parents) { (void)parents; }
};

}  // namespace masr::decode
