// lib/train/lm_trainer.h
// `mamba-asr train` for a language-model hparams file: SpeechBrain's recipes/LibriSpeech/LM
// (train.py): [bos]+tokens in, tokens+[eos] out, nll_loss with padding masked, validation loss
// and perplexity per epoch, the ASR trainer's output folder, checkpoints and exact resume.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "data/manifest.h"
#include "hparams/hparams.h"
#include "models/lm_model.h"
#include "train/checkpointer.h"
#include "train/lm_data.h"
#include "train/optimizer_stepper.h"
#include "train/progress.h"
#include "train/train_config.h"
#include "train/train_logger.h"
#include "train/trainer.h"

namespace masr::train {

// True when the hparams' `model` is a TransformerLM (an LM recipe), not an ASR ModuleList.
bool is_language_model(const hparams::Hparams& hp);

class LmTrainer {
 public:
  // Reads the text (errors name the missing file or the empty split), the tokenizer (trained
  // when missing), the model and optimizer; writes <output_folder>/hyperparams.yaml.
  LmTrainer(const hparams::Hparams& hp, TrainRunOptions options);
  ~LmTrainer();

  // Resumes from the newest checkpoint, trains the remaining epochs, averages the best
  // checkpoints (lowest valid_loss) into <output_folder>/model.masr (model_type "lm") and
  // reports the test perplexity when there is test text.
  TrainOutcome fit();
  std::string average_checkpoints();

  // Mean NLL per predicted token and its count over `sentences` (all on this rank).
  std::pair<double, int64_t> evaluate(models::LmModel& model, const data::Manifest& sentences,
                                      const std::vector<std::vector<int64_t>>& tokens);
  const TrainConfig& config() const { return config_; }
  models::LmModel& model() { return *model_; }

 private:
  struct Position {
    int64_t epoch = 1, batch = 0;
  };
  bool train_epoch(int64_t epoch);  // false: stopped
  void train_batch(const LmBatch& batch);
  at::Tensor batch_loss(models::LmModel& model, const LmBatch& batch, bool sum) const;
  void after_step();
  void save_checkpoint(bool end_of_epoch, const std::map<std::string, double>& metrics);
  void restore(const CheckpointInfo& checkpoint);
  RetentionPolicy retention() const;
  bool main() const { return parallel_->is_main(); }

  const hparams::Hparams& hp_;
  TrainRunOptions options_;
  TrainConfig config_;
  LmCorpusConfig corpus_;
  std::shared_ptr<DataParallel> parallel_;
  at::Device device_ = at::kCPU;
  data::Manifest train_set_, valid_set_, test_set_;
  std::vector<std::vector<int64_t>> train_tokens_, valid_tokens_, test_tokens_;
  std::shared_ptr<models::LmModel> model_;
  std::unique_ptr<OptimizerStepper> stepper_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<TrainLogger> logger_;
  std::unique_ptr<Progress> progress_;
  LossReduction reduction_ = LossReduction::kMean;
  Position pos_;
  bool pending_step_checkpoint_ = false;
  double epoch_loss_sum_ = 0.0;
  int64_t epoch_loss_count_ = 0;
  double window_loss_sum_ = 0.0;
  int64_t window_count_ = 0;
  std::chrono::steady_clock::time_point window_start_, last_checkpoint_;
};

}  // namespace masr::train
