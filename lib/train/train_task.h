// lib/train/train_task.h
// What one kind of model brings to the training loop (train/train_loop.h), as a SpeechBrain
// recipe's overrides of Brain (compute_forward, compute_objectives, on_stage_end) do: its data
// and epoch batches, the training forward pass and loss, the validation metrics and the metric
// that ranks checkpoints, the model file a checkpoint holds and the final averaging. Epochs,
// optimizer steps, checkpoints, resume, logs and the ranks' agreement are the loop's.
// Implemented by AsrTrainTask (train/asr_train_task.h) and LmTrainTask (train/lm_train_task.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

#include "data/manifest.h"
#include "data/sampler.h"
#include "hparams/hparams.h"
#include "train/checkpointer.h"
#include "train/cuda_graph_step.h"
#include "train/data_parallel.h"
#include "train/train_config.h"

namespace masr::train {

// What a task is given when it loads; the loop owns all of it and outlives the task.
struct TaskContext {
  const hparams::Hparams* hp = nullptr;
  const TrainConfig* config = nullptr;  // the hparams' settings with the command line's overrides
  std::shared_ptr<DataParallel> parallel;  // rank r of N (one process: 0 of 1)
  at::Device device = at::kCPU;            // where the model trains
};

// One epoch's training batches (this rank's share of the plan), loaded one at a time.
class EpochBatches {
 public:
  virtual ~EpochBatches() = default;
  // Loads the next batch onto the training device; false when the epoch has no more. Marks the
  // step profile's "host-to-device" phase once the batch is ready on the host.
  virtual bool next() = 0;
  // The loaded batch's training loss: a 0-dim tensor on the device, not read back. The loop
  // runs it under autocast and activation checkpointing. `global_index`: the batch's index in
  // the whole epoch over the ranks (index * world_size + rank); it seeds the augmentation, so N
  // ranks draw what one process draws for the same batches. `optimizer_steps`: the optimizer
  // steps done before this batch (SpeechBrain's Brain.optimizer_step), for `augment_warmup`.
  virtual at::Tensor loss(uint64_t global_index, int64_t optimizer_steps) = 0;
  // loss() in two parts, for CUDA-graph replay (train/cuda_graph_step.h): what it runs before
  // the model (features, augmentation, lengths) runs here, and the model's device inputs come
  // back in `inputs`; `loss_fn` computes the loss from them alone. False, with nothing run,
  // where the task has no such split (then loss() serves). `graphs` (may be null): the graphs
  // that will run the step, into whose held shapes a task may pad a batch of a shape they do
  // not hold (GraphedSteps::replays).
  virtual bool split_loss(uint64_t /*global_index*/, int64_t /*optimizer_steps*/,
                          GraphedSteps* /*graphs*/, std::vector<at::Tensor>* /*inputs*/,
                          std::function<at::Tensor(const std::vector<at::Tensor>&)>* /*loss_fn*/) {
    return false;
  }
  // Seconds of audio in the loaded batch (0 for text), for the progress line and log.jsonl.
  virtual double audio_seconds() const = 0;
};

class TrainTask {
 public:
  virtual ~TrainTask() = default;

  // Reads the data and the tokenizer (trained on rank 0 when missing: rank0_first), builds the
  // model on context.device. Called once, after <output_folder>/hyperparams.yaml is written.
  virtual void load(const TaskContext& context) = 0;

  // The run for the log's first line, e.g. "CTC; 8 training utterances (0.0 h), 8 validation".
  virtual std::string describe() const = 0;
  // How log lines name the model: empty for the ASR recipes, "LM" ("resuming the LM from ...").
  virtual std::string label() const { return ""; }

  // The examples the epoch batch plans are drawn from (durations in seconds or in tokens).
  virtual const data::Manifest& train_set() const = 0;
  // Each example's length as epoch `epoch` trains it (after perturbations that change it), for
  // the cost of a step's batches (DynamicBatchOptions::cost_lengths); empty: train_set()'s.
  virtual std::vector<double> trained_lengths(int64_t /*epoch*/) const { return {}; }
  virtual std::vector<at::Tensor> parameters() const = 0;
  // Placeholder inputs of split_loss's loss_fn for given shapes (CUDA-graph captures of shapes
  // not at hand); empty where the task has no split.
  virtual InputsLike graph_inputs_like() const { return {}; }
  // Of `batches` (this rank's plan of `epoch`), the model-input shapes that will need a CUDA graph
  // of their own: told beforehand, neither held by `graphs` nor to be padded into a held one
  // (GraphedSteps::capture_ahead). Empty where the task cannot tell them.
  virtual std::vector<std::vector<InputSpec>> shapes_to_capture(
      const GraphedSteps& /*graphs*/, const std::vector<data::Batch>& /*batches*/,
      int64_t /*epoch*/) const {
    return {};
  }
  virtual void set_training(bool on) = 0;
  // `batches` (indices into train_set(), the epoch's plan from where it resumes), in order.
  virtual std::unique_ptr<EpochBatches> open_epoch(int64_t epoch,
                                                   std::vector<data::Batch> batches) = 0;
  // Validation after epoch `epoch` over this rank's share, summed over the ranks (every rank
  // calls it): valid_loss and the task's metrics; empty without validation data.
  virtual std::map<std::string, double> validate(int64_t epoch) = 0;
  // The metric that ranks end-of-epoch checkpoints and its direction (the loop sets `keep`);
  // no metric (keep the newest) without validation data.
  virtual RetentionPolicy retention() const = 0;

  // The model file of a checkpoint (model.masr: model, tokenizer, normalizer statistics), and
  // loading its parameters back into the model being trained.
  virtual void save_model(const std::string& path) const = 0;
  virtual void load_model(const std::string& path) = 0;
  // Averages model files (`best_first`, ranked by `policy`) into `path`, and logs it.
  virtual void average_models(const std::vector<std::string>& best_first,
                              const RetentionPolicy& policy, const std::string& path) const = 0;
  // Rank 0, after the final model is written to `model_path`: lines for train_log.txt and the
  // progress output (the LM's test perplexity).
  virtual std::vector<std::string> final_report(const std::string& /*model_path*/) { return {}; }
};

// make() on rank 0 first, then, once rank 0 is done, on the other ranks: rank 0 writes what the
// others then read (a tokenizer trained when missing). One process: make().
template <typename Make>
auto rank0_first(DataParallel& parallel, const Make& make) -> decltype(make()) {
  decltype(make()) out{};
  if (parallel.is_main()) out = make();
  if (parallel.world_size() > 1) parallel.sum(0.0);  // a barrier
  if (!parallel.is_main()) out = make();
  return out;
}

}  // namespace masr::train
