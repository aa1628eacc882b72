// lib/decode/asr_model_recognizer.h
// RecognitionModel over a loaded models::AsrModel (features, encoder, CTC and decoder heads,
// tokenizer), on the model's device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "decode/batch_decoder.h"
#include "models/asr_model.h"

namespace masr::decode {

// The model's blank, bos, eos and pad ids into the options of every search in config.
void use_model_token_ids(DecodeConfig& config, const models::AsrModel& model);

class AsrModelRecognizer : public RecognitionModel {
 public:
  // Throws a config error when the model has no tokenizer or it does not fit the vocabulary.
  explicit AsrModelRecognizer(std::shared_ptr<models::AsrModel> model);
  // A model without a tokenizer (random weights, in benchmarks): token i reads as pieces[i].
  // Throws a config error when pieces does not cover the vocabulary.
  AsrModelRecognizer(std::shared_ptr<models::AsrModel> model, std::vector<std::string> pieces);

  std::pair<at::Tensor, at::Tensor> encode(const at::Tensor& wavs,
                                           const at::Tensor& rel_lens) override;
  at::Tensor ctc_log_probs(const at::Tensor& enc) override;
  bool has_decoder() const override;
  at::Tensor decoder_log_probs(const at::Tensor& enc, const at::Tensor& enc_lens,
                               const at::Tensor& tokens) override;
  std::unique_ptr<SequenceScorer> incremental_decoder(const at::Tensor& enc,
                                                      const at::Tensor& enc_lens,
                                                      double temperature) override;
  std::vector<std::string> pieces() const override { return pieces_; }
  std::string detokenize(const std::vector<int64_t>& tokens) const override;
  int sample_rate() const override;
  at::Device device() const override;
  // Feature hop times the front end's subsampling, measured on the last encoded batch.
  double frame_seconds() const override { return frame_seconds_; }
  bool causal() const override { return causal_; }

 private:
  void finish_setup();

  std::shared_ptr<models::AsrModel> model_;
  std::vector<std::string> pieces_;
  double frame_seconds_ = 0.04;
  bool causal_ = false;
};

}  // namespace masr::decode
