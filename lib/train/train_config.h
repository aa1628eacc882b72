// lib/train/train_config.h
// The trainer's settings, read from an hparams file's SpeechBrain top-level keys (reference §1.2,
// §1.3) plus a few of ours (ckpt_interval_steps, log_interval); validates and prints itself.
#pragma once

#include "data/manifest.h"

#include <cstdint>
#include <string>

#include "data/sampler.h"
#include "hparams/hparams.h"
#include "runtime/precision.h"
#include "train/losses.h"
#include "train/noam_scheduler.h"
#include "train/optimizer.h"

namespace masr::train {

struct BatchingConfig {
  bool dynamic = true;
  data::DynamicBatchOptions dynamic_options;
  data::FixedBatchOptions fixed_options;
};

struct TrainConfig {
  std::string output_folder, save_folder, train_log;
  // `train --init-model FILE` (TrainRunOptions::init_model): the tokenizer comes from that
  // file when the save folder has none.
  std::string init_model;
  std::string train_csv, valid_csv;
  // `$data_root` in CSV fields becomes data_folder, as SpeechBrain's train.py passes
  // replacements={"data_root": data_folder} to its dataset loaders.
  std::string data_folder;
  data::Replacements csv_replacements() const;
  int64_t number_of_epochs = 1;
  int64_t seed = 0;
  int64_t grad_accumulation_factor = 1;
  // Dynamic batching: the batches of one optimizer step (over ranks and accumulation) are of
  // similar padded length (DynamicBatchOptions::step_round). hparams `bucket_aligned_steps`.
  bool bucket_aligned_steps = true;
  // Batches padded to recurring shapes (collate): audio to a grid of lengths 2 % apart in
  // 40 ms units, transcripts with BOS/EOS to one 10 % apart in units of 8 tokens. On a GPU each
  // new batch shape costs the host cuBLAS/cuDNN planning for every matrix product and
  // convolution (23 % of a ConMamba-L step when every step has a new shape); on the grid shapes
  // recur within an epoch. The padding is masked like any other. On for CUDA training
  // (TrainLoop; MASR_SHAPE_GRID=0 turns it off), off on the CPU.
  bool recurring_shapes = false;
  double max_grad_norm = 5.0;
  runtime::Precision precision = runtime::Precision::kFp32;  // bf16 / fp16 on CUDA only
  // Encoder layers keep only their inputs and run again in the backward (nn/checkpoint.h).
  bool activation_checkpointing = false;
  int sample_rate = 16000;
  int num_workers = 0;
  BatchingConfig train_batching, valid_batching;
  int64_t valid_search_interval = 1;
  int64_t avg_checkpoints = 1;
  double ckpt_interval_minutes = 0.0;  // SpeechBrain's intra-epoch checkpoints; 0: off
  int64_t ckpt_interval_steps = 0;     // ours: every N optimizer steps; 0: off
  int64_t log_interval = 10;           // optimizer steps between log.jsonl step records
  // Losses and tokens.
  double ctc_weight = 0.3;
  double label_smoothing = 0.0;
  LossReduction reduction = LossReduction::kBatchMean;
  int64_t blank_index = 0, bos_index = 1, eos_index = 2, pad_index = 0;
  int64_t output_neurons = 0;
  std::string token_type = "unigram";
  double character_coverage = 1.0;
  OptimizerConfig optimizer;
  NoamConfig scheduler;
  bool has_scheduler = false;
  // A language model (train/lm_train_task.h): its text may come from lm_* files, not train_csv.
  bool language_model = false;

  void validate() const;  // config errors name the key
  std::string to_string() const;
};

TrainConfig train_config_from(const hparams::Hparams& hp, bool language_model = false);

}  // namespace masr::train
