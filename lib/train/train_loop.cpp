// lib/train/train_loop.cpp
// The epoch loop (Brain.fit with fit_batch and on_stage_end), one for every TrainTask.
#include "train/train_loop.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/env.h"
#include "core/error.h"
#include "core/log.h"
#include "core/string_printf.h"
#include "nn/checkpoint.h"
#include "runtime/autocast.h"
#include "runtime/compute_stream.h"
#include "runtime/device.h"
#include "runtime/peak_memory.h"
#include "train/asr_train_task.h"
#include "train/lm_data.h"
#include "train/lm_train_task.h"
#include "train/train_data.h"
#include "train/training_curves.h"

namespace masr::train {
namespace fs = std::filesystem;

at::Device pick_training_device(const runtime::DeviceChoice& choice) {
  if (choice.type == runtime::DeviceChoice::Type::kAuto) {
    return torch::cuda::is_available() ? at::Device(at::kCUDA) : at::kCPU;
  }
  return runtime::torch_device(choice);
}

namespace {

// Data-parallel ranks agree on a stop request (Ctrl-C, SIGTERM) and on a timed checkpoint every
// this many optimizer steps: one collective then, none in between; a stop waits at most this long.
constexpr int64_t kFlagAgreementSteps = 10;

std::unique_ptr<TrainTask> make_task(const hparams::Hparams& hp, const TrainConfig& config) {
  if (config.language_model) return std::make_unique<LmTrainTask>(hp);
  return std::make_unique<AsrTrainTask>();
}

}  // namespace

void mark_covered_settings(const hparams::Hparams& hp) {
  // SpeechBrain's Brain and its train.py use these objects; the trainer writes its own
  // checkpoints (save_folder), counts epochs (number_of_epochs), logs (train_log.txt, log.jsonl),
  // computes WER, CER and accuracy, moves `model` to the device, and computes its losses from the
  // top-level settings these objects refer to (ctc_weight, label_smoothing, blank_index, ...),
  // so their own arguments change nothing here.
  for (const char* key : {"checkpointer", "epoch_counter", "train_logger", "error_rate_computer",
                          "cer_computer", "acc_computer", "wer_computer", "modules", "log_softmax",
                          "ctc_cost", "seq_cost", "compute_cost"}) {
    hp.mark_read(key);
  }
}

const std::vector<std::string>& keys_outside_training() {
  static const std::vector<std::string> keys = {
      // data preparation (SpeechBrain's librispeech_prepare.py and the LM corpus download)
      "train_splits", "dev_splits", "test_splits", "skip_prep", "lm_corpus_path",
      "train_transcripts_pattern", "dev_transcripts_pattern", "test_transcripts_pattern",
      // the test stage after training
      "test_csv", "test_dataloader_opts", "test_search", "test_beam_search", "test_beam_size",
      "scorer_test_search", "output_wer_folder", "wer_file", "skip_train",
      // beam search and LM fusion (validation here decodes CTC greedily; `decode` has its own)
      "valid_search", "valid_beam_size", "scorer_valid_search", "min_decode_ratio",
      "max_decode_ratio", "lm_weight", "ctc_weight_decode", "lm_model", "ctc_scorer",
      "transformerlm_scorer", "pretrainer", "pretrained_lm_tokenizer_path", "no_lm", "beam_size",
      "beam_prune_logp", "token_prune_min_logp", "prune_history",
      // experiment tracking
      "use_wandb", "wandb_logger", "project", "resume"};
  return keys;
}

void read_training_settings(const hparams::Hparams& hp) {
  const TrainConfig config = train_config_from(hp, is_language_model(hp));
  mark_covered_settings(hp);
  // As AsrTrainTask::load and LmTrainTask::load (and ensure_tokenizer) read them.
  (void)hp.find("tokenizer");
  if (config.language_model) {
    (void)lm_corpus_from(hp);
    (void)hp.find("loss_reduction");
    (void)models::LmModel::from_hparams(hp);
    return;
  }
  const AsrTask task(hp);
  (void)models::AsrModel::from_hparams(hp);
  (void)speed_perturb_of(hp);
  (void)pad_silence_of(hp);
}

TrainLoop::TrainLoop(const hparams::Hparams& hp, TrainRunOptions options)
    : hp_(hp),
      options_(std::move(options)),
      config_(train_config_from(hp, is_language_model(hp))),
      task_(make_task(hp, config_)) {
  if (options_.ckpt_interval_steps >= 0) config_.ckpt_interval_steps = options_.ckpt_interval_steps;
  if (options_.activation_checkpointing) config_.activation_checkpointing = true;
  if (options_.speechbrain_batch_order) config_.bucket_aligned_steps = false;
  config_.init_model = options_.init_model;
  if (options_.ckpt_interval_minutes >= 0) {
    config_.ckpt_interval_minutes = options_.ckpt_interval_minutes;
  }
  parallel_ = options_.parallel ? options_.parallel : std::make_shared<DataParallel>();
  if (config_.bucket_aligned_steps) {
    // One optimizer step takes world_size x grad_accumulation_factor consecutive batches of
    // similar cost (data/sampler.h, group_rounds_by_cost), so one process accumulating N batches
    // still trains exactly as N ranks do.
    config_.train_batching.dynamic_options.step_round =
        static_cast<size_t>(parallel_->world_size() * config_.grad_accumulation_factor);
  }
  device_ = pick_training_device(options_.device);
  config_.recurring_shapes = device_.is_cuda() && !env_is("MASR_SHAPE_GRID", "0");
  if (!device_.is_cuda() && config_.precision != runtime::Precision::kFp32) {
    MASR_LOG_INFO("train: precision %s applies on CUDA only; training in fp32 on the CPU",
                  runtime::precision_name(config_.precision));
  }
  if (main()) {
    fs::create_directories(config_.output_folder);
    write_file_atomically((fs::path(config_.output_folder) / "hyperparams.yaml").string(),
                          hp.to_yaml());
  }
  task_->load(TaskContext{&hp, &config_, parallel_, device_});
  mark_covered_settings(hp);
  stepper_ = std::make_unique<OptimizerStepper>(config_, task_->parameters(), device_.is_cuda(),
                                                parallel_);
  if ((GraphedSteps::supported(device_) || GraphedSteps::split_requested()) &&
      stepper_->graphable()) {
    const bool capture = GraphedSteps::supported(device_);
    graphs_ = std::make_unique<GraphedSteps>(task_->parameters(), capture,
                                             stepper_->graph_update(capture));
    graphs_->set_inputs_like(task_->graph_inputs_like());
    if (graphs_->steps_optimizer() && parallel_->world_size() > 1 && main()) {
      MASR_LOG_INFO(
          "train: the gradient all-reduce (bucket by bucket, beside the backward) and the "
          "optimizer's update are part of each %s step (MASR_GRAPH_ALLREDUCE=1)",
          capture ? "CUDA-graph" : "split");
    }
    // Steps replayed as CUDA graphs run as fast with 8 MiB cuBLAS workspaces as with Hopper's
    // 32, and hold less memory (runtime/compute_stream.h). Only where steps will be captured: a
    // task without a split step (the LM), fp16 or activation checkpointing keeps the default.
    // Nothing has run a matrix product on the GPU yet, so LibTorch still reads the variable.
    if (capture && task_->graph_inputs_like() && runtime::small_cublas_workspaces_for_graphs()) {
      MASR_LOG_DEBUG(
          "train: CUBLAS_WORKSPACE_CONFIG=:4096:2 (8 MiB cuBLAS workspaces: CUDA graphs)");
    }
  }
  checkpointer_ = std::make_unique<Checkpointer>(config_.save_folder);
  progress_ = std::make_unique<Progress>(Progress::detect(options_.quiet || !main()));
  last_checkpoint_ = window_start_ = std::chrono::steady_clock::now();
  if (options_.profile_steps > 0) profile_ = std::make_unique<StepProfile>(device_);
  loaded_ = std::chrono::steady_clock::now();
}

TrainLoop::~TrainLoop() = default;

TrainOutcome TrainLoop::fit() {
  // Every step, captured or op by op, validation and checkpoints on one CUDA stream: cuBLAS
  // keeps a workspace per thread and stream (runtime/compute_stream.h).
  const runtime::ComputeStream compute_stream(device_);
  if (auto latest = checkpointer_->latest()) {
    restore(*latest);
  } else if (!options_.init_model.empty()) {
    task_->load_model(options_.init_model);
    stepper_->start_warm();
    MASR_LOG_INFO(
        "train: the weights from %s (--init-model); a fresh optimizer and schedule, from its "
        "step-1 rate %g",
        options_.init_model.c_str(), stepper_->lr());
  }
  if (parallel_->world_size() > 1) broadcast_parameters();
  logger_ = std::make_unique<TrainLogger>(config_.output_folder, config_.train_log, pos_.epoch - 1);
  MASR_LOG_INFO("train: %s; %s", task_->describe().c_str(), config_.to_string().c_str());
  while (pos_.epoch <= config_.number_of_epochs) {
    if (!train_epoch(pos_.epoch)) return TrainOutcome::kStopped;
    end_epoch();
  }
  if (!main()) return TrainOutcome::kFinished;
  const std::string path = average_checkpoints();
  for (const std::string& line : task_->final_report(path)) {
    logger_->log_text(line);
    progress_->message(line);
  }
  return TrainOutcome::kFinished;
}

void TrainLoop::broadcast_parameters() {
  // As DDP broadcasts them: rank 0's parameters, whatever the seeds (a sum with zeros elsewhere).
  std::vector<at::Tensor> parameters = task_->parameters();
  torch::NoGradGuard no_grad;
  if (!main()) {
    for (auto& p : parameters) p.zero_();
  }
  parallel_->sum_tensors(parameters);
}

// Data parallelism keeps one model: every rank applies the same averaged gradients to the same
// parameters, so theirs stay equal bit for bit (an all-reduce's result is the same on every
// rank). Once an epoch each rank's checksum (the sum and the sum of squares of its parameters,
// in double, in one order) is gathered: a rank whose parameters drifted (a collective that did
// not run, a rank that stepped alone) stops the run before its checkpoint is written.
void TrainLoop::check_ranks_agree(int64_t epoch) {
  torch::NoGradGuard no_grad;
  // Fault injection for the tests (as MASR_FAULT_DISK_FULL_AFTER_BYTES): MASR_FAULT_RANK_DRIFT=R
  // nudges rank R's first parameter before the check.
  if (const char* fault = std::getenv("MASR_FAULT_RANK_DRIFT");
      fault != nullptr && *fault != '\0' && std::atoi(fault) == parallel_->rank() &&
      !task_->parameters().empty()) {
    task_->parameters().front().add_(1e-3);
  }
  std::vector<at::Tensor> sums;
  for (const at::Tensor& p : task_->parameters()) {
    const at::Tensor d = p.detach().to(at::kDouble);
    sums.push_back(at::stack({d.sum(), d.square().sum()}));
  }
  if (sums.empty()) return;
  const at::Tensor all = parallel_->all_gather(at::stack(sums).sum(0)).cpu().contiguous();
  const double* c = all.data_ptr<double>();
  std::string differ;
  for (int r = 1; r < parallel_->world_size(); ++r) {
    if (c[2 * r] != c[0] || c[2 * r + 1] != c[1]) {
      differ += string_printf("%s rank %d (%.17g, %.17g)", differ.empty() ? "" : ",", r, c[2 * r],
                              c[2 * r + 1]);
    }
  }
  if (!differ.empty()) {
    throw Error(ErrorKind::kInternal,
                string_printf("data parallel: after epoch %lld the ranks' parameters differ: rank 0 "
                              "(sum, sum of squares) = (%.17g, %.17g), but%s; the epoch's "
                              "checkpoint is not written (MASR_CHECK_RANKS=0 skips this check)",
                              static_cast<long long>(epoch), c[0], c[1], differ.c_str()));
  }
  if (main()) {
    MASR_LOG_INFO("train: epoch %lld: the parameters are the same on all %d ranks",
                  static_cast<long long>(epoch), parallel_->world_size());
  }
}

runtime::DeviceChoice TrainLoop::cuda_choice() const {
  return {runtime::DeviceChoice::Type::kCuda, device_.index()};
}

void TrainLoop::end_epoch() {
  const int64_t epoch = pos_.epoch;
  const double peak_mib = device_.is_cuda()
                              ? static_cast<double>(runtime::peak_memory(cuda_choice())) / 1048576.0
                              : 0.0;
  std::map<std::string, double> metrics = task_->validate(epoch);
  const LossTotals::Average local = losses_.read().epoch;  // the epoch end's read-back
  if (main()) warn_skipped();
  if (graphs_ && main()) {
    MASR_LOG_INFO("train: %s", graphs_->stats().to_string().c_str());
    write_batch_shapes(epoch);
  }
  const double loss_sum = parallel_->sum(local.sum);
  const double loss_count = parallel_->sum(static_cast<double>(local.count));
  EpochRecord record{epoch, pos_.step, stepper_->lr(), loss_count > 0 ? loss_sum / loss_count : 0.0,
                     metrics};
  // Every rank's audio over rank 0's wall time: the ranks end their last step together.
  record.train_audio_seconds = parallel_->sum(epoch_audio_);
  record.train_seconds = epoch_seconds_;
  record.peak_gpu_mib = peak_mib;
  pos_ = {epoch + 1, 0, pos_.step};
  losses_.reset_epoch();
  shown_loss_ = record.train_loss;
  if (parallel_->world_size() > 1 && !env_is("MASR_CHECK_RANKS", "0")) check_ranks_agree(epoch);
  save_checkpoint(true, metrics);
  if (!main()) return;
  logger_->log_epoch(record);
  write_curves();
  std::string line =
      "epoch " + std::to_string(epoch) + ": train loss " + std::to_string(record.train_loss);
  for (const auto& [k, v] : metrics) line += ", " + k + " " + std::to_string(v);
  if (record.train_seconds > 0) {
    char rate[96];
    std::snprintf(rate, sizeof(rate), "; %.0f audio-s/s over the epoch's %.1f s of training",
                  record.train_audio_seconds / record.train_seconds, record.train_seconds);
    line += rate;
  }
  if (record.peak_gpu_mib > 0) {
    line += string_printf("; peak GPU memory %.0f MiB", record.peak_gpu_mib);
  }
  progress_->message(line);
}

// batch_shapes.tsv: this epoch's batches of each shape on rank 0 (the CUDA graphs' shape keys),
// most frequent first; `bench train-step --shapes-from` times the synthetic step at each of them,
// so that a real epoch can be set against the same steps without the loop around them.
void TrainLoop::write_batch_shapes(int64_t epoch) {
  const auto counts = graphs_->shape_counts();
  if (counts.empty()) return;
  std::vector<std::pair<int64_t, std::string>> rows;
  for (const auto& [key, seen] : counts) {
    const auto before = shapes_seen_.find(key);
    const int64_t n = seen - (before == shapes_seen_.end() ? 0 : before->second);
    if (n > 0) rows.emplace_back(n, key);
    shapes_seen_[key] = seen;
  }
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = "# epoch " + std::to_string(epoch) +
                     ", rank 0: batches<TAB>shape key (bench train-step --shapes-from)\n";
  for (const auto& [n, key] : rows) text += std::to_string(n) + "\t" + key + "\n";
  write_file_atomically((fs::path(config_.output_folder) / "batch_shapes.tsv").string(), text);
}

bool TrainLoop::train_epoch(int64_t epoch) {
  // A step's batches of similar cost as trained (speed perturbation moves lengths by 5 %;
  // MASR_TRAINED_COSTS=0: the manifest's durations, an A/B switch).
  BatchingConfig batching = config_.train_batching;
  if (batching.dynamic && batching.dynamic_options.step_round > 1 &&
      !env_is("MASR_TRAINED_COSTS", "0")) {
    batching.dynamic_options.cost_lengths = task_->trained_lengths(epoch);
  }
  const auto plan = epoch_batches(task_->train_set(), batching, epoch, parallel_->rank(),
                                  parallel_->world_size());
  const size_t start = static_cast<size_t>(pos_.batch);
  if (start > plan.size()) {
    throw_input_error("train: the checkpoint is at batch " + std::to_string(start) + " of epoch " +
                      std::to_string(epoch) + ", which has only " + std::to_string(plan.size()) +
                      " batches (was " + task_->train_set().origin + " changed?)");
  }
  task_->set_training(true);
  // A replayed graph allocates nothing: its memory was allocated, and counted, when it was
  // captured. With graphs held, the peak therefore runs on from the epochs that captured them
  // (else an epoch of replays alone would report only the weights and optimizer state).
  if (device_.is_cuda() && (!graphs_ || graphs_->stats().graphs == 0)) {
    runtime::reset_peak_memory(cuda_choice());
  }
  std::vector<data::Batch> mine(plan.begin() + static_cast<long>(start), plan.end());
  if (graphs_) {
    // The run's first epoch counts shapes; captures start with its second (cuda_graph_step.h).
    if (first_epoch_of_run_ < 0) first_epoch_of_run_ = epoch;
    const bool capture = GraphedSteps::capture_from_start() || epoch > first_epoch_of_run_;
    const bool ranks = parallel_->world_size() > 1 && GraphedSteps::supported(device_);
    if (capture && !graph_shapes_shared_ && ranks && GraphedSteps::captures_seen_shapes()) {
      share_graph_shapes();  // every rank alike (same settings, same epoch)
    }
    graphs_->set_capturing(capture);
    if (capture && ranks && GraphedSteps::captures_ahead()) {
      // The epoch's shapes that will need a graph, captured on every rank at its first batch
      // rather than one rank at a time, each stalling the others, as their batches come.
      graphs_->capture_ahead(task_->shapes_to_capture(*graphs_, mine, epoch));
    }
  }
  const std::unique_ptr<EpochBatches> batches = task_->open_epoch(epoch, std::move(mine));
  progress_->start_epoch(epoch, config_.number_of_epochs, plan.size(), start);
  const auto epoch_start = std::chrono::steady_clock::now();
  epoch_audio_ = 0.0;
  std::optional<ActiveProfile> active;
  for (size_t index = start;; ++index) {
    update_trace();
    if (profiling()) {
      if (!active) active.emplace(profile_.get());
      profile_->begin_step("data");
    } else {
      active.reset();  // no profiled batch (yet, or any more): sync counting off
    }
    if (!batches->next()) break;
    train_batch(*batches, index);
    ++batches_run_;
    epoch_audio_ += batches->audio_seconds();
    profile_phase("logging");
    pos_.batch = static_cast<int64_t>(index + 1);
    progress_->update(index + 1, shown_loss_, stepper_->lr(), batches->audio_seconds());
    if (stepper_->accumulated() != 0) {  // checkpoints only between optimizer steps
      end_profiled_step();
      continue;
    }
    profile_phase("checkpoint");
    const StepFlags flags = agree_flags();
    if (flags.stop || flags.due_time || pending_step_checkpoint_) save_checkpoint(false, {});
    end_profiled_step();
    if (flags.stop) {
      progress_->message("train: stopped; checkpoint written, run the same command to resume");
      return false;
    }
  }
  if (profile_ && profile_->in_step()) profile_->discard_step();
  if (stepper_->accumulated() > 0) {  // the epoch's last, partial accumulation
    stepper_->step();
    after_step();
  }
  losses_.read();  // waits for the epoch's last step: one read-back per epoch
  epoch_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
  progress_->end_epoch();
  return true;
}

TrainLoop::StepFlags TrainLoop::agree_flags() {
  StepFlags flags;
  flags.stop = options_.stop_requested && options_.stop_requested();
  const double minutes =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_).count() /
      60.0;
  flags.due_time = config_.ckpt_interval_minutes > 0 && minutes >= config_.ckpt_interval_minutes;
  if (parallel_->world_size() == 1) return flags;
  if (stepper_->steps() % kFlagAgreementSteps != 0) {
    // Between agreements a rank keeps its flags to itself: a collective here would stop the
    // host every step (it reads the sum back) and make every rank wait for the slowest.
    return {};
  }
  // Ranks stop at the same batch, or the others would wait forever in their next all-reduce.
  // Both flags in one collective: stops + (N + 1) * dues, each count in [0, N].
  const double base = parallel_->world_size() + 1.0;
  const double sum = parallel_->sum((flags.stop ? 1.0 : 0.0) + (flags.due_time ? base : 0.0));
  return {std::fmod(sum, base) > 0.0, sum >= base};
}

void TrainLoop::update_trace() {
  if (options_.trace_path.empty() || trace_done_) return;
  if (!trace_.running() && batches_run_ >= options_.profile_from) {
    trace_.start();
    trace_start_batch_ = batches_run_;
    return;
  }
  if (trace_.running() && batches_run_ >= trace_start_batch_ + options_.trace_batches) {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.index());
    std::string path = options_.trace_path;
    if (!main()) {
      const fs::path p(path);
      path = (p.parent_path() / (p.stem().string() + "-rank" + std::to_string(parallel_->rank()) +
                                 p.extension().string()))
                 .string();
    }
    trace_.stop(path);
    trace_done_ = true;
    progress_->message("train: Kineto trace of batches " + std::to_string(trace_start_batch_ + 1) +
                       "-" + std::to_string(batches_run_) + " written to " + path);
  }
}

void TrainLoop::end_profiled_step() {
  if (!profile_ || !profile_->in_step()) return;
  profile_->end_step();
  if (profile_->steps() == options_.profile_steps) report_profile();
}

void TrainLoop::report_profile() const {
  const std::string name =
      main() ? "profile.json" : "profile-rank" + std::to_string(parallel_->rank()) + ".json";
  const std::string path = (fs::path(config_.output_folder) / name).string();
  fs::create_directories(config_.output_folder);
  nlohmann::json j = profile_->json();
  j["device"] = device_.str();
  j["rank"] = parallel_->rank();
  j["world_size"] = parallel_->world_size();
  j["precision"] = runtime::precision_name(config_.precision);
  write_file_atomically(path, j.dump(2) + "\n");
  if (main()) {
    const int64_t from = options_.profile_from;
    const std::string which = from == 0
                                  ? "the first " + std::to_string(profile_->steps()) + " batches"
                                  : "batches " + std::to_string(from + 1) + "-" +
                                        std::to_string(from + profile_->steps());
    progress_->message("train: step profile of " + which + " (written to " + path + "):\n" +
                       profile_->table());
  }
}

// Every rank's shape keys to every rank: one collective for their lengths and one for their
// bytes (as int64, through the all_gather of sums that Gloo and NCCL both have).
void TrainLoop::share_graph_shapes() {
  graph_shapes_shared_ = true;
  std::string mine;
  for (const std::string& key : graphs_->shape_keys()) mine += key + '\n';
  const at::TensorOptions options = at::TensorOptions(device_).dtype(at::kLong);
  const at::Tensor sizes =
      parallel_->all_gather(at::full({1}, static_cast<int64_t>(mine.size()), options)).cpu();
  const int64_t longest = sizes.max().item<int64_t>();
  if (longest == 0) return;
  at::Tensor bytes = at::zeros({longest}, at::kLong);
  int64_t* b = bytes.data_ptr<int64_t>();
  for (size_t i = 0; i < mine.size(); ++i) b[i] = static_cast<unsigned char>(mine[i]);
  const at::Tensor all = parallel_->all_gather(bytes.to(device_)).cpu().contiguous();
  std::vector<std::string> theirs;
  for (int r = 0; r < parallel_->world_size(); ++r) {
    if (r == parallel_->rank()) continue;
    const int64_t* row = all[r].data_ptr<int64_t>();
    const int64_t size = sizes[r][0].item<int64_t>();
    std::string key;
    for (int64_t i = 0; i < size; ++i) {
      const char c = static_cast<char>(row[i]);
      if (c != '\n') {
        key += c;
      } else {
        theirs.push_back(std::move(key));
        key.clear();
      }
    }
  }
  const size_t before = graphs_->shape_keys().size();
  graphs_->add_shape_keys(theirs);
  if (main()) {
    MASR_LOG_INFO("train: %zu batch shapes on this rank, %zu with the other ranks'", before,
                  graphs_->shape_keys().size());
  }
}

void TrainLoop::train_batch(EpochBatches& batches, size_t index) {
  const uint64_t global_index = static_cast<uint64_t>(index) * parallel_->world_size() +
                                static_cast<uint64_t>(parallel_->rank());
  at::Tensor loss;
  // Nothing is read back: the loss is summed on its device (a non-finite one is left out), and
  // every batch goes through backward. A non-finite loss gives NaN gradients, so its optimizer
  // step is skipped on the device, on every rank alike (train/optimizer_stepper.h); rank 0 warns
  // about skipped steps when it logs.
  bool split = false;
  bool stepped = false;
  if (graphs_) {  // the loss and backward as GraphedSteps runs them (CUDA graphs)
    std::vector<at::Tensor> inputs;
    GraphedSteps::LossFn loss_fn;
    {
      runtime::AutocastGuard autocast(device_, config_.precision);
      GraphedSteps* pad_into = GraphedSteps::pads_new_shapes() ? graphs_.get() : nullptr;
      split = batches.split_loss(global_index, stepper_->steps(), pad_into, &inputs, &loss_fn);
      if (split) stepped = stepper_->backward_graphed(*graphs_, std::move(inputs), loss_fn, &loss);
    }
    if (!split) {
      graphs_.reset();  // the task has no split: op by op from here on (nothing was run)
    } else if (!graphs_announced_ && main() && GraphedSteps::supported(device_)) {
      MASR_LOG_INFO(
          "train: CUDA graphs on: the run's first epoch counts batch shapes; from its "
          "second, each shape is captured once and then replayed (MASR_CUDA_GRAPHS=1: "
          "from the first batch; 0: off)");
    }
    graphs_announced_ = true;
  }
  if (!split) {
    runtime::AutocastGuard autocast(device_, config_.precision);
    const nn::ActivationCheckpointing checkpointing(config_.activation_checkpointing);
    loss = batches.loss(global_index, stepper_->steps());
  }
  profile_phase("loss-check");
  losses_.add(loss);
  window_audio_ += batches.audio_seconds();
  if (!split) stepped = stepper_->backward(loss);
  if (stepped) after_step();
}

void TrainLoop::after_step() {
  pos_.step = stepper_->steps();
  if (!startup_logged_) log_startup();
  if (main() && logger_ && pos_.step % config_.log_interval == 0) {
    log_window(stepper_->lr_of_last_step());
  }
  if (config_.ckpt_interval_steps > 0 && pos_.step % config_.ckpt_interval_steps == 0) {
    pending_step_checkpoint_ = true;
  }
}

void TrainLoop::log_startup() {
  startup_logged_ = true;
  if (!main() || options_.started == std::chrono::steady_clock::time_point{}) return;
  losses_.read();  // waits for the first step: once per run
  const auto now = std::chrono::steady_clock::now();
  const auto seconds = [](auto from, auto to) {
    return std::chrono::duration<double>(to - from).count();
  };
  MASR_LOG_INFO(
      "train: first optimizer step done %.1f s after the command started (process group %.1f s, "
      "tokenizer, data and model %.1f s, to the end of the first step %.1f s)",
      seconds(options_.started, now), options_.process_group_seconds,
      seconds(options_.started, loaded_) - options_.process_group_seconds, seconds(loaded_, now));
}

void TrainLoop::log_window(double lr_used) {
  const LossTotals::Snapshot totals = losses_.read();  // the log interval's read-back
  shown_loss_ = totals.epoch.mean();
  warn_skipped();
  if (totals.window.count == 0) return;  // only non-finite losses since the last record
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - window_start_).count();
  logger_->log_step(pos_.epoch, pos_.step, totals.window.mean(), lr_used,
                    seconds > 0 ? window_audio_ / seconds : 0.0);
  losses_.reset_window();
  window_audio_ = 0;
  window_start_ = std::chrono::steady_clock::now();
}

void TrainLoop::warn_skipped() {
  const SkippedSteps skipped = stepper_->take_skipped();
  if (skipped.steps == 0) return;
  MASR_LOG_WARN(
      "train: %lld batches skipped since the last log: non-finite loss or gradients (%lld "
      "optimizer steps, epoch %lld, step %lld)",
      static_cast<long long>(skipped.batches), static_cast<long long>(skipped.steps),
      static_cast<long long>(pos_.epoch), static_cast<long long>(pos_.step));
}

void TrainLoop::write_curves() const {
  write_file_atomically((fs::path(config_.output_folder) / "training_curves.svg").string(),
                        run_curves_svg(logger_->history(), hp_.source(), config_.output_folder));
}

}  // namespace masr::train
