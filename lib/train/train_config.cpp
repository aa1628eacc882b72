// lib/train/train_config.cpp
// Reading the trainer's settings from hparams keys, with SpeechBrain's defaults.
#include "train/train_config.h"

#include <sstream>

#include "core/error.h"

namespace masr::train {
namespace {

const hparams::Value* given(const hparams::Hparams& hp, const std::string& key) {
  const hparams::Value* v = hp.find(key);
  return v != nullptr && !v->is_null() ? v : nullptr;
}
int64_t int_or(const hparams::Hparams& hp, const std::string& key, int64_t fallback) {
  const hparams::Value* v = given(hp, key);
  return v ? v->as_int() : fallback;
}
double double_or(const hparams::Hparams& hp, const std::string& key, double fallback) {
  const hparams::Value* v = given(hp, key);
  return v ? v->as_double() : fallback;
}
std::string string_or(const hparams::Hparams& hp, const std::string& key, const std::string& fb) {
  const hparams::Value* v = given(hp, key);
  return v ? v->as_string() : fb;
}
bool bool_or(const hparams::Hparams& hp, const std::string& key, bool fallback) {
  const hparams::Value* v = given(hp, key);
  return v ? v->as_bool() : fallback;
}
const hparams::Value* first_of(const hparams::Hparams& hp,
                               std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (const hparams::Value* v = given(hp, key)) return v;
  }
  return nullptr;
}

BatchingConfig batching_from(const hparams::Hparams& hp, const hparams::Value* dynamic_opts,
                             const hparams::Value* loader_opts, int64_t seed, bool train) {
  BatchingConfig b;
  b.dynamic = given(hp, "dynamic_batching") ? hp["dynamic_batching"].as_bool() : false;
  if (b.dynamic && dynamic_opts == nullptr) b.dynamic = false;
  if (b.dynamic) {
    const hparams::Value& o = *dynamic_opts;
    auto& d = b.dynamic_options;
    d.max_batch_length = o.at("max_batch_length").as_double();
    if (const auto* v = o.find("num_buckets")) d.num_buckets = static_cast<int>(v->as_int());
    if (const auto* v = o.find("max_batch_ex"); v && !v->is_null()) d.max_batch_ex = v->as_int();
    if (const auto* v = o.find("shuffle")) d.shuffle = v->as_bool();
    if (const auto* v = o.find("batch_ordering")) {
      d.batch_ordering = data::parse_batch_ordering(v->as_string(), v->key());
    }
    d.seed = static_cast<uint64_t>(seed);
    d.validate();
    // The dynamic sampler orders batches by its own shuffle / batch_ordering; a sorted dataset
    // in front of it changes nothing.
    hp.mark_read("sorting");
  } else {
    auto& f = b.fixed_options;
    if (loader_opts != nullptr) {
      if (const auto* v = loader_opts->find("batch_size")) f.batch_size = v->as_int();
    } else {
      f.batch_size = int_or(hp, "batch_size", 8);
    }
    f.sorting = train ? data::parse_sort_order(string_or(hp, "sorting", "original"), "sorting")
                      : data::SortOrder::kOriginal;
    f.seed = static_cast<uint64_t>(seed);
  }
  return b;
}

}  // namespace

void TrainConfig::validate() const {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw_config_error("train: " + message);
  };
  require(number_of_epochs >= 1, "number_of_epochs must be >= 1");
  require(grad_accumulation_factor >= 1, "grad_accumulation_factor must be >= 1");
  require(avg_checkpoints >= 1, "avg_checkpoints must be >= 1");
  require(valid_search_interval >= 1, "valid_search_interval must be >= 1");
  require(ckpt_interval_minutes >= 0 && ckpt_interval_steps >= 0,
          "checkpoint intervals must be >= 0");
  require(ctc_weight >= 0 && ctc_weight <= 1, "ctc_weight must be in [0, 1]");
  require(label_smoothing >= 0 && label_smoothing < 1, "label_smoothing must be in [0, 1)");
  require(precision != runtime::Precision::kInt8,
          "precision int8 is for CPU decoding; training takes fp32, bf16 or fp16");
  require(output_neurons >= 3, "output_neurons must be >= 3 (blank/unk, bos, eos)");
  if (!language_model) require(!train_csv.empty(), "train_csv is not set");
  require(!output_folder.empty(), "output_folder is not set");
  require(log_interval >= 1, "log_interval must be >= 1");
}

std::string TrainConfig::to_string() const {
  std::ostringstream s;
  s << "epochs " << number_of_epochs << ", grad_accumulation " << grad_accumulation_factor
    << ", max_grad_norm " << max_grad_norm << ", precision " << runtime::precision_name(precision)
    << ", " << optimizer.to_string();
  if (has_scheduler) {
    s << ", " << scheduler.type << "(lr_initial " << scheduler.lr_initial << ", warmup "
      << scheduler.n_warmup_steps << ")";
  }
  return s.str();
}

TrainConfig train_config_from(const hparams::Hparams& hp, bool language_model) {
  TrainConfig c;
  c.language_model = language_model;
  c.output_folder = string_or(hp, "output_folder", "");
  c.save_folder = string_or(hp, "save_folder", c.output_folder + "/save");
  c.train_log = string_or(hp, "train_log", c.output_folder + "/train_log.txt");
  c.train_csv = string_or(hp, "train_csv", "");
  c.data_folder = string_or(hp, "data_folder", "");
  c.valid_csv = string_or(hp, "valid_csv", "");
  c.number_of_epochs = int_or(hp, "number_of_epochs", 1);
  c.seed = int_or(hp, "seed", 0);
  c.grad_accumulation_factor = int_or(hp, "grad_accumulation_factor", 1);
  c.bucket_aligned_steps = bool_or(hp, "bucket_aligned_steps", true);
  c.max_grad_norm = double_or(hp, "max_grad_norm", 5.0);
  c.precision = runtime::parse_precision(
      string_or(hp, "precision", "fp32"), "train: precision",
      {runtime::Precision::kFp32, runtime::Precision::kBf16, runtime::Precision::kFp16});
  c.activation_checkpointing = bool_or(hp, "activation_checkpointing", false);
  c.sample_rate = static_cast<int>(int_or(hp, "sample_rate", 16000));
  c.num_workers = static_cast<int>(int_or(hp, "num_workers", 0));
  c.train_batching = batching_from(hp, first_of(hp, {"dynamic_batch_sampler_train"}),
                                   first_of(hp, {"train_dataloader_opts"}), c.seed, true);
  c.valid_batching =
      batching_from(hp, first_of(hp, {"dynamic_batch_sampler_valid", "dynamic_batch_sampler_val"}),
                    first_of(hp, {"valid_dataloader_opts"}), c.seed, false);
  c.valid_search_interval = int_or(hp, "valid_search_interval", 1);
  c.avg_checkpoints = int_or(hp, "avg_checkpoints", 1);
  c.ckpt_interval_minutes = double_or(hp, "ckpt_interval_minutes", 0.0);
  c.ckpt_interval_steps = int_or(hp, "ckpt_interval_steps", 0);
  c.log_interval = int_or(hp, "log_interval", 10);
  c.ctc_weight = double_or(hp, "ctc_weight", 0.3);
  c.label_smoothing = double_or(hp, "label_smoothing", 0.0);
  c.reduction =
      parse_loss_reduction(string_or(hp, "loss_reduction", "batchmean"), "loss_reduction");
  c.blank_index = int_or(hp, "blank_index", 0);
  c.bos_index = int_or(hp, "bos_index", 1);
  c.eos_index = int_or(hp, "eos_index", 2);
  c.pad_index = int_or(hp, "pad_index", 0);
  c.output_neurons = int_or(hp, "output_neurons", 0);
  c.token_type = string_or(hp, "token_type", "unigram");
  c.character_coverage = double_or(hp, "character_coverage", 1.0);
  const hparams::Value* opt = first_of(hp, {"model_opt_class", "Adam", "opt_class", "optimizer"});
  if (opt == nullptr) {
    throw_config_error("hparams " + hp.source() +
                       ": no optimizer; give model_opt_class (or Adam): !name:torch.optim.AdamW");
  }
  c.optimizer = optimizer_config_from(*opt);
  if (const hparams::Value* s = first_of(hp, {"noam_annealing", "lr_annealing"})) {
    c.scheduler = noam_config_from(*s);
    c.has_scheduler = true;
  }
  c.validate();
  return c;
}

data::Replacements TrainConfig::csv_replacements() const {
  if (data_folder.empty()) return {};
  return {{"data_root", data_folder}};
}

}  // namespace masr::train
