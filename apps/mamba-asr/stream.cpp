// apps/mamba-asr/stream.cpp
// `mamba-asr stream -m MODEL INPUT`: live recognition with a causal ConMamba model, audio
// read in chunks from a file or stdin, partial and final results as JSON lines on stdout.
#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "audio/audio_reader.h"
#include "audio/raw_pcm.h"
#include "bundled_model.h"
#include "commands.h"
#include "core/error.h"
#include "core/log.h"
#include "decode/file_transcriber.h"
#include "decode/sample_stream.h"
#include "decode/streaming_recognizer.h"
#include "decode/transcript.h"
#include "models/asr_model.h"
#include "runtime/device.h"

namespace masr::cli {
namespace {

struct StreamOptions {
  std::string model;
  std::string input;
  std::string raw_pcm;
  int chunk_ms = 100;
  bool realtime = false;
  bool partials = true;
  std::string floor = "exact";
  decode::StreamingConfig config;
};

// Headerless PCM from stdin, read as it arrives (at the model's rate: a live source is not
// resampled).
class RawPcmStdin : public decode::SampleStream {
 public:
  explicit RawPcmStdin(const audio::RawPcmFormat& format) : format_(format) {}
  size_t read(std::vector<float>& out, size_t count) override {
    std::string bytes(count * static_cast<size_t>(format_.bytes_per_sample()), '\0');
    std::cin.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(std::cin.gcount()));
    if (bytes.empty()) return 0;
    if (first_) audio::warn_if_audio_header(bytes.substr(0, 16), "stdin");
    first_ = false;
    const audio::Audio a = audio::decode_raw_pcm(bytes, format_, "stdin", format_.sample_rate);
    out.insert(out.end(), a.samples.begin(), a.samples.end());
    return a.samples.size();
  }

 private:
  audio::RawPcmFormat format_;
  bool first_ = true;
};

std::unique_ptr<decode::SampleStream> open_input(const StreamOptions& o, int rate) {
  if (!o.raw_pcm.empty()) {
    const audio::RawPcmFormat format = audio::parse_raw_pcm_spec(o.raw_pcm);
    if (o.input != "-") {
      return std::make_unique<decode::MemorySampleStream>(
          audio::read_raw_pcm_file(o.input, format, rate).samples);
    }
    if (format.sample_rate != rate) {
      throw Error(ErrorKind::kUsage,
                  "stream: --raw-pcm " + o.raw_pcm + " on stdin must be at the model's rate (" +
                      std::to_string(rate) + " Hz); record at that rate (arecord -r " +
                      std::to_string(rate) + ") or resample before the pipe (sox, ffmpeg -ar)");
    }
    std::ios::sync_with_stdio(false);
    return std::make_unique<RawPcmStdin>(format);
  }
  if (o.input == "-") {  // a whole file on stdin, any format the reader takes
    std::string bytes((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return std::make_unique<decode::MemorySampleStream>(
        audio::read_audio_bytes(bytes, "stdin", rate).samples);
  }
  if (auto file = decode::open_file_sample_stream(o.input, rate)) return file;
  return std::make_unique<decode::MemorySampleStream>(audio::read_audio(o.input, rate).samples);
}

// The text without the spaces a trailing or lone "▁" leaves.
std::string trimmed(const std::string& text) {
  const size_t first = text.find_first_not_of(' ');
  return first == std::string::npos ? ""
                                    : text.substr(first, text.find_last_not_of(' ') - first + 1);
}

void print(const decode::StreamingResult& r) {
  nlohmann::json j;
  j["type"] = r.is_final ? "final" : "partial";
  j["text"] = trimmed(r.text);
  if (r.is_final) {
    j["words"] = nlohmann::json::array();
    for (const auto& w : r.words) {
      j["words"].push_back({{"word", w.word},
                            {"start", decode::json_seconds(w.start)},
                            {"end", decode::json_seconds(w.end)},
                            {"confidence", w.confidence}});
    }
  }
  j["start"] = decode::json_seconds(r.start);
  j["end"] = decode::json_seconds(r.end);
  std::cout << j.dump() << "\n" << std::flush;
}

int run_stream(const StreamOptions& o) {
  if (o.chunk_ms < 1) throw Error(ErrorKind::kUsage, "stream: --chunk-ms must be at least 1");
  decode::StreamingConfig config = o.config;
  config.floor = o.floor == "running" ? models::FloorMode::kRunning : models::FloorMode::kExact;
  const auto model = decode::load_asr_model(o.model);
  const decode::StreamingRecognizer recognizer(model, config);
  const int rate = recognizer.sample_rate();
  const auto input = open_input(o, rate);
  auto stream = recognizer.create_stream();
  const size_t chunk = static_cast<size_t>(static_cast<int64_t>(o.chunk_ms) * rate / 1000);
  std::string shown;
  size_t finals = 0;
  auto print_final = [&](const decode::StreamingResult& final) {
    if (trimmed(final.text).empty()) return;  // silence ended, nothing was said
    print(final);
    ++finals;
  };
  auto drain = [&] {
    while (stream->decode_ready() || stream->is_endpoint()) {
      stream->decode();
      if (stream->is_endpoint()) {
        print_final(stream->result());
        stream->reset();
        shown.clear();
      }
    }
    const auto partial = stream->result();
    if (o.partials && !partial.is_final && trimmed(partial.text) != shown) {
      print(partial);
      shown = trimmed(partial.text);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<float> samples;
  size_t total = 0;
  while (input->read(samples, chunk) > 0) {
    total += samples.size();
    if (o.realtime) {  // the chunk is not complete before its last sample's time
      std::this_thread::sleep_until(start + std::chrono::duration<double>(
                                                static_cast<double>(total) / rate));
    }
    stream->accept_waveform(samples);
    samples.clear();
    drain();
  }
  stream->input_finished();
  drain();
  print_final(stream->result());
  MASR_LOG_INFO("stream: %.2f s of audio, %zu utterance%s", static_cast<double>(total) / rate,
                finals, finals == 1 ? "" : "s");
  MASR_LOG_DEBUG(
      "stream: the features' 80 dB floor rose %lld times (--floor exact re-encodes "
      "the utterance then)",
      static_cast<long long>(stream->replays()));
  return 0;
}

}  // namespace

Runner add_stream_command(CLI::App& app, GlobalOptions& global) {
  auto options = std::make_shared<StreamOptions>();
  CLI::App* cmd = app.add_subcommand(
      "stream",
      "Recognize live audio with a causal ConMamba CTC model.\n\n"
      "Audio is decoded chunk by chunk as it arrives; JSON lines go to stdout:\n"
      "  {\"type\":\"partial\",\"text\":...,\"start\":s,\"end\":s} while an utterance goes on,\n"
      "  {\"type\":\"final\",\"text\":...,\"words\":[{\"word\":..,\"start\":..,\"end\":..,"
      "\"confidence\":..}],\"start\":s,\"end\":s}\n"
      "when --endpoint-seconds of silence (CTC blanks) end it, and at the end of the input (never\n"
      "for silence alone). Times are seconds from the start of the stream, to the millisecond;\n"
      "words never overlap. A damaged or truncated file is an error, as in decode.\n"
      "Fed any chunk size, an utterance's final text is exactly what `decode --search greedy`\n"
      "gives for its audio. Models with bidirectional Mamba layers (the default recipes) need\n"
      "whole files: use `decode` for them.\n\n"
      "Without --model, the bundled causal English model (models/" +
          std::string(kDefaultStreamModel) +
          ":\nsynthetic speech only) or $MASR_MODEL.\n\n"
          "Examples:\n"
          "  mamba-asr stream --realtime talk.wav\n"
          "  arecord -f S16_LE -r 16000 | mamba-asr stream -m M --raw-pcm s16le:16000 -\n"
          "  ffmpeg -i talk.mp4 -f s16le -ac 1 -ar 16000 - | mamba-asr stream -m M "
          "--raw-pcm s16le:16000 -");
  StreamOptions& o = *options;
  cmd->add_option("-m,--model", o.model,
                  std::string("A trained causal model (file or folder); without it, $MASR_MODEL "
                              "or the bundled models/") +
                      kDefaultStreamModel);
  cmd->add_option("input", o.input, "An audio file, or - for stdin")->required();
  cmd->add_option("--raw-pcm", o.raw_pcm,
                  "The input is headerless mono PCM: ENCODING:RATE, ENCODING s16le or f32le "
                  "(on stdin at the model's rate), e.g. s16le:16000");
  cmd->add_option("--chunk-ms", o.chunk_ms, "Audio per chunk fed to the recognizer, in ms")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cmd->add_flag("--realtime", o.realtime, "Pace a file at real speed, as a microphone would");
  cmd->add_option("--endpoint-seconds", o.config.endpoint_seconds,
                  "Blank seconds after speech that end an utterance (0: only at the end)")
      ->capture_default_str();
  cmd->add_option("--idle-seconds", o.config.idle_seconds,
                  "Blank seconds with no speech that restart the stream (0: never)")
      ->capture_default_str();
  cmd->add_option("--floor", o.floor,
                  "exact: the 80 dB feature floor as offline (replays when a louder frame comes); "
                  "running: the floor so far (no replays, not bit-equal to decode)")
      ->capture_default_str()
      ->check(CLI::IsMember({"exact", "running"}));
  cmd->add_flag("!--no-partials", o.partials, "Print only final results");
  return [options, &global] {
    if (global.device.type != runtime::DeviceChoice::Type::kAuto && !global.device.is_cpu()) {
      throw Error(ErrorKind::kUsage, "stream: runs on the CPU (--device cpu)");
    }
    runtime::apply_threads(global.threads);
    if (!options->raw_pcm.empty()) audio::parse_raw_pcm_spec(options->raw_pcm);
    options->config.validate();
    if (options->model.empty()) options->model = default_model("stream", kDefaultStreamModel);
    return run_stream(*options);
  };
}

}  // namespace masr::cli
