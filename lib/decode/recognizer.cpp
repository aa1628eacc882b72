// lib/decode/recognizer.cpp
#include "decode/recognizer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "runtime/device.h"
#include "text/tokenizer.h"

namespace masr::decode {

void RecognizerConfig::set_beam(int64_t beam) {
  decode.ctc.beam_size = beam;
  decode.s2s.beam_size = beam;
  decode.ctc.nbest = std::min<int64_t>(decode.ctc.nbest, beam);
  decode.s2s.nbest = decode.ctc.nbest;  // --nbest fills the CTC one; both searches keep as many
}

void RecognizerConfig::validate() const {
  if (model.empty()) throw_config_error("decode: no model given");
  if (lm_temperature <= 0) {
    throw_config_error("decode: --lm-temperature must be > 0, not " +
                       std::to_string(lm_temperature));
  }
  decode.validate();
}

namespace {

void check_fusion_search(Search search) {
  if (search != Search::kS2S && search != Search::kCtcBeam) {
    throw Error(ErrorKind::kUsage,
                std::string("decode: --lm (a neural LM) is used by the s2s and ctc-beam searches, "
                            "not '") +
                    search_name(search) + "'");
  }
}

// The device the config asks for, resolved; int8 is a CPU-only mode (LibTorch's quantized linear
// ops), so it is refused elsewhere before anything is loaded and turns `auto` into the CPU.
runtime::DeviceChoice resolve_config_device(const RecognizerConfig& config) {
  runtime::DeviceChoice requested = config.device;
  if (config.decode.precision == runtime::Precision::kInt8) {
    if (requested.type != runtime::DeviceChoice::Type::kCpu &&
        requested.type != runtime::DeviceChoice::Type::kAuto) {
      throw_config_error(
          "decode: --precision int8 runs on the CPU (LibTorch's quantized linear "
          "ops), not on --device " +
          requested.str() + "; on a GPU use --precision bf16 or fp16");
    }
    requested.type = runtime::DeviceChoice::Type::kCpu;
  }
  return runtime::resolve_device(requested);
}

}  // namespace

std::unique_ptr<Recognizer> Recognizer::open(RecognizerConfig config) {
  config.validate();
  const runtime::DeviceChoice device = resolve_config_device(config);  // before the read
  auto model = config.hparams.empty()
                   ? load_asr_model(config.model)
                   : models::AsrModel::import_speechbrain(config.model, config.hparams);
  return build(std::move(model), std::move(config), {}, device);
}

std::unique_ptr<Recognizer> Recognizer::from_model(std::shared_ptr<models::AsrModel> model,
                                                   RecognizerConfig config,
                                                   std::vector<std::string> pieces) {
  const runtime::DeviceChoice device = resolve_config_device(config);
  return build(std::move(model), std::move(config), std::move(pieces), device);
}

std::unique_ptr<Recognizer> Recognizer::build(std::shared_ptr<models::AsrModel> model,
                                              RecognizerConfig config,
                                              std::vector<std::string> pieces,
                                              runtime::DeviceChoice device) {
  std::unique_ptr<Recognizer> r(new Recognizer());
  r->device_ = device;
  if (!device.is_cpu()) model->to(runtime::torch_device(device));
  if (config.decode.precision == runtime::Precision::kInt8) {
    model->eval();
    const auto start = std::chrono::steady_clock::now();
    const std::string summary = model->quantize_int8();
    MASR_LOG_INFO("int8: %s, in %.2f s", summary.c_str(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  r->recognizer_ = pieces.empty() ? std::make_unique<AsrModelRecognizer>(model)
                                  : std::make_unique<AsrModelRecognizer>(model, std::move(pieces));
  r->model_ = std::move(model);
  use_model_token_ids(config.decode, *r->model_);
  r->search_ = resolve_search(config.decode, *r->recognizer_);
  if (!config.arpa.empty()) {
    r->arpa_ = std::make_unique<ArpaLm>(ArpaLm::from_file(config.arpa));
    config.decode.ctc.arpa = r->arpa_.get();
  }
  config.decode.validate();
  r->config_ = std::move(config);
  if (!r->config_.lm.empty()) {
    check_fusion_search(r->search_);  // before loading the LM
    r->use_lm(models::LmModel::load(r->config_.lm), r->config_.lm);
  }
  return r;
}

void Recognizer::use_lm(std::shared_ptr<models::LmModel> lm, const std::string& name) {
  check_fusion_search(search_);
  // Fusion adds log-probabilities of the same token ids, so the vocabularies must be the same
  // pieces, not just the same size.
  if (lm->vocab_size() != model_->vocab_size()) {
    throw_config_error("decode: LM '" + name + "' has " + std::to_string(lm->vocab_size()) +
                       " tokens but the ASR model has " + std::to_string(model_->vocab_size()));
  }
  if (lm->tokenizer() && lm->tokenizer()->loaded()) {
    std::vector<std::string> lm_pieces;
    for (int64_t id = 0; id < lm->vocab_size(); ++id) {
      lm_pieces.push_back(lm->tokenizer()->id_to_piece(static_cast<int>(id)));
    }
    check_same_pieces(lm_pieces, recognizer_->pieces(), "LM '" + name + "'");
  }
  if (!device_.is_cpu()) lm->lm()->to(runtime::torch_device(device_));
  lm->lm()->eval();
  DecodeConfig& d = config_.decode;
  if (d.s2s.lm_weight <= 0) d.s2s.lm_weight = 0.6;  // SpeechBrain's test setting
  if (search_ == Search::kS2S) {
    lm_scorer_ = std::make_unique<TransformerLmScorer>(lm->lm(), config_.lm_temperature);
  } else {
    prefix_lm_ = std::make_unique<TransformerLmPrefixScorer>(
        lm->lm(), lm->bos_index(), lm->eos_index(), lm->pad_index(), config_.lm_temperature);
    d.ctc.neural_lm = prefix_lm_.get();
    d.ctc.neural_lm_weight = d.s2s.lm_weight;
  }
}

void Recognizer::transcribe(const std::vector<data::ManifestRow>& rows,
                            const TranscribeOptions& options, const ResultSink& sink,
                            const DecodeProgress& progress, const InputAudio* source) {
  options.validate();
  transcribe_files(*recognizer_, rows, options, config_.decode, sink, s2s_lm(), progress, source);
}

std::vector<Transcript> Recognizer::transcribe(
    const std::vector<const std::vector<float>*>& waveforms) {
  return decode_batch(*recognizer_, waveforms, config_.decode, s2s_lm());
}

}  // namespace masr::decode
