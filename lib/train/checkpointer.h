// lib/train/checkpointer.h
// Checkpoint directories as SpeechBrain's Checkpointer keeps them (`save/CKPT+...`, one file per
// recoverable plus a meta file), written atomically (a temporary directory, fsync'ed, renamed),
// with SpeechBrain's retention: the best N end-of-epoch checkpoints by a metric, plus the newest.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace masr::train {

// Where a checkpoint sits in training; stored as meta.json.
struct CheckpointMeta {
  int64_t serial = 0;                      // increasing with every save: the newest has the largest
  int64_t epoch = 1;                       // where training resumes: this epoch ...
  int64_t batch = 0;                       // ... after this many of its batches
  int64_t step = 0;                        // optimizer steps taken since the start
  bool end_of_epoch = false;               // saved after epoch `epoch - 1` and its validation
  std::map<std::string, double> metrics;   // validation metrics (end-of-epoch checkpoints)
  std::map<std::string, double> counters;  // other scalar state (scheduler steps, ...)
  // CRC-32 (8 hex digits) of each file Checkpointer::save wrote from `files`, checked by read():
  // LibTorch's readers trust their input, so a corrupt file must be refused before them.
  // Checkpoints written before checksums were kept have none, and are read unchecked.
  std::map<std::string, std::string> checksums;

  // The counter `name`, or 0 when this checkpoint has none (older checkpoints lack newer ones).
  double counter(const std::string& name) const {
    const auto it = counters.find(name);
    return it == counters.end() ? 0.0 : it->second;
  }
};

struct CheckpointInfo {
  std::string path;  // the CKPT+... directory
  CheckpointMeta meta;
};

// Which end-of-epoch checkpoints to keep: the best `keep` by `metric` (max or min).
struct RetentionPolicy {
  std::string metric;  // empty: keep the newest `keep`
  bool maximize = false;
  int64_t keep = 1;
};

class Checkpointer {
 public:
  // Creates `dir` if needed and removes temporary directories left by an interrupted save.
  explicit Checkpointer(std::string dir);

  // Writes `files` (name -> bytes), whatever `writer` writes into the (temporary) directory it is
  // given (its files must be fsync'ed), and meta.json into a new CKPT+ directory; returns its path.
  std::string save(CheckpointMeta meta, const std::map<std::string, std::string>& files,
                   const std::function<void(const std::string&)>& writer = {});
  // Deletes every checkpoint but the newest and those `policy` keeps.
  void prune(const RetentionPolicy& policy) const;

  // All complete checkpoints, oldest first.
  std::vector<CheckpointInfo> list() const;
  std::optional<CheckpointInfo> latest() const;
  // The end-of-epoch checkpoints `policy` keeps, best first.
  std::vector<CheckpointInfo> best(const RetentionPolicy& policy) const;

  // A file of a checkpoint; throws an I/O error naming it, or an input error when its bytes do not
  // match the checksum meta.json holds for it.
  static std::string read(const CheckpointInfo& checkpoint, const std::string& name);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  int64_t next_serial_ = 1;
};

std::string meta_to_json(const CheckpointMeta& meta);
// Throws an input error naming `origin` for malformed meta.
CheckpointMeta meta_from_json(const std::string& text, const std::string& origin);

}  // namespace masr::train
