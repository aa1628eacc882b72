// lib/toolkit/model_facts.cpp
// Model size and a hash for planning; the activation estimate follows the recipes' shapes.
#include "toolkit/model_facts.h"

#include <cstdio>

#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/checkpoint.h"

namespace masr::toolkit {
namespace {

// An argument of the `Transformer` object (TransformerASR), where the widths live both in
// recipes and in a model's own hparams.
int64_t transformer_arg(const hparams::Hparams& hp, const char* name, int64_t fallback) {
  const hparams::Value* t = hp.find("Transformer");
  if (t == nullptr || t->type() != hparams::Value::Type::kObject) return fallback;
  return t->instance()->args.get_int(name, fallback);
}

// Floats kept for backward per second of audio. The recipes' CNN front end halves time twice
// (100 -> 50 -> 25 frames/s) and works at 80/2 and 80/4 frequency bins with ~64 and ~32
// channels; each encoder layer keeps, per frame, about two dozen d_model-wide tensors (norms,
// residuals, attention or the bidirectional Mamba's expanded branches, the convolution module)
// and eight d_ffn-wide ones (the two macaron feed-forwards). The decoder sees ~4 tokens per
// second of audio. Deliberately rough and on the generous side: measurement replaces it.
int64_t activation_floats_per_s(const ModelFacts& f) {
  const int64_t front_end = 100 * 80 * 4 + 50 * 40 * 64 * 4 + 25 * 20 * 32 * 4;
  const int64_t per_layer = 25 * (24 * f.d_model + 8 * f.d_ffn);
  const int64_t decoder = 4 * f.decoder_layers * (16 * f.d_model + 4 * f.d_ffn);
  return front_end + f.encoder_layers * per_layer + decoder;
}

ModelFacts facts_of(const models::AsrModel& model, const hparams::Hparams& hp) {
  ModelFacts f;
  f.model_type = model.model_type();
  f.parameters = model.num_parameters();
  f.d_model = transformer_arg(hp, "d_model", 512);
  f.d_ffn = transformer_arg(hp, "d_ffn", 2048);
  f.encoder_layers = transformer_arg(hp, "num_encoder_layers", 6);
  f.decoder_layers =
      f.model_type == models::AsrModel::kS2s ? transformer_arg(hp, "num_decoder_layers", 6) : 0;
  f.static_train_bytes = f.parameters * 4 * 4;
  f.activation_bytes_per_audio_s = activation_floats_per_s(f) * 4;
  f.hparams_hash = stable_hash(model.hparams_yaml());
  return f;
}

}  // namespace

std::string stable_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ULL;  // the FNV-64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char out[17];
  std::snprintf(out, sizeof(out), "%016llx", static_cast<unsigned long long>(h));
  return out;
}

ModelFacts model_facts_from(const hparams::Hparams& hp) {
  const auto model = models::AsrModel::from_hparams(hp);
  ModelFacts f = facts_of(*model, hp);
  f.source = hp.source();
  return f;
}

ModelFacts model_facts_from_file(const std::string& hparams_file) {
  hparams::LoadOptions options;
  options.placeholder_value = "unused";
  return model_facts_from(hparams::load_file(hparams_file, options));
}

ModelFacts model_facts_from_model(const std::string& path) {
  const std::string model_file = models::model_file_in(path);
  const auto model = models::AsrModel::load(model_file);
  ModelFacts f = facts_of(*model, hparams::load_text(model->hparams_yaml(), {}, model_file));
  f.source = model_file;
  return f;
}

}  // namespace masr::toolkit
