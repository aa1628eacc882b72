// lib/train/trainer.cpp
// The training loop (Brain.fit with the recipes' fit_batch / evaluate_batch / on_stage_end).
#include "train/trainer.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "data/loader.h"
#include "nn/checkpoint.h"
#include "features/augment_interface.h"
#include "text/scoring.h"
#include "train/autocast.h"
#include "train/optimizer.h"
#include "train/train_data.h"
#include "train/training_curves.h"

namespace masr::train {
namespace fs = std::filesystem;

at::Device pick_training_device(const std::string& name) {
  if (name == "cpu") return at::kCPU;
  if (name == "auto") return torch::cuda::is_available() ? at::Device(at::kCUDA) : at::kCPU;
  try {
    return at::Device(name);
  } catch (const c10::Error&) {
    throw_config_error("train: device '" + name + "' is not a device (cpu, cuda, cuda:N, auto)");
  }
}

namespace {

// Data-parallel ranks agree on a stop request (Ctrl-C, SIGTERM) and on a timed checkpoint every
// this many optimizer steps: one collective then, none in between; a stop waits at most this long.
constexpr int64_t kFlagAgreementSteps = 10;

int worker_count(int requested) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(0, std::min(requested, cores));
}

}  // namespace

Trainer::Trainer(const hparams::Hparams& hp, TrainRunOptions options)
    : hp_(hp), options_(std::move(options)), config_(train_config_from(hp)) {
  if (options_.ckpt_interval_steps >= 0) config_.ckpt_interval_steps = options_.ckpt_interval_steps;
  if (options_.activation_checkpointing) config_.activation_checkpointing = true;
  if (options_.speechbrain_batch_order) config_.bucket_aligned_steps = false;
  if (options_.ckpt_interval_minutes >= 0) {
    config_.ckpt_interval_minutes = options_.ckpt_interval_minutes;
  }
  parallel_ = options_.parallel ? options_.parallel : std::make_shared<DataParallel>();
  if (config_.bucket_aligned_steps) {
    // One optimizer step takes world_size x grad_accumulation_factor consecutive batches; they
    // come from one length bucket (data/sampler.h), so one process accumulating N batches still
    // trains exactly as N ranks do.
    config_.train_batching.dynamic_options.step_round =
        static_cast<size_t>(parallel_->world_size() * config_.grad_accumulation_factor);
  }
  device_ = pick_training_device(options_.device);
  if (!device_.is_cuda() && config_.precision != "fp32") {
    MASR_LOG_INFO("train: precision %s applies on CUDA only; training in fp32 on the CPU",
                  config_.precision.c_str());
  }
  if (main()) {
    fs::create_directories(config_.output_folder);
    write_file_atomically((fs::path(config_.output_folder) / "hyperparams.yaml").string(),
                          hp.to_yaml());
  }
  // Rank 0 trains a missing tokenizer; the others wait for it, then load it.
  if (main()) tokenizer_ = ensure_tokenizer(hp, config_);
  if (parallel_->world_size() > 1) parallel_->sum(0.0);
  if (!main()) tokenizer_ = ensure_tokenizer(hp, config_);
  train_set_ = data::read_speechbrain_csv(config_.train_csv, config_.csv_replacements());
  if (!config_.valid_csv.empty())
    valid_set_ = data::read_speechbrain_csv(config_.valid_csv, config_.csv_replacements());
  task_ = std::make_unique<AsrTask>(hp);
  asr_model_ = models::AsrModel::from_hparams(hp);
  asr_model_->set_tokenizer(tokenizer_);
  task_->to(device_);
  if (parallel_->world_size() > 1) {
    // Identical normalizer statistics on every rank (features/input_normalization.h).
    DataParallel* parallel = parallel_.get();
    task_->normalizer().set_statistics_gather(
        parallel_->rank(),
        [parallel](const at::Tensor& local) { return parallel->all_gather(local); });
  }
  stepper_ = std::make_unique<OptimizerStepper>(config_, task_->parameters(), device_.is_cuda(),
                                                parallel_);
  checkpointer_ = std::make_unique<Checkpointer>(config_.save_folder);
  progress_ = std::make_unique<Progress>(Progress::detect(options_.quiet || !main()));
  loss_options_ = loss_options_of(config_);
  last_checkpoint_ = window_start_ = std::chrono::steady_clock::now();
  if (options_.profile_steps > 0) profile_ = std::make_unique<StepProfile>(device_);
}

Trainer::~Trainer() {
  if (task_) task_->normalizer().set_statistics_gather(0, nullptr);
}

TrainOutcome Trainer::fit() {
  if (auto latest = checkpointer_->latest()) restore(*latest);
  if (parallel_->world_size() > 1) {
    // Every rank starts from rank 0's parameters (as DDP broadcasts them), whatever the seeds.
    std::vector<at::Tensor> parameters = task_->parameters();
    torch::NoGradGuard no_grad;
    if (!main()) {
      for (auto& p : parameters) p.zero_();
    }
    parallel_->sum_tensors(parameters);
  }
  logger_ = std::make_unique<TrainLogger>(config_.output_folder, config_.train_log, pos_.epoch - 1);
  MASR_LOG_INFO("train: %s; %zu training utterances (%.1f h), %zu validation; %s",
                task_->kind() == TaskKind::kS2S ? "S2S" : "CTC", train_set_.size(),
                train_set_.total_duration() / 3600, valid_set_.size(), config_.to_string().c_str());
  while (pos_.epoch <= config_.number_of_epochs) {
    if (!train_epoch(pos_.epoch)) return TrainOutcome::kStopped;
    const int64_t epoch = pos_.epoch;
    std::map<std::string, double> metrics = validate(epoch);
    const LossTotals::Average local = losses_.read().epoch;  // the epoch end's read-back
    if (main()) warn_skipped();
    const double loss_sum = parallel_->sum(local.sum);
    const double loss_count = parallel_->sum(static_cast<double>(local.count));
    EpochRecord record{epoch, pos_.step, stepper_->lr(),
                       loss_count > 0 ? loss_sum / loss_count : 0.0, metrics};
    pos_ = {epoch + 1, 0, pos_.step};
    losses_.reset_epoch();
    shown_loss_ = record.train_loss;
    save_checkpoint(true, metrics);
    if (main()) {
      logger_->log_epoch(record);
      write_curves();
      std::string line =
          "epoch " + std::to_string(epoch) + ": train loss " + std::to_string(record.train_loss);
      for (const auto& [k, v] : metrics) line += ", " + k + " " + std::to_string(v);
      progress_->message(line);
    }
  }
  if (main()) average_checkpoints();
  return TrainOutcome::kFinished;
}

bool Trainer::train_epoch(int64_t epoch) {
  const auto batches = epoch_batches(train_set_, config_.train_batching, epoch, parallel_->rank(),
                                     parallel_->world_size());
  const size_t start = static_cast<size_t>(pos_.batch);
  if (start > batches.size()) {
    throw_input_error("train: the checkpoint is at batch " + std::to_string(start) + " of epoch " +
                      std::to_string(epoch) + ", which has only " + std::to_string(batches.size()) +
                      " batches (was train_csv changed?)");
  }
  task_->train(true);
  const UtteranceMaker maker(tokenizer_, config_.sample_rate, speed_perturb_of(hp_),
                             static_cast<uint64_t>(config_.seed));
  // Batches are padded, and for a GPU page-locked, in the loader's workers: on the trainer's
  // thread that work (its page faults, the staging copy) left the GPU idle between steps.
  data::DataLoader<Utterance, AsrBatch> loader(
      train_set_,
      std::vector<data::Batch>(batches.begin() + static_cast<long>(start), batches.end()),
      [&maker, epoch](const data::ManifestRow& row) { return maker(row, true, epoch); },
      [this](std::vector<Utterance> items) {
        AsrBatch b = collate(std::move(items), config_.sample_rate, config_);
        if (device_.is_cuda()) b.pin_host_memory();
        return b;
      },
      {worker_count(config_.num_workers), 2});
  progress_->start_epoch(epoch, config_.number_of_epochs, batches.size(), start);
  AsrBatch host_batch;
  std::optional<ActiveProfile> active;
  if (profiling()) active.emplace(profile_.get());
  for (size_t index = start;; ++index) {
    if (profiling()) {
      profile_->begin_step("data");
    } else {
      active.reset();  // the profiled batches are over: sync counting off
    }
    if (!loader.next(host_batch)) break;
    profile_phase("host-to-device");
    const AsrBatch batch = host_batch.to(device_);
    train_batch(batch, epoch, index);
    profile_phase("logging");
    pos_.batch = static_cast<int64_t>(index + 1);
    progress_->update(index + 1, shown_loss_, stepper_->lr(), batch.audio_seconds);
    if (stepper_->accumulated() != 0) {  // checkpoints only between optimizer steps
      end_profiled_step();
      continue;
    }
    profile_phase("checkpoint");
    bool stop = options_.stop_requested && options_.stop_requested();
    const double minutes =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - last_checkpoint_).count() /
        60.0;
    bool due_time = config_.ckpt_interval_minutes > 0 && minutes >= config_.ckpt_interval_minutes;
    if (parallel_->world_size() > 1 && stepper_->steps() % kFlagAgreementSteps != 0) {
      // Between agreements a rank keeps its flags to itself: a collective here would stop the
      // host every step (it reads the sum back) and make every rank wait for the slowest.
      stop = due_time = false;
    } else if (parallel_->world_size() > 1) {
      // Ranks stop at the same batch, or the others would wait forever in their next all-reduce.
      // Both flags in one collective: stops + (N + 1) * dues, each count in [0, N].
      const double base = parallel_->world_size() + 1.0;
      const double flags = parallel_->sum((stop ? 1.0 : 0.0) + (due_time ? base : 0.0));
      stop = std::fmod(flags, base) > 0.0;
      due_time = flags >= base;
    }
    if (stop || due_time || pending_step_checkpoint_) save_checkpoint(false, {});
    end_profiled_step();
    if (stop) {
      progress_->message("train: stopped; checkpoint written, run the same command to resume");
      return false;
    }
  }
  if (profile_ && profile_->in_step()) profile_->discard_step();
  if (stepper_->accumulated() > 0) {  // the epoch's last, partial accumulation
    stepper_->step();
    after_step();
  }
  progress_->end_epoch();
  return true;
}

void Trainer::end_profiled_step() {
  if (!profile_ || !profile_->in_step()) return;
  profile_->end_step();
  if (profile_->steps() == options_.profile_steps) report_profile();
}

void Trainer::report_profile() const {
  const std::string name =
      main() ? "profile.json" : "profile-rank" + std::to_string(parallel_->rank()) + ".json";
  const std::string path = (fs::path(config_.output_folder) / name).string();
  fs::create_directories(config_.output_folder);
  nlohmann::json j = profile_->json();
  j["device"] = device_.str();
  j["rank"] = parallel_->rank();
  j["world_size"] = parallel_->world_size();
  j["precision"] = config_.precision;
  write_file_atomically(path, j.dump(2) + "\n");
  if (main()) {
    progress_->message("train: step profile of the first " + std::to_string(profile_->steps()) +
                       " batches (written to " + path + "):\n" + profile_->table());
  }
}

void Trainer::train_batch(const AsrBatch& batch, int64_t epoch, size_t index) {
  // Seeded by the batch's index in the whole epoch, so N ranks draw the augmentations one
  // process would draw for the same batches.
  const uint64_t global_index = static_cast<uint64_t>(index) * parallel_->world_size() +
                                static_cast<uint64_t>(parallel_->rank());
  at::Generator generator = features::make_generator(
      mix_seed(static_cast<uint64_t>(config_.seed), {static_cast<uint64_t>(epoch), global_index}));
  at::Tensor loss;
  {
    AutocastGuard autocast(device_, config_.precision);
    const nn::ActivationCheckpointing checkpointing(config_.activation_checkpointing);
    loss = task_->forward(batch, true, epoch, &generator, loss_options_).loss;
  }
  // Nothing is read back: the loss is summed on its device (a non-finite one is left out), and
  // every batch goes through backward. A non-finite loss gives NaN gradients, so its optimizer
  // step is skipped on the device, on every rank alike (train/optimizer_stepper.h); rank 0 warns
  // about skipped steps when it logs.
  profile_phase("loss-check");
  losses_.add(loss);
  window_audio_ += batch.audio_seconds;
  if (stepper_->backward(loss)) after_step();
}

void Trainer::after_step() {
  pos_.step = stepper_->steps();
  if (main() && logger_ && pos_.step % config_.log_interval == 0) {
    log_window(stepper_->lr_of_last_step());
  }
  if (config_.ckpt_interval_steps > 0 && pos_.step % config_.ckpt_interval_steps == 0) {
    pending_step_checkpoint_ = true;
  }
}

void Trainer::log_window(double lr_used) {
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

void Trainer::warn_skipped() {
  const SkippedSteps skipped = stepper_->take_skipped();
  if (skipped.steps == 0) return;
  MASR_LOG_WARN(
      "train: %lld batches skipped since the last log: non-finite loss or gradients (%lld "
      "optimizer steps, epoch %lld, step %lld)",
      static_cast<long long>(skipped.batches), static_cast<long long>(skipped.steps),
      static_cast<long long>(pos_.epoch), static_cast<long long>(pos_.step));
}

std::map<std::string, double> Trainer::validate(int64_t epoch) {
  if (valid_set_.size() == 0) return {};
  task_->train(false);
  torch::NoGradGuard no_grad;
  const UtteranceMaker maker(tokenizer_, config_.sample_rate, nullptr, 0);
  data::DataLoader<Utterance> loader(
      valid_set_,
      epoch_batches(valid_set_, config_.valid_batching, 1, parallel_->rank(),
                    parallel_->world_size(), /*same_count=*/false),
      [&maker](const data::ManifestRow& row) { return maker(row, false, 0); },
      {worker_count(config_.num_workers), 2});
  const bool search = epoch % config_.valid_search_interval == 0;
  text::ErrorRateStats wer, cer(/*split_tokens=*/true);
  double loss_sum = 0.0, batches = 0.0, correct = 0.0, counted = 0.0;
  std::vector<Utterance> items;
  while (loader.next(items)) {
    const AsrBatch batch = collate(std::move(items), config_.sample_rate, config_).to(device_);
    AutocastGuard autocast(device_, config_.precision);
    const ForwardResult r = task_->forward(batch, false, epoch, nullptr, loss_options_);
    loss_sum += r.loss.item<double>(), batches += 1;
    if (task_->kind() == TaskKind::kS2S) {
      const auto [c, n] = token_accuracy(r.p_seq, batch.tokens_eos, batch.tokens_eos_rel);
      correct += static_cast<double>(c), counted += static_cast<double>(n);
    }
    if (!search) continue;
    const auto hyps = AsrTask::ctc_greedy(r.p_ctc, r.rel, config_.blank_index);
    for (size_t i = 0; i < hyps.size(); ++i) {
      const auto ref = text::split_words(batch.words[i]);
      const auto hyp = text::split_words(tokenizer_->decode(hyps[i]));
      wer.append(batch.ids[i], ref, hyp);
      cer.append(batch.ids[i], ref, hyp);
    }
  }
  std::map<std::string, double> metrics;
  metrics["valid_loss"] = parallel_->sum(loss_sum) / std::max(1.0, parallel_->sum(batches));
  if (task_->kind() == TaskKind::kS2S) {
    metrics["ACC"] = parallel_->sum(correct) / std::max(1.0, parallel_->sum(counted));
  }
  if (search) {
    // Error counts summed over the ranks' shares: 100 * edits / reference tokens.
    for (auto [name, stats] : {std::pair{"WER", &wer}, std::pair{"CER", &cer}}) {
      const text::ErrorRateSummary s = stats->summarize();
      const double edits = parallel_->sum(static_cast<double>(s.counts.edits()));
      const double tokens = parallel_->sum(static_cast<double>(s.scored_tokens));
      metrics[name] = tokens > 0 ? 100.0 * edits / tokens : 0.0;
    }
  }
  task_->train(true);
  return metrics;
}

RetentionPolicy Trainer::retention() const {
  RetentionPolicy policy;
  policy.keep = config_.avg_checkpoints;
  if (valid_set_.size() == 0) return policy;
  if (task_->kind() == TaskKind::kS2S) {
    policy.metric = "ACC", policy.maximize = true;
  } else {
    policy.metric = "WER", policy.maximize = false;
  }
  return policy;
}

void Trainer::write_curves() const {
  write_file_atomically((fs::path(config_.output_folder) / "training_curves.svg").string(),
                        run_curves_svg(logger_->history(), hp_.source(), config_.output_folder));
}

}  // namespace masr::train
