// lib/decode/s2s_beam_search.h
// Joint CTC/attention beam search with neural LM shallow fusion, with the semantics of
// SpeechBrain v1.0's S2SBeamSearcher (reference §4.1): weights, blocked blank, length
// normalization, eos handling, decoding-length limits; CTC optionally scored on a pre-beam.
#pragma once

#include <ATen/Tensor.h>

#include <string>
#include <vector>

#include "decode/sequence_scorer.h"

namespace masr::decode {

struct S2SBeamSearchOptions {
  int64_t beam_size = 10;
  double ctc_weight = 0.4;  // the attention decoder gets 1 - ctc_weight
  double lm_weight = 0.0;
  int64_t bos = 1;
  int64_t eos = 2;
  int64_t blank = 0;
  // Steps: int(T * ratio), T the utterance's own valid encoder length (SpeechBrain uses the padded
  // length of the batch; decoded alone the two agree).
  double min_decode_ratio = 0.0;
  double max_decode_ratio = 1.0;
  bool length_normalization = true;
  bool using_eos_threshold = false;  // keep eos only if logp_eos > eos_threshold * max logp
  double eos_threshold = 1.5;
  int64_t nbest = 1;
  // Partial CTC scoring (ESPnet's pre-beam): CTC scores only the int(ctc_pre_beam * beam_size)
  // best tokens of each hypothesis by the attention (+ LM) scores, the others get -1e20.
  // 0 = every token (SpeechBrain's full scorer); with ctc_weight 1 it is always full.
  double ctc_pre_beam = 1.5;

  void validate() const;  // throws a config error naming the option
  std::string to_string() const;
};

struct S2SHypothesis {
  // Without bos and eos; a hypothesis forced to end at the length cap also lacks its last token
  // (whose log-probability its score keeps), as SpeechBrain's searcher returns it.
  std::vector<int64_t> tokens;
  double score = 0.0;  // length-normalized when length_normalization is on
};

class S2SBeamSearch {
 public:
  explicit S2SBeamSearch(S2SBeamSearchOptions options);

  // frames: T, the padded encoder length (an upper bound of every utterance's steps);
  // lengths: int64 (B) valid encoder frames; decoder: required unless ctc_weight == 1;
  // ctc_log_probs: float (B, T, V), required when ctc_weight > 0; lm: used when lm_weight > 0.
  // Returns each utterance's n-best, best first.
  std::vector<std::vector<S2SHypothesis>> search(int64_t frames, const at::Tensor& lengths,
                                                 SequenceScorer* decoder,
                                                 const at::Tensor& ctc_log_probs,
                                                 SequenceScorer* lm) const;

 private:
  S2SBeamSearchOptions options_;
};

}  // namespace masr::decode
