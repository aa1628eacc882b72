// lib/toolkit/long_audio_bench.cpp
// The audio is made on the fly, never held whole: the input clips (default: the bundled model's
// examples) played in turn, each followed by 0.5 s of silence, until the length is reached. So
// the memory measured is the decoder's (chunked decoding, decode/chunked_decoder.h, with decode's
// defaults), not the recording's. Per length: the process's peak resident set (VmHWM, reset
// before the length's first run, as /usr/bin/time -v reports it for a whole run) and the time of
// each run; lengths run longest-last, and the repetitions of a length stop at --time-limit.
#include "toolkit/long_audio_bench.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "decode/chunked_decoder.h"
#include "decode/recognizer.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "runtime/benchmark.h"
#include "runtime/peak_memory.h"
#include "toolkit/step_bench.h"
#include "toolkit/stream_bench.h"

namespace masr::toolkit {
namespace {

constexpr double kPauseSeconds = 0.5;  // silence after every clip
constexpr double kMiB = 1024.0 * 1024.0;
const std::vector<double> kDefaultLengths = {600.0, 3600.0};

// The clips in turn, each followed by `pause` zero samples, until `total` samples.
class LoopingSampleStream : public decode::SampleStream {
 public:
  LoopingSampleStream(const std::vector<std::vector<float>>& clips, int64_t pause, int64_t total)
      : clips_(clips), pause_(pause), left_(total) {}

  size_t read(std::vector<float>& out, size_t count) override {
    size_t n = 0;
    while (n < count && left_ > 0) {
      const auto& clip = clips_[clip_];
      const int64_t length = static_cast<int64_t>(clip.size()) + pause_;
      const int64_t take =
          std::min<int64_t>({length - at_, static_cast<int64_t>(count - n), left_});
      for (int64_t i = at_; i < at_ + take; ++i) {
        out.push_back(i < static_cast<int64_t>(clip.size()) ? clip[i] : 0.0f);
      }
      at_ += take, left_ -= take, n += static_cast<size_t>(take);
      if (at_ == length) at_ = 0, clip_ = (clip_ + 1) % clips_.size();
    }
    return n;
  }

 private:
  const std::vector<std::vector<float>>& clips_;
  const int64_t pause_;
  int64_t left_;
  size_t clip_ = 0;
  int64_t at_ = 0;  // position in the current clip + pause
};

std::string mib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.0f MiB", bytes / kMiB);
  return b;
}

std::vector<runtime::BenchResult> run_long_audio(const runtime::BenchSettings& settings) {
  if (settings.model.empty() == settings.hparams.empty()) {
    throw Error(ErrorKind::kUsage,
                "bench long-audio: give a trained model (--model models/conmamba-ctc-synth-en) or "
                "a model's hparams for random weights (--hparams hparams/CTC/conmamba_large.yaml)");
  }
  decode::RecognizerConfig rc;
  rc.model = settings.model;
  rc.device = settings.device;
  rc.decode.search = decode::parse_search(settings.search);
  rc.decode.precision = settings.precision;
  std::unique_ptr<decode::Recognizer> recognizer;
  std::string model_name = settings.model;
  if (!settings.model.empty()) {
    recognizer = decode::Recognizer::open(rc);
  } else {  // random weights: the memory of a model size, not of a trained model's output
    hparams::LoadOptions options;
    options.placeholder_value = "unused";
    auto model = models::AsrModel::from_hparams(hparams::load_file(settings.hparams, options));
    prime_for_evaluation(*model, model->fbank().config().sample_rate);
    const int64_t vocab = model->vocab_size();
    recognizer = decode::Recognizer::from_model(std::move(model), rc, placeholder_pieces(vocab));
    model_name = settings.hparams + " (random weights)";
  }
  const int rate = recognizer->sample_rate();

  const std::vector<std::vector<float>> clips = bench_clips(settings.inputs, rate);
  const decode::ChunkingOptions chunking;  // decode's defaults
  const auto pause = static_cast<int64_t>(kPauseSeconds * rate);

  // One decode of `seconds` of the looped clips; returns its wall time.
  size_t words = 0, windows = 0, stretches = 0;
  auto decode_once = [&](double seconds) {
    LoopingSampleStream stream(clips, pause, static_cast<int64_t>(seconds * rate));
    decode::ChunkedDecodeStats stats;
    const auto t0 = std::chrono::steady_clock::now();
    const decode::Transcript t =
        decode::decode_chunked(recognizer->recognition_model(), stream, recognizer->config(),
                               chunking, nullptr, {}, &stats);
    runtime::synchronize_device(settings.device);
    words = t.words.size(), windows = stats.windows, stretches = stats.stretches;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int i = 0; i < settings.warmup; ++i) (void)decode_once(2 * chunking.chunk_seconds);

  std::vector<double> lengths = settings.lengths.empty() ? kDefaultLengths : settings.lengths;
  std::sort(lengths.begin(), lengths.end());
  std::vector<runtime::BenchResult> results;
  for (const double length : lengths) {
    char name[64];
    std::snprintf(name, sizeof(name), "long-audio/%gs", length);
    std::cerr << "bench long-audio: " << length << " s of audio, up to " << settings.repeat
              << " runs within " << settings.time_limit << " s\n";
    runtime::BenchResult r;
    r.name = name;
    runtime::reset_peak_memory(settings.device);
    const double start_bytes = static_cast<double>(runtime::peak_memory(settings.device));
    double spent = 0.0;
    while (static_cast<int>(r.seconds.size()) < settings.repeat &&
           (r.seconds.empty() || spent + r.seconds.back() <= settings.time_limit)) {
      r.seconds.push_back(decode_once(length));
      spent += r.seconds.back();
    }
    const double peak = static_cast<double>(runtime::peak_memory(settings.device));
    r.work = length;
    r.work_unit = "audio-s";
    r.metrics = {{"rtf", r.median() / length},
                 {"peak_bytes", peak},
                 {"start_bytes", start_bytes},
                 {"windows", static_cast<double>(windows)},
                 {"stretches", static_cast<double>(stretches)},
                 {"words", static_cast<double>(words)}};
    r.note = model_name + ", " + std::to_string(clips.size()) + " clips looped with " +
             "0.5 s pauses, " + decode::search_name(recognizer->search()) + ", chunks of " +
             std::to_string(static_cast<int>(chunking.chunk_seconds)) + " s, " +
             std::to_string(at::get_num_threads()) + " threads, peak " +
             runtime::peak_memory_kind(settings.device) + " (" + mib(start_bytes) +
             " at the start)";
    if (static_cast<int>(r.seconds.size()) < settings.repeat) {
      r.note += ", repeat " + std::to_string(r.seconds.size()) + " of " +
                std::to_string(settings.repeat) + " (--time-limit)";
    }
    if (settings.memory_limit_mib > 0 && peak > settings.memory_limit_mib * kMiB) {
      r.failed =
          "peak " + mib(peak) + " over --memory-limit " + mib(settings.memory_limit_mib * kMiB);
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

void register_long_audio_bench() {
  runtime::register_benchmark(
      {"long-audio",
       "A long recording decoded in chunks as `decode` does (--model, or --hparams for random "
       "weights; --input clips, default the bundled examples, looped with 0.5 s pauses; "
       "--lengths seconds, default 600,3600; --search): peak memory and RTF per length; "
       "--memory-limit MIB fails the run above it",
       run_long_audio, /*only_when_named=*/true});
}

}  // namespace masr::toolkit
