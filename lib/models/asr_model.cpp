// lib/models/asr_model.cpp
// AsrModel from hparams, and its forward steps (train_S2S.py / train_CTC.py compute_forward:
// Fbank -> normalize -> CNN -> Transformer -> ctc_lin / seq_lin -> log_softmax).
#include "models/asr_model.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>

#include "core/error.h"
#include "features/registration.h"
#include "models/int8_encoder.h"
#include "models/module_object.h"
#include "models/transformer_asr.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"
#include "text/tokenizer.h"

namespace masr::models {
namespace {

const char* const kModelKeys[] = {"compute_features", "normalize", "CNN",
                                  "Transformer",      "ctc_lin",   "seq_lin"};

const hparams::Value& required(const hparams::Hparams& hp, const std::string& key,
                               const std::string& what) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr || v->is_null()) {
    throw_config_error("hparams '" + hp.source() + "': the ASR model needs '" + key + "' (" + what +
                       ")");
  }
  return *v;
}

template <typename T>
std::shared_ptr<T> object_of(const hparams::Value& v, const std::string& what) {
  std::shared_ptr<T> out;
  if (v.type() == hparams::Value::Type::kObject && v.instance()) {
    out = std::dynamic_pointer_cast<T>(v.instance()->object);
  }
  if (!out) throw_config_error("hparams: " + v.origin() + " must be " + what);
  return out;
}

template <typename T>
std::shared_ptr<T> module_as(const hparams::Value& v, const std::string& what) {
  auto out = std::dynamic_pointer_cast<T>(module_of(v));
  if (!out) throw_config_error("hparams: " + v.origin() + " must be " + what);
  return out;
}

int64_t index_or(const hparams::Hparams& hp, const std::string& key, int64_t fallback) {
  const hparams::Value* v = hp.find(key);
  return v == nullptr || v->is_null() ? fallback : v->as_int();
}

std::shared_ptr<const text::Tokenizer> tokenizer_from(const hparams::Hparams& hp) {
  if (const hparams::Value* v = hp.find("tokenizer"); v != nullptr && !v->is_null()) {
    auto tok = object_of<text::Tokenizer>(*v, "a tokenizer object (e.g. !new:sentencepiece...)");
    if (tok->loaded()) return tok;
  }
  if (const hparams::Value* v = hp.find("tokenizer_file"); v != nullptr && !v->is_null()) {
    return std::make_shared<const text::Tokenizer>(text::Tokenizer::from_file(v->as_string()));
  }
  return nullptr;
}

// Sets a module's training flag for one call and restores it afterwards.
class ModeGuard {
 public:
  ModeGuard(torch::nn::Module& module, bool training)
      : module_(module), was_(module.is_training()) {
    if (was_ != training) module_.train(training);
  }
  ~ModeGuard() {
    if (module_.is_training() != was_) module_.train(was_);
  }
  ModeGuard(const ModeGuard&) = delete;
  ModeGuard& operator=(const ModeGuard&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_;
};

}  // namespace

std::shared_ptr<AsrModel> AsrModel::from_hparams(const hparams::Hparams& hp) {
  std::shared_ptr<AsrModel> m(new AsrModel());
  const auto& fbank = object_of<features::FbankObject>(
      required(hp, "compute_features", "!new:speechbrain.lobes.features.Fbank"),
      "a speechbrain.lobes.features.Fbank");
  m->fbank_ = std::make_shared<features::Fbank>(fbank->fbank.config());
  m->normalize_ = object_of<features::InputNormalizationObject>(
                      required(hp, "normalize", "!new:...InputNormalization"),
                      "a speechbrain.processing.features.InputNormalization")
                      ->module.ptr();
  m->cnn_ = module_as<nn::ConvolutionFrontEndImpl>(required(hp, "CNN", "the ConvolutionFrontEnd"),
                                                   "a ConvolutionFrontEnd");
  m->transformer_ = module_as<TransformerASRImpl>(
      required(hp, "Transformer", "!new:modules.TransformerASR.TransformerASR"),
      "a TransformerASR");
  m->ctc_lin_ = module_as<nn::SbLinearImpl>(required(hp, "ctc_lin", "the CTC output layer"),
                                            "a speechbrain.nnet.linear.Linear");
  if (m->transformer_->has_decoder()) {
    m->seq_lin_ = module_as<nn::SbLinearImpl>(
        required(hp, "seq_lin", "the decoder output layer, since Transformer has a decoder"),
        "a speechbrain.nnet.linear.Linear");
  }
  m->model_type_ = m->seq_lin_ ? kS2s : kCtc;
  if (const hparams::Value* t = hp.find("model_type"); t != nullptr && !t->is_null()) {
    if (t->as_string() != m->model_type_) {
      throw_config_error("hparams: " + t->origin() + " says model_type '" + t->as_string() +
                         "' but the modules make a '" + m->model_type_ + "' model");
    }
  }
  m->blank_index_ = index_or(hp, "blank_index", 0);
  m->bos_index_ = index_or(hp, "bos_index", 1);
  m->eos_index_ = index_or(hp, "eos_index", 2);
  m->pad_index_ = index_or(hp, "pad_index", 0);

  const int64_t d = m->transformer_->config().d_model;
  const int64_t vocab = m->ctc_lin_->w->options.out_features();
  const auto check_head = [&](nn::SbLinearImpl& head, const std::string& key) {
    if (head.w->options.in_features() != d) {
      throw_config_error("hparams '" + hp.source() + "': " + key + " input_size " +
                         std::to_string(head.w->options.in_features()) +
                         " must equal the Transformer's d_model " + std::to_string(d));
    }
    if (head.w->options.out_features() != vocab) {
      throw_config_error("hparams '" + hp.source() + "': " + key + " has " +
                         std::to_string(head.w->options.out_features()) +
                         " outputs but ctc_lin has " + std::to_string(vocab));
    }
  };
  check_head(*m->ctc_lin_, "ctc_lin");
  if (m->seq_lin_) check_head(*m->seq_lin_, "seq_lin");
  for (const int64_t index : {m->blank_index_, m->bos_index_, m->eos_index_, m->pad_index_}) {
    if (index < 0 || index >= vocab) {
      throw_config_error("hparams '" + hp.source() + "': special index " + std::to_string(index) +
                         " is outside the vocabulary of " + std::to_string(vocab));
    }
  }

  m->root_ = std::make_shared<torch::nn::Module>("AsrModel");
  m->root_->register_module("normalize", m->normalize_);
  m->root_->register_module("CNN", m->cnn_);
  m->root_->register_module("Transformer", m->transformer_);
  m->root_->register_module("ctc_lin", m->ctc_lin_);
  if (m->seq_lin_) m->root_->register_module("seq_lin", m->seq_lin_);

  hparams::Value::Map subset;
  subset.emplace_back("model_type", hparams::Value::string(m->model_type_));
  const std::pair<const char*, int64_t> indices[] = {{"blank_index", m->blank_index_},
                                                     {"bos_index", m->bos_index_},
                                                     {"eos_index", m->eos_index_},
                                                     {"pad_index", m->pad_index_}};
  for (const auto& [key, index] : indices) subset.emplace_back(key, hparams::Value::integer(index));
  for (const char* key : kModelKeys) {
    if (const hparams::Value* v = hp.find(key); v != nullptr && !v->is_null()) {
      if (std::string(key) == "seq_lin" && !m->seq_lin_) continue;
      subset.emplace_back(key, *v);
    }
  }
  m->hparams_yaml_ = hparams::to_yaml(hparams::Value::map(std::move(subset)));
  if (auto tok = tokenizer_from(hp)) m->set_tokenizer(std::move(tok));
  return m;
}

at::Tensor AsrModel::features(const at::Tensor& wavs, const at::Tensor& rel_lens,
                              std::optional<int64_t> epoch, bool update_norm) {
  if (wavs.dim() != 2) {
    throw_input_error("AsrModel.features: expected waveforms (batch, samples), got " +
                      std::to_string(wavs.dim()) + " dimensions");
  }
  at::Tensor feats = (*fbank_)(wavs.to(torch::kFloat)).to(device());
  ModeGuard mode(*normalize_, update_norm);
  return normalize_->forward(feats, rel_lens.defined() ? rel_lens.to(feats.device()) : rel_lens,
                             epoch);
}

Encoded AsrModel::encode(const at::Tensor& feats, const at::Tensor& rel_lens) {
  const at::Tensor x = cnn_->forward(feats);
  const int64_t frames = x.size(1);
  Encoded e;
  if (rel_lens.defined()) {
    if (rel_lens.dim() != 1 || rel_lens.size(0) != feats.size(0)) {
      throw_input_error("AsrModel.encode: rel_lens must be (batch) = (" +
                        std::to_string(feats.size(0)) + ")");
    }
    // SpeechBrain: abs_len = torch.round(wav_len * src.shape[1]) in float32.
    e.lengths = at::round(rel_lens.to(x.device(), torch::kFloat) * static_cast<double>(frames))
                    .to(torch::kLong)
                    .clamp(1, frames);
  } else {
    e.lengths = torch::full({x.size(0)}, frames, torch::dtype(torch::kLong).device(x.device()));
  }
  e.out = transformer_->encode(x, e.lengths);
  return e;
}

Encoded AsrModel::encode_audio(const at::Tensor& wavs, const at::Tensor& samples) {
  if (wavs.dim() != 2 || samples.dim() != 1 || samples.size(0) != wavs.size(0)) {
    throw_input_error("AsrModel.encode_audio: expected waveforms (batch, samples) and one length "
                      "per row");
  }
  const at::Tensor frames =
      1 + torch::div(samples.to(at::kCPU, at::kLong), fbank_->config().hop_samples(), "floor");
  at::Tensor feats = (*fbank_)(wavs.to(torch::kFloat), frames).to(device());
  {
    ModeGuard mode(*normalize_, false);
    // Relative lengths in double: the normalizer's round(rel * T) gives back `frames` exactly.
    const at::Tensor rel = frames.to(at::kDouble) / static_cast<double>(feats.size(1));
    feats = normalize_->forward(feats, rel, std::nullopt);
  }
  const at::Tensor x = cnn_->forward(feats, frames);
  Encoded e;
  e.lengths = cnn_->output_lengths(frames).clamp(1, x.size(1)).to(x.device());
  e.out = transformer_->encode(x, e.lengths);
  return e;
}

at::Tensor AsrModel::ctc_log_probs(const at::Tensor& enc) {
  return torch::log_softmax(ctc_lin_->forward(enc), -1);
}

at::Tensor AsrModel::decoder_log_probs(const at::Tensor& enc, const at::Tensor& enc_lens,
                                       const at::Tensor& tokens_bos) {
  if (!seq_lin_) {
    throw_config_error("AsrModel.decoder_log_probs: a '" + model_type_ +
                       "' model has no attention decoder");
  }
  const at::Tensor dec = transformer_->decode(tokens_bos, enc, enc_lens, pad_index_);
  return torch::log_softmax(seq_lin_->forward(dec), -1);
}

std::unique_ptr<DecoderState> AsrModel::start_decoding(const at::Tensor& enc,
                                                       const at::Tensor& enc_lens, int64_t beam) {
  if (!seq_lin_) {
    throw_config_error("AsrModel.start_decoding: a '" + model_type_ +
                       "' model has no attention decoder");
  }
  return transformer_->start_decoding(enc, enc_lens, beam);
}

at::Tensor AsrModel::decoder_step_log_probs(const at::Tensor& tokens, DecoderState& state) {
  if (!seq_lin_) {
    throw_config_error("AsrModel.decoder_step_log_probs: a '" + model_type_ +
                       "' model has no attention decoder");
  }
  const at::Tensor dec = transformer_->decode_step(tokens, state, pad_index_);
  return torch::log_softmax(seq_lin_->forward(dec), -1);
}

std::vector<at::Tensor> AsrModel::parameters() const { return root_->parameters(true); }

std::vector<std::pair<std::string, at::Tensor>> AsrModel::named_state() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : root_->named_parameters(true)) out.emplace_back(p.key(), p.value());
  for (const auto& b : root_->named_buffers(true)) out.emplace_back(b.key(), b.value());
  return out;
}

namespace {

std::string shape_of(const at::Tensor& t) {
  std::string out = "(";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + (t.dim() == 1 ? ",)" : ")");
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown) out += ", ... (" + std::to_string(names.size() - shown) + " more)";
  return out;
}

}  // namespace

void AsrModel::load_state(const std::vector<std::pair<std::string, at::Tensor>>& state,
                          const std::string& origin) {
  std::map<std::string, at::Tensor> own;
  for (const auto& [name, tensor] : named_state()) own.emplace(name, tensor);
  std::map<std::string, at::Tensor> given;
  std::vector<std::string> unexpected, missing;
  for (const auto& [name, tensor] : state) {
    if (own.count(name)) {
      given[name] = tensor;
    } else {
      unexpected.push_back(name);
    }
  }
  for (const auto& [name, tensor] : own) {
    if (!given.count(name)) missing.push_back(name);
  }
  if (!missing.empty() || !unexpected.empty()) {
    throw_config_error(origin + ": the state does not match the model's hparams" +
                       (missing.empty() ? "" : "; missing keys: " + listed(missing)) +
                       (unexpected.empty() ? "" : "; unexpected keys: " + listed(unexpected)));
  }
  for (const auto& [name, tensor] : state) {
    const at::Tensor& mine = own[name];
    // The normalization statistics are empty until the first training batch.
    const bool statistics = name == "normalize.glob_mean" || name == "normalize.glob_std";
    if (!statistics && !mine.sizes().equals(tensor.sizes())) {
      throw_config_error(origin + ": '" + name + "' has shape " + shape_of(tensor) +
                         " but the model built from the hparams has " + shape_of(mine));
    }
  }
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : state) {
    if (name.rfind("normalize.", 0) != 0) own[name].copy_(tensor);
  }
  const at::Tensor& mean = given["normalize.glob_mean"];
  const at::Tensor& std = given["normalize.glob_std"];
  if (!mean.sizes().equals(std.sizes())) {
    throw_config_error(origin + ": normalize.glob_mean " + shape_of(mean) +
                       " and normalize.glob_std " + shape_of(std) + " differ in shape");
  }
  normalize_->set_statistics(given["normalize.count"].item<int64_t>(),
                             mean.to(own["normalize.glob_mean"].device()),
                             std.to(own["normalize.glob_std"].device()));
}

void AsrModel::train(bool on) {
  if (on && is_int8()) {
    throw_config_error("AsrModel: an int8 model is for decoding only; train the float model (load "
                       "it again without quantizing)");
  }
  root_->train(on);
}
bool AsrModel::is_training() const { return root_->is_training(); }
void AsrModel::to(const c10::Device& device) {
  if (is_int8() && !device.is_cpu()) {
    throw_config_error("AsrModel: an int8 model runs on the CPU, not on " + device.str() +
                       " (int8 is LibTorch's CPU quantized linear; on a GPU use --precision bf16 "
                       "or fp16)");
  }
  root_->to(device);
}

std::string AsrModel::quantize_int8() {
  if (is_int8()) return int8_summary_;
  int8_summary_ = quantize_encoder_int8(*transformer_).str();
  return int8_summary_;
}

c10::Device AsrModel::device() const {
  const auto params = root_->parameters(true);
  return params.empty() ? c10::Device(c10::kCPU) : params.front().device();
}

int64_t AsrModel::vocab_size() const { return ctc_lin_->w->options.out_features(); }

int64_t AsrModel::num_parameters() const { return nn::count_parameters(*root_); }

void AsrModel::set_tokenizer(std::shared_ptr<const text::Tokenizer> tokenizer) {
  if (tokenizer && tokenizer->loaded() && tokenizer->vocab_size() != vocab_size()) {
    throw_config_error("tokenizer '" + tokenizer->origin() + "' has " +
                       std::to_string(tokenizer->vocab_size()) +
                       " pieces but the model's output layer has " + std::to_string(vocab_size()));
  }
  tokenizer_ = std::move(tokenizer);
}

}  // namespace masr::models
