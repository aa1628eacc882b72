// lib/models/lm_model.h
// A trained Transformer language model as one object: the TransformerLM, its tokenizer and
// special ids, saved in the model.masr container with model_type "lm" (checkpoint.h).
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hparams/hparams.h"
#include "models/transformer_lm.h"

namespace masr::text {
class Tokenizer;
}

namespace masr::models {

// hparams keys read by LmModel::from_hparams:
//   model (or `key`)   !new:speechbrain.lobes.models.transformer.TransformerLM.TransformerLM
//   bos_index (1), eos_index (2), pad_index (0)
//   tokenizer / tokenizer_file   as for AsrModel (optional)
// The file's sections: model_type "lm", hparams.yaml {model_type, the indices, model: the
// TransformerLM with its resolved arguments}, state (the TransformerLM's parameters and buffers
// by SpeechBrain's names), tokenizer.model.
class LmModel {
 public:
  static constexpr const char* kType = "lm";

  // Throws a config error naming the key when it is missing or not a TransformerLM.
  static std::shared_ptr<LmModel> from_hparams(const hparams::Hparams& hp,
                                               const std::string& key = "model");
  // Errors name the path: missing, not a model file, another model type, state mismatch.
  static std::shared_ptr<LmModel> load(const std::string& path);
  // Imports a SpeechBrain TransformerLM checkpoint (the LM recipe's `model.ckpt`, or the `lm.ckpt`
  // of SpeechBrain's pretrained LibriSpeech LM): its state dict, with the TransformerLM built from
  // `hparams_file` (an LM recipe's `model`, or an ASR recipe's `lm_model`; `overrides` applied,
  // a `!PLACEHOLDER` left unset is harmless). Missing or unexpected keys are an error listing them;
  // a tokenizer file whose size differs from the LM's vocabulary is an error.
  static std::shared_ptr<LmModel> import_speechbrain(
      const std::string& lm_ckpt, const std::string& hparams_file,
      const std::vector<std::pair<std::string, std::string>>& overrides = {},
      const std::string& tokenizer_file = "");
  void save(const std::string& path) const;

  TransformerLM lm() const { return lm_; }
  std::vector<std::pair<std::string, at::Tensor>> named_state() const;
  // Every name must be present with the same shape; otherwise a config error naming `origin`.
  void load_state(const std::vector<std::pair<std::string, at::Tensor>>& state,
                  const std::string& origin);

  int64_t bos_index() const { return bos_index_; }
  int64_t eos_index() const { return eos_index_; }
  int64_t pad_index() const { return pad_index_; }
  int64_t vocab_size() const { return lm_->config.vocab; }
  const std::shared_ptr<const text::Tokenizer>& tokenizer() const { return tokenizer_; }
  // Checks that the tokenizer's vocabulary equals the LM's.
  void set_tokenizer(std::shared_ptr<const text::Tokenizer> tokenizer);
  const std::string& hparams_yaml() const { return hparams_yaml_; }

 private:
  LmModel() = default;
  TransformerLM lm_{nullptr};
  int64_t bos_index_ = 1, eos_index_ = 2, pad_index_ = 0;
  std::shared_ptr<const text::Tokenizer> tokenizer_;
  std::string hparams_yaml_;
};

// A SentencePiece .model file, or the tokenizer inside a model.masr file (an ASR model's, to
// share it). Errors name the path.
std::shared_ptr<const text::Tokenizer> read_tokenizer_file(const std::string& path);

// The element-wise mean of the LM files' parameters (SpeechBrain's average_checkpoints); the
// tokenizer comes from the first. All must share the hparams.
std::shared_ptr<LmModel> average_lm_checkpoints(const std::vector<std::string>& paths);

}  // namespace masr::models
