// lib/decode/s2s_beam_search.cpp
// One step: (1 - w_ctc) * attention log-probs, eos and blank blocking, + w_ctc * CTC prefix delta
// + w_lm * LM log-probs, length-normalized top-k over beam x vocab, eos hypotheses set aside.
#include "decode/s2s_beam_search.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <sstream>

#include "core/error.h"
#include "decode/ctc_prefix_scorer.h"

namespace masr::decode {
namespace {

constexpr double kMinusInf = CtcPrefixScorer::kMinusInf;

struct Finished {
  std::vector<std::vector<S2SHypothesis>> per_utterance;
  int64_t beam;
  bool full(size_t b) const { return static_cast<int64_t>(per_utterance[b].size()) >= beam; }
  // Every utterance holds `beam` hypotheses or has run out of its own steps.
  bool done(int64_t step, const std::vector<int64_t>& max_steps) const {
    for (size_t b = 0; b < per_utterance.size(); ++b) {
      if (!full(b) && step < max_steps[b]) return false;
    }
    return true;
  }
  // SpeechBrain's _update_hyps_and_scores_if_eos_token: rows whose mask is set are stored (with
  // their normalized score) until an utterance holds `beam` hypotheses. Every stored row loses
  // its last token, as SpeechBrain's _get_topk_prediction counts len(hyp) - 1 tokens: that token
  // is the eos of a row that ended, and the last real token of a row forced to end at the length
  // cap (whose score keeps that token's log-probability), so upstream's hypotheses at the cap are
  // one token shorter than their step count, and ours are the same.
  void add(const at::Tensor& alive, const at::Tensor& scores, const std::vector<char>& mask) {
    const at::Tensor seqs = alive.to(at::kCPU).contiguous();
    const at::Tensor values = scores.to(at::kCPU, at::kDouble).contiguous();
    for (int64_t i = 0; i < static_cast<int64_t>(mask.size()); ++i) {
      auto& hyps = per_utterance[i / beam];
      if (!mask[i] || static_cast<int64_t>(hyps.size()) >= beam) continue;
      const int64_t* row = seqs.data_ptr<int64_t>() + i * seqs.size(1);
      S2SHypothesis hyp{std::vector<int64_t>(row, row + seqs.size(1)),
                        values.data_ptr<double>()[i]};
      if (!hyp.tokens.empty()) hyp.tokens.pop_back();
      hyps.push_back(std::move(hyp));
    }
  }
};

}  // namespace

void S2SBeamSearchOptions::validate() const {
  auto fail = [](const std::string& what) { throw_config_error("S2S beam search: " + what); };
  if (beam_size < 1) fail("beam_size must be >= 1, got " + std::to_string(beam_size));
  if (nbest < 1 || nbest > beam_size)
    fail("nbest must be in [1, beam_size], got " + std::to_string(nbest));
  if (ctc_weight < 0 || ctc_weight > 1)
    fail("ctc_weight must be in [0, 1], got " + std::to_string(ctc_weight));
  if (lm_weight < 0) fail("lm_weight must be >= 0, got " + std::to_string(lm_weight));
  if (ctc_pre_beam < 0) fail("ctc_pre_beam must be >= 0, got " + std::to_string(ctc_pre_beam));
  if (max_decode_ratio <= 0 || min_decode_ratio < 0 || min_decode_ratio > max_decode_ratio) {
    fail("decode ratios must satisfy 0 <= min_decode_ratio <= max_decode_ratio, max > 0; got " +
         std::to_string(min_decode_ratio) + " and " + std::to_string(max_decode_ratio));
  }
}

std::string S2SBeamSearchOptions::to_string() const {
  std::ostringstream out;
  out << "beam_size=" << beam_size << " ctc_weight=" << ctc_weight << " lm_weight=" << lm_weight
      << " bos=" << bos << " eos=" << eos << " blank=" << blank
      << " min_decode_ratio=" << min_decode_ratio << " max_decode_ratio=" << max_decode_ratio
      << " length_normalization=" << length_normalization << " nbest=" << nbest
      << " ctc_pre_beam=" << ctc_pre_beam;
  return out.str();
}

S2SBeamSearch::S2SBeamSearch(S2SBeamSearchOptions options) : options_(options) {
  options_.validate();
}

std::vector<std::vector<S2SHypothesis>> S2SBeamSearch::search(int64_t frames,
                                                              const at::Tensor& lengths,
                                                              SequenceScorer* decoder,
                                                              const at::Tensor& ctc_log_probs,
                                                              SequenceScorer* lm) const {
  const S2SBeamSearchOptions& o = options_;
  const bool use_attention = o.ctc_weight < 1.0;
  const bool use_ctc = o.ctc_weight > 0.0;
  const bool use_lm = o.lm_weight > 0.0;
  if (use_attention && decoder == nullptr)
    throw_config_error("S2S beam search: ctc_weight < 1 needs a decoder");
  if (use_ctc && !ctc_log_probs.defined())
    throw_config_error("S2S beam search: ctc_weight > 0 needs CTC log-probabilities");
  if (use_lm && lm == nullptr)
    throw_config_error("S2S beam search: lm_weight > 0 needs a language model");
  if (!lengths.defined() || lengths.dim() != 1)
    throw_input_error("S2S beam search: lengths must be (batch)");
  const int64_t batch = lengths.size(0), beam = o.beam_size, n = batch * beam;
  std::unique_ptr<CtcPrefixScorer> ctc;
  if (use_ctc)
    ctc = std::make_unique<CtcPrefixScorer>(ctc_log_probs, lengths, beam, o.blank, o.eos);
  if (use_attention) decoder->start(batch, beam);
  if (use_lm) lm->start(batch, beam);
  const auto device = use_ctc ? ctc_log_probs.device() : at::Device(at::kCPU);
  const auto long_options = at::TensorOptions().dtype(at::kLong).device(device);
  const at::Tensor beam_offset = at::arange(batch, long_options) * beam;
  at::Tensor last_tokens = at::full({n}, o.bos, long_options);
  at::Tensor alive = at::empty({n, 0}, long_options);
  // Only the first row of each utterance starts alive, so the first top-k has no duplicates.
  at::Tensor sequence_scores = at::full({n}, -std::numeric_limits<float>::infinity(),
                                        at::TensorOptions().dtype(at::kFloat).device(device));
  sequence_scores.index_fill_(0, beam_offset, 0.0);
  at::Tensor scores;
  Finished finished{std::vector<std::vector<S2SHypothesis>>(batch), beam};
  // Decoding-length limits per utterance, from its own valid frames: SpeechBrain takes them from
  // the padded length T of the batch, so that an utterance next to a longer one would be searched
  // for more steps (and past its end, where CTC allows nothing) than alone. Decoded alone, T is
  // the utterance's length and the limits are SpeechBrain's. `frames` only bounds them.
  const at::Tensor valid = lengths.to(at::kCPU, at::kLong).clamp_max(frames).contiguous();
  std::vector<int64_t> min_steps(batch), max_steps(batch);
  std::vector<int64_t> row_min_steps(n);
  int64_t last_step = 0;  // the longest utterance's limit
  for (int64_t b = 0; b < batch; ++b) {
    const double t = static_cast<double>(valid.data_ptr<int64_t>()[b]);
    min_steps[b] = static_cast<int64_t>(t * o.min_decode_ratio);
    max_steps[b] = static_cast<int64_t>(t * o.max_decode_ratio);
    last_step = std::max(last_step, max_steps[b]);
    std::fill_n(row_min_steps.begin() + b * beam, beam, min_steps[b]);
  }
  const at::Tensor eos_blocked_until = at::tensor(row_min_steps, at::kLong).to(device);
  const bool any_min_steps =
      std::any_of(min_steps.begin(), min_steps.end(), [](int64_t m) { return m > 0; });
  const int64_t pre_beam = (use_attention || use_lm) && o.ctc_pre_beam > 0
                               ? std::max<int64_t>(1, static_cast<int64_t>(o.ctc_pre_beam * beam))
                               : 0;
  for (int64_t step = 0; step < last_step && !finished.done(step, max_steps); ++step) {
    const at::Tensor prefix = at::cat({at::full({n, 1}, o.bos, long_options), alive}, 1);
    at::Tensor logp;
    if (use_attention)
      logp = (1.0 - o.ctc_weight) * decoder->next_log_probs(prefix).to(device, at::kFloat);
    if (!logp.defined()) logp = at::zeros({n, ctc_log_probs.size(2)}, sequence_scores.options());
    if (any_min_steps) logp.select(1, o.eos).masked_fill_(eos_blocked_until.gt(step), kMinusInf);
    if (o.using_eos_threshold) {
      const at::Tensor max_logp = std::get<0>(logp.max(1));
      const at::Tensor eos_logp = logp.select(1, o.eos);
      logp.select(1, o.eos).copy_(at::where(eos_logp > o.eos_threshold * max_logp, eos_logp,
                                            at::full_like(eos_logp, kMinusInf)));
    }
    if (use_ctc) logp.select(1, o.blank).fill_(kMinusInf);  // blank (= unk) is never emitted
    if (use_lm) logp = logp + o.lm_weight * lm->next_log_probs(prefix).to(device, at::kFloat);
    if (use_ctc) {
      at::Tensor candidates;  // the pre-beam; undefined = the full vocabulary
      if (pre_beam > 0) candidates = std::get<1>(logp.topk(std::min(pre_beam, logp.size(1)), 1));
      logp = logp + o.ctc_weight * ctc->score(last_tokens, candidates);
    }
    const int64_t vocab = logp.size(1);
    scores = sequence_scores.unsqueeze(1) + logp;
    if (o.length_normalization) scores = scores / static_cast<double>(step + 1);
    const auto [top_scores, candidates] = scores.view({batch, beam * vocab}).topk(beam, 1);
    last_tokens = candidates.remainder(vocab).view({-1});
    const at::Tensor parents =
        (candidates.div(vocab, "floor") + beam_offset.unsqueeze(1)).view({-1});
    alive = at::cat({alive.index_select(0, parents), last_tokens.unsqueeze(1)}, 1);
    if (use_attention) decoder->reorder(parents);
    if (use_lm) lm->reorder(parents);
    if (use_ctc) ctc->permute(candidates);
    scores = top_scores.reshape({-1});
    sequence_scores =
        o.length_normalization ? scores * static_cast<double>(step + 1) : scores.clone();
    const at::Tensor is_eos = last_tokens.eq(o.eos);
    const at::Tensor eos_cpu = is_eos.to(at::kCPU, at::kChar).contiguous();
    std::vector<char> mask(eos_cpu.data_ptr<int8_t>(), eos_cpu.data_ptr<int8_t>() + n);
    // Rows of an utterance past its last step are still computed with the batch, never stored.
    for (int64_t i = 0; i < n; ++i) mask[i] = mask[i] && step < max_steps[i / beam];
    finished.add(alive, scores, mask);
    // An utterance at its last step: every row is forced to end (SpeechBrain's
    // _fill_alived_hyps_with_eos_token), with this step's scores, dropping its last token
    // (Finished::add); that fills its beam, so later steps add nothing to it.
    std::vector<char> out_of_steps(n, 0);
    bool any_out = false;
    for (int64_t b = 0; b < batch; ++b) {
      if (step + 1 != max_steps[b] || finished.full(static_cast<size_t>(b))) continue;
      std::fill_n(out_of_steps.begin() + b * beam, beam, 1);
      any_out = true;
    }
    if (any_out) finished.add(alive, scores, out_of_steps);
    sequence_scores.masked_fill_(is_eos, -std::numeric_limits<float>::infinity());
  }
  for (auto& hyps : finished.per_utterance) {
    // Best score first; hypotheses of exactly equal score in token order, so that the n-best
    // list does not depend on the order in which a batch's beams finished (on CUDA a batch's
    // top-k may return tied candidates in another order than a search of one utterance).
    std::sort(hyps.begin(), hyps.end(), [](const S2SHypothesis& a, const S2SHypothesis& b) {
      return a.score != b.score ? a.score > b.score : a.tokens < b.tokens;
    });
    if (static_cast<int64_t>(hyps.size()) > o.nbest) hyps.resize(o.nbest);
  }
  return finished.per_utterance;
}

}  // namespace masr::decode
