// lib/decode/chunked_decoder.cpp
// Window by window: read, encode, choose where the kept frames end, search them, join.
#include "decode/chunked_decoder.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/log.h"
#include "decode/model_scorers.h"
#include "runtime/autocast.h"

namespace masr::decode {

bool ChunkingOptions::applies_to(size_t samples, int sample_rate) const {
  return enabled() && static_cast<double>(samples) > chunk_seconds * sample_rate;
}

void ChunkingOptions::validate() const {
  if (!(chunk_seconds >= 0) || !std::isfinite(chunk_seconds)) {
    throw_config_error("decode: --chunk-seconds must be >= 0 (0: no chunking), not " +
                       std::to_string(chunk_seconds));
  }
  if (!(overlap_seconds >= 0) || !std::isfinite(overlap_seconds)) {
    throw_config_error("decode: --chunk-overlap must be >= 0 seconds, not " +
                       std::to_string(overlap_seconds));
  }
  if (enabled() && chunk_seconds - 2 * overlap_seconds < 1.0) {
    throw_config_error("decode: --chunk-seconds " + std::to_string(chunk_seconds) +
                       " leaves less than 1 s between the two overlaps of " +
                       std::to_string(overlap_seconds) +
                       " s; make chunks longer than 2 x overlap + 1 s (e.g. 30 and 2)");
  }
  if (!(pause_seconds >= 0) || !std::isfinite(pause_seconds)) {
    throw_config_error("decode: the chunk pause must be >= 0 seconds");
  }
}

int64_t choose_cut(const at::Tensor& log_probs, const std::vector<double>& energy, int64_t blank) {
  const int64_t frames = log_probs.size(0);
  if (frames < 1) throw_config_error("choose_cut: no frames to cut in");
  const at::Tensor best = log_probs.argmax(-1).to(at::kCPU, at::kLong).contiguous();
  const int64_t* b = best.data_ptr<int64_t>();
  int64_t run_start = 0, run_length = 0;
  for (int64_t t = 0, start = 0; t <= frames; ++t) {
    if (t < frames && b[t] == blank) continue;
    if (t - start >= run_length && t > start) run_start = start, run_length = t - start;
    start = t + 1;
  }
  if (run_length > 0) return run_start + run_length / 2;
  if (static_cast<int64_t>(energy.size()) == frames) {
    return static_cast<int64_t>(std::min_element(energy.begin(), energy.end()) - energy.begin());
  }
  return log_probs.select(-1, blank).argmax().item<int64_t>();
}

void append_hypothesis(CtcHypothesis& all, const CtcHypothesis& piece, int64_t offset,
                       int64_t separator, int64_t pause_frames,
                       const std::vector<char>& starts_word, const std::vector<char>& separators) {
  all.score += piece.score;
  size_t first = 0;
  auto flag = [](const std::vector<char>& v, int64_t token) {
    return token >= 0 && token < static_cast<int64_t>(v.size()) && v[token] != 0;
  };
  if (!all.tokens.empty() && !piece.tokens.empty()) {
    const int64_t gap = piece.start_frames[0] + offset - all.end_frames.back();
    if (piece.tokens[0] == all.tokens.back() && gap == 0) {  // one run cut in two
      all.end_frames.back() = piece.end_frames[0] + offset;
      first = 1;
    } else if (flag(separators, all.tokens.back()) && flag(separators, piece.tokens[0])) {
      first = 1;  // a pause each side of the cut called a word boundary: one is enough
    } else if (separator >= 0 && gap >= pause_frames && !flag(separators, all.tokens.back()) &&
               !flag(starts_word, piece.tokens[0]) && !flag(separators, piece.tokens[0])) {
      all.tokens.push_back(separator);
      all.start_frames.push_back(all.end_frames.back());
      all.end_frames.push_back(piece.start_frames[0] + offset);
      all.token_logp.push_back(0.0f);
    }
  }
  for (size_t i = first; i < piece.tokens.size(); ++i) {
    all.tokens.push_back(piece.tokens[i]);
    all.start_frames.push_back(piece.start_frames[i] + offset);
    all.end_frames.push_back(piece.end_frames[i] + offset);
    all.token_logp.push_back(i < piece.token_logp.size() ? piece.token_logp[i] : 0.0f);
  }
}

namespace {

const std::string kSpaceMark = "\xe2\x96\x81";  // "▁"

// The best hypothesis of one segment: enc (1, T, d) and its CTC log-probabilities (1, T, V).
CtcHypothesis search_segment(RecognitionModel& model, const at::Tensor& enc, const at::Tensor& ctc,
                             Search search, const DecodeConfig& config,
                             const std::vector<std::string>& pieces, SequenceScorer* lm) {
  const int64_t frames = enc.size(1);
  const at::Tensor lens = at::full({1}, frames, at::TensorOptions(at::kLong).device(enc.device()));
  if (search == Search::kGreedy) return ctc_greedy_search(ctc, lens, config.ctc.blank).at(0);
  const at::Tensor ctc_cpu = ctc.to(at::kCPU, at::kFloat).contiguous();
  const at::Tensor lens_cpu = lens.to(at::kCPU);
  const DecoderFn decoder_fn = [&model](const at::Tensor& e, const at::Tensor& l,
                                        const at::Tensor& t) {
    return model.decoder_log_probs(e, l, t);
  };
  CtcHypothesis hyp;
  if (search == Search::kCtcBeam || search == Search::kRescore) {
    CtcBeamSearchOptions options = config.ctc;
    if (search == Search::kRescore)
      options.nbest = std::max<int64_t>(options.nbest, options.beam_size);
    const auto nbest = CtcPrefixBeamSearch(options, pieces).search(ctc_cpu, lens_cpu).at(0);
    if (nbest.empty()) return hyp;
    if (search == Search::kCtcBeam) return nbest[0];
    const AsrDecoderScorer scorer(decoder_fn, enc, lens, config.decoder_temperature);
    const auto ranked = attention_rescore(nbest, scorer.teacher_forced(0), config.rescoring);
    return ranked.empty() ? hyp : ranked[0].hyp;
  }
  std::unique_ptr<SequenceScorer> scorer;
  if (config.incremental_decoder)
    scorer = model.incremental_decoder(enc, lens, config.decoder_temperature);
  if (!scorer)
    scorer = std::make_unique<AsrDecoderScorer>(decoder_fn, enc, lens, config.decoder_temperature);
  const auto results = S2SBeamSearch(config.s2s).search(frames, lens, scorer.get(), ctc, lm).at(0);
  if (results.empty()) return hyp;
  hyp = ctc_forced_align(ctc_cpu[0], results[0].tokens, config.s2s.blank);
  hyp.score = results[0].score;
  if (hyp.start_frames.size() != hyp.tokens.size()) {  // no alignment: the segment's span
    hyp.start_frames.assign(hyp.tokens.size(), 0);
    hyp.end_frames.assign(hyp.tokens.size(), frames);
    hyp.token_logp.assign(hyp.tokens.size(), 0.0f);
  }
  return hyp;
}

// Audio read ahead of the window being encoded: samples [start, start + samples.size()).
struct AudioWindow {
  SampleStream& stream;
  std::vector<float> samples;
  int64_t start = 0;
  bool ended = false;

  int64_t end() const { return start + static_cast<int64_t>(samples.size()); }
  void fill_to(int64_t target) {
    while (!ended && end() < target) {
      if (stream.read(samples, static_cast<size_t>(target - end())) == 0) ended = true;
    }
  }
  void drop_before(int64_t sample) {
    const int64_t n = std::clamp<int64_t>(sample - start, 0, static_cast<int64_t>(samples.size()));
    samples.erase(samples.begin(), samples.begin() + n);
    start += n;
  }
  float at(int64_t sample) const { return samples[sample - start]; }
  // Mean square of the samples of frame `frame` (frame_samples each).
  double energy(int64_t frame, int64_t frame_samples) const {
    const int64_t from = std::max(frame * frame_samples, start);
    const int64_t to = std::min((frame + 1) * frame_samples, end());
    double sum = 0.0;
    for (int64_t i = from; i < to; ++i) sum += double(samples[i - start]) * samples[i - start];
    return to > from ? sum / static_cast<double>(to - from) : 0.0;
  }
};

struct WordMarks {
  std::vector<char> starts_word, separators;
  int64_t separator = -1;
};

WordMarks word_marks(const std::vector<std::string>& pieces) {
  WordMarks marks;
  const bool sentencepiece = std::any_of(pieces.begin(), pieces.end(), [](const std::string& p) {
    return p.rfind(kSpaceMark, 0) == 0;
  });
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool separator = pieces[i] == " " || pieces[i] == kSpaceMark;
    marks.separators.push_back(separator ? 1 : 0);
    marks.starts_word.push_back(sentencepiece && pieces[i].rfind(kSpaceMark, 0) == 0 ? 1 : 0);
    if (separator && marks.separator < 0) marks.separator = static_cast<int64_t>(i);
  }
  return marks;
}

// Frames in [from, to) where runs of at least `min_run` frames whose best token is blank have
// their split (the middle): `from` first, then one split per such pause. best: the best token of
// each window frame (CPU, int64), the window starting at frame `first`.
std::vector<int64_t> pause_splits(const at::Tensor& best, int64_t first, int64_t from, int64_t to,
                                  int64_t blank, int64_t min_run) {
  std::vector<int64_t> splits = {from};
  if (to - from < 2 * min_run || min_run < 1) return splits;
  const int64_t* b = best.data_ptr<int64_t>() + (from - first);
  for (int64_t t = 0, start = 0; t <= to - from; ++t) {
    if (t < to - from && b[t] == blank) continue;
    const int64_t split = from + (start + t) / 2;
    // Runs touching either end are the pauses of the cuts themselves.
    if (t - start >= min_run && start > 0 && t < to - from && split - splits.back() >= min_run)
      splits.push_back(split);
    start = t + 1;
  }
  return splits;
}

// Silence is trimmed from both ends of a stretch before it is encoded again: a model trained on
// utterances that start with their speech decodes a stretch that opens with silence worse, and
// one that ends with a long silence a little worse. Measured with the bidirectional bundled model
// of 2026-11-22 (trained without pad_silence) on its 208 test utterances decoded one by one
// (greedy WER 44.15 %): 0.08 s of digital silence added before each gives 45.03 %, 0.2 s
// 46.96 %, 0.4 s before and after 47.29 %; their own 0.3 s of trailing silence cut to 0.15 s
// gives 43.59 %. A causal model is thrown off further.
// The test and validation voices (208 + 227 utterances, 5009 words) joined into one file each
// with 0.5 s pauses (bench/chunked_wer.sh), errors against 2131 one by one: 2247 with stretches
// split in the middle of the pauses and not trimmed; trimmed with 0, 0.05 s lead and 0.1 s tail
// 2183, 2192; 0.05 and 0.2 s 2180. The causal bundled model: 1794 one by one, 1791 with no lead,
// 1971 with 0.05 s. The lead is not 0 for bidirectional models: speech cut at its first loud
// sample can lose a closure ("TELL" heard as "SELL"). The bundled model trained with
// pad_silence (2026-11-27), validation voices (2522 words), 627 errors one by one: with a 0.1 s
// tail and a lead of 0, 0.02, 0.05 and 0.1 s 638, 635, 609, 634 (docs/decode.md).
constexpr double kTrimBlockSeconds = 0.01;      // energy resolution
constexpr double kTrimLeadSeconds = 0.05;       // silence kept before the speech
constexpr double kTrimCausalLeadSeconds = 0.0;  // the same for a causal model
constexpr double kTrimTailSeconds = 0.1;        // silence kept after it
constexpr double kQuietDb = 50.0;               // quiet: this far under the loudest block

// Mean squares of kTrimBlockSeconds blocks of the window's samples, and the level under which a
// block is quiet: kQuietDb below the loudest block, and at least 6 dB above the quietest (noise).
struct BlockEnergy {
  int64_t block = 1, start = 0;  // samples per block, the first block's first sample
  std::vector<double> energy;
  double quiet = 0.0;

  BlockEnergy(const AudioWindow& audio, int64_t from, int64_t to, int rate) {
    block = std::max<int64_t>(1, std::llround(kTrimBlockSeconds * rate));
    start = from;
    double loudest = 0.0, quietest = std::numeric_limits<double>::infinity();
    for (int64_t b = from; b < to; b += block) {
      double sum = 0.0;
      const int64_t e = std::min(to, b + block);
      for (int64_t i = b; i < e; ++i) sum += double(audio.at(i)) * audio.at(i);
      energy.push_back(sum / static_cast<double>(e - b));
      loudest = std::max(loudest, energy.back());
      quietest = std::min(quietest, energy.back());
    }
    quiet = std::max(loudest * std::pow(10.0, -kQuietDb / 10.0), 4.0 * quietest);
  }
  bool is_quiet(int64_t sample) const {
    const int64_t k = (sample - start) / block;
    return k < 0 || k >= static_cast<int64_t>(energy.size()) || energy[k] <= quiet;
  }
};

// The samples of frames [begin, end) trimmed to their speech: the silence of the leading blank
// frames (best token blank) before the first loud block is dropped but `lead_seconds`, that of
// the trailing blank frames after the last loud block but kTrimTailSeconds. The stretch starts
// `lead_seconds` before its first loud sample, not on the frame grid, so an utterance in a long
// file is encoded much as it would be alone (its frames then start a fraction of a frame off the
// file's: word times move by at most half a frame). best: the best tokens of frames [first,
// first + best.size(0)); later frames count as speech. Returns [from, to) in samples, empty when
// nothing is left.
std::pair<int64_t, int64_t> trim_silence(int64_t begin, int64_t end, const at::Tensor& best,
                                         int64_t first, int64_t blank, const AudioWindow& audio,
                                         const BlockEnergy& energy, int64_t frame, int rate,
                                         double lead_seconds) {
  const int64_t* b = best.data_ptr<int64_t>();
  auto is_blank = [&](int64_t f) { return f - first < best.size(0) && b[f - first] == blank; };
  int64_t lead_end = begin, tail_begin = end;  // the blank frames at each end
  while (lead_end < end && is_blank(lead_end)) ++lead_end;
  while (tail_begin > lead_end && is_blank(tail_begin - 1)) --tail_begin;
  const int64_t stop = std::min(end * frame, audio.end());
  // The speech may start inside the first frame with a token, not only before it.
  const int64_t onset_limit = std::min(stop, (lead_end + 1) * frame);
  int64_t onset = begin * frame;
  while (onset < onset_limit && energy.is_quiet(onset)) onset += energy.block;
  if (onset > begin * frame) {  // the first loud sample of the first loud block
    const int64_t block_end = std::min(onset + energy.block, onset_limit);
    while (onset < block_end && double(audio.at(onset)) * audio.at(onset) <= energy.quiet) ++onset;
  }
  int64_t offset = stop;
  while (offset > tail_begin * frame && energy.is_quiet(offset - 1)) offset -= energy.block;
  const int64_t from =
      std::clamp<int64_t>(onset - std::llround(lead_seconds * rate), begin * frame, stop);
  const int64_t to =
      std::clamp<int64_t>(offset + std::llround(kTrimTailSeconds * rate), from, stop);
  return {from, to};
}

}  // namespace

Transcript decode_chunked(RecognitionModel& model, SampleStream& audio, const DecodeConfig& config,
                          const ChunkingOptions& chunking, SequenceScorer* lm,
                          const ChunkProgress& progress, ChunkedDecodeStats* stats) {
  config.validate();
  chunking.validate();
  if (!chunking.enabled()) throw_config_error("decode_chunked: chunking is off (chunk seconds 0)");
  const Search search = resolve_search(config, model);
  const int rate = model.sample_rate();
  const int64_t frame = std::llround(model.frame_seconds() * rate);  // samples per encoder frame
  if (frame < 1) throw_config_error("decode_chunked: the model's frame shift is under a sample");
  const int64_t overlap =
      static_cast<int64_t>(std::ceil(chunking.overlap_seconds * rate / frame)) * frame;
  const int64_t window = static_cast<int64_t>(chunking.chunk_seconds * rate / frame) * frame;
  const int64_t central_frames = (window - 2 * overlap) / frame;
  if (central_frames < 3) {
    throw_config_error("decode: chunks of " + std::to_string(chunking.chunk_seconds) +
                       " s keep under 3 encoder frames between their overlaps");
  }
  const int64_t search_frames = std::max<int64_t>(1, central_frames / 3);
  const int64_t tail = rate;  // a last window may run up to a second long rather than leave a scrap
  const int64_t pause_frames = std::llround(chunking.pause_seconds / model.frame_seconds());
  const std::vector<std::string> pieces = model.pieces();
  const WordMarks marks = word_marks(pieces);

  c10::InferenceMode inference;
  runtime::AutocastGuard autocast(model.device(), config.precision);
  AudioWindow buffer{audio, {}, 0, false};
  CtcHypothesis all;
  int64_t keep_from = 0;  // first encoder frame (of the whole file) not yet searched
  int64_t start = 0;      // the window's first sample, a multiple of `frame`
  size_t windows = 0, stretches = 0;
  while (true) {
    buffer.fill_to(start + window + tail + 1);  // one more sample: is there audio past it?
    if (buffer.end() <= start) break;
    const bool last = buffer.end() <= start + window + tail;
    const int64_t stop = last ? buffer.end() : start + window;
    at::Tensor wav = at::from_blob(buffer.samples.data() + (start - buffer.start),
                                   {1, stop - start}, at::kFloat);
    const auto [enc, lens] = model.encode(wav, at::ones({1}, at::kFloat));
    const at::Tensor ctc = model.ctc_log_probs(enc);
    ++windows;
    const int64_t first_frame = start / frame;  // the window's frame 0 in the file
    const int64_t valid = lens.to(at::kCPU).item<int64_t>();
    int64_t cut = first_frame + valid;
    if (!last) {
      const int64_t hi = std::min(first_frame + (stop - start - overlap) / frame, cut);
      const int64_t lo = std::max(keep_from + 1, hi - search_frames);
      if (lo < hi) {
        std::vector<double> energy;
        for (int64_t f = lo; f < hi; ++f) energy.push_back(buffer.energy(f, frame));
        cut =
            lo + choose_cut(ctc[0].narrow(0, lo - first_frame, hi - lo), energy, config.ctc.blank);
      } else {
        cut = std::max(hi, keep_from + 1);
      }
    }
    if (cut > keep_from && chunking.segments) {  // each stretch between pauses encoded alone
      const int64_t end_frame =
          last ? keep_from + (stop - keep_from * frame + frame - 1) / frame : cut;
      const at::Tensor best = ctc[0].argmax(-1).to(at::kCPU, at::kLong).contiguous();
      std::vector<int64_t> bounds = pause_splits(
          best, first_frame, keep_from, std::min(cut, end_frame), config.ctc.blank, pause_frames);
      bounds.push_back(end_frame);
      const BlockEnergy energy(buffer, keep_from * frame, stop, rate);
      for (size_t k = 0; k + 1 < bounds.size(); ++k) {
        const auto [from, to] = trim_silence(
            bounds[k], bounds[k + 1], best, first_frame, config.ctc.blank, buffer, energy, frame,
            rate, model.causal() ? kTrimCausalLeadSeconds : kTrimLeadSeconds);
        MASR_LOG_DEBUG("stretch: samples %lld-%lld of frames %lld-%lld",
                       static_cast<long long>(from), static_cast<long long>(to),
                       static_cast<long long>(bounds[k]), static_cast<long long>(bounds[k + 1]));
        if (to - from < frame) continue;
        ++stretches;
        const auto [seg_enc, seg_lens] =
            model.encode(at::from_blob(buffer.samples.data() + (from - buffer.start),
                                       {1, to - from}, at::kFloat),
                         at::ones({1}, at::kFloat));
        const int64_t frames = std::min(seg_lens.to(at::kCPU).item<int64_t>(), seg_enc.size(1));
        const CtcHypothesis hyp =
            search_segment(model, seg_enc.narrow(1, 0, frames).contiguous(),
                           model.ctc_log_probs(seg_enc).narrow(1, 0, frames).contiguous(), search,
                           config, pieces, lm);
        append_hypothesis(all, hyp, (from + frame / 2) / frame, marks.separator, pause_frames,
                          marks.starts_word, marks.separators);
      }
      keep_from = cut;
    } else if (cut > keep_from) {
      const int64_t from = keep_from - first_frame;
      const CtcHypothesis hyp = search_segment(
          model, enc.narrow(1, from, cut - keep_from).contiguous(),
          ctc.narrow(1, from, cut - keep_from).contiguous(), search, config, pieces, lm);
      append_hypothesis(all, hyp, keep_from, marks.separator, pause_frames, marks.starts_word,
                        marks.separators);
      keep_from = cut;
    }
    MASR_LOG_DEBUG("chunk %zu: samples %lld-%lld, frames kept up to %lld%s", windows,
                   static_cast<long long>(start), static_cast<long long>(stop),
                   static_cast<long long>(cut), last ? " (last)" : "");
    if (progress) progress(static_cast<double>(std::min(cut * frame, stop)) / rate);
    if (last) break;
    start = std::max<int64_t>(0, cut * frame - overlap);
    buffer.drop_before(start);
  }
  const int64_t samples = buffer.end();
  if (samples == 0) throw_input_error("decode: the audio holds no samples");
  if (stats != nullptr) *stats = {windows, stretches, static_cast<double>(samples) / rate};
  Transcript t;
  t.tokens = all.tokens;
  t.text = model.detokenize(all.tokens);
  t.score = all.score;
  t.nbest.emplace_back(t.text, t.score);
  t.words = word_timings(all, pieces, model.frame_seconds(), config.word_start_shift,
                         static_cast<double>(samples) / rate);
  return t;
}

}  // namespace masr::decode
