// lib/train/lm_train_task.h
// SpeechBrain's LM recipe (recipes/LibriSpeech/LM/train.py) as a TrainTask: text from CSVs and
// plain files (train/lm_data.h), [bos]+tokens in and tokens+[eos] out, nll_loss with the padding
// masked, validation loss and perplexity per epoch, checkpoints ranked by the lowest valid_loss,
// model.masr files of model_type "lm", and the averaged model's test perplexity at the end.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/manifest.h"
#include "hparams/hparams.h"
#include "models/lm_model.h"
#include "train/lm_data.h"
#include "train/losses.h"
#include "train/train_task.h"

namespace masr::train {

// True when the hparams' `model` is a TransformerLM (an LM recipe), not an ASR ModuleList.
bool is_language_model(const hparams::Hparams& hp);

class LmTrainTask final : public TrainTask {
 public:
  // Reads where the text comes from; no training text is a config error.
  explicit LmTrainTask(const hparams::Hparams& hp);
  ~LmTrainTask() override;

  // Reads the text (errors name the missing file or the empty split), the tokenizer (trained
  // when missing) and builds the model.
  void load(const TaskContext& context) override;
  std::string describe() const override;
  std::string label() const override { return "LM"; }
  const data::Manifest& train_set() const override { return train_set_; }
  std::vector<at::Tensor> parameters() const override { return model_->lm()->parameters(); }
  void set_training(bool on) override { model_->lm()->train(on); }
  std::unique_ptr<EpochBatches> open_epoch(int64_t epoch,
                                           std::vector<data::Batch> batches) override;
  std::map<std::string, double> validate(int64_t epoch) override;
  RetentionPolicy retention() const override;
  void save_model(const std::string& path) const override { model_->save(path); }
  void load_model(const std::string& path) override;
  void average_models(const std::vector<std::string>& best_first, const RetentionPolicy& policy,
                      const std::string& path) const override;
  // "test: loss L, perplexity P (N tokens)" of the averaged model, when there is test text.
  std::vector<std::string> final_report(const std::string& model_path) override;

 private:
  class Epoch;
  const TrainConfig& config() const { return *context_.config; }
  // Padded batch of the sentences `rows` of `tokens`, on the training device.
  LmBatch batch_of(const std::vector<std::vector<int64_t>>& tokens, const data::Batch& rows,
                   const models::LmModel& model) const;
  // The batch's NLL (`reduction` over its predicted tokens); autocast is the caller's.
  at::Tensor loss_of(models::LmModel& model, const LmBatch& batch, LossReduction reduction) const;
  // Mean NLL per predicted token over `sentences` and the token count: this rank's share summed
  // over the ranks (`all_ranks`, every rank calls it), or all of them on this rank alone.
  std::pair<double, int64_t> evaluate(models::LmModel& model, const data::Manifest& sentences,
                                      const std::vector<std::vector<int64_t>>& tokens,
                                      bool all_ranks) const;

  TaskContext context_;
  LmCorpusConfig corpus_;
  LossReduction reduction_ = LossReduction::kMean;  // of the training loss
  data::Manifest train_set_, valid_set_, test_set_;
  std::vector<std::vector<int64_t>> train_tokens_, valid_tokens_, test_tokens_;
  std::shared_ptr<models::LmModel> model_;
};

}  // namespace masr::train
