// lib/train/train_loop_checkpoint.cpp
// The loop's recoverables (SpeechBrain's model / optimizer / scheduler / counter, plus the RNG
// state, the position in the epoch, the epoch's loss sums and the fp16 scaler), retention and the
// final averaging. The model file is the task's (TrainTask::save_model).
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "train/state_dict.h"
#include "train/train_loop.h"

namespace masr::train {

void TrainLoop::save_checkpoint(bool end_of_epoch, const std::map<std::string, double>& metrics) {
  pending_step_checkpoint_ = false;
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (!main()) return;
  // model.masr (the task's model file) holds the model recoverables; the rest is training state.
  std::map<std::string, std::string> files;
  files["rng.ckpt"] = serialize_cpu_rng();
  CheckpointMeta meta;
  meta.epoch = pos_.epoch, meta.batch = pos_.batch, meta.step = pos_.step;
  meta.end_of_epoch = end_of_epoch;
  meta.metrics = metrics;
  stepper_->save(files, meta.counters);
  const LossTotals::Average epoch_losses = losses_.read().epoch;  // read back for the checkpoint
  meta.counters["epoch_loss_sum"] = epoch_losses.sum;
  meta.counters["epoch_loss_count"] = static_cast<double>(epoch_losses.count);
  const std::string path = checkpointer_->save(
      meta, files, [this](const std::string& dir) { task_->save_model(dir + "/model.masr"); });
  checkpointer_->prune(retention());
  MASR_LOG_DEBUG("train: checkpoint %s", path.c_str());
}

void TrainLoop::restore(const CheckpointInfo& checkpoint) {
  const std::string& where = checkpoint.path;
  task_->load_model(where + "/model.masr");
  stepper_->restore(checkpoint, checkpoint.meta.step);
  restore_cpu_rng(Checkpointer::read(checkpoint, "rng.ckpt"), where + "/rng.ckpt");
  const CheckpointMeta& m = checkpoint.meta;
  pos_ = {m.epoch, m.batch, m.step};
  losses_.reset_epoch(m.counter("epoch_loss_sum"),
                      static_cast<int64_t>(m.counter("epoch_loss_count")));
  shown_loss_ = losses_.read().epoch.mean();
  const std::string label = task_->label();
  const std::string subject = label.empty() ? "" : "the " + label + " ";  // "the LM "
  MASR_LOG_INFO("train: resuming %sfrom %s (epoch %lld, batch %lld, step %lld)", subject.c_str(),
                where.c_str(), static_cast<long long>(m.epoch), static_cast<long long>(m.batch),
                static_cast<long long>(m.step));
}

RetentionPolicy TrainLoop::retention() const {
  RetentionPolicy policy = task_->retention();
  policy.keep = config_.avg_checkpoints;
  return policy;
}

std::string TrainLoop::average_checkpoints() {
  const RetentionPolicy policy = retention();
  const auto best = checkpointer_->best(policy);
  if (best.empty()) {
    throw_input_error("train: no end-of-epoch checkpoint in '" + config_.save_folder +
                      "' to average; train first");
  }
  std::vector<std::string> paths;  // best first: its normalizer statistics are kept
  for (const auto& c : best) paths.push_back(c.path + "/model.masr");
  const std::string path = (std::filesystem::path(config_.output_folder) / "model.masr").string();
  task_->average_models(paths, policy, path);
  return path;
}

}  // namespace masr::train
