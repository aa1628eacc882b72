// lib/train/train_data.h
// The recipes' data pipeline: the tokenizer (trained first when none exists, as train_CTC.py
// does), per-utterance items (audio read, speed perturbation, silence padding, token ids), batch
// plans per epoch
// (dynamic or fixed batching, sharded per data-parallel rank) and padded AsrBatches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "audio/pad_silence.h"
#include "audio/speed_perturb.h"
#include "data/manifest.h"
#include "data/sampler.h"
#include "hparams/hparams.h"
#include "text/tokenizer.h"
#include "train/asr_task.h"
#include "train/train_config.h"

namespace masr::train {

// The tokenizer for a recipe: hparams `tokenizer` when it is a loaded model; otherwise a
// SentencePiece model `<save_folder>/<output_neurons>_<token_type>.model`, loaded when it exists
// and else trained on the `wrd` column of train_csv (SB's SentencePiece wrapper flags).
std::shared_ptr<text::Tokenizer> ensure_tokenizer(const hparams::Hparams& hp,
                                                  const TrainConfig& config);
// The SentencePiece model `<save_folder>/<output_neurons>_<token_type>.model`: loaded when it
// exists, else trained on `sentences()` (`what` names their source in the log).
std::shared_ptr<text::Tokenizer> load_or_train_tokenizer(
    const TrainConfig& config, const std::function<std::vector<std::string>()>& sentences,
    const std::string& what);

struct Utterance {
  std::string id;
  std::string words;
  std::vector<float> samples;
  std::vector<int64_t> tokens;
};

// Makes items: reads the audio at sample_rate, applies speed perturbation and then silence
// padding (training), encodes the words. Random choices come from (seed, epoch, utterance id), so they do not depend on the
// worker threads nor on where a run was resumed.
class UtteranceMaker {
 public:
  UtteranceMaker(std::shared_ptr<const text::Tokenizer> tokenizer, int sample_rate,
                 std::shared_ptr<const audio::SpeedPerturb> speed_perturb, uint64_t seed,
                 std::shared_ptr<const audio::PadSilence> pad_silence = nullptr);
  Utterance operator()(const data::ManifestRow& row, bool training, int64_t epoch) const;
  // The seconds of audio operator() makes of `row` in training at `epoch`, from its manifest
  // duration and the same draws (speed perturbation, silence), without reading the audio: within
  // a resampling's rounding of the real length when the duration is the file's.
  double trained_seconds(const data::ManifestRow& row, int64_t epoch) const;
  // The same in samples at the recipe's rate: exact when the manifest's duration is the file's
  // to the sample at that rate (round(duration * rate) samples).
  int64_t trained_samples(const data::ManifestRow& row, int64_t epoch) const;

 private:
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  int sample_rate_;
  std::shared_ptr<const audio::SpeedPerturb> speed_perturb_;
  uint64_t seed_;
  std::shared_ptr<const audio::PadSilence> pad_silence_;
};

// The hparams `speed_perturb` object, or null when absent.
std::shared_ptr<const audio::SpeedPerturb> speed_perturb_of(const hparams::Hparams& hp);
// The hparams `pad_silence` object (mamba_asr.PadSilence), or null when absent.
std::shared_ptr<const audio::PadSilence> pad_silence_of(const hparams::Hparams& hp);

// This epoch's batches (epoch >= 1), every world_size-th one from `rank` (a data-parallel rank
// takes its own share; 0 of 1 takes all). `same_count`: every rank gets the same number, the
// last incomplete round of fewer than world_size batches is dropped (DistributedSampler with
// drop_last), because ranks that run different numbers of steps deadlock in the all-reduce.
// Validation passes false (its only collectives come after the loop) and loses nothing.
std::vector<data::Batch> epoch_batches(const data::Manifest& manifest, const BatchingConfig& config,
                                       int64_t epoch, int rank = 0, int world_size = 1,
                                       bool same_count = true);

// The padded lengths collate gives a batch whose longest utterance has `longest_samples` samples
// and whose longest transcript `longest_tokens` tokens: (audio samples, tokens' width; the
// BOS/EOS sequences are one longer), on the shape grid when config.recurring_shapes.
std::pair<int64_t, int64_t> collated_lengths(int64_t longest_samples, int64_t longest_tokens,
                                             int sample_rate, const TrainConfig& config);

// Pads utterances into a batch: wav zero-padded, tokens padded with pad_index, [bos]+tokens and
// tokens+[eos] built as the S2S recipe does.
AsrBatch collate(std::vector<Utterance> items, int sample_rate, const TrainConfig& config);

// Stable 64-bit mixing of a seed with more values (FNV-1a over the bytes).
uint64_t mix_seed(uint64_t seed, std::initializer_list<uint64_t> values);
uint64_t hash_string(const std::string& text);

}  // namespace masr::train
