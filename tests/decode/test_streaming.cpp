// tests/decode/test_streaming.cpp
// Streaming recognition (decode/streaming_recognizer.h) against offline decoding of the same
// causal ConMamba: encoder frames within 1e-4 and identical greedy tokens, text and word times
// for chunks of 10 ms to 2 s; the floor replay; endpoints between two segments; the CLI on stdin.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "decode/asr_model_recognizer.h"
#include "decode/batch_decoder.h"
#include "decode/file_transcriber.h"
#include "decode/streaming_recognizer.h"
#include "../features/signals.h"
#include "models/asr_stream.h"
#include "models/conmamba_encoder.h"
#include "../models/tiny_asr.h"
#include "models/transformer_asr.h"
#include "nn/wrappers.h"

namespace {

using masr::decode::StreamingConfig;
using masr::decode::StreamingRecognizer;
using masr::models::AsrModel;
using masr::models::AsrStream;
using masr::models::FloorMode;

const std::vector<int> kChunkMs = {10, 30, 100, 333, 1000, 2000};

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The tiny ConMamba of tests/models/tiny_asr.h made causal, with 2 layers, CTC only, and fixed
// normalization statistics (a random model has none).
std::shared_ptr<AsrModel> causal_model(uint64_t seed) {
  std::string yaml = masr::testing::tiny_yaml(0);
  yaml = replace(yaml, "causal: False", "causal: True");
  yaml = replace(yaml, "num_encoder_layers: 1", "num_encoder_layers: 2");
  auto model = masr::testing::build(yaml, seed);
  model->normalize().set_statistics(1, at::full({80}, -20.0f), at::full({80}, 25.0f));
  model->eval();
  return model;
}

// 31 pieces, every fifth one starting a word.
std::vector<std::string> pieces() {
  std::vector<std::string> out = {"<blank>"};
  for (int i = 1; i < 31; ++i) out.push_back((i % 5 == 1 ? "\u2581" : "") + std::string(1, 'a' + i % 26));
  return out;
}

// Speech-like audio with `lead` seconds of digital silence first (the floor then binds).
std::vector<float> utterance(double seconds, uint64_t seed, double lead = 0.0) {
  std::vector<float> wav(static_cast<size_t>(lead * 16000), 0.0f);
  const auto speech = masr::test::speech_like(static_cast<size_t>(seconds * 16000), 16000, seed);
  wav.insert(wav.end(), speech.begin(), speech.end());
  return wav;
}

at::Tensor offline_frames(AsrModel& model, const std::vector<float>& wav) {
  c10::InferenceMode inference;
  const int64_t n = static_cast<int64_t>(wav.size());
  const at::Tensor x = at::from_blob(const_cast<float*>(wav.data()), {1, n}, at::kFloat).clone();
  return model.encode_audio(x, at::full({1}, n, at::kLong)).out.squeeze(0);
}

// Every encoder frame of a stream fed `chunk` samples at a time (a replay supersedes the frames
// before it).
at::Tensor streamed_frames(const std::shared_ptr<AsrModel>& model, const std::vector<float>& wav,
                           size_t chunk, FloorMode floor, int64_t* replays = nullptr) {
  AsrStream stream(model, floor);
  std::vector<at::Tensor> frames;
  auto take = [&] {
    const AsrStream::Frames f = stream.advance();
    if (f.first == 0) frames.clear();
    if (f.out.defined() && f.out.size(0) > 0) frames.push_back(f.out);
  };
  for (size_t at = 0; at < wav.size(); at += chunk) {
    stream.accept(wav.data() + at, std::min(chunk, wav.size() - at));
    take();
  }
  stream.finish();
  take();
  if (replays) *replays = stream.replays();
  return frames.empty() ? at::empty({0}) : at::cat(frames, 0);
}

masr::decode::Transcript offline_decode(const std::shared_ptr<AsrModel>& model,
                                        const std::vector<float>& wav) {
  masr::decode::AsrModelRecognizer recognizer(model, pieces());
  masr::decode::DecodeConfig config;
  config.search = masr::decode::Search::kGreedy;
  return masr::decode::decode_batch(recognizer, {&wav}, config).front();
}

StreamingConfig no_endpoints() {
  StreamingConfig c;
  c.endpoint_seconds = 0;
  c.idle_seconds = 0;
  return c;
}

}  // namespace

TEST_CASE("streamed encoder frames equal the offline ones for chunks of 10 ms to 2 s",
          "[decode][stream]") {
  const auto model = causal_model(11);
  const std::vector<std::vector<float>> wavs = {utterance(1.37, 1), utterance(2.5, 2, 0.6),
                                                utterance(0.4, 3, 0.05)};
  for (size_t u = 0; u < wavs.size(); ++u) {
    const at::Tensor offline = offline_frames(*model, wavs[u]);
    for (const int ms : kChunkMs) {
      int64_t replays = 0;
      const at::Tensor streamed =
          streamed_frames(model, wavs[u], static_cast<size_t>(ms * 16), FloorMode::kExact, &replays);
      INFO("utterance " << u << ", chunk " << ms << " ms, " << replays << " replays");
      REQUIRE(streamed.dim() == 2);
      REQUIRE(streamed.size(0) == offline.size(0));
      // Tolerance: float32 rounding of the stepped Mamba against the scan (measured ~1e-6).
      CHECK((streamed - offline).abs().max().item<double>() <= 1e-4);
    }
  }
}

TEST_CASE("the 80 dB floor: exact mode replays after a louder frame, running mode differs",
          "[decode][stream]") {
  const auto model = causal_model(12);
  const auto wav = utterance(1.5, 4, 0.5);  // digital silence first: the floor binds there
  const at::Tensor offline = offline_frames(*model, wav);
  int64_t replays = 0;
  const at::Tensor exact = streamed_frames(model, wav, 1600, FloorMode::kExact, &replays);
  CHECK(replays >= 1);
  CHECK((exact - offline).abs().max().item<double>() <= 1e-4);
  const at::Tensor running = streamed_frames(model, wav, 1600, FloorMode::kRunning, &replays);
  CHECK(replays == 0);
  REQUIRE(running.size(0) == offline.size(0));
  // The silence before the first loud frame was floored lower: the frames there differ.
  CHECK((running - offline).abs().max().item<double>() > 1e-3);
}

TEST_CASE("streamed tokens, text and word times equal offline greedy decoding",
          "[decode][stream]") {
  size_t tokens_seen = 0;
  for (const uint64_t seed : {21, 22}) {
    const auto model = causal_model(seed);
    const StreamingRecognizer recognizer(model, pieces(), no_endpoints());
    for (const auto& wav : {utterance(1.9, seed + 5), utterance(3.1, seed + 6, 0.3)}) {
      const auto offline = offline_decode(model, wav);
      tokens_seen += offline.tokens.size();
      for (const int ms : kChunkMs) {
        INFO("seed " << seed << ", " << wav.size() << " samples, chunk " << ms << " ms");
        auto stream = recognizer.create_stream();
        const size_t chunk = static_cast<size_t>(ms * 16);
        for (size_t at = 0; at < wav.size(); at += chunk) {
          stream->accept_waveform(wav.data() + at, std::min(chunk, wav.size() - at));
          while (stream->decode_ready()) stream->decode();
          CHECK_FALSE(stream->result().is_final);
        }
        stream->input_finished();
        while (stream->decode_ready()) stream->decode();
        REQUIRE(stream->is_finished());
        const auto final = stream->result();
        CHECK(final.is_final);
        CHECK(final.tokens == offline.tokens);
        CHECK(final.text == offline.text);
        REQUIRE(final.words.size() == offline.words.size());
        for (size_t w = 0; w < final.words.size(); ++w) {
          CHECK(final.words[w].word == offline.words[w].word);
          CHECK(final.words[w].start == Approx(offline.words[w].start).margin(1e-9));
          CHECK(final.words[w].end == Approx(offline.words[w].end).margin(1e-9));
        }
      }
    }
  }
  CHECK(tokens_seen >= 10);  // the comparison is about real token sequences
}

namespace {

// A causal model whose layers add nothing (their branches zeroed, so each encoder frame depends
// only on the front end's few feature frames) and whose CTC head says blank on the encoder output
// of the silence in `wav` (its frame `silent`) and something else on most of the speech.
std::shared_ptr<AsrModel> silence_is_blank_model(const std::vector<float>& wav, int64_t silent) {
  auto model = causal_model(31);
  torch::NoGradGuard no_grad;
  for (const auto& layer : *masr::models::causal_conmamba(model->transformer()).encoder->layers) {
    auto* l = layer->as<masr::models::ConmambaEncoderLayerImpl>();
    for (torch::nn::Module* branch :
         {static_cast<torch::nn::Module*>(l->ffn_module1.ptr().get()),
          static_cast<torch::nn::Module*>(l->mamba.ptr().get()),
          static_cast<torch::nn::Module*>(l->convolution_module.ptr().get()),
          static_cast<torch::nn::Module*>(l->ffn_module2.ptr().get())}) {
      for (auto& p : branch->parameters()) p.zero_();
    }
  }
  const at::Tensor e = offline_frames(*model, wav)[silent];
  auto& head = model->ctc_lin().w;
  head->weight.mul_(0.1);
  head->bias.zero_();
  // Blank logit 20 * (cos(e, silence) - 0.95) * |e|: positive only near the silence's output.
  head->weight[0].copy_(20.0 * e / e.norm());
  head->bias[0].fill_(-20.0 * 0.95 * e.norm().item<double>());
  return model;
}

std::vector<float> slice(const std::vector<float>& wav, size_t from, size_t to) {
  return std::vector<float>(wav.begin() + static_cast<std::ptrdiff_t>(from),
                            wav.begin() + static_cast<std::ptrdiff_t>(std::min(to, wav.size())));
}

}  // namespace

TEST_CASE("an endpoint between two segments: two finals, each what offline decoding gives",
          "[decode][stream]") {
  // Segment, 1.5 s of digital silence, the same segment again (same loudest frame, same floor).
  const auto speech = utterance(1.6, 41);
  std::vector<float> wav = speech;
  wav.insert(wav.end(), 24000, 0.0f);
  wav.insert(wav.end(), speech.begin(), speech.end());
  const int64_t silent = static_cast<int64_t>((speech.size() + 12000) / 640);  // gap's middle
  const auto model = silence_is_blank_model(wav, silent);
  StreamingConfig config;
  config.endpoint_seconds = 0.8;
  const StreamingRecognizer recognizer(model, pieces(), config);
  for (const int ms : {30, 100, 333}) {
    INFO("chunk " << ms << " ms");
    auto stream = recognizer.create_stream();
    std::vector<masr::decode::StreamingResult> finals;
    auto drain = [&] {
      while (stream->decode_ready() || stream->is_endpoint()) {
        stream->decode();
        if (!stream->is_endpoint()) continue;
        finals.push_back(stream->result());
        stream->reset();
      }
    };
    const size_t chunk = static_cast<size_t>(ms * 16);
    for (size_t at = 0; at < wav.size(); at += chunk) {
      stream->accept_waveform(wav.data() + at, std::min(chunk, wav.size() - at));
      drain();
    }
    stream->input_finished();
    drain();
    REQUIRE(stream->is_finished());
    finals.push_back(stream->result());
    REQUIRE(finals.size() == 2);
    const double gap_start = speech.size() / 16000.0, gap_end = gap_start + 1.5;
    CHECK(finals[0].end > gap_start + 0.8);
    CHECK(finals[0].end < gap_end);
    CHECK(finals[1].start == Approx(finals[0].end));
    CHECK_FALSE(finals[0].tokens.empty());
    CHECK_FALSE(finals[1].tokens.empty());
    const size_t cut = static_cast<size_t>(std::llround(finals[0].end * 16000));
    CHECK(finals[0].tokens == offline_decode(model, slice(wav, 0, cut)).tokens);
    const auto second = offline_decode(model, slice(wav, cut, wav.size()));
    CHECK(finals[1].tokens == second.tokens);
    REQUIRE(finals[1].words.size() == second.words.size());
    for (size_t w = 0; w < second.words.size(); ++w) {
      CHECK(finals[1].words[w].start == Approx(second.words[w].start + finals[1].start));
    }
  }
}

TEST_CASE("streaming refuses models that need the whole utterance", "[decode][stream]") {
  auto bidirectional = masr::testing::build(masr::testing::tiny_yaml(0));
  bidirectional->normalize().set_statistics(1, at::zeros({80}), at::ones({80}));
  try {
    StreamingRecognizer recognizer(bidirectional, pieces());
    FAIL("a bidirectional model was accepted");
  } catch (const masr::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bidirectional") && Catch::Contains("mamba-asr decode"));
  }
  StreamingConfig bad;
  bad.endpoint_seconds = -1;
  CHECK_THROWS_WITH(StreamingRecognizer(causal_model(5), pieces(), bad),
                    Catch::Contains("--endpoint-seconds"));
}

namespace {

std::string run(const std::string& args, int* code) {
  const std::string command = std::string(MASR_BINARY_DIR) + "/bin/mamba-asr " + args + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  const int status = pclose(pipe);
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return output;
}

}  // namespace

TEST_CASE("mamba-asr stream: stdin PCM gives decode's text; whole-utterance models refused",
          "[decode][stream][cli]") {
  masr::test::ScratchDir dir("stream-cli");
  const std::string bundled = std::string(MASR_SOURCE_DIR) + "/models/conmamba-ctc-synth-en";
  auto model = causal_model(23);
  model->set_tokenizer(masr::decode::load_asr_model(bundled)->tokenizer());
  const std::string model_file = dir.file("causal.masr");
  model->save(model_file);
  const auto wav = utterance(2.2, 77, 0.2);
  std::string pcm;
  for (const float v : wav) {
    const auto s = static_cast<int16_t>(std::lround(std::clamp(v, -1.0f, 0.99f) * 32767));
    pcm += static_cast<char>(s & 0xFF);
    pcm += static_cast<char>((s >> 8) & 0xFF);
  }
  const std::string raw = dir.file("speech.raw");
  std::ofstream(raw, std::ios::binary) << pcm;

  int code = 0;
  const std::string decoded =
      run("-q decode --model " + model_file + " --search greedy --raw-pcm s16le:16000 " + raw,
          &code);
  INFO(decoded);
  REQUIRE(code == 0);
  const std::string text = decoded.substr(decoded.find(' ') + 1, decoded.size() - decoded.find(' ') - 2);
  REQUIRE_FALSE(text.empty());
  const std::string streamed = run("-q stream --model " + model_file +
                                       " --raw-pcm s16le:16000 --chunk-ms 70 --endpoint-seconds 0 "
                                       "--idle-seconds 0 - < " + raw,
                                   &code);
  INFO(streamed);
  REQUIRE(code == 0);
  const std::string last = streamed.substr(streamed.rfind('\n', streamed.size() - 2) + 1);
  const auto final = nlohmann::json::parse(last);
  CHECK(final["type"] == "final");
  CHECK(final["text"] == text);
  CHECK(final["end"].get<double>() == Approx(wav.size() / 16000.0));
  CHECK(streamed.find("\"type\":\"partial\"") != std::string::npos);

  const std::string refused = run("stream --model " + bundled + " " + raw + " --raw-pcm s16le:16000", &code);
  CHECK(code != 0);
  CHECK_THAT(refused, Catch::Contains("bidirectional") && Catch::Contains("decode"));
  const std::string wrong_rate =
      run("stream --model " + model_file + " --raw-pcm s16le:8000 - < " + raw, &code);
  CHECK(code != 0);
  CHECK_THAT(wrong_rate, Catch::Contains("16000 Hz"));
  const std::string odd = dir.file("odd.raw");
  std::ofstream(odd, std::ios::binary) << pcm.substr(0, 1001);
  run("stream --model " + model_file + " --raw-pcm s16le:16000 - < " + odd, &code);
  CHECK(code != 0);
}

TEST_CASE("a stream shorter than one 25 ms window ends with an empty final", "[decode][stream]") {
  const StreamingRecognizer recognizer(causal_model(6), pieces(), no_endpoints());
  auto stream = recognizer.create_stream();
  const auto wav = utterance(0.02, 9);  // 320 samples: frame 0 is complete before the end
  stream->accept_waveform(wav);
  while (stream->decode_ready()) stream->decode();
  stream->input_finished();
  while (stream->decode_ready()) stream->decode();
  CHECK(stream->is_finished());
  CHECK(stream->result().is_final);
  CHECK(stream->result().tokens.empty());
  CHECK_THROWS_WITH(stream->accept_waveform(wav), Catch::Contains("after input_finished"));
}
