// lib/train/asr_train_task.h
// The CTC and S2S recipes as a TrainTask (train_CTC.py / train_S2S.py): train_csv / valid_csv,
// the tokenizer (trained first when missing), utterances loaded by worker threads into padded
// batches, the hparams modules' forward pass and loss (AsrTask), validation loss with ACC (S2S)
// and greedy-CTC WER/CER, checkpoints ranked by ACC (S2S) or WER (CTC), and model.masr files.
#pragma once

#include <memory>

#include "audio/pad_silence.h"
#include "audio/speed_perturb.h"
#include "data/manifest.h"
#include "models/asr_model.h"
#include "text/tokenizer.h"
#include "train/asr_task.h"
#include "train/train_data.h"
#include "train/train_task.h"

namespace masr::train {

class AsrTrainTask final : public TrainTask {
 public:
  AsrTrainTask();
  ~AsrTrainTask() override;

  void load(const TaskContext& context) override;
  std::string describe() const override;
  const data::Manifest& train_set() const override { return train_set_; }
  std::vector<double> trained_lengths(int64_t epoch) const override;
  std::vector<at::Tensor> parameters() const override { return modules_->parameters(); }
  InputsLike graph_inputs_like() const override { return &ModelInputs::like; }
  std::vector<std::vector<InputSpec>> shapes_to_capture(const GraphedSteps& graphs,
                                                        const std::vector<data::Batch>& batches,
                                                        int64_t epoch) const override;
  // The model inputs' shapes of each of `batches` as epoch `epoch` trains them (collated from the
  // utterances' lengths as trained and their token counts; empty where the augmentation makes them
  // unknown beforehand).
  std::vector<std::vector<InputSpec>> batch_shapes(const std::vector<data::Batch>& batches,
                                                   int64_t epoch) const;
  void set_training(bool on) override { modules_->train(on); }
  std::unique_ptr<EpochBatches> open_epoch(int64_t epoch,
                                           std::vector<data::Batch> batches) override;
  std::map<std::string, double> validate(int64_t epoch) override;
  RetentionPolicy retention() const override;
  void save_model(const std::string& path) const override;
  void load_model(const std::string& path) override;
  void average_models(const std::vector<std::string>& best_first, const RetentionPolicy& policy,
                      const std::string& path) const override;

 private:
  class Epoch;
  const TrainConfig& config() const { return *context_.config; }
  // The training items' maker (the loader's, and the planner's view of their lengths).
  UtteranceMaker utterance_maker() const;
  // Every training row's samples as epoch `epoch` trains them (UtteranceMaker::trained_samples),
  // computed once per epoch: the plan's rounds and the graph shapes both read them.
  const std::vector<int64_t>& samples_as_trained(int64_t epoch) const;

  TaskContext context_;
  std::shared_ptr<text::Tokenizer> tokenizer_;
  data::Manifest train_set_, valid_set_;
  std::unique_ptr<AsrTask> modules_;         // forward pass and loss
  std::shared_ptr<models::AsrModel> model_;  // the same modules, for model.masr files
  LossOptions loss_options_;
  // Training items' waveform perturbations (hparams speed_perturb, pad_silence), or null.
  std::shared_ptr<const audio::SpeedPerturb> speed_perturb_;
  std::shared_ptr<const audio::PadSilence> pad_silence_;
  std::string perturbations_;  // "; <summary>" of each, for describe()
  // Set when the augmentation turned out to change a batch's shape: no padding into the shapes
  // of held CUDA graphs from then on (Epoch::pad_into_graph).
  bool graph_padding_off_ = false;
  mutable std::vector<int32_t> token_counts_;  // per training row, -1 until encoded
  mutable int64_t samples_epoch_ = -1;         // the epoch samples_ are of
  mutable std::vector<int64_t> samples_;
};

}  // namespace masr::train
