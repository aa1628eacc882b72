// lib/toolkit/step_bench.h
// The two measurements runtime planning and `bench` make on a model: a training step (forward,
// backward, optimizer step on random audio) and a decode (features, encoder, CTC head in
// inference mode), with peak memory.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/benchmark.h"

namespace masr::hparams {
class Hparams;
}
namespace masr::models {
class AsrModel;
}

namespace masr::toolkit {

struct StepSpec {
  runtime::DeviceChoice device = runtime::DeviceChoice::cpu();  // resolved: cpu | cuda:N | mps
  runtime::Precision precision = runtime::Precision::kFp32;     // bf16 / fp16: autocast on CUDA
  int64_t batch = 1;                                            // utterances
  double seconds = 4.0;                                         // length of each random utterance
  // Tokens per second of each random transcript; 0: about LibriSpeech's (12 characters or 3
  // subword units per second, by the vocabulary's size).
  double tokens_per_second = 0.0;
  // > 1: cycle through this many batch shapes of about the same audio (utterances of 0.7-1.3 x
  // `seconds`, as many as keep batch x seconds), as real training's batches change shape.
  int64_t shapes = 1;
  // Random relative lengths 0.85-1 (the longest 1), so that padding masks are in play as in real
  // batches: "audio", "tokens", "both"; empty: every relative length 1.
  std::string ragged;
  // > 0: exactly this many samples per utterance (instead of `seconds`) and tokens per
  // transcript (instead of tokens_per_second): a real batch's padded shape (--shapes-from).
  int64_t samples = 0;
  int64_t tokens = 0;
  // CUDA graphs: keep the graphs of the earlier runs (one memory pool for every shape, as `train`
  // holds them) instead of a new set per run. --shapes-from: a set per shape kept each shape's
  // pool alive and filled an H200 after 9 of 139 shapes (2026-11-29).
  bool keep_graphs = false;
};

// A model with its optimizer, ready to be stepped on synthetic batches.
class TrainStepBench {
 public:
  // Builds the task and an optimizer (the hparams' own, accumulation 1) on `device`.
  TrainStepBench(const hparams::Hparams& hp, const runtime::DeviceChoice& device);
  ~TrainStepBench();
  // Times forward + backward + optimizer step; work is audio seconds; metrics carry the peak
  // memory ("peak_bytes"). Throws what LibTorch throws (out of memory included).
  runtime::BenchResult run(const StepSpec& spec, const runtime::BenchSettings& settings);
  // The CUDA graphs' shape keys of the last run() (empty without graphs).
  std::vector<std::string> graph_keys() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Times batched decoding: Fbank + normalization + encoder + CTC log-probabilities + argmax, in
// inference mode. Metrics: rtf (median time / audio seconds), rtfx (its inverse), latency p50 and
// p90 per batch in ms, peak_bytes.
class DecodeBench {
 public:
  DecodeBench(const hparams::Hparams& hp, const runtime::DeviceChoice& device);
  ~DecodeBench();
  runtime::BenchResult run(const StepSpec& spec, const runtime::BenchSettings& settings);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Readies a model built from hparams (random weights) for evaluation: a fresh model has no global
// normalization statistics, which evaluation requires, so one training-mode feature pass over a
// second of random audio gives it some; then eval().
void prime_for_evaluation(models::AsrModel& model, int sample_rate);

// The text of every token id of a model without a tokenizer (random weights): "_0", "_1", ...
std::vector<std::string> placeholder_pieces(int64_t vocab_size);

// Registers "train-step" and "decode-rtf" with `mamba-asr bench` (--hparams, --batch, --seconds).
void register_step_benchmarks();

}  // namespace masr::toolkit
