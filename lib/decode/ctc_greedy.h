// lib/decode/ctc_greedy.h
// CTC greedy decoding (SpeechBrain's ctc_greedy_decode): the best token per frame, repeats
// collapsed, blanks dropped, batched over padded utterances.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <vector>

namespace masr::decode {

// One utterance's CTC result: tokens and, for each, the frame where it was first emitted and the
// frame where its run of frames ends (exclusive), for timestamps; `frame_logp` is the token's
// log-probability at its first frame (a confidence).
struct CtcHypothesis {
  std::vector<int64_t> tokens;
  std::vector<int64_t> start_frames;
  std::vector<int64_t> end_frames;
  std::vector<float> token_logp;
  double score = 0.0;  // log-probability: the greedy path, or the prefix for beam search
};

// log_probs: float (B, T, V) CTC log-probabilities; lengths: int64 (B) valid frames, or undefined
// (all T valid). Frames past a length are ignored.
std::vector<CtcHypothesis> ctc_greedy_search(const at::Tensor& log_probs, const at::Tensor& lengths,
                                             int64_t blank = 0);

// The frame count of each utterance: `lengths` checked against (B, T), or T for all.
std::vector<int64_t> frame_counts(const at::Tensor& log_probs, const at::Tensor& lengths);

}  // namespace masr::decode
