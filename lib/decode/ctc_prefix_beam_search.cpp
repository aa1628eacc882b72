// lib/decode/ctc_prefix_beam_search.cpp
// CTC prefix beam search: per frame, each beam's blank / non-blank prefix probabilities are
// extended by the surviving tokens, equal prefixes merged, then beams pruned.
#include "decode/ctc_prefix_beam_search.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "core/error.h"

namespace masr::decode {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
const std::string kSpaceMark = "\xe2\x96\x81";  // "▁", SentencePiece's word start

double log_add(double a, double b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const double m = std::max(a, b);
  return m + std::log1p(std::exp(std::min(a, b) - m));
}

}  // namespace

struct CtcPrefixBeamSearch::Beam {
  CtcHypothesis hyp;  // tokens and their frames (from the most probable contributing path)
  double logp_blank = kNegInf;
  double logp_nonblank = kNegInf;
  double best_contribution = kNegInf;
  double lm_score = 0.0;  // fused LM terms: completed words (n-gram), tokens (neural LM)
  const std::vector<float>* lm_next = nullptr;  // neural LM: log P(next token | this prefix)
  double score = kNegInf;
  std::vector<std::string> words;
  std::string partial;

  double total() const { return log_add(logp_blank, logp_nonblank); }
};

// The neural LM's next-token log-probabilities of every prefix scored so far in an utterance,
// so that no prefix is scored twice (map nodes are stable: beams keep pointers to the rows).
struct CtcPrefixBeamSearch::NeuralLmCache {
  std::map<std::vector<int64_t>, std::vector<float>> next;
};

void CtcBeamSearchOptions::validate() const {
  auto fail = [](const std::string& what) { throw_config_error("CTC beam search: " + what); };
  if (beam_size < 1) fail("beam_size must be >= 1, got " + std::to_string(beam_size));
  if (nbest < 1) fail("nbest must be >= 1, got " + std::to_string(nbest));
  if (beam_prune_logp > 0)
    fail("beam_prune_logp must be <= 0, got " + std::to_string(beam_prune_logp));
  if (token_prune_min_logp > 0) {
    fail("token_prune_min_logp must be <= 0, got " + std::to_string(token_prune_min_logp));
  }
  if (blank < 0) fail("blank must be >= 0, got " + std::to_string(blank));
  if (unk_offset > 0) fail("unk_offset must be <= 0, got " + std::to_string(unk_offset));
}

CtcPrefixBeamSearch::CtcPrefixBeamSearch(CtcBeamSearchOptions options,
                                         std::vector<std::string> pieces)
    : options_(options), pieces_(std::move(pieces)) {
  options_.validate();
  if (options_.arpa != nullptr && pieces_.empty()) {
    throw_config_error("CTC beam search: an n-gram LM needs the vocabulary's pieces to find words");
  }
  const bool sentencepiece = std::any_of(pieces_.begin(), pieces_.end(), [](const std::string& p) {
    return p.rfind(kSpaceMark, 0) == 0;
  });
  for (const std::string& piece : pieces_) {
    separator_.push_back(sentencepiece ? piece == kSpaceMark : piece == " ");
    starts_word_.push_back(sentencepiece ? piece.rfind(kSpaceMark, 0) == 0 : piece == " ");
  }
}

void CtcPrefixBeamSearch::finish_word(Beam& beam, const std::string& word) const {
  beam.lm_score += options_.arpa_weight * options_.arpa->log_prob(beam.words, word) +
                   options_.word_insertion_bonus +
                   (options_.arpa->in_vocabulary(word) ? 0.0 : options_.unk_offset);
  beam.words.push_back(word);
}

double CtcPrefixBeamSearch::partial_word_term(const Beam& beam) const {
  if (options_.arpa == nullptr || beam.partial.empty() ||
      options_.arpa->is_word_prefix(beam.partial)) {
    return 0.0;
  }
  return options_.unk_offset * std::max(1.0, static_cast<double>(beam.partial.size()) / 6.0);
}

// Called once per new prefix: a token that starts a word completes the partial word before it.
void CtcPrefixBeamSearch::extend_word(Beam& beam, int64_t token) const {
  if (options_.arpa == nullptr) return;
  if (token >= static_cast<int64_t>(pieces_.size())) {
    throw_input_error("CTC beam search: token " + std::to_string(token) + " has no piece (" +
                      std::to_string(pieces_.size()) + " pieces)");
  }
  if (starts_word_[token]) {
    if (!beam.partial.empty()) finish_word(beam, beam.partial);
    beam.partial = separator_[token] ? "" : pieces_[token].substr(kSpaceMark.size());
  } else {
    beam.partial += pieces_[token];
  }
}

double CtcPrefixBeamSearch::final_lm_terms(const Beam& beam) const {
  if (options_.arpa == nullptr) return 0.0;
  Beam copy = beam;
  if (!copy.partial.empty()) finish_word(copy, copy.partial);
  return copy.lm_score - beam.lm_score +
         options_.arpa_weight * options_.arpa->log_prob(copy.words, "</s>");
}

// Points every beam at its prefix's LM row, scoring the prefixes not cached in one batch.
void CtcPrefixBeamSearch::score_prefixes(std::vector<Beam>& beams, NeuralLmCache& cache,
                                         int64_t vocab) const {
  if (options_.neural_lm == nullptr) return;
  std::vector<std::vector<int64_t>> missing;
  for (const Beam& beam : beams) {
    if (cache.next.count(beam.hyp.tokens) == 0) missing.push_back(beam.hyp.tokens);
  }
  std::sort(missing.begin(), missing.end());
  missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
  if (!missing.empty()) {
    const at::Tensor scores =
        options_.neural_lm->next_log_probs(missing).to(at::kCPU, at::kFloat).contiguous();
    if (scores.dim() != 2 || scores.size(0) != static_cast<int64_t>(missing.size()) ||
        scores.size(1) < vocab) {
      throw_input_error("CTC beam search: the neural LM returned " +
                        std::to_string(scores.dim() == 2 ? scores.size(1) : -1) +
                        " scores per prefix for a " + std::to_string(vocab) + "-token vocabulary");
    }
    const int64_t width = scores.size(1);
    const float* data = scores.data_ptr<float>();
    for (size_t i = 0; i < missing.size(); ++i) {
      cache.next[missing[i]].assign(data + i * width, data + (i + 1) * width);
    }
  }
  for (Beam& beam : beams) beam.lm_next = &cache.next.at(beam.hyp.tokens);
}

void CtcPrefixBeamSearch::prune(std::vector<Beam>& beams) const {
  for (Beam& beam : beams) beam.score = beam.total() + beam.lm_score + partial_word_term(beam);
  std::stable_sort(beams.begin(), beams.end(),
                   [](const Beam& a, const Beam& b) { return a.score > b.score; });
  const double floor = beams.empty() ? kNegInf : beams[0].score + options_.beam_prune_logp;
  const size_t context =
      options_.arpa ? static_cast<size_t>(std::max(options_.arpa->order() - 1, 1)) : 1;
  std::set<std::tuple<std::vector<std::string>, std::string, int64_t>> seen;
  std::vector<Beam> kept;
  for (Beam& beam : beams) {
    if (static_cast<int64_t>(kept.size()) >= options_.beam_size) break;
    if (beam.score < floor || beam.score == kNegInf) break;
    if (options_.prune_history) {
      const size_t n = std::min(context, beam.words.size());
      const int64_t last = beam.hyp.tokens.empty() ? -1 : beam.hyp.tokens.back();
      auto key = std::make_tuple(std::vector<std::string>(beam.words.end() - n, beam.words.end()),
                                 beam.partial, last);
      if (!seen.insert(std::move(key)).second) continue;
    }
    kept.push_back(std::move(beam));
  }
  beams = std::move(kept);
}

std::vector<CtcHypothesis> CtcPrefixBeamSearch::search_one(const float* logp, int64_t frames,
                                                           int64_t vocab) const {
  const int64_t blank = options_.blank;
  if (blank >= vocab) {
    throw_config_error("CTC beam search: blank " + std::to_string(blank) + " is outside the " +
                       std::to_string(vocab) + "-token vocabulary");
  }
  if (options_.neural_lm != nullptr && options_.neural_lm->eos() >= vocab) {
    throw_config_error("CTC beam search: the neural LM's eos " +
                       std::to_string(options_.neural_lm->eos()) + " is outside the " +
                       std::to_string(vocab) + "-token vocabulary");
  }
  NeuralLmCache lm_cache;
  std::vector<Beam> beams(1);
  beams[0].logp_blank = 0.0;                             // the empty prefix, before any frame
  if (options_.arpa != nullptr) beams[0].words = {"<s>"};  // KenLM's BeginSentenceWrite state
  std::vector<Beam> next;
  std::map<std::vector<int64_t>, size_t> slots;
  std::vector<int64_t> candidates;
  for (int64_t t = 0; t < frames; ++t) {
    const float* row = logp + t * vocab;
    const int64_t best = std::max_element(row, row + vocab) - row;
    candidates.clear();
    for (int64_t c = 0; c < vocab; ++c) {
      if (row[c] >= options_.token_prune_min_logp || c == best) candidates.push_back(c);
    }
    score_prefixes(beams, lm_cache, vocab);
    next.clear();
    slots.clear();
    // The slot of `parent`'s prefix (extended by `token` when >= 0), created on first use.
    auto slot = [&](const Beam& parent, int64_t token) -> size_t {
      std::vector<int64_t> key = parent.hyp.tokens;
      if (token >= 0) key.push_back(token);
      const auto [it, fresh] = slots.emplace(std::move(key), next.size());
      if (fresh) {
        Beam beam;
        beam.hyp.tokens = it->first;
        beam.lm_score = parent.lm_score;
        beam.words = parent.words;
        beam.partial = parent.partial;
        if (token >= 0) extend_word(beam, token);
        if (token >= 0 && parent.lm_next != nullptr) {
          beam.lm_score +=
              options_.neural_lm_weight * (*parent.lm_next)[token] + options_.neural_lm_token_bonus;
        }
        next.push_back(std::move(beam));
      }
      return it->second;
    };
    // Keeps the frames of the most probable path into each prefix (for timestamps).
    auto note = [&](Beam& target, const Beam& parent, double value, int64_t token, bool repeat) {
      if (value <= target.best_contribution) return;
      target.best_contribution = value;
      std::vector<int64_t> tokens = std::move(target.hyp.tokens);
      target.hyp = parent.hyp;
      target.hyp.tokens = std::move(tokens);
      if (repeat) target.hyp.end_frames.back() = t + 1;
      if (token >= 0) {
        target.hyp.start_frames.push_back(t);
        target.hyp.end_frames.push_back(t + 1);
        target.hyp.token_logp.push_back(row[token]);
      }
    };
    for (const Beam& beam : beams) {
      const double total = beam.total();
      const int64_t last = beam.hyp.tokens.empty() ? -1 : beam.hyp.tokens.back();
      for (const int64_t c : candidates) {
        const double p = row[c];
        if (c == blank) {
          Beam& same = next[slot(beam, -1)];
          same.logp_blank = log_add(same.logp_blank, total + p);
          note(same, beam, total + p, -1, false);
          continue;
        }
        if (c == last) {
          Beam& same = next[slot(beam, -1)];
          same.logp_nonblank = log_add(same.logp_nonblank, beam.logp_nonblank + p);
          note(same, beam, beam.logp_nonblank + p, -1, true);
        }
        // A repeated token starts a new label only after a blank.
        const double from = c == last ? beam.logp_blank + p : total + p;
        const size_t index = slot(beam, c);
        Beam& extended = next[index];
        extended.logp_nonblank = log_add(extended.logp_nonblank, from);
        note(extended, beam, from, c, false);
      }
    }
    beams.swap(next);
    prune(beams);
  }
  score_prefixes(beams, lm_cache, vocab);
  for (Beam& beam : beams) {
    beam.score = beam.total() + beam.lm_score + final_lm_terms(beam);
    if (beam.lm_next != nullptr) {
      beam.score += options_.neural_lm_weight * (*beam.lm_next)[options_.neural_lm->eos()];
    }
  }
  std::stable_sort(beams.begin(), beams.end(),
                   [](const Beam& a, const Beam& b) { return a.score > b.score; });
  std::vector<CtcHypothesis> out;
  for (const Beam& beam : beams) {
    if (static_cast<int64_t>(out.size()) >= options_.nbest) break;
    out.push_back(beam.hyp);
    out.back().score = beam.score;
  }
  return out;
}

std::vector<std::vector<CtcHypothesis>> CtcPrefixBeamSearch::search(
    const at::Tensor& log_probs, const at::Tensor& lengths) const {
  const std::vector<int64_t> counts = frame_counts(log_probs, lengths);
  const at::Tensor cpu = log_probs.to(at::kCPU, at::kFloat).contiguous();
  const int64_t frames = cpu.size(1), vocab = cpu.size(2);
  std::vector<std::vector<CtcHypothesis>> out;
  for (size_t b = 0; b < counts.size(); ++b) {
    out.push_back(search_one(cpu.data_ptr<float>() + b * frames * vocab, counts[b], vocab));
  }
  return out;
}

}  // namespace masr::decode
