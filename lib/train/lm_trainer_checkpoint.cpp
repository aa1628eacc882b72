// lib/train/lm_trainer_checkpoint.cpp
// The LM trainer's recoverables (SB LM recipe: model, optimizer, scheduler, counter; plus the
// RNG, the position in the epoch and the fp16 scaler) and the final averaging.
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "train/lm_trainer.h"
#include "train/state_dict.h"

namespace masr::train {

RetentionPolicy LmTrainer::retention() const {
  RetentionPolicy policy;
  policy.keep = config_.avg_checkpoints;
  if (valid_set_.size() > 0) policy.metric = "valid_loss", policy.maximize = false;
  return policy;
}

void LmTrainer::save_checkpoint(bool end_of_epoch, const std::map<std::string, double>& metrics) {
  pending_step_checkpoint_ = false;
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (!main()) return;
  std::map<std::string, std::string> files;
  files["rng.ckpt"] = serialize_cpu_rng();
  CheckpointMeta meta;
  meta.epoch = pos_.epoch, meta.batch = pos_.batch, meta.step = stepper_->steps();
  meta.end_of_epoch = end_of_epoch;
  meta.metrics = metrics;
  stepper_->save(files, meta.counters);
  meta.counters["epoch_loss_sum"] = epoch_loss_sum_;
  meta.counters["epoch_loss_count"] = static_cast<double>(epoch_loss_count_);
  const std::string path = checkpointer_->save(
      meta, files, [this](const std::string& dir) { model_->save(dir + "/model.masr"); });
  checkpointer_->prune(retention());
  MASR_LOG_DEBUG("train: checkpoint %s", path.c_str());
}

void LmTrainer::restore(const CheckpointInfo& checkpoint) {
  const std::string& where = checkpoint.path;
  const auto saved = models::LmModel::load(where + "/model.masr");
  model_->load_state(saved->named_state(), where + "/model.masr");
  stepper_->restore(checkpoint, checkpoint.meta.step);
  restore_cpu_rng(Checkpointer::read(checkpoint, "rng.ckpt"), where + "/rng.ckpt");
  const CheckpointMeta& m = checkpoint.meta;
  pos_ = {m.epoch, m.batch};
  epoch_loss_sum_ = m.counter("epoch_loss_sum");
  epoch_loss_count_ = static_cast<int64_t>(m.counter("epoch_loss_count"));
  MASR_LOG_INFO("train: resuming the LM from %s (epoch %lld, batch %lld, step %lld)", where.c_str(),
                static_cast<long long>(m.epoch), static_cast<long long>(m.batch),
                static_cast<long long>(m.step));
}

std::string LmTrainer::average_checkpoints() {
  const RetentionPolicy policy = retention();
  const auto best = checkpointer_->best(policy);
  if (best.empty()) {
    throw_input_error("train: no end-of-epoch checkpoint in '" + config_.save_folder +
                      "' to average; train first");
  }
  std::vector<std::string> paths;
  for (const auto& c : best) paths.push_back(c.path + "/model.masr");
  const auto averaged = models::average_lm_checkpoints(paths);
  const std::string path = (std::filesystem::path(config_.output_folder) / "model.masr").string();
  averaged->save(path);
  MASR_LOG_INFO("train: averaged %zu LM checkpoint(s) into %s", best.size(), path.c_str());
  return path;
}

}  // namespace masr::train
