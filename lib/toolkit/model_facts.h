// lib/toolkit/model_facts.h
// What runtime planning needs to know about a model: its size (parameters, layers, widths), a
// rough activation-memory estimate per audio second, and a stable hash of its hparams.
#pragma once

#include <cstdint>
#include <string>

namespace masr::hparams {
class Hparams;
}

namespace masr::toolkit {

struct ModelFacts {
  std::string source;      // the hparams file or model file it came from
  std::string model_type;  // "ctc" | "s2s"
  int64_t parameters = 0;
  int64_t d_model = 0, d_ffn = 0, encoder_layers = 0, decoder_layers = 0;
  // Training memory besides activations: parameters, gradients and Adam's two moments (fp32).
  int64_t static_train_bytes = 0;
  // Activations kept for backward per second of audio in a batch (fp32), a rough analytic
  // estimate that `bench --tune` replaces with measured peaks.
  int64_t activation_bytes_per_audio_s = 0;
  std::string hparams_hash;  // 16 hex digits, FNV-1a of the model's resolved hparams
};

// Builds the model the hparams describe (AsrModel::from_hparams) to count its parameters and
// hash its resolved hparams (AsrModel::hparams_yaml, so a trained model.masr hashes the same).
ModelFacts model_facts_from(const hparams::Hparams& hp);
// The same facts from an hparams file (data paths may be placeholders).
ModelFacts model_facts_from_file(const std::string& hparams_file);
// From a trained model (model.masr).
ModelFacts model_facts_from_model(const std::string& path);  // a model file or its folder

// 64-bit FNV-1a as 16 hex digits: stable across compilers and runs, unlike std::hash.
std::string stable_hash(const std::string& text);

}  // namespace masr::toolkit
