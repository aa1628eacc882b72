// lib/train/lm_trainer.cpp
// The LM recipe's fit loop (SB recipes/LibriSpeech/LM/train.py: compute_forward /
// compute_objectives with nll_loss, on_stage_end keeping the lowest-loss checkpoints).
#include "train/lm_trainer.h"

#include <cmath>
#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "models/module_object.h"
#include "models/transformer_lm.h"
#include "train/autocast.h"
#include "train/losses.h"
#include "train/train_data.h"
#include "train/training_curves.h"

namespace masr::train {
namespace fs = std::filesystem;

bool is_language_model(const hparams::Hparams& hp) {
  const hparams::Value* v = hp.find("model");
  if (v == nullptr || v->is_null() || v->type() != hparams::Value::Type::kObject) return false;
  try {
    return std::dynamic_pointer_cast<models::TransformerLMImpl>(models::module_of(*v)) != nullptr;
  } catch (const Error&) {
    return false;
  }
}

LmTrainer::LmTrainer(const hparams::Hparams& hp, TrainRunOptions options)
    : hp_(hp),
      options_(std::move(options)),
      config_(train_config_from(hp, /*language_model=*/true)),
      corpus_(lm_corpus_from(hp)) {
  if (options_.ckpt_interval_steps >= 0) config_.ckpt_interval_steps = options_.ckpt_interval_steps;
  if (options_.ckpt_interval_minutes >= 0) {
    config_.ckpt_interval_minutes = options_.ckpt_interval_minutes;
  }
  parallel_ = options_.parallel ? options_.parallel : std::make_shared<DataParallel>();
  device_ = pick_training_device(options_.device);
  if (!device_.is_cuda() && config_.precision != "fp32") {
    MASR_LOG_INFO("train: precision %s applies on CUDA only; training in fp32 on the CPU",
                  config_.precision.c_str());
  }
  // SB's nll_loss default: the mean over the unpadded tokens; loss_reduction overrides.
  if (const hparams::Value* r = hp.find("loss_reduction"); r && !r->is_null()) {
    reduction_ = config_.reduction;
  }
  if (main()) {
    fs::create_directories(config_.output_folder);
    write_file_atomically((fs::path(config_.output_folder) / "hyperparams.yaml").string(),
                          hp.to_yaml());
  }
  train_set_ = read_lm_sentences(corpus_.train_csv, corpus_.train_text, config_.csv_replacements());
  if (train_set_.size() == 0) {
    throw_input_error("train: the LM training text (" + train_set_.origin + ") holds no sentence");
  }
  valid_set_ = read_lm_sentences(corpus_.valid_csv, corpus_.valid_text, config_.csv_replacements());
  test_set_ = read_lm_sentences(corpus_.test_csv, corpus_.test_text, config_.csv_replacements());
  auto tokenizer = ensure_lm_tokenizer(hp, config_, train_set_);
  train_tokens_ = tokenize_sentences(train_set_, *tokenizer);
  valid_tokens_ = tokenize_sentences(valid_set_, *tokenizer);
  test_tokens_ = tokenize_sentences(test_set_, *tokenizer);
  model_ = models::LmModel::from_hparams(hp);
  model_->set_tokenizer(tokenizer);
  model_->lm()->to(device_);
  stepper_ = std::make_unique<OptimizerStepper>(config_, model_->lm()->parameters(),
                                                device_.is_cuda(), parallel_);
  checkpointer_ = std::make_unique<Checkpointer>(config_.save_folder);
  progress_ = std::make_unique<Progress>(Progress::detect(options_.quiet || !main()));
  last_checkpoint_ = window_start_ = std::chrono::steady_clock::now();
}

LmTrainer::~LmTrainer() = default;

TrainOutcome LmTrainer::fit() {
  if (auto latest = checkpointer_->latest()) restore(*latest);
  logger_ = std::make_unique<TrainLogger>(config_.output_folder, config_.train_log, pos_.epoch - 1);
  MASR_LOG_INFO("train: LM; %zu training sentences, %zu validation, %zu test; %s",
                train_set_.size(), valid_set_.size(), test_set_.size(),
                config_.to_string().c_str());
  while (pos_.epoch <= config_.number_of_epochs) {
    if (!train_epoch(pos_.epoch)) return TrainOutcome::kStopped;
    const int64_t epoch = pos_.epoch;
    std::map<std::string, double> metrics;
    if (valid_set_.size() > 0) {
      const auto [loss, count] = evaluate(*model_, valid_set_, valid_tokens_);
      metrics = {{"valid_loss", loss}, {"perplexity", std::exp(loss)}};
    }
    EpochRecord record{epoch, stepper_->steps(), stepper_->lr(),
                       epoch_loss_count_ ? epoch_loss_sum_ / epoch_loss_count_ : 0.0, metrics};
    pos_ = {epoch + 1, 0};
    epoch_loss_sum_ = 0.0, epoch_loss_count_ = 0;
    save_checkpoint(true, metrics);
    if (!main()) continue;
    logger_->log_epoch(record);
    write_file_atomically(
        (fs::path(config_.output_folder) / "training_curves.svg").string(),
        run_curves_svg(logger_->history(), hp_.source(), config_.output_folder));
    std::string line =
        "epoch " + std::to_string(epoch) + ": train loss " + std::to_string(record.train_loss);
    for (const auto& [k, v] : metrics) line += ", " + k + " " + std::to_string(v);
    progress_->message(line);
  }
  if (!main()) return TrainOutcome::kFinished;
  const std::string path = average_checkpoints();
  if (test_set_.size() > 0) {
    auto averaged = models::LmModel::load(path);
    averaged->lm()->to(device_);
    const auto [loss, count] = evaluate(*averaged, test_set_, test_tokens_);
    const std::string line = "test: loss " + std::to_string(loss) + ", perplexity " +
                             std::to_string(std::exp(loss)) + " (" + std::to_string(count) +
                             " tokens)";
    logger_->log_text(line);
    progress_->message(line);
  }
  return TrainOutcome::kFinished;
}

bool LmTrainer::train_epoch(int64_t epoch) {
  const auto batches = epoch_batches(train_set_, config_.train_batching, epoch, parallel_->rank(),
                                     parallel_->world_size());
  const auto start = static_cast<size_t>(pos_.batch);
  if (start > batches.size()) {
    throw_input_error("train: the checkpoint is at batch " + std::to_string(start) + " of epoch " +
                      std::to_string(epoch) + ", which has only " + std::to_string(batches.size()) +
                      " batches (was the LM text changed?)");
  }
  model_->lm()->train(true);
  progress_->start_epoch(epoch, config_.number_of_epochs, batches.size(), start);
  for (size_t index = start; index < batches.size(); ++index) {
    std::vector<const std::vector<int64_t>*> rows;
    for (const size_t i : batches[index]) rows.push_back(&train_tokens_[i]);
    const LmBatch batch =
        collate_lm(rows, model_->bos_index(), model_->eos_index(), model_->pad_index()).to(device_);
    train_batch(batch);
    pos_.batch = static_cast<int64_t>(index + 1);
    progress_->update(index + 1, epoch_loss_count_ ? epoch_loss_sum_ / epoch_loss_count_ : 0.0,
                      stepper_->lr(), 0.0);
    if (stepper_->accumulated() != 0) continue;  // checkpoints only between optimizer steps
    const bool stop = options_.stop_requested && options_.stop_requested();
    const double minutes =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_).count() /
        60.0;
    const bool due_time =
        config_.ckpt_interval_minutes > 0 && minutes >= config_.ckpt_interval_minutes;
    if (stop || due_time || pending_step_checkpoint_) save_checkpoint(false, {});
    if (stop) {
      progress_->message("train: stopped; checkpoint written, run the same command to resume");
      return false;
    }
  }
  if (stepper_->accumulated() > 0) {  // the epoch's last, partial accumulation
    stepper_->step();
    after_step();
  }
  progress_->end_epoch();
  return true;
}

at::Tensor LmTrainer::batch_loss(models::LmModel& model, const LmBatch& batch, bool sum) const {
  AutocastGuard autocast(device_, config_.precision);
  const at::Tensor logits = model.lm()->forward(batch.input, model.pad_index());
  const at::Tensor log_probs = at::log_softmax(logits.to(at::kFloat), -1);
  return kldiv_loss(log_probs, batch.target, batch.rel, 0.0, model.pad_index(),
                    sum ? LossReduction::kSum : reduction_);
}

void LmTrainer::train_batch(const LmBatch& batch) {
  const at::Tensor loss = batch_loss(*model_, batch, false);
  const double value = loss.item<double>();
  if (!std::isfinite(value)) {
    MASR_LOG_WARN("train: non-finite LM loss at epoch %lld batch %lld; batch skipped",
                  static_cast<long long>(pos_.epoch), static_cast<long long>(pos_.batch));
    return;
  }
  epoch_loss_sum_ += value, ++epoch_loss_count_;
  window_loss_sum_ += value, ++window_count_;
  if (stepper_->backward(loss)) after_step();
}

void LmTrainer::after_step() {
  const int64_t step = stepper_->steps();
  if (main() && logger_ && step % config_.log_interval == 0 && window_count_ > 0) {
    logger_->log_step(pos_.epoch, step, window_loss_sum_ / static_cast<double>(window_count_),
                      stepper_->lr_of_last_step(), 0.0);
    window_loss_sum_ = 0, window_count_ = 0;
    window_start_ = std::chrono::steady_clock::now();
  }
  if (config_.ckpt_interval_steps > 0 && step % config_.ckpt_interval_steps == 0) {
    pending_step_checkpoint_ = true;
  }
}

std::pair<double, int64_t> LmTrainer::evaluate(models::LmModel& model,
                                               const data::Manifest& sentences,
                                               const std::vector<std::vector<int64_t>>& tokens) {
  const bool was_training = model.lm()->is_training();
  model.lm()->train(false);
  torch::NoGradGuard no_grad;
  double nll = 0.0, count = 0.0;
  for (const auto& b : epoch_batches(sentences, config_.valid_batching, 1, parallel_->rank(),
                                     parallel_->world_size())) {
    std::vector<const std::vector<int64_t>*> rows;
    for (const size_t i : b) rows.push_back(&tokens[i]);
    const LmBatch batch =
        collate_lm(rows, model.bos_index(), model.eos_index(), model.pad_index()).to(device_);
    nll += batch_loss(model, batch, true).item<double>();
    count += static_cast<double>(batch.tokens);
  }
  model.lm()->train(was_training);
  nll = parallel_->sum(nll), count = parallel_->sum(count);
  return {count > 0 ? nll / count : 0.0, static_cast<int64_t>(count)};
}

}  // namespace masr::train
