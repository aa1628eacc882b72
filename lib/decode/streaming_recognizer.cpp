// lib/decode/streaming_recognizer.cpp
// Streams: encoder frames from models::AsrStream, CTC greedy over each new piece joined as CTC
// collapses repeats (chunked_decoder's append_hypothesis), endpoints from the blank runs.
#include "decode/streaming_recognizer.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "decode/chunked_decoder.h"
#include "models/asr_model.h"

namespace masr::decode {
namespace {

// The first frame e in [from, frames) at which the frames since the last token (or since frame
// 0) are all blank and at least `speech` of them (a token came before) or `idle` (none did); -1
// when none. Between greedy tokens every frame is blank, so the runs follow from token frames.
int64_t endpoint_frame(const CtcHypothesis& hyp, int64_t from, int64_t frames, int64_t speech,
                       int64_t idle) {
  const size_t n = hyp.tokens.size();
  for (size_t i = 0; i <= n; ++i) {  // the run before token i (i == n: the trailing run)
    const int64_t run_start = i == 0 ? 0 : hyp.end_frames[i - 1];
    const int64_t run_end = i == n ? frames : hyp.start_frames[i];
    const int64_t need = i == 0 ? idle : speech;
    if (need <= 0 || run_end <= from) continue;
    const int64_t e = std::max(from, run_start + need - 1);
    if (e < run_end) return e;
  }
  return -1;
}

// Keeps the tokens that start before frame `frames`.
void truncate(CtcHypothesis& hyp, int64_t frames) {
  size_t keep = 0;
  while (keep < hyp.tokens.size() && hyp.start_frames[keep] < frames) ++keep;
  hyp.tokens.resize(keep);
  hyp.start_frames.resize(keep);
  hyp.end_frames.resize(keep);
  hyp.token_logp.resize(keep);
}

int64_t frames_of(double seconds, double frame_seconds) {
  return seconds > 0 ? std::max<int64_t>(1, std::llround(seconds / frame_seconds)) : 0;
}

}  // namespace

void StreamingConfig::validate() const {
  auto check = [](double v, const char* name) {
    if (!(v >= 0) || !std::isfinite(v)) {
      throw_config_error(std::string("stream: ") + name + " must be >= 0 seconds (0: never), not " +
                         std::to_string(v));
    }
  };
  check(endpoint_seconds, "--endpoint-seconds");
  check(idle_seconds, "--idle-seconds");
  if (!(std::abs(word_start_shift) <= 1.0)) {
    throw_config_error("stream: word start shift must be between -1 and 1 seconds");
  }
}

std::string StreamingConfig::to_string() const {
  std::ostringstream out;
  out << "floor=" << (floor == models::FloorMode::kExact ? "exact" : "running")
      << " endpoint_seconds=" << endpoint_seconds << " idle_seconds=" << idle_seconds
      << " word_start_shift=" << word_start_shift;
  return out.str();
}

StreamingRecognizer::StreamingRecognizer(std::shared_ptr<models::AsrModel> model,
                                         StreamingConfig config)
    : model_(model), text_(model), config_(config) {
  check();
}

StreamingRecognizer::StreamingRecognizer(std::shared_ptr<models::AsrModel> model,
                                         std::vector<std::string> pieces, StreamingConfig config)
    : model_(model), text_(model, std::move(pieces)), config_(config) {
  check();
}

void StreamingRecognizer::check() const {
  config_.validate();
  if (model_->device() != c10::Device(c10::kCPU)) {
    throw_config_error("stream: streaming runs on the CPU; load the model there (--device cpu)");
  }
  models::causal_conmamba(model_->transformer());  // throws for a model that cannot stream
}

std::unique_ptr<OnlineStream> StreamingRecognizer::create_stream() const {
  return std::unique_ptr<OnlineStream>(new OnlineStream(*this));
}

OnlineStream::OnlineStream(const StreamingRecognizer& recognizer) : recognizer_(recognizer) {
  start_utterance();
}

void OnlineStream::start_utterance() {
  if (asr_) replays_ += asr_->replays();
  asr_ = std::make_unique<models::AsrStream>(recognizer_.model_, recognizer_.config_.floor);
  hyp_ = CtcHypothesis();
  frames_ = 0;
  cut_frame_ = -1;
  endpoint_ = false;
}

void OnlineStream::accept_waveform(const float* samples, size_t n) {
  if (finished_input_) {
    throw_input_error("stream: audio given after input_finished(); create a new stream");
  }
  retained_.insert(retained_.end(), samples, samples + n);
  received_ += static_cast<int64_t>(n);
  if (!endpoint_) asr_->accept(samples, n);
}

void OnlineStream::input_finished() {
  finished_input_ = true;
  if (!endpoint_) asr_->finish();
}

bool OnlineStream::decode_ready() const { return !endpoint_ && asr_->ready(); }

bool OnlineStream::is_finished() const {
  return finished_input_ && !endpoint_ && !asr_->ready();
}

int64_t OnlineStream::samples_per_frame() const {
  return std::llround(recognizer_.frame_seconds() * recognizer_.sample_rate());
}

double OnlineStream::seconds_received() const {
  return static_cast<double>(received_) / recognizer_.sample_rate();
}

void OnlineStream::decode() {
  if (endpoint_) return;
  const models::AsrStream::Frames frames = asr_->advance();
  if (frames.out.defined() && frames.out.size(0) > 0) {
    c10::InferenceMode inference;
    const at::Tensor log_probs = recognizer_.model_->ctc_log_probs(frames.out.unsqueeze(0));
    const CtcHypothesis piece =
        ctc_greedy_search(log_probs, {}, recognizer_.model_->blank_index()).front();
    if (frames.first == 0) hyp_ = CtcHypothesis();  // a replay recomputed every frame
    append_hypothesis(hyp_, piece, frames.first, -1, 0, {}, {});
    const int64_t checked = frames.first == 0 ? std::min(frames_, frames.out.size(0)) : frames_;
    frames_ = frames.first + frames.out.size(0);
    const double shift = recognizer_.frame_seconds();
    const int64_t e = endpoint_frame(hyp_, checked, frames_,
                                     frames_of(recognizer_.config_.endpoint_seconds, shift),
                                     frames_of(recognizer_.config_.idle_seconds, shift));
    if (e >= 0) {
      endpoint_ = true;
      cut_frame_ = e + 1;
      truncate(hyp_, cut_frame_);
      return;
    }
  }
  // No endpoint before frames_: the audio before it is never decoded again.
  const int64_t drop = frames_ * samples_per_frame() - retained_from_;
  if (drop > 0 && drop <= static_cast<int64_t>(retained_.size())) {
    retained_.erase(retained_.begin(), retained_.begin() + drop);
    retained_from_ += drop;
  }
}

void OnlineStream::reset() {
  if (!endpoint_) {  // a reset without an endpoint starts after everything received
    retained_.clear();
    offset_ = received_;
    retained_from_ = 0;
    start_utterance();
    if (finished_input_) asr_->finish();
    return;
  }
  const int64_t cut = cut_frame_ * samples_per_frame();  // utterance samples before the cut
  const int64_t skip = std::min<int64_t>(static_cast<int64_t>(retained_.size()),
                                         std::max<int64_t>(0, cut - retained_from_));
  std::vector<float> rest(retained_.begin() + skip, retained_.end());
  offset_ += retained_from_ + skip;
  retained_from_ = 0;
  retained_.clear();
  start_utterance();
  retained_ = std::move(rest);
  asr_->accept(retained_.data(), retained_.size());
  if (finished_input_) asr_->finish();
}

StreamingResult OnlineStream::result() const {
  StreamingResult r;
  r.tokens = hyp_.tokens;
  r.text = recognizer_.text_.detokenize(hyp_.tokens);
  const int rate = recognizer_.sample_rate();
  const double per_frame = recognizer_.frame_seconds();
  const double length = endpoint_ ? cut_frame_ * per_frame
                                  : static_cast<double>(asr_->samples()) / rate;
  r.start = static_cast<double>(offset_) / rate;
  r.end = r.start + length;
  r.words = word_timings(hyp_, recognizer_.text_.pieces(), per_frame,
                         recognizer_.config_.word_start_shift, length);
  for (auto& w : r.words) w.start += r.start, w.end += r.start;
  r.is_final = endpoint_ || is_finished();
  return r;
}

}  // namespace masr::decode
