// lib/train/asr_task.cpp
// Forward pass and loss of train_CTC.py / train_S2S.py on the hparams modules.
#include "train/asr_task.h"

#include "core/error.h"
#include "data/batch.h"
#include "decode/ctc_greedy.h"
#include "features/registration.h"
#include "models/module_object.h"
#include "runtime/autocast.h"
#include "runtime/device_copy.h"
#include "train/step_profile.h"
#include "train/train_config.h"

namespace masr::train {
namespace {

template <typename T>
std::shared_ptr<T> object_at(const hparams::Hparams& hp, const std::string& key, bool required) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr || v->is_null()) {
    if (required) throw_config_error("hparams " + hp.source() + ": key '" + key + "' is missing");
    return nullptr;
  }
  std::shared_ptr<T> out;
  if (v->type() == hparams::Value::Type::kObject && v->instance()->object) {
    out = std::dynamic_pointer_cast<T>(v->instance()->object);
  }
  if (!out) {
    throw_config_error("hparams " + hp.source() + ": " + v->origin() + " is " + v->describe() +
                       ", not the object the trainer expects there");
  }
  return out;
}

template <typename Impl>
std::shared_ptr<Impl> module_at(const hparams::Hparams& hp, const std::string& key, bool required) {
  const hparams::Value* v = hp.find(key);
  if (v == nullptr) {
    if (required) throw_config_error("hparams " + hp.source() + ": key '" + key + "' is missing");
    return nullptr;
  }
  auto out = std::dynamic_pointer_cast<Impl>(models::module_of(*v));
  if (!out) {
    throw_config_error("hparams " + hp.source() + ": " + v->origin() +
                       " is not the module the trainer expects there");
  }
  return out;
}

// An augmentation's lengths or row map, which must be on the host: one on the device would
// cost a read-back every step, so it is a bug to fix, not to copy silently.
const at::Tensor& host_result(const at::Tensor& t, const char* what) {
  if (!t.is_cpu()) {
    throw Error(ErrorKind::kInternal, std::string("augmentation: its ") + what + " are on " +
                                          t.device().str() + ", not on the host");
  }
  return t;
}

at::Tensor abs_lengths(const at::Tensor& rel, int64_t max_len) {
  return (rel.to(torch::kFloat64) * static_cast<double>(max_len)).round().to(torch::kLong);
}

}  // namespace

LossOptions loss_options_of(const TrainConfig& config) {
  LossOptions o;
  o.ctc_weight = config.ctc_weight;
  o.label_smoothing = config.label_smoothing;
  o.blank_index = config.blank_index;
  o.pad_index = config.pad_index;
  o.reduction = config.reduction;
  return o;
}

AsrBatch AsrBatch::to(const at::Device& device) const {
  AsrBatch b = *this;
  b.host_wav_rel = wav_rel_on_host();
  b.host_tokens_rel = tokens_rel_on_host();
  for (at::Tensor* t : {&b.wav, &b.wav_rel, &b.tokens, &b.tokens_rel, &b.tokens_bos, &b.tokens_eos,
                        &b.tokens_eos_rel}) {
    *t = runtime::to_device_async(*t, device);
  }
  return b;
}

void AsrBatch::pin_host_memory() {
  for (at::Tensor* t :
       {&wav, &wav_rel, &tokens, &tokens_rel, &tokens_bos, &tokens_eos, &tokens_eos_rel}) {
    if (t->defined() && t->is_cpu()) *t = t->contiguous().pin_memory();
  }
}

AsrBatch AsrBatch::padded_to(int64_t samples, int64_t tokens_len, int64_t pad) const {
  const int64_t have_samples = wav.size(1), have_tokens = tokens.size(1);
  if (samples < have_samples || tokens_len < have_tokens) {
    throw Error(ErrorKind::kInternal, "AsrBatch::padded_to: shorter than the batch");
  }
  // Relative lengths as pad_right computes them (data/batch.cpp), from the absolute ones.
  const auto relative = [](const std::vector<int64_t>& lengths, int64_t add, int64_t max_len) {
    at::Tensor rel = at::empty({static_cast<int64_t>(lengths.size())}, at::kFloat);
    float* r = rel.data_ptr<float>();
    for (size_t i = 0; i < lengths.size(); ++i) {
      r[i] = static_cast<float>(static_cast<double>(lengths[i] + add) / max_len);
    }
    return rel;
  };
  const std::vector<int64_t> wav_n = data::absolute_lengths(wav_rel_on_host(), have_samples);
  const std::vector<int64_t> token_n = data::absolute_lengths(tokens_rel_on_host(), have_tokens);
  const at::Device device = wav.device();
  const auto on_device = [&device](const at::Tensor& host) {
    return device.is_cpu() ? host : runtime::to_device_async(host, device);
  };
  AsrBatch b = *this;
  b.wav = at::constant_pad_nd(wav, {0, samples - have_samples}, 0.0);
  b.host_wav_rel = relative(wav_n, 0, samples);
  b.wav_rel = on_device(b.host_wav_rel);
  b.tokens = at::constant_pad_nd(tokens, {0, tokens_len - have_tokens}, static_cast<double>(pad));
  b.host_tokens_rel = relative(token_n, 0, tokens_len);
  b.tokens_rel = on_device(b.host_tokens_rel);
  if (tokens_bos.defined()) {  // [bos] + tokens and tokens + [eos]: one longer
    const int64_t more = tokens_len + 1 - tokens_bos.size(1);
    b.tokens_bos = at::constant_pad_nd(tokens_bos, {0, more}, static_cast<double>(pad));
    b.tokens_eos = at::constant_pad_nd(tokens_eos, {0, more}, static_cast<double>(pad));
    b.tokens_eos_rel = on_device(relative(token_n, 1, tokens_len + 1));
  }
  return b;
}

at::Tensor AsrBatch::wav_rel_on_host() const {
  return host_wav_rel.defined() ? host_wav_rel : wav_rel.cpu();
}

at::Tensor AsrBatch::tokens_rel_on_host() const {
  return host_tokens_rel.defined() ? host_tokens_rel : tokens_rel.cpu();
}

std::string AsrTask::augmentation_summary() const {
  std::string out;
  if (augment_) {
    out += "; fea_augment: " + augment_->summary();
    if (augment_warmup_ > 0) out += " after " + std::to_string(augment_warmup_) + " steps";
  }
  if (wav_augment_) out += "; wav_augment: " + wav_augment_->summary();
  return out;
}

AsrTask::AsrTask(const hparams::Hparams& hp) {
  auto fbank = object_at<features::FbankObject>(hp, "compute_features", true);
  fbank_ = std::shared_ptr<features::Fbank>(fbank, &fbank->fbank);
  normalizer_ = object_at<features::InputNormalizationObject>(hp, "normalize", true)->module.ptr();
  augment_ = object_at<features::Augmentation>(hp, "fea_augment", false);
  wav_augment_ = object_at<features::Augmentation>(hp, "wav_augment", false);
  if (const hparams::Value* v = hp.find("augment_warmup"); v != nullptr && !v->is_null()) {
    augment_warmup_ = v->as_int();
    if (augment_warmup_ < 0) {
      throw_config_error("hparams " + hp.source() + ": " + v->origin() +
                         " must be 0 or more optimizer steps");
    }
  }
  cnn_ = module_at<nn::ConvolutionFrontEndImpl>(hp, "CNN", true);
  transformer_ = module_at<models::TransformerASRImpl>(hp, "Transformer", true);
  ctc_lin_ = module_at<nn::SbLinearImpl>(hp, "ctc_lin", true);
  seq_lin_ = module_at<nn::SbLinearImpl>(hp, "seq_lin", false);
  model_ = models::module_of(hp["model"]);
  kind_ = seq_lin_ ? TaskKind::kS2S : TaskKind::kCtc;
  if (kind_ == TaskKind::kS2S && !transformer_->has_decoder()) {
    throw_config_error("hparams " + hp.source() +
                       ": seq_lin is given (S2S) but Transformer has num_decoder_layers 0");
  }
}

void AsrTask::train(bool on) {
  model_->train(on);
  normalizer_->train(on);
}

void AsrTask::to(const at::Device& device) {
  device_ = device;
  model_->to(device);
  normalizer_->to(device);
}

std::vector<at::Tensor> ModelInputs::list() const {
  std::vector<at::Tensor> out{feats, lengths, tokens};
  if (tokens_bos.defined()) {
    out.insert(out.end(), {tokens_bos, tokens_eos, tokens_eos_rel});
  }
  return out;
}

ModelInputs ModelInputs::from_list(const std::vector<at::Tensor>& tensors) {
  if (tensors.size() != 3 && tensors.size() != 6) {
    throw Error(ErrorKind::kInternal,
                "ModelInputs: expected 3 or 6 tensors, got " + std::to_string(tensors.size()));
  }
  ModelInputs in;
  in.feats = tensors[0];
  in.lengths = tensors[1];
  in.tokens = tensors[2];
  if (tensors.size() == 6) {
    in.tokens_bos = tensors[3];
    in.tokens_eos = tensors[4];
    in.tokens_eos_rel = tensors[5];
  }
  return in;
}

std::vector<at::Tensor> ModelInputs::like(const std::vector<InputSpec>& specs,
                                          const at::Device& device) {
  if ((specs.size() != 3 && specs.size() != 6) || specs[0].sizes.size() != 3 ||
      specs[1].sizes.size() != 2 || specs[2].sizes.size() != 2) {
    throw Error(ErrorKind::kInternal, "ModelInputs::like: not the shapes of a model's inputs");
  }
  const auto on = [&](const InputSpec& s) { return at::TensorOptions(device).dtype(s.dtype); };
  std::vector<at::Tensor> out;
  out.push_back(at::zeros(specs[0].sizes, on(specs[0])));
  const int64_t batch = specs[1].sizes[1];
  out.push_back(at::stack({at::full({batch}, specs[0].sizes[1], on(specs[1])),
                           at::full({batch}, specs[2].sizes[1], on(specs[1]))}));
  for (size_t i = 2; i < specs.size(); ++i) out.push_back(at::ones(specs[i].sizes, on(specs[i])));
  return out;
}

std::vector<InputSpec> ModelInputs::resized(std::vector<InputSpec> specs, int64_t frames,
                                            int64_t tokens) {
  if ((specs.size() != 3 && specs.size() != 6) || specs[0].sizes.size() != 3 ||
      specs[2].sizes.size() != 2) {
    throw Error(ErrorKind::kInternal, "ModelInputs::resized: not the shapes of a model's inputs");
  }
  specs[0].sizes[1] = frames;
  specs[2].sizes[1] = tokens;
  for (size_t i = 3; i < 5 && i < specs.size(); ++i) specs[i].sizes.at(1) = tokens + 1;
  return specs;
}

std::optional<std::pair<int64_t, int64_t>> ModelInputs::padding_into(
    const std::vector<InputSpec>& wanted, const std::vector<std::vector<InputSpec>>& held,
    double max_frames_ratio, double max_tokens_ratio) {
  const int64_t frames = wanted.at(0).sizes.at(1), tokens = wanted.at(2).sizes.at(1);
  std::optional<std::pair<int64_t, int64_t>> best;
  for (const std::vector<InputSpec>& shape : held) {
    if (shape.size() != wanted.size() || shape[0].sizes.size() != 3 || shape[2].sizes.size() != 2) {
      continue;
    }
    const std::pair<int64_t, int64_t> size{shape[0].sizes[1], shape[2].sizes[1]};
    if (size.first < frames || size.second < tokens ||
        static_cast<double>(size.first) > max_frames_ratio * static_cast<double>(frames) ||
        static_cast<double>(size.second + 1) > max_tokens_ratio * static_cast<double>(tokens + 1) ||
        resized(wanted, size.first, size.second) != shape) {
      continue;
    }
    if (!best || size < *best) best = size;
  }
  return best;
}

std::vector<InputSpec> AsrTask::input_specs(int64_t batch, int64_t samples, int64_t tokens) const {
  if (wav_augment_) return {};  // its rows and lengths are drawn
  const features::FbankConfig& fbank = fbank_->config();
  std::vector<InputSpec> specs{{{batch, fbank.num_frames(samples), fbank.n_mels}, at::kFloat},
                               {{2, batch}, at::kLong},
                               {{batch, tokens}, at::kLong}};
  if (kind_ == TaskKind::kS2S) {
    specs.push_back({{batch, tokens + 1}, at::kLong});
    specs.push_back({{batch, tokens + 1}, at::kLong});
    specs.push_back({{batch}, at::kFloat});
  }
  return specs;
}

int64_t AsrTask::samples_for_frames(int64_t frames) const {
  return std::max<int64_t>(frames - 1, 0) * fbank_->config().hop_samples();
}

ForwardResult AsrTask::forward(const AsrBatch& batch, bool training, int64_t epoch,
                               at::Generator* generator, const LossOptions& options,
                               int64_t optimizer_steps) {
  PreparedBatch prepared = prepare(batch, training, epoch, generator, optimizer_steps);
  ModelLoss out = model_loss(prepared.inputs, options);
  if (out.p_ctc.size(1) != prepared.enc_frames) {
    throw Error(ErrorKind::kInternal, "AsrTask: the encoder gave " +
                                          std::to_string(out.p_ctc.size(1)) +
                                          " frames where the front end's lengths say " +
                                          std::to_string(prepared.enc_frames));
  }
  ForwardResult r;
  r.loss = std::move(out.loss);
  r.p_ctc = std::move(out.p_ctc);
  r.p_seq = std::move(out.p_seq);
  r.rel = std::move(prepared.rel);
  r.source = std::move(prepared.source);
  return r;
}

PreparedBatch AsrTask::prepare(const AsrBatch& batch, bool training, int64_t epoch,
                               at::Generator* generator, int64_t optimizer_steps) {
  PreparedBatch r;
  r.source = torch::arange(batch.wav.size(0), torch::TensorOptions().dtype(torch::kLong));
  at::Tensor wav = batch.wav;
  at::Tensor wav_rel = batch.wav_rel_on_host();
  at::Tensor rel;  // relative to the feature frames, on the host
  if (training && wav_augment_ && generator != nullptr) {
    // SpeechBrain's CTC recipe: `wavs, wav_lens = wav_augment(wavs, wav_lens)` before the
    // features, and the labels replicated to match (the row map does that here).
    runtime::AutocastSuspend fp32;
    profile_phase("wav-augment");
    features::AugmentBatch augmented = wav_augment_->apply(wav, wav_rel, *generator);
    wav = augmented.x;
    wav_rel = host_result(augmented.lengths, "lengths");
    if (augmented.source.defined()) r.source = host_result(augmented.source, "row map");
  }
  // Each utterance's own frame count, computed on the host from its sample count exactly as
  // AsrModel::encode_audio does, so that no layer reads its batch partners' padding: the
  // filterbank's dB floor, the front end's reflection and the encoder's lengths all use it.
  // (SpeechBrain's training step instead rounds rel * T of the padded batch at every layer.)
  const at::Tensor samples = abs_lengths(wav_rel, wav.size(1));
  at::Tensor frames = 1 + torch::div(samples, fbank_->config().hop_samples(), "floor");
  at::Tensor feats;
  {
    // Float32 features whatever the step's precision (a bf16 filterbank product loses ~0.1 dB).
    runtime::AutocastSuspend fp32;
    profile_phase("features");
    feats = (*fbank_)(wav.to(device_), frames);
    // Relative lengths in double: round(rel * T) gives back `frames` exactly.
    rel = frames.to(torch::kFloat64) / static_cast<double>(feats.size(1));
    profile_phase("normalize");
    feats = normalizer_->forward(feats, rel, epoch);
    if (training && augment_ && generator != nullptr && optimizer_steps > augment_warmup_) {
      profile_phase("augment");
      features::AugmentBatch augmented = augment_->apply(feats, rel, *generator);
      feats = augmented.x;
      // Host lengths in, host lengths and row map out (features/augment/interface.h): the
      // augmentations draw on the CPU generator and compute lengths on the host, so nothing is
      // read back from the device here.
      rel = host_result(augmented.lengths, "lengths");
      if (augmented.source.defined()) {
        r.source = r.source.index_select(0, host_result(augmented.source, "row map"));
      }
    }
  }
  profile_phase("encoder");
  const bool identity = r.source.size(0) == batch.wav.size(0) &&
                        r.source.equal(torch::arange(batch.wav.size(0), r.source.options()));
  const at::Tensor source = identity ? at::Tensor() : runtime::to_device_async(r.source, device_);
  auto pick = [&](const at::Tensor& t) { return identity ? t : t.index_select(0, source); };
  auto pick_host = [&](const at::Tensor& t) { return identity ? t : t.index_select(0, r.source); };
  frames = abs_lengths(rel, feats.size(1));
  // The encoder's frames, on the host too (the padded batch's length through the same
  // convolutions): rel becomes relative to them (round(rel * T'') = the encoder's lengths).
  const int64_t enc_frames =
      cnn_->output_lengths(torch::tensor({feats.size(1)}, torch::kLong)).item<int64_t>();
  const at::Tensor enc_lengths = cnn_->output_lengths(frames).clamp(1, enc_frames);
  r.rel = enc_lengths.to(torch::kFloat64) / static_cast<double>(enc_frames);
  r.enc_frames = enc_frames;
  const at::Tensor target_lengths =
      abs_lengths(pick_host(batch.tokens_rel_on_host()), batch.tokens.size(1));
  ModelInputs& in = r.inputs;
  in.feats = feats;
  // One copy to the device for both (queued without stopping the host).
  in.lengths =
      runtime::to_device_async(torch::stack({frames.to(torch::kLong), target_lengths}), device_);
  in.tokens = pick(batch.tokens.to(torch::kLong));
  if (kind_ == TaskKind::kS2S) {
    in.tokens_bos = pick(batch.tokens_bos.to(torch::kLong));
    in.tokens_eos = pick(batch.tokens_eos.to(torch::kLong));
    in.tokens_eos_rel = pick(batch.tokens_eos_rel);
  }
  return r;
}

std::function<at::Tensor(const std::vector<at::Tensor>&)> AsrTask::loss_of_inputs(
    const LossOptions& options) {
  return [this, options](const std::vector<at::Tensor>& tensors) {
    return model_loss(ModelInputs::from_list(tensors), options).loss;
  };
}

ModelLoss AsrTask::model_loss(const ModelInputs& in, const LossOptions& options) {
  ModelLoss r;
  const at::Tensor frames = in.lengths[0];
  const at::Tensor target_lengths = in.lengths[1];
  const at::Tensor src = cnn_->forward(in.feats, frames);
  const at::Tensor enc_lengths = cnn_->output_lengths(frames).clamp(1, src.size(1));
  const at::Tensor enc_out = transformer_->encode(src, enc_lengths);
  at::Tensor dec_out;
  if (kind_ == TaskKind::kS2S) {
    profile_phase("decoder");
    dec_out = transformer_->decode(in.tokens_bos, enc_out, enc_lengths, options.pad_index);
  }
  profile_phase("loss");
  // The loss from the logits: on CUDA its backward may recompute the float32 log-probabilities
  // instead of holding them through the step (ops::ctc_loss_from_logits).
  CtcLossOfLogits ctc = ctc_loss_of_logits(ctc_lin_->forward(enc_out), in.tokens, enc_lengths,
                                           target_lengths, options.blank_index, options.reduction);
  r.p_ctc = std::move(ctc.log_probs);
  const at::Tensor loss_ctc = ctc.loss;
  if (kind_ == TaskKind::kCtc) {
    r.loss = loss_ctc;
    return r;
  }
  r.p_seq = torch::log_softmax(seq_lin_->forward(dec_out), -1);
  const at::Tensor loss_seq =
      kldiv_loss(r.p_seq, in.tokens_eos, in.tokens_eos_rel, options.label_smoothing,
                 options.pad_index, options.reduction);
  r.loss = options.ctc_weight * loss_ctc + (1.0 - options.ctc_weight) * loss_seq;
  return r;
}

std::vector<std::vector<int>> AsrTask::ctc_greedy(const at::Tensor& p_ctc, const at::Tensor& rel,
                                                  int64_t blank) {
  const int64_t frames = p_ctc.size(1);
  const at::Tensor lengths = abs_lengths(rel.cpu(), frames).clamp_max(frames).to(at::kLong);
  std::vector<std::vector<int>> out;
  for (const auto& hyp : decode::ctc_greedy_search(p_ctc, lengths, blank)) {
    out.emplace_back(hyp.tokens.begin(), hyp.tokens.end());
  }
  return out;
}

}  // namespace masr::train
