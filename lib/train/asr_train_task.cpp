// lib/train/asr_train_task.cpp
// The ASR recipes' data, batches, validation and model files for the training loop.
#include "train/asr_train_task.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <torch/torch.h>

#include "core/log.h"
#include "data/loader.h"
#include "features/augment/interface.h"
#include "models/checkpoint.h"
#include "text/scoring.h"
#include "runtime/autocast.h"
#include "train/step_profile.h"
#include "train/train_data.h"

namespace masr::train {
namespace {

int worker_count(int requested) {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(0, std::min(requested, cores));
}

// The training loader's workers. On a GPU they run 10 nice levels down: the training thread
// queues the step's kernels one by one, and a step whose kernels are small waits for it, so it
// must get a core the moment it wants one, also when the workers of several ranks keep every
// core busy. MASR_LOADER_NICE=N sets the increment (docs/training.md).
data::LoaderOptions training_loader_options(int requested_workers, bool cuda) {
  data::LoaderOptions options{worker_count(requested_workers), 2};
  options.worker_nice = cuda ? 10 : 0;
  if (const char* text = std::getenv("MASR_LOADER_NICE"); text != nullptr && *text != '\0') {
    options.worker_nice = std::clamp(std::atoi(text), 0, 19);
  }
  return options;
}

// Padding into held CUDA graphs' shapes (Epoch::pad_into_graph): at most this many times the
// frames and the BOS/EOS sequences' length, for a shape met fewer than kPaddedTimes times.
constexpr double kMaxFramesRatio = 1.06, kMaxTokensRatio = 1.25;
constexpr int64_t kPaddedTimes = 2;

}  // namespace

// An epoch's utterances, read, perturbed, tokenized and padded (and for a GPU page-locked) by
// the loader's workers: on the training thread that work (its page faults, the staging copy)
// left the GPU idle between steps.
class AsrTrainTask::Epoch final : public EpochBatches {
 public:
  Epoch(AsrTrainTask& task, int64_t epoch, std::vector<data::Batch> batches)
      : task_(task),
        epoch_(epoch),
        maker_(task.utterance_maker()),
        loader_(
            task.train_set_, std::move(batches),
            [this](const data::ManifestRow& row) { return maker_(row, true, epoch_); },
            [&task](std::vector<Utterance> items) {
              AsrBatch b = collate(std::move(items), task.config().sample_rate, task.config());
              if (task.context_.device.is_cuda()) b.pin_host_memory();
              return b;
            },
            training_loader_options(task.config().num_workers, task.context_.device.is_cuda())) {}

  bool next() override {
    batch_ = AsrBatch();  // the previous batch's device memory goes first
    if (!loader_.next(host_batch_)) return false;
    profile_phase("host-to-device");
    batch_ = host_batch_.to(task_.context_.device);
    return true;
  }

  at::Tensor loss(uint64_t global_index, int64_t optimizer_steps) override {
    at::Generator generator = generator_for(global_index);
    return task_.modules_
        ->forward(batch_, true, epoch_, &generator, task_.loss_options_, optimizer_steps)
        .loss;
  }

  bool split_loss(uint64_t global_index, int64_t optimizer_steps, GraphedSteps* graphs,
                  std::vector<at::Tensor>* inputs,
                  std::function<at::Tensor(const std::vector<at::Tensor>&)>* loss_fn) override {
    std::vector<InputSpec> expected;
    if (graphs != nullptr && !task_.graph_padding_off_) expected = pad_into_graph(*graphs);
    at::Generator generator = generator_for(global_index);
    *inputs = task_.modules_->prepare(batch_, true, epoch_, &generator, optimizer_steps)
                  .inputs.list();
    if (!expected.empty() && specs_of(*inputs) != expected) {
      // fea_augment changed the batch's rows or frames: its shape cannot be told beforehand.
      task_.graph_padding_off_ = true;
      MASR_LOG_INFO(
          "train: batches are not padded into the shapes of held CUDA graphs: this recipe's "
          "augmentation changes a batch's shape");
    }
    *loss_fn = task_.modules_->loss_of_inputs(task_.loss_options_);
    return true;
  }

  double audio_seconds() const override { return batch_.audio_seconds; }

 private:
  // A batch of a shape that no graph holds, padded into the smallest held shape with at most
  // 6 % more frames and 25 % longer transcripts (2-3 steps of collate's shape grid), as long as
  // the shape has come fewer than 3 times: a replay of a little more work instead of a capture
  // (GraphedSteps::note_padded); a shape that keeps coming gets its own graph. The padding is what
  // a coarser grid would have given. Returns the model inputs' expected shapes (empty where the
  // augmentation makes them unknown beforehand).
  std::vector<InputSpec> pad_into_graph(GraphedSteps& graphs) {
    const AsrTask& modules = *task_.modules_;
    const int64_t rows = batch_.wav.size(0), tokens = batch_.tokens.size(1);
    std::vector<InputSpec> wanted = modules.input_specs(rows, batch_.wav.size(1), tokens);
    if (wanted.empty() || graphs.replays(wanted) || graphs.times_seen(wanted) >= kPaddedTimes) {
      return wanted;
    }
    const auto into = ModelInputs::padding_into(wanted, graphs.replayable_shapes(), kMaxFramesRatio,
                                                kMaxTokensRatio);
    if (!into) return wanted;
    graphs.note_padded(wanted);
    const int64_t samples = std::max(batch_.wav.size(1), modules.samples_for_frames(into->first));
    batch_ = batch_.padded_to(samples, into->second, task_.config().pad_index);
    return modules.input_specs(rows, samples, into->second);
  }

  // The augmentation's generator for the batch at `global_index` of the epoch (over the ranks).
  at::Generator generator_for(uint64_t global_index) const {
    return features::make_generator(mix_seed(static_cast<uint64_t>(task_.config().seed),
                                             {static_cast<uint64_t>(epoch_), global_index}));
  }

  AsrTrainTask& task_;
  int64_t epoch_;
  const UtteranceMaker maker_;  // used by loader_'s workers: declared (and destroyed) around it
  data::DataLoader<Utterance, AsrBatch> loader_;
  AsrBatch host_batch_, batch_;  // the loaded batch on the host, and on the device
};

AsrTrainTask::AsrTrainTask() = default;

AsrTrainTask::~AsrTrainTask() {
  if (modules_) modules_->normalizer().set_statistics_gather(0, nullptr);
}

void AsrTrainTask::load(const TaskContext& context) {
  context_ = context;
  const hparams::Hparams& hp = *context.hp;
  DataParallel& parallel = *context.parallel;
  tokenizer_ = rank0_first(parallel, [&] { return ensure_tokenizer(hp, config()); });
  train_set_ = data::read_speechbrain_csv(config().train_csv, config().csv_replacements());
  if (!config().valid_csv.empty()) {
    valid_set_ = data::read_speechbrain_csv(config().valid_csv, config().csv_replacements());
  }
  modules_ = std::make_unique<AsrTask>(hp);
  model_ = models::AsrModel::from_hparams(hp);
  model_->set_tokenizer(tokenizer_);
  modules_->to(context.device);
  if (parallel.world_size() > 1) {
    // Identical normalizer statistics on every rank (features/input_normalization.h).
    DataParallel* ranks = &parallel;
    modules_->normalizer().set_statistics_gather(
        parallel.rank(), [ranks](const at::Tensor& local) { return ranks->all_gather(local); });
  }
  loss_options_ = loss_options_of(config());
  speed_perturb_ = speed_perturb_of(hp);
  pad_silence_ = pad_silence_of(hp);
  // A maker checks the perturbations against the recipe (sample rate) now, not at epoch 1.
  UtteranceMaker(tokenizer_, config().sample_rate, speed_perturb_, 0, pad_silence_);
  // The run's summary line names them as their hparams objects describe themselves.
  const auto summary = [&hp](const char* key) {
    return "; " + hp.find(key)->instance()->object->summary();
  };
  perturbations_.clear();
  if (speed_perturb_) perturbations_ += summary("speed_perturb");
  if (pad_silence_) perturbations_ += summary("pad_silence");
  perturbations_ += modules_->augmentation_summary();
}

UtteranceMaker AsrTrainTask::utterance_maker() const {
  return UtteranceMaker(tokenizer_, config().sample_rate, speed_perturb_,
                        static_cast<uint64_t>(config().seed), pad_silence_);
}

const std::vector<int64_t>& AsrTrainTask::samples_as_trained(int64_t epoch) const {
  if (samples_epoch_ != epoch || samples_.size() != train_set_.rows.size()) {
    const UtteranceMaker maker = utterance_maker();
    samples_.clear();
    samples_.reserve(train_set_.rows.size());
    for (const data::ManifestRow& row : train_set_.rows) {
      samples_.push_back(maker.trained_samples(row, epoch));
    }
    samples_epoch_ = epoch;
  }
  return samples_;
}

std::vector<double> AsrTrainTask::trained_lengths(int64_t epoch) const {
  if (!speed_perturb_ && !pad_silence_) return {};
  std::vector<double> lengths;
  for (const int64_t n : samples_as_trained(epoch)) {
    lengths.push_back(static_cast<double>(n) / config().sample_rate);  // trained_seconds
  }
  return lengths;
}

std::vector<std::vector<InputSpec>> AsrTrainTask::batch_shapes(
    const std::vector<data::Batch>& batches, int64_t epoch) const {
  std::vector<std::vector<InputSpec>> shapes;
  if (modules_->input_specs(1, 1, 1).empty()) return shapes;  // the augmentation draws shapes
  const std::vector<int64_t>& trained = samples_as_trained(epoch);
  token_counts_.resize(train_set_.rows.size(), -1);
  for (const data::Batch& batch : batches) {
    int64_t samples = 0, tokens = 0;
    for (const size_t row : batch) {
      samples = std::max(samples, trained.at(row));
      if (token_counts_[row] < 0) {
        token_counts_[row] =
            static_cast<int32_t>(tokenizer_->encode(train_set_.rows[row].wrd).size());
      }
      tokens = std::max<int64_t>(tokens, token_counts_[row]);
    }
    const auto [wav_len, tokens_len] =
        collated_lengths(samples, tokens, config().sample_rate, config());
    shapes.push_back(
        modules_->input_specs(static_cast<int64_t>(batch.size()), wav_len, tokens_len));
  }
  return shapes;
}

std::vector<std::vector<InputSpec>> AsrTrainTask::shapes_to_capture(
    const GraphedSteps& graphs, const std::vector<data::Batch>& batches, int64_t epoch) const {
  std::vector<std::vector<InputSpec>> out;
  if (graph_padding_off_) return out;  // the shapes turned out not to be known beforehand
  const std::vector<std::vector<InputSpec>> held = graphs.replayable_shapes();
  for (const std::vector<InputSpec>& shape : batch_shapes(batches, epoch)) {
    if (shape.empty() || graphs.replays(shape) ||
        std::find(out.begin(), out.end(), shape) != out.end()) {
      continue;
    }
    if (GraphedSteps::pads_new_shapes() && graphs.times_seen(shape) < kPaddedTimes &&
        ModelInputs::padding_into(shape, held, kMaxFramesRatio, kMaxTokensRatio)) {
      continue;  // it will ride on a held graph
    }
    out.push_back(shape);
  }
  return out;
}

std::string AsrTrainTask::describe() const {
  char line[160];
  std::snprintf(line, sizeof(line), "%s; %zu training utterances (%.1f h), %zu validation",
                modules_->kind() == TaskKind::kS2S ? "S2S" : "CTC", train_set_.size(),
                train_set_.total_duration() / 3600, valid_set_.size());
  return line + perturbations_;
}

std::unique_ptr<EpochBatches> AsrTrainTask::open_epoch(int64_t epoch,
                                                       std::vector<data::Batch> batches) {
  return std::make_unique<Epoch>(*this, epoch, std::move(batches));
}

std::map<std::string, double> AsrTrainTask::validate(int64_t epoch) {
  if (valid_set_.size() == 0) return {};
  DataParallel& parallel = *context_.parallel;
  const at::Device device = context_.device;
  modules_->train(false);
  torch::NoGradGuard no_grad;
  const UtteranceMaker maker(tokenizer_, config().sample_rate, nullptr, 0);
  data::DataLoader<Utterance> loader(
      valid_set_,
      epoch_batches(valid_set_, config().valid_batching, 1, parallel.rank(), parallel.world_size(),
                    /*same_count=*/false),
      [&maker](const data::ManifestRow& row) { return maker(row, false, 0); },
      {worker_count(config().num_workers), 2});
  const bool search = epoch % config().valid_search_interval == 0;
  const bool s2s = modules_->kind() == TaskKind::kS2S;
  text::ErrorRateStats wer, cer(/*split_tokens=*/true);
  double loss_sum = 0.0, batches = 0.0, correct = 0.0, counted = 0.0;
  std::vector<Utterance> items;
  while (loader.next(items)) {
    const AsrBatch batch = collate(std::move(items), config().sample_rate, config()).to(device);
    runtime::AutocastGuard autocast(device, config().precision);
    const ForwardResult r = modules_->forward(batch, false, epoch, nullptr, loss_options_);
    loss_sum += r.loss.item<double>(), batches += 1;
    if (s2s) {
      const auto [c, n] = token_accuracy(r.p_seq, batch.tokens_eos, batch.tokens_eos_rel);
      correct += static_cast<double>(c), counted += static_cast<double>(n);
    }
    if (!search) continue;
    const auto hyps = AsrTask::ctc_greedy(r.p_ctc, r.rel, config().blank_index);
    for (size_t i = 0; i < hyps.size(); ++i) {
      const auto ref = text::split_words(batch.words[i]);
      const auto hyp = text::split_words(tokenizer_->decode(hyps[i]));
      wer.append(batch.ids[i], ref, hyp);
      cer.append(batch.ids[i], ref, hyp);
    }
  }
  std::map<std::string, double> metrics;
  metrics["valid_loss"] = parallel.sum(loss_sum) / std::max(1.0, parallel.sum(batches));
  if (s2s) metrics["ACC"] = parallel.sum(correct) / std::max(1.0, parallel.sum(counted));
  if (search) {
    // Error counts summed over the ranks' shares: 100 * edits / reference tokens.
    for (auto [name, stats] : {std::pair{"WER", &wer}, std::pair{"CER", &cer}}) {
      const text::ErrorRateSummary s = stats->summarize();
      const double edits = parallel.sum(static_cast<double>(s.counts.edits()));
      const double tokens = parallel.sum(static_cast<double>(s.scored_tokens));
      metrics[name] = tokens > 0 ? 100.0 * edits / tokens : 0.0;
    }
  }
  modules_->train(true);
  return metrics;
}

RetentionPolicy AsrTrainTask::retention() const {
  RetentionPolicy policy;
  if (valid_set_.size() == 0) return policy;
  if (modules_->kind() == TaskKind::kS2S) {
    policy.metric = "ACC", policy.maximize = true;
  } else {
    policy.metric = "WER", policy.maximize = false;
  }
  return policy;
}

void AsrTrainTask::save_model(const std::string& path) const { model_->save(path); }

void AsrTrainTask::load_model(const std::string& path) {
  model_->load_state(models::read_checkpoint(path).state, path);
}

void AsrTrainTask::average_models(const std::vector<std::string>& best_first,
                                  const RetentionPolicy& policy, const std::string& path) const {
  // Best first: its normalizer statistics are kept.
  models::average_checkpoints(best_first)->save(path);
  MASR_LOG_INFO("train: averaged %zu checkpoint(s) (%s) into %s", best_first.size(),
                policy.metric.empty()
                    ? "newest"
                    : ((policy.maximize ? "max " : "min ") + policy.metric).c_str(),
                path.c_str());
}

}  // namespace masr::train
