// lib/runtime/benchmark.h
// The benchmark protocol of `mamba-asr bench`: warm up, repeat, report median and spread, print
// for people or as JSON lines. Subsystems register named benchmarks (register_benchmark) from
// their register function; `mamba-asr bench NAME` runs them.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/device.h"
#include "runtime/precision.h"

namespace masr::runtime {

struct BenchSettings {
  int warmup = 3;
  int repeat = 10;
  std::string hparams;  // an optional model for benchmarks that need one
  // For the model step benchmarks (train-step, decode-rtf): batch sizes to sweep (empty: each
  // benchmark's default), utterance length, device and training precision.
  std::vector<int64_t> batches;
  double seconds = 4.0;
  double tokens_per_second = 0.0;  // train-step transcripts (0: LibriSpeech-like, StepSpec)
  DeviceChoice device = DeviceChoice::cpu();  // resolved
  Precision precision = Precision::kFp32;
  // train-step: time the step's phases (train/step_profile.h) over the timed repetitions; the
  // table goes to stderr and each phase's median into the result's metrics (profile.<phase>_ms).
  bool profile = false;
  // train-parity: a folder with the Python reference's initial weights (model.ckpt) and batch
  // (batch.pt), as ../shared/pyref's ref_train_step.py --save-init writes them.
  std::string init;
  // train-step on CUDA (LibTorch >= 2): a Chrome trace (Kineto, CPU + CUDA activity) of 3 timed
  // steps written to this file, for a kernel-level breakdown (bench/trace_summary.py).
  std::string trace;
  // train-step: batch shapes to cycle through (> 1: toolkit/step_bench.h StepSpec::shapes) and
  // ragged relative lengths (StepSpec::ragged).
  int64_t shapes = 1;
  std::string ragged;
  // train-step: the batch shapes of a training run (its batch_shapes.tsv), each timed, and the
  // sum over them of batches x median step.
  std::string shapes_from;
  // loader: worker counts to sweep (empty: 0, 1, 2 on the built-in corpus; 1, 2, 4, ... up to
  // the cores with --input).
  std::vector<int64_t> workers;
  // For decode-files: a trained model, its inputs (as `mamba-asr decode` takes them) and search.
  std::string model;
  std::vector<std::string> inputs;
  std::string search = "greedy";
  double batch_seconds = 0.0;  // padded audio per batch (0: --batch alone)
  // encoder --lengths (runtime/encoder_length_bench.h): audio lengths in seconds to sweep (empty:
  // the fixed 10 s encoder benchmark), the most seconds one encoder may spend on one length
  // (probe, warm-up and repetitions), and an SVG plot of the sweep to write.
  std::vector<double> lengths;
  double time_limit = 600.0;
  std::string svg;
  // long-audio: the peak memory (MiB) a length may reach before its result fails (0: no bound).
  double memory_limit_mib = 0.0;
};

// One measured quantity: per-repetition samples of a time, plus a derived throughput.
struct BenchResult {
  std::string name;             // e.g. "fbank/16k/10s"
  std::vector<double> seconds;  // one sample per repetition
  double work = 0.0;            // units of work per repetition (audio seconds, state updates, ...)
  std::string work_unit;        // e.g. "audio-s", "state-updates"
  std::string note;             // shapes, threads, anything needed to reproduce
  // Further named numbers (rtf, latency_p90_ms, peak_bytes, ...), reported in every format.
  std::vector<std::pair<std::string, double>> metrics;
  // A bound the benchmark asserts and this result missed (empty: none, or none asserted); shown
  // in every format, and `mamba-asr bench` then exits with status 1.
  std::string failed;

  double median() const;
  double percentile(double p) const;  // p in [0, 100], linear interpolation
  double throughput() const { return median() > 0 ? work / median() : 0.0; }  // work per second
};

// Runs `fn` warmup times untimed, then repeat times timed (steady_clock).
BenchResult measure(const std::string& name, const BenchSettings& settings,
                    const std::function<void()>& fn);

using BenchFn = std::function<std::vector<BenchResult>(const BenchSettings&)>;

struct Benchmark {
  std::string name;
  std::string description;
  BenchFn run;
  bool only_when_named = false;  // needs inputs (a model, files): not part of a bare `bench`
};

void register_benchmark(Benchmark benchmark);
const std::vector<Benchmark>& benchmarks();

enum class ResultFormat { kTable, kJson, kCsv, kMarkdown };

// A table for people (median, p10-p90, throughput, metrics), one JSON object per line, CSV with a
// header line, or a Markdown table (llama-bench's formats).
std::string format_results(const std::vector<BenchResult>& results, ResultFormat format);
std::string format_results(const std::vector<BenchResult>& results, bool json);

}  // namespace masr::runtime
