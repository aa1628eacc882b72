// lib/decode/batch_decoder.cpp
// One padded batch: waveforms -> encoder -> the chosen search -> transcripts with word timings.
#include "decode/batch_decoder.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/error.h"
#include "decode/model_scorers.h"
#include "runtime/autocast.h"

namespace masr::decode {
namespace {

Transcript make_transcript(const RecognitionModel& model, const CtcHypothesis& hyp,
                           const std::vector<std::string>& pieces, double start_shift,
                           size_t samples) {
  Transcript t;
  t.tokens = hyp.tokens;
  t.text = model.detokenize(hyp.tokens);
  t.score = hyp.score;
  if (!hyp.start_frames.empty() || hyp.tokens.empty()) {
    t.words = word_timings(hyp, pieces, model.frame_seconds(), start_shift,
                           static_cast<double>(samples) / model.sample_rate());
  }
  return t;
}

}  // namespace

Search parse_search(const std::string& name) {
  for (const Search s :
       {Search::kAuto, Search::kGreedy, Search::kCtcBeam, Search::kS2S, Search::kRescore}) {
    if (name == search_name(s)) return s;
  }
  throw_config_error("decode: unknown search '" + name +
                     "' (expected auto, greedy, ctc-beam, s2s or rescore)");
}

const char* search_name(Search search) {
  switch (search) {
    case Search::kAuto:
      return "auto";
    case Search::kGreedy:
      return "greedy";
    case Search::kCtcBeam:
      return "ctc-beam";
    case Search::kS2S:
      return "s2s";
    case Search::kRescore:
      return "rescore";
  }
  return "?";
}

void DecodeConfig::validate() const {
  ctc.validate();
  s2s.validate();
  if (decoder_temperature <= 0) throw_config_error("decode: decoder temperature must be > 0");
  if (!(std::abs(word_start_shift) <= 1.0)) {
    throw_config_error("decode: word start shift must be between -1 and 1 seconds, not " +
                       std::to_string(word_start_shift));
  }
}

Search resolve_search(const DecodeConfig& config, const RecognitionModel& model) {
  if (config.search == Search::kAuto) return model.has_decoder() ? Search::kS2S : Search::kCtcBeam;
  if ((config.search == Search::kS2S || config.search == Search::kRescore) &&
      !model.has_decoder()) {
    // The search is what the command line asked for: a usage error (exit 2), not a config one.
    throw Error(ErrorKind::kUsage, std::string("decode: search '") + search_name(config.search) +
                                       "' needs an attention decoder, and this model is CTC-only "
                                       "(use greedy or ctc-beam)");
  }
  return config.search;
}

CtcHypothesis ctc_forced_align(const at::Tensor& log_probs, const std::vector<int64_t>& tokens,
                               int64_t blank) {
  CtcHypothesis hyp;
  hyp.tokens = tokens;
  const at::Tensor x = log_probs.to(at::kCPU, at::kFloat).contiguous();
  const auto acc = x.accessor<float, 2>();
  const int64_t frames = x.size(0), states = 2 * static_cast<int64_t>(tokens.size()) + 1;
  auto label = [&](int64_t s) { return s % 2 == 0 ? blank : tokens[s / 2]; };
  constexpr double kNone = -std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> alpha(frames, std::vector<double>(states, kNone));
  std::vector<std::vector<int8_t>> back(frames, std::vector<int8_t>(states, 0));
  if (frames == 0) return hyp;
  alpha[0][0] = acc[0][blank];
  if (states > 1) alpha[0][1] = acc[0][label(1)];
  for (int64_t t = 1; t < frames; ++t) {
    for (int64_t s = 0; s < states; ++s) {
      const bool skip = s >= 2 && label(s) != blank && label(s) != label(s - 2);
      for (int8_t step = 0; step <= (skip ? 2 : (s >= 1 ? 1 : 0)); ++step) {
        if (alpha[t - 1][s - step] > alpha[t][s]) {
          alpha[t][s] = alpha[t - 1][s - step];
          back[t][s] = step;
        }
      }
      alpha[t][s] += acc[t][label(s)];
    }
  }
  int64_t s = states - 1;
  if (states > 1 && alpha[frames - 1][states - 2] > alpha[frames - 1][s]) s = states - 2;
  if (alpha[frames - 1][s] == kNone) return hyp;  // the tokens do not fit in the frames
  hyp.score = alpha[frames - 1][s];
  std::vector<int64_t> state_at(frames);
  for (int64_t t = frames - 1; t >= 0; --t) {
    state_at[t] = s;
    s -= back[t][s];
  }
  hyp.start_frames.assign(tokens.size(), -1);
  hyp.end_frames.assign(tokens.size(), -1);
  hyp.token_logp.assign(tokens.size(), 0.0f);
  for (int64_t t = 0; t < frames; ++t) {
    if (state_at[t] % 2 == 0) continue;
    const size_t i = static_cast<size_t>(state_at[t] / 2);
    if (hyp.start_frames[i] < 0) {
      hyp.start_frames[i] = t;
      hyp.token_logp[i] = acc[t][tokens[i]];
    }
    hyp.end_frames[i] = t + 1;
  }
  return hyp;
}

std::vector<Transcript> decode_batch(RecognitionModel& model,
                                     const std::vector<const std::vector<float>*>& waveforms,
                                     const DecodeConfig& config, SequenceScorer* lm) {
  config.validate();
  const Search search = resolve_search(config, model);
  const int64_t batch = static_cast<int64_t>(waveforms.size());
  if (batch == 0) return {};
  size_t longest = 0;
  for (const auto* w : waveforms) longest = std::max(longest, w->size());
  if (longest == 0) throw_input_error("decode: every waveform of the batch is empty");
  c10::InferenceMode inference;
  runtime::AutocastGuard autocast(model.device(), config.precision);
  // Zero padding and relative lengths, as SpeechBrain's PaddedBatch gives the model. With CUDA
  // the batch is staged in pinned memory (LibTorch caches those blocks), so that the copy to the
  // GPU runs at full bus speed.
  const auto options = at::TensorOptions(at::kFloat).pinned_memory(at::hasCUDA());
  at::Tensor wavs = at::empty({batch, static_cast<int64_t>(longest)}, options);
  at::Tensor rel_lens = at::empty({batch}, options);
  float* rows = wavs.data_ptr<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const auto& w = *waveforms[b];
    float* row = rows + b * static_cast<int64_t>(longest);
    std::copy(w.begin(), w.end(), row);
    std::fill(row + w.size(), row + longest, 0.0f);
    rel_lens.data_ptr<float>()[b] =
        static_cast<float>(static_cast<double>(w.size()) / static_cast<double>(longest));
  }
  const auto [enc, lens] = model.encode(wavs, rel_lens);
  const at::Tensor ctc = model.ctc_log_probs(enc);
  const std::vector<std::string> pieces = model.pieces();
  std::vector<Transcript> out;
  auto transcript = [&](const CtcHypothesis& hyp) {
    return make_transcript(model, hyp, pieces, config.word_start_shift,
                           waveforms[out.size()]->size());
  };
  if (search == Search::kGreedy) {  // the argmax runs on the model's device
    for (const auto& hyp : ctc_greedy_search(ctc, lens, config.ctc.blank))
      out.push_back(transcript(hyp));
    return out;
  }
  const at::Tensor ctc_cpu = ctc.to(at::kCPU, at::kFloat);
  const at::Tensor lens_cpu = lens.to(at::kCPU, at::kLong);
  const DecoderFn decoder_fn = [&model](const at::Tensor& e, const at::Tensor& l,
                                        const at::Tensor& t) {
    return model.decoder_log_probs(e, l, t);
  };
  if (search == Search::kCtcBeam || search == Search::kRescore) {
    CtcBeamSearchOptions options = config.ctc;
    if (search == Search::kRescore)
      options.nbest = std::max<int64_t>(options.nbest, options.beam_size);
    const auto nbests = CtcPrefixBeamSearch(options, pieces).search(ctc_cpu, lens_cpu);
    std::unique_ptr<AsrDecoderScorer> scorer;
    if (search == Search::kRescore)
      scorer =
          std::make_unique<AsrDecoderScorer>(decoder_fn, enc, lens, config.decoder_temperature);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<CtcHypothesis> ranked = nbests[b];
      if (scorer) {
        ranked.clear();
        for (auto& r : attention_rescore(nbests[b], scorer->teacher_forced(b), config.rescoring))
          ranked.push_back(r.hyp);
        if (static_cast<int64_t>(ranked.size()) > config.ctc.nbest) ranked.resize(config.ctc.nbest);
      }
      out.push_back(ranked.empty() ? Transcript() : transcript(ranked[0]));
      for (const auto& hyp : ranked)
        out.back().nbest.emplace_back(model.detokenize(hyp.tokens), hyp.score);
    }
    return out;
  }
  std::unique_ptr<SequenceScorer> scorer;
  if (config.incremental_decoder)
    scorer = model.incremental_decoder(enc, lens, config.decoder_temperature);
  if (!scorer)
    scorer = std::make_unique<AsrDecoderScorer>(decoder_fn, enc, lens, config.decoder_temperature);
  const auto results = S2SBeamSearch(config.s2s).search(enc.size(1), lens, scorer.get(), ctc, lm);
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t> best =
        results[b].empty() ? std::vector<int64_t>() : results[b][0].tokens;
    const int64_t frames = lens_cpu[b].item<int64_t>();
    CtcHypothesis hyp = ctc_forced_align(ctc_cpu[b].narrow(0, 0, frames), best, config.s2s.blank);
    hyp.score = results[b].empty() ? 0.0 : results[b][0].score;
    out.push_back(transcript(hyp));
    for (const auto& h : results[b])
      out.back().nbest.emplace_back(model.detokenize(h.tokens), h.score);
  }
  return out;
}

}  // namespace masr::decode
