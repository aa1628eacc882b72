// lib/toolkit/step_bench.cpp
// The train step mirrors TrainLoop::train_batch (autocast forward, OptimizerStepper backward and
// step); the decode mirrors the greedy CTC path of `mamba-asr decode`.
#include "toolkit/step_bench.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/string_printf.h"
#include "features/augment/interface.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/torch_save_reader.h"
#include "nn/checkpoint.h"
#include "runtime/autocast.h"
#include "runtime/compute_stream.h"
#include "runtime/kineto_trace.h"
#include "runtime/peak_memory.h"
#include "train/asr_task.h"
#include "train/cuda_graph_step.h"
#include "train/data_parallel.h"
#include "train/optimizer_stepper.h"
#include "train/step_profile.h"
#include "train/train_config.h"

namespace masr::toolkit {
namespace {

// Random audio and tokens shaped like a LibriSpeech batch: about 12 characters (or 3 subword
// units) per second, fewer than the 25 encoder frames per second that CTC needs.
// A batch of full-length utterances (every relative length 1): wav (B, S), tokens (B, U).
train::AsrBatch full_length_batch(const at::Tensor& wav, const at::Tensor& tokens, int64_t bos,
                                  int64_t eos, const std::string& id_prefix, double sample_rate) {
  const int64_t batch = wav.size(0);
  train::AsrBatch b;
  for (int64_t i = 0; i < batch; ++i) b.ids.push_back(id_prefix + std::to_string(i));
  b.words.assign(static_cast<size_t>(batch), "");
  b.wav = wav.to(torch::kFloat);
  b.wav_rel = torch::ones({batch});
  b.tokens = tokens.to(torch::kLong);
  b.tokens_rel = torch::ones({batch});
  b.tokens_bos = torch::cat({torch::full({batch, 1}, bos, torch::kLong), b.tokens}, 1);
  b.tokens_eos = torch::cat({b.tokens, torch::full({batch, 1}, eos, torch::kLong)}, 1);
  b.tokens_eos_rel = torch::ones({batch});
  b.audio_seconds = static_cast<double>(b.wav.numel()) / sample_rate;
  return b;
}

train::AsrBatch synthetic_batch(const StepSpec& spec, int64_t batch, double seconds, int64_t vocab,
                                int64_t bos, int64_t eos, int sample_rate) {
  const int64_t samples =
      spec.samples > 0 ? spec.samples : static_cast<int64_t>(seconds * sample_rate);
  const double per_s = spec.tokens_per_second > 0 ? spec.tokens_per_second : vocab <= 100 ? 12 : 3;
  const int64_t u =
      spec.tokens > 0 ? spec.tokens : std::max<int64_t>(1, static_cast<int64_t>(seconds * per_s));
  train::AsrBatch b =
      full_length_batch(torch::randn({batch, samples}) * 0.1,
                        torch::randint(3, std::max<int64_t>(4, vocab), {batch, u}, torch::kLong),
                        bos, eos, "synthetic-", sample_rate);
  const bool ragged_audio = spec.ragged == "audio" || spec.ragged == "both";
  const bool ragged_tokens = spec.ragged == "tokens" || spec.ragged == "both";
  if (ragged_audio && batch > 1) {
    // Relative lengths 0.85-1 with the longest exactly 1; zeros past each end, as the loader pads.
    at::Tensor rel = 0.85 + 0.15 * torch::rand({batch});
    rel[0] = 1.0;
    b.wav_rel = rel;
    b.wav = b.wav * (torch::arange(samples).unsqueeze(0) < (rel * samples).unsqueeze(1));
    b.audio_seconds = rel.sum().item<double>() * static_cast<double>(samples) / sample_rate;
  }
  if (ragged_tokens && batch > 1) {
    at::Tensor trel = 0.85 + 0.15 * torch::rand({batch});
    trel[0] = 1.0;
    b.tokens_rel = trel;
    b.tokens_eos_rel = trel;  // close enough for timing: the mask differs by one token
  }
  return b;
}

std::string shape_note(const StepSpec& spec) {
  std::string note =
      string_printf("%s %s, batch %lld x %.1f s, %d threads", spec.device.str().c_str(),
                    runtime::precision_name(spec.precision), static_cast<long long>(spec.batch),
                    spec.seconds, at::get_num_threads());
  if (spec.tokens_per_second > 0) note += string_printf(", %.1f tokens/s", spec.tokens_per_second);
  return note;
}

}  // namespace

struct TrainStepBench::State {
  // First made, last gone: every step on one CUDA stream, as `train` runs them
  // (runtime/compute_stream.h).
  std::unique_ptr<runtime::ComputeStream> stream;
  train::TrainConfig config;
  std::unique_ptr<train::AsrTask> task;
  std::unique_ptr<train::OptimizerStepper> stepper;
  std::unique_ptr<train::GraphedSteps> graphs;  // as `train` uses them (train/cuda_graph_step.h)
  train::LossOptions loss;
  at::Device device = at::kCPU;
};

TrainStepBench::TrainStepBench(const hparams::Hparams& hp, const runtime::DeviceChoice& device)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.config = train::train_config_from(hp);
  s.config.grad_accumulation_factor = 1;  // every timed step is a full optimizer step
  s.device = runtime::torch_device(device);
  s.stream = std::make_unique<runtime::ComputeStream>(s.device);
  // Autocast is CUDA-only (runtime/autocast.h).
  if (!s.device.is_cuda()) s.config.precision = runtime::Precision::kFp32;
  s.task = std::make_unique<train::AsrTask>(hp);
  s.task->to(s.device);
  s.task->train(true);
  s.stepper = std::make_unique<train::OptimizerStepper>(
      s.config, s.task->parameters(), s.device.is_cuda(), std::make_shared<train::DataParallel>());
  s.loss = train::loss_options_of(s.config);
}

TrainStepBench::~TrainStepBench() = default;

std::vector<std::string> TrainStepBench::graph_keys() const {
  return state_->graphs ? state_->graphs->shape_keys() : std::vector<std::string>{};
}

runtime::BenchResult TrainStepBench::run(const StepSpec& spec,
                                         const runtime::BenchSettings& settings) {
  State& s = *state_;
  torch::manual_seed(0);
  // One batch, or `shapes` of them from 0.7 to 1.3 times the utterance length, each with about
  // batch x seconds of audio, cycled through in the timed steps.
  std::vector<train::AsrBatch> batches;
  const int64_t shapes = std::max<int64_t>(1, spec.shapes);
  for (int64_t k = 0; k < shapes; ++k) {
    const double f = shapes == 1 ? 1.0 : 0.7 + 0.6 * static_cast<double>(k) / (shapes - 1);
    const double seconds = spec.seconds * f;
    const auto n = std::max<int64_t>(
        1, std::llround(static_cast<double>(spec.batch) * spec.seconds / seconds));
    batches.push_back(synthetic_batch(spec, n, seconds, s.config.output_neurons, s.config.bos_index,
                                      s.config.eos_index, s.config.sample_rate)
                          .to(s.device));
  }
  // The audio of the timed steps, for the throughput.
  double timed_audio = 0.0;
  for (int i = settings.warmup; i < settings.warmup + settings.repeat; ++i) {
    timed_audio += batches[static_cast<size_t>(i) % batches.size()].audio_seconds;
  }
  at::Generator generator = features::make_generator(0);
  const runtime::Precision precision =
      s.device.is_cuda() ? spec.precision : runtime::Precision::kFp32;
  if (precision != s.config.precision) {
    // The stepper's loss scaler follows the precision (on for fp16 on CUDA): a new one.
    s.config.precision = precision;
    s.stepper = std::make_unique<train::OptimizerStepper>(s.config, s.task->parameters(),
                                                          s.device.is_cuda(),
                                                          std::make_shared<train::DataParallel>());
  }
  // CUDA graphs as training uses them once it captures: a shape's first step captured, the rest
  // replayed (the warm-up covers the captures with --warmup >= shapes).
  if (!spec.keep_graphs) s.graphs.reset();
  if (!s.graphs && train::GraphedSteps::supported(s.device) && s.stepper->graphable()) {
    s.graphs = std::make_unique<train::GraphedSteps>(s.task->parameters(), /*capture=*/true,
                                                     s.stepper->graph_update(true));
    // As `train` with CUDA graphs: 8 MiB cuBLAS workspaces (runtime/compute_stream.h). LibTorch
    // reads the variable at its first matrix product, so it is the first run's steps that decide.
    runtime::small_cublas_workspaces_for_graphs();
  }
  const train::GraphStats graphs_before = s.graphs ? s.graphs->stats() : train::GraphStats{};
  runtime::reset_peak_memory(spec.device);
  train::StepProfile profile(s.device);
  std::optional<train::ActiveProfile> active;
  int calls = 0;
  runtime::KinetoTrace trace;
  runtime::BenchResult r = runtime::measure(
      std::string("train-step/") + runtime::precision_name(precision) + "/b" +
          std::to_string(spec.batch),
      settings, [&] {
        // Only the timed repetitions are profiled (the first `warmup` calls are not); the trace
        // covers the first three of them.
        if (settings.profile && calls == settings.warmup) active.emplace(&profile);
        if (!settings.trace.empty() && calls == settings.warmup) {
          try {
            trace.start();
          } catch (const std::exception& e) {  // the timing goes on without the trace
            std::cerr << "bench: no trace: " << e.what() << "\n";
          }
        }
        if (!settings.trace.empty() && calls == settings.warmup + 3) trace.stop(settings.trace);
        const train::AsrBatch& batch = batches[static_cast<size_t>(calls) % batches.size()];
        ++calls;
        if (active) profile.begin_step("features");
        at::Tensor loss;
        if (s.graphs) {
          runtime::AutocastGuard autocast(s.device, precision);
          s.stepper->backward_graphed(*s.graphs,
                                      s.task->prepare(batch, true, 1, &generator).inputs.list(),
                                      s.task->loss_of_inputs(s.loss), &loss);
        } else {
          const int cuda = s.device.is_cuda() ? std::max<int>(0, s.device.index()) : -1;
          runtime::memory_point(cuda, "step start");
          {
            runtime::AutocastGuard autocast(s.device, precision);
            const nn::ActivationCheckpointing checkpointing(s.config.activation_checkpointing);
            loss = s.task->forward(batch, true, 1, &generator, s.loss).loss;
          }
          runtime::memory_point(cuda, "forward");
          s.stepper->backward(loss);
          runtime::memory_point(cuda, "backward and update");
        }
        if (active) profile.end_step();
        runtime::synchronize_device(spec.device);
      });
  active.reset();
  trace.stop(settings.trace);
  r.work = timed_audio / settings.repeat;  // the mean step's audio
  r.work_unit = "audio-s";
  r.note = shape_note(spec) + ", fwd+bwd+" + s.config.optimizer.type;
  if (shapes > 1) r.note += string_printf(", %lld shapes", static_cast<long long>(shapes));
  if (!spec.ragged.empty()) r.note += ", ragged lengths (" + spec.ragged + ")";
  r.metrics.emplace_back("peak_bytes", static_cast<double>(runtime::peak_memory(spec.device)));
  if (s.graphs) {
    const train::GraphStats g = s.graphs->stats();
    r.note += s.graphs->steps_optimizer() ? ", CUDA graphs (the optimizer's update inside)"
                                          : ", CUDA graphs";
    // This run's steps (kept graphs carry the counts of earlier runs).
    r.metrics.emplace_back("graphs.replayed",
                           static_cast<double>(g.replayed - graphs_before.replayed));
    r.metrics.emplace_back("graphs.captured",
                           static_cast<double>(g.captured - graphs_before.captured));
    r.metrics.emplace_back("graphs.eager", static_cast<double>(g.eager - graphs_before.eager));
  }
  if (settings.profile) {
    for (const train::PhaseSummary& p : profile.summary()) {
      r.metrics.emplace_back("profile." + p.name + "_ms", p.median_ms);
      if (s.device.is_cuda()) {
        r.metrics.emplace_back("profile." + p.name + "_syncs", p.syncs);
        r.metrics.emplace_back("profile." + p.name + "_host_ms", p.host_median_ms);
      }
    }
    std::cerr << "train-step profile, " << shape_note(spec) << ":\n" << profile.table();
    if (!settings.trace.empty()) {  // with a trace: the profile's JSON (sync sites) beside it
      std::ofstream(settings.trace + ".profile.json") << profile.json().dump(2) << "\n";
    }
  }
  return r;
}

struct DecodeBench::State {
  std::shared_ptr<models::AsrModel> model;
  int sample_rate = 16000;
};

DecodeBench::DecodeBench(const hparams::Hparams& hp, const runtime::DeviceChoice& device)
    : state_(std::make_unique<State>()) {
  state_->model = models::AsrModel::from_hparams(hp);
  if (!device.is_cpu()) state_->model->to(runtime::torch_device(device));
  if (const auto* rate = hp.find("sample_rate")) state_->sample_rate = rate->as_int();
  prime_for_evaluation(*state_->model, state_->sample_rate);
}

void prime_for_evaluation(models::AsrModel& model, int sample_rate) {
  // Outside inference mode, so that the statistics stay ordinary tensors that a train step
  // sharing the modules may update later.
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  const at::Tensor wav = (torch::randn({1, sample_rate}) * 0.1).to(model.device());
  (void)model.features(wav, {}, 1, /*update_norm=*/true);
  model.eval();
}

std::vector<std::string> placeholder_pieces(int64_t vocab_size) {
  std::vector<std::string> pieces;
  for (int64_t id = 0; id < vocab_size; ++id) pieces.push_back("_" + std::to_string(id));
  return pieces;
}

DecodeBench::~DecodeBench() = default;

runtime::BenchResult DecodeBench::run(const StepSpec& spec,
                                      const runtime::BenchSettings& settings) {
  auto& model = *state_->model;
  c10::InferenceMode inference;
  torch::manual_seed(0);
  const auto samples = static_cast<int64_t>(spec.seconds * state_->sample_rate);
  const at::Tensor wav = (torch::randn({spec.batch, samples}) * 0.1).to(model.device());
  runtime::reset_peak_memory(spec.device);
  runtime::BenchResult r = runtime::measure("decode/b" + std::to_string(spec.batch), settings, [&] {
    const models::Encoded enc = model.encode(model.features(wav));
    (void)model.ctc_log_probs(enc.out).argmax(-1).cpu();
  });
  const double audio = spec.seconds * static_cast<double>(spec.batch);
  r.work = audio;
  r.work_unit = "audio-s";
  r.note = shape_note(spec) + ", greedy CTC";
  const double rtf = r.median() / audio;
  r.metrics = {{"rtf", rtf},
               {"rtfx", rtf > 0 ? 1.0 / rtf : 0.0},
               {"latency_p50_ms", r.percentile(50) * 1e3},
               {"latency_p90_ms", r.percentile(90) * 1e3},
               {"peak_bytes", static_cast<double>(runtime::peak_memory(spec.device))}};
  return r;
}

}  // namespace masr::toolkit

namespace masr::toolkit {
namespace {

hparams::Hparams load_for_bench(const runtime::BenchSettings& settings) {
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  // Relative to the repository root, like the encoder benchmark.
  return hparams::load_file(
      settings.hparams.empty() ? "hparams/CTC/conmamba_tiny.yaml" : settings.hparams, options);
}

StepSpec spec_of(const runtime::BenchSettings& settings, int64_t batch,
                 runtime::Precision precision) {
  StepSpec spec;
  spec.device = settings.device;
  spec.precision = precision;
  spec.batch = batch;
  spec.seconds = settings.seconds;
  spec.tokens_per_second = settings.tokens_per_second;
  spec.shapes = settings.shapes;
  spec.ragged = settings.ragged;
  return spec;
}

// One result per batch size: --batch, else `defaults`.
template <typename Bench>
std::vector<runtime::BenchResult> sweep_batches(Bench& bench,
                                                const runtime::BenchSettings& settings,
                                                std::vector<int64_t> defaults,
                                                runtime::Precision precision) {
  const std::vector<int64_t> batches = settings.batches.empty() ? defaults : settings.batches;
  std::vector<runtime::BenchResult> results;
  for (int64_t batch : batches) {
    results.push_back(bench.run(spec_of(settings, batch, precision), settings));
  }
  return results;
}

// --shapes-from FILE: the step at each batch shape of a training run (its batch_shapes.tsv:
// "batches<TAB>shape key" lines, the key as GraphedSteps writes it: the model inputs' dtypes and
// sizes, features first, the CTC targets third), then a summary: the sum over the shapes of
// batches x median step, which a real epoch's step time (its epoch line) is set against.
std::vector<runtime::BenchResult> run_train_step_shapes(TrainStepBench& bench,
                                                        const runtime::BenchSettings& settings,
                                                        int hop_samples) {
  std::ifstream in(settings.shapes_from);
  if (!in) throw_input_error("bench train-step: cannot read --shapes-from " + settings.shapes_from);
  struct Row {
    int64_t batches, batch, frames, tokens;
    std::string key;
  };
  std::vector<Row> rows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    const size_t tab = line.find('\t');
    double divisor = 0;
    std::vector<train::InputSpec> specs;
    char* end = nullptr;
    const long long n = tab == std::string::npos ? 0 : std::strtoll(line.c_str(), &end, 10);
    if (n <= 0 || end != line.c_str() + tab ||
        !train::GraphedSteps::parse_shape_key(line.substr(tab + 1), &divisor, &specs) ||
        specs.size() < 3 || specs[0].sizes.size() != 3 || specs[2].sizes.size() != 2) {
      throw_input_error(settings.shapes_from + ":" + std::to_string(number) +
                        ": expected \"batches<TAB>shape key\" as train's batch_shapes.tsv has");
    }
    rows.push_back(
        {n, specs[0].sizes[0], specs[0].sizes[1], specs[2].sizes[1], line.substr(tab + 1)});
  }
  if (rows.empty()) throw_input_error("bench train-step: no shapes in " + settings.shapes_from);
  std::vector<runtime::BenchResult> results;
  double total = 0.0;
  int64_t batches = 0;
  for (const Row& row : rows) {
    StepSpec spec = spec_of(settings, row.batch, settings.precision);
    // The feature frames of `samples` are 1 + samples / hop (centred frames): the row's frames.
    spec.samples = (row.frames - 1) * hop_samples;
    spec.seconds = static_cast<double>(spec.samples) / (100.0 * hop_samples);  // for the note
    spec.tokens = row.tokens;
    spec.shapes = 1;
    spec.keep_graphs = true;  // every shape's graph in one pool, as the real epoch held them
    const std::vector<std::string> keys_before = bench.graph_keys();
    runtime::BenchResult r = bench.run(spec, settings);
    r.name += "/t" + std::to_string(row.frames) + "/u" + std::to_string(row.tokens);
    // With graphs, the synthetic batch must have made the very key of the real one, and only it.
    const std::vector<std::string> keys = bench.graph_keys();
    if (!keys.empty()) {
      std::vector<std::string> added;
      for (const std::string& key : keys) {
        if (std::find(keys_before.begin(), keys_before.end(), key) == keys_before.end()) {
          added.push_back(key);
        }
      }
      const bool same = added.size() == 1 && added.front() == row.key;
      r.metrics.emplace_back("same_shape", same ? 1.0 : 0.0);
      if (!same) {
        std::cerr << "bench train-step: the synthetic batch made "
                  << (added.empty() ? std::string("no new shape") : added.front())
                  << " where the real one's shape is " << row.key << "\n";
      }
    }
    r.metrics.emplace_back("batches", static_cast<double>(row.batches));
    total += static_cast<double>(row.batches) * r.median();
    batches += row.batches;
    results.push_back(std::move(r));
  }
  runtime::BenchResult sum;
  sum.name = "train-step/shapes-from";
  sum.seconds = {total};
  sum.note =
      string_printf("%lld batches of %zu shapes from %s: the sum of batches x median step",
                    static_cast<long long>(batches), rows.size(), settings.shapes_from.c_str());
  sum.metrics.emplace_back("batches", static_cast<double>(batches));
  sum.metrics.emplace_back("shapes", static_cast<double>(rows.size()));
  results.push_back(std::move(sum));
  return results;
}

std::vector<runtime::BenchResult> run_train_step(const runtime::BenchSettings& settings) {
  const hparams::Hparams hp = load_for_bench(settings);
  TrainStepBench bench(hp, settings.device);
  if (!settings.shapes_from.empty()) {
    const train::TrainConfig config = train::train_config_from(hp);
    return run_train_step_shapes(bench, settings, config.sample_rate / 100);
  }
  return sweep_batches(bench, settings, {1, 4}, settings.precision);
}

// The reference's batch.pt: {"wavs": (B, S) float, "tokens": (B, U) int64, "bos": int, "eos": int},
// all relative lengths 1 (ref_train_step.py's batch).
train::AsrBatch reference_batch(const std::string& path, double sample_rate) {
  const auto value = models::read_torch_save(path);
  const models::PyValue* wavs = value->find("wavs");
  const models::PyValue* tokens = value->find("tokens");
  const models::PyValue* bos = value->find("bos");
  const models::PyValue* eos = value->find("eos");
  using Kind = models::PyValue::Kind;
  if (wavs == nullptr || wavs->kind != Kind::kTensor || tokens == nullptr ||
      tokens->kind != Kind::kTensor || bos == nullptr || bos->kind != Kind::kInt ||
      eos == nullptr || eos->kind != Kind::kInt) {
    throw_input_error(path +
                      ": expected a dict with wavs and tokens (tensors), bos and eos (ints)");
  }
  return full_length_batch(wavs->tensor, tokens->tensor, bos->i, eos->i, "reference-", sample_rate);
}

// Training-math parity with the Python reference: the same initial weights and batch, float32, no
// augmentation (dropout is whatever the hparams say: set it to 0 on both sides); the loss of each
// of --repeat steps (warm-up included, since every step counts) as metrics loss.<step>.
std::vector<runtime::BenchResult> run_train_parity(const runtime::BenchSettings& settings) {
  if (settings.init.empty()) {
    throw Error(ErrorKind::kUsage,
                "bench train-parity: give --init DIR (model.ckpt and batch.pt of the reference's "
                "ref_train_step.py --save-init DIR)");
  }
  const hparams::Hparams hp = load_for_bench(settings);
  train::TrainConfig config = train::train_config_from(hp);
  config.grad_accumulation_factor = 1;
  config.precision = runtime::Precision::kFp32;
  const at::Device device = runtime::torch_device(settings.device);
  train::AsrTask task(hp);
  const auto model = models::AsrModel::from_hparams(hp);  // the same module objects as `task`
  model->load_speechbrain_weights(hp, settings.init + "/model.ckpt");
  task.to(device);
  task.train(true);
  train::OptimizerStepper stepper(config, task.parameters(), device.is_cuda(),
                                  std::make_shared<train::DataParallel>());
  const train::AsrBatch batch =
      reference_batch(settings.init + "/batch.pt", config.sample_rate).to(device);
  const train::LossOptions loss_options = train::loss_options_of(config);
  runtime::BenchResult r;
  r.name = "train-parity/fp32/b" + std::to_string(batch.wav.size(0));
  const int steps = settings.warmup + settings.repeat;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const at::Tensor loss = task.forward(batch, true, 1, nullptr, loss_options).loss;
    const double value = loss.item<double>();
    stepper.backward(loss);
    runtime::synchronize_device(settings.device);
    r.seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    r.metrics.emplace_back("loss." + std::to_string(i), value);
  }
  r.work = batch.audio_seconds;
  r.work_unit = "audio-s";
  r.note =
      settings.device.str() + " fp32, " + std::to_string(steps) + " steps from " + settings.init;
  return {r};
}

std::vector<runtime::BenchResult> run_decode(const runtime::BenchSettings& settings) {
  const hparams::Hparams hp = load_for_bench(settings);
  DecodeBench bench(hp, settings.device);
  return sweep_batches(bench, settings, {1, 8}, runtime::Precision::kFp32);
}

}  // namespace

void register_step_benchmarks() {
  runtime::register_benchmark(
      {"train-step",
       "Training step (forward + backward + optimizer step) of "
       "hparams/CTC/conmamba_tiny.yaml (or --hparams) on random audio of --seconds, "
       "--batch 1,4; audio-s/s and peak memory (RSS on CPU, CUDA max allocated)",
       run_train_step});
  runtime::Benchmark parity{
      "train-parity",
      "Training-math parity with the Python reference: --warmup + --repeat fp32 "
      "steps from its initial weights and batch (--init DIR, written by "
      "ref_train_step.py --save-init DIR), one loss per step (docs/training.md)",
      run_train_parity};
  parity.only_when_named = true;
  runtime::register_benchmark(parity);
  runtime::register_benchmark(
      {"decode-rtf",
       "Batched greedy-CTC decoding (Fbank, encoder, CTC head, inference mode) of "
       "hparams/CTC/conmamba_tiny.yaml (or --hparams), --batch 1,8 x --seconds; "
       "RTF, RTFx, latency p50/p90 per batch, peak memory",
       run_decode});
}

}  // namespace masr::toolkit
