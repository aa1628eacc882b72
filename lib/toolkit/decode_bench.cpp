// lib/toolkit/decode_bench.cpp
// "s2s-step": joint CTC/attention beam search (beam 10, ctc_weight 0.4) over a random encoder
// output (T 250, V 5000) with small random Transformer and Mamba decoders, before/after caching.
// "decode-files": a trained model's whole file-to-text pipeline over real audio files.
// "s2s-decode-rtf": a full-size S2S model's beam search (+ CTC, + LM) on random audio.
#include "toolkit/benchmarks.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "decode/asr_model_recognizer.h"
#include "decode/decode_inputs.h"
#include "decode/file_transcriber.h"
#include "decode/model_scorers.h"
#include "decode/recognizer.h"
#include "decode/s2s_beam_search.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/lm_model.h"
#include "models/transformer_asr.h"
#include "runtime/benchmark.h"
#include "runtime/peak_memory.h"
#include "toolkit/step_bench.h"

namespace masr::toolkit {
namespace {

// Measures lib/decode: its names unqualified.
using namespace decode;  // NOLINT(build/namespaces)

constexpr int64_t kFrames = 250, kVocab = 5000, kBeam = 10, kSteps = 10, kDim = 256;

models::TransformerASR random_model(const std::string& decoder) {
  models::TransformerASRConfig c;
  c.tgt_vocab = kVocab;
  c.input_size = 80;
  c.d_model = kDim;
  c.nhead = 4;
  c.num_encoder_layers = 1;
  c.num_decoder_layers = 6;
  c.d_ffn = 1024;
  c.normalize_before = true;
  c.decoder_module = decoder;
  models::TransformerASR model(c);
  model->eval();
  return model;
}

std::vector<runtime::BenchResult> run_s2s_step(const runtime::BenchSettings& settings) {
  std::vector<runtime::BenchResult> results;
  for (const std::string decoder : {"transformer", "mamba"}) {
    torch::manual_seed(0);
    auto model = random_model(decoder);
    torch::nn::Linear head(kDim, kVocab);
    const OutputHead out = [head](const at::Tensor& x) mutable { return head->forward(x); };
    const at::Tensor memory = torch::randn({1, kFrames, kDim});
    const at::Tensor lengths = torch::full({1}, kFrames, torch::kLong);
    const at::Tensor ctc = torch::log_softmax(torch::randn({1, kFrames, kVocab}) * 3, -1);
    for (bool cached : {false, true}) {
      for (bool partial : {false, true}) {
        S2SBeamSearchOptions o;
        o.beam_size = kBeam;
        o.ctc_pre_beam = partial ? 1.5 : 0.0;
        // eos blocked until the last step: exactly kSteps steps per search.
        o.min_decode_ratio = o.max_decode_ratio = static_cast<double>(kSteps) / kFrames;
        runtime::BenchSettings s = settings;
        if (!partial) {  // full-vocabulary CTC costs about a second per step
          s.warmup = std::min(s.warmup, 1);
          s.repeat = std::min(s.repeat, 3);
        }
        const std::string name = decoder + (cached ? "/cached" : "/recompute") +
                                 (partial ? "/ctc-pre-beam" : "/ctc-full");
        auto r = runtime::measure(name, s, [&] {
          c10::InferenceMode inference;
          std::unique_ptr<SequenceScorer> scorer;
          if (cached) {
            scorer = incremental_asr_decoder(model, out, memory, lengths);
          } else {
            scorer = std::make_unique<AsrDecoderScorer>(transformer_asr_decoder(model, out), memory,
                                                        lengths);
          }
          (void)S2SBeamSearch(o).search(kFrames, lengths, scorer.get(), ctc, nullptr);
        });
        r.work = kSteps;
        r.work_unit = "steps";
        r.note = "6-layer d" + std::to_string(kDim) + " random decoder, T " +
                 std::to_string(kFrames) + ", V " + std::to_string(kVocab) + ", beam " +
                 std::to_string(kBeam) + ", " + std::to_string(at::get_num_threads()) +
                 " threads; ms per step = 1000 / rate";
        results.push_back(std::move(r));
      }
    }
  }
  return results;
}

// Everything `mamba-asr decode` does between having the file names and printing text: read and
// resample every file (parallel threads), features, encoder, search, detokenize, word timings,
// formatting. The model is loaded (and moved to the device) once, outside the timing.
std::vector<runtime::BenchResult> run_decode_files(const runtime::BenchSettings& settings) {
  if (settings.model.empty() || settings.inputs.empty()) {
    throw Error(ErrorKind::kUsage,
                "bench decode-files: give a trained model and its inputs, e.g. --model "
                "models/conmamba-ctc-synth-en --input @test.txt");
  }
  RecognizerConfig rc;
  rc.model = settings.model;
  rc.device = settings.device;
  rc.decode.search = parse_search(settings.search);
  rc.decode.precision = settings.precision;
  const std::unique_ptr<Recognizer> recognizer = Recognizer::open(rc);
  std::istringstream no_stdin;
  const std::vector<data::ManifestRow> rows = gather_inputs(settings.inputs, no_stdin);
  const std::string search = search_name(recognizer->search());
  const ReadAudio probe = read_all_audio(rows, recognizer->sample_rate());
  if (probe.readable.size() != rows.size()) {
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!probe.errors[i].empty()) throw_input_error("bench decode-files: " + probe.errors[i]);
    }
  }
  std::vector<runtime::BenchResult> results;
  for (const int64_t batch :
       settings.batches.empty() ? std::vector<int64_t>{32} : settings.batches) {
    std::vector<double> read_seconds;
    size_t words = 0;
    TranscribeOptions options;
    options.batching = Batching{static_cast<int>(batch), settings.batch_seconds};
    const Batching& batching = options.batching;
    std::string name = "decode-files/" + search + "/" +
                       runtime::precision_name(recognizer->model().device().is_cuda()
                                                   ? settings.precision
                                                   : runtime::Precision::kFp32) +
                       "/b" + std::to_string(batch);
    if (settings.batch_seconds > 0)
      name += "/" + std::to_string(static_cast<int64_t>(settings.batch_seconds)) + "s";
    auto r = runtime::measure(name, settings, [&] {
      std::string text;
      recognizer->transcribe(rows, options, [&text](FileResult&& r) {
        if (r.transcript) text += format_text(*r.transcript);
      });
      words = text.size();
    });
    for (int k = 0; k < 3; ++k) {  // reading alone, for comparison (it overlaps decoding above)
      const auto t0 = std::chrono::steady_clock::now();
      (void)read_all_audio(rows, recognizer->sample_rate());
      read_seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(read_seconds.begin(), read_seconds.end());
    r.work = probe.seconds;
    r.work_unit = "audio-s";
    r.metrics.push_back({"rtfx", r.throughput()});
    r.metrics.push_back({"files", static_cast<double>(rows.size())});
    r.metrics.push_back({"read_ms_median", 1000.0 * read_seconds[read_seconds.size() / 2]});
    std::vector<size_t> lengths;
    for (const auto& w : probe.samples) lengths.push_back(w.size());
    double padded = 0;
    const auto batches = make_batches(probe.readable, lengths, recognizer->sample_rate(), batching);
    for (const auto& b : batches) padded += static_cast<double>(b.size() * lengths[b.front()]);
    r.metrics.push_back({"batches", static_cast<double>(batches.size())});
    r.metrics.push_back({"padding_efficiency", probe.seconds * recognizer->sample_rate() / padded});
    r.note = std::to_string(rows.size()) + " files, " + std::to_string(probe.seconds) +
             " s of audio, " + settings.device.str() + ", batch " + std::to_string(batch) +
             "; each repetition reads and resamples every file (" +
             std::to_string(std::min(16u, std::max(1u, std::thread::hardware_concurrency()))) +
             " threads) while decoding the batches already read; " + std::to_string(words) +
             " bytes of text; read_ms_median: reading alone";
    results.push_back(std::move(r));
  }
  return results;
}

// Decoding steps per second of audio for s2s-decode-rtf. A model with random weights never
// prefers eos, so the search is held to a realistic length instead: eos blocked before
// int(T * ratio) steps and the search stopped there. 4 per second: LibriSpeech test-clean has
// about 2.7 words per second and a 5000-piece unigram tokenizer about 1.4 pieces per word.
constexpr double kDecodeStepsPerSecond = 4.0;

// `mamba-asr decode --search s2s` on random audio with a full-size model from hparams (random
// weights): features, encoder, joint CTC/attention beam search (beam 10, ctc_weight 0.4, the
// decoder stepped with caches), with and without a Transformer LM (weight 0.6) built from
// hparams/LM/transformer.yaml, and the CTC forced alignment of the result.
std::vector<runtime::BenchResult> run_s2s_decode(const runtime::BenchSettings& settings) {
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  const std::string asr_file =
      settings.hparams.empty() ? "hparams/S2S/conmamba_large.yaml" : settings.hparams;
  const std::shared_ptr<models::AsrModel> model =
      models::AsrModel::from_hparams(hparams::load_file(asr_file, options));
  if (!model->is_s2s()) {
    throw Error(ErrorKind::kUsage, "bench s2s-decode-rtf: " + asr_file +
                                       " has no attention decoder; give an S2S model's hparams");
  }
  if (!settings.device.is_cpu()) model->to(runtime::torch_device(settings.device));
  const int rate = model->fbank().config().sample_rate;
  toolkit::prime_for_evaluation(*model, rate);
  const std::vector<std::string> pieces = placeholder_pieces(model->vocab_size());

  const std::string lm_file = "hparams/LM/transformer.yaml";
  const auto lm = models::LmModel::from_hparams(hparams::load_file(lm_file, options));
  if (lm->vocab_size() != model->vocab_size()) {
    throw Error(ErrorKind::kUsage, "bench s2s-decode-rtf: " + lm_file + " has " +
                                       std::to_string(lm->vocab_size()) + " tokens, " + asr_file +
                                       " " + std::to_string(model->vocab_size()));
  }
  RecognizerConfig rc;
  rc.device = settings.device;
  rc.decode.search = Search::kS2S;
  rc.decode.precision = settings.precision;
  rc.decode.s2s.min_decode_ratio = rc.decode.s2s.max_decode_ratio =
      kDecodeStepsPerSecond * AsrModelRecognizer(model, pieces).frame_seconds();
  const std::unique_ptr<Recognizer> without_lm = Recognizer::from_model(model, rc, pieces);
  const std::unique_ptr<Recognizer> with_lm = Recognizer::from_model(model, rc, pieces);
  with_lm->use_lm(lm, lm_file);  // weight 0.6
  const std::string precision = runtime::precision_name(
      model->device().is_cuda() ? settings.precision : runtime::Precision::kFp32);

  std::vector<runtime::BenchResult> results;
  torch::manual_seed(0);
  const auto samples = static_cast<int64_t>(settings.seconds * rate);
  for (const int64_t batch :
       settings.batches.empty() ? std::vector<int64_t>{1, 8} : settings.batches) {
    std::vector<std::vector<float>> audio(static_cast<size_t>(batch));
    std::vector<const std::vector<float>*> waveforms;
    for (auto& a : audio) {
      const at::Tensor wav = (torch::randn({samples}) * 0.1).contiguous();
      a.assign(wav.data_ptr<float>(), wav.data_ptr<float>() + samples);
      waveforms.push_back(&a);
    }
    for (Recognizer* recognizer : {without_lm.get(), with_lm.get()}) {
      const bool fused = recognizer == with_lm.get();
      runtime::reset_peak_memory(settings.device);
      auto r = runtime::measure(
          "s2s-decode/" + precision + "/b" + std::to_string(batch) + (fused ? "/ctc+lm" : "/ctc"),
          settings, [&] { (void)recognizer->transcribe(waveforms); });
      r.work = settings.seconds * static_cast<double>(batch);
      r.work_unit = "audio-s";
      r.metrics.push_back({"rtfx", r.throughput()});
      r.metrics.push_back(
          {"peak_bytes", static_cast<double>(runtime::peak_memory(settings.device))});
      r.note = asr_file + " (random weights), " + std::to_string(batch) + " x " +
               std::to_string(settings.seconds).substr(0, 4) + " s, beam 10, ctc_weight 0.4" +
               (fused ? ", LM " + lm_file + " weight 0.6" : "") + ", " +
               std::to_string(kDecodeStepsPerSecond).substr(0, 3) + " steps per audio second";
      results.push_back(std::move(r));
    }
  }
  return results;
}

}  // namespace

void register_decode_bench() {
  runtime::register_benchmark(
      {"decode-files",
       "File to text with a trained model (--model, --input, --search, --batch): reading and "
       "resampling the files, features, encoder, search and detokenizing, per repetition",
       run_decode_files, /*only_when_named=*/true});
  runtime::register_benchmark(
      {"s2s-step",
       "S2S beam search (beam 10, ctc_weight 0.4, 10 steps) over a random T 250 x V 5000 "
       "encoder output, 6-layer d256 random Transformer and Mamba decoders: decoder recomputed "
       "over the prefix or stepped with caches, CTC scored on the full vocabulary or a 1.5 x "
       "beam pre-beam",
       run_s2s_step});
  runtime::register_benchmark(
      {"s2s-decode-rtf",
       "S2S decoding of a full-size model from --hparams (default hparams/S2S/conmamba_large.yaml, "
       "random weights) on random audio, --batch 1,8 x --seconds: beam 10 + CTC 0.4, without and "
       "with the hparams/LM/transformer.yaml LM (weight 0.6); 4 decoding steps per audio second "
       "(eos held off); RTFx and peak memory",
       run_s2s_decode, /*only_when_named=*/true});
}

}  // namespace masr::toolkit
