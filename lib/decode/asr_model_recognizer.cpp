// lib/decode/asr_model_recognizer.cpp
// The AsrModel adapter used by `mamba-asr decode`.
#include "decode/asr_model_recognizer.h"

#include <ATen/ATen.h>

#include "core/error.h"
#include "decode/model_scorers.h"
#include "models/conmamba_stream.h"
#include "models/encoder.h"
#include "nn/conv_frontend.h"
#include "text/tokenizer.h"

namespace masr::decode {

AsrModelRecognizer::AsrModelRecognizer(std::shared_ptr<models::AsrModel> model)
    : model_(std::move(model)) {
  const auto& tokenizer = model_->tokenizer();
  if (!tokenizer) {
    throw_config_error("the model has no tokenizer, so its token ids cannot be turned into text");
  }
  if (tokenizer->vocab_size() != model_->vocab_size()) {
    throw_config_error("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                       " pieces but the model's CTC head has " +
                       std::to_string(model_->vocab_size()) + " outputs");
  }
  for (int id = 0; id < tokenizer->vocab_size(); ++id)
    pieces_.push_back(tokenizer->id_to_piece(id));
  finish_setup();
}

AsrModelRecognizer::AsrModelRecognizer(std::shared_ptr<models::AsrModel> model,
                                       std::vector<std::string> pieces)
    : model_(std::move(model)), pieces_(std::move(pieces)) {
  if (static_cast<int64_t>(pieces_.size()) != model_->vocab_size()) {
    throw_config_error("recognizer: " + std::to_string(pieces_.size()) +
                       " token pieces for a model with " + std::to_string(model_->vocab_size()) +
                       " outputs");
  }
  finish_setup();
}

void AsrModelRecognizer::finish_setup() {
  // The encoder frame shift: the feature hop times the front end's time stride (exact; the ratio
  // of feature to encoder frames of one batch rounds, drifting by a frame every few seconds).
  frame_seconds_ = model_->fbank().config().hop_length_ms / 1000.0 *
                   static_cast<double>(model_->cnn().time_stride());
  model_->eval();
  try {
    (void)models::causal_conmamba(model_->transformer());  // throws for a model that looks ahead
    causal_ = true;
  } catch (const Error&) {
    causal_ = false;
  }
}

std::pair<at::Tensor, at::Tensor> AsrModelRecognizer::encode(const at::Tensor& wavs,
                                                             const at::Tensor& rel_lens) {
  const auto device = model_->device();
  // Each utterance is encoded as if it were alone (AsrModel::encode_audio): its valid samples
  // from its relative length, exact in double for batches up to 2^24 samples (17 minutes) of
  // the longest file and within a sample beyond.
  const at::Tensor rel = rel_lens.to(at::kCPU, at::kDouble);
  const at::Tensor samples =
      at::round(rel * static_cast<double>(wavs.size(1))).to(at::kLong).clamp(1, wavs.size(1));
  // Asynchronous when the batch is in pinned memory (decode_batch stages it so with CUDA).
  models::Encoded encoded = model_->encode_audio(wavs.to(device, /*non_blocking=*/true), samples);
  return {encoded.out, encoded.lengths};
}

at::Tensor AsrModelRecognizer::ctc_log_probs(const at::Tensor& enc) {
  return model_->ctc_log_probs(enc);
}

bool AsrModelRecognizer::has_decoder() const { return model_->is_s2s(); }

at::Tensor AsrModelRecognizer::decoder_log_probs(const at::Tensor& enc, const at::Tensor& enc_lens,
                                                 const at::Tensor& tokens) {
  return model_->decoder_log_probs(enc, enc_lens, tokens);
}

std::unique_ptr<SequenceScorer> AsrModelRecognizer::incremental_decoder(const at::Tensor& enc,
                                                                        const at::Tensor& enc_lens,
                                                                        double temperature) {
  if (!model_->is_s2s()) return nullptr;
  std::shared_ptr<models::AsrModel> model = model_;
  auto start = [model, enc, enc_lens](int64_t batch, int64_t beam) {
    if (batch != enc.size(0)) {
      throw_input_error("decoder scorer: search over " + std::to_string(batch) +
                        " utterances but the encoder output has " + std::to_string(enc.size(0)));
    }
    at::NoGradGuard no_grad;
    return model->start_decoding(enc, enc_lens, beam);
  };
  auto step = [model, enc](const at::Tensor& tokens, models::DecoderState& state) {
    return model->decoder_step_log_probs(tokens.to(enc.device()), state);
  };
  return std::make_unique<IncrementalScorer>("decoder scorer", start, step, temperature);
}

std::string AsrModelRecognizer::detokenize(const std::vector<int64_t>& tokens) const {
  if (model_->tokenizer()) {
    return model_->tokenizer()->decode(std::vector<int>(tokens.begin(), tokens.end()));
  }
  std::string text;
  for (const int64_t t : tokens) {
    if (t >= 0 && t < static_cast<int64_t>(pieces_.size())) text += pieces_[t];
  }
  return text;
}

void use_model_token_ids(DecodeConfig& config, const models::AsrModel& model) {
  config.ctc.blank = config.s2s.blank = model.blank_index();
  config.s2s.bos = config.rescoring.bos = model.bos_index();
  config.s2s.eos = config.rescoring.eos = model.eos_index();
  config.rescoring.pad = model.pad_index();
}

at::Device AsrModelRecognizer::device() const { return model_->device(); }

int AsrModelRecognizer::sample_rate() const { return model_->fbank().config().sample_rate; }

}  // namespace masr::decode
