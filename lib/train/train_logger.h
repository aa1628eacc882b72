// lib/train/train_logger.h
// The output folder's logs: `train_log.txt` (SpeechBrain's FileTrainLogger lines) and
// `log.jsonl` (one JSON object per logging step and per epoch), the epoch history that the
// training curves are drawn from (read back from log.jsonl when a run resumes), and the running
// loss sums those logs report, kept on the training device between logs.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace masr::train {

struct EpochRecord {
  int64_t epoch = 0;
  int64_t step = 0;
  double lr = 0.0;
  double train_loss = 0.0;
  std::map<std::string, double> valid;  // valid_loss, ACC, WER, CER ...
  // The epoch's training audio over every rank and the wall time of its batches (0: unknown,
  // e.g. an epoch read back from an older log).
  double train_audio_seconds = 0.0;
  double train_seconds = 0.0;
  // Rank 0's peak of allocated CUDA memory over the epoch's training (MiB; 0: not measured).
  double peak_gpu_mib = 0.0;
};

class TrainLogger {
 public:
  // Appends to both files (created when absent). A resumed run continues them; epoch records
  // after `resume_epoch` (left by the interrupted run) are dropped from the history.
  TrainLogger(std::string output_folder, std::string train_log, int64_t resume_epoch);

  void log_step(int64_t epoch, int64_t step, double train_loss, double lr, double audio_per_sec);
  void log_epoch(const EpochRecord& record);
  void log_text(const std::string& line);  // a free line in train_log.txt
  const std::vector<EpochRecord>& history() const { return history_; }

 private:
  void append(const std::string& path, const std::string& line) const;
  std::string jsonl_path_;
  std::string text_path_;
  std::vector<EpochRecord> history_;
};

// The training losses of the epoch and of the current log window, summed where the losses are
// (a CUDA step reads nothing back for them) and read back only when they are logged, at epoch
// ends and for checkpoints. Non-finite losses are left out of both sums and counts. The sums are
// float64, added in batch order: the averages equal those of losses read back one by one.
class LossTotals {
 public:
  struct Average {
    double sum = 0.0;
    int64_t count = 0;  // finite losses
    double mean() const { return count > 0 ? sum / static_cast<double>(count) : 0.0; }
  };
  struct Snapshot {
    Average epoch, window;
  };

  // Adds a 0-dim loss (detached) to the epoch and window sums; no read-back.
  void add(const at::Tensor& loss);
  // Both averages, read back at once (a host synchronization on CUDA).
  Snapshot read() const;
  void reset_window();
  // Starts an epoch whose batches so far summed to `sum` over `count` finite losses (a resumed
  // checkpoint's counters); a new epoch starts from zero.
  void reset_epoch(double sum = 0.0, int64_t count = 0);

 private:
  at::Tensor sums_;  // (2, 2) float64 on the losses' device: rows epoch, window; cols sum, count
  Average epoch_start_;  // the epoch row's start (before the first add() creates sums_)
};

// Epoch records from a log.jsonl (the last record of each epoch wins); empty when absent.
std::vector<EpochRecord> read_epoch_history(const std::string& jsonl_path);

}  // namespace masr::train
