// lib/train/train_data.cpp
// Tokenizer bootstrap, utterance items, epoch batches and collation.
#include "train/train_data.h"

#include <cmath>
#include <filesystem>
#include <random>

#include <torch/torch.h>

#include "audio/audio_reader.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/log.h"
#include "data/batch.h"
#include "features/registration.h"
#include "models/lm_model.h"

namespace masr::train {

uint64_t hash_string(const std::string& text) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  return h;
}

uint64_t mix_seed(uint64_t seed, std::initializer_list<uint64_t> values) {
  uint64_t h = 1469598103934665603ULL ^ seed;
  for (uint64_t v : values) {
    for (int i = 0; i < 8; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 1099511628211ULL;
  }
  return h;
}

std::shared_ptr<text::Tokenizer> ensure_tokenizer(const hparams::Hparams& hp,
                                                  const TrainConfig& config) {
  if (const hparams::Value* v = hp.find("tokenizer");
      v && v->type() == hparams::Value::Type::kObject && v->instance()->object) {
    auto tokenizer = std::dynamic_pointer_cast<text::Tokenizer>(v->instance()->object);
    if (tokenizer && tokenizer->loaded()) return tokenizer;
  }
  // SpeechBrain's LibriSpeech recipes take a pretrained tokenizer through their pretrainer.
  if (const hparams::Value* from = hp.find("pretrained_lm_tokenizer_path");
      from != nullptr && !from->is_null()) {
    MASR_LOG_WARN(
        "train: SpeechBrain's recipe loads its tokenizer from '%s' through its "
        "pretrainer; mamba-asr downloads nothing and uses a tokenizer of its own "
        "(the save folder's, or one trained on the training transcripts), so this "
        "model's tokens are not that tokenizer's",
        from->str().c_str());
  }
  return load_or_train_tokenizer(
      config,
      [&config] {
        std::vector<std::string> sentences;
        for (const auto& row :
             data::read_speechbrain_csv(config.train_csv, config.csv_replacements()).rows) {
          sentences.push_back(row.wrd);
        }
        return sentences;
      },
      config.train_csv);
}

std::shared_ptr<text::Tokenizer> load_or_train_tokenizer(
    const TrainConfig& config, const std::function<std::vector<std::string>()>& sentences,
    const std::string& what) {
  text::TokenizerTrainOptions options;
  options.model_type = config.token_type;
  options.vocab_size = static_cast<int>(config.output_neurons);
  options.character_coverage = config.character_coverage;
  options.bos_id = static_cast<int>(config.bos_index);
  options.eos_id = static_cast<int>(config.eos_index);
  options.validate();
  const std::string prefix = (std::filesystem::path(config.save_folder) /
                              (std::to_string(config.output_neurons) + "_" + config.token_type))
                                 .string();
  std::shared_ptr<text::Tokenizer> tokenizer;
  if (!std::filesystem::exists(prefix + ".model") && !config.init_model.empty()) {
    // A warm start keeps the tokens its weights were trained with: the model file's tokenizer,
    // written where a resumed run finds it.
    const auto from = models::read_tokenizer_file(config.init_model);
    std::filesystem::create_directories(config.save_folder);
    write_file_atomically(prefix + ".model", from->model_bytes());
    MASR_LOG_INFO("train: the tokenizer of %s (--init-model) as %s.model",
                  config.init_model.c_str(), prefix.c_str());
  }
  if (std::filesystem::exists(prefix + ".model")) {
    tokenizer = std::make_shared<text::Tokenizer>(text::Tokenizer::from_file(prefix + ".model"));
  } else {
    MASR_LOG_INFO("train: training a %s tokenizer (%d tokens) on %s", config.token_type.c_str(),
                  options.vocab_size, what.c_str());
    std::filesystem::create_directories(config.save_folder);
    tokenizer =
        std::make_shared<text::Tokenizer>(text::Tokenizer::train(sentences(), prefix, options));
  }
  if (tokenizer->vocab_size() != config.output_neurons) {
    throw_config_error("train: tokenizer '" + prefix + ".model' has " +
                       std::to_string(tokenizer->vocab_size()) + " tokens but output_neurons is " +
                       std::to_string(config.output_neurons));
  }
  return tokenizer;
}

std::shared_ptr<const audio::SpeedPerturb> speed_perturb_of(const hparams::Hparams& hp) {
  const hparams::Value* v = hp.find("speed_perturb");
  if (v == nullptr || v->type() != hparams::Value::Type::kObject || !v->instance()->object) {
    return nullptr;
  }
  auto object = std::dynamic_pointer_cast<features::SpeedPerturbObject>(v->instance()->object);
  if (!object) return nullptr;
  return std::shared_ptr<const audio::SpeedPerturb>(object, &object->perturb);
}

std::shared_ptr<const audio::PadSilence> pad_silence_of(const hparams::Hparams& hp) {
  const hparams::Value* v = hp.find("pad_silence");
  if (v == nullptr || v->type() != hparams::Value::Type::kObject || !v->instance()->object) {
    return nullptr;
  }
  auto object = std::dynamic_pointer_cast<features::PadSilenceObject>(v->instance()->object);
  if (!object) {
    throw_config_error("train: pad_silence must be a !new:mamba_asr.PadSilence, not " +
                       v->instance()->object->summary());
  }
  return std::shared_ptr<const audio::PadSilence>(object, &object->pad);
}

UtteranceMaker::UtteranceMaker(std::shared_ptr<const text::Tokenizer> tokenizer, int sample_rate,
                               std::shared_ptr<const audio::SpeedPerturb> speed_perturb,
                               uint64_t seed, std::shared_ptr<const audio::PadSilence> pad_silence)
    : tokenizer_(std::move(tokenizer)),
      sample_rate_(sample_rate),
      speed_perturb_(std::move(speed_perturb)),
      seed_(seed),
      pad_silence_(std::move(pad_silence)) {
  if (pad_silence_ && pad_silence_->config().sample_rate != sample_rate_) {
    throw_config_error("train: pad_silence's sample_rate " +
                       std::to_string(pad_silence_->config().sample_rate) +
                       " differs from the recipe's " + std::to_string(sample_rate_));
  }
}

Utterance UtteranceMaker::operator()(const data::ManifestRow& row, bool training,
                                     int64_t epoch) const {
  Utterance u;
  u.id = row.id;
  u.words = row.wrd;
  try {
    u.samples = audio::read_audio(row.wav, sample_rate_).samples;
  } catch (const Error& e) {
    // Name the manifest row too: the file at fault is often a typo in the manifest.
    throw Error(e.kind(), row.source + ": utterance '" + row.id + "': " + e.what());
  }
  if (training && (speed_perturb_ || pad_silence_)) {
    // trained_seconds makes the same draws from the same generator.
    std::mt19937_64 rng(mix_seed(seed_, {static_cast<uint64_t>(epoch), hash_string(row.id)}));
    if (speed_perturb_) u.samples = (*speed_perturb_)(u.samples, rng).samples;
    if (pad_silence_) u.samples = (*pad_silence_)(u.samples, rng).samples;
  }
  for (int id : tokenizer_->encode(row.wrd)) u.tokens.push_back(id);
  if (u.tokens.empty()) {
    throw_input_error(row.source + ": utterance '" + row.id + "' has no tokens (empty wrd)");
  }
  return u;
}

double UtteranceMaker::trained_seconds(const data::ManifestRow& row, int64_t epoch) const {
  if (!speed_perturb_ && !pad_silence_) return row.duration;
  return static_cast<double>(trained_samples(row, epoch)) / sample_rate_;
}

int64_t UtteranceMaker::trained_samples(const data::ManifestRow& row, int64_t epoch) const {
  int64_t samples = std::llround(row.duration * sample_rate_);
  if (!speed_perturb_ && !pad_silence_) return samples;
  std::mt19937_64 rng(mix_seed(seed_, {static_cast<uint64_t>(epoch), hash_string(row.id)}));
  if (speed_perturb_) samples = speed_perturb_->length_at(samples, speed_perturb_->draw(rng));
  if (pad_silence_) {
    const auto [lead, tail] = pad_silence_->draw(rng);
    samples += lead + tail;
  }
  return samples;
}

std::vector<data::Batch> epoch_batches(const data::Manifest& manifest, const BatchingConfig& config,
                                       int64_t epoch, int rank, int world_size, bool same_count) {
  std::vector<double> lengths;
  lengths.reserve(manifest.rows.size());
  for (const auto& row : manifest.rows) lengths.push_back(row.duration);
  std::vector<data::Batch> all;
  // SpeechBrain's samplers count epochs from 0 (set_epoch(epoch) with the EpochCounter's value
  // minus one is not guaranteed upstream; we use epoch - 1 so epoch 1 is the sampler's epoch 0).
  if (config.dynamic) {
    data::DynamicBatchSampler sampler(lengths, config.dynamic_options, epoch - 1);
    all = sampler.batches();
  } else {
    all = data::fixed_size_batches(lengths, config.fixed_options, epoch - 1);
  }
  if (world_size <= 1) return all;
  const size_t world = static_cast<size_t>(world_size);
  const size_t end = same_count ? all.size() / world * world : all.size();
  if (same_count && end == 0) {
    throw_config_error("train: epoch " + std::to_string(epoch) + " has " +
                       std::to_string(all.size()) + " batches, fewer than the " +
                       std::to_string(world_size) + " data-parallel ranks");
  }
  std::vector<data::Batch> mine;
  for (size_t i = static_cast<size_t>(rank); i < end; i += world) {
    mine.push_back(all[i]);
  }
  return mine;
}

std::pair<int64_t, int64_t> collated_lengths(int64_t longest_samples, int64_t longest_tokens,
                                             int sample_rate, const TrainConfig& config) {
  if (!config.recurring_shapes) return {longest_samples, longest_tokens};
  // On the shape grid (TrainConfig::recurring_shapes): audio in 40 ms units 2 % apart, the
  // decoder's BOS/EOS sequences in units of 8 tokens 10 % apart, and CTC's targets one shorter
  // (their width is part of a batch's shape too: CUDA graphs are captured per shape).
  const int64_t wav_len = data::grid_length(longest_samples, std::max(1, sample_rate / 25), 1.02);
  const int64_t seq_len = data::grid_length(longest_tokens + 1, 8, 1.1);
  return {wav_len, seq_len - 1};
}

AsrBatch collate(std::vector<Utterance> items, int sample_rate, const TrainConfig& config) {
  AsrBatch b;
  std::vector<at::Tensor> wavs;
  std::vector<std::vector<int64_t>> tokens, bos, eos;
  for (auto& u : items) {
    b.ids.push_back(u.id);
    b.words.push_back(u.words);
    b.audio_seconds += static_cast<double>(u.samples.size()) / sample_rate;
    // A view of the samples: pad_right copies them into the batch while `items` holds them.
    wavs.push_back(torch::from_blob(u.samples.data(), {static_cast<int64_t>(u.samples.size())},
                                    torch::kFloat32));
    tokens.push_back(u.tokens);
    std::vector<int64_t> with_bos{config.bos_index};
    with_bos.insert(with_bos.end(), u.tokens.begin(), u.tokens.end());
    bos.push_back(std::move(with_bos));
    std::vector<int64_t> with_eos = u.tokens;
    with_eos.push_back(config.eos_index);
    eos.push_back(std::move(with_eos));
  }
  int64_t longest = 0, longest_tokens = 0;
  for (const at::Tensor& w : wavs) longest = std::max(longest, w.size(0));
  for (const auto& t : tokens)
    longest_tokens = std::max(longest_tokens, static_cast<int64_t>(t.size()));
  const auto [wav_len, tokens_len] = collated_lengths(longest, longest_tokens, sample_rate, config);
  const data::PaddedTensor wav = data::pad_right(wavs, 0.0, wav_len);
  const data::PaddedTensor tok = data::pad_sequences(tokens, config.pad_index, tokens_len);
  const data::PaddedTensor tok_bos = data::pad_sequences(bos, config.pad_index, tokens_len + 1);
  const data::PaddedTensor tok_eos = data::pad_sequences(eos, config.pad_index, tokens_len + 1);
  b.wav = wav.data;
  b.wav_rel = wav.lengths;
  b.tokens = tok.data;
  b.tokens_rel = tok.lengths;
  b.tokens_bos = tok_bos.data;
  b.tokens_eos = tok_eos.data;
  b.tokens_eos_rel = tok_eos.lengths;
  return b;
}

}  // namespace masr::train
