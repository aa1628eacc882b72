// lib/decode/streaming_recognizer.h
// Streaming recognition with a causal ConMamba CTC model, shaped like sherpa-onnx's
// OnlineRecognizer: one shared, read-only recognizer (the model) creates streams; a stream takes
// audio in chunks of any size, decodes what it can, gives partial results, detects the end of an
// utterance from trailing CTC blanks, and after reset() carries on with the next utterance.
//
//   StreamingRecognizer recognizer(model);
//   auto stream = recognizer.create_stream();
//   stream->accept_waveform(samples, n);          // any number of times
//   while (stream->decode_ready()) stream->decode();
//   print(stream->result());                     // partial
//   if (stream->is_endpoint()) { print(stream->result()); stream->reset(); }   // final
//   stream->input_finished(); stream->decode();   // the last final
//
// Exactness: fed in chunks of any size, an utterance's final tokens and text are those of
// `mamba-asr decode --search greedy` on the same audio (models/asr_stream.h; tests/decode/
// test_streaming.cpp), with FloorMode::kExact and no endpoint inside it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/asr_model_recognizer.h"
#include "decode/ctc_greedy.h"
#include "decode/transcript.h"
#include "models/asr_stream.h"

namespace masr::decode {

struct StreamingConfig {
  models::FloorMode floor = models::FloorMode::kExact;
  // Seconds of CTC blanks after the last token that end an utterance (0: never).
  double endpoint_seconds = 0.8;
  // Seconds of blanks with no token at all that end an (empty) utterance, which bounds the
  // memory of a stream that hears only silence (0: never).
  double idle_seconds = 5.0;
  double word_start_shift = kCtcWordStartShift;  // as decode's (transcript.h)
  void validate() const;  // throws a config error naming the option
  std::string to_string() const;
};

struct StreamingResult {
  std::string text;
  std::vector<int64_t> tokens;
  std::vector<WordTiming> words;  // times in seconds from the start of the stream
  double start = 0.0;             // the utterance's audio, seconds from the start of the stream
  double end = 0.0;
  bool is_final = false;  // at an endpoint or after input_finished()
};

class StreamingRecognizer;

// The per-stream state (the recognizer that created it must outlive it): audio not yet decoded, the model's caches (models::AsrStream), the CTC
// greedy hypothesis, and where the current utterance starts in the stream.
class OnlineStream {
 public:
  void accept_waveform(const float* samples, size_t n);  // at sample_rate()
  void accept_waveform(const std::vector<float>& samples) {
    accept_waveform(samples.data(), samples.size());
  }
  void input_finished();
  // Whether decode() has anything to do (a new encoder frame's worth of audio, or the end).
  bool decode_ready() const;
  void decode();
  StreamingResult result() const;
  bool is_endpoint() const { return endpoint_; }
  // The input is finished and decoded: result() is the last utterance's final.
  bool is_finished() const;
  // Starts the next utterance at the endpoint: audio after it is decoded again from there.
  void reset();

  const CtcHypothesis& hypothesis() const { return hyp_; }
  int64_t replays() const { return replays_ + (asr_ ? asr_->replays() : 0); }
  double seconds_received() const;

 private:
  friend class StreamingRecognizer;
  explicit OnlineStream(const StreamingRecognizer& recognizer);
  void start_utterance();
  int64_t samples_per_frame() const;  // audio per encoder frame (640 at 16 kHz)

  const StreamingRecognizer& recognizer_;
  std::unique_ptr<models::AsrStream> asr_;
  CtcHypothesis hyp_;
  int64_t frames_ = 0;             // encoder frames of the utterance decoded
  int64_t offset_ = 0;             // stream sample where the utterance starts
  int64_t received_ = 0;           // samples received in all
  std::vector<float> retained_;    // samples from offset_ + retained_from_ on (for the cut)
  int64_t retained_from_ = 0;      // utterance sample of retained_[0]
  int64_t cut_frame_ = -1;         // encoder frames kept at an endpoint
  bool endpoint_ = false, finished_input_ = false;
  int64_t replays_ = 0;
};

class StreamingRecognizer {
 public:
  // Throws a config error for a model that cannot stream (bidirectional Mamba, non-causal conv,
  // attention encoder, ...: it says why and points at `decode`) or without a tokenizer.
  explicit StreamingRecognizer(std::shared_ptr<models::AsrModel> model,
                               StreamingConfig config = {});
  // A model without a tokenizer: token i reads as pieces[i] (tests, benchmarks).
  StreamingRecognizer(std::shared_ptr<models::AsrModel> model, std::vector<std::string> pieces,
                      StreamingConfig config = {});

  std::unique_ptr<OnlineStream> create_stream() const;
  int sample_rate() const { return text_.sample_rate(); }
  double frame_seconds() const { return text_.frame_seconds(); }
  const StreamingConfig& config() const { return config_; }

 private:
  friend class OnlineStream;
  void check() const;

  std::shared_ptr<models::AsrModel> model_;
  AsrModelRecognizer text_;  // pieces, detokenize, frame shift: the same as decode's
  StreamingConfig config_;
};

}  // namespace masr::decode
