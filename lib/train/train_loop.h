// lib/train/train_loop.h
// `mamba-asr train`: SpeechBrain's Brain.fit, written once for every kind of model (a TrainTask:
// the CTC and S2S recipes, the LM recipe). Epochs and their batches, gradient accumulation,
// clipping and Noam steps (OptimizerStepper), non-finite steps skipped and reported, validation,
// best-N checkpoints and their averaging, exact resumption from the newest checkpoint (mid-epoch
// included), logs, progress, --profile, and data-parallel ranks that start from rank 0's
// parameters and agree on when to stop.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <ATen/Tensor.h>

#include "hparams/hparams.h"
#include "runtime/device.h"
#include "runtime/kineto_trace.h"
#include "train/checkpointer.h"
#include "train/data_parallel.h"
#include "train/optimizer_stepper.h"
#include "train/progress.h"
#include "train/step_profile.h"
#include "train/train_config.h"
#include "train/train_logger.h"
#include "train/train_task.h"

namespace masr::train {

struct TrainRunOptions {
  bool quiet = false;
  runtime::DeviceChoice device = runtime::DeviceChoice::cpu();  // `auto` allowed
  std::function<bool()> stop_requested;    // SIGINT/SIGTERM: checkpoint and return
  std::shared_ptr<DataParallel> parallel;  // null: one process
  // Override the hparams' ckpt_interval_steps / ckpt_interval_minutes when >= 0.
  int64_t ckpt_interval_steps = -1;
  double ckpt_interval_minutes = -1.0;
  // true: checkpoint the encoder layers' activations whatever the hparams say
  // (--activation-checkpointing).
  bool activation_checkpointing = false;
  // true: the batches of a step as SpeechBrain's order has them, whatever the hparams say
  // (--speechbrain-batch-order; TrainConfig::bucket_aligned_steps).
  bool speechbrain_batch_order = false;
  // Non-empty: a model file (model.masr, float32 or float16) whose weights and tokenizer a run
  // without a checkpoint starts from (--init-model): a warm start, with a fresh optimizer and
  // learning-rate schedule. A checkpoint in the save folder wins (the run resumes from it).
  std::string init_model;
  // > 0: time the phases of N batches (train/step_profile.h), print the table and write
  // <output_folder>/profile.json (profile-rank<R>.json on other ranks), then train on.
  int64_t profile_steps = 0;
  // The profiled batches start after this many batches of the run (--profile-from: past the
  // warm-up, whose first steps allocate memory and tune kernels).
  int64_t profile_from = 0;
  // Non-empty: a Kineto trace (CPU operators and CUDA kernels) of `trace_batches` batches from
  // profile_from on, written to this file (FILE-rank<R>.json on other ranks); CUDA builds on
  // LibTorch >= 2 (--trace).
  std::string trace_path;
  int64_t trace_batches = 3;
  // When the command started and how long joining the process group took, for the start-up
  // line logged after the first optimizer step (unset: not logged).
  std::chrono::steady_clock::time_point started{};
  double process_group_seconds = 0.0;
};

// The device to train on: `auto` is CUDA when available, else the CPU (MPS is not picked).
at::Device pick_training_device(const runtime::DeviceChoice& choice);

// Reads, from a loaded hparams file, every setting training reads before its first batch (the
// TrainConfig, the task's modules, tokenizer and perturbations: what TrainLoop's constructor and
// the task's load() read), without data, tokenizer training or a device; `train --dry-run` then
// knows which keys training would leave unread (hparams::Hparams::unread_keys). Marks as read the
// keys whose work the trainer does its own way whatever their arguments (checkpointer,
// epoch_counter, train_logger, the error-rate and accuracy computers).
void read_training_settings(const hparams::Hparams& hp);
// The same marking alone, for a TrainLoop that has read the rest.
void mark_covered_settings(const hparams::Hparams& hp);
// Keys of SpeechBrain's and Mamba-ASR's recipes that their scripts read outside training (data
// preparation, the test stage, beam search and LM fusion, experiment tracking): `train` leaves
// that work to other commands, and names these keys apart from the unknown ones.
const std::vector<std::string>& keys_outside_training();

enum class TrainOutcome { kFinished, kStopped };

class TrainLoop {
 public:
  // Builds everything from resolved hparams: the config (with `options`' overrides), the task
  // (an LM recipe when `model` is a TransformerLM, else ASR) with its data, tokenizer (trained
  // when missing) and model, the optimizer and scheduler; writes <output_folder>/hyperparams.yaml.
  TrainLoop(const hparams::Hparams& hp, TrainRunOptions options);
  ~TrainLoop();

  // Resumes from the newest checkpoint when there is one, trains the remaining epochs, then (rank
  // 0) averages the best checkpoints into the final model and writes the task's final report.
  TrainOutcome fit();
  // Averages the best avg_checkpoints end-of-epoch checkpoints into <output_folder>/model.masr;
  // returns its path.
  std::string average_checkpoints();

  const TrainConfig& config() const { return config_; }
  TrainTask& task() { return *task_; }

 private:
  struct Position {
    int64_t epoch = 1;  // epoch in progress
    int64_t batch = 0;  // batches of it consumed
    int64_t step = 0;   // optimizer steps
  };
  // What the ranks agreed on after an optimizer step.
  struct StepFlags {
    bool stop = false;      // a stop was requested (on any rank)
    bool due_time = false;  // ckpt_interval_minutes has passed (on any rank)
  };
  void broadcast_parameters();                // every rank starts from rank 0's parameters
  void check_ranks_agree(int64_t epoch);      // the ranks' parameters still equal (epoch end)
  bool train_epoch(int64_t epoch);            // false: stopped
  runtime::DeviceChoice cuda_choice() const;  // device_ for runtime/peak_memory.h
  void share_graph_shapes();
  void train_batch(EpochBatches& batches, size_t index);
  void after_step();  // logging and step-interval checkpoints after each optimizer step
  StepFlags agree_flags();
  void end_epoch();                 // validation, the epoch record and its checkpoint
  void log_window(double lr_used);  // the log.jsonl step record: reads the loss sums back
  void warn_skipped();              // rank 0: the steps skipped since the last log, if any
  void save_checkpoint(bool end_of_epoch, const std::map<std::string, double>& metrics);
  void write_batch_shapes(int64_t epoch);
  void restore(const CheckpointInfo& checkpoint);
  RetentionPolicy retention() const;
  void write_curves() const;
  bool profiling() const {
    return profile_ && batches_run_ >= options_.profile_from &&
           profile_->steps() < options_.profile_steps;
  }
  void log_startup();  // after the first optimizer step: where the time to it went
  void report_profile() const;
  void end_profiled_step();  // closes a profiled batch; reports after the N-th
  void update_trace();       // --trace: starts and stops the Kineto trace at its batches
  bool main() const { return parallel_->is_main(); }

  const hparams::Hparams& hp_;
  TrainRunOptions options_;
  TrainConfig config_;
  std::shared_ptr<DataParallel> parallel_;  // declared before task_, which may use it to its end
  std::unique_ptr<TrainTask> task_;
  std::unique_ptr<OptimizerStepper> stepper_;
  // CUDA training whose task splits its loss (train/cuda_graph_step.h); null: op by op.
  std::unique_ptr<GraphedSteps> graphs_;
  int64_t first_epoch_of_run_ = -1;             // the epoch this process started training in
  bool graphs_announced_ = false;               // the "CUDA graphs on" line was logged
  bool graph_shapes_shared_ = false;            // every rank has the shapes that the others saw
  std::map<std::string, int64_t> shapes_seen_;  // batches per shape key at the last epoch's end
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<TrainLogger> logger_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<StepProfile> profile_;  // --profile N
  runtime::KinetoTrace trace_;            // --trace FILE
  bool trace_done_ = false;
  int64_t trace_start_batch_ = 0;
  at::Device device_ = at::kCPU;
  Position pos_;
  bool pending_step_checkpoint_ = false;  // ckpt_interval_steps reached
  // This epoch's and this log window's training losses, summed on the device (no read-back per
  // batch); read at log intervals, epoch ends and checkpoints.
  LossTotals losses_;
  double shown_loss_ = 0.0;    // the epoch's average loss as last read, for the progress line
  double window_audio_ = 0.0;  // seconds of audio since the last log.jsonl step record
  std::chrono::steady_clock::time_point window_start_, last_checkpoint_;
  int64_t batches_run_ = 0;  // training batches this process has run (all epochs)
  // This epoch's training audio (this rank) and the wall time of its batches, for the epoch
  // record's throughput.
  double epoch_audio_ = 0.0, epoch_seconds_ = 0.0;
  std::chrono::steady_clock::time_point loaded_{};  // the constructor's end
  bool startup_logged_ = false;
};

}  // namespace masr::train
