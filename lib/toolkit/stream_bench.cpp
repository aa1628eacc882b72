// lib/toolkit/stream_bench.cpp
// Each utterance is streamed as a live source would deliver it: chunk k arrives when its last
// sample has been spoken ((k+1) * chunk of audio time) and is decoded as soon as it arrives and
// the previous chunk is done (a queue on a simulated clock: no sleeping, so the repetitions take
// compute time only). Per utterance:
//   first-token latency: when the first token is shown, minus the audio time at the end of the
//     encoder frame where it starts (chunking, the front end's look-ahead and compute);
//   end-of-speech latency: when the final result is ready, minus the end of the audio (the last
//     chunk's decoding and the flush; an endpoint adds --endpoint-seconds of waiting to it).
// RTF: compute seconds per audio second. The model: --model (a trained causal model), else
// --hparams or hparams/CTC/conmamba_synth_gpu.yaml made causal, with random weights (latency
// does not depend on the weights; which frames emit tokens does).
#include "toolkit/stream_bench.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "audio/audio_reader.h"
#include "core/error.h"
#include "decode/file_transcriber.h"
#include "decode/streaming_recognizer.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "runtime/benchmark.h"
#include "toolkit/step_bench.h"

namespace masr::toolkit {
namespace {

using Clock = std::chrono::steady_clock;

struct Latencies {
  std::vector<double> first_token, end_of_speech;  // seconds
  int64_t replays = 0;                             // floor replays (models/asr_stream.h)
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One utterance through a new stream; appends its latencies (seconds).
void stream_one(const decode::StreamingRecognizer& recognizer, const std::vector<float>& wav,
                size_t chunk, Latencies& out) {
  const double rate = recognizer.sample_rate();
  auto stream = recognizer.create_stream();
  double clock = 0.0;  // simulated wall time, seconds from the start of the audio
  bool first = false;
  for (size_t at = 0; at < wav.size(); at += chunk) {
    const size_t n = std::min(chunk, wav.size() - at);
    clock = std::max(clock, static_cast<double>(at + n) / rate);  // the chunk has arrived
    const auto t0 = Clock::now();
    stream->accept_waveform(wav.data() + at, n);
    while (stream->decode_ready()) stream->decode();
    clock += seconds_since(t0);
    const auto& hyp = stream->hypothesis();
    if (!first && !hyp.tokens.empty()) {
      first = true;
      out.first_token.push_back(clock - (hyp.start_frames[0] + 1) * recognizer.frame_seconds());
    }
  }
  const auto t0 = Clock::now();
  stream->input_finished();
  while (stream->decode_ready()) stream->decode();
  (void)stream->result();
  clock += seconds_since(t0);
  out.replays += stream->replays();
  out.end_of_speech.push_back(clock - static_cast<double>(wav.size()) / rate);
}

double percentile_ms(std::vector<double> v, double p) {
  if (v.empty()) return -1.0;
  runtime::BenchResult r;
  r.seconds = std::move(v);
  return 1000.0 * r.percentile(p);
}

std::shared_ptr<models::AsrModel> bench_model(const runtime::BenchSettings& settings) {
  if (!settings.model.empty()) return decode::load_asr_model(settings.model);
  const std::string file =
      settings.hparams.empty() ? "hparams/CTC/conmamba_synth_gpu.yaml" : settings.hparams;
  std::ifstream in(file);
  if (!in) throw_io_error("bench stream: cannot read hparams '" + file + "'");
  std::stringstream text;
  text << in.rdbuf();
  std::string yaml = text.str();
  for (size_t at; (at = yaml.find("causal: False")) != std::string::npos;)
    yaml.replace(at, 13, "causal: True");
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  auto model = models::AsrModel::from_hparams(hparams::load_text(yaml, options, file));
  prime_for_evaluation(*model, model->fbank().config().sample_rate);
  return model;
}

std::vector<runtime::BenchResult> run_stream_bench(const runtime::BenchSettings& settings) {
  const auto model = bench_model(settings);
  const std::vector<std::string> pieces = placeholder_pieces(model->vocab_size());
  decode::StreamingConfig config;
  config.endpoint_seconds = config.idle_seconds = 0;  // one final per utterance
  const decode::StreamingRecognizer recognizer(model, pieces, config);
  const auto wavs = bench_clips(settings.inputs, recognizer.sample_rate());
  double audio_seconds = 0;
  for (const auto& w : wavs)
    audio_seconds += static_cast<double>(w.size()) / recognizer.sample_rate();
  const int threads_before = at::get_num_threads();
  std::vector<runtime::BenchResult> results;
  for (const int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (const int chunk_ms : {100, 320}) {
      const size_t chunk = static_cast<size_t>(chunk_ms) * recognizer.sample_rate() / 1000;
      Latencies timed;
      int calls = 0;
      auto r = runtime::measure(
          "stream/" + std::to_string(chunk_ms) + "ms/t" + std::to_string(threads), settings, [&] {
            Latencies l;
            for (const auto& w : wavs) stream_one(recognizer, w, chunk, l);
            if (++calls > settings.warmup) {  // latencies of the timed repetitions only
              timed.first_token.insert(timed.first_token.end(), l.first_token.begin(),
                                       l.first_token.end());
              timed.end_of_speech.insert(timed.end_of_speech.end(), l.end_of_speech.begin(),
                                         l.end_of_speech.end());
              timed.replays += l.replays;
            }
          });
      r.work = audio_seconds;
      r.work_unit = "audio-s";
      r.metrics = {{"rtf", r.median() / audio_seconds},
                   {"first_token_p50_ms", percentile_ms(timed.first_token, 50)},
                   {"first_token_p90_ms", percentile_ms(timed.first_token, 90)},
                   {"end_of_speech_p50_ms", percentile_ms(timed.end_of_speech, 50)},
                   {"end_of_speech_p90_ms", percentile_ms(timed.end_of_speech, 90)},
                   {"replays_per_utterance",
                    static_cast<double>(timed.replays) /
                        static_cast<double>(std::max<size_t>(1, timed.end_of_speech.size()))}};
      r.note = std::to_string(wavs.size()) + " utterances, " + std::to_string(audio_seconds) +
               " s, " + std::to_string(model->num_parameters()) + " parameters (" +
               (settings.model.empty() ? "random weights" : settings.model) + "), chunk " +
               std::to_string(chunk_ms) + " ms, " + std::to_string(threads) +
               " threads; latencies over the timed repetitions";
      results.push_back(std::move(r));
    }
  }
  at::set_num_threads(threads_before);
  return results;
}

}  // namespace

std::vector<std::vector<float>> bench_clips(std::vector<std::string> files, int rate) {
  if (files.empty()) {
    const std::string examples = "models/conmamba-ctc-synth-en/examples/";
    for (const char* name : {"en_gb_x_gbclan_m1-000167.wav", "en_gb_x_gbcwmd_m5-002757.wav",
                             "en_us_nyc_m4-000499.wav"})
      files.push_back(examples + name);
  }
  std::vector<std::vector<float>> out;
  for (const auto& f : files) {
    out.push_back(audio::read_audio(f, rate).samples);
    if (out.back().empty()) throw_input_error("bench: '" + f + "' holds no samples");
  }
  return out;
}

void register_stream_bench() {
  runtime::register_benchmark(
      {"stream",
       "Streaming recognition with a causal ConMamba on the CPU, 1 and 2 threads, chunks of 100 "
       "and 320 ms: first-token and end-of-speech latency p50/p90, RTF (--model: a trained causal "
       "model; default: hparams/CTC/conmamba_synth_gpu.yaml made causal, random weights; "
       "--input: audio files)",
       run_stream_bench});
}

}  // namespace masr::toolkit
