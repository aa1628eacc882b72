// lib/train/trainer_checkpoint.cpp
// The Trainer's recoverables (SpeechBrain's model / optimizer / noam_scheduler / normalizer /
// counter, plus the RNG state and the position in the epoch) and the final averaging.
#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "models/checkpoint.h"
#include "train/optimizer.h"
#include "train/state_dict.h"
#include "train/trainer.h"

namespace masr::train {

void Trainer::save_checkpoint(bool end_of_epoch, const std::map<std::string, double>& metrics) {
  pending_step_checkpoint_ = false;
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (!main()) return;
  // model.masr (models/checkpoint.h: the model, normalizer statistics and tokenizer) holds the
  // model and normalizer recoverables; the rest is the training state.
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
      meta, files, [this](const std::string& dir) { asr_model_->save(dir + "/model.masr"); });
  checkpointer_->prune(retention());
  MASR_LOG_DEBUG("train: checkpoint %s", path.c_str());
}

void Trainer::restore(const CheckpointInfo& checkpoint) {
  const std::string& where = checkpoint.path;
  asr_model_->load_state(models::read_checkpoint(where + "/model.masr").state,
                         where + "/model.masr");
  stepper_->restore(checkpoint, checkpoint.meta.step);
  restore_cpu_rng(Checkpointer::read(checkpoint, "rng.ckpt"), where + "/rng.ckpt");
  const CheckpointMeta& m = checkpoint.meta;
  pos_ = {m.epoch, m.batch, m.step};
  losses_.reset_epoch(m.counter("epoch_loss_sum"),
                      static_cast<int64_t>(m.counter("epoch_loss_count")));
  shown_loss_ = losses_.read().epoch.mean();
  MASR_LOG_INFO("train: resuming from %s (epoch %lld, batch %lld, step %lld)", where.c_str(),
                static_cast<long long>(m.epoch), static_cast<long long>(m.batch),
                static_cast<long long>(m.step));
}

std::string Trainer::average_checkpoints() {
  const RetentionPolicy policy = retention();
  const auto best = checkpointer_->best(policy);
  if (best.empty()) {
    throw_input_error("train: no end-of-epoch checkpoint in '" + config_.save_folder +
                      "' to average; train first");
  }
  std::vector<std::string> paths;  // best first: its normalizer statistics are kept
  for (const auto& c : best) paths.push_back(c.path + "/model.masr");
  const std::shared_ptr<models::AsrModel> averaged = models::average_checkpoints(paths);
  const std::string path = (std::filesystem::path(config_.output_folder) / "model.masr").string();
  averaged->save(path);
  MASR_LOG_INFO("train: averaged %zu checkpoint(s) (%s) into %s", best.size(),
                policy.metric.empty()
                    ? "newest"
                    : ((policy.maximize ? "max " : "min ") + policy.metric).c_str(),
                path.c_str());
  return path;
}

}  // namespace masr::train
