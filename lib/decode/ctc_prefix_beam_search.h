// lib/decode/ctc_prefix_beam_search.h
// CTC prefix beam search in the style of pyctcdecode (SpeechBrain's CTCBeamSearcher): token and
// beam pruning, optional word-level n-gram fusion at word boundaries ("▁" for SentencePiece).
#pragma once

#include <ATen/Tensor.h>

#include <string>
#include <vector>

#include "decode/arpa_lm.h"
#include "decode/ctc_greedy.h"

namespace masr::decode {

// A token-level LM for shallow fusion in CTC prefix beam search (ESPnet style).
class PrefixLm {
 public:
  virtual ~PrefixLm() = default;
  // prefixes: token ids (no bos) -> float (N, V) CPU log P(next token | prefix), one row each,
  // scored in one batched call.
  virtual at::Tensor next_log_probs(const std::vector<std::vector<int64_t>>& prefixes) = 0;
  virtual int64_t eos() const = 0;
};

struct CtcBeamSearchOptions {
  int64_t beam_size = 100;
  // Beams scoring below best + beam_prune_logp are dropped after each frame (SpeechBrain -12).
  double beam_prune_logp = -12.0;
  // Only tokens with log-probability >= this (and the frame's best token) extend beams (-1.2).
  double token_prune_min_logp = -1.2;
  // pyctcdecode's history pruning: of beams sharing the last LM-context words, partial word and
  // last token, only the best survives. Lossy, hence off by default.
  bool prune_history = false;
  int64_t blank = 0;
  int64_t nbest = 1;
  // Word n-gram (ARPA) fusion (off when `arpa` is null): each completed word adds
  // arpa_weight * ln P(word | history) + word_insertion_bonus; "</s>" is scored at the end.
  const ArpaLm* arpa = nullptr;
  double arpa_weight = 0.5;
  double word_insertion_bonus = 0.0;
  // pyctcdecode's unk_score_offset: added to each completed word outside the LM's vocabulary,
  // and, while beams are ranked, to a beam whose unfinished word begins no vocabulary word
  // (times length / 6 past 6 characters). Without it, two words run together into one unknown
  // word cost less than the two (at <unk>'s probability), and the search deletes words.
  double unk_offset = -10.0;
  // Neural token LM fusion (off when null): each token that extends a prefix adds
  // neural_lm_weight * log P_lm(token | prefix), and eos is scored at the end. The LM must share
  // the acoustic model's vocabulary. May be combined with the word n-gram `arpa`: both terms add.
  PrefixLm* neural_lm = nullptr;
  double neural_lm_weight = 0.5;
  // Added per token with the neural LM (ESPnet's length bonus): offsets the LM's per-token cost,
  // which otherwise favours deletions.
  double neural_lm_token_bonus = 0.0;

  // Throws a config error naming the option at fault.
  void validate() const;
};

class CtcPrefixBeamSearch {
 public:
  // pieces: the text of every token id (needed for word boundaries when an LM is used). A
  // vocabulary with pieces starting with "▁" is SentencePiece, where "▁" starts a word; otherwise
  // the piece " " separates words.
  explicit CtcPrefixBeamSearch(CtcBeamSearchOptions options, std::vector<std::string> pieces = {});

  // log_probs: float (B, T, V) CTC log-probabilities; lengths: int64 (B) valid frames or
  // undefined. Returns each utterance's n-best, best first; `score` is the prefix log-probability
  // plus the LM fusion terms.
  std::vector<std::vector<CtcHypothesis>> search(const at::Tensor& log_probs,
                                                 const at::Tensor& lengths) const;
  // One utterance: logp points to T * V row-major floats. Not thread-safe with a neural LM (the
  // LM is called from here).
  std::vector<CtcHypothesis> search_one(const float* logp, int64_t frames, int64_t vocab) const;

 private:
  struct Beam;
  struct NeuralLmCache;
  void score_prefixes(std::vector<Beam>& beams, NeuralLmCache& cache, int64_t vocab) const;
  void extend_word(Beam& beam, int64_t token) const;
  void finish_word(Beam& beam, const std::string& word) const;
  double final_lm_terms(const Beam& beam) const;
  double partial_word_term(const Beam& beam) const;
  void prune(std::vector<Beam>& beams) const;

  CtcBeamSearchOptions options_;
  std::vector<std::string> pieces_;
  std::vector<char> starts_word_;  // per token: begins a new word
  std::vector<char> separator_;    // per token: a word separator with no text of its own
};

}  // namespace masr::decode
