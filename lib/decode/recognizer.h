// lib/decode/recognizer.h
// The decode facade: from a model and options to transcripts, as `mamba-asr decode`, the decode
// benchmarks and the tests use it (sherpa-onnx's OfflineRecognizer, whisper.cpp's whisper_full).
// Opening loads the model (a model file, a folder holding model.masr, or a SpeechBrain /
// Mamba-ASR checkpoint folder with its hparams), moves it to the device, takes the tokenizer's
// ids, resolves the search, loads and checks the LMs, and validates every option once; then
// transcribing is reading audio and searching. The loaded model is shared and read-only; a
// Recognizer holds the search set-up (LM scorers), so one per thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "decode/arpa_lm.h"
#include "decode/asr_model_recognizer.h"
#include "decode/batch_decoder.h"
#include "decode/file_transcriber.h"
#include "decode/model_scorers.h"
#include "models/lm_model.h"
#include "runtime/device.h"

namespace masr::decode {

struct RecognizerConfig {
  std::string model;    // a model file, or a folder holding model.masr
  std::string hparams;  // with it, `model` is a CKPT+ folder, imported on the fly
  // cpu, cuda, cuda:N or auto (runtime::parse_device); resolved when the model opens
  runtime::DeviceChoice device = runtime::DeviceChoice::cpu();
  DecodeConfig decode;         // search, beams, weights, precision
  std::string lm;              // a Transformer LM file (type "lm") for shallow fusion
  double lm_temperature = 1.0;
  std::string arpa;  // a word n-gram LM (ARPA file) for the ctc-beam search

  // Sets the beam of every search and caps each n-best at it.
  void set_beam(int64_t beam);
  void validate() const;  // throws a config error naming the option
};

class Recognizer {
 public:
  // Loads the model named by config.model (and config.hparams), then as from_model.
  static std::unique_ptr<Recognizer> open(RecognizerConfig config);
  // Over a model already loaded (moved to config.device here). `pieces`: the text of every token
  // id for a model without a tokenizer (random weights in benchmarks); empty: the tokenizer's.
  static std::unique_ptr<Recognizer> from_model(std::shared_ptr<models::AsrModel> model,
                                                RecognizerConfig config,
                                                std::vector<std::string> pieces = {});

  // Shallow fusion with an LM already loaded (its vocabulary checked against the model's);
  // weight 0.6 (SpeechBrain's test setting) unless config.decode.s2s.lm_weight is set.
  void use_lm(std::shared_ptr<models::LmModel> lm, const std::string& name);

  // Files in input order through `sink`, with bounded memory (file_transcriber.h).
  void transcribe(const std::vector<data::ManifestRow>& rows, const TranscribeOptions& options,
                  const ResultSink& sink, const DecodeProgress& progress = {},
                  const InputAudio* source = nullptr);
  // Waveforms in memory at sample_rate(), one batch: one transcript each, in order.
  std::vector<Transcript> transcribe(const std::vector<const std::vector<float>*>& waveforms);

  Search search() const { return search_; }              // auto resolved
  const runtime::DeviceChoice& device() const { return device_; }  // resolved, e.g. cuda:0
  int sample_rate() const { return recognizer_->sample_rate(); }
  const DecodeConfig& config() const { return config_.decode; }
  const models::AsrModel& model() const { return *model_; }
  RecognitionModel& recognition_model() { return *recognizer_; }

 private:
  Recognizer() = default;
  // from_model with the device already resolved (open resolves it before reading the model).
  static std::unique_ptr<Recognizer> build(std::shared_ptr<models::AsrModel> model,
                                           RecognizerConfig config, std::vector<std::string> pieces,
                                           runtime::DeviceChoice device);
  SequenceScorer* s2s_lm() const { return lm_scorer_.get(); }

  RecognizerConfig config_;
  runtime::DeviceChoice device_;
  Search search_ = Search::kAuto;
  std::shared_ptr<models::AsrModel> model_;
  std::unique_ptr<AsrModelRecognizer> recognizer_;
  std::unique_ptr<ArpaLm> arpa_;
  std::unique_ptr<TransformerLmScorer> lm_scorer_;        // s2s fusion
  std::unique_ptr<TransformerLmPrefixScorer> prefix_lm_;  // ctc-beam fusion
};

}  // namespace masr::decode
