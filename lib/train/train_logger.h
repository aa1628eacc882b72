// lib/train/train_logger.h
// The output folder's logs: `train_log.txt` (SpeechBrain's FileTrainLogger lines) and
// `log.jsonl` (one JSON object per logging step and per epoch), and the epoch history that the
// training curves are drawn from (read back from log.jsonl when a run resumes).
#pragma once

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

// Epoch records from a log.jsonl (the last record of each epoch wins); empty when absent.
std::vector<EpochRecord> read_epoch_history(const std::string& jsonl_path);

}  // namespace masr::train
