// lib/train/lm_train_task.cpp
// The LM recipe's text, batches, loss (SB train.py: compute_forward / compute_objectives with
// nll_loss), validation perplexity and model files for the training loop.
#include "train/lm_train_task.h"

#include <cmath>
#include <cstdio>

#include <torch/torch.h>

#include "core/error.h"
#include "core/log.h"
#include "models/module_object.h"
#include "models/transformer_lm.h"
#include "runtime/autocast.h"
#include "train/step_profile.h"
#include "train/train_data.h"

namespace masr::train {

bool is_language_model(const hparams::Hparams& hp) {
  const hparams::Value* v = hp.find("model");
  if (v == nullptr || v->is_null() || v->type() != hparams::Value::Type::kObject) return false;
  try {
    return std::dynamic_pointer_cast<models::TransformerLMImpl>(models::module_of(*v)) != nullptr;
  } catch (const Error&) {
    return false;
  }
}

// An epoch's sentences, padded on the training thread (the text is tokenized up front).
class LmTrainTask::Epoch final : public EpochBatches {
 public:
  Epoch(LmTrainTask& task, std::vector<data::Batch> batches)
      : task_(task), batches_(std::move(batches)) {}

  bool next() override {
    if (next_ == batches_.size()) return false;
    batch_ = task_.batch_of(task_.train_tokens_, batches_[next_++], *task_.model_);
    return true;
  }
  at::Tensor loss(uint64_t /*global_index*/, int64_t /*optimizer_steps*/) override {
    return task_.loss_of(*task_.model_, batch_, task_.reduction_);
  }
  double audio_seconds() const override { return 0.0; }

 private:
  LmTrainTask& task_;
  std::vector<data::Batch> batches_;
  size_t next_ = 0;
  LmBatch batch_;
};

LmTrainTask::LmTrainTask(const hparams::Hparams& hp) : corpus_(lm_corpus_from(hp)) {}

LmTrainTask::~LmTrainTask() = default;

void LmTrainTask::load(const TaskContext& context) {
  context_ = context;
  const hparams::Hparams& hp = *context.hp;
  // SB's nll_loss default: the mean over the unpadded tokens; loss_reduction overrides.
  if (const hparams::Value* r = hp.find("loss_reduction"); r && !r->is_null()) {
    reduction_ = config().reduction;
  }
  const data::Replacements replacements = config().csv_replacements();
  const bool sb = corpus_.speechbrain_transcripts;
  if (const hparams::Value* corpus = hp.find("lm_corpus_path");
      sb && (corpus == nullptr || corpus->is_null())) {
    MASR_LOG_WARN("train: lm_corpus_path is null: SpeechBrain's LM recipe then downloads "
                  "librispeech-lm-norm.txt.gz; mamba-asr downloads nothing and trains on the "
                  "transcripts alone (give lm_corpus_path to add that corpus)");
  }
  train_set_ = read_lm_sentences(corpus_.train_csv, corpus_.train_text, replacements,
                                 corpus_.train_patterns, sb);
  if (train_set_.size() == 0) {
    throw_input_error("train: the LM training text (" + train_set_.origin + ") holds no sentence");
  }
  valid_set_ = read_lm_sentences(corpus_.valid_csv, corpus_.valid_text, replacements,
                                 corpus_.valid_patterns, sb);
  test_set_ = read_lm_sentences(corpus_.test_csv, corpus_.test_text, replacements,
                                corpus_.test_patterns, sb);
  const auto tokenizer =
      rank0_first(*context.parallel, [&] { return ensure_lm_tokenizer(hp, config(), train_set_); });
  train_tokens_ = tokenize_sentences(train_set_, *tokenizer);
  valid_tokens_ = tokenize_sentences(valid_set_, *tokenizer);
  test_tokens_ = tokenize_sentences(test_set_, *tokenizer);
  model_ = models::LmModel::from_hparams(hp);
  model_->set_tokenizer(tokenizer);
  model_->lm()->to(context.device);
}

std::string LmTrainTask::describe() const {
  char line[160];
  std::snprintf(line, sizeof(line), "LM; %zu training sentences, %zu validation, %zu test",
                train_set_.size(), valid_set_.size(), test_set_.size());
  return line;
}

std::unique_ptr<EpochBatches> LmTrainTask::open_epoch(int64_t /*epoch*/,
                                                      std::vector<data::Batch> batches) {
  return std::make_unique<Epoch>(*this, std::move(batches));
}

LmBatch LmTrainTask::batch_of(const std::vector<std::vector<int64_t>>& tokens,
                              const data::Batch& rows, const models::LmModel& model) const {
  std::vector<const std::vector<int64_t>*> sentences;
  for (const size_t i : rows) sentences.push_back(&tokens[i]);
  const LmBatch batch =
      collate_lm(sentences, model.bos_index(), model.eos_index(), model.pad_index());
  profile_phase("host-to-device");
  return batch.to(context_.device);
}

at::Tensor LmTrainTask::loss_of(models::LmModel& model, const LmBatch& batch,
                                LossReduction reduction) const {
  const at::Tensor logits = model.lm()->forward(batch.input, model.pad_index());  // (B, U+1, V)
  const at::Tensor log_probs = at::log_softmax(logits.to(at::kFloat), -1);
  return kldiv_loss(log_probs, batch.target, batch.rel, 0.0, model.pad_index(), reduction);
}

std::pair<double, int64_t> LmTrainTask::evaluate(models::LmModel& model,
                                                 const data::Manifest& sentences,
                                                 const std::vector<std::vector<int64_t>>& tokens,
                                                 bool all_ranks) const {
  DataParallel& parallel = *context_.parallel;
  const bool was_training = model.lm()->is_training();
  model.lm()->train(false);
  torch::NoGradGuard no_grad;
  double nll = 0.0, count = 0.0;
  const auto plan = all_ranks
                        ? epoch_batches(sentences, config().valid_batching, 1, parallel.rank(),
                                        parallel.world_size(), /*same_count=*/false)
                        : epoch_batches(sentences, config().valid_batching, 1);
  for (const data::Batch& rows : plan) {
    const LmBatch batch = batch_of(tokens, rows, model);
    runtime::AutocastGuard autocast(context_.device, config().precision);
    nll += loss_of(model, batch, LossReduction::kSum).item<double>();
    count += static_cast<double>(batch.tokens);
  }
  model.lm()->train(was_training);
  if (all_ranks) nll = parallel.sum(nll), count = parallel.sum(count);
  return {count > 0 ? nll / count : 0.0, static_cast<int64_t>(count)};
}

std::map<std::string, double> LmTrainTask::validate(int64_t /*epoch*/) {
  if (valid_set_.size() == 0) return {};
  const auto [loss, count] = evaluate(*model_, valid_set_, valid_tokens_, /*all_ranks=*/true);
  return {{"valid_loss", loss}, {"perplexity", std::exp(loss)}};
}

RetentionPolicy LmTrainTask::retention() const {
  RetentionPolicy policy;
  if (valid_set_.size() > 0) policy.metric = "valid_loss", policy.maximize = false;
  return policy;
}

void LmTrainTask::load_model(const std::string& path) {
  model_->load_state(models::LmModel::load(path)->named_state(), path);
}

void LmTrainTask::average_models(const std::vector<std::string>& best_first,
                                 const RetentionPolicy& /*policy*/, const std::string& path) const {
  models::average_lm_checkpoints(best_first)->save(path);
  MASR_LOG_INFO("train: averaged %zu LM checkpoint(s) into %s", best_first.size(), path.c_str());
}

std::vector<std::string> LmTrainTask::final_report(const std::string& model_path) {
  if (test_set_.size() == 0) return {};
  const auto averaged = models::LmModel::load(model_path);
  averaged->lm()->to(context_.device);
  // Rank 0 alone: the other ranks are done.
  const auto [loss, count] = evaluate(*averaged, test_set_, test_tokens_, /*all_ranks=*/false);
  return {"test: loss " + std::to_string(loss) + ", perplexity " + std::to_string(std::exp(loss)) +
          " (" + std::to_string(count) + " tokens)"};
}

}  // namespace masr::train
